// Copyright Weft authors. `ras`: resource-aware adaptive scheduling with completion-time goals
// (seed 003).
#ifndef WEFT_SCHEDULER_POLICIES_RAS_RAS_POLICY_H_
#define WEFT_SCHEDULER_POLICIES_RAS_RAS_POLICY_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/policies/fifo/fifo_policy.h"
#include "scheduler/policies/ras/ras_model.h"
#include "scheduler/policy.h"
#include "scheduler/scheduler.h"

namespace weft::scheduler {

// RAS places tasks by what they actually consume (each phase's usage profile: a share of a
// node's CPU, I/O and memory; the container request when a job gives none) and steers every
// job towards its completion-time goal with the utility function of seed 003:
//
//  * Placement control loop: at most every `control-period-ms` of its section (and at once when a
//  job or a
//    new phase of one appears, or the set of nodes changes) a new placement plan — job slots
//    per node — is computed from the running tasks with ras::ComputePlacement (reduce-like
//    tasks spread first, then max-min rounds over job utility, then greedy fill), never
//    exceeding any node's capacity in actual usage or in requests.
//  * Task scheduler (every pass): the cluster moves towards the plan only as running tasks
//    finish: a node's free capacity goes first to jobs with fewer tasks there than the plan
//    gives them, lowest current utility first, and only when their usage fits (a node is never
//    overloaded by what RAS starts). What capacity remains then goes to any pending task that
//    fits, lowest utility first, so a pass is work-conserving.
//  * AM containers are placed first, by the core's own placement.
// Queues: RAS ignores weights, capacities and preemption; `max-running-apps` holds.
// Cost: each pass reads every container; a plan is O(slots x nodes x jobs). Meant for clusters
// of up to a few hundred nodes, as in the seed.
std::unique_ptr<SchedulingPolicy> NewRasPolicy();

// `ras`'s own settings: the top-level `ras:` section of the scheduler configuration.
struct RasConfig {
  // Period T of the placement control loop, in ms of the caller's clock: a new placement is
  // computed at most this often, and also at once when a job (or a new phase of one) appears.
  int64_t control_period_ms = 30000;
  // Upper bound on the max-min rounds (one task moved per round) in one control cycle.
  int32_t max_rounds = 1000;
};

// Parses the `ras:` section (its YAML text); InvalidArgument "<origin>: ras.<key>: <what>".
absl::StatusOr<RasConfig> ParseRasSection(absl::string_view yaml, absl::string_view origin);
// The same, for the registry's PolicySection check.
absl::Status ValidateRasSection(absl::string_view yaml, absl::string_view origin);

namespace ras {

// The state of one job as RAS sees it now (the Job Status Updater's view): phases with pending
// and running tasks, observed mean task length of its map-like phases, s_req, and the
// utility of its current (running) allocation. Used by the policy and by reports.
struct JobStatus {
  AppId app = 0;
  int64_t goal_ms = -1;
  int64_t s_pend = 0, s_running = 0;  // map-like: unfinished (waiting + running), running
  int64_t r_pend = 0, r_running = 0;  // reduce-like
  double avg_map_ms = -1;             // -1 before any map-like task finished
  int64_t s_req = 0;
  double utility = 0;  // JobUtility(s_running, s_req, s_pend, r_running, r_pend)
};

// The status of `app` at `now_ms` from the scheduler's state; NotFound for an unknown app.
absl::StatusOr<JobStatus> StatusOf(const Scheduler& scheduler, AppId app, int64_t now_ms);

// The profile of the phase at container `priority`: the app's own, else a map-like phase
// without a usage profile.
PhaseProfile PhaseAt(const AppState& app, int32_t priority);

}  // namespace ras
}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_RAS_RAS_POLICY_H_
