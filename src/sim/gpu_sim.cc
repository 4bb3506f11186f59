// Copyright Weft authors.
#include "sim/gpu_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "scheduler/gpu/fragmentation.h"
#include "scheduler/gpu/gpu_placement.h"

namespace weft::sim {
namespace {

// The pods in arrival order: the trace shuffled, then drawn pods up to the target demand
// (indices into `pods`).
std::vector<int> ArrivalOrder(const std::vector<GpuTracePod>& pods, int64_t target_milli,
                              std::mt19937_64& rng) {
  std::vector<int> order(pods.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::sort(order.begin(), order.end(),
            [&](int a, int b) { return pods[a].name < pods[b].name; });
  std::shuffle(order.begin(), order.end(), rng);
  int64_t demand = 0;
  for (int i : order) demand += pods[i].ask.gpu_milli;
  if (demand > target_milli) {
    while (demand > target_milli && !order.empty()) {
      const size_t k = std::uniform_int_distribution<size_t>(0, order.size() - 1)(rng);
      demand -= pods[order[k]].ask.gpu_milli;
      order.erase(order.begin() + static_cast<std::ptrdiff_t>(k));
    }
    return order;
  }
  std::uniform_int_distribution<int> draw(0, static_cast<int>(pods.size()) - 1);
  for (;;) {
    const int i = draw(rng);
    if (demand + pods[i].ask.gpu_milli > target_milli) break;
    demand += pods[i].ask.gpu_milli;
    order.push_back(i);
  }
  return order;
}

struct Bucket {
  int64_t n = 0;
  double alloc = 0, unalloc = 0, frag = 0, failed = 0;
};

}  // namespace

absl::StatusOr<GpuSimResult> RunGpuSim(const std::vector<GpuTraceNode>& trace_nodes,
                                       const std::vector<GpuTracePod>& pods,
                                       const GpuSimOptions& options) {
  if (!(options.tune > 0))
    return absl::InvalidArgumentError(absl::StrCat("tune ", options.tune, " is not > 0"));
  std::vector<gpu::GpuAsk> asks;
  asks.reserve(pods.size());
  bool any_gpu_pod = false;
  for (const GpuTracePod& p : pods) {
    asks.push_back(p.ask);
    any_gpu_pod |= p.ask.gpu_milli > 0;
  }
  if (!any_gpu_pod) return absl::InvalidArgumentError("the pod list has no GPU pods");
  auto workload = gpu::TargetWorkload::FromAsks(asks);
  if (!workload.ok()) return workload.status();
  const uint64_t seed = options.seed;
  auto policy = gpu::MakeGpuPlacement(options.policy, &*workload, seed ^ 0x5eed5eedULL);
  if (!policy.ok()) return policy.status();

  std::vector<gpu::GpuNode> nodes(trace_nodes.size());
  int64_t total_milli = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const GpuTraceNode& t = trace_nodes[i];
    nodes[i].cpu_milli_free = t.cpu_milli;
    nodes[i].memory_mib_free = t.memory_mib;
    nodes[i].device_free_milli.assign(t.gpus, gpu::kMilliPerGpu);
    nodes[i].model = t.model;
    total_milli += int64_t{t.gpus} * gpu::kMilliPerGpu;
  }
  if (total_milli == 0) return absl::InvalidArgumentError("the cluster has no GPUs");
  // Candidates in a seeded random order, fixed for the run; equal scores go to the earliest.
  // This is the paper's simulator's tie-break: it prefixes node names with a random
  // permutation and takes the lexicographically smallest name among equal scores.
  std::mt19937_64 node_order_rng(seed * 0x9e3779b97f4a7c15ULL + 1);
  std::vector<int> node_order(nodes.size());
  for (size_t i = 0; i < node_order.size(); ++i) node_order[i] = static_cast<int>(i);
  std::shuffle(node_order.begin(), node_order.end(), node_order_rng);
  std::vector<const gpu::GpuNode*> candidates;
  for (int i : node_order) candidates.push_back(&nodes[i]);
  // Each node's fragmentation, kept current as pods land, and their sum.
  std::vector<double> frag(nodes.size());
  double frag_sum = 0;
  for (size_t i = 0; i < nodes.size(); ++i) {
    frag[i] = gpu::FragmentationMilli(nodes[i], *workload);
    frag_sum += frag[i];
  }

  std::mt19937_64 order_rng(seed);
  const double total = static_cast<double>(total_milli);
  const auto target = static_cast<int64_t>(std::llround(options.tune * total));
  const std::vector<int> order = ArrivalOrder(pods, target, order_rng);

  GpuSimResult r;
  r.policy = options.policy;
  r.seed = seed;
  r.tune = options.tune;
  r.nodes = static_cast<int>(nodes.size());
  r.total_gpus = total_milli / gpu::kMilliPerGpu;
  r.target_types = static_cast<int>(workload->types().size());
  std::map<int, Bucket> buckets;
  int64_t allocated = 0, arrived = 0;
  for (int i : order) {
    const gpu::GpuAsk& ask = pods[i].ask;
    arrived += ask.gpu_milli;
    ++r.pods;
    gpu::PickedNode picked = gpu::PickBestNode(**policy, candidates, ask, nullptr);
    if (picked.index < 0) {
      ++r.pods_failed;
      r.gpu_pods_failed += ask.gpu_milli > 0;
    } else {
      const int k = node_order[picked.index];
      gpu::GpuNode& n = nodes[k];
      gpu::Apply(ask, picked.verdict.devices, &n);
      allocated += ask.gpu_milli;
      const double f = gpu::FragmentationMilli(n, *workload);
      frag_sum += f - frag[k];
      frag[k] = f;
    }
    const double pct = 100.0 * static_cast<double>(arrived) / static_cast<double>(total_milli);
    Bucket& b = buckets[static_cast<int>(std::lround(pct))];
    ++b.n;
    b.alloc += 100.0 * static_cast<double>(allocated) / static_cast<double>(total_milli);
    b.unalloc += static_cast<double>(total_milli - allocated) / gpu::kMilliPerGpu;
    b.frag += frag_sum / gpu::kMilliPerGpu;
    b.failed += static_cast<double>(arrived - allocated) / gpu::kMilliPerGpu;
  }
  r.arrived_gpu_milli = arrived;
  r.allocated_gpu_milli = allocated;
  r.final.arrived_pct =
      static_cast<int>(std::lround(100.0 * static_cast<double>(arrived) / total));
  r.final.allocation_ratio = 100.0 * static_cast<double>(allocated) / total;
  r.final.unallocated_gpus = static_cast<double>(total_milli - allocated) / gpu::kMilliPerGpu;
  r.final.fragmented_gpus = frag_sum / gpu::kMilliPerGpu;
  r.final.failed_gpus = static_cast<double>(arrived - allocated) / gpu::kMilliPerGpu;
  for (const auto& [pct, b] : buckets) {
    GpuSimPoint p;
    p.arrived_pct = pct;
    p.allocation_ratio = b.alloc / static_cast<double>(b.n);
    p.unallocated_gpus = b.unalloc / static_cast<double>(b.n);
    p.fragmented_gpus = b.frag / static_cast<double>(b.n);
    p.failed_gpus = b.failed / static_cast<double>(b.n);
    r.series.push_back(p);
  }
  return r;
}

nlohmann::json GpuSimResultToJson(const GpuSimResult& r) {
  nlohmann::json j;
  j["policy"] = r.policy;
  j["seed"] = r.seed;
  j["tune"] = r.tune;
  j["nodes"] = r.nodes;
  j["total_gpus"] = r.total_gpus;
  j["target_types"] = r.target_types;
  j["pods"] = r.pods;
  j["pods_failed"] = r.pods_failed;
  j["gpu_pods_failed"] = r.gpu_pods_failed;
  j["arrived_gpu_milli"] = r.arrived_gpu_milli;
  j["gpu"] = {{"allocation_ratio", r.final.allocation_ratio},
              {"unallocated_gpus", r.final.unallocated_gpus},
              {"fragmented_gpus", r.final.fragmented_gpus},
              {"failed_gpus", r.final.failed_gpus},
              {"arrived_pct", r.final.arrived_pct}};
  nlohmann::json series = nlohmann::json::array();
  for (const GpuSimPoint& p : r.series)
    series.push_back({{"arrived_pct", p.arrived_pct},
                      {"allocation_ratio", p.allocation_ratio},
                      {"unallocated_gpus", p.unallocated_gpus},
                      {"fragmented_gpus", p.fragmented_gpus},
                      {"failed_gpus", p.failed_gpus}});
  j["series"] = std::move(series);
  return j;
}

absl::Status RunGpuSimCommand(const GpuSimCommand& c) {
  if (c.nodes_path.empty())
    return absl::InvalidArgumentError(
        "--cluster-file: an alibaba2023gpu workload needs the node list (e.g. "
        "data/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv)");
  if (c.policy.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "--gpu-placement: an alibaba2023gpu workload needs a GPU placement policy (one of ",
        absl::StrJoin(gpu::GpuPlacementNames(), ", "), ")"));
  if (!(c.tune > 0) || c.tune > 100)
    return absl::InvalidArgumentError(absl::StrCat("--tune ", c.tune, " must be in (0, 100]"));
  auto nodes = ReadGpuNodeList(c.nodes_path);
  if (!nodes.ok())
    return absl::Status(nodes.status().code(),
                        absl::StrCat("--cluster-file: ", nodes.status().message()));
  auto pods = ReadGpuPodList(c.pods_path);
  if (!pods.ok())
    return absl::Status(pods.status().code(),
                        absl::StrCat("--workload: ", pods.status().message()));
  GpuSimOptions o;
  o.policy = c.policy;
  o.seed = c.seed;
  o.tune = c.tune;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunGpuSim(*nodes, *pods, o);
  if (!r.ok()) {
    if (absl::StrContains(r.status().message(), "unknown GPU placement"))
      return absl::Status(r.status().code(),
                          absl::StrCat("--gpu-placement: ", r.status().message()));
    return r.status();
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cerr << absl::StrFormat(
      "weft sim: alibaba2023gpu, %s, seed %d, tune %.2f: %d nodes, %d GPUs, %d pods arrived "
      "(%d%% of the GPUs), %d failed (%d GPU pods); allocated %.2f%%, unallocated %.1f GPUs, "
      "fragmented %.1f GPUs; %.1f s\n",
      r->policy, r->seed, r->tune, r->nodes, r->total_gpus, r->pods, r->final.arrived_pct,
      r->pods_failed, r->gpu_pods_failed, r->final.allocation_ratio, r->final.unallocated_gpus,
      r->final.fragmented_gpus, wall);
  if (!c.report_path.empty()) {
    std::ofstream out(c.report_path);
    out << GpuSimResultToJson(*r).dump(1) << "\n";
    if (!out)
      return absl::InternalError(absl::StrCat("--report: cannot write '", c.report_path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace weft::sim
