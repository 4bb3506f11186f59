#include "web/snapshot.h"

#include <algorithm>


namespace weft::web {

const v1::ApplicationReport* ClusterSnapshot::FindApp(const std::string& id) const {
  auto it = std::lower_bound(apps.begin(), apps.end(), id,
                             [](const v1::ApplicationReport& a, const std::string& key) {
                               return a.application_id() < key;
                             });
  return it != apps.end() && it->application_id() == id ? &*it : nullptr;
}

const std::vector<v1::NodeReport>& ClusterSnapshot::nodes() const {
  static const std::vector<v1::NodeReport>* const kNone = new std::vector<v1::NodeReport>();
  return node_reports ? *node_reports : *kNone;
}

const v1::NodeReport* ClusterSnapshot::FindNode(const std::string& id) const {
  const std::vector<v1::NodeReport>& all = nodes();
  auto it = std::lower_bound(
      all.begin(), all.end(), id,
      [](const v1::NodeReport& n, const std::string& key) { return n.node_id() < key; });
  return it != all.end() && it->node_id() == id ? &*it : nullptr;
}

std::shared_ptr<ClusterSnapshot> BuildSnapshot(rm::ResourceManager& rm, int64_t now_ms,
                                               const ClusterSnapshot* previous,
                                               SnapshotNodes node_mode) {
  auto s = std::make_shared<ClusterSnapshot>();
  const scheduler::Scheduler& sched = rm.scheduler();
  s->taken_ms = now_ms;
  s->generation = previous != nullptr ? previous->generation + 1 : 1;
  s->cluster_id = rm.cluster_timestamp_ms();
  s->started_ms = rm.started_ms();
  s->policy = std::string(sched.policy().name());
  for (int i = 0; i < sched.registry().size(); ++i)
    s->resource_types.emplace_back(sched.registry().info(i).name, sched.registry().info(i).unit);
  s->metrics = rm.GetClusterMetrics();
  v1::GetQueueRequest queue_req;
  queue_req.set_recursive(true);
  if (auto q = rm.GetQueue(queue_req); q.ok()) s->root_queue = q->queue();
  // Per-queue subtree counts, root first.
  const std::vector<scheduler::QueueSummary> queues = sched.QueueSummaries();
  for (const scheduler::QueueSummary& q : queues) {
    s->queue_counts[q.path] = {q.containers, q.pending_containers, q.active_apps, q.pending_apps};
  }
  if (!queues.empty()) {
    const QueueCounts& root = s->queue_counts[queues.front().path];
    s->containers_running = root.containers;
    s->containers_pending = root.pending_containers;
  }
  v1::ListApplicationsResponse apps = rm.ListApplications({});
  s->apps.assign(apps.applications().begin(), apps.applications().end());
  std::sort(s->apps.begin(), s->apps.end(),
            [](const v1::ApplicationReport& a, const v1::ApplicationReport& b) {
              return a.application_id() < b.application_id();
            });
  s->queue_config = sched.config();
  for (const v1::ApplicationReport& app : s->apps) {
    s->view_acls[app.application_id()] = rm.ViewAclOf(app.application_id());
    auto attempts = rm.GetApplicationAttempts(app.application_id());
    if (!attempts.ok()) continue;
    s->attempts[app.application_id()].assign(attempts->attempts().begin(),
                                             attempts->attempts().end());
  }
  if (node_mode == SnapshotNodes::kReuse && previous != nullptr && previous->node_reports) {
    s->node_reports = previous->node_reports;
    s->nodes_taken_ms = previous->nodes_taken_ms;
  } else {
    v1::ListNodesResponse listed = rm.ListNodes({});
    auto nodes = std::make_shared<std::vector<v1::NodeReport>>();
    nodes->reserve(static_cast<size_t>(listed.nodes_size()));
    for (v1::NodeReport& n : *listed.mutable_nodes()) nodes->push_back(std::move(n));
    std::sort(nodes->begin(), nodes->end(),
              [](const v1::NodeReport& a, const v1::NodeReport& b) {
                return a.node_id() < b.node_id();
              });
    s->node_reports = std::move(nodes);
    s->nodes_taken_ms = now_ms;
  }
  s->scheduler_passes = sched.stats().passes;
  s->containers_allocated = sched.stats().allocations;
  s->containers_preempted = sched.stats().preempted;
  s->containers_completed = rm.containers_completed();
  s->history = rm.history();
  s->app_history = rm.AppHistoryStats();
  s->finished_apps_held = rm.FinishedAppsHeld();
  s->finished_apps_forgotten = rm.FinishedAppsForgotten();
  if (previous != nullptr && s->taken_ms > previous->taken_ms &&
      s->containers_allocated >= previous->containers_allocated) {
    s->allocations_per_second =
        static_cast<double>(s->containers_allocated - previous->containers_allocated) * 1000.0 /
        static_cast<double>(s->taken_ms - previous->taken_ms);
  }
  return s;
}

std::shared_ptr<const ClusterSnapshot> SnapshotHolder::Get() const {
  absl::MutexLock l(&mu_);
  return snapshot_;
}

void SnapshotHolder::Set(std::shared_ptr<const ClusterSnapshot> snapshot) {
  absl::MutexLock l(&mu_);
  snapshot_ = std::move(snapshot);
}

}  // namespace weft::web
