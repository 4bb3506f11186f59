// Copyright Weft authors. What one placement decision costs the scheduler: each policy picking
// the best of 64 candidate nodes (8 GPUs each, partly used) for a GPU share, against a target
// workload of 20 task types (the Alibaba trace's default list has about that many).
#include <random>
#include <vector>

#include "benchmark/benchmark.h"
#include "scheduler/gpu/gpu_placement.h"

namespace weft::gpu {
namespace {

void BM_PickBestOf64(benchmark::State& state, const char* name) {
  std::mt19937_64 rng(1);
  std::vector<TaskType> types;
  for (int i = 0; i < 20; ++i) {
    TaskType t;
    t.cpu_milli = 1000 * (1 + static_cast<int64_t>(rng() % 16));
    t.devices = i < 12 ? 1 : 1 << (i % 4);
    t.milli_per_device = i < 8 ? 50 * (1 + static_cast<int32_t>(rng() % 19)) : 1000;
    t.popularity = 1.0 + static_cast<double>(rng() % 10);
    types.push_back(t);
  }
  auto workload = TargetWorkload::FromTypes(types);
  auto policy = MakeGpuPlacement(name, &*workload, 1);
  std::vector<GpuNode> nodes(64);
  std::vector<const GpuNode*> candidates;
  for (GpuNode& n : nodes) {
    n.cpu_milli_free = 96000;
    n.memory_mib_free = 512 * 1024;
    n.model = "V100M32";
    for (int d = 0; d < 8; ++d)
      n.device_free_milli.push_back(rng() % 3 == 0 ? 1000 : static_cast<int32_t>(rng() % 1000));
    candidates.push_back(&n);
  }
  GpuAsk ask;
  ask.cpu_milli = 4000;
  ask.memory_mib = 16384;
  ask.gpu_milli = 250;
  for (auto _ : state) {
    PickedNode p = PickBestNode(**policy, candidates, ask, nullptr);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations() * 64);  // node scores
}
BENCHMARK_CAPTURE(BM_PickBestOf64, fgd, "fgd");
BENCHMARK_CAPTURE(BM_PickBestOf64, best_fit, "best-fit");
BENCHMARK_CAPTURE(BM_PickBestOf64, gpu_packing, "gpu-packing");
BENCHMARK_CAPTURE(BM_PickBestOf64, random, "random");

}  // namespace
}  // namespace weft::gpu

BENCHMARK_MAIN();
