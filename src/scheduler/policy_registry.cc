// The table of policies known by name. Adding a policy: a folder under policies/, a library
// target, and one line here.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/policies/capacity/capacity_policy.h"
#include "scheduler/policies/fair/fair_policy.h"
#include "scheduler/policies/fifo/fifo_policy.h"
#include "scheduler/policies/ras/ras_policy.h"
#include "scheduler/registry.h"

namespace weft::scheduler {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<SchedulingPolicy> (*create)();
};

constexpr Entry kPolicies[] = {
    {"fifo", &NewFifoPolicy},
    {"fair", &NewFairPolicy},
    {"capacity", &NewCapacityPolicy},
    {"ras", &NewRasPolicy},
};

}  // namespace

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreatePolicy(absl::string_view name) {
  for (const Entry& e : kPolicies) {
    if (name == e.name) return e.create();
  }
  return absl::NotFoundError(absl::StrCat("unknown scheduling policy '", name,
                                          "' (known: ", absl::StrJoin(PolicyNames(), ", "), ")"));
}

absl::StatusOr<std::unique_ptr<Scheduler>> CreateScheduler(const SchedulerConfig& config,
                                                           SchedulerOptions options) {
  auto policy = CreatePolicy(config.policy);
  if (!policy.ok()) return policy.status();
  return Scheduler::Create(config, std::move(options), std::move(*policy));
}

std::vector<std::string> PolicyNames() {
  std::vector<std::string> names;
  for (const Entry& e : kPolicies) names.push_back(e.name);
  return names;
}

}  // namespace weft::scheduler
