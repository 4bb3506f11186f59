// Copyright Weft authors. GPU fragmentation as defined by FGD ("Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", Weng et al., USENIX
// ATC'23): how many of a node's free milli-GPUs the tasks expected to arrive could not use.
//
// The target workload is a set of task types with popularity (summing to 1), built from a list
// of asks (the trace) the way the paper's simulator builds it: asks are grouped by (CPU, GPU
// milli per device, device count, model constraint); types are taken in decreasing count until
// they cover at least `coverage` (95%) of the asks, and their popularity renormalised over the
// taken ones. CPU-only asks are types too.
//
// A node's fragmentation for the workload is the popularity-weighted sum, over types, of the
// free milli-GPUs the type cannot use on that node:
//   - a type that fits (enough CPU and enough devices with room for it): the free milli on
//     the devices with less room than the type's per-device milli;
//   - any other type (not enough CPU or devices, a model it may not run on, or a CPU-only
//     type): all of the node's free milli.
// Memory plays no part (as in the paper). Result in milli-GPUs; 0 for a node without GPUs.
#ifndef WEFT_SCHEDULER_GPU_FRAGMENTATION_H_
#define WEFT_SCHEDULER_GPU_FRAGMENTATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "scheduler/gpu/gpu_node.h"

namespace weft::gpu {

// One task type of the target workload.
struct TaskType {
  int64_t cpu_milli = 0;
  int32_t milli_per_device = 0;  // 0 for a CPU-only type
  int32_t devices = 0;           // devices it holds (0 for CPU-only)
  std::vector<std::string> allowed_models;  // empty = any
  double popularity = 0;         // share of the workload, in (0, 1]
};

struct TargetWorkloadOptions {
  double coverage = 0.95;      // take the most common types until they cover this share
  bool include_cpu_only = true;  // CPU-only asks are types (the paper's setting)
};

// The target workload: immutable once built, safe to share between threads.
class TargetWorkload {
 public:
  // Builds it from asks (each must pass ValidateAsk). InvalidArgument for an empty list (or
  // one with no GPU asks when CPU-only ones are excluded), naming the first invalid ask by
  // index.
  static absl::StatusOr<TargetWorkload> FromAsks(absl::Span<const GpuAsk> asks,
                                                 const TargetWorkloadOptions& options = {});
  // From explicit types (popularity renormalised to sum to 1); for tests and callers that
  // know their mix. InvalidArgument when empty or a popularity is not > 0.
  static absl::StatusOr<TargetWorkload> FromTypes(std::vector<TaskType> types);

  // Most popular first.
  const std::vector<TaskType>& types() const { return types_; }

 private:
  explicit TargetWorkload(std::vector<TaskType> types) : types_(std::move(types)) {}
  std::vector<TaskType> types_;
};

// FGD's fragmentation of a node state, in milli-GPUs (see the file comment). Allocation-free.
double FragmentationMilli(int64_t cpu_milli_free, absl::Span<const int32_t> device_free_milli,
                          absl::string_view model, const TargetWorkload& workload);

inline double FragmentationMilli(const GpuNode& node, const TargetWorkload& workload) {
  return FragmentationMilli(node.cpu_milli_free, node.device_free_milli, node.model, workload);
}

}  // namespace weft::gpu

#endif  // WEFT_SCHEDULER_GPU_FRAGMENTATION_H_
