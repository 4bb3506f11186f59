// Copyright Weft authors.
#include "scheduler/gpu/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace weft::gpu {
namespace {

bool TypeAllowsModel(const TaskType& t, absl::string_view model) {
  if (t.allowed_models.empty()) return true;
  if (model.empty()) return false;
  for (const std::string& m : t.allowed_models)
    if (m == model) return true;
  return false;
}

}  // namespace

absl::StatusOr<TargetWorkload> TargetWorkload::FromTypes(std::vector<TaskType> types) {
  if (types.empty()) return absl::InvalidArgumentError("the target workload has no task types");
  double sum = 0;
  for (size_t i = 0; i < types.size(); ++i) {
    if (!(types[i].popularity > 0))
      return absl::InvalidArgumentError(
          absl::StrCat("task type ", i, " has popularity ", types[i].popularity, " (must be > 0)"));
    sum += types[i].popularity;
  }
  for (TaskType& t : types) t.popularity /= sum;
  return TargetWorkload(std::move(types));
}

absl::StatusOr<TargetWorkload> TargetWorkload::FromAsks(absl::Span<const GpuAsk> asks,
                                                        const TargetWorkloadOptions& options) {
  // Key: (cpu, milli per device, devices, models joined) -> count. The model list is kept as
  // the ask gives it: "A|B" and "B|A" are different types, as in the paper's simulator.
  using Key = std::tuple<int64_t, int32_t, int32_t, std::string>;
  std::map<Key, int64_t> counts;
  int64_t total = 0;
  for (size_t i = 0; i < asks.size(); ++i) {
    const GpuAsk& a = asks[i];
    if (absl::Status s = ValidateAsk(a); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("ask ", i, ": ", s.message()));
    if (a.gpu_milli == 0 && !options.include_cpu_only) continue;
    std::string models = a.gpu_milli > 0 ? absl::StrJoin(a.allowed_models, "|") : "";
    ++counts[Key{a.cpu_milli, a.MilliPerDevice(), a.DeviceCount(), std::move(models)}];
    ++total;
  }
  if (total == 0) return absl::InvalidArgumentError("no asks to build the target workload from");
  // Most common first; equal counts: the larger type (CPU, then milli, devices, models) first,
  // the order the paper's simulator uses, so that the cut at `coverage` is the same.
  std::vector<std::pair<Key, int64_t>> sorted(counts.begin(), counts.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    if (a.second != b.second) return a.second > b.second;
    return a.first > b.first;
  });
  std::vector<TaskType> types;
  int64_t covered = 0;
  for (const auto& [key, n] : sorted) {
    if (static_cast<double>(covered) >= options.coverage * static_cast<double>(total)) break;
    TaskType t;
    t.cpu_milli = std::get<0>(key);
    t.milli_per_device = std::get<1>(key);
    t.devices = std::get<2>(key);
    const std::string& models = std::get<3>(key);
    if (!models.empty()) t.allowed_models = absl::StrSplit(models, '|');
    t.popularity = static_cast<double>(n);
    types.push_back(std::move(t));
    covered += n;
  }
  return FromTypes(std::move(types));
}

double FragmentationMilli(int64_t cpu_milli_free, absl::Span<const int32_t> device_free_milli,
                          absl::string_view model, const TargetWorkload& workload) {
  int64_t free_total = 0;
  for (int32_t m : device_free_milli) free_total += m;
  if (free_total == 0) return 0;
  double frag = 0;
  for (const TaskType& t : workload.types()) {
    int64_t unusable = free_total;
    if (t.devices > 0 && cpu_milli_free >= t.cpu_milli && TypeAllowsModel(t, model)) {
      int32_t room = 0;        // devices with room for one of the type's per-device shares
      int64_t too_small = 0;   // free milli on the others
      for (int32_t m : device_free_milli) {
        if (m >= t.milli_per_device) {
          ++room;
        } else {
          too_small += m;
        }
      }
      if (room >= t.devices) unusable = too_small;
    }
    frag += t.popularity * static_cast<double>(unusable);
  }
  return frag;
}

}  // namespace weft::gpu
