#include "scheduler/policies/fifo/fifo_policy.h"

namespace weft::scheduler {
namespace {

class FifoPolicy final : public SchedulingPolicy {
 public:
  absl::string_view name() const override { return "fifo"; }
  absl::Status Validate(const QueueConfig&) const override { return absl::OkStatus(); }
  LeafOrdering DefaultLeafOrdering() const override { return LeafOrdering::kFifo; }
  OrderKey AppKey(const AppState& app, const ClusterView&) const override {
    return {-app.priority, 0, app.submit_seq};
  }
  OrderKey QueueKey(const QueueNode&, const OrderKey& best_child,
                    const ClusterView&) const override {
    return best_child;
  }
  void Recompute(const std::vector<QueueNode*>& queues, const ClusterView&) const override {
    for (QueueNode* q : queues) {
      for (int i = 0; i < kMaxResourceTypes; ++i) q->limit[i] = kUnlimited;
      q->share_weight = 1;
      q->floor = Resource();
    }
  }
  bool CanAllocate(const AppState&, const Resource&, bool, const ClusterView&) const override {
    return true;
  }
  bool SupportsPreemption() const override { return false; }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> NewFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace weft::scheduler
