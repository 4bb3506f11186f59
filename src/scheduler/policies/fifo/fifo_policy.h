// Copyright Weft authors. `fifo`: applications by priority, then submission order.
#ifndef WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_
#define WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_

#include <memory>

#include "scheduler/policy.h"

namespace weft::scheduler {

// YARN's FifoScheduler generalised to a queue tree: every queue is ordered by its best app,
// so the whole cluster serves apps strictly by (application priority desc, submission order).
// No limits beyond max-running-apps and the core's AM share (max-am-share), no preemption.
std::unique_ptr<SchedulingPolicy> NewFifoPolicy();

// FIFO's ordering and limits, for every policy that orders apps as FIFO does (fifo, ras): apps
// by application priority (higher first) then submission order, a queue by its best app, no
// limits beyond the queues' own, no preemption. Subclasses name themselves and may add
// placement.
class FifoOrderingPolicy : public SchedulingPolicy {
 public:
  absl::Status Validate(const QueueConfig&) const override;
  LeafOrdering DefaultLeafOrdering() const override;
  OrderKey AppKey(const AppState& app, const ClusterView&) const override;
  OrderKey QueueKey(const QueueNode&, const OrderKey& best_child,
                    const ClusterView&) const override;
  void Recompute(const std::vector<QueueNode*>& queues, const ClusterView&) const override;
  bool CanAllocate(const AppState&, const Resource&, bool, const ClusterView&) const override;
  bool SupportsPreemption() const override;
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_
