// Copyright Weft authors. How much memory an ApplicationMaster needs, as a function of the
// tasks it tracks at once.
//
// The simulator decides with this model whether an AM container is too small (the attempt is
// killed over its memory limit); AdaptCont uses it as a floor, so that an AdaptCont-sized AM
// never fails where a right-sized one (exactly its need) would succeed. See docs/adaptcont.md.
#ifndef WEFT_ADAPTCONT_AM_MEMORY_MODEL_H_
#define WEFT_ADAPTCONT_AM_MEMORY_MODEL_H_

#include <cstdint>

namespace weft::adaptcont {

// need(t) = base_mb + ceil(t * per_task_kb / 1024) MB for an AM tracking t tasks of its
// current wave (t running task containers: their attempts, statuses, counters, heartbeats).
// The defaults make need(W0 = 64) = 256 MB = M0: the seed's minimum AM exactly tracks one
// unit wave.
struct AmMemoryModel {
  int64_t base_mb = 128;       // JVM/runtime, job plan, splits, RPC servers (MB, >= 0)
  int64_t per_task_kb = 2048;  // per task tracked in the current wave (KiB, >= 0)
};

// The AM's memory need in MB while it tracks `tasks_in_wave` (>= 0; negative counts as 0)
// tasks at once. Saturates at INT64_MAX instead of overflowing.
int64_t AmMemoryNeedMb(int64_t tasks_in_wave, const AmMemoryModel& model);

// The largest number of tasks an AM of `memory_mb` can track at once under the model: the
// largest t with AmMemoryNeedMb(t) <= memory_mb. 0 when memory_mb < need(1) (it cannot even
// track one task); kUnlimitedTasks when per_task_kb is 0 and memory_mb >= base_mb.
inline constexpr int64_t kUnlimitedTasks = -1;
int64_t AmTasksTrackable(int64_t memory_mb, const AmMemoryModel& model);

// True when an AM container of `memory_mb` survives tracking `tasks_in_wave` tasks.
inline bool AmFitsWave(int64_t memory_mb, int64_t tasks_in_wave, const AmMemoryModel& model) {
  return AmMemoryNeedMb(tasks_in_wave, model) <= memory_mb;
}

}  // namespace weft::adaptcont

#endif  // WEFT_ADAPTCONT_AM_MEMORY_MODEL_H_
