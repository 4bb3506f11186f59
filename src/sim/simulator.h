// Copyright Weft authors. A discrete-event simulator that drives the real scheduling core.
#ifndef WEFT_SIM_SIMULATOR_H_
#define WEFT_SIM_SIMULATOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adaptcont/config.h"
#include "scheduler/config.h"
#include "scheduler/types.h"
#include "sim/workload.h"

namespace weft::sim {

// Lose `fraction` of the live nodes (chosen with the seed) at `at_ms`. Their containers are
// lost: tasks go back to pending, a lost AM fails its attempt (see docs/simulator.md).
struct FailureSpec {
  double fraction = 0;  // (0, 1]
  int64_t at_ms = 0;
};
// Parses "10%@300s" (also "0.1@300000ms", units s|ms|m|h). The error names the text.
absl::StatusOr<FailureSpec> ParseFailureSpec(absl::string_view text);

// Federation (seed 004): the nodes split into `sub_clusters` sub-clusters, each scheduled by
// its own core; see federation_model.h. 1 is the monolithic cluster of one core.
struct FederationOptions {
  int32_t sub_clusters = 1;                         // >= 1, <= the number of nodes
  std::string router_policy = "load-based";         // federation/policies/registry.h
  std::string amrm_policy = "locality-multicast";
  // locality-multicast: `*` asks split by alpha * headroom share + (1 - alpha) * weight share,
  // headroom = each sub-cluster's unallocated memory; in [0, 1].
  double headroom_alpha = 1.0;
  // What the router and the AMRMProxy know, and when (docs/simulator.md). Each in
  // 0..kMaxFederationDelayMs.
  // Each sub-cluster's RM publishes its load (SubClusterInfo) to the state store every
  // `heartbeat_ms`, sub-cluster i at i * heartbeat_ms / N + k * heartbeat_ms; policies see a
  // sub-cluster's load as of its last heartbeat. 0: they read it live (no staleness). Default:
  // the RM's (membership/sub_cluster_heartbeater.h).
  int64_t heartbeat_ms = 5000;
  // The router and the AMRMProxy each cache the membership and reload it from the store at their
  // first read `cache_ttl_ms` or more after the last load. 0: no cache. Default: the router's.
  int64_t cache_ttl_ms = 5000;
  // Added to each state-store call on the submission path: the router writes the app's home
  // and reads it back, so a submission reaches its home RM 2 x this after the router chose.
  int64_t store_latency_ms = 0;
  // From the AMRMProxy's first ask in a secondary sub-cluster to its unmanaged AM being
  // registered there: asks sent there wait this long (the UAM is an app of that RM at once).
  int64_t uam_launch_ms = 1000;
  // The router keeps the homes it chose since the snapshots it reads (InFlightLedger) and
  // gives them to the policy (PolicyContext::in_flight). false: the policy sees the snapshots
  // only, and the load-based policy herds on a stale one.
  bool in_flight_accounting = true;
};
inline constexpr int64_t kMaxFederationDelayMs = 3600 * 1000;

struct SimOptions {
  std::vector<scheduler::NodeSpec> nodes;
  scheduler::SchedulerConfig scheduler;
  ResourceTypeRegistry registry;
  int64_t heartbeat_ms = 1000;  // a scheduling pass every interval while there is demand
  int64_t am_launch_ms = 1000;  // from AM container allocation to its first asks
  Resource am_resource = Resource::Of(1024, 1);  // zero: jobs run without an AM container
  int32_t max_am_attempts = 2;  // YARN's default yarn.resourcemanager.am.max-attempts
  // Tasks of a group named "map" without preferred hosts get this many random replica hosts
  // (HDFS-like data locality); 0 disables. Trace hosts are mapped onto cluster nodes by hash.
  int32_t replicas = 3;
  uint64_t seed = 1;
  int64_t sample_ms = 0;  // time-series interval; 0 = about 500 samples over the run
  int64_t max_sim_ms = 30LL * 24 * 3600 * 1000;  // stops a run that would never end
  std::vector<FailureSpec> failures;
  // Slot-based baseline (seed 003's Hadoop Fair Scheduler with a fixed number of task slots per
  // node): > 0 sets every node's vcores to `slots` and makes every task container ask for one
  // vcore and 1/slots of the smallest node's memory (rounded down to the registry's memory
  // increment, at least its minimum), so exactly `slots` tasks fit a node. 0: off.
  int32_t slots = 0;
  // Contention model (docs/simulator.md), for tasks whose group has a usage profile: while the
  // summed usage L of a node's running tasks exceeds 1 in some resource (the most overloaded
  // one), its tasks progress at rate 1 / (L * (1 + overload_penalty * (L - 1))). 0 is the plain
  // model (capacity / usage); > 0 adds thrashing: overcommitment also wastes capacity.
  double overload_penalty = 0;
  // AdaptCont (seed 002): when set, each job's AM container is sized by this master instead of
  // `am_resource` — adaptcont::DecideAmSize in the config's mode (yarn-default, dynamic or
  // pool) — at submission and again for each new attempt, and the AM memory-need model applies:
  // an attempt whose AM runs more tasks at once than its memory can track is killed for memory
  // and retried (up to max_am_attempts) with the decision's feedback; dynamic and pool AMs run
  // at most their decision's max_running_tasks at once. See docs/adaptcont.md ("In the
  // simulator") for the inputs the simulator gives each decision.
  std::optional<adaptcont::AdaptContConfig> am_master;
  FederationOptions federation;  // AdaptCont (am_master) needs sub_clusters == 1
};

struct JobResult {
  std::string id, queue;
  int64_t submit_ms = 0;
  int64_t start_ms = -1;   // first task container (or AM) allocated
  int64_t finish_ms = -1;  // -1: did not finish (failed or run stopped)
  int64_t tasks = 0;
  int32_t am_attempts = 0;
  bool failed = false;
  int64_t goal_ms = -1;  // completion-time goal (absolute), -1: none
  // AdaptCont runs (SimOptions::am_master) only. Every AM container the job was given, one per
  // attempt, and AdaptCont's explanation of each; attempts killed for memory (the model).
  std::vector<Resource> am_containers;
  std::vector<std::string> am_decisions;
  int32_t am_memory_failures = 0;
  int64_t max_running_tasks = 0;  // the most task containers it ran at once (its largest wave)
};

// One job in one sample (only for workloads with goals or usage profiles).
struct JobSample {
  int32_t job = 0;     // index into SimReport::job_results
  double utility = 0;  // seed 003's U of its running tasks now (-inf: none running)
  int32_t running_map = 0, running_reduce = 0;  // its running task containers (the wave)
};

// One row of the time series.
struct Sample {
  int64_t time_ms = 0;
  std::vector<double> utilization;         // per registered type with capacity
  std::vector<int64_t> running_per_queue;  // containers, per leaf (SimReport::leaves)
  std::vector<int64_t> pending_per_queue;
  // Contention model runs only: mean and standard deviation over live nodes of the CPU's busy
  // share (sum of task CPU usage x progress rate, at most 1) and of its I/O wait share
  // ((1 - busy) x the I/O busy share): seed 003's Fig. 4 (c, d).
  double cpu_busy_mean = 0, cpu_busy_std = 0, cpu_wait_mean = 0, cpu_wait_std = 0;
  std::vector<JobSample> jobs;  // live jobs, for workloads with goals or usage profiles
};

// One sub-cluster of a run (every run has at least one).
struct SubClusterResult {
  std::string id;                        // "sc01", ...
  int nodes = 0;
  std::vector<double> utilization_mean;  // as SimReport::utilization_mean, its nodes only
  double scheduler_wall_s = 0;           // wall time inside its core
  int64_t allocations = 0;
  int64_t apps_homed = 0;  // router decisions that chose it (resubmitted AMs count again)
  // Apps its RM held: homed here (as apps_homed, counted when they reached the RM) plus
  // unmanaged AMs of apps homed elsewhere (uams); the most at once, and the time-weighted mean.
  int64_t uams = 0;
  int64_t apps_peak = 0;
  double apps_mean = 0;
};

struct SimReport {
  std::string policy;
  int nodes = 0;
  int64_t jobs = 0;
  int64_t jobs_failed = 0;
  int64_t makespan_ms = 0;
  double scheduler_wall_s = 0;  // wall time inside the scheduling core
  double total_wall_s = 0;
  int64_t allocations = 0;
  int64_t node_local = 0, rack_local = 0, off_switch = 0;
  int64_t preempted = 0, contracts = 0, lost_containers = 0;
  int64_t passes = 0;
  double fairness_jain = 1.0;                  // see docs/simulator.md; 1 when never contended
  int64_t fairness_samples = 0;                // contended samples it was computed over
  std::vector<std::string> utilization_types;  // names, same order as utilization_mean
  std::vector<double> utilization_mean;        // time-weighted mean fraction over the run
  std::vector<std::string> leaves;             // leaf queue paths
  std::vector<JobResult> job_results;
  std::vector<Sample> samples;
  std::vector<std::string> warnings;
  bool contention = false;  // some task had a usage profile: the contention model ran
  bool job_series = false;  // samples carry per-job entries (goals, usage profiles or AdaptCont)
  bool utility_series = false;  // ... with RAS utility (goals or usage profiles present)
  // AdaptCont runs: the master's name ("" otherwise), and over all jobs and attempts the AM
  // containers' memory (MB) and vcores, summed, and the attempts killed for memory.
  std::string am_master;
  int64_t am_memory_mb = 0, am_vcores = 0, am_memory_failures = 0;
  // Federation (seed 004). The policies are "" for a monolithic run (one sub-cluster).
  std::string router_policy, amrm_policy;
  std::vector<SubClusterResult> sub_clusters;
  int64_t jobs_spanning = 0;  // jobs that got containers in more than one sub-cluster
  double scheduler_wall_sum_s = 0, scheduler_wall_max_s = 0;  // over sub-clusters' cores
  // Federated runs: wall time of the router and AMRMProxy (policies, ask bookkeeping), not in
  // scheduler_wall_s, which is then the sum over the cores.
  double federation_wall_s = 0;
  FederationOptions federation;  // as run
  // Herding, over the time some app was held: the time-weighted mean, across sub-clusters, of
  // the coefficient of variation (stddev / mean) of the apps each RM held at that moment —
  // homed apps only, and homed plus unmanaged AMs. 0 with one sub-cluster.
  double homed_apps_cv_over_time = 0, apps_cv_over_time = 0;
  // Placement (TaskGroup's tags, constraint and gang; docs/placement-experiment.md).
  std::string gang_mode;                     // the scheduler's, as run
  int64_t constrained_allocations = 0;       // task containers of groups with a constraint
  int64_t soft_constrained_allocations = 0;  // ... whose constraint is soft
  // The simulator's own check of each constrained placement against the tags on the cluster
  // at that moment (constraints on node attributes are not checked): placements checked, and
  // of those, the ones that broke their constraint (hard ones: a scheduler bug).
  int64_t constraint_checked = 0, constraint_violated = 0, hard_constraint_violated = 0;
  int64_t soft_violations = 0;  // the scheduler's count (SchedulerStats::soft_violations)
  int64_t gang_phases = 0;      // gang phases that asked
  int64_t gangs_started = 0;    // ... that got all their containers and started
  int64_t gangs_rejected = 0, gang_reservations = 0;  // the scheduler's counts
  std::vector<int64_t> gang_wait_ms;  // per started gang: from its ask to its last container
  // How the run ended. deadlock: jobs were left unfinished while gang phases held containers
  // idle, waiting for the rest of their gang (at a stall or at max_sim_ms); stalled: it stopped
  // early because nothing could change any more (no task running, nothing due but passes and
  // samples, for kStallMs) — a deadlock that is also stalled is total.
  bool stalled = false, deadlock = false;
  int64_t stalled_at_ms = -1;
  int64_t jobs_unfinished = 0;
  int64_t tasks_running_at_end = 0;  // task containers running (not held) when it stopped
  int64_t held_containers_at_end = 0, jobs_holding_at_end = 0;
  // Time-weighted mean fraction of the cluster, per type as utilization_mean, allocated to gang
  // containers that sat idle waiting for the rest of their gang.
  std::vector<double> held_idle_mean;
};

// A run stops once nothing can change for this long (SimReport::stalled), plus the longest
// gang timeout of the workload.
inline constexpr int64_t kStallMs = 10 * 60 * 1000;

// The queue tree used when no scheduler configuration is given: root with one leaf per queue
// name the workload uses (a leading "root." dropped), in order of first use, with equal weights
// and capacities, as YARN's FairScheduler creates undeclared queues. `policy` is set as given.
// Names that are not valid queue names ([A-Za-z0-9_-]+) are an error naming the job.
absl::StatusOr<scheduler::SchedulerConfig> QueuesForWorkload(const Workload& workload,
                                                             absl::string_view policy);

// Runs `workload` on the cluster and scheduler of `options`. Deterministic for the same inputs
// and seed. Fails only on configuration errors (e.g. a job naming a queue that does not exist
// is reported per job as failed, not as an error).
absl::StatusOr<SimReport> RunSimulation(const Workload& workload, const SimOptions& options);

}  // namespace weft::sim

#endif  // WEFT_SIM_SIMULATOR_H_
