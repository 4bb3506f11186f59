#include "cli/sim_command.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "adaptcont/config.h"
#include "cli/cli_common.h"
#include "common/terminal_text.h"
#include "federation/policies/registry.h"
#include "scheduler/config.h"
#include "scheduler/registry.h"
#include "sim/cluster_spec.h"
#include "sim/report.h"
#include "sim/simulator.h"
#include "sim/gpu_sim.h"
#include "sim/workload.h"
#include "sim/workload_registry.h"

#ifndef WEFT_SOURCE_DIR
#define WEFT_SOURCE_DIR "."
#endif

namespace weft::cli {
namespace {

// A file shipped with Weft, by its path in the repository ("tools/plot_sim.py"): the installed
// copy, <prefix>/share/weft/<path> beside <prefix>/bin/weft (the Debian package's /usr), when
// there is one; else the one in the source tree this binary was built from.
std::string ShippedFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    std::filesystem::path installed = exe.parent_path().parent_path() / "share" / "weft" / path;
    if (std::filesystem::exists(installed, ec)) return installed.string();
  }
  return absl::StrCat(WEFT_SOURCE_DIR, "/", path);
}

struct SimFlags {
  std::string workload =
      "swim:" + ShippedFile("data/traces/swim_FB-2009_samples_24_times_1hr_0.tsv");
  int nodes = 600;
  std::string node_resources = "memory-mb=16384,vcores=8";
  int racks = 20;
  std::string cluster_file;
  std::string policy = "fair";
  std::string scheduler_config;
  uint64_t seed = 1;
  std::string report, timeseries, plot, job_series;
  int slots = 0;                  // slot-based baseline (seed 003); 0 = off
  double overload_penalty = 0;    // contention model
  std::vector<std::string> fail_nodes;
  bool strict = false;
  int64_t max_jobs = 0;
  bool json = false;
  // Placement: a seeded placement variant of the workload (sim::PlacementMix), and the gang
  // mode ("" = the scheduler configuration's).
  std::string placement_mix;
  std::string gang_mode;
  // Simulation model.
  int64_t heartbeat_ms = 1000;
  int64_t am_launch_ms = 1000;
  std::string am_resources = "memory-mb=1024,vcores=1";
  // AdaptCont (seed 002): "" = every AM gets --am-resources; else yarn-default, dynamic, pool.
  std::string am_master;
  std::string adaptcont_config;
  int replicas = 3;
  double sample_s = 0;
  // SWIM task model.
  int64_t split_mb = 128, reduce_mb = 1024, task_overhead_ms = 5000, max_tasks = 20000;
  double map_mbps = 2, reduce_mbps = 1;
  std::string map_resources = "memory-mb=1024,vcores=1",
              reduce_resources = "memory-mb=2048,vcores=1";
  // Alibaba model.
  int64_t alibaba_machine_memory_mb = 64 * 1024;
  bool include_unfinished = false;
  // Federation (seed 004).
  int sub_clusters = 1;
  std::string router_policy = "load-based";
  std::string amrm_policy = "locality-multicast";
  double headroom_alpha = 1.0;
  // What the federation's policies see, and when (sim::FederationOptions).
  int64_t subcluster_heartbeat_ms = sim::FederationOptions{}.heartbeat_ms;
  int64_t federation_cache_ttl_ms = sim::FederationOptions{}.cache_ttl_ms;
  int64_t store_latency_ms = sim::FederationOptions{}.store_latency_ms;
  int64_t uam_launch_ms = sim::FederationOptions{}.uam_launch_ms;
  bool in_flight_accounting = sim::FederationOptions{}.in_flight_accounting;
  // The GPU experiment (--workload alibaba2023gpu:PODS.csv, sim/gpu_sim.h).
  std::string gpu_cluster_file;
  std::string gpu_placement;
  double tune = 0;  // 0 = not given (1.3)
};

absl::Status Fail(const absl::Status& s, absl::string_view what) {
  return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
}

std::string PythonForPlots() {
  // Debian's python3 carries python3-matplotlib; a python3 earlier on PATH may not.
  if (std::filesystem::exists("/usr/bin/python3")) return "/usr/bin/python3";
  return "python3";
}

absl::Status RunSim(const SimFlags& f) {
  // The FGD paper's GPU experiment on the Alibaba 2023 trace: its own driver (docs/gpu.md).
  if (absl::StartsWith(f.workload, "alibaba2023gpu:")) {
    sim::GpuSimCommand c;
    c.pods_path = f.workload.substr(std::string("alibaba2023gpu:").size());
    c.nodes_path = f.gpu_cluster_file;
    c.policy = f.gpu_placement;
    c.seed = f.seed;
    c.tune = f.tune == 0 ? 1.3 : f.tune;
    c.report_path = f.report;
    return sim::RunGpuSimCommand(c);
  }
  if (!f.gpu_placement.empty() || f.tune != 0 || !f.gpu_cluster_file.empty())
    return absl::InvalidArgumentError(
        "--gpu-placement, --tune and --cluster-file apply only to --workload "
        "alibaba2023gpu:PODS.csv");
  ResourceTypeRegistry reg;
  // Load the workload (FORMAT:PATH, the format from sim/workload_registry.h).
  sim::LoadOptions lo;
  lo.strict = f.strict;
  lo.max_jobs = f.max_jobs;
  sim::WorkloadModels models;
  sim::SwimModel& m = models.swim;
  m.split_bytes = f.split_mb << 20;
  m.reduce_bytes = f.reduce_mb << 20;
  m.task_overhead_ms = f.task_overhead_ms;
  m.max_tasks_per_group = f.max_tasks;
  if (!(f.map_mbps > 0) || !(f.reduce_mbps > 0))
    return absl::InvalidArgumentError(absl::StrCat("--map-mbps ", f.map_mbps, " and --reduce-mbps ",
                                                   f.reduce_mbps, " must be > 0"));
  m.map_bytes_per_ms = f.map_mbps * 1024 * 1024 / 1000;
  m.reduce_bytes_per_ms = f.reduce_mbps * 1024 * 1024 / 1000;
  auto mr = reg.Parse(f.map_resources);
  if (!mr.ok()) return Fail(mr.status(), "--map-resources");
  auto rr = reg.Parse(f.reduce_resources);
  if (!rr.ok()) return Fail(rr.status(), "--reduce-resources");
  m.map_resource = *mr;
  m.reduce_resource = *rr;
  models.alibaba.machine_memory_mb = f.alibaba_machine_memory_mb;
  models.alibaba.include_unfinished = f.include_unfinished;
  auto spec = sim::BuiltinWorkloadFormats().Resolve(f.workload);
  if (!spec.ok()) return spec.status();
  const std::string& path = spec->path;
  absl::StatusOr<sim::Workload> workload = spec->format->load(path, models, reg, lo);
  if (!workload.ok()) return Fail(workload.status(), "loading the workload");
  if (!f.placement_mix.empty()) {
    auto mix = sim::ParsePlacementMix(f.placement_mix);
    if (!mix.ok()) return Fail(mix.status(), "--placement-mix");
    sim::PlacementMixStats ms = sim::ApplyPlacementMix(*mix, &*workload);
    if (!f.json) {
      std::cerr << "weft sim: placement mix: " << ms.anti_affinity_jobs << " jobs ("
                << ms.anti_affinity_tasks << " tasks) with anti-affinity, " << ms.gang_jobs
                << " jobs (" << ms.gang_tasks << " tasks, " << ms.gangs << " gangs) with gangs\n";
    }
  }

  sim::SimOptions o;
  o.registry = reg;
  if (!f.cluster_file.empty()) {
    auto nodes = sim::LoadClusterFile(f.cluster_file, reg);
    if (!nodes.ok()) return nodes.status();
    o.nodes = std::move(*nodes);
  } else {
    auto cap = reg.Parse(f.node_resources);
    if (!cap.ok()) return Fail(cap.status(), "--node-resources");
    auto nodes = sim::UniformCluster(f.nodes, *cap, f.racks);
    if (!nodes.ok()) return Fail(nodes.status(), "--nodes/--racks/--node-resources");
    o.nodes = std::move(*nodes);
  }
  if (!f.scheduler_config.empty()) {
    auto c = scheduler::LoadSchedulerConfigFile(f.scheduler_config, reg);
    if (!c.ok()) return c.status();
    o.scheduler = *c;
  } else {
    auto c = sim::QueuesForWorkload(*workload, f.policy);
    if (!c.ok()) return c.status();
    o.scheduler = *c;
  }
  o.scheduler.policy = f.policy;
  if (!f.gang_mode.empty()) {
    if (f.gang_mode != "reserve" && f.gang_mode != "hold-and-wait")
      return absl::InvalidArgumentError(
          absl::StrCat("--gang-mode '", f.gang_mode, "' is not reserve or hold-and-wait"));
    o.scheduler.gang_mode = f.gang_mode;
  }
  if (auto p = scheduler::CreatePolicy(f.policy); !p.ok()) return Fail(p.status(), "--policy");
  auto am = reg.Parse(f.am_resources);
  if (!am.ok()) return Fail(am.status(), "--am-resources");
  o.am_resource = *am;
  if (!f.adaptcont_config.empty() && f.am_master.empty())
    return absl::InvalidArgumentError("--adaptcont-config needs --am-master");
  if (!f.am_master.empty()) {
    auto mode = adaptcont::ParseAdaptContMode(f.am_master);
    if (!mode.ok()) return Fail(mode.status(), "--am-master");
    adaptcont::AdaptContConfig config = adaptcont::DefaultAdaptContConfig();
    if (!f.adaptcont_config.empty()) {
      auto c = adaptcont::LoadAdaptContConfigFile(f.adaptcont_config);
      if (!c.ok()) return Fail(c.status(), "--adaptcont-config");
      config = *c;
    }
    config.mode = *mode;
    o.am_master = config;
  }
  o.heartbeat_ms = f.heartbeat_ms;
  o.am_launch_ms = f.am_launch_ms;
  o.replicas = f.replicas;
  o.seed = f.seed;
  o.sample_ms = static_cast<int64_t>(f.sample_s * 1000);
  if (f.slots < 0 || f.slots > 64)
    return absl::InvalidArgumentError(
        absl::StrCat("--slots ", f.slots, " must be in 0..64 (0: no fixed slots)"));
  o.slots = f.slots;
  if (!(f.overload_penalty >= 0))
    return absl::InvalidArgumentError(
        absl::StrCat("--overload-penalty ", f.overload_penalty, " must be >= 0"));
  o.overload_penalty = f.overload_penalty;
  if (f.sub_clusters < 1 || f.sub_clusters > static_cast<int>(o.nodes.size()))
    return absl::InvalidArgumentError(absl::StrCat("--subclusters ", f.sub_clusters,
                                                   " must be in 1..", o.nodes.size(),
                                                   " (the number of nodes)"));
  if (auto p = federation::MakeRouterPolicy(f.router_policy); !p.ok())
    return Fail(p.status(), "--router-policy");
  if (auto p = federation::MakeAmrmPolicy(f.amrm_policy); !p.ok())
    return Fail(p.status(), "--amrm-policy");
  if (!(f.headroom_alpha >= 0 && f.headroom_alpha <= 1))
    return absl::InvalidArgumentError(
        absl::StrCat("--headroom-alpha ", f.headroom_alpha, " must be in [0, 1]"));
  if (f.sub_clusters > 1 && !f.am_master.empty())
    return absl::InvalidArgumentError("--am-master needs --subclusters 1 (AdaptCont sizes AMs "
                                      "on a monolithic cluster)");
  o.federation.sub_clusters = f.sub_clusters;
  o.federation.router_policy = f.router_policy;
  o.federation.amrm_policy = f.amrm_policy;
  o.federation.headroom_alpha = f.headroom_alpha;
  for (auto [flag, ms] : {std::pair{"--subcluster-heartbeat-ms", f.subcluster_heartbeat_ms},
                          std::pair{"--federation-cache-ttl-ms", f.federation_cache_ttl_ms},
                          std::pair{"--store-latency-ms", f.store_latency_ms},
                          std::pair{"--uam-launch-ms", f.uam_launch_ms}}) {
    if (ms < 0 || ms > sim::kMaxFederationDelayMs)
      return absl::InvalidArgumentError(absl::StrCat(flag, " ", ms, " must be in 0..",
                                                     sim::kMaxFederationDelayMs, " (ms)"));
  }
  o.federation.heartbeat_ms = f.subcluster_heartbeat_ms;
  o.federation.cache_ttl_ms = f.federation_cache_ttl_ms;
  o.federation.store_latency_ms = f.store_latency_ms;
  o.federation.uam_launch_ms = f.uam_launch_ms;
  o.federation.in_flight_accounting = f.in_flight_accounting;
  for (const std::string& spec : f.fail_nodes) {
    auto fs = sim::ParseFailureSpec(spec);
    if (!fs.ok()) return Fail(fs.status(), "--fail-nodes");
    o.failures.push_back(*fs);
  }

  if (!f.json) {
    std::cerr << "weft sim: " << workload->jobs.size() << " jobs from " << path << " ("
              << workload->skipped_records << " records skipped), " << o.nodes.size()
              << " nodes, policy " << f.policy;
    if (f.sub_clusters > 1) {
      std::cerr << ", " << f.sub_clusters << " sub-clusters (router " << f.router_policy
                << (f.in_flight_accounting ? " with" : " without")
                << " in-flight accounting, AMRMProxy " << f.amrm_policy
                << "; sub-cluster heartbeat " << f.subcluster_heartbeat_ms << " ms, cache TTL "
                << f.federation_cache_ttl_ms << " ms, store latency " << f.store_latency_ms
                << " ms, UAM launch " << f.uam_launch_ms << " ms)";
    }
    std::cerr << "\n";
  }
  auto report = sim::RunSimulation(*workload, o);
  if (!report.ok()) return Fail(report.status(), "simulation");

  std::string timeseries = f.timeseries;
  if (timeseries.empty() && !f.plot.empty()) timeseries = f.plot + "/timeseries.csv";
  std::string report_path = f.report;
  if (report_path.empty() && !f.plot.empty()) report_path = f.plot + "/report.json";
  if (!report_path.empty()) {
    if (auto s = sim::WriteReport(*report, report_path); !s.ok()) return s;
  }
  if (!timeseries.empty()) {
    if (auto s = sim::WriteTimeseries(*report, timeseries); !s.ok()) return s;
  }
  if (!f.job_series.empty()) {
    if (auto s = sim::WriteJobSeries(*report, f.job_series); !s.ok()) return s;
  }
  if (f.json) {
    std::cout << sim::ReportToJson(*report).dump(2) << "\n";
  } else {
    sim::PrintSummary(*report, std::cout);
  }
  if (!f.plot.empty()) {
    std::string script = ShippedFile("tools/plot_sim.py");
    std::string cmd = absl::StrCat(PythonForPlots(), " '", script, "' --timeseries '", timeseries,
                                   "' --report '", report_path, "' --out '", f.plot, "'");
    int rc = std::system(cmd.c_str());
    if (rc != 0)
      return absl::InternalError(
          absl::StrCat("plotting failed (", cmd,
                       "); is python3-matplotlib installed? (scripts/install-deps.sh)"));
    if (!f.json) std::cout << "plots written to " << f.plot << "\n";
  }
  return absl::OkStatus();
}

}  // namespace

void AddSimCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<SimFlags>();
  CLI::App* sim = app.add_subcommand(
      "sim", "Replay a workload trace on a simulated cluster driven by the real scheduling core");
  sim->add_option("--workload", f->workload,
                  "FORMAT:PATH, FORMAT one of swim, sls, rumen, alibaba2017, jobs, alibaba2023gpu")
      ->capture_default_str();
  sim->add_option("--nodes", f->nodes, "number of simulated nodes")->capture_default_str();
  sim->add_option("--node-resources", f->node_resources, "capacity of each node")
      ->capture_default_str();
  sim->add_option("--racks", f->racks, "racks the nodes are spread over")->capture_default_str();
  sim->add_option("--cluster", f->cluster_file, "cluster YAML file (instead of --nodes)");
  sim->add_option("--policy", f->policy, "scheduling policy: fifo, fair, capacity, ras")
      ->capture_default_str();
  sim->add_option("--scheduler-config", f->scheduler_config, "queues and scheduler YAML");
  sim->add_option("--seed", f->seed, "random seed (replicas, failures)")->capture_default_str();
  sim->add_option("--cluster-file", f->gpu_cluster_file,
                  "alibaba2023gpu: the trace's node list CSV (sn,cpu_milli,memory_mib,gpu,model)");
  sim->add_option("--gpu-placement", f->gpu_placement,
                  "alibaba2023gpu: fgd, best-fit, dot-product, gpu-packing, gpu-clustering, "
                  "random");
  sim->add_option("--tune", f->tune,
                  "alibaba2023gpu: arrived GPU demand as a multiple of the cluster's GPUs "
                  "(default 1.3)");
  sim->add_option("--report", f->report, "write the JSON report here");
  sim->add_option("--timeseries", f->timeseries, "write the CSV time series here");
  sim->add_option("--job-series", f->job_series,
                  "write per-job running tasks and utility (CSV) here (goals/profiles only)");
  sim->add_option("--slots", f->slots,
                  "fixed task slots per node (Hadoop slot model): node vcores = N, each task "
                  "asks 1 vcore and 1/N of the memory; 0 = off")
      ->capture_default_str();
  sim->add_option("--overload-penalty", f->overload_penalty,
                  "contention model: extra slowdown of overloaded nodes (0 = capacity/usage)")
      ->capture_default_str()
      ->check(FiniteNumberValidator("", 0, 1e9));
  sim->add_option("--plot", f->plot, "write PNG charts (and report/time series) into this folder");
  sim->add_option("--fail-nodes", f->fail_nodes,
                  "lose a share of nodes, e.g. 10%@300s (repeatable)");
  sim->add_flag("--strict", f->strict,
                "fail on the first malformed trace record instead of skipping it");
  sim->add_option("--max-jobs", f->max_jobs, "load at most this many jobs (0 = all)");
  sim->add_option("--placement-mix", f->placement_mix,
                  "give a seeded share of the jobs anti-affinity or gangs, e.g. "
                  "anti-affinity=0.3,gang=0.1,max-spread=40,max-gang=64,seed=7 "
                  "(docs/placement-experiment.md)");
  sim->add_option("--gang-mode", f->gang_mode,
                  "reserve (all-or-nothing, the default) or hold-and-wait (the naive baseline); "
                  "overrides the scheduler configuration's gang-mode");
  sim->add_flag("--json", f->json, "print the JSON report instead of the summary");
  sim->add_option("--heartbeat-ms", f->heartbeat_ms, "interval between scheduling passes")
      ->capture_default_str();
  sim->add_option("--am-launch-ms", f->am_launch_ms, "AM start-up time")->capture_default_str();
  sim->add_option("--am-resources", f->am_resources, "AM container of every job (empty: none)")
      ->capture_default_str();
  sim->add_option("--am-master", f->am_master,
                  "size every AM with AdaptCont (seed 002): yarn-default, dynamic or pool "
                  "(instead of --am-resources; the AM memory-need model applies)");
  sim->add_option("--adaptcont-config", f->adaptcont_config,
                  "AdaptCont YAML (docs/adaptcont.md); its mode is --am-master's");
  sim->add_option("--replicas", f->replicas, "random preferred hosts per map task (0: none)")
      ->capture_default_str();
  sim->add_option("--sample-s", f->sample_s, "time-series interval (0: ~500 samples)")
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  sim->add_option("--split-mb", f->split_mb, "SWIM: input split per map task")
      ->capture_default_str();
  sim->add_option("--reduce-mb", f->reduce_mb, "SWIM: shuffle bytes per reducer")
      ->capture_default_str();
  sim->add_option("--map-mbps", f->map_mbps, "SWIM: map throughput, MiB/s")
      ->capture_default_str()
      ->check(FiniteNumberValidator("MiB/s", 0, 1e12));
  sim->add_option("--reduce-mbps", f->reduce_mbps, "SWIM: reduce throughput, MiB/s")
      ->capture_default_str()
      ->check(FiniteNumberValidator("MiB/s", 0, 1e12));
  sim->add_option("--task-overhead-ms", f->task_overhead_ms, "SWIM: fixed cost per task")
      ->capture_default_str();
  sim->add_option("--max-tasks", f->max_tasks, "SWIM: cap on tasks per phase")
      ->capture_default_str();
  sim->add_option("--map-resources", f->map_resources, "SWIM: map container")
      ->capture_default_str();
  sim->add_option("--reduce-resources", f->reduce_resources, "SWIM: reduce container")
      ->capture_default_str();
  sim->add_option("--alibaba-machine-memory-mb", f->alibaba_machine_memory_mb,
                  "Alibaba: memory of the largest machine (normalised memory x this)")
      ->capture_default_str();
  sim->add_option("--subclusters", f->sub_clusters,
                  "federation (seed 004): split the nodes into N sub-clusters, each with its own "
                  "scheduler (1: one monolithic cluster)")
      ->capture_default_str();
  sim->add_option("--router-policy", f->router_policy,
                  "federation: how a job's home sub-cluster is chosen: " +
                      absl::StrJoin(federation::RouterPolicyNames(), ", "))
      ->capture_default_str();
  sim->add_option("--amrm-policy", f->amrm_policy,
                  "federation: how a job's asks are split over sub-clusters: " +
                      absl::StrJoin(federation::AmrmPolicyNames(), ", "))
      ->capture_default_str();
  sim->add_option("--headroom-alpha", f->headroom_alpha,
                  "federation, locality-multicast: weight of free room (vs. equal weights) when "
                  "splitting `*` asks, in [0, 1]")
      ->capture_default_str()
      ->check(FiniteNumberValidator("", 0, 1));
  sim->add_option("--subcluster-heartbeat-ms", f->subcluster_heartbeat_ms,
                  "federation: each sub-cluster RM publishes its load to the state store this "
                  "often; the router and AMRMProxy policies see it as of the last heartbeat "
                  "(0: they read it live, no staleness)")
      ->capture_default_str();
  sim->add_option("--federation-cache-ttl-ms", f->federation_cache_ttl_ms,
                  "federation: the router and the AMRMProxy reload the membership from the store "
                  "when their copy is this old (0: no cache)")
      ->capture_default_str();
  sim->add_option("--store-latency-ms", f->store_latency_ms,
                  "federation: added to each state-store call on the submission path (the home "
                  "write and its read-back: a submission reaches its home RM 2x this later)")
      ->capture_default_str();
  sim->add_option("--uam-launch-ms", f->uam_launch_ms,
                  "federation: from the AMRMProxy's first ask in a secondary sub-cluster to its "
                  "unmanaged AM taking containers there")
      ->capture_default_str();
  sim->add_flag("--in-flight-accounting,!--no-in-flight-accounting", f->in_flight_accounting,
                "federation: the router counts the homes it chose since the snapshot it reads "
                "(load-based then does not herd on a stale snapshot)")
      ->capture_default_str();
  sim->add_flag("--include-unfinished", f->include_unfinished,
                "Alibaba: also replay Waiting/Running/Failed tasks");
  sim->callback([f, exit_code] {
    absl::Status s = RunSim(*f);
    if (!s.ok()) {
      std::cerr << "weft sim: " << EscapeForTerminal(s.message()) << "\n";
      *exit_code = 1;
    }
  });
}

}  // namespace weft::cli
