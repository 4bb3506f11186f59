#include "web/rm_metrics.h"

#include <map>
#include <string>

#include "store/state_names.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

using metrics::Labels;
using metrics::TextWriter;
using Type = TextWriter::Type;

void Queue(const ClusterSnapshot& s, const v1::QueueInfo& q, TextWriter* out,
           std::vector<const v1::QueueInfo*>* all) {
  all->push_back(&q);
  for (const auto& child : q.children()) Queue(s, child, out, all);
}

}  // namespace

void RenderClusterMetrics(const ClusterSnapshot& s, int64_t now_ms, TextWriter* out) {
  const v1::GetClusterMetricsResponse& m = s.metrics;

  out->Family("weft_rm_cluster_resource",
              "Cluster resources by type, in the type's unit (memory-mb: MB, vcores: cores, "
              "network-mbps: Mbit/s): capacity of live nodes, allocated to containers, "
              "available (capacity - allocated) and pending (asked for, not yet allocated).",
              Type::kGauge);
  for (const auto& [name, unit] : s.resource_types) {
    const int64_t total = ResourceValue(m.total(), name);
    const int64_t allocated = ResourceValue(m.allocated(), name);
    out->Sample("weft_rm_cluster_resource", {{"resource", name}, {"kind", "capacity"}},
                static_cast<double>(total));
    out->Sample("weft_rm_cluster_resource", {{"resource", name}, {"kind", "allocated"}},
                static_cast<double>(allocated));
    out->Sample("weft_rm_cluster_resource", {{"resource", name}, {"kind", "available"}},
                static_cast<double>(std::max<int64_t>(0, total - allocated)));
    out->Sample("weft_rm_cluster_resource", {{"resource", name}, {"kind", "pending"}},
                static_cast<double>(ResourceValue(m.pending(), name)));
  }

  std::vector<const v1::QueueInfo*> queues;
  Queue(s, s.root_queue, out, &queues);
  out->Family("weft_rm_queue_resource",
              "Per-queue resources by type, in the type's unit: allocated, pending, guaranteed "
              "now (fair share or elastic guarantee) and maximum.",
              Type::kGauge);
  for (const v1::QueueInfo* q : queues) {
    for (const auto& [name, unit] : s.resource_types) {
      const std::pair<const char*, const v1::Resource*> kinds[] = {
          {"allocated", &q->used()},
          {"pending", &q->pending()},
          {"guaranteed", &q->entitlement()},
          {"maximum", &q->limit()}};
      for (const auto& [kind, r] : kinds) {
        out->Sample("weft_rm_queue_resource",
                    {{"queue", q->path()}, {"resource", name}, {"kind", kind}},
                    static_cast<double>(ResourceValue(*r, name)));
      }
    }
  }
  out->Family("weft_rm_queue_applications", "Applications in a queue (its subtree).", Type::kGauge);
  for (const v1::QueueInfo* q : queues)
    out->Sample("weft_rm_queue_applications", {{"queue", q->path()}}, q->num_applications());
  out->Family("weft_rm_queue_containers",
              "Containers of a queue's applications: running, and pending (asked for).",
              Type::kGauge);
  for (const v1::QueueInfo* q : queues) {
    auto it = s.queue_counts.find(q->path());
    const QueueCounts c = it == s.queue_counts.end() ? QueueCounts() : it->second;
    out->Sample("weft_rm_queue_containers", {{"queue", q->path()}, {"kind", "running"}},
                static_cast<double>(c.containers));
    out->Sample("weft_rm_queue_containers", {{"queue", q->path()}, {"kind", "pending"}},
                static_cast<double>(c.pending_containers));
  }

  std::map<std::string, int64_t> by_state = {{"NEW", 0},     {"SUBMITTED", 0}, {"ACCEPTED", 0},
                                             {"RUNNING", 0}, {"FINISHED", 0},  {"FAILED", 0},
                                             {"KILLED", 0}};
  for (const v1::ApplicationReport& app : s.apps) ++by_state[store::ReportedAppState(app.state())];
  out->Family("weft_rm_applications", "Applications the RM knows, by state.", Type::kGauge);
  for (const auto& [state, n] : by_state)
    out->Sample("weft_rm_applications", {{"state", state}}, static_cast<double>(n));
  out->Family("weft_rm_applications_submitted_total", "Applications submitted (RM lifetime).",
              Type::kCounter);
  out->Sample("weft_rm_applications_submitted_total", {}, m.apps_submitted());

  out->Family("weft_rm_containers", "Containers now: running (allocated) and pending (asked for).",
              Type::kGauge);
  out->Sample("weft_rm_containers", {{"kind", "running"}},
              static_cast<double>(s.containers_running));
  out->Sample("weft_rm_containers", {{"kind", "pending"}},
              static_cast<double>(s.containers_pending));
  out->Family("weft_rm_containers_allocated_total", "Containers allocated since the RM started.",
              Type::kCounter);
  out->Sample("weft_rm_containers_allocated_total", {},
              static_cast<double>(s.containers_allocated));
  out->Family("weft_rm_containers_completed_total",
              "Containers that ended since the RM started (exited, released, lost, preempted or "
              "removed with their application).",
              Type::kCounter);
  out->Sample("weft_rm_containers_completed_total", {},
              static_cast<double>(s.containers_completed));
  out->Family("weft_rm_containers_preempted_total",
              "Containers the scheduler killed to restore guarantees since the RM started.",
              Type::kCounter);
  out->Sample("weft_rm_containers_preempted_total", {},
              static_cast<double>(s.containers_preempted));
  // Application history (issue 31): the outbox's backlog and the store's health.
  const auto counter = [&](const char* name, const char* help, int64_t value, Type type) {
    out->Family(name, help, type);
    out->Sample(name, {}, static_cast<double>(value));
  };
  counter("weft_rm_history_outbox_entries",
          "History records waiting in the RM's outbox for the history store (0 when history is "
          "off).",
          s.app_history.outbox_entries, Type::kGauge);
  counter("weft_rm_history_records_delivered_total",
          "History records the history store took since the RM started.", s.app_history.delivered,
          Type::kCounter);
  counter("weft_rm_history_store_failures_total",
          "Failed writes to the history store since the RM started (each retried).",
          s.app_history.store_failures, Type::kCounter);
  counter("weft_rm_finished_apps",
          "Finished applications the RM holds in memory and its state store (at most "
          "--max-completed-apps once their history is durable).",
          s.finished_apps_held, Type::kGauge);
  counter("weft_rm_finished_apps_forgotten_total",
          "Finished applications the RM forgot (beyond --max-completed-apps) since it started.",
          s.finished_apps_forgotten, Type::kCounter);
  out->Family("weft_rm_scheduler_allocations_per_second",
              "Containers allocated per second over the last snapshot interval (about 1 s).",
              Type::kGauge);
  out->Sample("weft_rm_scheduler_allocations_per_second", {}, s.allocations_per_second);

  std::map<std::string, int64_t> nodes = {{"NEW", 0},       {"RUNNING", 0},
                                          {"UNHEALTHY", 0}, {"DECOMMISSIONED", 0},
                                          {"LOST", 0},      {"SHUTDOWN", 0}};
  for (const v1::NodeReport& n : s.nodes()) ++nodes[store::ReportedNodeState(n.state())];
  out->Family("weft_rm_nodes", "NodeManagers the RM knows, by state.", Type::kGauge);
  for (const auto& [state, n] : nodes)
    out->Sample("weft_rm_nodes", {{"state", state}}, static_cast<double>(n));
  out->Family("weft_rm_node_resource",
              "Per-node resources by type, in the type's unit: capacity and allocated.",
              Type::kGauge);
  for (const v1::NodeReport& n : s.nodes()) {
    for (const auto& [name, unit] : s.resource_types) {
      out->Sample("weft_rm_node_resource",
                  {{"node", n.node_id()}, {"resource", name}, {"kind", "capacity"}},
                  static_cast<double>(ResourceValue(n.capability(), name)));
      out->Sample("weft_rm_node_resource",
                  {{"node", n.node_id()}, {"resource", name}, {"kind", "allocated"}},
                  static_cast<double>(ResourceValue(n.used(), name)));
    }
  }
  out->Family("weft_rm_container_network_transmit_bytes_total",
              "Bytes a running container sent, as its node last reported (bandwidth-isolated "
              "nodes only).",
              Type::kCounter);
  for (const v1::NodeReport& n : s.nodes()) {
    for (const v1::ContainerStatus& c : n.containers()) {
      if (c.usage().network_tx_bytes() == 0 && c.usage().network_tx_rate_mbps() == 0) continue;
      out->Sample("weft_rm_container_network_transmit_bytes_total",
                  {{"node", n.node_id()}, {"container", c.container_id()}},
                  static_cast<double>(c.usage().network_tx_bytes()));
    }
  }
  out->Family("weft_rm_snapshot_age_seconds",
              "Age of the cluster snapshot these figures come from, seconds.", Type::kGauge);
  out->Sample("weft_rm_snapshot_age_seconds", {},
              static_cast<double>(std::max<int64_t>(0, now_ms - s.taken_ms)) / 1000.0);
}

}  // namespace weft::web
