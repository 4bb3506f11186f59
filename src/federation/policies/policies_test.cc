// Copyright Weft authors. Each federation policy against YARN's description of it (seed 004),
// the sub-cluster resolver, and the registry.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "federation/policies/in_flight_ledger.h"
#include "federation/policies/policy.h"
#include "federation/policies/policy_util.h"
#include "federation/policies/registry.h"
#include "federation/policies/test_util.h"
#include "federation/store/federation_store.h"  // header-only constants: kRouterPolicyNames
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::federation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;
using namespace ::weft::federation::testing;  // NOLINT

std::unique_ptr<RouterPolicy> Router(absl::string_view name) {
  auto p = MakeRouterPolicy(name);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

std::unique_ptr<AmrmPolicy> Amrm(absl::string_view name) {
  auto p = MakeAmrmPolicy(name);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

// How often each home is chosen over `draws` calls.
std::map<std::string, int> Shares(const RouterPolicy& policy, TestContext& t, int draws,
                                  const v1::ApplicationSubmissionContext& app = AppIn("q"),
                                  std::vector<std::string> exclude = {}) {
  std::map<std::string, int> n;
  PolicyContext ctx = t.ctx();
  for (int i = 0; i < draws; ++i) {
    auto home = policy.ChooseHome(app, ctx, exclude);
    EXPECT_TRUE(home.ok()) << home.status();
    if (home.ok()) ++n[*home];
  }
  return n;
}

// --- SubClusterResolver ------------------------------------------------------------------

TEST(SubClusterResolverTest, ParsesYarnMachineList) {
  auto r = SubClusterResolver::FromMachineList(
      "node1,subcluster1,rack1\n node2 , subcluster2, RACK1\n node3,subcluster3, rack2\n"
      " node4, subcluster3, rack2\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->num_nodes(), 4u);
  EXPECT_EQ(r->SubClusterForNode("node2"), "subcluster2");
  EXPECT_EQ(r->SubClusterForNode("node1:8041"), "subcluster1");
  EXPECT_EQ(r->SubClusterForNode("node9"), std::nullopt);
  EXPECT_THAT(r->SubClustersForRack("/rack1"), ElementsAre("subcluster1", "subcluster2"));
  EXPECT_THAT(r->SubClustersForRack("Rack2"), ElementsAre("subcluster3"));
  EXPECT_THAT(r->SubClustersForRack("/rack9"), ElementsAre());
}

TEST(SubClusterResolverTest, SkipsCommentsAndBlankLines) {
  auto r = SubClusterResolver::FromMachineList("# machines\n\n  \nn1,a,/r1\n# end\n");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->num_nodes(), 1u);
  EXPECT_EQ(r->SubClusterForNode("n1"), "a");
}

TEST(SubClusterResolverTest, ErrorsNameTheLine) {
  struct Case {
    const char* text;
    const char* want;
  } cases[] = {
      {"n1,a,r1\n\nn2,b\n", "line 3"},
      {"n1,a,r1\nn1,b,r2\n", "line 2"},
      {"n1,a,r1\nn1:8041,b,r2\n", "listed twice"},
      {"n1,a,r1,extra\n", "got 4 fields"},
      {" ,a,r1\n", "empty node"},
      {"n1,a b,r1\n", "sub-cluster id 'a b'"},
      {"n1,a,\n", "empty rack"},
      {"n1,a,/\n", "empty rack"},
  };
  for (const Case& c : cases) {
    auto r = SubClusterResolver::FromMachineList(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.text;
  }
}

TEST(SubClusterResolverTest, AddNodeMovesANode) {
  SubClusterResolver r;
  r.AddNode("n1", "a", "/r1");
  r.AddNode("n2", "a", "/r1");
  r.AddNode("n1", "b", "/r2");
  EXPECT_EQ(r.num_nodes(), 2u);
  EXPECT_EQ(r.SubClusterForNode("n1"), "b");
  EXPECT_THAT(r.SubClustersForRack("/r1"), ElementsAre("a"));
  r.AddNode("n2", "b", "/r2");
  EXPECT_THAT(r.SubClustersForRack("/r1"), ElementsAre());
  EXPECT_THAT(r.SubClustersForRack("/r2"), ElementsAre("b"));
}

// --- Router policies ---------------------------------------------------------------------

TEST(UniformRouterPolicyTest, SpreadsEvenlyAndNeverChoosesExcludedOrZeroWeight) {
  TestContext t({"a", "b", "c", "d"}, 7);
  (*t.config.mutable_router_weights())["a"] = 1;
  (*t.config.mutable_router_weights())["b"] = 5;
  (*t.config.mutable_router_weights())["c"] = 1;  // d: absent from a non-empty map, weight 0
  auto n = Shares(*Router("uniform"), t, 9000, AppIn("q"), {"c"});
  EXPECT_EQ(n.count("c"), 0u);
  EXPECT_EQ(n.count("d"), 0u);
  EXPECT_NEAR(n["a"] / 9000.0, 0.5, 0.03);  // weights only exclude
  EXPECT_NEAR(n["b"] / 9000.0, 0.5, 0.03);
}

TEST(UniformRouterPolicyTest, SameSeedSameChoices) {
  TestContext t1({"a", "b", "c"}, 42), t2({"a", "b", "c"}, 42);
  auto p = Router("uniform");
  PolicyContext c1 = t1.ctx(), c2 = t2.ctx();
  std::vector<std::string> s1, s2;
  for (int i = 0; i < 50; ++i) {
    s1.push_back(*p->ChooseHome(AppIn("q"), c1, {}));
    s2.push_back(*p->ChooseHome(AppIn("q"), c2, {}));
  }
  EXPECT_EQ(s1, s2);
  EXPECT_GT(std::set<std::string>(s1.begin(), s1.end()).size(), 1u);
}

TEST(HashingRouterPolicyTest, SameQueueSameHomeWhileMembershipIsUnchanged) {
  auto p = Router("hashing");
  TestContext t1({"a", "b", "c"}, 1), t2({"c", "b", "a"}, 999);  // order and rng do not matter
  PolicyContext c1 = t1.ctx(), c2 = t2.ctx();
  std::set<std::string> homes;
  for (int q = 0; q < 30; ++q) {
    std::string queue = "queue" + std::to_string(q);
    std::string home = *p->ChooseHome(AppIn(queue), c1, {});
    EXPECT_EQ(*p->ChooseHome(AppIn(queue), c1, {}), home);
    EXPECT_EQ(*p->ChooseHome(AppIn(queue), c2, {}), home);
    homes.insert(home);
  }
  EXPECT_EQ(homes.size(), 3u);  // 30 queues over 3 sub-clusters use all of them
  // Excluding a queue's home moves it elsewhere.
  std::string home = *p->ChooseHome(AppIn("queue0"), c1, {});
  auto moved = p->ChooseHome(AppIn("queue0"), c1, {home});
  ASSERT_TRUE(moved.ok());
  EXPECT_NE(*moved, home);
}

TEST(WeightedRandomRouterPolicyTest, SharesFollowWeights) {
  TestContext t({"a", "b", "c"}, 2024);
  (*t.config.mutable_router_weights())["a"] = 1;
  (*t.config.mutable_router_weights())["b"] = 3;
  (*t.config.mutable_router_weights())["c"] = 0;
  auto n = Shares(*Router("weighted-random"), t, 20000);
  EXPECT_EQ(n.count("c"), 0u);
  EXPECT_NEAR(n["a"] / 20000.0, 0.25, 0.015);
  EXPECT_NEAR(n["b"] / 20000.0, 0.75, 0.015);
}

TEST(WeightedRandomRouterPolicyTest, EmptyWeightsWeighEveryoneOne) {
  TestContext t({"a", "b", "c"}, 5);
  auto n = Shares(*Router("weighted-random"), t, 15000);
  for (const char* id : {"a", "b", "c"}) EXPECT_NEAR(n[id] / 15000.0, 1 / 3.0, 0.02) << id;
}

TEST(WeightedRandomRouterPolicyTest, AllZeroWeightsAreUnavailable) {
  TestContext t({"a", "b"});
  (*t.config.mutable_router_weights())["a"] = 0;
  PolicyContext ctx = t.ctx();
  auto home = Router("weighted-random")->ChooseHome(AppIn("etl"), ctx, {});
  EXPECT_EQ(home.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(home.status().message(), HasSubstr("'etl'"));
}

TEST(PriorityRouterPolicyTest, HighestWeightWinsTiesById) {
  TestContext t({"a", "b", "c"});
  (*t.config.mutable_router_weights())["a"] = 1;
  (*t.config.mutable_router_weights())["b"] = 5;
  (*t.config.mutable_router_weights())["c"] = 5;
  PolicyContext ctx = t.ctx();
  auto p = Router("priority");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "b");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {"b"}), "c");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {"b", "c"}), "a");
  EXPECT_EQ(p->ChooseHome(AppIn("q"), ctx, {"a", "b", "c"}).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(LocalityRouterPolicyTest, HomesWhereThePreferredDataIs) {
  TestContext t({"a", "b", "c"}, 3);
  t.resolver.AddNode("n1", "a", "/r1");
  t.resolver.AddNode("n2", "b", "/r2");
  t.resolver.AddNode("n3", "c", "/r3");
  PolicyContext ctx = t.ctx();
  auto p = Router("locality");
  EXPECT_EQ(*p->ChooseHome(AppIn("q", {"unknown", "n2", "n3"}), ctx, {}), "b");
  EXPECT_EQ(*p->ChooseHome(AppIn("q", {"n3:8041"}), ctx, {}), "c");
  EXPECT_EQ(*p->ChooseHome(AppIn("q", {"/R1"}), ctx, {}), "a");
  // The first preferred node's sub-cluster is excluded: the next one's.
  EXPECT_EQ(*p->ChooseHome(AppIn("q", {"n2", "n3"}), ctx, {"b"}), "c");
}

TEST(LocalityRouterPolicyTest, FallsBackToWeightedRandom) {
  TestContext t({"a", "b", "c"}, 3);
  t.resolver.AddNode("n1", "a", "/r1");
  (*t.config.mutable_router_weights())["a"] = 0;
  (*t.config.mutable_router_weights())["b"] = 1;
  (*t.config.mutable_router_weights())["c"] = 1;
  auto n = Shares(*Router("locality"), t, 4000, AppIn("q", {"n1", "nowhere"}));
  EXPECT_EQ(n.count("a"), 0u);  // n1's sub-cluster has weight 0
  EXPECT_NEAR(n["b"] / 4000.0, 0.5, 0.04);
  // No resolver at all.
  PolicyContext ctx = t.ctx();
  ctx.resolver = nullptr;
  auto home = Router("locality")->ChooseHome(AppIn("q", {"n1"}), ctx, {});
  ASSERT_TRUE(home.ok());
  EXPECT_NE(*home, "a");
}

TEST(LoadBasedRouterPolicyTest, MostAvailableMemoryTiesById) {
  TestContext t({});
  t.active = {Info("a", 100), Info("b", 500), Info("c", 500)};
  PolicyContext ctx = t.ctx();
  auto p = Router("load-based");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "b");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {"b"}), "c");
  (*t.config.mutable_router_weights())["a"] = 1;
  (*t.config.mutable_router_weights())["c"] = 1;  // b weighs 0
  ctx = t.ctx();
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "c");
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {"c"}), "a");
}

TEST(LoadBasedRouterPolicyTest, InFlightPlacementsCountAsLoad) {
  TestContext t({});
  t.active = {Info("a", 10000), Info("b", 9000)};
  t.with_in_flight = true;
  auto p = Router("load-based");
  PolicyContext ctx = t.ctx();
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "a");
  // Two AMs of 1 GB placed on a since its snapshot: 7952 MB left there, less than b's 9000.
  t.in_flight["a"] = {2, 2048};
  ctx = t.ctx();
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "b");
  // Ignored by a caller that does not pass them.
  t.with_in_flight = false;
  ctx = t.ctx();
  EXPECT_EQ(*p->ChooseHome(AppIn("q"), ctx, {}), "a");
}

TEST(LoadBasedRouterPolicyTest, InFlightAppsCountAtLeastTheSnapshotsMeanAppSize) {
  TestContext t({});
  t.active = {Info("a", 100000), Info("b", 95000)};
  *t.active[0].mutable_used() = Memory(50000);
  t.active[0].set_apps_running(4);
  t.active[0].set_apps_pending(1);  // 50000 MB over 5 apps: 10000 MB each
  t.with_in_flight = true;
  t.in_flight["a"] = {1, 1024};  // its AM alone would leave a ahead (98976 > 95000)
  PolicyContext ctx = t.ctx();
  EXPECT_EQ(internal::InFlightMemoryMb(ctx, t.active[0]), 10000);
  EXPECT_EQ(internal::InFlightMemoryMb(ctx, t.active[1]), 0);
  EXPECT_EQ(*Router("load-based")->ChooseHome(AppIn("q"), ctx, {}), "b");
  // No apps in the snapshot: the AM memory is the whole charge.
  t.active[0].set_apps_running(0);
  t.active[0].set_apps_pending(0);
  ctx = t.ctx();
  EXPECT_EQ(internal::InFlightMemoryMb(ctx, t.active[0]), 1024);
}

// Two candidates drawn, the freer one chosen: the most loaded of three is never the home, the
// least loaded is when drawn (2 in 3), the middle one when drawn with the most loaded (1 in 3).
TEST(PowerOfTwoRouterPolicyTest, TheFreerOfTwoDrawnByWeightAndNeverTheMostLoaded) {
  TestContext t({}, 7);
  t.active = {Info("a", 10100), Info("b", 10000), Info("c", 9900)};
  auto n = Shares(*Router("power-of-two"), t, 6000);
  EXPECT_EQ(n.count("c"), 0u);
  EXPECT_NEAR(n["a"] / 6000.0, 2.0 / 3, 0.04);
  EXPECT_NEAR(n["b"] / 6000.0, 1.0 / 3, 0.04);
  // One candidate left (the others excluded or weighing 0): that one.
  PolicyContext ctx = t.ctx();
  EXPECT_EQ(*Router("power-of-two")->ChooseHome(AppIn("q"), ctx, {"a", "b"}), "c");
  (*t.config.mutable_router_weights())["a"] = 0;
  (*t.config.mutable_router_weights())["b"] = 0;
  (*t.config.mutable_router_weights())["c"] = 1;
  ctx = t.ctx();
  EXPECT_EQ(*Router("power-of-two")->ChooseHome(AppIn("q"), ctx, {}), "c");
  // In-flight placements count as load, as for load-based.
  TestContext f({}, 7);
  f.active = {Info("a", 10000), Info("b", 9000)};
  f.with_in_flight = true;
  f.in_flight["a"] = {2, 2048};
  EXPECT_EQ(Shares(*Router("power-of-two"), f, 200)["b"], 200);
}

// Thirty routers, each with its own ledger, place one app each against the same stale snapshot
// (what "in-flight accounting covers one router's own placements" means): load-based sends all
// thirty to the sub-cluster that looked least loaded; power-of-two spreads them.
TEST(PowerOfTwoRouterPolicyTest, RoutersWithStaleSnapshotsDoNotHerd) {
  for (const char* name : {"load-based", "power-of-two"}) {
    TestContext t({}, 11);
    t.active = {Info("a", 10100), Info("b", 10000), Info("c", 10000), Info("d", 10000)};
    std::map<std::string, int> homes;
    for (int router = 0; router < 30; ++router) {
      InFlightLedger own;
      PolicyContext ctx = t.ctx();
      ctx.in_flight = &own.Outstanding(ctx.active);
      auto home = Router(name)->ChooseHome(AppIn("q"), ctx, {});
      ASSERT_TRUE(home.ok()) << home.status();
      ++homes[*home];
    }
    if (std::string(name) == "load-based") {
      EXPECT_EQ(homes, (std::map<std::string, int>{{"a", 30}}));
    } else {
      EXPECT_GE(homes.size(), 3u) << name;
      EXPECT_LT(homes["a"], 25) << name;
    }
  }
}

// Nine submissions read against one snapshot (nothing heartbeats in between): without in-flight
// accounting all nine go to the sub-cluster that looked least loaded; with a ledger they spread.
TEST(LoadBasedRouterPolicyTest, OneStaleSnapshotHerdsWithoutInFlightAndSpreadsWithIt) {
  auto p = Router("load-based");
  for (bool in_flight : {false, true}) {
    TestContext t({});
    t.active = {Info("a", 10100), Info("b", 10000), Info("c", 10000)};
    for (auto& info : t.active) info.set_last_heartbeat_ms(0);
    InFlightLedger ledger;
    std::map<std::string, int> homes;
    for (int64_t now = 1; now <= 9; ++now) {
      PolicyContext ctx = t.ctx();
      if (in_flight) ctx.in_flight = &ledger.Outstanding(ctx.active);
      auto home = p->ChooseHome(AppIn("q"), ctx, {});
      ASSERT_TRUE(home.ok()) << home.status();
      ++homes[*home];
      ledger.Placed(*home, 1024, now);
    }
    if (in_flight) {
      EXPECT_EQ(homes, (std::map<std::string, int>{{"a", 3}, {"b", 3}, {"c", 3}}));
    } else {
      EXPECT_EQ(homes, (std::map<std::string, int>{{"a", 9}}));
    }
  }
}

// --- InFlightLedger -----------------------------------------------------------------------

TEST(InFlightLedgerTest, AHeartbeatSettleMsAfterAPlacementShowsIt) {
  InFlightLedger ledger(/*settle_ms=*/100);
  ledger.Placed("a", 1024, 1000);
  ledger.Placed("a", 2048, 1500);
  ledger.Placed("b", -5, 1000);  // a negative AM memory counts as 0
  std::vector<v1::SubClusterInfo> active = {Info("a"), Info("b")};
  active[0].set_last_heartbeat_ms(1099);  // before 1000 + 100: shows neither
  active[1].set_last_heartbeat_ms(0);
  const InFlightLoads& l1 = ledger.Outstanding(active);
  ASSERT_EQ(l1.size(), 2u);
  EXPECT_EQ(l1.at("a").apps, 2);
  EXPECT_EQ(l1.at("a").memory_mb, 3072);
  EXPECT_EQ(l1.at("b").apps, 1);
  EXPECT_EQ(l1.at("b").memory_mb, 0);
  active[0].set_last_heartbeat_ms(1100);  // shows the first placement, not the second
  const InFlightLoads& l2 = ledger.Outstanding(active);
  EXPECT_EQ(l2.at("a").apps, 1);
  EXPECT_EQ(l2.at("a").memory_mb, 2048);
  EXPECT_EQ(ledger.size(), 2u);
  active[0].set_last_heartbeat_ms(5000);
  active[1].set_last_heartbeat_ms(5000);
  EXPECT_TRUE(ledger.Outstanding(active).empty());
  EXPECT_EQ(ledger.size(), 0u);
}

TEST(InFlightLedgerTest, ForgetsSubClustersThatAreNotActive) {
  InFlightLedger ledger;
  ledger.Placed("gone", 1024, 10);
  ledger.Placed("a", 1024, 10);
  std::vector<v1::SubClusterInfo> active = {Info("a")};
  const InFlightLoads& l = ledger.Outstanding(active);
  EXPECT_EQ(l.size(), 1u);
  EXPECT_TRUE(l.contains("a"));
  EXPECT_EQ(ledger.size(), 1u);
}

TEST(RejectRouterPolicyTest, RefusesNamingTheQueue) {
  TestContext t({"a"});
  PolicyContext ctx = t.ctx();
  auto home = Router("reject")->ChooseHome(AppIn("adhoc"), ctx, {});
  EXPECT_EQ(home.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(home.status().message(), HasSubstr("'adhoc'"));
}

// --- AMRMProxy policies ------------------------------------------------------------------

TEST(HomeOnlyAmrmPolicyTest, EverythingToHome) {
  TestContext t({"a", "b"});
  t.resolver.AddNode("n1", "b", "/r1");
  PolicyContext ctx = t.ctx();
  std::vector<v1::ResourceRequest> asks = {Ask("n1", 2), Ask("/r1", 2), Ask("*", 5)};
  auto split = Amrm("home-only")->SplitResourceRequests(asks, "a", {}, ctx);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->size(), 1u);
  EXPECT_EQ(split->at("a").size(), 3u);
  auto lost = Amrm("home-only")->SplitResourceRequests(asks, "gone", {}, ctx);
  EXPECT_EQ(lost.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lost.status().message(), HasSubstr("'gone'"));
}

TEST(BroadcastAmrmPolicyTest, EveryAskToEveryActiveSubCluster) {
  TestContext t({"a", "b", "c"});
  PolicyContext ctx = t.ctx();
  std::vector<v1::ResourceRequest> asks = {Ask("n1", 2), Ask("*", 5)};
  auto split = Amrm("broadcast")->SplitResourceRequests(asks, "b", {}, ctx);
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->size(), 3u);
  for (const auto& [id, parts] : *split) {
    ASSERT_EQ(parts.size(), 2u) << id;
    EXPECT_EQ(parts[1].num_containers(), 5) << id;
  }
}

class LocalityMulticastTest : public ::testing::Test {
 protected:
  LocalityMulticastTest() : t_({"a", "b", "c"}) {
    t_.resolver.AddNode("a1", "a", "/ra");
    t_.resolver.AddNode("b1", "b", "/rb");
    t_.resolver.AddNode("b2", "b", "/rb");
    t_.resolver.AddNode("c1", "c", "/rbc");
    t_.resolver.AddNode("b3", "b", "/rbc");
    t_.resolver.AddNode("z1", "z", "/rz");  // z: not active
  }
  std::map<std::string, std::vector<v1::ResourceRequest>> Split(
      const std::vector<v1::ResourceRequest>& asks, const std::string& home = "a",
      const std::map<std::string, v1::Resource>& headroom = {}) {
    PolicyContext ctx = t_.ctx();
    auto split = policy_->SplitResourceRequests(asks, home, headroom, ctx);
    EXPECT_TRUE(split.ok()) << split.status();
    return split.ok() ? *split : std::map<std::string, std::vector<v1::ResourceRequest>>{};
  }
  static std::vector<std::string> Names(const std::vector<v1::ResourceRequest>& asks) {
    std::vector<std::string> names;
    for (const auto& rr : asks) {
      if (rr.resource_name() != "*") names.push_back(rr.resource_name());
    }
    return names;
  }
  TestContext t_;
  std::unique_ptr<AmrmPolicy> policy_ = Amrm("locality-multicast");
};

TEST_F(LocalityMulticastTest, NodeAndRackAsksGoToTheirOwners) {
  auto split = Split({Ask("b1", 1), Ask("/rb", 1), Ask("c1", 1), Ask("/rbc", 2), Ask("nowhere", 1),
                      Ask("z1", 1), Ask("/rnone", 1)});
  EXPECT_THAT(Names(split["a"]), UnorderedElementsAre("nowhere", "z1", "/rnone"));
  EXPECT_THAT(Names(split["b"]), UnorderedElementsAre("b1", "/rb", "/rbc"));
  EXPECT_THAT(Names(split["c"]), UnorderedElementsAre("c1", "/rbc"));
}

TEST_F(LocalityMulticastTest, AnyFollowsNodesThatAllLiveInOneSubCluster) {
  auto split = Split({Ask("b1", 3), Ask("b2", 2), Ask("/rb", 5), Ask("*", 5)});
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 0}, {"b", 5}, {"c", 0}}));
}

TEST_F(LocalityMulticastTest, AnySplitsInProportionToNodeAsks) {
  auto split = Split({Ask("b1", 3), Ask("c1", 1), Ask("*", 8)});
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 0}, {"b", 6}, {"c", 2}}));
}

TEST_F(LocalityMulticastTest, AnyWithoutLocalityFollowsWeights) {
  (*t_.config.mutable_amrm_weights())["a"] = 1;
  (*t_.config.mutable_amrm_weights())["b"] = 3;
  (*t_.config.mutable_amrm_weights())["c"] = 0;
  auto split = Split({Ask("*", 8)});
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 2}, {"b", 6}}));
}

TEST_F(LocalityMulticastTest, AnyWithoutLocalityFollowsHeadroomWithAlphaOne) {
  t_.config.set_headroom_alpha(1.0);
  auto split =
      Split({Ask("*", 10)}, "a", {{"a", Memory(1000)}, {"b", Memory(4000)}, {"c", Memory(5000)}});
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 1}, {"b", 4}, {"c", 5}}));
  // Half and half: a 0.5*0.1 + 0.5/3, b 0.5*0.4 + 0.5/3, c 0.5*0.5 + 0.5/3 of 12.
  t_.config.set_headroom_alpha(0.5);
  split =
      Split({Ask("*", 12)}, "a", {{"a", Memory(1000)}, {"b", Memory(4000)}, {"c", Memory(5000)}});
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 3}, {"b", 4}, {"c", 5}}));
}

TEST_F(LocalityMulticastTest, RemaindersGoHomeFirst) {
  auto split = Split({Ask("*", 7)}, "c");
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 2}, {"b", 2}, {"c", 3}}));
  split = Split({Ask("*", 1)}, "b");
  EXPECT_THAT(AnyCounts(split), (std::map<std::string, int64_t>{{"a", 0}, {"b", 1}, {"c", 0}}));
}

TEST_F(LocalityMulticastTest, StrictLocalityStaysWithItsNodesWhateverTheWeight) {
  (*t_.config.mutable_amrm_weights())["a"] = 1;
  (*t_.config.mutable_amrm_weights())["b"] = 0;
  auto strict = Split({Ask("b1", 2, 1, false), Ask("*", 2, 1, false)});
  EXPECT_THAT(AnyCounts(strict), (std::map<std::string, int64_t>{{"a", 0}, {"b", 2}}));
  // Relaxable: b weighs 0, so `*` goes by weights (all to a).
  auto relaxed = Split({Ask("b1", 2), Ask("*", 2)});
  EXPECT_THAT(AnyCounts(relaxed), (std::map<std::string, int64_t>{{"a", 2}, {"b", 0}}));
}

TEST_F(LocalityMulticastTest, GroupsAreSplitSeparately) {
  // Priority 1 asks for nodes of b; priority 2 has no locality; allocation id 7 asks c1.
  auto split = Split({Ask("b1", 4, 1), Ask("*", 4, 1), Ask("*", 3, 2), Ask("c1", 2, 1, true, 7),
                      Ask("*", 2, 1, true, 7)});
  std::map<std::string, int64_t> id0, id7;
  for (const auto& [id, asks] : split) {
    for (const auto& rr : asks) {
      if (rr.resource_name() != "*" || rr.priority() != 1) continue;
      (rr.allocation_request_id() == 7 ? id7 : id0)[id] += rr.num_containers();
    }
  }
  EXPECT_EQ(id0["b"], 4);
  EXPECT_EQ(id7["c"], 2);
  EXPECT_THAT(AnyCounts(split, 2), (std::map<std::string, int64_t>{{"a", 1}, {"b", 1}, {"c", 1}}));
}

TEST_F(LocalityMulticastTest, SplitsSumToTheAsk) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    t_.config.clear_amrm_weights();
    for (const char* id : {"a", "b", "c"}) {
      (*t_.config.mutable_amrm_weights())[id] = static_cast<double>(rng() % 4);
    }
    t_.config.set_headroom_alpha(static_cast<double>(rng() % 11) / 10);
    std::map<std::string, v1::Resource> headroom;
    for (const char* id : {"a", "b"}) headroom[id] = Memory(static_cast<int64_t>(rng() % 10000));
    int32_t count = static_cast<int32_t>(rng() % 50);
    std::vector<v1::ResourceRequest> asks = {Ask("*", count)};
    if (rng() % 2) asks.push_back(Ask("b1", static_cast<int32_t>(rng() % 5)));
    if (rng() % 2) asks.push_back(Ask("c1", static_cast<int32_t>(rng() % 5)));
    auto counts = AnyCounts(Split(asks, "a", headroom));
    int64_t sum = 0;
    for (const auto& [id, n] : counts) {
      sum += n;
      EXPECT_GE(n, 0);
    }
    EXPECT_EQ(sum, count) << "trial " << trial;
  }
}

TEST(LargestRemainderSplitTest, SumsExactly) {
  using internal::LargestRemainderSplit;
  EXPECT_THAT(LargestRemainderSplit(10, std::vector<double>{1, 1, 1}), ElementsAre(4, 3, 3));
  EXPECT_THAT(LargestRemainderSplit(5, std::vector<double>{0, 0}), ElementsAre(5, 0));
  EXPECT_THAT(LargestRemainderSplit(5, std::vector<double>{0, 2}), ElementsAre(0, 5));
  EXPECT_THAT(LargestRemainderSplit(0, std::vector<double>{1, 2}), ElementsAre(0, 0));
  EXPECT_THAT(LargestRemainderSplit(3, std::vector<double>{0.2, 0.3, 0.5}), ElementsAre(1, 1, 1));
}

// --- Registry ----------------------------------------------------------------------------

TEST(RegistryTest, NamesEqualTheStoresLists) {
  std::vector<std::string> router(std::begin(kRouterPolicyNames), std::end(kRouterPolicyNames));
  std::vector<std::string> amrm(std::begin(kAmrmPolicyNames), std::end(kAmrmPolicyNames));
  EXPECT_EQ(RouterPolicyNames(), router);
  EXPECT_EQ(AmrmPolicyNames(), amrm);
  for (const auto& name : RouterPolicyNames()) EXPECT_EQ(Router(name)->name(), name);
  for (const auto& name : AmrmPolicyNames()) EXPECT_EQ(Amrm(name)->name(), name);
}

TEST(RegistryTest, UnknownNamesAreRefusedListingTheKnownOnes) {
  auto r = MakeRouterPolicy("round-robin");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("'round-robin'"));
  EXPECT_THAT(r.status().message(), HasSubstr("load-based"));
  auto a = MakeAmrmPolicy("multicast");
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(a.status().message(), HasSubstr("locality-multicast"));
}

TEST(RegistryTest, DefaultConfiguration) {
  v1::SubClusterPolicyConfiguration c = DefaultPolicyConfiguration();
  EXPECT_EQ(c.queue(), "*");
  EXPECT_EQ(c.router_policy(), "uniform");
  EXPECT_EQ(c.amrm_policy(), "home-only");
  EXPECT_TRUE(c.router_weights().empty());
  EXPECT_TRUE(c.amrm_weights().empty());
}

}  // namespace
}  // namespace weft::federation
