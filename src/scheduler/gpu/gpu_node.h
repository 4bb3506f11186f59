// Copyright Weft authors. What GPU placement sees of a node and of a request: the inputs of the
// fragmentation measure (fragmentation.h) and of the placement policies (gpu_placement.h).
//
// Units, as in the Alibaba 2023 GPU trace: CPU in milli-cores (1000 = one core), memory in
// MiB, GPU in milli-GPUs (1000 = one whole device). A node's GPUs are a vector of per-device
// free milli, each 0..1000 (1000 = a whole free device).
#ifndef WEFT_SCHEDULER_GPU_GPU_NODE_H_
#define WEFT_SCHEDULER_GPU_GPU_NODE_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace weft::gpu {

inline constexpr int32_t kMilliPerGpu = 1000;

// Classes of hosted GPU tasks, for gpu-clustering: index 0 counts GPU shares (asks below one
// device), index k (1..kMaxGpuClass-1) counts tasks holding k whole devices; tasks of
// kMaxGpuClass or more whole devices share the last index.
inline constexpr int kMaxGpuClass = 17;
using HostedTaskCounts = std::array<int32_t, kMaxGpuClass>;

// The class index of a valid GPU ask (gpu_milli > 0), see HostedTaskCounts.
int GpuClassOf(int64_t gpu_milli);

// A node as GPU placement sees it. A plain value: the caller owns it and keeps it current
// (subtracting what it places, see Apply below).
struct GpuNode {
  int64_t cpu_milli_free = 0;   // milli-cores free
  int64_t memory_mib_free = 0;  // MiB free
  // Free milli per device, by device index, each in [0, 1000]. Empty: a node without GPUs.
  std::vector<int32_t> device_free_milli;
  std::string model;  // GPU model, e.g. "V100M32"; "" when the node has no GPUs
  HostedTaskCounts hosted{};  // hosted GPU tasks by class (gpu-clustering)

  int64_t TotalFreeMilli() const;
  int32_t WholeFreeDevices() const;  // devices with all 1000 milli free
};

// A request to place: one task (a pod in the trace, a container in Weft).
struct GpuAsk {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  // Total GPU: 0 = none; 1..999 = a share of one device; k*1000 = k whole devices. Anything
  // else is invalid (ValidateAsk).
  int64_t gpu_milli = 0;
  // GPU models the task may run on; empty = any model. Only consulted when gpu_milli > 0.
  std::vector<std::string> allowed_models;

  bool IsShare() const { return gpu_milli > 0 && gpu_milli < kMilliPerGpu; }
  // Devices the ask holds (1 for a share, k for k whole devices, 0 for none).
  int32_t DeviceCount() const;
  // Milli taken from each of those devices (the share, or 1000).
  int32_t MilliPerDevice() const;
};

// OK, or InvalidArgument naming the bad field: negative cpu/memory, or a gpu_milli that is
// neither a share (1..999) nor a multiple of 1000, or more than kMaxDevicesPerAsk whole GPUs.
absl::Status ValidateAsk(const GpuAsk& ask);

// True when `model` is one the ask accepts (no constraint, or listed). A node without GPUs
// ("" model) is never accepted for an ask with a model constraint.
bool ModelAllowed(const GpuAsk& ask, absl::string_view model);

// The most devices one ask may hold (ValidateAsk refuses more).
inline constexpr int kMaxDevicesPerAsk = 16;

// Which devices a placement takes and how much of each: every listed device gives
// milli_per_device. No devices: an ask without GPUs. A trivially copyable value (no heap).
struct DeviceChoice {
  std::array<int32_t, kMaxDevicesPerAsk> index{};
  int32_t count = 0;
  int32_t milli_per_device = 0;

  absl::Span<const int32_t> devices() const { return {index.data(), static_cast<size_t>(count)}; }
  void Add(int32_t device) { index[count++] = device; }
  std::vector<int32_t> ToVector() const { return {index.begin(), index.begin() + count}; }
};

// Whether `ask` fits on `node` at all (CPU, memory, model, and a device choice exists), for a
// valid ask. Policies never place where this is false.
bool Fits(const GpuNode& node, const GpuAsk& ask);

// Subtracts a placement from the node: CPU, memory, each chosen device's milli, and counts the
// task's class. CHECKs that the choice fits (a broken invariant, not bad input).
void Apply(const GpuAsk& ask, const DeviceChoice& choice, GpuNode* node);

}  // namespace weft::gpu

#endif  // WEFT_SCHEDULER_GPU_GPU_NODE_H_
