// The conformance suite: properties every scheduling policy must keep, checked over random
// event sequences. A new policy is added to kPolicyNames below.
#include <map>
#include <random>
#include <set>
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

// ---------------------------------------------------------------------------------------------
// Seed 001's extensions under every policy: constraints, gangs, labels, resizing.

constexpr const char* kLabelledQueues = R"(
locality: {node-locality-delay: 0, rack-locality-delay: 0}
node-labels: {gpu: {exclusive: true}}
queues:
  root:
    children:
      a: {capacity: 50, user-limit-factor: 100, maximum-am-resource-percent: 100,
          max-am-share: -1, accessible-node-labels: [gpu]}
      b: {capacity: 50, user-limit-factor: 100, maximum-am-resource-percent: 100,
          max-am-share: -1, accessible-node-labels: ""}
)";

ResourceRequest WithConstraint(int32_t n, std::string tag, PlacementConstraint c,
                               int32_t priority = 1) {
  ResourceRequest a = Ask(n, Resource::Of(1024, 1), "*", priority);
  a.allocation_tags = {std::move(tag)};
  a.has_constraint = true;
  a.constraint = std::move(c);
  return a;
}

ResourceRequest GangOf(int32_t n, int32_t priority = 1) {
  ResourceRequest a = Ask(n, Resource::Of(1024, 1), "*", priority);
  a.gang = true;
  return a;
}

TYPED_TEST(ConformanceTest, EachConstraintFormHolds) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  for (int i = 0; i < 4; ++i) {
    NodeSpec n{"n" + std::to_string(i), "/r" + std::to_string(i / 2), Resource::Of(8192, 8)};
    n.attributes = {{"os", i == 3 ? "windows" : "linux"}};
    ASSERT_TRUE(s->AddNode(n).ok());
  }
  for (AppId id = 1; id <= 5; ++id) ASSERT_TRUE(s->AddApp(App(id, id % 2 ? "a" : "b"), 0).ok());
  // 1: anti-affinity on itself; 2: a target; 3: affinity to 2 (all apps); 4: cardinality
  // <= 2 per rack; 5: node attribute.
  ASSERT_TRUE(s->UpdateRequests(1, Asks({WithConstraint(
                                       6, "aa", PlacementConstraint::NotIn(ConstraintScope::kNode, "aa"))}))
                  .ok());
  ResourceRequest target = Ask(1, Resource::Of(1024, 1));
  target.allocation_tags = {"db"};
  ASSERT_TRUE(s->UpdateRequests(2, Asks({target})).ok());
  ASSERT_TRUE(s->UpdateRequests(3, Asks({WithConstraint(
                                       3, "web", PlacementConstraint::In(ConstraintScope::kNode, "db",
                                                                        TagNamespace::kAll))}))
                  .ok());
  ASSERT_TRUE(s->UpdateRequests(4, Asks({WithConstraint(
                                       8, "cd", PlacementConstraint::Cardinality(
                                                    ConstraintScope::kRack, "cd", 0, 2))}))
                  .ok());
  ASSERT_TRUE(s->UpdateRequests(5, Asks({WithConstraint(
                                       3, "win", PlacementConstraint::AttributeIs("os", "windows"))}))
                  .ok());
  std::map<AppId, std::vector<NodeId>> got;
  for (int64_t now = 0; now < 8; ++now) {
    for (const Allocation& a : s->Schedule(now).allocations) got[a.app].push_back(a.node);
  }
  ASSERT_EQ(got[1].size(), 4u);  // one per node, 2 wait
  EXPECT_EQ(std::set<NodeId>(got[1].begin(), got[1].end()).size(), 4u);
  ASSERT_EQ(got[2].size(), 1u);
  ASSERT_EQ(got[3].size(), 3u);
  for (NodeId n : got[3]) EXPECT_EQ(n, got[2][0]);
  ASSERT_EQ(got[4].size(), 6u);  // 3 per rack, 2 racks
  std::map<int32_t, int> per_rack;
  for (NodeId n : got[4]) ++per_rack[s->node(n)->rack];
  for (const auto& [rack, k] : per_rack) EXPECT_EQ(k, 3);
  ASSERT_EQ(got[5].size(), 3u);
  for (NodeId n : got[5]) EXPECT_EQ(s->node(n)->name, "n3");
  CheckAccounting(*s);
}

TYPED_TEST(ConformanceTest, GangsStartWholeAndCompetingGangsBothFinish) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  for (int i = 0; i < 2; ++i)
    ASSERT_TRUE(s->AddNode({"n" + std::to_string(i), "/r0", Resource::Of(4096, 4)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "b"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({GangOf(8)})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({GangOf(8)})).ok());
  std::map<AppId, int> held;
  std::set<AppId> done;
  for (int64_t now = 0; now < 30 && done.size() < 2; ++now) {
    std::map<AppId, int> this_pass;
    for (const Allocation& a : s->Schedule(now).allocations) {
      ++this_pass[a.app];
      ++held[a.app];
      EXPECT_NE(a.gang, 0u);
    }
    for (const auto& [app, k] : this_pass) EXPECT_EQ(k, 8) << "app " << app << " pass " << now;
    for (AppId app : {AppId{1}, AppId{2}}) {
      if (held[app] == 8 && !done.contains(app)) {
        for (ContainerId c : s->AppContainers(app)) ASSERT_TRUE(s->ContainerCompleted(c).ok());
        done.insert(app);
      }
    }
    CheckAccounting(*s);
  }
  EXPECT_EQ(done.size(), 2u);
}

TYPED_TEST(ConformanceTest, LabelledAsksRunOnlyOnTheirLabelAndOthersNeverThere) {
  auto s = MakeScheduler(kLabelledQueues, TypeParam::kName);
  for (int i = 0; i < 4; ++i) {
    NodeSpec n{"n" + std::to_string(i), "/r0", Resource::Of(4096, 4)};
    if (i >= 2) n.node_label = "gpu";
    ASSERT_TRUE(s->AddNode(n).ok());
  }
  ASSERT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "b"), 0).ok());
  ResourceRequest gpu = Ask(20, Resource::Of(1024, 1));
  gpu.node_label = "gpu";
  ASSERT_TRUE(s->UpdateRequests(1, Asks({gpu})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(20, Resource::Of(1024, 1))})).ok());
  ResourceRequest denied = gpu;
  EXPECT_EQ(s->UpdateRequests(2, Asks({denied})).code(), absl::StatusCode::kPermissionDenied);
  int on_gpu = 0, off_gpu = 0;
  for (int64_t now = 0; now < 5; ++now) {
    for (const Allocation& a : s->Schedule(now).allocations) {
      const bool labelled = s->node(a.node)->label != 0;
      EXPECT_EQ(labelled, a.app == 1) << "app " << a.app << " on " << s->node(a.node)->name;
      (labelled ? on_gpu : off_gpu)++;
    }
  }
  EXPECT_EQ(on_gpu, 8);
  EXPECT_EQ(off_gpu, 8);
  CheckAccounting(*s);
}

// Random asks with constraints, gangs and resizes mixed in: hard constraints are never broken,
// gangs never start partly, the books balance.
TYPED_TEST(ConformanceTest, RandomConstrainedGangAndResizeAsksKeepTheirPromises) {
  auto s = MakeScheduler(kOpenQueues, TypeParam::kName);
  std::mt19937_64 rng(17);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  for (int i = 0; i < 12; ++i)
    ASSERT_TRUE(s->AddNode({"n" + std::to_string(i), "/r" + std::to_string(i % 3),
                            Resource::Of(8192, 2 + pick(6))})
                    .ok());
  std::vector<AppId> apps;
  std::map<uint64_t, int> gang_sizes;
  std::map<AppId, int> gang_size_of;
  std::set<uint64_t> gangs_seen;
  std::vector<ContainerId> live;
  for (int64_t now = 0; now < 80; ++now) {
    if (apps.size() < 8 && pick(3) == 0) {
      const AppId id = static_cast<AppId>(now + 1);
      ASSERT_TRUE(s->AddApp(App(id, pick(2) ? "a" : "b"), now).ok());
      apps.push_back(id);
      gang_size_of[id] = 2 + pick(5);
    }
    for (AppId id : apps) {
      if (pick(3) != 0) continue;
      RequestUpdate u;
      switch (pick(3)) {
        case 0:
          u.asks.push_back(WithConstraint(1 + pick(4), "aa",
                                          PlacementConstraint::NotIn(ConstraintScope::kNode, "aa"), 1));
          break;
        case 1:
          u.asks.push_back(WithConstraint(
              1 + pick(6), "cd", PlacementConstraint::Cardinality(ConstraintScope::kNode, "cd", 0, 1),
              2));
          break;
        default:
          if (s->app(id)->pending_containers == 0) u.asks.push_back(GangOf(gang_size_of[id], 3));
      }
      std::vector<ContainerId> mine = s->AppContainers(id);
      if (!mine.empty() && pick(4) == 0) {
        const ContainerState* c = s->container(mine[static_cast<size_t>(pick(static_cast<int>(mine.size())))]);
        u.updates.push_back({c->id, pick(2) ? c->resource + Resource::Of(1024, 0)
                                            : Resource::Of(512, 1)});
      }
      EXPECT_TRUE(s->UpdateRequests(id, u).ok());
    }
    const PassResult& r = s->Schedule(now);
    std::map<uint64_t, int> gang_this_pass;
    for (const Allocation& a : r.allocations) {
      live.push_back(a.container);
      if (a.gang == 0) continue;
      EXPECT_FALSE(gangs_seen.contains(a.gang)) << "gang " << a.gang << " placed in two passes";
      ++gang_this_pass[a.gang];
      gang_sizes[a.gang] = gang_size_of[a.app];
    }
    for (const auto& [g, k] : gang_this_pass) {
      EXPECT_EQ(k, gang_sizes[g]) << "gang " << g;
      gangs_seen.insert(g);
    }
    // Hard constraints: at most one "aa" and two "cd" of an app on a node.
    for (AppId id : apps) {
      std::map<std::pair<NodeId, std::string>, int> per;
      for (ContainerId c : s->AppContainers(id)) {
        for (const std::string& t : s->ContainerTags(c)) ++per[{s->container(c)->node, t}];
      }
      for (const auto& [key, k] : per) {
        EXPECT_LE(k, key.second == "aa" ? 1 : 2) << "app " << id << " tag " << key.second;
      }
    }
    CheckAccounting(*s);
    for (int k = 0; k < 4 && !live.empty(); ++k) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(live.size())));
      if (s->container(live[i]) != nullptr) {
        EXPECT_TRUE(s->ContainerCompleted(live[i]).ok());
      }
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (!apps.empty() && pick(10) == 0) {
      const size_t i = static_cast<size_t>(pick(static_cast<int>(apps.size())));
      EXPECT_TRUE(s->RemoveApp(apps[i]).ok());
      apps.erase(apps.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  EXPECT_GT(gangs_seen.size(), 3u);
  EXPECT_GT(s->stats().increases + s->stats().decreases, 3);
}

}  // namespace
}  // namespace weft::scheduler
