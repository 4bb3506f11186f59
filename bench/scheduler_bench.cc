// One global scheduling pass that fills an empty cluster: the scheduler core's throughput.
//
//   BM_FillCluster/<nodes>/<apps>   policy `fair`, two-level queue tree (4 x 4 leaves),
//                                   3 resource types, node/rack/any asks.
//
// Counter `allocations_per_s`: containers allocated per second of the pass (one core).
// Setup (nodes, apps, asks) is excluded from the timing. See docs/performance.md.
#include <random>
#include <string>

#include "benchmark/benchmark.h"
#include "scheduler/registry.h"

namespace weft::scheduler {
namespace {

constexpr const char* kQueues = R"(
policy: fair
locality: {node-locality-delay: 0, rack-locality-delay: 0}
queues:
  root:
    children:
      g0: {weight: 1, children: {g0l0: {}, g0l1: {}, g0l2: {}, g0l3: {}}}
      g1: {weight: 2, children: {g1l0: {}, g1l1: {}, g1l2: {}, g1l3: {}}}
      g2: {weight: 1, children: {g2l0: {}, g2l1: {}, g2l2: {}, g2l3: {}}}
      g3: {weight: 3, children: {g3l0: {}, g3l1: {}, g3l2: {}, g3l3: {}}}
)";

constexpr int kNodesPerRack = 40;
const Resource kNode = Resource::Of(128 * 1024, 32, 10000);
const Resource kContainer = Resource::Of(2048, 1, 100);

// Sets every app's asks (absolute counts, as an AM would send them).
void SetAsks(Scheduler* s, int nodes, int apps, uint64_t seed) {
  std::mt19937_64 rng(seed);
  // Demand: 1.2 x the cluster's container slots, spread evenly over apps.
  int64_t slots = static_cast<int64_t>(nodes) * 32;
  int per_app = static_cast<int>(slots * 12 / 10 / apps) + 1;
  int racks = (nodes + kNodesPerRack - 1) / kNodesPerRack;
  for (int a = 0; a < apps; ++a) {
    RequestUpdate u;
    // A third node-local (3 preferred hosts per 6 containers), a third rack-local, a third any.
    int local = per_app / 3, rack = per_app / 3, any = per_app - local - rack;
    if (local > 0) {
      for (int h = 0; h < std::max(1, local / 2); ++h) {
        ResourceRequest r{1, "n" + std::to_string(rng() % nodes), kContainer, 2, true, 0};
        u.asks.push_back(r);
      }
      u.asks.push_back({1, "/r" + std::to_string(rng() % racks), kContainer, local, true, 0});
      u.asks.push_back({1, "*", kContainer, local, true, 0});
    }
    if (rack > 0) {
      u.asks.push_back({2, "/r" + std::to_string(rng() % racks), kContainer, rack, true, 0});
      u.asks.push_back({2, "*", kContainer, rack, true, 0});
    }
    u.asks.push_back({3, "*", kContainer, any, true, 0});
    (void)s->UpdateRequests(static_cast<AppId>(a + 1), u);
  }
}

std::unique_ptr<Scheduler> Build(int nodes, int apps, uint64_t seed) {
  ResourceTypeRegistry reg;
  auto config = ParseSchedulerConfig(kQueues, reg);
  auto s = std::move(*CreateScheduler(*config, SchedulerOptions{reg, 1}));
  for (int i = 0; i < nodes; ++i) {
    (void)s->AddNode({"n" + std::to_string(i), "/r" + std::to_string(i / kNodesPerRack), kNode});
  }
  for (int a = 0; a < apps; ++a) {
    AppSpec spec;
    spec.id = static_cast<AppId>(a + 1);
    spec.queue = "g" + std::to_string(a % 4) + "l" + std::to_string((a / 4) % 4);
    spec.user = "user" + std::to_string(a % 50);
    (void)s->AddApp(spec, 0);
  }
  SetAsks(s.get(), nodes, apps, seed);
  return s;
}

// allocations_per_s over the timed passes, and allocations per pass.
void SetCounters(benchmark::State& state, int64_t allocations) {
  state.counters["allocations_per_s"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kIsRate);
  state.counters["allocations"] = benchmark::Counter(static_cast<double>(allocations) /
                                                     static_cast<double>(state.iterations()));
}

void BM_FillCluster(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int apps = static_cast<int>(state.range(1));
  int64_t allocations = 0;
  int64_t node_local = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, apps, 7);
    state.ResumeTiming();
    // Includes the O(apps) rebuild of the ordering keys after the nodes joined.
    const PassResult& r = s->Schedule(0);
    benchmark::DoNotOptimize(r.allocations.data());
    state.PauseTiming();
    allocations += static_cast<int64_t>(r.allocations.size());
    node_local = s->stats().node_local;
    s.reset();
    state.ResumeTiming();
  }
  SetCounters(state, allocations);
  state.counters["node_local"] = static_cast<double>(node_local);
}

// The same pass on a scheduler that has run before: the cluster was filled once and every
// container completed, so the tables are sized and their memory is touched, as in a running RM.
void BM_FillClusterWarm(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int apps = static_cast<int>(state.range(1));
  int64_t allocations = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, apps, 7);
    std::vector<Allocation> first = s->Schedule(0).allocations;
    for (const Allocation& a : first) (void)s->ContainerCompleted(a.container);
    SetAsks(s.get(), nodes, apps, 8);
    state.ResumeTiming();
    const PassResult& r = s->Schedule(1);
    benchmark::DoNotOptimize(r.allocations.data());
    state.PauseTiming();
    allocations += static_cast<int64_t>(r.allocations.size());
    s.reset();
    state.ResumeTiming();
  }
  SetCounters(state, allocations);
}

BENCHMARK(BM_FillClusterWarm)
    ->ArgsProduct({{1000, 10000, 50000}, {100, 1000, 10000}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

BENCHMARK(BM_FillCluster)
    ->ArgsProduct({{1000, 10000, 50000}, {100, 1000, 10000}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace weft::scheduler

BENCHMARK_MAIN();
