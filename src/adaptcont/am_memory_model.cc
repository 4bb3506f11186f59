#include "adaptcont/am_memory_model.h"

#include <limits>

namespace weft::adaptcont {

int64_t AmMemoryNeedMb(int64_t tasks_in_wave, const AmMemoryModel& model) {
  if (tasks_in_wave < 0) tasks_in_wave = 0;
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  const __int128 task_kb = static_cast<__int128>(tasks_in_wave) * model.per_task_kb;
  const __int128 need = static_cast<__int128>(model.base_mb) + (task_kb + 1023) / 1024;
  return need > kMax ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(need);
}

int64_t AmTasksTrackable(int64_t memory_mb, const AmMemoryModel& model) {
  if (memory_mb < model.base_mb) return 0;
  if (model.per_task_kb <= 0) return kUnlimitedTasks;
  // need(t) <= memory  <=>  ceil(t * per_task_kb / 1024) <= memory - base
  //                    <=>  t * per_task_kb <= (memory - base) * 1024.
  const __int128 spare_kb = static_cast<__int128>(memory_mb - model.base_mb) * 1024;
  const __int128 t = spare_kb / model.per_task_kb;
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  return t > kMax ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(t);
}

}  // namespace weft::adaptcont
