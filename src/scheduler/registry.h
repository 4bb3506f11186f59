// Copyright Weft authors. Policies by name, and schedulers built from a configuration.
#ifndef WEFT_SCHEDULER_REGISTRY_H_
#define WEFT_SCHEDULER_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "scheduler/policy.h"
#include "scheduler/scheduler.h"

namespace weft::scheduler {

// Creates a policy by its registered name ("fifo", "fair", "capacity"); NotFound otherwise,
// listing the known names.
absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreatePolicy(absl::string_view name);
std::vector<std::string> PolicyNames();

// A scheduler running the policy that `config.policy` names.
absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const SchedulerConfig& config,
                                                           SchedulerOptions options = {});

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_REGISTRY_H_
