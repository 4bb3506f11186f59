// Copyright Weft authors. The simulator's workload model and the trace loaders that fill it.
#ifndef WEFT_SIM_WORKLOAD_H_
#define WEFT_SIM_WORKLOAD_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "common/resource_types.h"
#include "scheduler/placement_constraint.h"
#include "scheduler/types.h"

namespace weft::sim {

// One phase of a job: `count` tasks with the same request, run as one container each.
// A phase starts once every phase listed in `depends_on` has finished (e.g. reduce after map).
struct TaskGroup {
  std::string name;         // "map", "reduce", "task-12", ...
  int32_t priority = 20;    // YARN container priority: lower numbers are served first
  int64_t count = 0;        // number of tasks (>= 1)
  Resource resource;        // per-task request, already normalised by the loader
  int64_t duration_ms = 0;  // per-task run time when task_durations_ms is empty (>= 1)
  std::vector<int64_t> task_durations_ms;  // empty, or exactly `count` entries (each >= 1)
  std::vector<std::string> task_hosts;     // empty, or `count` preferred host names ("" = none)
  std::vector<int> depends_on;             // indexes into Job::groups, all smaller than own
  // Seed 003 (RAS): how the `ras` utility treats the phase, and what one task actually uses
  // (shares of a node, distinct from `resource`). With a usage, the simulator's contention
  // model applies to the task (docs/simulator.md). Groups named "reduce" are reduce-like.
  PhaseKind kind = PhaseKind::kMapLike;
  bool has_usage = false;
  TaskUsage usage;
  // The task length the job declares from its offline profiling run (`expected-s`), which
  // `ras` estimates with until it has observed one; -1: not declared (ms).
  int64_t expected_ms = -1;
  // Seed 001's placement (scheduler/types.h, ResourceRequest): the allocation tags every task
  // container of the phase carries, where each may go (hard, or soft when `constraint_soft`),
  // and whether the phase is a gang (all `count` containers start together; the simulated AM
  // starts none of its tasks before it holds all of them). A phase with any of these asks
  // with its "*" row only: preferred hosts (trace or synthetic) are ignored for it.
  std::vector<std::string> tags;
  bool has_constraint = false;
  bool constraint_soft = false;
  scheduler::PlacementConstraint constraint;
  bool gang = false;
  int64_t gang_timeout_ms = 0;  // > 0: the scheduler gives the gang up after this long (ms)

  bool has_placement() const { return !tags.empty() || has_constraint || gang; }
};

struct Job {
  std::string id;  // unique within the workload
  std::string queue = "default";
  std::string user = "default";
  int32_t priority = 0;   // application priority: higher is served first (as YARN's)
  int64_t submit_ms = 0;  // >= 0, relative to the workload's start
  int64_t goal_ms = -1;   // completion-time goal (seed 003), absolute like submit_ms; -1: none
  std::vector<TaskGroup> groups;
  std::string source;  // "file:line" it came from, for messages
};

struct Workload {
  std::vector<Job> jobs;              // sorted by submit_ms, then by order in the file
  std::vector<std::string> warnings;  // one line each: "file:line: what was wrong; skipped"
  int64_t skipped_records = 0;
};

// How every loader treats malformed records.
struct LoadOptions {
  // false: a malformed record is reported in Workload::warnings and skipped.
  // true: the first malformed record fails the load with "file:line: ..." in the status.
  bool strict = false;
  // Loading stops after this many jobs (0 = no limit). Useful for quick runs of big traces.
  int64_t max_jobs = 0;
};

// The task model for SWIM traces, which carry only bytes. See docs/workloads.md.
//   maps     = max(1, ceil(input_bytes / split_bytes))
//   reduces  = shuffle_bytes == 0 ? 0 : max(1, ceil(shuffle_bytes / reduce_bytes))
//   map_ms   = task_overhead_ms + (input_bytes/maps + shuffle_bytes/maps) / map_bytes_per_ms
//   reduce_ms= task_overhead_ms + (shuffle_bytes + output_bytes)/reduces / reduce_bytes_per_ms
// Map-only jobs (75% of FB-2009) have one group; others a "reduce" group depending on "map".
struct SwimModel {
  int64_t split_bytes = 128LL << 20;         // HDFS block / input split
  int64_t reduce_bytes = 1LL << 30;          // shuffle bytes one reducer takes
  int64_t max_tasks_per_group = 20000;       // caps runaway jobs (the day has a 7 TB job)
  double map_bytes_per_ms = 50.0 * 1024;     // 50 MiB/s per map task
  double reduce_bytes_per_ms = 25.0 * 1024;  // 25 MiB/s per reduce task
  int64_t task_overhead_ms = 2000;           // JVM start, commit
  Resource map_resource = Resource::Of(1024, 1);
  Resource reduce_resource = Resource::Of(2048, 1);
};

// Alibaba 2017 batch_task.csv: one TaskGroup per row (instances = count, duration =
// end - create). CPU is in percent of a core (100 = 1 vcore, rounded up); memory is a
// fraction of the largest machine, multiplied by machine_memory_mb and rounded up.
struct AlibabaModel {
  int64_t machine_memory_mb = 64 * 1024;  // the 2017 trace's machines; documented
  int64_t min_duration_ms = 1000;         // durations below (incl. end == create) become this
  bool include_unfinished = false;        // Waiting/Running/Failed rows: skipped by default
};

// Defaults for traces that carry no resources (SLS, Rumen without jobMapMB/jobReduceMB).
struct DefaultTaskResources {
  Resource map = Resource::Of(1024, 1);
  Resource reduce = Resource::Of(1024, 1);
};

// Loaders. Each reads the file as it is, normalises every resource with `registry` (a request
// the registry rejects is a malformed record), and returns jobs sorted by submit_ms. File-level
// errors (cannot open, empty) fail even when not strict; the error names the file.
absl::StatusOr<Workload> LoadSwim(absl::string_view path, const SwimModel& model,
                                  const ResourceTypeRegistry& registry, const LoadOptions& opts);
absl::StatusOr<Workload> LoadSls(absl::string_view path, const DefaultTaskResources& defaults,
                                 const ResourceTypeRegistry& registry, const LoadOptions& opts);
absl::StatusOr<Workload> LoadRumen(absl::string_view path, const DefaultTaskResources& defaults,
                                   const ResourceTypeRegistry& registry, const LoadOptions& opts);
absl::StatusOr<Workload> LoadAlibaba2017(absl::string_view path, const AlibabaModel& model,
                                         const ResourceTypeRegistry& registry,
                                         const LoadOptions& opts);
// Weft's native YAML job list; see docs/workloads.md for the schema.
absl::StatusOr<Workload> LoadJobsYaml(absl::string_view path, const ResourceTypeRegistry& registry,
                                      const LoadOptions& opts);

// A seeded, deterministic placement variant of any workload (docs/placement-experiment.md):
// each job independently, in file order, draws u1 and u2 uniform in [0, 1) from
// std::mt19937_64(seed) (two draws per job, always both). A job whose largest group has at
// most `max_spread_tasks` tasks and u1 < `anti_affinity` gets the tag "spread-<id>" and the
// constraint NOTIN,NODE,spread-<id> (its own containers, one per node) on every group, soft
// when `soft`. Else, a job whose groups have at most `max_gang_tasks` tasks each and
// u2 < `gang` makes every group a gang (timeout `gang_timeout_ms`, 0: none). Other jobs are
// unchanged.
struct PlacementMix {
  double anti_affinity = 0;  // fraction of jobs, in [0, 1]
  double gang = 0;           // fraction of jobs, in [0, 1]
  int64_t max_spread_tasks = 0;  // the largest group an anti-affinity job may have (>= 1)
  int64_t max_gang_tasks = 0;    // the largest group a gang job may have (>= 1)
  bool soft = false;
  int64_t gang_timeout_ms = 0;
  uint64_t seed = 1;
};
// Parses "anti-affinity=0.3,gang=0.1,max-spread=40,max-gang=64,soft=false,gang-timeout-s=0,
// seed=7" (every key optional; fractions may be given as "30%"). The error names the key.
absl::StatusOr<PlacementMix> ParsePlacementMix(absl::string_view text);
// What ApplyPlacementMix changed.
struct PlacementMixStats {
  int64_t anti_affinity_jobs = 0, gang_jobs = 0;
  int64_t anti_affinity_tasks = 0, gang_tasks = 0, gangs = 0;
};
PlacementMixStats ApplyPlacementMix(const PlacementMix& mix, Workload* workload);

}  // namespace weft::sim

#endif  // WEFT_SIM_WORKLOAD_H_
