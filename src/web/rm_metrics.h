// Copyright Weft authors. The RM's cluster figures as Prometheus metrics, from a snapshot.
#ifndef WEFT_WEB_RM_METRICS_H_
#define WEFT_WEB_RM_METRICS_H_

#include "common/metrics.h"
#include "web/snapshot.h"

namespace weft::web {

// Appends the families below to `out` (their names do not clash with the RmServer registry's
// weft_rm_rpc_* and weft_rm_scheduler_pass* families). Resource amounts are in each type's
// unit, named by the `resource` label (memory-mb: MB, vcores: cores, network-mbps: Mbit/s).
//
//   weft_rm_cluster_resource{resource,kind=capacity|allocated|available|pending}   gauge
//   weft_rm_queue_resource{queue,resource,kind=allocated|pending|guaranteed|maximum} gauge
//   weft_rm_queue_applications{queue}, weft_rm_queue_containers{queue,kind=running|pending}
//   weft_rm_applications{state}                                                      gauge
//   weft_rm_applications_submitted_total                                             counter
//   weft_rm_containers{kind=running|pending}                                         gauge
//   weft_rm_containers_allocated_total, _completed_total, _preempted_total          counter
//   weft_rm_scheduler_allocations_per_second                                         gauge
//   weft_rm_nodes{state}                                                             gauge
//   weft_rm_node_resource{node,resource,kind=capacity|allocated}                     gauge
//   weft_rm_container_network_transmit_bytes_total{node,container}                   counter
//   weft_rm_snapshot_age_seconds                                                     gauge
void RenderClusterMetrics(const ClusterSnapshot& s, int64_t now_ms, metrics::TextWriter* out);

}  // namespace weft::web

#endif  // WEFT_WEB_RM_METRICS_H_
