// Copyright Weft authors. The table of policies known by name. Adding a policy: a folder under
// policies/, a library target, and one line here.
#include "scheduler/registry.h"

#include <fstream>
#include <sstream>

#include "absl/base/const_init.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/policies/capacity/capacity_policy.h"
#include "scheduler/policies/capacity/capacity_queue_config.h"
#include "scheduler/policies/fair/fair_policy.h"
#include "scheduler/policies/fair/fair_queue_config.h"
#include "scheduler/policies/fifo/fifo_policy.h"
#include "scheduler/policies/ras/ras_policy.h"

namespace weft::scheduler {
namespace {

struct Entry {
  const char* name;
  std::unique_ptr<SchedulingPolicy> (*create)();
  // The policy's own top-level configuration key and its check; null when it has none.
  absl::Status (*validate_section)(absl::string_view yaml, absl::string_view origin);
  // The queue keys the policy owns and their parser; null when it owns none.
  PolicyQueueKeys (*queue_keys)();
};

constexpr Entry kPolicies[] = {
    {"fifo", &NewFifoPolicy, nullptr, nullptr},
    {"fair", &NewFairPolicy, nullptr, &FairQueueKeys},
    {"capacity", &NewCapacityPolicy, nullptr, &CapacityQueueKeys},
    {"ras", &NewRasPolicy, &ValidateRasSection, nullptr},
};

// YARN's default scheduler is the fair one too.
constexpr const char* kDefaultPolicy = "fair";

}  // namespace

const char* DefaultPolicyName() { return kDefaultPolicy; }

absl::StatusOr<std::unique_ptr<SchedulingPolicy>> CreatePolicy(absl::string_view name) {
  if (name.empty()) name = kDefaultPolicy;
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

absl::StatusOr<std::optional<AppPolicyReport>> PolicyReportAs(absl::string_view policy,
                                                              const Scheduler& scheduler, AppId app,
                                                              int64_t now_ms) {
  if (scheduler.policy().name() == policy) return scheduler.PolicyReport(app, now_ms);
  // Reports read only the scheduler's state, so one instance per name serves every caller.
  static absl::Mutex mu(absl::kConstInit);
  static auto* yardsticks =
      new absl::flat_hash_map<std::string, std::unique_ptr<SchedulingPolicy>>();
  const SchedulingPolicy* yardstick = nullptr;
  {
    absl::MutexLock lock(&mu);
    auto it = yardsticks->find(policy);
    if (it == yardsticks->end()) {
      auto created = CreatePolicy(policy);
      if (!created.ok()) return created.status();
      it = yardsticks->emplace(std::string(policy), *std::move(created)).first;
    }
    yardstick = it->second.get();
  }
  return yardstick->Report(scheduler, app, now_ms);
}

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(absl::string_view yaml,
                                                     const ResourceTypeRegistry& registry,
                                                     absl::string_view origin) {
  std::vector<PolicySection> sections;
  std::vector<PolicyQueueKeys> queue_keys;
  for (const Entry& e : kPolicies) {
    if (e.validate_section != nullptr) sections.push_back({e.name, e.validate_section});
    if (e.queue_keys != nullptr) queue_keys.push_back(e.queue_keys());
  }
  auto config = ParseSchedulerConfigWith(yaml, registry, origin, sections, queue_keys);
  if (config.ok() && config->policy.empty()) config->policy = kDefaultPolicy;
  return config;
}

absl::StatusOr<SchedulerConfig> LoadSchedulerConfigFile(absl::string_view path,
                                                        const ResourceTypeRegistry& registry) {
  std::ifstream in{std::string(path)};
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open scheduler config '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSchedulerConfig(ss.str(), registry, path);
}

}  // namespace weft::scheduler
