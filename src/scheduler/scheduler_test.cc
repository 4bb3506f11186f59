#include "scheduler/scheduler.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using ::testing::HasSubstr;
using namespace ::weft::scheduler::testing;  // NOLINT

constexpr int64_t kGb = 1024;

TEST(SchedulerTest, DrfExampleFromSeed000) {
  // 9 CPUs and 18 GB; A asks <1 CPU, 4 GB> per task, B <3 CPUs, 1 GB>: DRF gives A 3, B 2.
  auto s = MakeScheduler("", "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(18 * kGb, 9)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "default", "A"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "default", "B"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(100, Resource::Of(4 * kGb, 1))})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(100, Resource::Of(1 * kGb, 3))})).ok());
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 1), 3);
  EXPECT_EQ(CountFor(r, 2), 2);
  // Equal dominant shares: A has 12/18 GB, B 6/9 CPUs.
  EXPECT_DOUBLE_EQ(s->app(1)->usage.DominantShare(s->cluster_total()), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(s->app(2)->usage.DominantShare(s->cluster_total()), 2.0 / 3.0);
}

TEST(SchedulerTest, NetworkCanBeTheDominantResource) {
  // A is network-heavy (100 of 1000 Mbit/s = 0.1 per task), B memory-heavy (4 of 100 GB =
  // 0.04 per task). DRF fills both up to equal dominant shares until memory runs out.
  auto s = MakeScheduler("", "fair");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(100 * kGb, 100, 1000)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "default", "A"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "default", "B"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(100, Resource::Of(1 * kGb, 1, 100))})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(100, Resource::Of(4 * kGb, 1, 0))})).ok());
  PassResult r = s->Schedule(0);
  const Resource& total = s->cluster_total();
  EXPECT_EQ(s->app(1)->usage.DominantType(total), kNetworkMbps);
  EXPECT_EQ(s->app(2)->usage.DominantType(total), kMemoryMb);
  // Equal shares s need 110 s GB of memory, so they meet at s ~ 0.9: A 9 tasks, B 22 (88 GB).
  // B's 23rd no longer fits in the 3 GB left; work conservation then gives A its 10th.
  EXPECT_EQ(CountFor(r, 1), 10);
  EXPECT_EQ(CountFor(r, 2), 22);
  EXPECT_DOUBLE_EQ(s->app(2)->usage.DominantShare(total), 0.88);
  EXPECT_FALSE(Resource::Of(4 * kGb, 1).FitsIn(total - s->cluster_allocated()));
}

TEST(SchedulerTest, AmContainerFirstThenAsks) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  AppSpec a = App(7);
  a.am_resource = Resource::Of(1024, 1);
  ASSERT_TRUE(s->AddApp(a, 0).ok());
  ASSERT_TRUE(s->UpdateRequests(7, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 3u);
  EXPECT_TRUE(r.allocations[0].is_am);
  EXPECT_FALSE(r.allocations[1].is_am);
  EXPECT_EQ(s->app(7)->am_usage, Resource::Of(1024, 1));
}

TEST(SchedulerTest, NodeLocalThenRackThenOffSwitchWithDelay) {
  auto s = MakeScheduler("locality: {node-locality-delay: 1, rack-locality-delay: 1}", "fifo");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(1024, 1)}).ok());
  ASSERT_TRUE(s->AddNode({"h2", "/r1", Resource::Of(1024, 1)}).ok());
  ASSERT_TRUE(s->AddNode({"h3", "/r2", Resource::Of(1024, 1)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  Resource c = Resource::Of(1024, 1);
  // Three containers wanted on h1 (its rack /r1, anywhere allowed).
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(3, c, "h1"), Ask(3, c, "/r1"), Ask(3, c, "*")})).ok());
  PassResult p1 = s->Schedule(0);
  ASSERT_EQ(p1.allocations.size(), 1u);
  EXPECT_EQ(p1.allocations[0].locality, Locality::kNodeLocal);
  EXPECT_EQ(s->node(p1.allocations[0].node)->name, "h1");
  // h1 is full: the app waits one pass (missed opportunity), then goes rack-local to h2.
  EXPECT_TRUE(s->Schedule(1).allocations.empty());
  PassResult p3 = s->Schedule(2);
  ASSERT_EQ(p3.allocations.size(), 1u);
  EXPECT_EQ(p3.allocations[0].locality, Locality::kRackLocal);
  EXPECT_EQ(s->node(p3.allocations[0].node)->name, "h2");
  // Rack /r1 is full too: after one more miss, off-switch on h3.
  EXPECT_TRUE(s->Schedule(3).allocations.empty());
  PassResult p5 = s->Schedule(4);
  ASSERT_EQ(p5.allocations.size(), 1u);
  EXPECT_EQ(p5.allocations[0].locality, Locality::kOffSwitch);
  EXPECT_EQ(s->node(p5.allocations[0].node)->name, "h3");
  EXPECT_EQ(s->stats().node_local, 1);
  EXPECT_EQ(s->stats().rack_local, 1);
  EXPECT_EQ(s->stats().off_switch, 1);
}

TEST(SchedulerTest, RelaxLocalityFalseKeepsTheContainerOnItsHost) {
  auto s = MakeScheduler("locality: {node-locality-delay: 0, rack-locality-delay: 0}", "fifo");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(1024, 1)}).ok());
  ASSERT_TRUE(s->AddNode({"h2", "/r1", Resource::Of(1024, 1)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  Resource c = Resource::Of(1024, 1);
  ASSERT_TRUE(s->UpdateRequests(
                   1, Asks({Ask(2, c, "h1"), Ask(2, c, "/r1", 1, false), Ask(2, c, "*", 1, false)}))
                  .ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(s->node(r.allocations[0].node)->name, "h1");
  for (int t = 1; t < 5; ++t) EXPECT_TRUE(s->Schedule(t).allocations.empty());
}

TEST(SchedulerTest, BlacklistedNodesNeverGetTheAppsContainers) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddNode({"h2", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  RequestUpdate u = Asks({Ask(20, Resource::Of(1024, 1))});
  u.blacklist_additions = {"h1", "h3"};  // h3 registers later
  ASSERT_TRUE(s->UpdateRequests(1, u).ok());
  ASSERT_TRUE(s->AddNode({"h3", "/r2", Resource::Of(4 * kGb, 4)}).ok());
  PassResult r = s->Schedule(0);
  EXPECT_EQ(r.allocations.size(), 8u);
  for (const Allocation& a : r.allocations) EXPECT_EQ(s->node(a.node)->name, "h2");
  RequestUpdate un;
  un.blacklist_removals = {"h3"};
  ASSERT_TRUE(s->UpdateRequests(1, un).ok());
  r = s->Schedule(1);
  EXPECT_EQ(r.allocations.size(), 4u);
  for (const Allocation& a : r.allocations) EXPECT_EQ(s->node(a.node)->name, "h3");
}

TEST(SchedulerTest, InvalidRequestsAreRejectedAndChangeNothing) {
  auto s = MakeScheduler("", "fair");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  const Resource pending = s->app(1)->pending;

  auto err = [&](RequestUpdate u) { return s->UpdateRequests(1, u); };
  // A valid first ask with an invalid second one: nothing of the update is applied.
  absl::Status st = err(Asks({Ask(5, Resource::Of(1024, 1)), Ask(1, Resource::Of(-5, 1))}));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("ask #1"));
  EXPECT_THAT(st.message(), HasSubstr("memory-mb=-5 is negative"));
  EXPECT_THAT(err(Asks({Ask(1, Resource::Of(kGb << 30, 1))})).message(),
              HasSubstr("above the maximum allocation"));
  EXPECT_THAT(err(Asks({Ask(-1, Resource::Of(1024, 1))})).message(),
              HasSubstr("num_containers -1 is negative"));
  RequestUpdate rel;
  rel.releases = {12345};
  EXPECT_THAT(err(rel).message(), HasSubstr("cannot release container 12345"));
  RequestUpdate bl;
  bl.blacklist_additions = {"/r1"};
  EXPECT_THAT(err(bl).message(), HasSubstr("not a node name"));
  EXPECT_EQ(s->app(1)->pending, pending);
  EXPECT_EQ(s->UpdateRequests(99, {}).code(), absl::StatusCode::kNotFound);

  // Apps and nodes.
  EXPECT_EQ(s->AddApp(App(1), 0).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s->AddApp(App(2, "nope"), 0).message(), HasSubstr("unknown queue 'nope'"));
  EXPECT_THAT(s->AddApp(App(2, "root"), 0).message(), HasSubstr("parent queue"));
  AppSpec bad_am = App(3);
  bad_am.am_resource = Resource::Of(-1, 1);
  EXPECT_THAT(s->AddApp(bad_am, 0).message(), HasSubstr("AM resource"));
  EXPECT_THAT(s->AddNode({"h2", "rack", Resource::Of(1, 1)}).status().message(),
              HasSubstr("must start with '/'"));
  EXPECT_EQ(s->AddNode({"h1", "/r1", Resource::Of(1, 1)}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(s->AddNode({"h9", "/r1", Resource::Of(-1, 1)}).status().message(),
              HasSubstr("negative"));
  EXPECT_EQ(s->num_nodes(), 1);
  EXPECT_EQ(s->RemoveNode("zz").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s->ContainerCompleted(777).code(), absl::StatusCode::kNotFound);
}

TEST(SchedulerTest, StoppedQueueRefusesNewApps) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      a: {}
      b: {state: STOPPED}
)",
                         "capacity");
  EXPECT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  absl::Status st = s->AddApp(App(2, "b"), 0);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("STOPPED"));
}

TEST(SchedulerTest, NodeLossReturnsItsContainersAndFreesThem) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(2 * kGb, 2)}).ok());
  ASSERT_TRUE(s->AddNode({"h2", "/r1", Resource::Of(2 * kGb, 2)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(4, Resource::Of(1024, 1))})).ok());
  ASSERT_EQ(s->Schedule(0).allocations.size(), 4u);
  auto lost = s->RemoveNode("h1");
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(lost->size(), 2u);
  EXPECT_EQ((*lost)[0].reason, ContainerExit::kNodeLost);
  EXPECT_EQ(s->app(1)->usage, Resource::Of(2 * kGb, 2));
  EXPECT_EQ(s->cluster_total(), Resource::Of(2 * kGb, 2));
  EXPECT_EQ(s->FindNode("h1"), -1);
  // The name may register again.
  EXPECT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(2 * kGb, 2)}).ok());
}

TEST(SchedulerTest, ReleaseAndCompletionFreeResources) {
  auto s = MakeScheduler("", "fair");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(2 * kGb, 2)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(3, Resource::Of(1024, 1))})).ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 2u);
  RequestUpdate rel;
  rel.releases = {r.allocations[0].container};
  ASSERT_TRUE(s->UpdateRequests(1, rel).ok());
  EXPECT_EQ(s->Schedule(1).allocations.size(), 1u);
  ASSERT_TRUE(s->ContainerCompleted(r.allocations[1].container).ok());
  EXPECT_EQ(s->app(1)->usage, Resource::Of(1024, 1));
  EXPECT_TRUE(s->Schedule(2).allocations.empty());  // nothing pending
  auto removed = s->RemoveApp(1);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->size(), 1u);
  EXPECT_EQ(s->cluster_allocated(), Resource());
}

TEST(SchedulerTest, AbsoluteCountsReplaceOutstandingAsks) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(5, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(s->app(1)->pending_containers, 5);
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(s->app(1)->pending_containers, 2);
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(0, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(s->app(1)->pending_containers, 0);
  EXPECT_TRUE(s->app(1)->groups.empty());
}

TEST(SchedulerTest, MaxRunningAppsHoldsAppsBack) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      q: {max-running-apps: 1}
)",
                         "fair");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "q"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "q"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 1), 1);
  EXPECT_EQ(CountFor(r, 2), 0);
  EXPECT_FALSE(s->app(2)->runnable);
  ASSERT_TRUE(s->RemoveApp(1).ok());
  EXPECT_TRUE(s->app(2)->runnable);
  EXPECT_EQ(CountFor(s->Schedule(1), 2), 1);
}

// A parent's limit, freed by an app of one leaf, lets an app waiting in another leaf run.
TEST(SchedulerTest, MaxRunningAppsOfAParentPromotesAcrossItsLeaves) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      p: {max-running-apps: 1, children: {p1: {}, p2: {}}}
)");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "p1"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "p2"), 0).ok());
  EXPECT_FALSE(s->app(2)->runnable);
  ASSERT_TRUE(s->RemoveApp(1).ok());
  EXPECT_TRUE(s->app(2)->runnable);
}

// YARN's per-user maxRunningApps (userMaxAppsDefault and <user><maxRunningApps>): counted over
// all queues; an app beyond it waits, and the user's waiting apps run in submission order, in
// whichever queue they wait, as the user's apps end. Other users are not held back.
TEST(SchedulerTest, MaxRunningAppsPerUser) {
  auto s = MakeScheduler(R"(
user-max-apps-default: 2
users:
  bob: {max-running-apps: 1}
  carol: {max-running-apps: -1}
queues: {root: {children: {a: {}, b: {}}}}
)");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  const struct {
    AppId id;
    const char* queue;
    const char* user;
  } apps[] = {{1, "a", "alice"}, {2, "b", "alice"}, {3, "b", "alice"},
              {4, "a", "alice"}, {5, "a", "bob"},   {6, "b", "bob"},
              {7, "a", "carol"}, {8, "a", "carol"}, {9, "b", "carol"}};
  for (const auto& a : apps) ASSERT_TRUE(s->AddApp(App(a.id, a.queue, a.user), 0).ok());
  auto runnable = [&] {
    std::vector<AppId> ids;
    for (const auto& a : apps) {
      if (s->app(a.id) != nullptr && s->app(a.id)->runnable) ids.push_back(a.id);
    }
    return ids;
  };
  EXPECT_EQ(runnable(), (std::vector<AppId>{1, 2, 5, 7, 8, 9}));
  EXPECT_EQ(s->UserRunningApps("alice"), 2);
  EXPECT_EQ(s->UserRunningApps("carol"), 3);
  EXPECT_EQ(s->UserRunningApps("nobody"), 0);
  EXPECT_EQ(s->QueueSummaries()[0].pending_apps, 3);
  // A waiting app takes nothing.
  ASSERT_TRUE(s->UpdateRequests(3, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(CountFor(s->Schedule(0), 3), 0);
  // Alice's app in a ends: her oldest waiting app (3, in b) runs, not 4.
  ASSERT_TRUE(s->RemoveApp(1).ok());
  EXPECT_EQ(runnable(), (std::vector<AppId>{2, 3, 5, 7, 8, 9}));
  EXPECT_EQ(CountFor(s->Schedule(1), 3), 1);
  ASSERT_TRUE(s->RemoveApp(3).ok());
  EXPECT_EQ(runnable(), (std::vector<AppId>{2, 4, 5, 7, 8, 9}));
  // Another user's end frees nothing of bob's.
  ASSERT_TRUE(s->RemoveApp(7).ok());
  EXPECT_FALSE(s->app(6)->runnable);
  ASSERT_TRUE(s->RemoveApp(5).ok());
  EXPECT_TRUE(s->app(6)->runnable);
  // A waiting app may be removed; new limits apply at once on Reconfigure.
  ASSERT_TRUE(s->AddApp(App(10, "a", "bob"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(11, "a", "bob"), 0).ok());
  ASSERT_TRUE(s->RemoveApp(10).ok());
  EXPECT_FALSE(s->app(11)->runnable);
  ResourceTypeRegistry reg;
  auto relaxed = ParseSchedulerConfig("queues: {root: {children: {a: {}, b: {}}}}", reg);
  ASSERT_TRUE(relaxed.ok());
  ASSERT_TRUE(s->Reconfigure(*relaxed).ok());
  EXPECT_TRUE(s->app(11)->runnable);
  EXPECT_EQ(s->UserRunningApps("bob"), 2);
}

// The minimal AM deadlock: one node of 2 vcores, two apps whose AM and task take a vcore each.
// With the AMs unlimited, both AMs start and neither task ever can. The default policy's default
// max-am-share (0.5) lets one AM run; the other app waits until the first has finished.
TEST(SchedulerTest, TwoAppsOnTwoVcoresBothFinishUnderTheDefaults) {
  auto s = MakeScheduler("");
  ASSERT_EQ(s->policy().name(), DefaultPolicyName());
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 2)}).ok());
  for (AppId id : {1, 2}) {
    AppSpec a = App(id);
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(s->AddApp(a, id).ok());
  }
  PassResult first = s->Schedule(0);
  ASSERT_EQ(first.allocations.size(), 1u);
  EXPECT_TRUE(first.allocations[0].is_am);
  EXPECT_EQ(first.allocations[0].app, 1u);
  EXPECT_EQ(s->app(2)->pending_containers, 1);  // its AM waits and holds nothing
  EXPECT_TRUE(s->app(2)->usage.IsZero());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  PassResult second = s->Schedule(1);
  ASSERT_EQ(second.allocations.size(), 1u);
  EXPECT_FALSE(second.allocations[0].is_am);  // the task, not the other AM

  auto fresh = MakeScheduler("");
  ASSERT_TRUE(fresh->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 2)}).ok());
  for (AppId id : {1, 2}) {
    AppSpec a = App(id);
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(fresh->AddApp(a, 0).ok());
  }
  CompletionRun run = RunToCompletion(fresh.get(), {1, 2}, Resource::Of(1024, 1));
  EXPECT_EQ(run.finished, 2);
  EXPECT_EQ(run.max_am_usage[kVcores], 1);

  // With the limit off (-1), the same jobs deadlock: the reason for the default.
  auto unlimited = MakeScheduler("queue-max-am-share-default: -1");
  ASSERT_TRUE(unlimited->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 2)}).ok());
  for (AppId id : {1, 2}) {
    AppSpec a = App(id);
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(unlimited->AddApp(a, 0).ok());
  }
  EXPECT_EQ(RunToCompletion(unlimited.get(), {1, 2}, Resource::Of(1024, 1), 1, 50).finished, 0);
}

// Every queue may start one AM whatever its limit (YARN), but not once AMs hold
// queue-max-am-share-default of the cluster: four queues on four vcores would otherwise fill it
// with AMs.
TEST(SchedulerTest, FirstAmsOfQueuesStopAtTheClusterShare) {
  auto s = MakeScheduler("queues: {root: {children: {q0: {}, q1: {}, q2: {}, q3: {}}}}");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 4)}).ok());
  for (AppId id = 1; id <= 4; ++id) {
    AppSpec a = App(id, absl::StrCat("q", id - 1));
    a.am_resource = Resource::Of(1024, 1);
    ASSERT_TRUE(s->AddApp(a, 0).ok());
  }
  // Each queue's share is 1 vcore, its AM limit 0.5 of it: nothing but first AMs, and those
  // only up to 2 of the 4 vcores.
  EXPECT_EQ(s->Schedule(0).allocations.size(), 2u);
  EXPECT_EQ(s->queues().front()->am_usage[kVcores], 2);
}

TEST(SchedulerTest, ReleasingAContainerTwiceInOneUpdateReleasesItOnce) {
  auto s = MakeScheduler("");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 2u);
  RequestUpdate u;
  u.releases = {r.allocations[0].container, r.allocations[0].container};
  ASSERT_TRUE(s->UpdateRequests(1, u).ok());
  EXPECT_EQ(s->app(1)->usage, Resource::Of(1024, 1));
  EXPECT_EQ(s->cluster_allocated(), Resource::Of(1024, 1));
}

TEST(SchedulerTest, ReconfigureKeepsAppsAndRejectsLosingTheirQueue) {
  auto s = MakeScheduler(R"(
queues:
  root:
    children:
      a: {weight: 1}
      b: {weight: 1}
)",
                         "fair");
  ASSERT_TRUE(s->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE(s->AddApp(App(1, "a"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  ASSERT_EQ(s->Schedule(0).allocations.size(), 2u);
  ResourceTypeRegistry reg;
  auto without_a = ParseSchedulerConfig("queues: {root: {children: {b: {}}}}", reg);
  ASSERT_TRUE(without_a.ok());
  absl::Status st = s->Reconfigure(*without_a);
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(st.message(), HasSubstr("root.a"));
  EXPECT_NE(s->FindQueue("a"), nullptr);  // old configuration still in force

  auto more = ParseSchedulerConfig("queues: {root: {children: {a: {weight: 3}, c: {}}}}", reg);
  ASSERT_TRUE(more.ok());
  ASSERT_TRUE(s->Reconfigure(*more).ok()) << s->Reconfigure(*more);
  EXPECT_EQ(s->FindQueue("a")->config.weight, 3);
  EXPECT_EQ(s->FindQueue("a")->usage, Resource::Of(2048, 2));
  EXPECT_EQ(s->FindQueue("root")->usage, Resource::Of(2048, 2));
  EXPECT_EQ(s->FindQueue("b"), nullptr);
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(s->Schedule(1).allocations.size(), 1u);
}

TEST(SchedulerTest, ContainerIdsStartWhereTheCallerSays) {
  ResourceTypeRegistry reg;
  auto s =
      CreateScheduler(DefaultSchedulerConfig(), SchedulerOptions{reg, (uint64_t{7} << 40) + 1});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->AddNode({"h1", "/r1", Resource::Of(8 * kGb, 8)}).ok());
  ASSERT_TRUE((*s)->AddApp(App(1), 0).ok());
  ASSERT_TRUE((*s)->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  PassResult r = (*s)->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 2u);
  EXPECT_EQ(r.allocations[0].container, (uint64_t{7} << 40) + 1);
  EXPECT_EQ(r.allocations[1].container, (uint64_t{7} << 40) + 2);
}

// Work-preserving recovery: a running container handed back after a restart is charged to its
// node, app, user and queues like an allocation, appears in no pass, and satisfies a pending
// AM ask when it is the AM's.
TEST(SchedulerTest, RecoveredContainersAreChargedWithoutAnAllocation) {
  constexpr ContainerId kFirst = uint64_t{2} << 40;  // this scheduler's ids: epoch 2
  constexpr ContainerId kOldAm = (uint64_t{1} << 40) + 1, kOldTask = (uint64_t{1} << 40) + 2;
  auto s = MakeScheduler("", "fair", kFirst);
  NodeId n1 = *s->AddNode({"n1", "/r1", Resource::Of(4 * kGb, 4)});
  AppSpec a = App(1, "default", "alice");
  a.am_resource = Resource::Of(1024, 1);
  ASSERT_TRUE(s->AddApp(a, 0).ok());
  ASSERT_EQ(s->app(1)->pending_containers, 1);  // its AM ask
  ASSERT_TRUE(s->RecoverContainer({kOldAm, 1, n1, Resource::Of(1024, 1), 0, true, 5}).ok());
  ASSERT_TRUE(s->RecoverContainer({kOldTask, 1, n1, Resource::Of(2048, 1), 3, false, 5}).ok());
  EXPECT_EQ(s->node(n1)->allocated, Resource::Of(3 * kGb, 2));
  EXPECT_EQ(s->node(n1)->num_containers, 2);
  EXPECT_EQ(s->app(1)->usage, Resource::Of(3 * kGb, 2));
  EXPECT_EQ(s->app(1)->am_usage, Resource::Of(1024, 1));
  EXPECT_EQ(s->app(1)->num_containers, 2);
  EXPECT_EQ(s->FindQueue("default")->usage, Resource::Of(3 * kGb, 2));
  EXPECT_EQ(s->FindQueue("default")->am_usage, Resource::Of(1024, 1));
  EXPECT_EQ(s->cluster_allocated(), Resource::Of(3 * kGb, 2));
  EXPECT_EQ(s->app(1)->pending_containers, 0);  // the AM runs: no second one is asked for
  EXPECT_EQ(s->FindQueue("root")->pending, Resource());
  EXPECT_TRUE(s->container(kOldAm)->is_am);
  EXPECT_EQ(s->container(kOldTask)->priority, 3);
  EXPECT_EQ(s->container(kOldTask)->allocated_ms, 5);
  EXPECT_EQ(s->stats().recovered, 2);
  EXPECT_EQ(s->stats().allocations, 0);
  // Passes see the node as it is: one more <1 GB, 1> fits, the second does not.
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  PassResult r = s->Schedule(10);
  ASSERT_EQ(r.allocations.size(), 1u);
  EXPECT_EQ(r.allocations[0].container, kFirst);
  EXPECT_FALSE(r.allocations[0].is_am);
  // A recovered container ends like any other.
  ASSERT_TRUE(s->ContainerCompleted(kOldTask, 20).ok());
  EXPECT_EQ(s->app(1)->task_stats.at(3).total_ms, 15);
  EXPECT_EQ(s->node(n1)->allocated, Resource::Of(2 * kGb, 2));
  EXPECT_THAT(s->AppContainers(1), ::testing::ElementsAre(kOldAm, kFirst));
}

TEST(SchedulerTest, RecoverContainerRefusesWhatItCannotHoldAndChangesNothing) {
  constexpr ContainerId kFirst = uint64_t{2} << 40;
  constexpr ContainerId kOld = (uint64_t{1} << 40) + 9;
  auto s = MakeScheduler("", "fifo", kFirst);
  NodeId n1 = *s->AddNode({"n1", "/r1", Resource::Of(2 * kGb, 2)});
  NodeId gone = *s->AddNode({"gone", "/r1", Resource::Of(2 * kGb, 2)});
  ASSERT_TRUE(s->RemoveNode("gone").ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  const Resource c = Resource::Of(1024, 1);
  auto code = [&](const RecoveredContainer& rc) { return s->RecoverContainer(rc).code(); };
  EXPECT_EQ(code({kOld, 7, n1, c, 0, false, 0}), absl::StatusCode::kNotFound);
  EXPECT_EQ(code({kOld, 1, gone, c, 0, false, 0}), absl::StatusCode::kNotFound);
  EXPECT_EQ(code({kOld, 1, 99, c, 0, false, 0}), absl::StatusCode::kNotFound);
  EXPECT_EQ(code({0, 1, n1, c, 0, false, 0}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({kFirst, 1, n1, c, 0, false, 0}), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({kOld, 1, n1, Resource::Of(-1, 1), 0, false, 0}),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code({kOld, 1, n1, Resource(), 0, false, 0}), absl::StatusCode::kInvalidArgument);
  absl::Status big = s->RecoverContainer({kOld, 1, n1, Resource::Of(3 * kGb, 1), 0, false, 0});
  EXPECT_EQ(big.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(big.message(), HasSubstr("does not fit on node 'n1'"));
  EXPECT_THAT(big.message(), HasSubstr(absl::StrCat("recovering container ", kOld)));
  // Nothing was charged by the refusals.
  EXPECT_EQ(s->node(n1)->allocated, Resource());
  EXPECT_EQ(s->app(1)->usage, Resource());
  EXPECT_EQ(s->stats().recovered, 0);
  // The same id twice, and a second AM container, are refused too.
  ASSERT_TRUE(s->RecoverContainer({kOld, 1, n1, c, 0, true, 0}).ok());
  EXPECT_EQ(code({kOld, 1, n1, c, 0, false, 0}), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(code({kOld + 1, 1, n1, c, 0, true, 0}), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s->node(n1)->allocated, c);
  EXPECT_EQ(s->stats().recovered, 1);
}

TEST(SchedulerTest, UnknownPolicyNamesTheKnownOnes) {
  ResourceTypeRegistry reg;
  SchedulerConfig c = DefaultSchedulerConfig();
  c.policy = "lottery";
  auto s = CreateScheduler(c, SchedulerOptions{reg, 1});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("fifo, fair, capacity"));
}

}  // namespace
}  // namespace weft::scheduler
