// Copyright Weft authors. Helpers shared by the scheduler's tests.
#ifndef WEFT_SCHEDULER_TEST_UTIL_H_
#define WEFT_SCHEDULER_TEST_UTIL_H_

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/registry.h"

namespace weft::scheduler::testing {

// Parses YAML (with `policy` overridden when non-empty) and builds a scheduler whose container
// ids start at `first_container_id`; fails the test on error.
inline std::unique_ptr<Scheduler> MakeScheduler(const std::string& yaml,
                                                const std::string& policy = "",
                                                ContainerId first_container_id = 1) {
  ResourceTypeRegistry reg;
  auto config = ParseSchedulerConfig(yaml, reg, "test");
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return nullptr;
  if (!policy.empty()) config->policy = policy;
  auto s = CreateScheduler(*config, SchedulerOptions{reg, first_container_id});
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

// What RunToCompletion saw.
struct CompletionRun {
  int finished = 0;       // apps that ran to the end
  int passes = 0;         // passes it took (max_passes when some never finished)
  Resource max_am_usage;  // the most AM containers held at once, per type
};

// Runs jobs made of an ApplicationMaster and tasks, as distributed shell does, until every app
// of `apps` (added already, each with an AM resource) finished or `max_passes` passes ran, at
// times 0, 1, 2, ...: once an app's AM container is allocated, the AM asks for `tasks`
// containers of `task`; a task runs for one pass (it completes before the next); when all of
// an app's tasks completed, its AM container completes and the app is removed.
inline CompletionRun RunToCompletion(Scheduler* s, const std::vector<AppId>& apps,
                                     const Resource& task, int tasks = 1, int max_passes = 10000) {
  CompletionRun run;
  std::map<AppId, ContainerId> am_of;
  std::map<AppId, int> done;
  std::set<AppId> live(apps.begin(), apps.end());
  for (; run.passes < max_passes && !live.empty(); ++run.passes) {
    const int64_t now = run.passes;
    std::vector<Allocation> allocated = s->Schedule(now).allocations;
    for (int i = 0; i < kMaxResourceTypes; ++i)
      run.max_am_usage[i] = std::max(run.max_am_usage[i], s->queues().front()->am_usage[i]);
    for (const Allocation& a : allocated) {
      if (a.is_am) {
        am_of[a.app] = a.container;
        EXPECT_TRUE(s->UpdateRequests(a.app, Asks({Ask(tasks, task)})).ok());
      }
    }
    for (const Allocation& a : allocated) {
      if (a.is_am) continue;
      EXPECT_TRUE(s->ContainerCompleted(a.container, now + 1).ok());
      if (++done[a.app] < tasks) continue;
      EXPECT_TRUE(s->ContainerCompleted(am_of.at(a.app), now + 1).ok());
      EXPECT_TRUE(s->RemoveApp(a.app).ok());
      live.erase(a.app);
      ++run.finished;
    }
  }
  return run;
}

}  // namespace weft::scheduler::testing

#endif  // WEFT_SCHEDULER_TEST_UTIL_H_
