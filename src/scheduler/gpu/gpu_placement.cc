// Copyright Weft authors.
#include "scheduler/gpu/gpu_placement.h"

#include <algorithm>
#include <cmath>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "absl/strings/str_join.h"

namespace weft::gpu {
namespace {

// The simulator's node score range (Kubernetes' MinNodeScore..MaxNodeScore), and the largest
// node of the Alibaba trace, which best-fit and dot-product normalise by.
constexpr int64_t kMaxNodeScore = 100;
constexpr double kMaxSpecCpuMilli = 128000;
constexpr double kMaxSpecGpuMilli = 8000;

using DeviceVec = absl::InlinedVector<int32_t, 8>;  // scratch device vectors, no heap

// Our score (smaller is better) from the simulator's (larger is better, 0..100).
double FromNodeScore(int64_t s) { return static_cast<double>(kMaxNodeScore - s); }

NodeScore Feasible(double score, DeviceChoice devices) {
  NodeScore v;
  v.feasible = true;
  v.score = score;
  v.devices = devices;
  return v;
}

// The lowest-index whole free devices, for an ask of whole GPUs that fits.
DeviceChoice WholeDevices(const GpuNode& node, const GpuAsk& ask) {
  DeviceChoice c;
  c.milli_per_device = kMilliPerGpu;
  int32_t need = ask.DeviceCount();
  for (int32_t d = 0; d < static_cast<int32_t>(node.device_free_milli.size()) && need > 0; ++d) {
    if (node.device_free_milli[d] == kMilliPerGpu) {
      c.Add(d);
      --need;
    }
  }
  CheckOrDie(need == 0, "WholeDevices on a node that does not fit the ask");
  return c;
}

DeviceChoice ShareDevice(int32_t device, const GpuAsk& ask) {
  DeviceChoice c;
  c.milli_per_device = ask.MilliPerDevice();
  c.Add(device);
  return c;
}

// Best-fit device choice (the simulator's default "best" GPU selection), for an ask that fits.
DeviceChoice BestFitDevices(const GpuNode& node, const GpuAsk& ask) {
  if (ask.gpu_milli <= 0) return DeviceChoice{};
  if (!ask.IsShare()) return WholeDevices(node, ask);
  int32_t best = -1;
  const int32_t per = ask.MilliPerDevice();
  for (int32_t d = 0; d < static_cast<int32_t>(node.device_free_milli.size()); ++d) {
    const int32_t m = node.device_free_milli[d];
    if (m >= per && (best < 0 || m < node.device_free_milli[best])) best = d;
  }
  CheckOrDie(best >= 0, "BestFitDevices on a node that does not fit the ask");
  return ShareDevice(best, ask);
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

class FgdPlacement final : public GpuPlacement {
 public:
  explicit FgdPlacement(const TargetWorkload* workload) : workload_(workload) {}
  absl::string_view name() const override { return "fgd"; }

  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    const double before = FragmentationMilli(node, *workload_);
    const int64_t cpu_after = node.cpu_milli_free - ask.cpu_milli;
    DeviceVec after(node.device_free_milli.begin(), node.device_free_milli.end());
    // The simulator's score: 100 * sigmoid(fragmentation decrease in GPUs), truncated.
    auto node_score = [&](absl::Span<const int32_t> devices) {
      const double frag = FragmentationMilli(cpu_after, devices, node.model, *workload_);
      return static_cast<int64_t>(Sigmoid((before - frag) / kMilliPerGpu) * kMaxNodeScore);
    };
    if (ask.IsShare()) {
      const int32_t per = ask.MilliPerDevice();
      int32_t best_device = -1;
      int64_t best = 0;
      for (int32_t d = 0; d < static_cast<int32_t>(after.size()); ++d) {
        const int32_t m = node.device_free_milli[d];
        if (m < per) continue;
        // A device with the same free milli as an earlier one gives the same fragmentation.
        bool seen = false;
        for (int32_t e = 0; e < d && !seen; ++e)
          seen = node.device_free_milli[e] == m && node.device_free_milli[e] >= per;
        if (seen) continue;
        after[d] = m - per;
        const int64_t s = node_score(after);
        after[d] = m;
        if (best_device < 0 || s > best) {
          best = s;
          best_device = d;
        }
      }
      return Feasible(FromNodeScore(best), ShareDevice(best_device, ask));
    }
    DeviceChoice c;
    if (ask.gpu_milli > 0) {
      c = WholeDevices(node, ask);
      for (int32_t d : c.devices()) after[d] = 0;
    }
    return Feasible(FromNodeScore(node_score(after)), std::move(c));
  }

 private:
  const TargetWorkload* workload_;
};

class BestFitPlacement final : public GpuPlacement {
 public:
  absl::string_view name() const override { return "best-fit"; }
  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    const double left =
        0.5 * static_cast<double>(node.cpu_milli_free - ask.cpu_milli) / kMaxSpecCpuMilli +
        0.5 * static_cast<double>(node.TotalFreeMilli() - ask.gpu_milli) / kMaxSpecGpuMilli;
    const auto s = static_cast<int64_t>((1.0 - left) * kMaxNodeScore);
    return Feasible(FromNodeScore(s), BestFitDevices(node, ask));
  }
};

class DotProductPlacement final : public GpuPlacement {
 public:
  absl::string_view name() const override { return "dot-product"; }
  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    const double dot = (static_cast<double>(node.cpu_milli_free) / kMaxSpecCpuMilli) *
                           (static_cast<double>(ask.cpu_milli) / kMaxSpecCpuMilli) +
                       (static_cast<double>(node.TotalFreeMilli()) / kMaxSpecGpuMilli) *
                           (static_cast<double>(ask.gpu_milli) / kMaxSpecGpuMilli);
    const auto s = static_cast<int64_t>(kMaxNodeScore * (1.0 - dot / 2));
    return Feasible(FromNodeScore(s), BestFitDevices(node, ask));
  }
};

class GpuPackingPlacement final : public GpuPlacement {
 public:
  absl::string_view name() const override { return "gpu-packing"; }
  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    if (ask.gpu_milli <= 0) return Feasible(FromNodeScore(0), DeviceChoice{});
    DeviceChoice devices = BestFitDevices(node, ask);
    const auto& free = node.device_free_milli;
    const int32_t whole_free = node.WholeFreeDevices();
    int64_t s;
    if (whole_free == static_cast<int32_t>(free.size())) {
      // An idle node: the fewer GPUs the better.
      s = std::max<int64_t>(kMaxNodeScore / 3 - whole_free, whole_free);
    } else {
      // The devices the ask would use, least free first (ties: lower index first).
      DeviceVec order(free.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return free[a] < free[b]; });
      int32_t need = ask.DeviceCount();
      int32_t whole_used = 0;
      int64_t free_pct_on_used = 0;
      for (int32_t d : order) {
        if (need == 0) break;
        if (free[d] >= ask.MilliPerDevice()) {
          --need;
          whole_used += free[d] == kMilliPerGpu;
          free_pct_on_used += static_cast<int64_t>(free[d]) * 100 / kMilliPerGpu;
        }
      }
      if (whole_used > 0) {
        s = std::max<int64_t>(kMaxNodeScore / 2 - whole_used, kMaxNodeScore / 3);
      } else {
        s = std::max<int64_t>(kMaxNodeScore - free_pct_on_used / 10, kMaxNodeScore / 2);
      }
    }
    return Feasible(FromNodeScore(s), std::move(devices));
  }
};

class GpuClusteringPlacement final : public GpuPlacement {
 public:
  absl::string_view name() const override { return "gpu-clustering"; }
  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    if (ask.gpu_milli <= 0) return Feasible(FromNodeScore(0), DeviceChoice{});
    const int64_t fullness =
        kMaxNodeScore / 4 * (static_cast<int64_t>(kMaxSpecGpuMilli) - node.TotalFreeMilli()) /
        static_cast<int64_t>(kMaxSpecGpuMilli);
    int classes = 0;
    for (int32_t n : node.hosted) classes += n > 0;
    const bool same = node.hosted[GpuClassOf(ask.gpu_milli)] > 0;
    int64_t tier;  // 3: only this class; 2: this class among others; 1: idle; 0: others only
    if (same) {
      tier = classes == 1 ? 3 : 2;
    } else {
      tier = classes == 0 ? 1 : 0;
    }
    const int64_t s = fullness + kMaxNodeScore * tier / 4;
    return Feasible(FromNodeScore(s), BestFitDevices(node, ask));
  }
};

class RandomPlacement final : public GpuPlacement {
 public:
  explicit RandomPlacement(uint64_t seed) : rng_(seed) {}
  absl::string_view name() const override { return "random"; }
  NodeScore Score(const GpuNode& node, const GpuAsk& ask) override {
    if (!Fits(node, ask)) return NodeScore{};
    DeviceChoice c;
    if (ask.IsShare()) {
      int32_t seen = 0, pick = -1;
      for (int32_t d = 0; d < static_cast<int32_t>(node.device_free_milli.size()); ++d) {
        if (node.device_free_milli[d] < ask.MilliPerDevice()) continue;
        ++seen;
        if (std::uniform_int_distribution<int32_t>(0, seen - 1)(rng_) == 0) pick = d;
      }
      c = ShareDevice(pick, ask);
    } else if (ask.gpu_milli > 0) {
      c = WholeDevices(node, ask);
    }
    return Feasible(std::uniform_real_distribution<double>(0, 1)(rng_), std::move(c));
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

const std::vector<std::string>& GpuPlacementNames() {
  static const auto* names = new std::vector<std::string>{
      "random", "dot-product", "gpu-clustering", "gpu-packing", "best-fit", "fgd"};
  return *names;
}

absl::StatusOr<std::unique_ptr<GpuPlacement>> MakeGpuPlacement(absl::string_view name,
                                                               const TargetWorkload* workload,
                                                               uint64_t seed) {
  if (name == "fgd") {
    if (workload == nullptr)
      return absl::InvalidArgumentError("GPU placement 'fgd' needs a target workload");
    return std::make_unique<FgdPlacement>(workload);
  }
  if (name == "best-fit") return std::make_unique<BestFitPlacement>();
  if (name == "dot-product") return std::make_unique<DotProductPlacement>();
  if (name == "gpu-packing") return std::make_unique<GpuPackingPlacement>();
  if (name == "gpu-clustering") return std::make_unique<GpuClusteringPlacement>();
  if (name == "random") return std::make_unique<RandomPlacement>(seed);
  return absl::InvalidArgumentError(absl::StrCat("unknown GPU placement '", name,
                                                 "' (known: ",
                                                 absl::StrJoin(GpuPlacementNames(), ", "), ")"));
}

std::optional<DeviceChoice> AssignDevices(const GpuNode& node, const GpuAsk& ask,
                                          bool best_fit) {
  if (!Fits(node, ask)) return std::nullopt;
  if (!ask.IsShare() || best_fit) return BestFitDevices(node, ask);
  for (int32_t d = 0; d < static_cast<int32_t>(node.device_free_milli.size()); ++d)
    if (node.device_free_milli[d] >= ask.MilliPerDevice()) return ShareDevice(d, ask);
  return std::nullopt;  // unreachable: Fits found a device
}

PickedNode PickBestNode(GpuPlacement& policy, absl::Span<const GpuNode* const> candidates,
                        const GpuAsk& ask, std::mt19937_64* tie_break) {
  PickedNode best;
  int ties = 0;
  for (int i = 0; i < static_cast<int>(candidates.size()); ++i) {
    NodeScore v = policy.Score(*candidates[i], ask);
    if (!v.feasible) continue;
    if (best.index < 0 || v.score < best.verdict.score) {
      best.index = i;
      best.verdict = std::move(v);
      ties = 1;
    } else if (v.score == best.verdict.score) {
      ++ties;
      if (tie_break != nullptr &&
          std::uniform_int_distribution<int>(0, ties - 1)(*tie_break) == 0) {
        best.index = i;
        best.verdict = std::move(v);
      }
    }
  }
  return best;
}

}  // namespace weft::gpu
