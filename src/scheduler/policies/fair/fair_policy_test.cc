#include "scheduler/policies/fair/fair_policy.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

constexpr int64_t kGb = 1024;

// Submits one app per queue asking for far more than the cluster, runs a pass, and returns
// the containers each got.
std::vector<int> FillCluster(Scheduler* s, const std::vector<std::string>& queues,
                             int64_t node_gb = 40, int nodes = 1) {
  for (int i = 0; i < nodes; ++i)
    EXPECT_TRUE(s->AddNode({absl::StrCat("n", i), "/r1", Resource::Of(node_gb * kGb, 100)}).ok());
  for (size_t i = 0; i < queues.size(); ++i) {
    EXPECT_TRUE(s->AddApp(App(i + 1, queues[i]), 0).ok());
    EXPECT_TRUE(s->UpdateRequests(i + 1, Asks({Ask(1000, Resource::Of(1 * kGb, 1))})).ok());
  }
  PassResult r = s->Schedule(0);
  std::vector<int> counts;
  for (size_t i = 0; i < queues.size(); ++i) counts.push_back(CountFor(r, i + 1));
  return counts;
}

TEST(FairPolicyTest, WeightsSplitTheCluster) {
  auto s = MakeScheduler("queues: {root: {children: {a: {weight: 3}, b: {weight: 1}}}}", "fair");
  EXPECT_EQ(FillCluster(s.get(), {"a", "b"}), (std::vector<int>{30, 10}));
}

TEST(FairPolicyTest, HierarchicalSharesSplitByWeightAtEachLevel) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      x: {children: {x1: {}, x2: {}}}
      y: {}
)",
                         "fair");
  EXPECT_EQ(FillCluster(s.get(), {"x1", "x2", "y"}), (std::vector<int>{10, 10, 20}));
  s->RefreshEntitlements();
  EXPECT_EQ(s->FindQueue("y")->entitlement[kMemoryMb], 20 * kGb);
  EXPECT_EQ(s->FindQueue("x1")->entitlement[kMemoryMb], 10 * kGb);
}

TEST(FairPolicyTest, MaxResourcesCapsAQueue) {
  auto s = MakeScheduler(
      "queues: {root: {children: {a: {max-resources: 'memory-mb=5120'}, b: {}}}}", "fair");
  EXPECT_EQ(FillCluster(s.get(), {"a", "b"}), (std::vector<int>{5, 35}));
}

TEST(FairPolicyTest, NeedyQueueBelowItsMinimumIsServedFirst) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      a: {min-resources: "memory-mb=30720,vcores=30"}
      b: {weight: 10}
)",
                         "fair");
  // Without the minimum, b's weight would give it 10/11 of the cluster.
  EXPECT_EQ(FillCluster(s.get(), {"a", "b"}), (std::vector<int>{30, 10}));
}

TEST(FairPolicyTest, EntitlementsGiveUnusedShareToQueuesWithDemand) {
  auto s = MakeScheduler("queues: {root: {children: {a: {}, b: {}, c: {}}}}", "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(30 * kGb, 30)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "b"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(100, Resource::Of(1 * kGb, 1))})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(4, Resource::Of(1 * kGb, 1))})).ok());
  s->RefreshEntitlements();
  EXPECT_EQ(s->FindQueue("c")->entitlement, Resource());                // no demand
  EXPECT_EQ(s->FindQueue("b")->entitlement, Resource::Of(4 * kGb, 4));  // capped by demand
  EXPECT_EQ(s->FindQueue("a")->entitlement, Resource::Of(26 * kGb, 26));
}

TEST(FairPolicyTest, PreemptionRestoresFairShareAfterTimeoutAndGrace) {
  auto s = MakeScheduler(R"(
preemption: {enabled: true, starvation-timeout-ms: 1000, grace-period-ms: 500, threshold: 0.9}
queues: {root: {children: {a: {}, b: {}}}}
)",
                         "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(10 * kGb, 10)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(100, Resource::Of(1 * kGb, 1))})).ok());
  PassResult first = s->Schedule(0);
  ASSERT_EQ(first.allocations.size(), 10u);
  ASSERT_TRUE(s->AddApp(App(2, "b"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(100, Resource::Of(1 * kGb, 1))})).ok());
  EXPECT_TRUE(s->Schedule(100).contracts.empty());  // starved, but not for long enough
  PassResult at_timeout = s->Schedule(1100);
  ASSERT_EQ(at_timeout.contracts.size(), 1u);
  const PreemptionContract& c = at_timeout.contracts[0];
  EXPECT_EQ(c.app, 1u);
  ASSERT_EQ(c.strict_containers.size(), 5u);  // b's fair share: half the node
  EXPECT_EQ(c.strict_containers[0], first.allocations.back().container);  // newest first
  EXPECT_EQ(c.negotiable, Resource::Of(5 * kGb, 5));
  EXPECT_EQ(c.deadline_ms, 1600);
  // The AM gives one back itself; the rest are killed when the grace period ends.
  ASSERT_TRUE(s->ContainerCompleted(c.strict_containers[0]).ok());
  PassResult before = s->Schedule(1500);
  EXPECT_TRUE(before.kills.empty());
  EXPECT_EQ(CountFor(before, 2), 1);
  PassResult after = s->Schedule(1600);
  EXPECT_EQ(after.kills.size(), 4u);
  EXPECT_EQ(after.kills[0].reason, ContainerExit::kPreempted);
  EXPECT_EQ(CountFor(after, 2), 4);
  EXPECT_EQ(s->app(1)->usage, Resource::Of(5 * kGb, 5));
  EXPECT_EQ(s->app(2)->usage, Resource::Of(5 * kGb, 5));
  EXPECT_EQ(s->stats().preempted, 4);
}

// Submits `n` apps with <1 GB, 1 vcore> AMs to `queue`, ids from `first`.
void SubmitAms(Scheduler* s, const std::string& queue, AppId first, int n) {
  for (AppId id = first; id < first + static_cast<AppId>(n); ++id) {
    AppSpec a = App(id, queue);
    a.am_resource = Resource::Of(1 * kGb, 1);
    ASSERT_TRUE(s->AddApp(a, 0).ok());
  }
}

int AmsIn(const Scheduler& s, const std::string& queue) {
  return static_cast<int>(s.FindQueue(queue)->am_usage[kVcores]);
}

// YARN's maxAMShare: a leaf's AMs hold at most max-am-share of its instantaneous fair share
// (the cluster split among the queues that have apps), the cluster default when unset; -1
// lifts the limit.
TEST(FairPolicyTest, MaxAmShareLimitsAmsToAShareOfTheFairShare) {
  auto s = MakeScheduler(R"(
queue-max-am-share-default: 0.25
queues: {root: {children: {a: {}, b: {max-am-share: 1}, c: {max-am-share: -1}}}}
)",
                         "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(64 * kGb, 16)}).ok());
  EXPECT_EQ(s->FindQueue("a")->config.max_am_share, 0.25);
  // a alone has the whole cluster as its fair share: 0.25 x 16 vcores = 4 AMs.
  SubmitAms(s.get(), "a", 1, 10);
  EXPECT_EQ(s->Schedule(0).allocations.size(), 4u);
  // With b active each has 8 vcores: a's 4 AMs are above its new limit (2) and it starts no
  // more; b may fill all of its 8 with AMs.
  SubmitAms(s.get(), "b", 101, 10);
  s->Schedule(1);
  EXPECT_EQ(AmsIn(*s, "a"), 4);
  EXPECT_EQ(AmsIn(*s, "b"), 8);
  // c is unlimited: it takes what is left.
  SubmitAms(s.get(), "c", 201, 10);
  s->Schedule(2);
  EXPECT_EQ(AmsIn(*s, "c"), 4);
  EXPECT_EQ(AmsIn(*s, "a"), 4);
  // An app whose AM waits holds nothing and stays runnable; it starts when an AM ends.
  EXPECT_TRUE(s->app(5)->runnable);
  EXPECT_TRUE(s->app(5)->usage.IsZero());
}

// A share too small for a single AM still lets one AM run in the queue (YARN): the queue is
// slowed down, never stopped.
TEST(FairPolicyTest, MaxAmShareAlwaysLetsOneAmRun) {
  auto s = MakeScheduler("queues: {root: {children: {a: {max-am-share: 0}}}}", "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(64 * kGb, 16)}).ok());
  SubmitAms(s.get(), "a", 1, 3);
  EXPECT_EQ(s->Schedule(0).allocations.size(), 1u);
  EXPECT_TRUE(s->Schedule(1).allocations.empty());
  ASSERT_TRUE(s->RemoveApp(1).ok());
  PassResult r = s->Schedule(2);
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].app, 2u);
}

TEST(FairPolicyTest, AmContainersArePreemptedLast) {
  auto s = MakeScheduler(R"(
preemption: {enabled: true, starvation-timeout-ms: 0, grace-period-ms: 0, threshold: 1.0}
queues: {root: {children: {a: {}, b: {}}}}
)",
                         "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(4 * kGb, 4)}).ok());
  AppSpec a = App(1, "a");
  a.am_resource = Resource::Of(1 * kGb, 1);
  ASSERT_TRUE(s->AddApp(a, 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(3, Resource::Of(1 * kGb, 1))})).ok());
  ASSERT_EQ(s->Schedule(0).allocations.size(), 4u);
  ASSERT_TRUE(s->AddApp(App(2, "b"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(10, Resource::Of(1 * kGb, 1))})).ok());
  PassResult r = s->Schedule(1);
  ASSERT_EQ(r.contracts.size(), 1u);
  for (ContainerId id : r.contracts[0].strict_containers) EXPECT_FALSE(s->container(id)->is_am);
}

}  // namespace
}  // namespace weft::scheduler
