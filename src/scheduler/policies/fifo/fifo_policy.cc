#include "scheduler/policies/fifo/fifo_policy.h"

namespace weft::scheduler {

absl::Status FifoOrderingPolicy::Validate(const QueueConfig&) const { return absl::OkStatus(); }

LeafOrdering FifoOrderingPolicy::DefaultLeafOrdering() const { return LeafOrdering::kFifo; }

OrderKey FifoOrderingPolicy::AppKey(const AppState& app, const ClusterView&) const {
  return {-app.priority, 0, app.submit_seq};
}

OrderKey FifoOrderingPolicy::QueueKey(const QueueNode&, const OrderKey& best_child,
                                      const ClusterView&) const {
  return best_child;
}

void FifoOrderingPolicy::Recompute(const std::vector<QueueNode*>& queues,
                                   const ClusterView&) const {
  for (QueueNode* q : queues) {
    for (int i = 0; i < kMaxResourceTypes; ++i) q->limit[i] = kUnlimited;
    q->share_weight = 1;
    q->floor = Resource();
  }
}

bool FifoOrderingPolicy::CanAllocate(const AppState&, const Resource&, bool,
                                     const ClusterView&) const {
  return true;
}

bool FifoOrderingPolicy::SupportsPreemption() const { return false; }

namespace {

class FifoPolicy final : public FifoOrderingPolicy {
 public:
  absl::string_view name() const override { return "fifo"; }
};

}  // namespace

std::unique_ptr<SchedulingPolicy> NewFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace weft::scheduler
