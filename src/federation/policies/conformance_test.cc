// Copyright Weft authors. The conformance suite: properties every registered federation policy
// keeps, checked over random sub-cluster sets, weights, exclusions and asks. A new policy is
// covered as soon as registry.cc registers it.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "federation/policies/registry.h"
#include "federation/policies/test_util.h"
#include "gtest/gtest.h"

namespace weft::federation {
namespace {

using namespace ::weft::federation::testing;  // NOLINT

// A random federation: 1..5 active sub-clusters of "s0".."s5" (one registered in the resolver
// but never active), random router and AMRM weights (some 0, sometimes none), random loads.
TestContext RandomFederation(std::mt19937_64& rng) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    if (rng() % 3 != 0) ids.push_back("s" + std::to_string(i));
  }
  if (ids.empty()) ids.push_back("s0");
  TestContext t(ids, rng());
  for (auto& info : t.active) {
    *info.mutable_available() = Memory(static_cast<int64_t>(rng() % 5000));
    *info.mutable_used() = Memory(static_cast<int64_t>(rng() % 5000));
    info.set_apps_running(static_cast<int32_t>(rng() % 4));
  }
  // Sometimes in-flight placements (PolicyContext::in_flight), also on unknown sub-clusters.
  if (rng() % 2) {
    t.with_in_flight = true;
    for (int i = 0; i < 6; ++i) {
      if (rng() % 2) {
        t.in_flight["s" + std::to_string(i)] = {static_cast<int64_t>(rng() % 4),
                                                static_cast<int64_t>(rng() % 6000)};
      }
    }
  }
  bool router_weights = rng() % 2, amrm_weights = rng() % 2;
  for (const auto& id : ids) {
    if (router_weights && rng() % 4 != 0) {
      (*t.config.mutable_router_weights())[id] = static_cast<double>(rng() % 3);
    }
    if (amrm_weights && rng() % 4 != 0) {
      (*t.config.mutable_amrm_weights())[id] = static_cast<double>(rng() % 3);
    }
  }
  t.config.set_headroom_alpha(static_cast<double>(rng() % 5) / 4);
  for (int i = 0; i <= 5; ++i) {
    for (int n = 0; n < 2; ++n) {
      t.resolver.AddNode("h" + std::to_string(i) + "-" + std::to_string(n), "s" + std::to_string(i),
                         "/r" + std::to_string(i));
    }
  }
  return t;
}

class RouterConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RouterConformanceTest, ChoosesOnlyEligibleAndIsUnavailableWhenNoneIs) {
  auto policy = MakeRouterPolicy(GetParam());
  ASSERT_TRUE(policy.ok());
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 500; ++trial) {
    TestContext t = RandomFederation(rng);
    std::vector<std::string> exclude;
    for (const auto& info : t.active) {
      if (rng() % 4 == 0) exclude.push_back(info.sub_cluster_id());
    }
    std::set<std::string> eligible;
    for (const auto& info : t.active) {
      const auto& w = t.config.router_weights();
      bool weighted =
          w.empty() || (w.contains(info.sub_cluster_id()) && w.at(info.sub_cluster_id()) > 0);
      if (weighted &&
          std::find(exclude.begin(), exclude.end(), info.sub_cluster_id()) == exclude.end()) {
        eligible.insert(info.sub_cluster_id());
      }
    }
    auto app = AppIn("q" + std::to_string(rng() % 7), {"h" + std::to_string(rng() % 6) + "-0"});
    PolicyContext ctx = t.ctx();
    auto home = (*policy)->ChooseHome(app, ctx, exclude);
    if (GetParam() == "reject") {
      EXPECT_EQ(home.status().code(), absl::StatusCode::kPermissionDenied);
      continue;
    }
    if (eligible.empty()) {
      EXPECT_EQ(home.status().code(), absl::StatusCode::kUnavailable) << "trial " << trial;
    } else {
      ASSERT_TRUE(home.ok()) << "trial " << trial << ": " << home.status();
      EXPECT_TRUE(eligible.contains(*home)) << "trial " << trial << " chose " << *home;
    }
  }
}

TEST_P(RouterConformanceTest, SameSeedSameHomes) {
  auto policy = MakeRouterPolicy(GetParam());
  ASSERT_TRUE(policy.ok());
  std::mt19937_64 r1(5), r2(5);
  for (int trial = 0; trial < 100; ++trial) {
    TestContext t1 = RandomFederation(r1), t2 = RandomFederation(r2);
    PolicyContext c1 = t1.ctx(), c2 = t2.ctx();
    auto h1 = (*policy)->ChooseHome(AppIn("q", {"h1-0"}), c1, {});
    auto h2 = (*policy)->ChooseHome(AppIn("q", {"h1-0"}), c2, {});
    ASSERT_EQ(h1.ok(), h2.ok());
    if (h1.ok()) {
      EXPECT_EQ(*h1, *h2);
    }
  }
}

// A caller that tracks in-flight placements but has none gets the choices of one that tracks
// nothing.
TEST_P(RouterConformanceTest, EmptyInFlightIsNoInFlight) {
  auto policy = MakeRouterPolicy(GetParam());
  ASSERT_TRUE(policy.ok());
  std::mt19937_64 r1(9), r2(9);
  for (int trial = 0; trial < 100; ++trial) {
    TestContext t1 = RandomFederation(r1), t2 = RandomFederation(r2);
    t1.with_in_flight = false;
    t2.with_in_flight = true;
    t2.in_flight.clear();
    PolicyContext c1 = t1.ctx(), c2 = t2.ctx();
    auto h1 = (*policy)->ChooseHome(AppIn("q", {"h2-0"}), c1, {});
    auto h2 = (*policy)->ChooseHome(AppIn("q", {"h2-0"}), c2, {});
    ASSERT_EQ(h1.ok(), h2.ok()) << "trial " << trial;
    if (h1.ok()) {
      EXPECT_EQ(*h1, *h2) << "trial " << trial;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllRouterPolicies, RouterConformanceTest,
                         ::testing::ValuesIn(RouterPolicyNames()), [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

class AmrmConformanceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(AmrmConformanceTest, HomeIsAKeyCountsAddUpAndUnknownNodesGoHome) {
  auto policy = MakeAmrmPolicy(GetParam());
  ASSERT_TRUE(policy.ok());
  // Broadcast copies every ask to every sub-cluster; the others split it.
  const bool copies = GetParam() == "broadcast";
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 500; ++trial) {
    TestContext t = RandomFederation(rng);
    std::string home = t.active[rng() % t.active.size()].sub_cluster_id();
    std::vector<v1::ResourceRequest> asks;
    std::map<int32_t, int32_t> any_count;  // priority -> `*` count
    for (int32_t priority = 1; priority <= 3; ++priority) {
      int32_t count = static_cast<int32_t>(rng() % 20);
      bool relax = rng() % 4 != 0;
      for (int i = 0; i < 3; ++i) {
        if (rng() % 2) continue;
        // h5-*: the resolver knows them, but s5 is never active; "x*": unknown nodes.
        std::string node = rng() % 3 == 0
                               ? "x" + std::to_string(i)
                               : "h" + std::to_string(rng() % 6) + "-" + std::to_string(i % 2);
        asks.push_back(Ask(node, 1 + static_cast<int32_t>(rng() % 3), priority, relax));
      }
      asks.push_back(Ask("*", count, priority, relax));
      any_count[priority] = count;
    }
    std::map<std::string, v1::Resource> headroom;
    for (const auto& info : t.active) {
      if (rng() % 2) headroom[info.sub_cluster_id()] = Memory(static_cast<int64_t>(rng() % 8000));
    }
    PolicyContext ctx = t.ctx();
    auto split = (*policy)->SplitResourceRequests(asks, home, headroom, ctx);
    ASSERT_TRUE(split.ok()) << "trial " << trial << ": " << split.status();
    ASSERT_TRUE(split->contains(home)) << "trial " << trial;
    std::set<std::string> active;
    for (const auto& info : t.active) active.insert(info.sub_cluster_id());
    for (const auto& [id, parts] : *split) {
      EXPECT_TRUE(active.contains(id)) << "trial " << trial << ": asks sent to inactive " << id;
    }
    for (const auto& [priority, count] : any_count) {
      auto counts = AnyCounts(*split, priority);
      int64_t sum = 0;
      for (const auto& [id, n] : counts) {
        EXPECT_GE(n, 0);
        if (copies) {
          EXPECT_EQ(n, count) << id;
        }
        sum += n;
      }
      if (!copies) {
        EXPECT_EQ(sum, count) << "trial " << trial << " priority " << priority;
      }
    }
    // Asks for nodes no active sub-cluster owns reach the home.
    for (const auto& rr : asks) {
      if (rr.resource_name()[0] != 'x' && rr.resource_name()[1] != '5') continue;
      const auto& at_home = split->at(home);
      EXPECT_TRUE(std::any_of(at_home.begin(), at_home.end(),
                              [&](const v1::ResourceRequest& r) {
                                return r.resource_name() == rr.resource_name() &&
                                       r.priority() == rr.priority();
                              }))
          << "trial " << trial << ": " << rr.resource_name() << " not sent home";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllAmrmPolicies, AmrmConformanceTest,
                         ::testing::ValuesIn(AmrmPolicyNames()), [](const auto& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

}  // namespace
}  // namespace weft::federation
