// Copyright Weft authors. The Alibaba 2023 GPU trace (cluster-trace-gpu-v2023, the "openb"
// files of the FGD paper) as published: a node list and a pod list, both CSV with a header.
//
//   node list: sn, cpu_milli, memory_mib, gpu, model      (model empty for CPU-only nodes)
//   pod list:  name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, qos, pod_phase,
//              creation_time, deletion_time, scheduled_time
//
// gpu_milli is per GPU: below 1000 with num_gpu 1 a share of one GPU, else 1000 (whole GPUs).
// gpu_spec is empty or the allowed models joined by '|'. Columns are found by name; extra
// columns are ignored; times, qos and phase are not used (the experiment has no departures).
#ifndef WEFT_SIM_GPU_TRACE_H_
#define WEFT_SIM_GPU_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/gpu/gpu_node.h"

namespace weft::sim {

struct GpuTraceNode {
  std::string name;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t gpus = 0;
  std::string model;  // "" for a node without GPUs
};

struct GpuTracePod {
  std::string name;
  gpu::GpuAsk ask;  // gpu_milli is the total: share, or num_gpu * 1000
};

// Reads the files. Errors (NotFound, InvalidArgument) name the file, the line and the bad
// field: "nodes.csv:7: field 'gpu' is 'x', not a whole number >= 0".
absl::StatusOr<std::vector<GpuTraceNode>> ReadGpuNodeList(absl::string_view path);
absl::StatusOr<std::vector<GpuTracePod>> ReadGpuPodList(absl::string_view path);

}  // namespace weft::sim

#endif  // WEFT_SIM_GPU_TRACE_H_
