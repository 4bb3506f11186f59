// Copyright Weft authors.
#include "adaptcont/am_sizing.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace weft::adaptcont {

std::optional<Resource> LargestLiveNode(const scheduler::Scheduler& scheduler) {
  std::optional<Resource> largest;
  for (scheduler::NodeId id = 0; scheduler.node(id) != nullptr; ++id) {
    const scheduler::NodeState* n = scheduler.node(id);
    if (n->removed) continue;
    largest = Max(largest.value_or(Resource()), n->capacity);
  }
  return largest;
}

Resource ActiveQueueShare(const scheduler::Scheduler& scheduler,
                          const scheduler::QueueNode& queue) {
  std::vector<const scheduler::QueueNode*> path;
  for (const scheduler::QueueNode* q = &queue; q->parent != nullptr; q = q->parent)
    path.push_back(q);
  Resource share = scheduler.cluster_total();
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const scheduler::QueueNode* q = *it;
    double active_weight = 0;
    for (const scheduler::QueueNode* sibling : q->parent->children) {
      if (sibling == q || sibling->running_apps > 0) active_weight += sibling->share_weight;
    }
    const double part = active_weight > 0 ? q->share_weight / active_weight : 1.0;
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      share[i] = static_cast<int64_t>(std::floor(static_cast<double>(share[i]) * part));
    }
    share = Max(share, Min(q->floor, scheduler.cluster_total()));
  }
  return share;
}

absl::StatusOr<AmSizingOutcome> SizeAmContainer(const AdaptContConfig& config,
                                                const scheduler::Scheduler& scheduler,
                                                const AmSizingJob& job, bool use_largest_node) {
  AmSizingOutcome out;
  AmSizingInput& in = out.input;
  in.user = job.user;
  in.input_bytes = job.input_bytes;
  in.split_bytes = job.split_bytes;
  in.map_tasks = job.map_tasks;
  in.reduce_tasks = job.reduce_tasks;
  Resource headroom = (scheduler.cluster_total() - scheduler.cluster_allocated()).ClampedAtZero();
  if (const scheduler::QueueNode* q = scheduler.FindQueue(job.queue)) {
    headroom = Min(headroom, (q->limit - q->usage).ClampedAtZero());
    headroom = Min(headroom, (ActiveQueueShare(scheduler, *q) - q->usage).ClampedAtZero());
    // A leaf that shares among its apps gives this one its part, not all of it (YARN's fair
    // headroom): split among its runnable apps and this one.
    if (q->is_leaf() && q->config.ordering == scheduler::LeafOrdering::kFair) {
      const int64_t sharers = 1 + static_cast<int64_t>(std::count_if(
                                      q->apps.begin(), q->apps.end(),
                                      [](const scheduler::AppState* a) { return a->runnable; }));
      for (int i = 0; i < kMaxResourceTypes; ++i) headroom[i] /= sharers;
    }
  }
  in.available_containers = ContainersInHeadroom(headroom, job.worker);
  in.nodes_lost = job.nodes_lost;
  const ResourceTypeRegistry& registry = scheduler.registry();
  Resource max;
  for (int i = 0; i < registry.size(); ++i) max[i] = registry.info(i).maximum;
  if (use_largest_node) {
    if (std::optional<Resource> largest = LargestLiveNode(scheduler)) max = Min(max, *largest);
  }
  in.cluster_max_allocation = {max[kMemoryMb], max[kVcores]};
  in.previous_attempt = job.previous_attempt;
  if (const scheduler::QueueNode* q = scheduler.FindQueue(job.queue); q != nullptr && q->is_leaf()) {
    if (std::optional<Resource> limit = scheduler.AmLimit(*q))
      in.queue_am_limit = AmResource{(*limit)[kMemoryMb], (*limit)[kVcores]};
  }
  absl::StatusOr<AmSizingDecision> decision = DecideAmSize(config, in);
  if (!decision.ok() && in.queue_am_limit.has_value() &&
      absl::IsFailedPrecondition(decision.status())) {
    // The queue's AM limit leaves no room for the smallest AM. The scheduler starts a queue's
    // first AM whatever its limit (SchedulingPolicy::AmLimit), so the AM is sized without that
    // ceiling rather than refused.
    in.queue_am_limit.reset();
    decision = DecideAmSize(config, in);
  }
  if (!decision.ok()) return decision.status();
  absl::StatusOr<Resource> am = registry.Normalize(decision->AsResource());
  if (!am.ok()) return am.status();
  out.am = *am;
  out.decision = *std::move(decision);
  return out;
}

}  // namespace weft::adaptcont
