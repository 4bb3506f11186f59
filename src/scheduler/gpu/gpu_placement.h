// Copyright Weft authors. GPU placement policies: for a task (GpuAsk) and a node (GpuNode),
// whether it fits, how good the node is, and which devices it would take. The policies are the
// six of the FGD paper (fragmentation.h), with the scoring of its simulator
// (hkust-adsl/kubernetes-scheduler-simulator), so that Weft reproduces its figures:
//
//   fgd             fragmentation gradient descent: the node and devices whose placement
//                   grows the node's fragmentation for the target workload least (or shrinks
//                   it most). Needs a TargetWorkload.
//   best-fit        the node with least CPU and GPU left after placing (each normalised by the
//                   largest node, 128 cores and 8 GPUs, weighted 1/2).
//   dot-product     the node whose free (CPU, GPU) vector has the smallest dot product with
//                   the ask's (Tetris-like alignment; normalised as best-fit).
//   gpu-packing     a partly used device first, then free devices on a partly used node, then
//                   an idle node (fewest GPUs first).
//   gpu-clustering  a node already hosting only tasks of the ask's class (shares, or k whole
//                   GPUs), then one hosting that class among others, then an idle node, then
//                   any; within a tier the fullest node.
//   random          a uniformly random feasible node (seeded).
//
// Scores: smaller is better. They are 100 minus the simulator's integer node score (0..100),
// so equal simulator scores are equal here; PickBestNode gives ties to the first candidate
// (the paper's simulator: the first in a random node order fixed for the run) or to a random
// one. random's scores are seeded draws in [0, 1).
//
// Devices: fgd takes the device whose use leaves least fragmentation (first such index);
// random a random device with room; the others the device with least room that fits (first
// such index). Whole GPUs are always the lowest-index whole free devices.
//
// Thread-safety: a GpuPlacement is not thread-safe (random and fgd keep state); use one per
// thread. Score never allocates on the heap for nodes of up to 8 devices.
#ifndef WEFT_SCHEDULER_GPU_GPU_PLACEMENT_H_
#define WEFT_SCHEDULER_GPU_GPU_PLACEMENT_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "scheduler/gpu/fragmentation.h"
#include "scheduler/gpu/gpu_node.h"

namespace weft::gpu {

// One node's verdict for one ask.
struct NodeScore {
  bool feasible = false;  // false: the ask must not go there (score and devices unset)
  double score = 0;       // smaller is better
  DeviceChoice devices;   // what it would take there
};

class GpuPlacement {
 public:
  virtual ~GpuPlacement() = default;
  virtual absl::string_view name() const = 0;
  // The verdict for placing a valid ask (ValidateAsk) on `node`. Infeasible exactly when
  // !Fits(node, ask).
  virtual NodeScore Score(const GpuNode& node, const GpuAsk& ask) = 0;
};

// The names MakeGpuPlacement knows, in the paper's order.
const std::vector<std::string>& GpuPlacementNames();

// A policy by name (GpuPlacementNames). `workload` is needed by fgd (InvalidArgument without
// it) and must outlive the policy; `seed` drives random. An unknown name is InvalidArgument
// listing the known ones.
absl::StatusOr<std::unique_ptr<GpuPlacement>> MakeGpuPlacement(absl::string_view name,
                                                               const TargetWorkload* workload,
                                                               uint64_t seed);

// The device choice alone, for an ask that fits the node (else nullopt): `best_fit` true takes
// the share from the device with least room that fits (first such index), false from the
// first device with room. Whole GPUs: the lowest-index whole free devices.
std::optional<DeviceChoice> AssignDevices(const GpuNode& node, const GpuAsk& ask,
                                          bool best_fit = true);

struct PickedNode {
  int index = -1;  // into the candidates; -1 when none is feasible
  NodeScore verdict;
};

// The best feasible candidate for the ask: the smallest score; ties broken uniformly at random
// with `tie_break` (reservoir sampling in candidate order), or the first one when it is null.
PickedNode PickBestNode(GpuPlacement& policy, absl::Span<const GpuNode* const> candidates,
                        const GpuAsk& ask, std::mt19937_64* tie_break);

}  // namespace weft::gpu

#endif  // WEFT_SCHEDULER_GPU_GPU_PLACEMENT_H_
