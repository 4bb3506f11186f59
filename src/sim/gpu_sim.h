// Copyright Weft authors. The FGD paper's inflation experiment on the Alibaba 2023 GPU trace
// (`weft sim --workload alibaba2023gpu:PODS.csv --cluster-file NODES.csv --gpu-placement P`).
//
// The trace's pods, in a seeded random order, followed by pods drawn from the trace (seeded,
// with replacement) until one more would take the arrived GPU demand past tune x the
// cluster's GPU capacity (with tune below the trace's own demand, seeded random pods are
// dropped instead). Each pod is placed at once on the best node of the whole cluster by the
// GPU placement policy, or fails; nothing departs. Equal scores go to the node earliest in a
// seeded random order fixed for the run (the paper's simulator's tie-break). After each pod
// the simulation records the allocation ratio (allocated / total milli-GPUs), the
// unallocated GPUs and the fragmented GPUs (FGD's measure for the target workload built from
// the trace, summed over nodes); the series holds, for each whole percent of arrived demand
// (rounded), the mean of those records, as the paper's analysis does.
#ifndef WEFT_SIM_GPU_SIM_H_
#define WEFT_SIM_GPU_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "sim/gpu_trace.h"

namespace weft::sim {

struct GpuSimOptions {
  std::string policy = "fgd";  // a gpu::GpuPlacementNames() entry
  uint64_t seed = 42;          // pod order, drawn pods, random policy, ties
  double tune = 1.3;           // arrived GPU demand, as a multiple of the cluster's GPUs
};

struct GpuSimPoint {
  int arrived_pct = 0;          // arrived GPU demand, % of capacity (rounded)
  double allocation_ratio = 0;  // % of the cluster's milli-GPUs allocated
  double unallocated_gpus = 0;  // free milli-GPUs / 1000
  double fragmented_gpus = 0;   // FGD fragmentation / 1000
  double failed_gpus = 0;       // GPU demand of the failed pods so far / 1000
};

struct GpuSimResult {
  std::string policy;
  uint64_t seed = 0;
  double tune = 0;
  int nodes = 0;
  int64_t total_gpus = 0;
  int target_types = 0;            // task types in the target workload
  int64_t pods = 0;                // pods that arrived
  int64_t pods_failed = 0;
  int64_t gpu_pods_failed = 0;
  int64_t arrived_gpu_milli = 0;
  int64_t allocated_gpu_milli = 0;
  GpuSimPoint final;               // after the last pod (arrived_pct of the whole run)
  std::vector<GpuSimPoint> series;  // by arrived_pct, ascending
};

// Runs the experiment. InvalidArgument for an unknown policy, a tune not > 0, a cluster
// without GPUs or a trace without GPU pods.
absl::StatusOr<GpuSimResult> RunGpuSim(const std::vector<GpuTraceNode>& nodes,
                                       const std::vector<GpuTracePod>& pods,
                                       const GpuSimOptions& options);

// The report: policy, seed, tune, nodes, total_gpus, target_types, pods, pods_failed,
// gpu_pods_failed, arrived_gpu_milli, gpu {allocation_ratio, unallocated_gpus,
// fragmented_gpus, failed_gpus, arrived_pct} (final), series [{arrived_pct, allocation_ratio,
// unallocated_gpus, fragmented_gpus, failed_gpus}].
nlohmann::json GpuSimResultToJson(const GpuSimResult& r);

// What `weft sim` runs for an alibaba2023gpu workload: reads both files, runs, prints a
// summary to stderr and writes the report to `report_path` when not empty. Errors name the
// flag or file at fault.
struct GpuSimCommand {
  std::string pods_path;     // from --workload alibaba2023gpu:PATH
  std::string nodes_path;    // --cluster-file
  std::string policy;        // --gpu-placement
  uint64_t seed = 42;        // --seed
  double tune = 1.3;         // --tune
  std::string report_path;   // --report
};
absl::Status RunGpuSimCommand(const GpuSimCommand& c);

}  // namespace weft::sim

#endif  // WEFT_SIM_GPU_SIM_H_
