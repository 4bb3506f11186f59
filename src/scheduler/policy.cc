// Copyright Weft authors. What the core offers every policy: the shared AM limit and the
// instantaneous fair share it is taken of.
#include "scheduler/policy.h"

#include <algorithm>
#include <cmath>

namespace weft::scheduler {

Resource InstantaneousShare(const QueueNode& queue, const ClusterView& view) {
  if (queue.parent == nullptr) return Min(view.total, queue.limit);
  Resource share = InstantaneousShare(*queue.parent, view);  // recursion: no allocation
  double active_weight = 0;
  for (const QueueNode* sibling : queue.parent->children) {
    if (sibling == &queue || sibling->running_apps > 0) active_weight += sibling->share_weight;
  }
  const double part = active_weight > 0 ? queue.share_weight / active_weight : 1.0;
  for (int i = 0; i < kMaxResourceTypes; ++i)
    share[i] = static_cast<int64_t>(std::floor(static_cast<double>(share[i]) * part));
  return Min(Max(share, Min(queue.floor, view.total)), queue.limit);
}

std::optional<Resource> SchedulingPolicy::AmLimit(const QueueNode& leaf,
                                                  const ClusterView& view) const {
  const double max_am_share = leaf.config.max_am_share.value_or(-1);
  if (max_am_share < 0) return std::nullopt;
  const Resource share = InstantaneousShare(leaf, view);
  Resource limit;
  for (int i = 0; i < kMaxResourceTypes; ++i)
    limit[i] = static_cast<int64_t>(std::floor(static_cast<double>(share[i]) * max_am_share));
  return limit;
}

QueueCapacities SchedulingPolicy::Capacities(const QueueNode& queue, const QueueCapacities& parent,
                                             const ClusterView& view) const {
  double weights = 0;
  for (const QueueNode* sibling : queue.parent->children)
    weights += sibling->config.weight > 0 ? sibling->config.weight : 0;
  // The limit's dominant share of the cluster, over the types the cluster has, as a fraction.
  double max_share = 0;
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    if (view.total[i] <= 0) continue;
    const int64_t limit = std::min(queue.limit[i], view.total[i]);
    max_share =
        std::max(max_share, static_cast<double>(limit) / static_cast<double>(view.total[i]));
  }
  QueueCapacities c;
  c.capacity = weights > 0 ? std::max(0.0, queue.config.weight) / weights * 100 : 0;
  c.maximum_capacity =
      parent.absolute_maximum_capacity > 0
          ? std::min(100.0, max_share * 100 / parent.absolute_maximum_capacity * 100)
          : 100;
  c.absolute_capacity = parent.absolute_capacity * c.capacity / 100;
  c.absolute_maximum_capacity = parent.absolute_maximum_capacity * c.maximum_capacity / 100;
  return c;
}

}  // namespace weft::scheduler
