// Copyright Weft authors. `fair`: hierarchical Dominant Resource Fairness (seed 000).
#ifndef WEFT_SCHEDULER_POLICIES_FAIR_FAIR_POLICY_H_
#define WEFT_SCHEDULER_POLICIES_FAIR_FAIR_POLICY_H_

#include <memory>

#include "scheduler/policy.h"

namespace weft::scheduler {

// DRF over every resource type (memory, vcores, network, ...), as Hadoop's FairScheduler with
// the DRF policy and seed 000's Algorithm 1: at every level the sibling with the lowest
// dominant share / weight is served next; a queue below its min-resources comes before all
// that are not (most needy first). Queues never exceed max-resources. Leaves order their apps
// by DRF (or FIFO with `ordering: fifo`). Entitlements (fair shares) split each parent's share
// among its active children by weight; preemption restores them. AM containers of a leaf hold
// at most `max-am-share` of its instantaneous fair share (YARN's maxAMShare; the core's
// SchedulingPolicy::AmLimit).
std::unique_ptr<SchedulingPolicy> NewFairPolicy();

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_FAIR_FAIR_POLICY_H_
