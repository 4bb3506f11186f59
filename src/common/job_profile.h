// Copyright Weft authors. A job's description of itself beyond its resource asks (seed 003
// section 1): phases with measured task usage and expected lengths, and a completion-time
// goal. Workload formats, the wire protocol and goal-driven scheduling policies share it.
#ifndef WEFT_COMMON_JOB_PROFILE_H_
#define WEFT_COMMON_JOB_PROFILE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace weft {

// What one running task of a phase actually consumes, as a share of one
// node's capacity in [0, 1] per resource, distinct from what its container requests (Table 2
// of the seed). `io` is the task's share of the node's disk and network bandwidth.
struct TaskUsage {
  double cpu = 0;
  double io = 0;
  double memory = 0;
};

// How a phase's tasks relate to the job's goal (seed 003 section 3.3): map-like tasks are the
// bulk of a job's work, steered towards its completion-time goal; reduce-like tasks should all
// run as early as possible and are spread over nodes.
enum class PhaseKind : uint8_t { kMapLike, kReduceLike };

// One phase of a job: the tasks it asks for at container priority `priority`.
struct PhaseProfile {
  int32_t priority = 0;  // the request priority that carries this phase's tasks
  std::string name;      // "map", "reduce", ... (reports only)
  PhaseKind kind = PhaseKind::kMapLike;
  // Measured usage of one task. Absent: the container request is taken as the usage.
  bool has_usage = false;
  TaskUsage usage;
  // Expected run time of one task, from the offline profiling run (seed 003 section 3.6), in
  // ms; -1: unknown. A goal-driven policy estimates with it until a task of the phase finished.
  int64_t expected_task_ms = -1;
};

// What a job tells the scheduler beyond its asks (seed 003 section 1): its completion-time
// goal and its phases. Policies that steer by goals or usage act on it; others ignore it. Requests
// at a priority no phase names form a map-like phase without a usage profile.
struct JobProfile {
  // Completion-time goal (soft deadline), absolute, in ms on the caller's clock; -1: none.
  int64_t goal_ms = -1;
  std::vector<PhaseProfile> phases;
};

}  // namespace weft

#endif  // WEFT_COMMON_JOB_PROFILE_H_
