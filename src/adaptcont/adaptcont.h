// Copyright Weft authors. AdaptCont (seed 002): sizing each ApplicationMaster container from
// its workload with a feedback loop of three stages — input generation, constraint filtering,
// decision-making — in Dynamic or Pool mode, with YARN's fixed AM as the baseline.
//
// Pure: no I/O, no clock, no state. The RM calls DecideAmSize at submission and again before
// each new AM attempt (with the previous attempt's size and whether it was killed over its
// memory limit, and the headroom of that moment); the simulator calls it once per job and per
// attempt for each master (yarn-default, dynamic, pool). The decision carries the inputs each
// stage used and a one-line explanation per stage for the app's report.
//
// Formulas, units, configuration keys and the memory-need model: docs/adaptcont.md.
//
// Thread-safety: every function is reentrant; the structs are thread-compatible values.
#ifndef WEFT_ADAPTCONT_ADAPTCONT_H_
#define WEFT_ADAPTCONT_ADAPTCONT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "adaptcont/am_memory_model.h"
#include "adaptcont/config.h"
#include "common/resource.h"

namespace weft::adaptcont {

// The AM attempt that came before the one being sized.
struct PreviousAttempt {
  AmResource size;  // the container it ran in (memory_mb > 0, vcores > 0)
  // True when it was killed for exceeding its memory limit (the NM's memory enforcement, or
  // the simulator's memory-need model). Other failures (node lost, preemption) do not grow
  // the next attempt: it is sized from the current inputs only.
  bool failed_for_memory = false;
};

// Everything one decision looks at. Counts are >= 0 unless stated.
struct AmSizingInput {
  std::string user;  // for the per-user cap (AdaptContConfig::user_am_caps)

  // Input generation. The job's input size (bytes) and its split size (bytes; 0 = the
  // config's split_bytes). map_tasks overrides ceil(input_bytes / split) when >= 0 (a trace
  // that gives task counts); -1 derives it. reduce_tasks is the reduce-like phase that runs
  // after the map-like one (0 = none).
  int64_t input_bytes = 0;
  int64_t split_bytes = 0;
  int64_t map_tasks = -1;
  int64_t reduce_tasks = 0;

  // Worker containers the scheduler could give this user in this queue now (its headroom
  // divided by the worker container size; see ContainersInHeadroom).
  int64_t available_containers = 0;

  // Infrastructure feedback: nodes lost since the last decision, and the worker containers'
  // worth of headroom they held that `available_containers` does not yet reflect (0 when the
  // headroom was taken after the loss). The latter is subtracted.
  int64_t nodes_lost = 0;
  int64_t lost_containers = 0;

  // Infrastructure constraints. The scheduler's maximum allocation (YARN's
  // yarn.scheduler.maximum-allocation-{mb,vcores}) and the queue's AM resource limit (its
  // maximum-am-resource-percent of the queue; unset = none): ceilings on one AM container.
  AmResource cluster_max_allocation = {8192, 4};
  std::optional<AmResource> queue_am_limit;

  // Feedback from the last attempt; unset at submission.
  std::optional<PreviousAttempt> previous_attempt;
};

// The output of stage 1, input generation.
struct WorkloadInputs {
  int64_t split_bytes = 0;  // the split size used (bytes)
  int64_t map_tasks = 0;    // = number of splits unless given
  int64_t reduce_tasks = 0;
  int64_t available_containers = 0;  // after subtracting lost_containers
  int64_t wave_size = 0;             // map wave: min(map_tasks, available), >= 1 if tasks > 0
  int64_t waves = 0;                 // ceil(map_tasks / wave_size); 0 without tasks
  std::string log;
};

// The output of stage 2, constraint filtering.
struct AmConstraints {
  AmResource ceiling;           // the tightest of max allocation, queue AM limit, user cap
  std::string memory_bound_by;  // which constraint sets ceiling.memory_mb
  std::string vcores_bound_by;  // which constraint sets ceiling.vcores
  int64_t sizing_tasks = 0;     // tasks of the phase the AM is sized for
  int64_t wave_size = 0;        // the wave it is sized for (<= max_wave except yarn-default)
  int64_t waves = 0;
  // Largest wave whose dynamic AM fits the ceiling; kUnlimitedTasks for yarn-default.
  int64_t max_wave = 0;
  // Memory the next attempt must reach (before the ceiling); 0 without a memory failure.
  int64_t failure_floor_mb = 0;
  std::string log;
};

struct AmSizingDecision {
  AdaptContMode mode = AdaptContMode::kDynamic;
  AmResource size;             // the AM container to ask for
  std::string pool_container;  // pool mode: the predefined container used; "" = dynamic size
  AmResource dynamic_size;     // dynamic decision (with need floor and feedback); pool compares

  // Inputs as the stages saw them.
  int64_t split_bytes = 0;
  int64_t map_tasks = 0;
  int64_t reduce_tasks = 0;
  int64_t available_containers = 0;
  int64_t tasks = 0;      // tasks of the phase sized for
  int64_t wave_size = 0;  // the wave sized for
  int64_t waves = 0;
  AmResource ceiling;

  int64_t need_mb = 0;  // the memory-need model's need for wave_size (MB)
  // The most tasks the AM may run at once and stay within `size` under the model
  // (AmTasksTrackable): the simulator's AdaptCont AMs ask for no more containers at once,
  // like MapReduce's mapreduce.job.running.{map,reduce}.limit. kUnlimitedTasks for
  // yarn-default, whose AM does not limit itself.
  int64_t max_running_tasks = kUnlimitedTasks;

  // The previous attempt was killed over its memory limit and the failure floor was applied
  // (dynamic and pool only); feedback_capped: the ceiling cut that floor.
  bool feedback_applied = false;
  bool feedback_capped = false;

  std::string input_stage;       // stage 1, e.g. "input 10 GiB / 64 MiB splits = 160 map ..."
  std::string constraint_stage;  // stage 2
  std::string decision_stage;    // stage 3 and feedback

  // "<input_stage>; constraints: <constraint_stage>; <decision_stage>" for logs and reports.
  std::string Explanation() const;
  Resource AsResource() const { return Resource::Of(size.memory_mb, size.vcores); }
};

// Stage 1. InvalidArgument naming the AmSizingInput field for negative sizes or counts.
absl::StatusOr<WorkloadInputs> GenerateInputs(const AdaptContConfig& config,
                                              const AmSizingInput& input);

// Stage 2: ceilings (cluster max allocation, queue AM limit, user cap), the application
// constraint (the AM is sized for the map-like phase; the reduce-like phase runs after it and
// only counts when it is larger), the wave limited to what fits the ceiling, and the memory
// floor after a memory failure. FailedPrecondition when not even the smallest AM fits the
// ceiling; yarn-default only checks its fixed size against the cluster max allocation.
absl::StatusOr<AmConstraints> FilterConstraints(const AdaptContConfig& config,
                                                const AmSizingInput& input,
                                                const WorkloadInputs& workload);

// Stage 3 formulas (Dynamic AdaptCont), for a valid config:
//   increments(w) = max(0, ceil(w / w0) - 1)          (w = wave size, tasks)
//   memory(w)     = m0_mb * (1 + increments(w))       MB
//   vcores(mem)   = 1 + floor((ceil(mem / m0_mb) - 1) / 2)
// DynamicAmSize applies both (without the need floor); 768 MB -> 2 vcores with m0 = 256.
AmResource DynamicAmSize(int64_t wave_size, const AdaptContConfig& config);
int64_t DynamicVcores(int64_t memory_mb, const AdaptContConfig& config);
// The largest wave whose dynamic AM (with the need floor) fits in `memory_mb`: with
// j = floor(memory_mb / m0_mb), min(j * w0, AmTasksTrackable(j * m0_mb)). 0 when j = 0.
int64_t DynamicMaxWave(int64_t memory_mb, const AdaptContConfig& config);

// The three stages and the feedback rule. InvalidArgument for a bad config or input (naming
// the field), FailedPrecondition when the AM cannot fit its ceilings. Deterministic.
absl::StatusOr<AmSizingDecision> DecideAmSize(const AdaptContConfig& config,
                                              const AmSizingInput& input);

// Worker containers of size `worker` that fit in `headroom`: the minimum over memory-mb and
// vcores (types with worker amount 0 ignored) of floor(headroom / worker), >= 0. For the RM,
// which has the scheduler's headroom as a Resource.
int64_t ContainersInHeadroom(const Resource& headroom, const Resource& worker);

// One line with every input, for the RM's log next to the decision.
std::string FormatAmSizingInput(const AmSizingInput& input);

}  // namespace weft::adaptcont

#endif  // WEFT_ADAPTCONT_ADAPTCONT_H_
