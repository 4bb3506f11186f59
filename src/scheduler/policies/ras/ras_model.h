// Copyright Weft authors. The pure model behind the `ras` policy (seed 003): the job utility
// function, the completion time estimator, and the placement algorithm over a plain cluster
// model. No scheduler state here, so each piece can be tested on its own.
#ifndef WEFT_SCHEDULER_POLICIES_RAS_RAS_MODEL_H_
#define WEFT_SCHEDULER_POLICIES_RAS_RAS_MODEL_H_

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include "common/resource.h"
#include "scheduler/types.h"

namespace weft::scheduler::ras {

inline constexpr double kMinusInfinity = -std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Utility (seed 003 section 3.3, Fig. 2). Counts are tasks; "allocated" counts the tasks that a
// placement gives the job (running ones included), "pending" the job's unfinished tasks of the
// kind (waiting + running).

// u_M, in [-inf, 1]:
//   s_pend <= 0 or s_alloc >= s_pend   -> 1 (every remaining task has a slot)
//   s_alloc <= 0                       -> -inf (no progress at all)
//   with s_req clamped to [1, s_pend]:
//   s_alloc <  s_req                   -> log(s_alloc) / log(s_req) - 1     (rises to 0)
//   s_req <= s_alloc < s_pend          -> (s_alloc - s_req) / (s_pend - s_req)  (0 to 1)
// Edge cases: s_req >= s_pend (the goal needs every task at once, or cannot be met) leaves no
// linear part: the log part runs up to s_pend, where u_M jumps to 1. s_req <= 1 (the goal is
// met by one task at a time, or the job has just one task) leaves no log part: one task gives
// 0, the rest rises linearly.
double MapUtility(int64_t s_alloc, int64_t s_req, int64_t s_pend);

// u_R, in [-1, 0]: 0 when r_pend <= 0 or r_alloc >= r_pend; -1 when r_alloc <= 0 (the bottom
// of the formula's range, which it also takes at r_alloc = 1); else log(r_alloc)/log(r_pend) - 1.
double ReduceUtility(int64_t r_alloc, int64_t r_pend);

// U = min(1, u_M + u_R).
double JobUtility(int64_t s_alloc, int64_t s_req, int64_t s_pend, int64_t r_alloc, int64_t r_pend);

// The Job Completion Time Estimator: s_req, the map-like tasks that must run concurrently from
// `now_ms` on for the `s_pend` unfinished ones to finish by `goal_ms`, when one task takes
// `avg_task_ms`. With w = floor((goal - now) / avg) whole waves left, s_req = ceil(s_pend / w).
// Rules (documented in docs/scheduler.md):
//   * no goal (goal_ms < 0): s_req = s_pend — complete at the earliest possible time;
//   * cold start (avg_task_ms <= 0: no task of the job has finished yet): s_req = s_pend —
//     the job asks for everything until its task length is known (seed 003's J7 in Fig. 5);
//   * less than one task length left (w < 1, including a goal already missed): s_req = s_pend.
// The result is in [0, s_pend] (0 only when s_pend <= 0).
int64_t RequiredMapSlots(int64_t s_pend, double avg_task_ms, int64_t goal_ms, int64_t now_ms);

// ---------------------------------------------------------------------------------------------
// Actual usage. Four dimensions, each a share of one node's capacity: a node is overloaded
// when the sum over its running tasks exceeds 1 in any of them. A profile's `io` counts
// against both disk and network.

enum LoadDim { kCpu = 0, kMem = 1, kDisk = 2, kNet = 3, kNumDims = 4 };
using Load = std::array<double, kNumDims>;

// What one task uses on a node of `capacity`: the profile when there is one, otherwise its
// container request as a share of the node (a request for a type the node has none of counts
// as more than the node).
Load TaskLoad(bool has_usage, const TaskUsage& usage, const Resource& request,
              const Resource& capacity);
// used + add <= 1 in every dimension (with a 1e-9 tolerance for rounding).
bool LoadFits(const Load& used, const Load& add);
// The largest dimension of used + add: how full the node would be.
double PeakAfter(const Load& used, const Load& add);

// ---------------------------------------------------------------------------------------------
// Placement (seed 003 section 3.4, Algorithm 1), over a plain model.

struct NodeModel {
  Load used{};    // actual usage of everything running on the node now
  Resource free;  // capacity - allocated (container requests)
  Resource capacity;
  bool usable = true;  // schedulable
};

// One phase of one job: the tasks it asks for at one container priority.
struct PhaseModel {
  int32_t job = 0;  // index into the jobs vector
  int32_t priority = 0;
  PhaseKind kind = PhaseKind::kMapLike;
  bool has_usage = false;
  TaskUsage usage;
  Resource request;              // of one container (usage fallback, request fit)
  int64_t pending = 0;           // waiting for a container
  std::vector<int32_t> running;  // per node: its tasks running there now
  std::vector<uint8_t> allowed;  // per node: may be placed there (health, blacklist)
};

struct JobModel {
  int64_t goal_ms = -1;
  int64_t s_req = 0;               // from RequiredMapSlots
  int64_t s_pend = 0, r_pend = 0;  // unfinished map-like / reduce-like tasks
};

struct PlacementModel {
  std::vector<NodeModel> nodes;
  std::vector<JobModel> jobs;
  std::vector<PhaseModel> phases;
};

// A placement matrix: slots[p][n] tasks of phase p on node n (running ones included).
struct Placement {
  std::vector<std::vector<int32_t>> slots;
  std::vector<double> utility;  // per job, of this placement
  int32_t rounds = 0;           // max-min rounds that moved a task
};

// The utility of job `j` when it holds `s_alloc` map-like and `r_alloc` reduce-like slots.
double UtilityOf(const JobModel& job, int64_t s_alloc, int64_t r_alloc);

// The placement control loop's algorithm. Starting from the running tasks:
//  1. reduce-like tasks first, lowest-utility job first, each on the node with the fewest
//     reduce-like slots (then the fewest of the same job), so no two share a node where
//     possible and two of one job never do if avoidable;
//  2. map-like tasks, one at a time, always to the job of lowest utility, on the node it fits
//     best (lowest resulting peak load); when the lowest job fits nowhere, a round moves one
//     slot to it from the job of highest utility whose utility stays above the lowest (a running
//     task's slot is then not renewed when the task ends), on a node where that makes room;
//  3. this continues until the lowest job can neither be placed nor helped (it is then left as
//     it is and the next one is served: the greedy fill of what capacity remains), or
//     `max_rounds` moves were made.
// Every slot respects each node's capacity in actual usage (the task loads) and in requests.
// Deterministic; ties go to the lower job, phase and node index.
Placement ComputePlacement(const PlacementModel& model, int32_t max_rounds);

}  // namespace weft::scheduler::ras

#endif  // WEFT_SCHEDULER_POLICIES_RAS_RAS_MODEL_H_
