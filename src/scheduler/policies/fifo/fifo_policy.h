// Copyright Weft authors. `fifo`: applications by priority, then submission order.
#ifndef WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_
#define WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_

#include <memory>

#include "scheduler/policy.h"

namespace weft::scheduler {

// YARN's FifoScheduler generalised to a queue tree: every queue is ordered by its best app,
// so the whole cluster serves apps strictly by (application priority desc, submission order).
// No limits beyond max-running-apps, no preemption.
std::unique_ptr<SchedulingPolicy> NewFifoPolicy();

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_FIFO_FIFO_POLICY_H_
