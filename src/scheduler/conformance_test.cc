// The conformance suite: properties every scheduling policy must keep, checked over random
// event sequences. A new policy is added to kPolicyNames below.
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/registry.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

// Limits on for the maximum property; generous elsewhere so work conservation is checkable.
constexpr const char* kLimitedQueues = R"(
locality: {node-locality-delay: 1, rack-locality-delay: 1}
preemption: {enabled: true, starvation-timeout-ms: 3, grace-period-ms: 2}
queues:
  root:
    children:
      a: {capacity: 40, maximum-capacity: 50, max-resources: "memory-mb=40960,vcores=40",
          user-limit-factor: 2, maximum-am-resource-percent: 100}
      b:
        capacity: 60
        children:
          b1: {capacity: 50, user-limit-factor: 10}
          b2: {capacity: 50, user-limit-factor: 10}
)";
constexpr const char* kOpenQueues = R"(
locality: {node-locality-delay: 0, rack-locality-delay: 0}
queues:
  root:
    children:
      a: {capacity: 50, user-limit-factor: 100, maximum-am-resource-percent: 100,
          max-am-share: -1}
      b: {capacity: 50, user-limit-factor: 100, maximum-am-resource-percent: 100,
          max-am-share: -1}
)";

struct Fifo {
  static constexpr const char* kName = "fifo";
};
struct Fair {
  static constexpr const char* kName = "fair";
};
struct Capacity {
  static constexpr const char* kName = "capacity";
};
struct Ras {
  static constexpr const char* kName = "ras";
};

template <typename P>
class ConformanceTest : public ::testing::Test {
 protected:
  // Drives `s` with a random but seeded sequence of node, app, ask, release and completion
  // events, calling `check` after every pass.
  template <typename Check>
  std::vector<Allocation> Drive(Scheduler* s, uint64_t seed, bool locality, Check check) {
    std::mt19937_64 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
    const char* leaves[] = {"a", "b1", "b2"};
    bool open = s->FindQueue("b1") == nullptr;
    std::vector<Allocation> all;
    std::vector<ContainerId> live;
    for (int i = 0; i < 24; ++i) {
      EXPECT_TRUE(s->AddNode({"n" + std::to_string(i), "/r" + std::to_string(i % 4),
                              Resource::Of(4096 * (1 + pick(4)), 2 + pick(6), 100 * pick(3))})
                      .ok());
    }
    AppId next_app = 1;
    std::vector<AppId> apps;
    for (int step = 0; step < 60; ++step) {
      int64_t now = step;
      if (apps.size() < 12 && pick(3) == 0) {
        AppSpec a = App(next_app, open ? (pick(2) ? "a" : "b") : leaves[pick(3)],
                        "user" + std::to_string(pick(3)));
        a.priority = pick(3);
        if (pick(2)) a.am_resource = Resource::Of(1024, 1);
        EXPECT_TRUE(s->AddApp(a, now).ok());
        apps.push_back(next_app++);
      }
      for (AppId id : apps) {
        if (pick(4) != 0) continue;
        Resource c = Resource::Of(512 * (1 + pick(6)), 1 + pick(2), pick(2) * 10);
        int32_t n = 1 + pick(8);
        int32_t prio = 1 + pick(3);
        RequestUpdate u;
        if (locality && pick(2)) {
          std::string host = "n" + std::to_string(pick(24));
          u.asks.push_back(Ask(n, c, host, prio));
          u.asks.push_back(Ask(n, c, "/r" + std::to_string(pick(4)), prio));
        }
        u.asks.push_back(Ask(n, c, "*", prio));
        if (pick(5) == 0) u.blacklist_additions.push_back("n" + std::to_string(pick(24)));
        if (pick(7) == 0) u.blacklist_removals.push_back("n" + std::to_string(pick(24)));
        EXPECT_TRUE(s->UpdateRequests(id, u).ok());
      }
      PassResult r = s->Schedule(now);
      for (const Allocation& a : r.allocations) {
        all.push_back(a);
        live.push_back(a.container);
      }
      check(*s, r);
      // Complete some containers; remove a finished app now and then.
      for (int k = 0; k < 6 && !live.empty(); ++k) {
        size_t i = static_cast<size_t>(pick(static_cast<int>(live.size())));
        if (s->container(live[i]) != nullptr) {
          EXPECT_TRUE(s->ContainerCompleted(live[i]).ok());
        }
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (!apps.empty() && pick(8) == 0) {
        size_t i = static_cast<size_t>(pick(static_cast<int>(apps.size())));
        EXPECT_TRUE(s->RemoveApp(apps[i]).ok());
        apps.erase(apps.begin() + static_cast<std::ptrdiff_t>(i));
      }
      if (step == 30) {
        EXPECT_TRUE(s->RemoveNode("n3").ok());
      }
    }
    return all;
  }
};

using Policies = ::testing::Types<Fifo, Fair, Capacity, Ras>;
TYPED_TEST_SUITE(ConformanceTest, Policies);

void CheckAccounting(const Scheduler& s) {
  Resource node_sum;
  for (NodeId id = 0; s.node(id) != nullptr; ++id) {
    const NodeState* n = s.node(id);
    if (n->removed) continue;
    EXPECT_TRUE(n->allocated.FitsIn(n->capacity))
        << n->name << " over-allocated: " << n->allocated.DebugString() << " of "
        << n->capacity.DebugString();
    node_sum += n->allocated;
  }
  EXPECT_EQ(node_sum, s.cluster_allocated());
}

// Work-preserving recovery, whatever the policy: a new scheduler given the same nodes and apps
// and every live container back (RecoverContainer) holds exactly what the old one held - per
// node, app and queue - and its own passes then never over-allocate a node.
TYPED_TEST(ConformanceTest, RecoveredContainersAddUpToWhatWasAllocated) {
  auto before = MakeScheduler(kLimitedQueues, TypeParam::kName);
  this->Drive(before.get(), 8, true, [](const Scheduler&, const PassResult&) {});
  constexpr ContainerId kFirst = uint64_t{2} << 40;
  auto after = MakeScheduler(kLimitedQueues, TypeParam::kName, kFirst);
  for (NodeId id = 0; before->node(id) != nullptr; ++id) {
    const NodeState* n = before->node(id);
    if (n->removed) continue;
    ASSERT_TRUE(after->AddNode({n->name, before->rack_name(n->rack), n->capacity}).ok());
  }
  int recovered = 0;
  for (const QueueNode* q : before->queues()) {
    for (const AppState* app : q->apps) {
      AppSpec spec = App(app->id, q->path, app->user);
      spec.priority = app->priority;
      ASSERT_TRUE(after->AddApp(spec, 100).ok());
      for (ContainerId c : before->AppContainers(app->id)) {
        const ContainerState* cs = before->container(c);
        NodeId node = after->FindNode(before->node(cs->node)->name);
        absl::Status st =
            after->RecoverContainer({c, app->id, node, cs->resource, cs->priority, cs->is_am, 100});
        ASSERT_TRUE(st.ok()) << st;
        ++recovered;
      }
    }
  }
  EXPECT_GT(recovered, 10);
  EXPECT_EQ(after->stats().recovered, recovered);
  EXPECT_EQ(after->stats().allocations, 0);
  for (NodeId id = 0; before->node(id) != nullptr; ++id) {
    const NodeState* n = before->node(id);
    if (n->removed) continue;
    const NodeState* m = after->node(after->FindNode(n->name));
    EXPECT_EQ(m->allocated, n->allocated) << n->name;
    EXPECT_EQ(m->num_containers, n->num_containers) << n->name;
  }
  for (const QueueNode* q : before->queues()) {
    const QueueNode* r = after->FindQueue(q->path);
    ASSERT_NE(r, nullptr) << q->path;
    EXPECT_EQ(r->usage, q->usage) << q->path;
    EXPECT_EQ(r->am_usage, q->am_usage) << q->path;
    for (const AppState* app : q->apps) {
      EXPECT_EQ(after->app(app->id)->usage, app->usage) << app->id;
      EXPECT_EQ(after->app(app->id)->am_usage, app->am_usage) << app->id;
    }
  }
  CheckAccounting(*after);
  // New demand on top of the recovered containers never over-allocates a node.
  for (const QueueNode* q : before->queues()) {
    for (const AppState* app : q->apps) {
      ASSERT_TRUE(after->UpdateRequests(app->id, Asks({Ask(50, Resource::Of(1024, 1))})).ok());
    }
  }
  for (int64_t now = 100; now < 105; ++now) {
    after->Schedule(now);
    CheckAccounting(*after);
  }
}

// The per-app report hook: only policies with a notion of job utility make one, it reads only
// the scheduler's state, and an unknown app gets none.
TYPED_TEST(ConformanceTest, PolicyReportsReadOnlyTheSchedulersState) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  int reports = 0;
  this->Drive(s.get(), 7, false, [&](const Scheduler& s, const PassResult&) {
    for (AppId id = 1; id < 16; ++id) {
      std::optional<AppPolicyReport> own = s.PolicyReport(id, 100);
      if (s.app(id) == nullptr) {
        EXPECT_FALSE(own.has_value()) << id;
        continue;
      }
      EXPECT_EQ(own.has_value(), std::string(TypeParam::kName) == "ras") << id;
      if (own.has_value()) {
        ++reports;
        EXPECT_GE(own->running_map_like, 0);
        EXPECT_GE(own->running_reduce_like, 0);
      }
      // The same report as a yardstick from outside equals the policy's own.
      auto as = PolicyReportAs(TypeParam::kName, s, id, 100);
      ASSERT_TRUE(as.ok());
      EXPECT_EQ(as->has_value(), own.has_value());
    }
  });
  if (std::string(TypeParam::kName) == "ras") {
    EXPECT_GT(reports, 0);
  }
  EXPECT_EQ(PolicyReportAs("no-such-policy", *s, 1, 0).status().code(),
            absl::StatusCode::kNotFound);
}

TYPED_TEST(ConformanceTest, NodesAreNeverOverAllocated) {
  auto s = MakeScheduler(kLimitedQueues, TypeParam::kName);
  this->Drive(s.get(), 1, true, [](const Scheduler& s, const PassResult&) { CheckAccounting(s); });
}

TYPED_TEST(ConformanceTest, NoQueueExceedsItsMaximum) {
  auto s = MakeScheduler(kLimitedQueues, TypeParam::kName);
  this->Drive(s.get(), 2, true, [](const Scheduler& s, const PassResult&) {
    for (const QueueNode* q : s.queues()) {
      EXPECT_TRUE(q->usage.FitsIn(q->limit))
          << q->path << " uses " << q->usage.DebugString() << " above " << q->limit.DebugString();
    }
  });
  // The fair and capacity configs do cap queue a; make sure the check is not vacuous.
  if (std::string(TypeParam::kName) != "fifo" && std::string(TypeParam::kName) != "ras") {
    EXPECT_LT(s->FindQueue("a")->limit[kMemoryMb], kUnlimited);
  }
}

TYPED_TEST(ConformanceTest, WorkConserving) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  this->Drive(s.get(), 3, false, [](const Scheduler& s, const PassResult&) {
    // After a pass, no pending ask of a runnable app fits on a node it may use.
    for (NodeId id = 0; s.node(id) != nullptr; ++id) {
      const NodeState* n = s.node(id);
      if (!n->schedulable) continue;
      Resource free = n->capacity - n->allocated;
      for (const QueueNode* q : s.queues()) {
        for (const AppState* app : q->apps) {
          if (!app->runnable || app->blacklist.contains(id)) continue;
          for (const RequestGroup& g : app->groups) {
            if (g.any.count > 0) {
              EXPECT_FALSE(g.capability.FitsIn(free))
                  << "app " << app->id << " waits for " << g.capability.DebugString() << " while "
                  << n->name << " has " << free.DebugString();
            }
            if (g.is_am && g.any.count > 0) break;  // nothing else may run before the AM
          }
        }
      }
    }
  });
}

TYPED_TEST(ConformanceTest, BlacklistRespected) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  this->Drive(s.get(), 4, true, [](const Scheduler& s, const PassResult& r) {
    for (const Allocation& a : r.allocations) {
      EXPECT_FALSE(s.app(a.app)->blacklist.contains(a.node))
          << "app " << a.app << " got blacklisted node " << s.node(a.node)->name;
    }
  });
}

TYPED_TEST(ConformanceTest, DeterministicForTheSameInputs) {
  auto run = [&] {
    auto s = MakeScheduler(kLimitedQueues, TypeParam::kName);
    std::vector<std::tuple<ContainerId, AppId, NodeId>> out;
    for (const Allocation& a :
         this->Drive(s.get(), 5, true, [](const Scheduler&, const PassResult&) {}))
      out.emplace_back(a.container, a.app, a.node);
    return out;
  };
  auto first = run();
  EXPECT_GT(first.size(), 50u);
  EXPECT_EQ(first, run());
}

// Liveness: ApplicationMasters never take the whole cluster, so jobs made of an AM and tasks
// all finish under the default configuration, however many arrive at once: the minimal case
// (two jobs, one node of 2 vcores) and a burst (200 jobs on 4 nodes of 4 vcores), each job an
// AM of <1 GB, 1 vcore> and one task of <1 GB, 1 vcore>.
TYPED_TEST(ConformanceTest, AmsCannotDeadlockTheCluster) {
  struct Case {
    int nodes, vcores, apps;
  };
  for (const Case& c : {Case{1, 2, 2}, Case{4, 4, 200}}) {
    auto s = MakeScheduler("", TypeParam::kName);
    for (int i = 0; i < c.nodes; ++i)
      ASSERT_TRUE(s->AddNode({"n" + std::to_string(i), "/r1", Resource::Of(16384, c.vcores)}).ok());
    std::vector<AppId> ids;
    for (AppId id = 1; id <= static_cast<AppId>(c.apps); ++id) {
      AppSpec a = App(id);
      a.am_resource = Resource::Of(1024, 1);
      ASSERT_TRUE(s->AddApp(a, 0).ok());
      ids.push_back(id);
    }
    CompletionRun run = RunToCompletion(s.get(), ids, Resource::Of(1024, 1), 1, 4 * c.apps + 10);
    EXPECT_EQ(run.finished, c.apps)
        << c.apps << " jobs on " << c.nodes << " x " << c.vcores << " vcores: " << run.finished
        << " finished in " << run.passes << " passes";
    EXPECT_LT(run.max_am_usage[kVcores], c.nodes * c.vcores);
  }
}

// The same with one queue per two vcores: every queue may start a first AM whatever its limit,
// but those first AMs must not take the cluster either.
TYPED_TEST(ConformanceTest, FirstAmsOfManyQueuesCannotDeadlockTheCluster) {
  auto s = MakeScheduler("queues: {root: {children: {q0: {}, q1: {}, q2: {}, q3: {}}}}",
                         TypeParam::kName);
  ASSERT_TRUE(s->AddNode({"n0", "/r1", Resource::Of(16384, 4)}).ok());
  std::vector<AppId> ids;
  for (AppId id = 1; id <= 12; ++id) {
    AppSpec a = App(id, "q" + std::to_string(id % 4));
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(s->AddApp(a, 0).ok());
    ids.push_back(id);
  }
  CompletionRun run = RunToCompletion(s.get(), ids, Resource::Of(1024, 1), 2, 200);
  EXPECT_EQ(run.finished, 12) << run.passes << " passes";
  EXPECT_LE(run.max_am_usage[kVcores], 2);
}

// The default policy, as a configuration that names none runs it.
TEST(LivenessTest, TheDefaultPolicyFinishesABurstOfJobs) {
  auto s = MakeScheduler("");
  ASSERT_EQ(s->policy().name(), DefaultPolicyName());
  std::vector<AppId> ids;
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s->AddNode({"n" + std::to_string(i), "/r1", Resource::Of(16384, 4)}).ok());
  for (AppId id = 1; id <= 200; ++id) {
    AppSpec a = App(id);
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(s->AddApp(a, 0).ok());
    ids.push_back(id);
  }
  CompletionRun run = RunToCompletion(s.get(), ids, Resource::Of(1024, 1));
  EXPECT_EQ(run.finished, 200);
  EXPECT_EQ(run.max_am_usage[kVcores], 8);  // half of the 16 vcores: max-am-share 0.5
  EXPECT_LE(run.passes, 60);
}

TYPED_TEST(ConformanceTest, UsageAccountingAddsUp) {
  auto s = MakeScheduler(kLimitedQueues, TypeParam::kName);
  this->Drive(s.get(), 6, true, [](const Scheduler& s, const PassResult&) {
    for (const QueueNode* q : s.queues()) {
      Resource sum;
      if (q->is_leaf()) {
        for (const AppState* a : q->apps) sum += a->usage;
      } else {
        for (const QueueNode* c : q->children) sum += c->usage;
      }
      EXPECT_EQ(sum, q->usage) << q->path;
    }
  });
}

}  // namespace
}  // namespace weft::scheduler
