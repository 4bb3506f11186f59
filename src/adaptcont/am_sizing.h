// Copyright Weft authors. AdaptCont's decision for one application, taken from the scheduling
// core's state: the one function the ResourceManager and the simulator both size AMs with, so
// that a simulated decision is the decision production would take in the same state.
#ifndef WEFT_ADAPTCONT_AM_SIZING_H_
#define WEFT_ADAPTCONT_AM_SIZING_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "adaptcont/adaptcont.h"
#include "adaptcont/config.h"
#include "common/resource.h"
#include "scheduler/scheduler.h"

namespace weft::adaptcont {

// What the caller knows of the job; the rest comes from the scheduler.
struct AmSizingJob {
  std::string user;
  std::string queue;  // the queue it is submitted to (leaf name or path)
  // Input generation (see AmSizingInput): input size and split size in bytes (0 = the
  // config's split), or map_tasks >= 0 to give the task count directly; reduce-like tasks.
  int64_t input_bytes = 0;
  int64_t split_bytes = 0;
  int64_t map_tasks = -1;
  int64_t reduce_tasks = 0;
  Resource worker;         // one task's container: the unit headroom is counted in
  int64_t nodes_lost = 0;  // nodes lost since this app's last decision
  std::optional<PreviousAttempt> previous_attempt;
};

// The normalised AM container and the decision behind it.
struct AmSizingOutcome {
  Resource am;
  AmSizingDecision decision;
  AmSizingInput input;  // what the decision saw (for logs and tests)
};

// Sizes the AM of `job` as the RM does:
//  * headroom: what the job's queue may still take within what the cluster has free now: the
//    least of its limit and its active share (ActiveQueueShare) less its usage; in a leaf that
//    orders its apps fairly, this app's part of it (split evenly among the leaf's runnable
//    apps and this one); counted in `job.worker` containers
//    (ContainersInHeadroom). An unknown queue leaves the cluster's free resources;
//  * ceilings: the registry's maximum allocation, capped by the largest live node's
//    capability unless `use_largest_node` is false (the RM's first max_allocation_wait_ms,
//    while nodes are still re-registering);
//  * the decision (DecideAmSize), normalised by the scheduler's registry.
// Errors: the decision's (no AM fits the ceilings) or the registry's (a decision it refuses);
// nothing changes.
absl::StatusOr<AmSizingOutcome> SizeAmContainer(const AdaptContConfig& config,
                                                const scheduler::Scheduler& scheduler,
                                                const AmSizingJob& job,
                                                bool use_largest_node = true);

// What `queue` is entitled to once it has an app: at each level of its path from the root, the
// parent's part split by share_weight among the siblings with runnable apps and this queue,
// never below the queue's floor (a capacity queue's guarantee). YARN's instantaneous fair share;
// for a policy whose weights are equal and floors zero (fifo's single queue), the cluster.
Resource ActiveQueueShare(const scheduler::Scheduler& scheduler, const scheduler::QueueNode& queue);

// The largest capability among the scheduler's live nodes (per type); nullopt without one.
std::optional<Resource> LargestLiveNode(const scheduler::Scheduler& scheduler);

}  // namespace weft::adaptcont

#endif  // WEFT_ADAPTCONT_AM_SIZING_H_
