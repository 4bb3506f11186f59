// Copyright Weft authors. NodeManager heartbeat intervals scaled by CPU utilization (YARN-10475):
// a node busier than the cluster's average heartbeats less often, an idler one more often, so
// the RM hears sooner from the nodes most likely to have room, and less from the rest.
#ifndef WEFT_RM_HEARTBEAT_INTERVAL_H_
#define WEFT_RM_HEARTBEAT_INTERVAL_H_

#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace weft::rm {

// YARN's yarn.resourcemanager.nodemanagers.heartbeat-interval-{scaling-enable,min-ms,max-ms,
// speedup-factor,slowdown-factor}, with YARN's defaults (min = max = the 1 s interval: enabling
// scaling alone changes nothing until the bounds are opened).
struct HeartbeatScaling {
  bool enabled = false;
  int64_t min_ms = 1000;
  int64_t max_ms = 1000;
  // At 1.0, a node 0.2 (20 points) below the cluster's average CPU utilization heartbeats 20%
  // more often; one 0.2 above, 20% less often.
  double speedup_factor = 1.0;
  double slowdown_factor = 1.0;
};

// OK, or InvalidArgument naming the option: bounds >= 1 ms with min <= interval <= max when
// enabled, factors finite and >= 0.
absl::Status ValidateHeartbeatScaling(const HeartbeatScaling& s, int64_t interval_ms);

// The interval (ms) to tell a node whose CPU utilization is `node_util` while the cluster's
// average is `cluster_util` (both in [0, 1]; values outside are clamped): `interval_ms` when
// scaling is off or either utilization is unknown, else
//   interval x (1 + (node - cluster) x slowdown)   for a node above the average,
//   interval x (1 - (cluster - node) x speedup)    for one below it,
// bounded to [min_ms, max_ms].
int64_t ScaledHeartbeatIntervalMs(int64_t interval_ms, const HeartbeatScaling& s,
                                  std::optional<double> node_util,
                                  std::optional<double> cluster_util);

}  // namespace weft::rm

#endif  // WEFT_RM_HEARTBEAT_INTERVAL_H_
