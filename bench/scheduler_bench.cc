// One global scheduling pass that fills an empty cluster: the scheduler core's throughput.
//
//   BM_FillCluster/<nodes>/<apps>   policy `fair`, two-level queue tree (4 x 4 leaves),
//                                   3 resource types, node/rack/any asks.
//   BM_FillClusterConstrained/<nodes>/<apps>   the same, with 30% of each app's containers
//                                   asked through placement-constrained groups (issue 30):
//                                   anti-affinity, cardinality, rack affinity to another app,
//                                   node attribute. Counter `constrained_share`.
//
//   BM_FillClusterGpu/<nodes>/<apps>/<placement>   the same, on nodes with 8 GPUs each, with
//                                   30% of each app's containers asking GPUs (issue 32): a
//                                   quarter each 250, 500, 1000 and 2000 gpu-milli; placement
//                                   0 fgd (the default), 1 best-fit, 2 first-fit (scheduler
//                                   config gpu-placement). Counter `gpu_share`.
//
// Counter `allocations_per_s`: containers allocated per second of the pass (one core).
// Setup (nodes, apps, asks) is excluded from the timing. See docs/performance.md.
#include <cstdio>
#include <cstdlib>
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

constexpr int kZones = 4;  // node attribute zone=z<rack % kZones> in the constrained setup

std::string AppTag(int a) { return "app" + std::to_string(a + 1); }

// The constrained share of one app's containers (issue 30's mix), on "*" rows of their own
// groups (allocation_request_id 1, priorities 1-3, beside the plain groups), all hard:
//  * a third one per node: tags {app<id>, rs}, NOTIN,NODE,rs (self), like HBase region servers;
//  * a third at most 3 per node: tags {app<id>, worker}, CARDINALITY,NODE,worker,0,3 (self);
//  * a third, even apps: tags {app<id>, client}, IN,RACK,all/app<id+1> (the racks where the
//    next app's constrained containers run); odd apps: tags {app<id>, zonal},
//    zone=z<(a/2) % 4> for app index a (a quarter of the racks).
void AddConstrainedAsks(RequestUpdate* u, int a, int apps, int count) {
  const int anti = count / 3, card = count / 3, third = count - anti - card;
  auto ask = [&](int32_t priority, int n, std::string role, PlacementConstraint c) {
    if (n <= 0) return;
    ResourceRequest r{priority, "*", kContainer, n, true, 1};
    r.allocation_tags = {AppTag(a), std::move(role)};
    r.has_constraint = true;
    r.constraint = std::move(c);
    u->asks.push_back(std::move(r));
  };
  using PC = PlacementConstraint;
  ask(1, anti, "rs", PC::NotIn(ConstraintScope::kNode, "rs"));
  ask(2, card, "worker", PC::Cardinality(ConstraintScope::kNode, "worker", 0, 3));
  if (a % 2 == 0) {
    ask(3, third, "client",
        PC::In(ConstraintScope::kRack, AppTag((a + 1) % apps), TagNamespace::kAll));
  } else {
    ask(3, third, "zonal", PC::AttributeIs("zone", "z" + std::to_string((a / 2) % kZones)));
  }
}

// The GPU share of one app's containers (issue 32): "*" rows of gpu-milli 250, 500, 1000 and
// 2000 (a quarter each), priorities 4-7.
void AddGpuAsks(RequestUpdate* u, int count) {
  const int64_t kinds[] = {250, 500, 1000, 2000};
  for (int k = 0; k < 4; ++k) {
    const int n = count / 4 + (k < count % 4 ? 1 : 0);
    if (n <= 0) continue;
    Resource r = kContainer;
    r[kGpuMilli] = kinds[k];
    u->asks.push_back({4 + k, "*", r, n, true, 0});
  }
}

enum class Mix { kPlain, kConstrained, kGpu };

// Sets every app's asks (absolute counts, as an AM would send them). With kConstrained, 30%
// of each app's containers go through AddConstrainedAsks, with kGpu through AddGpuAsks, and
// the node/rack/any thirds share the other 70%.
void SetAsks(Scheduler* s, int nodes, int apps, uint64_t seed, Mix mix = Mix::kPlain) {
  const bool constrained = mix != Mix::kPlain;
  std::mt19937_64 rng(seed);
  // Demand: 1.2 x the cluster's container slots, spread evenly over apps.
  int64_t slots = static_cast<int64_t>(nodes) * 32;
  int per_app = static_cast<int>(slots * 12 / 10 / apps) + 1;
  int racks = (nodes + kNodesPerRack - 1) / kNodesPerRack;
  for (int a = 0; a < apps; ++a) {
    RequestUpdate u;
    const int cons = constrained ? per_app * 3 / 10 : 0;
    const int plain = per_app - cons;
    // A third node-local (3 preferred hosts per 6 containers), a third rack-local, a third any.
    int local = plain / 3, rack = plain / 3, any = plain - local - rack;
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
    if (cons > 0 && mix == Mix::kConstrained) AddConstrainedAsks(&u, a, apps, cons);
    if (cons > 0 && mix == Mix::kGpu) AddGpuAsks(&u, cons);
    if (absl::Status st = s->UpdateRequests(static_cast<AppId>(a + 1), u); !st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      std::abort();
    }
  }
}

// With kConstrained, nodes carry attributes zone=z<rack % kZones> and os=linux, and 30% of
// the asks are constrained; with kGpu nodes have 8 GPUs and 30% of the asks want GPUs.
constexpr const char* kGpuPlacements[] = {"fgd", "best-fit", "first-fit"};

std::unique_ptr<Scheduler> Build(int nodes, int apps, uint64_t seed, Mix mix = Mix::kPlain,
                                 int gpu_placement = 0) {
  const bool constrained = mix == Mix::kConstrained;
  ResourceTypeRegistry reg;
  auto config = ParseSchedulerConfig(
      std::string(kQueues) + "gpu-placement: " + kGpuPlacements[gpu_placement] + "\n", reg);
  auto s = std::move(*CreateScheduler(*config, SchedulerOptions{reg, 1}));
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n{"n" + std::to_string(i), "/r" + std::to_string(i / kNodesPerRack), kNode};
    if (mix == Mix::kGpu) n.capacity[kGpuMilli] = 8000;  // 8 anonymous GPUs
    if (constrained) {
      n.attributes = {{"zone", "z" + std::to_string((i / kNodesPerRack) % kZones)},
                      {"os", "linux"}};
    }
    if (absl::Status st = s->AddNode(n).status(); !st.ok()) std::abort();
  }
  for (int a = 0; a < apps; ++a) {
    AppSpec spec;
    spec.id = static_cast<AppId>(a + 1);
    spec.queue = "g" + std::to_string(a % 4) + "l" + std::to_string((a / 4) % 4);
    spec.user = "user" + std::to_string(a % 50);
    (void)s->AddApp(spec, 0);
  }
  SetAsks(s.get(), nodes, apps, seed, mix);
  return s;
}

// allocations_per_s over the timed passes, and allocations per pass.
void SetCounters(benchmark::State& state, int64_t allocations) {
  state.counters["allocations_per_s"] =
      benchmark::Counter(static_cast<double>(allocations), benchmark::Counter::kIsRate);
  state.counters["allocations"] = benchmark::Counter(static_cast<double>(allocations) /
                                                     static_cast<double>(state.iterations()));
}

// Allocations that came from constrained groups (they carry allocation tags; plain ones none),
// or with kGpu those holding GPUs.
int64_t CountConstrained(const std::vector<Allocation>& allocations, Mix mix) {
  int64_t n = 0;
  for (const Allocation& a : allocations)
    n += mix == Mix::kGpu ? !a.devices.empty() : !a.tags.empty();
  return n;
}

void FillCluster(benchmark::State& state, Mix mix) {
  const int nodes = static_cast<int>(state.range(0));
  const int apps = static_cast<int>(state.range(1));
  int64_t allocations = 0;
  int64_t node_local = 0;
  int64_t from_constrained = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, apps, 7, mix, mix == Mix::kGpu ? static_cast<int>(state.range(2)) : 0);
    state.ResumeTiming();
    // Includes the O(apps) rebuild of the ordering keys after the nodes joined.
    const PassResult& r = s->Schedule(0);
    benchmark::DoNotOptimize(r.allocations.data());
    state.PauseTiming();
    allocations += static_cast<int64_t>(r.allocations.size());
    from_constrained += CountConstrained(r.allocations, mix);
    node_local = s->stats().node_local;
    s.reset();
    state.ResumeTiming();
  }
  SetCounters(state, allocations);
  state.counters["node_local"] = static_cast<double>(node_local);
  if (mix != Mix::kPlain) {
    state.counters[mix == Mix::kGpu ? "gpu_share" : "constrained_share"] =
        allocations > 0 ? static_cast<double>(from_constrained) / static_cast<double>(allocations)
                        : 0.0;
  }
}

void BM_FillCluster(benchmark::State& state) { FillCluster(state, Mix::kPlain); }

// Issue 30: 30% of the containers asked with placement constraints (AddConstrainedAsks).
void BM_FillClusterConstrained(benchmark::State& state) { FillCluster(state, Mix::kConstrained); }

// Issue 32: 30% of the containers asking GPUs, on 8-GPU nodes (AddGpuAsks).
void BM_FillClusterGpu(benchmark::State& state) { FillCluster(state, Mix::kGpu); }

// The same pass on a scheduler that has run before: the cluster was filled once and every
// container completed, so the tables are sized and their memory is touched, as in a running RM.
void FillClusterWarm(benchmark::State& state, Mix mix) {
  const int nodes = static_cast<int>(state.range(0));
  const int apps = static_cast<int>(state.range(1));
  int64_t allocations = 0;
  int64_t from_constrained = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto s = Build(nodes, apps, 7, mix, mix == Mix::kGpu ? static_cast<int>(state.range(2)) : 0);
    std::vector<Allocation> first = s->Schedule(0).allocations;
    for (const Allocation& a : first) (void)s->ContainerCompleted(a.container);
    SetAsks(s.get(), nodes, apps, 8, mix);
    state.ResumeTiming();
    const PassResult& r = s->Schedule(1);
    benchmark::DoNotOptimize(r.allocations.data());
    state.PauseTiming();
    allocations += static_cast<int64_t>(r.allocations.size());
    from_constrained += CountConstrained(r.allocations, mix);
    s.reset();
    state.ResumeTiming();
  }
  SetCounters(state, allocations);
  if (mix != Mix::kPlain) {
    state.counters[mix == Mix::kGpu ? "gpu_share" : "constrained_share"] =
        allocations > 0 ? static_cast<double>(from_constrained) / static_cast<double>(allocations)
                        : 0.0;
  }
}

void BM_FillClusterWarm(benchmark::State& state) { FillClusterWarm(state, Mix::kPlain); }
void BM_FillClusterConstrainedWarm(benchmark::State& state) {
  FillClusterWarm(state, Mix::kConstrained);
}
void BM_FillClusterGpuWarm(benchmark::State& state) { FillClusterWarm(state, Mix::kGpu); }

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

BENCHMARK(BM_FillClusterConstrained)
    ->Args({1000, 100})
    ->Args({10000, 1000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

BENCHMARK(BM_FillClusterConstrainedWarm)
    ->Args({1000, 100})
    ->Args({10000, 1000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

BENCHMARK(BM_FillClusterGpu)
    ->ArgsProduct({{1000, 10000}, {100, 1000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

BENCHMARK(BM_FillClusterGpuWarm)
    ->ArgsProduct({{10000}, {1000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(3);

}  // namespace
}  // namespace weft::scheduler

BENCHMARK_MAIN();
