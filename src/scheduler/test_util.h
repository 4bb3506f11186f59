// Copyright Weft authors. Helpers shared by the scheduler's tests.
#ifndef WEFT_SCHEDULER_TEST_UTIL_H_
#define WEFT_SCHEDULER_TEST_UTIL_H_

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "scheduler/registry.h"

namespace weft::scheduler::testing {

// Parses YAML (with `policy` overridden when non-empty) and builds a scheduler; fails the
// test on error.
inline std::unique_ptr<Scheduler> MakeScheduler(const std::string& yaml,
                                                const std::string& policy = "") {
  ResourceTypeRegistry reg;
  auto config = ParseSchedulerConfig(yaml, reg, "test");
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return nullptr;
  if (!policy.empty()) config->policy = policy;
  auto s = CreateScheduler(*config, SchedulerOptions{reg, 1});
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? std::move(*s) : nullptr;
}

inline ResourceRequest Ask(int32_t count, Resource capability, std::string name = "*",
                           int32_t priority = 1, bool relax = true) {
  ResourceRequest r;
  r.num_containers = count;
  r.capability = capability;
  r.resource_name = std::move(name);
  r.priority = priority;
  r.relax_locality = relax;
  return r;
}

inline RequestUpdate Asks(std::initializer_list<ResourceRequest> asks) {
  RequestUpdate u;
  u.asks = asks;
  return u;
}

inline AppSpec App(AppId id, std::string queue = "default", std::string user = "u") {
  AppSpec a;
  a.id = id;
  a.queue = std::move(queue);
  a.user = std::move(user);
  return a;
}

inline int CountFor(const PassResult& r, AppId app) {
  int n = 0;
  for (const Allocation& a : r.allocations) n += a.app == app;
  return n;
}

}  // namespace weft::scheduler::testing

#endif  // WEFT_SCHEDULER_TEST_UTIL_H_
