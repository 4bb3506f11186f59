// Copyright Weft authors. The scheduling policies by name: policies, schedulers and
// configurations built from a name, and every policy's own configuration section. Declared
// here for the RM and the simulator; implemented by policies/registry.cc, the only place that
// knows every policy (the core knows none).
#ifndef WEFT_SCHEDULER_REGISTRY_H_
#define WEFT_SCHEDULER_REGISTRY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/config.h"
#include "scheduler/policy.h"
#include "scheduler/scheduler.h"

namespace weft::scheduler {

// The policy a configuration that names none runs.
const char* DefaultPolicyName();

// Creates a policy by its registered name ("" = the default policy); NotFound otherwise,
// listing the known names.
absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreatePolicy(absl::string_view name);
std::vector<std::string> PolicyNames();

// A scheduler running the policy that `config.policy` names (the default policy when empty).
absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const SchedulerConfig& config,
                                                           SchedulerOptions options = {});

// The report the policy named `policy` would make on `app` of `scheduler` at `now_ms`, whatever
// policy schedules it (a yardstick: e.g. seed 003's job utility while a fair policy runs).
// NotFound for an unknown name; nullopt when that policy makes no report or `app` is unknown.
absl::StatusOr<std::optional<AppPolicyReport>> PolicyReportAs(absl::string_view policy,
                                                              const Scheduler& scheduler, AppId app,
                                                              int64_t now_ms);

// ParseSchedulerConfigWith (scheduler/config.h) with every registered policy's configuration
// section and queue keys; a configuration that names no policy gets the default policy.
absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(absl::string_view yaml,
                                                     const ResourceTypeRegistry& registry,
                                                     absl::string_view origin = "config");
// The same, from a file (errors name the file). NotFound when it cannot be opened.
absl::StatusOr<SchedulerConfig> LoadSchedulerConfigFile(absl::string_view path,
                                                        const ResourceTypeRegistry& registry);

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_REGISTRY_H_
