// Copyright Weft authors.
#include "scheduler/gpu/gpu_node.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft::gpu {

int GpuClassOf(int64_t gpu_milli) {
  if (gpu_milli < kMilliPerGpu) return 0;
  return static_cast<int>(std::min<int64_t>(gpu_milli / kMilliPerGpu, kMaxGpuClass - 1));
}

int64_t GpuNode::TotalFreeMilli() const {
  int64_t total = 0;
  for (int32_t m : device_free_milli) total += m;
  return total;
}

int32_t GpuNode::WholeFreeDevices() const {
  int32_t n = 0;
  for (int32_t m : device_free_milli) n += m == kMilliPerGpu;
  return n;
}

int32_t GpuAsk::DeviceCount() const {
  if (gpu_milli <= 0) return 0;
  if (gpu_milli < kMilliPerGpu) return 1;
  return static_cast<int32_t>(gpu_milli / kMilliPerGpu);
}

int32_t GpuAsk::MilliPerDevice() const {
  if (gpu_milli <= 0) return 0;
  return gpu_milli < kMilliPerGpu ? static_cast<int32_t>(gpu_milli) : kMilliPerGpu;
}

absl::Status ValidateAsk(const GpuAsk& ask) {
  if (ask.cpu_milli < 0)
    return absl::InvalidArgumentError(absl::StrCat("cpu_milli=", ask.cpu_milli, " is negative"));
  if (ask.memory_mib < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("memory_mib=", ask.memory_mib, " is negative"));
  if (ask.gpu_milli < 0 || (ask.gpu_milli > kMilliPerGpu && ask.gpu_milli % kMilliPerGpu != 0) ||
      ask.gpu_milli > int64_t{kMaxDevicesPerAsk} * kMilliPerGpu)
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu_milli=", ask.gpu_milli,
        " is neither a share of one GPU (1-999) nor whole GPUs (a multiple of 1000, at most ",
        kMaxDevicesPerAsk, " GPUs)"));
  return absl::OkStatus();
}

bool ModelAllowed(const GpuAsk& ask, absl::string_view model) {
  if (ask.allowed_models.empty()) return true;
  if (model.empty()) return false;
  for (const std::string& m : ask.allowed_models)
    if (m == model) return true;
  return false;
}

bool Fits(const GpuNode& node, const GpuAsk& ask) {
  if (node.cpu_milli_free < ask.cpu_milli || node.memory_mib_free < ask.memory_mib) return false;
  if (ask.gpu_milli <= 0) return true;
  if (node.device_free_milli.empty() || !ModelAllowed(ask, node.model)) return false;
  const int32_t per = ask.MilliPerDevice();
  int32_t need = ask.DeviceCount();
  for (int32_t m : node.device_free_milli)
    if (m >= per && --need == 0) return true;
  return false;
}

void Apply(const GpuAsk& ask, const DeviceChoice& choice, GpuNode* node) {
  CheckOrDie(Fits(*node, ask), "Apply: the ask does not fit the node");
  node->cpu_milli_free -= ask.cpu_milli;
  node->memory_mib_free -= ask.memory_mib;
  if (ask.gpu_milli <= 0) return;
  CheckOrDie(choice.count == ask.DeviceCount() &&
                 choice.milli_per_device == ask.MilliPerDevice(),
             "Apply: the device choice does not match the ask");
  for (int32_t d : choice.devices()) {
    CheckOrDie(d >= 0 && d < static_cast<int32_t>(node->device_free_milli.size()) &&
                   node->device_free_milli[d] >= choice.milli_per_device,
               "Apply: a chosen device has no room");
    node->device_free_milli[d] -= choice.milli_per_device;
  }
  ++node->hosted[GpuClassOf(ask.gpu_milli)];
}

}  // namespace weft::gpu
