#include "scheduler/policies/fair/fair_policy.h"

namespace weft::scheduler {
namespace {

class FairPolicy final : public SchedulingPolicy {
 public:
  absl::string_view name() const override { return "fair"; }
  // Weights, min and max are range-checked by the config parser; nothing more to check.
  absl::Status Validate(const QueueConfig&) const override { return absl::OkStatus(); }
  LeafOrdering DefaultLeafOrdering() const override { return LeafOrdering::kFair; }

  OrderKey AppKey(const AppState& app, const ClusterView& view) const override {
    if (app.queue->config.ordering == LeafOrdering::kFifo)
      return {-app.priority, 0, app.submit_seq};
    return {0, view.Share(app.usage), app.submit_seq};
  }

  OrderKey QueueKey(const QueueNode& q, const OrderKey&, const ClusterView& view) const override {
    const Resource& min = q.config.min_resources;
    if (min.AnyPositive() && !min.FitsIn(q.usage)) {
      // Needy: below its minimum. The furthest below (by ratio) goes first.
      return {0, view.Share(q.usage) / std::max(view.Share(min), 1e-12),
              static_cast<uint64_t>(q.index)};
    }
    return {1, view.Share(q.usage) / q.config.weight, static_cast<uint64_t>(q.index)};
  }

  void Recompute(const std::vector<QueueNode*>& queues, const ClusterView&) const override {
    for (QueueNode* q : queues) {
      q->limit = q->config.max_resources;
      q->share_weight = q->config.weight;
      q->floor = q->config.min_resources;
    }
  }

  bool CanAllocate(const AppState&, const Resource&, bool, const ClusterView&) const override {
    return true;
  }
  bool SupportsPreemption() const override { return true; }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> NewFairPolicy() { return std::make_unique<FairPolicy>(); }

}  // namespace weft::scheduler
