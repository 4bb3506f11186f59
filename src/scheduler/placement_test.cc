// Tests of the core's placement extensions: allocation tags and constraints, node labels and
// attributes, gangs and container resizing (the policy-independent parts; conformance_test
// runs the shared properties under every policy).
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

constexpr const char* kOneQueue = R"(
locality: {node-locality-delay: 0, rack-locality-delay: 0}
queues:
  root:
    children:
      default: {}
)";

constexpr const char* kLabelled = R"(
locality: {node-locality-delay: 0, rack-locality-delay: 0}
node-labels:
  gpu: {exclusive: true}
  spare: {exclusive: false}
queues:
  root:
    children:
      ml: {accessible-node-labels: [gpu, spare], node-label-maximum-capacity: {gpu: 50}}
      etl: {accessible-node-labels: ""}
)";

ResourceRequest Tagged(int32_t n, Resource r, std::vector<std::string> tags,
                       std::optional<PlacementConstraint> c = std::nullopt, bool soft = false,
                       int32_t priority = 1) {
  ResourceRequest a = Ask(n, r, "*", priority);
  a.allocation_tags = std::move(tags);
  if (c.has_value()) {
    a.has_constraint = true;
    a.constraint = *c;
    a.constraint_soft = soft;
  }
  return a;
}

ResourceRequest Gang(int32_t n, Resource r, int64_t timeout_ms = 0, int32_t priority = 1) {
  ResourceRequest a = Ask(n, r, "*", priority);
  a.gang = true;
  a.gang_timeout_ms = timeout_ms;
  return a;
}

void AddNodes(Scheduler* s, int n, Resource r, const std::string& prefix = "n",
              const std::string& label = "", int racks = 1) {
  for (int i = 0; i < n; ++i) {
    NodeSpec spec{prefix + std::to_string(i), "/r" + std::to_string(i % racks), r};
    spec.node_label = label;
    ASSERT_TRUE(s->AddNode(spec).ok());
  }
}

std::vector<Allocation> Pass(Scheduler* s, int64_t now) { return s->Schedule(now).allocations; }

std::vector<Allocation> Passes(Scheduler* s, int n, int64_t from = 0) {
  std::vector<Allocation> all;
  for (int i = 0; i < n; ++i) {
    for (const Allocation& a : Pass(s, from + i)) all.push_back(a);
  }
  return all;
}

TEST(PlacementTest, AntiAffinityOnItselfSpreadsAcrossNodesAndTheRestWaits) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 3, Resource::Of(8192, 8));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  auto notin = PlacementConstraint::NotIn(ConstraintScope::kNode, "w");
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Tagged(4, Resource::Of(1024, 1), {"w"}, notin)})).ok());
  std::vector<Allocation> got = Passes(s.get(), 5);
  ASSERT_EQ(got.size(), 3u);
  std::set<NodeId> nodes;
  for (const Allocation& a : got) {
    nodes.insert(a.node);
    EXPECT_EQ(a.tags, std::vector<std::string>{"w"});
  }
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(s->app(1)->pending_containers, 1);
  // A fourth node arrives: the waiting container goes there.
  ASSERT_TRUE(s->AddNode({"n3", "/r0", Resource::Of(8192, 8)}).ok());
  got = Pass(s.get(), 10);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, s->FindNode("n3"));
}

TEST(PlacementTest, CrossAppAffinityLandsBesideTheTargetsTags) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 6, Resource::Of(8192, 8), "n", "", 3);
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Tagged(1, Resource::Of(1024, 1), {"db"})})).ok());
  std::vector<Allocation> db = Pass(s.get(), 0);
  ASSERT_EQ(db.size(), 1u);
  EXPECT_EQ(s->ContainerTags(db[0].container), std::vector<std::string>{"db"});
  // Self namespace: app 2 has no "db" containers, so IN self never holds.
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Tagged(2, Resource::Of(1024, 1), {"web"},
                                                PlacementConstraint::In(ConstraintScope::kNode,
                                                                        "db"))}))
                  .ok());
  EXPECT_TRUE(Passes(s.get(), 3, 1).empty());
  // All apps: beside the database.
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Tagged(2, Resource::Of(1024, 1), {"web"},
                                                PlacementConstraint::In(ConstraintScope::kNode,
                                                                        "db", TagNamespace::kAll))}))
                  .ok());
  std::vector<Allocation> web = Passes(s.get(), 2, 5);
  ASSERT_EQ(web.size(), 2u);
  for (const Allocation& a : web) EXPECT_EQ(a.node, db[0].node);
  // App-id namespace and rack scope: in the database's rack, not on its node.
  PlacementConstraint rack_not_node = PlacementConstraint::And(
      {PlacementConstraint::In(ConstraintScope::kRack, "db", TagNamespace::kAppId),
       PlacementConstraint::NotIn(ConstraintScope::kNode, "db", TagNamespace::kAll)});
  rack_not_node.children[0].ns_app = 1;
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Tagged(1, Resource::Of(1024, 1), {"cache"},
                                                rack_not_node, false, 2)}))
                  .ok());
  std::vector<Allocation> cache = Passes(s.get(), 2, 10);
  ASSERT_EQ(cache.size(), 1u);
  EXPECT_NE(cache[0].node, db[0].node);
  EXPECT_EQ(s->node(cache[0].node)->rack, s->node(db[0].node)->rack);
}

TEST(PlacementTest, CardinalityBoundsContainersPerNode) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 2, Resource::Of(16384, 16));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  // At most 2 "x" already there when one is placed: at most 3 per node.
  auto card = PlacementConstraint::Cardinality(ConstraintScope::kNode, "x", 0, 2);
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Tagged(10, Resource::Of(1024, 1), {"x"}, card)})).ok());
  std::vector<Allocation> got = Passes(s.get(), 4);
  std::map<NodeId, int> per_node;
  for (const Allocation& a : got) ++per_node[a.node];
  EXPECT_EQ(got.size(), 6u);
  for (const auto& [node, n] : per_node) EXPECT_EQ(n, 3) << node;
}

TEST(PlacementTest, NodeAttributesAndAttributeScope) {
  auto s = MakeScheduler(kOneQueue);
  const char* zones[] = {"a", "a", "b", "b", "c"};
  for (int i = 0; i < 5; ++i) {
    NodeSpec spec{"n" + std::to_string(i), "/r0", Resource::Of(8192, 8)};
    spec.attributes = {{"zone", zones[i]}, {"os", i == 4 ? "windows" : "linux"}};
    ASSERT_TRUE(s->AddNode(spec).ok());
  }
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  // One per zone, on linux only: zones a and b (c's only node runs windows).
  auto c = PlacementConstraint::And(
      {PlacementConstraint::NotIn(ConstraintScope::kAttribute, "z"),
       PlacementConstraint::AttributeIs("os", "linux")});
  c.children[0].scope_attribute = "zone";
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Tagged(5, Resource::Of(1024, 1), {"z"}, c)})).ok());
  std::vector<Allocation> got = Passes(s.get(), 4);
  ASSERT_EQ(got.size(), 2u);
  std::set<std::string> seen;
  for (const Allocation& a : got) {
    const NodeState* n = s->node(a.node);
    seen.insert(n->attributes[1].second);  // sorted: os, zone
    EXPECT_EQ(n->attributes[0].second, "linux");
  }
  EXPECT_EQ(seen, (std::set<std::string>{"a", "b"}));
  // The admin makes n4 linux: zone c opens.
  ASSERT_TRUE(s->SetNodeAttributes("n4", {{"zone", "c"}, {"os", "linux"}}).ok());
  got = Pass(s.get(), 9);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, s->FindNode("n4"));
  EXPECT_FALSE(s->SetNodeAttributes("n4", {{"os", "a"}, {"os", "b"}}).ok());
  EXPECT_FALSE(s->SetNodeAttributes("n4", {{"os", ""}}).ok());
  EXPECT_EQ(s->node(s->FindNode("n4"))->attributes.size(), 2u);  // unchanged
}

TEST(PlacementTest, SoftConstraintPrefersButNeverLeavesResourcesIdle) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 3, Resource::Of(8192, 8));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  auto notin = PlacementConstraint::NotIn(ConstraintScope::kNode, "w");
  ASSERT_TRUE(
      s->UpdateRequests(1, Asks({Tagged(5, Resource::Of(1024, 1), {"w"}, notin, true)})).ok());
  std::vector<Allocation> got = Pass(s.get(), 0);
  EXPECT_EQ(got.size(), 5u);
  std::set<NodeId> first3;
  for (size_t i = 0; i < 3; ++i) first3.insert(got[i].node);
  EXPECT_EQ(first3.size(), 3u);  // satisfied while it could be
  EXPECT_EQ(s->stats().soft_violations, 2);
}

TEST(PlacementTest, BadPlacementAsksAreRefusedAndChangeNothing) {
  auto s = MakeScheduler(kLabelled);
  AddNodes(s.get(), 2, Resource::Of(8192, 8));
  ASSERT_TRUE(s->AddApp(App(1, "etl"), 0).ok());
  ResourceRequest on_host = Tagged(1, Resource::Of(1024, 1), {"x"});
  on_host.resource_name = "n0";
  auto st = s->UpdateRequests(1, Asks({on_host}));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("\"*\" row only"), std::string::npos) << st;
  ResourceRequest host = Ask(1, Resource::Of(1024, 1), "n0");
  st = s->UpdateRequests(1, Asks({host, Tagged(1, Resource::Of(1024, 1), {"x"})}));
  EXPECT_NE(st.message().find("no host or rack rows"), std::string::npos) << st;
  ResourceRequest unknown = Ask(1, Resource::Of(1024, 1));
  unknown.node_label = "tpu";
  st = s->UpdateRequests(1, Asks({unknown}));
  EXPECT_NE(st.message().find("'tpu' is not a cluster node label"), std::string::npos) << st;
  ResourceRequest denied = Ask(1, Resource::Of(1024, 1));
  denied.node_label = "gpu";
  st = s->UpdateRequests(1, Asks({denied}));
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied) << st;
  EXPECT_NE(st.message().find("queue 'root.etl' may not use node label 'gpu'"), std::string::npos);
  ResourceRequest bad_tag = Tagged(1, Resource::Of(1024, 1), {"no spaces"});
  EXPECT_FALSE(s->UpdateRequests(1, Asks({bad_tag})).ok());
  ResourceRequest soft_gang = Gang(2, Resource::Of(1024, 1));
  soft_gang.has_constraint = true;
  soft_gang.constraint_soft = true;
  soft_gang.constraint = PlacementConstraint::NotIn(ConstraintScope::kNode, "x");
  EXPECT_FALSE(s->UpdateRequests(1, Asks({soft_gang})).ok());
  EXPECT_TRUE(s->app(1)->groups.empty());
  EXPECT_EQ(s->app(1)->pending_containers, 0);
  NodeSpec bad_label{"n9", "/r0", Resource::Of(1024, 1)};
  bad_label.node_label = "tpu";
  EXPECT_FALSE(s->AddNode(bad_label).ok());
  EXPECT_EQ(s->FindNode("n9"), -1);
}

TEST(PlacementTest, ExclusiveLabelsKeepTheirNodesAndQueuesAreBoundedOnThem) {
  auto s = MakeScheduler(kLabelled);
  AddNodes(s.get(), 2, Resource::Of(8192, 8), "cpu");
  AddNodes(s.get(), 2, Resource::Of(8192, 8), "gpu", "gpu");
  ASSERT_TRUE(s->AddApp(App(1, "etl"), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2, "ml"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(40, Resource::Of(1024, 1))})).ok());
  ResourceRequest gpu = Ask(40, Resource::Of(1024, 1), "*", 1);
  gpu.node_label = "gpu";
  ASSERT_TRUE(s->UpdateRequests(2, Asks({gpu})).ok());
  std::vector<Allocation> got = Passes(s.get(), 3);
  int etl = 0, ml = 0;
  for (const Allocation& a : got) {
    const bool on_gpu = s->node(a.node)->label != 0;
    if (a.app == 1) {
      ++etl;
      EXPECT_FALSE(on_gpu) << s->node(a.node)->name;
    } else {
      ++ml;
      EXPECT_TRUE(on_gpu) << s->node(a.node)->name;
    }
  }
  EXPECT_EQ(etl, 16);
  EXPECT_EQ(ml, 8);  // node-label-maximum-capacity: 50% of gpu's 16 vcores
  const auto labels = s->Labels();
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels[1].name, "gpu");
  EXPECT_EQ(labels[1].nodes, 2);
  EXPECT_EQ(labels[0].nodes, 2);
}

TEST(PlacementTest, NonExclusiveLabelLendsIdleNodesToTheDefaultPartition) {
  auto s = MakeScheduler(kLabelled);
  AddNodes(s.get(), 1, Resource::Of(4096, 4), "spare", "spare");
  ASSERT_TRUE(s->AddApp(App(1, "etl"), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(Pass(s.get(), 0).size(), 2u);
}

TEST(PlacementTest, GangStartsWholeOrNotAtAll) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 2, Resource::Of(4096, 4));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Resource::Of(1024, 1))})).ok());
  std::vector<Allocation> one = Pass(s.get(), 0);
  ASSERT_EQ(one.size(), 1u);
  const SchedulerStats before = s->stats();
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Gang(8, Resource::Of(1024, 1))})).ok());
  EXPECT_TRUE(Passes(s.get(), 3, 1).empty());  // 7 free vcores: none of the 8
  EXPECT_EQ(s->app(2)->num_containers, 0);
  EXPECT_EQ(s->stats().allocations, before.allocations);  // a failed attempt leaves no trace
  EXPECT_EQ(s->reservation_app(), 2u);
  ASSERT_TRUE(s->ContainerCompleted(one[0].container).ok());
  std::vector<Allocation> gang = Pass(s.get(), 5);
  ASSERT_EQ(gang.size(), 8u);
  for (const Allocation& a : gang) {
    EXPECT_EQ(a.app, 2u);
    EXPECT_EQ(a.gang, gang[0].gang);
    EXPECT_NE(a.gang, 0u);
  }
  EXPECT_EQ(s->stats().gangs_placed, 1);
  EXPECT_EQ(s->reservation_app(), 0u);
  EXPECT_GT(gang[0].container, one[0].container);
  EXPECT_EQ(gang[0].container, one[0].container + 1);  // ids of failed attempts were not used
}

// Two gangs that each need the whole cluster: taken piecewise (hold-and-wait) each holds half
// and waits for ever; Weft's all-or-nothing runs one, then the other.
TEST(PlacementTest, CompetingGangsDeadlockUnderHoldAndWaitButBothFinishInWeft) {
  for (const char* mode : {"hold-and-wait", "reserve"}) {
    SCOPED_TRACE(mode);
    auto s = MakeScheduler(absl::StrCat("gang-mode: ", mode, "\n", kOneQueue));
    AddNodes(s.get(), 2, Resource::Of(4096, 4));
    ASSERT_TRUE(s->AddApp(App(1), 0).ok());
    ASSERT_TRUE(s->AddApp(App(2), 0).ok());
    // Interleaved: each app's gang is asked for in a pass that also serves the other.
    ASSERT_TRUE(s->UpdateRequests(1, Asks({Gang(8, Resource::Of(1024, 1))})).ok());
    ASSERT_TRUE(s->UpdateRequests(2, Asks({Gang(8, Resource::Of(1024, 1))})).ok());
    std::map<AppId, int> held;
    std::set<AppId> finished;
    for (int64_t now = 0; now < 20; ++now) {
      for (const Allocation& a : Pass(s.get(), now)) ++held[a.app];
      for (AppId app : {AppId{1}, AppId{2}}) {
        if (held[app] == 8 && !finished.contains(app)) {  // the whole gang runs, then ends
          for (ContainerId c : s->AppContainers(app)) ASSERT_TRUE(s->ContainerCompleted(c).ok());
          finished.insert(app);
        }
      }
    }
    if (std::string(mode) == "reserve") {
      EXPECT_EQ(finished.size(), 2u);
    } else {
      EXPECT_TRUE(finished.empty());
      EXPECT_EQ(held[1] + held[2], 8);
      EXPECT_GT(held[1], 0);
      EXPECT_GT(held[2], 0);
    }
  }
}

TEST(PlacementTest, TheOldestGangReservesNodesSoSmallAsksCannotStarveIt) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 2, Resource::Of(4096, 4));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->AddApp(App(2), 0).ok());
  // App 1 keeps the cluster busy with short tasks, asking for more as they end.
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1000, Resource::Of(1024, 1))})).ok());
  std::vector<Allocation> busy = Pass(s.get(), 0);
  ASSERT_EQ(busy.size(), 8u);
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Gang(4, Resource::Of(1024, 1), 0, 1)})).ok());
  bool started = false;
  for (int64_t now = 1; now < 20 && !started; ++now) {
    // One of app 1's containers ends per pass.
    std::vector<ContainerId> live = s->AppContainers(1);
    if (!live.empty()) {
      ASSERT_TRUE(s->ContainerCompleted(live.front()).ok());
    }
    for (const Allocation& a : Pass(s.get(), now)) started |= a.app == 2;
  }
  EXPECT_TRUE(started);
  EXPECT_EQ(s->app(2)->num_containers, 4);
  EXPECT_GE(s->stats().gang_reservations, 1);
}

TEST(PlacementTest, AGangLargerThanTheClusterDoesNotKeepOthersFromReserving) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 2, Resource::Of(4096, 4));
  for (AppId id : {1, 2, 3}) ASSERT_TRUE(s->AddApp(App(id), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1000, Resource::Of(1024, 1))})).ok());
  ASSERT_EQ(Pass(s.get(), 0).size(), 8u);
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Gang(9, Resource::Of(1024, 1))})).ok());  // never fits
  ASSERT_TRUE(s->UpdateRequests(3, Asks({Gang(4, Resource::Of(1024, 1))})).ok());
  bool started = false;
  for (int64_t now = 1; now < 20 && !started; ++now) {
    std::vector<ContainerId> live = s->AppContainers(1);
    if (!live.empty()) {
      ASSERT_TRUE(s->ContainerCompleted(live.front()).ok());
    }
    for (const Allocation& a : Pass(s.get(), now)) started |= a.app == 3;
  }
  EXPECT_TRUE(started);
  EXPECT_EQ(s->app(2)->num_containers, 0);
}

TEST(PlacementTest, AGangThatWaitsPastItsTimeoutIsRejected) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 1, Resource::Of(4096, 4));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Gang(5, Resource::Of(1024, 1), 100)})).ok());
  EXPECT_TRUE(s->Schedule(0).rejected.empty());
  EXPECT_TRUE(s->Schedule(99).rejected.empty());
  const PassResult& r = s->Schedule(100);
  ASSERT_EQ(r.rejected.size(), 1u);
  EXPECT_EQ(r.rejected[0].app, 1u);
  EXPECT_EQ(r.rejected[0].num_containers, 5);
  EXPECT_NE(r.rejected[0].reason.find("not placed within 100 ms"), std::string::npos);
  EXPECT_EQ(s->app(1)->pending_containers, 0);
  EXPECT_EQ(s->stats().gangs_rejected, 1);
}

TEST(PlacementTest, ContainersGrowWhenThereIsRoomAndShrinkAtOnce) {
  auto s = MakeScheduler(kOneQueue);
  AddNodes(s.get(), 1, Resource::Of(8192, 8));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(2048, 2))})).ok());
  std::vector<Allocation> got = Pass(s.get(), 0);
  ASSERT_EQ(got.size(), 2u);
  const ContainerId a = got[0].container, b = got[1].container;
  RequestUpdate grow;
  grow.updates = {{a, Resource::Of(6144, 4)}};
  ASSERT_TRUE(s->UpdateRequests(1, grow).ok());
  const PassResult& none = s->Schedule(1);  // 4096 MB free, the increase needs 4096 more: fits
  ASSERT_EQ(none.resized.size(), 1u);
  EXPECT_TRUE(none.resized[0].increase);
  EXPECT_EQ(s->container(a)->resource, Resource::Of(6144, 4));
  EXPECT_EQ(s->node(0)->allocated, Resource::Of(8192, 6));
  // Now no room: the next increase waits until b shrinks.
  RequestUpdate grow_b;
  grow_b.updates = {{b, Resource::Of(4096, 2)}};
  ASSERT_TRUE(s->UpdateRequests(1, grow_b).ok());
  EXPECT_TRUE(s->Schedule(2).resized.empty());
  RequestUpdate shrink;
  shrink.updates = {{a, Resource::Of(2048, 2)}};
  ASSERT_TRUE(s->UpdateRequests(1, shrink).ok());
  EXPECT_EQ(s->container(a)->resource, Resource::Of(2048, 2));  // at once
  const PassResult& r = s->Schedule(3);
  ASSERT_EQ(r.resized.size(), 2u);
  EXPECT_FALSE(r.resized[0].increase);
  EXPECT_EQ(r.resized[0].container, a);
  EXPECT_TRUE(r.resized[1].increase);
  EXPECT_EQ(r.resized[1].container, b);
  EXPECT_EQ(s->app(1)->usage, Resource::Of(6144, 4));
  EXPECT_EQ(s->stats().increases, 2);
  EXPECT_EQ(s->stats().decreases, 1);

  RequestUpdate mixed;
  mixed.updates = {{a, Resource::Of(4096, 1)}};
  auto st = s->UpdateRequests(1, mixed);
  EXPECT_NE(st.message().find("both grows and shrinks"), std::string::npos) << st;
  RequestUpdate too_big;
  too_big.updates = {{a, Resource::Of(16384, 2)}};
  st = s->UpdateRequests(1, too_big);
  EXPECT_NE(st.message().find("exceeds its node"), std::string::npos) << st;
  RequestUpdate not_mine;
  not_mine.updates = {{999, Resource::Of(1024, 1)}};
  EXPECT_FALSE(s->UpdateRequests(1, not_mine).ok());
  EXPECT_EQ(s->container(a)->resource, Resource::Of(2048, 2));
}

TEST(PlacementTest, RecoveredTagsCountForConstraints) {
  auto s = MakeScheduler(kOneQueue, "", 100);
  AddNodes(s.get(), 2, Resource::Of(8192, 8));
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  RecoveredContainer rc;
  rc.container = 5;
  rc.app = 1;
  rc.node = 0;
  rc.resource = Resource::Of(1024, 1);
  rc.tags = {"zk"};
  ASSERT_TRUE(s->RecoverContainer(rc).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Tagged(2, Resource::Of(1024, 1), {"zk"},
                                                PlacementConstraint::NotIn(
                                                    ConstraintScope::kNode, "zk"))}))
                  .ok());
  std::vector<Allocation> got = Passes(s.get(), 3);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].node, 1);
}

}  // namespace
}  // namespace weft::scheduler
