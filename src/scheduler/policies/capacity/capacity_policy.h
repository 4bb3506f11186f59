// Copyright Weft authors. `capacity`: hierarchical guaranteed capacities (YARN's
// CapacityScheduler).
#ifndef WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_POLICY_H_
#define WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_POLICY_H_

#include <memory>

#include "scheduler/policy.h"

namespace weft::scheduler {

// Every queue is guaranteed `capacity` percent of its parent and may grow elastically up to
// `maximum-capacity` percent of it. Siblings are served least used-capacity first (dominant
// share of usage over dominant share of guarantee, as YARN's DominantResourceCalculator).
// Within a leaf, apps are FIFO (default) or fair. A user may hold at most
// user-limit-factor x the leaf's guarantee; AM containers at most
// maximum-am-resource-percent of it (one AM may always run). STOPPED queues take no new apps.
// Children's capacities must all be given and sum to 100, or all be omitted (equal split).
std::unique_ptr<SchedulingPolicy> NewCapacityPolicy();

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_POLICY_H_
