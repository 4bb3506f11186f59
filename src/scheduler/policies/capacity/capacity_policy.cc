#include "scheduler/policies/capacity/capacity_policy.h"

#include <cmath>

#include "absl/strings/str_cat.h"

namespace weft::scheduler {
namespace {

double ChildCapacity(const QueueConfig& parent, const QueueConfig& child) {
  return child.capacity >= 0 ? child.capacity : 100.0 / static_cast<double>(parent.children.size());
}

// A queue's guaranteed capacity, % of its parent: its `capacity`, or an equal split.
double CapacityOf(const QueueNode& q) {
  return q.config.capacity >= 0 ? q.config.capacity
                                : 100.0 / static_cast<double>(q.parent->children.size());
}

absl::Status ValidateTree(const QueueConfig& q, const std::string& path) {
  if (q.children.empty()) return absl::OkStatus();
  int given = 0;
  double sum = 0;
  for (const QueueConfig& c : q.children) {
    if (c.capacity >= 0) {
      ++given;
      sum += c.capacity;
    }
  }
  if (given != 0 && given != static_cast<int>(q.children.size()))
    return absl::InvalidArgumentError(absl::StrCat("capacity: children of queue '", path,
                                                   "' must all set 'capacity' or none of them"));
  if (given != 0 && std::fabs(sum - 100.0) > 0.01)
    return absl::InvalidArgumentError(absl::StrCat("capacity: the capacities of the children of '",
                                                   path, "' sum to ", sum, ", not 100"));
  for (const QueueConfig& c : q.children) {
    if (c.maximum_capacity < ChildCapacity(q, c))
      return absl::InvalidArgumentError(absl::StrCat("capacity: queue '", path, ".", c.name,
                                                     "': maximum-capacity is below its capacity"));
    if (auto s = ValidateTree(c, absl::StrCat(path, ".", c.name)); !s.ok()) return s;
  }
  return absl::OkStatus();
}

Resource Scale(const Resource& total, double fraction) {
  Resource r;
  for (int i = 0; i < kMaxResourceTypes; ++i)
    r[i] = static_cast<int64_t>(std::floor(static_cast<double>(total[i]) * fraction));
  return r;
}

class CapacityPolicy final : public SchedulingPolicy {
 public:
  absl::string_view name() const override { return "capacity"; }
  absl::Status Validate(const QueueConfig& root) const override {
    return ValidateTree(root, "root");
  }
  LeafOrdering DefaultLeafOrdering() const override { return LeafOrdering::kFifo; }

  OrderKey AppKey(const AppState& app, const ClusterView& view) const override {
    if (app.queue->config.ordering == LeafOrdering::kFair) {
      return {0, view.Share(app.usage), app.submit_seq};
    }
    return {-app.priority, 0, app.submit_seq};
  }

  // Least used capacity first; queues with no guarantee after all others.
  OrderKey QueueKey(const QueueNode& q, const OrderKey&, const ClusterView& view) const override {
    double guaranteed = view.Share(q.floor);
    if (guaranteed <= 0) return {1, view.Share(q.usage), static_cast<uint64_t>(q.index)};
    return {0, view.Share(q.usage) / guaranteed, static_cast<uint64_t>(q.index)};
  }

  // floor = absolute guaranteed capacity, limit = absolute maximum capacity.
  void Recompute(const std::vector<QueueNode*>& queues, const ClusterView& view) const override {
    // Pre-order: parents before children. abs_* are fractions of the cluster.
    std::vector<double> abs_cap(queues.size()), abs_max(queues.size());
    for (size_t i = 0; i < queues.size(); ++i) {
      QueueNode* q = queues[i];
      if (q->parent == nullptr) {
        abs_cap[i] = abs_max[i] = 1.0;
        for (int t = 0; t < kMaxResourceTypes; ++t) q->limit[t] = kUnlimited;
        q->floor = view.total;
        q->share_weight = 1;
        continue;
      }
      size_t p = static_cast<size_t>(q->parent->index);
      double cap = CapacityOf(*q) / 100.0;
      abs_cap[i] = abs_cap[p] * cap;
      abs_max[i] = abs_max[p] * q->config.maximum_capacity / 100.0;
      q->floor = Scale(view.total, abs_cap[i]);
      q->limit = Scale(view.total, abs_max[i]);
      q->share_weight = cap;
    }
  }

  // The user limit, YARN's way: a user gets a container while its usage is at most the limit
  // (so it may end one container above it). A user whose AM alone reaches the limit, in a
  // small queue, can still run a task; with ">=" the app would wait forever. (The AM limit is
  // AmLimit's.)
  bool CanAllocate(const AppState& app, const Resource&, bool,
                   const ClusterView& view) const override {
    const QueueNode& leaf = *app.queue;
    double guaranteed = view.Share(leaf.floor);
    auto it = leaf.user_usage.find(app.user);
    if (it != leaf.user_usage.end() && it->second.AnyPositive() &&
        view.Share(it->second) > leaf.config.user_limit_factor * guaranteed + 1e-12)
      return false;
    return true;
  }
  // maximum-am-resource-percent of the leaf's guaranteed capacity (the core lets one AM start
  // in a queue that runs none, as YARN does).
  std::optional<Resource> AmLimit(const QueueNode& leaf, const ClusterView&) const override {
    Resource limit;
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      limit[i] = static_cast<int64_t>(std::floor(static_cast<double>(leaf.floor[i]) *
                                                 leaf.config.maximum_am_resource_percent / 100.0));
    }
    return limit;
  }
  // The configured percentages: `capacity` (an equal split of the parent when unset) and
  // `maximum-capacity`.
  QueueCapacities Capacities(const QueueNode& q, const QueueCapacities& parent,
                             const ClusterView&) const override {
    QueueCapacities c;
    c.capacity = CapacityOf(q);
    c.maximum_capacity = q.config.maximum_capacity;
    c.absolute_capacity = parent.absolute_capacity * c.capacity / 100;
    c.absolute_maximum_capacity = parent.absolute_maximum_capacity * c.maximum_capacity / 100;
    return c;
  }
  bool SupportsPreemption() const override { return true; }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> NewCapacityPolicy() { return std::make_unique<CapacityPolicy>(); }

}  // namespace weft::scheduler
