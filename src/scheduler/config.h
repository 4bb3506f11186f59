// Copyright Weft authors. Scheduler and queue configuration, read from YAML.
#ifndef WEFT_SCHEDULER_CONFIG_H_
#define WEFT_SCHEDULER_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "common/resource_types.h"
#include "scheduler/types.h"

namespace weft::scheduler {

enum class QueueState : uint8_t { kRunning, kStopped };
enum class LeafOrdering : uint8_t { kFifo, kFair };

// One queue of the hierarchy. Every key is documented in docs/scheduler.md; which keys a
// policy reads is stated there too. Percentages are of the parent queue (0..100).
struct QueueConfig {
  std::string name;                         // [A-Za-z0-9_-]+; "root" at the top
  double weight = 1.0;                      // fair: share of the parent's fair share (> 0)
  Resource min_resources;                   // fair: guaranteed minimum (0 = none)
  Resource max_resources;                   // fair: hard cap; kUnlimited per type unless given
  int64_t max_running_apps = -1;            // all: apps beyond it wait (runnable later); -1 = none
  double capacity = -1;                     // capacity: guaranteed % of parent; -1 = equal split
  double maximum_capacity = 100;            // capacity: elastic cap, % of parent
  double user_limit_factor = 1.0;           // capacity: a user may use this multiple of capacity
  double maximum_am_resource_percent = 10;  // capacity: % of the queue for AM containers
  QueueState state = QueueState::kRunning;
  std::optional<LeafOrdering> ordering;  // leaf app ordering; policy default when unset
  std::vector<QueueConfig> children;
};

struct LocalityConfig {
  // Scheduling passes an app may miss at a priority before node-local is relaxed to
  // rack-local, then a further `rack_locality_delay` before off-switch. 0 = relax at once.
  int32_t node_locality_delay = 2;
  int32_t rack_locality_delay = 2;
  // Preferred hosts (and racks) probed per placement attempt before giving up on that level.
  int32_t max_locality_probes = 16;
};

struct PreemptionConfig {
  bool enabled = false;
  int64_t starvation_timeout_ms = 15000;  // below entitlement this long -> contract
  int64_t grace_period_ms = 10000;        // contract -> kill if not released
  // A leaf is starved while its usage share is below threshold x its entitlement share and it
  // has pending asks (0 < threshold <= 1).
  double threshold = 0.8;
};

// The `ras` policy's control loop (seed 003); other policies ignore it. See docs/scheduler.md.
struct RasConfig {
  // Period T of the placement control loop, in ms of the caller's clock: a new placement is
  // computed at most this often, and also at once when a job (or a new phase of one) appears.
  int64_t control_period_ms = 30000;
  // Upper bound on the max-min rounds (one task moved per round) in one control cycle.
  int32_t max_rounds = 1000;
};

struct SchedulerConfig {
  std::string policy = "fair";  // a name known to the policy registry
  LocalityConfig locality;
  PreemptionConfig preemption;
  RasConfig ras;
  QueueConfig root;  // name "root"; a single leaf "default" when not configured
};

// The configuration used when none is given: root with one leaf, "default".
SchedulerConfig DefaultSchedulerConfig();

// Parses YAML text. Structural errors only (unknown keys, wrong types, malformed resources,
// duplicate queue names, out-of-range numbers); policy-specific rules (e.g. capacities summing
// to 100) are checked by the policy. Errors name the key path, e.g.
// "queues.root.children.prod.weight: -1 must be > 0". `origin` prefixes messages (a file name).
absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(absl::string_view yaml,
                                                     const ResourceTypeRegistry& registry,
                                                     absl::string_view origin = "config");
absl::StatusOr<SchedulerConfig> LoadSchedulerConfigFile(absl::string_view path,
                                                        const ResourceTypeRegistry& registry);

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_CONFIG_H_
