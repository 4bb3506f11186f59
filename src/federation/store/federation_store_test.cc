// Copyright Weft authors. The store's pure helpers: sub-cluster ids, the usability rule and the
// policy configuration checks (the stores themselves: federation_store_conformance_test.cc).
#include "federation/store/federation_store.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;

TEST(ValidateSubClusterIdTest, AcceptsOneTo64OfTheAllowedCharacters) {
  for (const std::string& id :
       std::vector<std::string>{"a", "sc1", "SC_1.east-2", std::string(64, 'z'), "..", "-"}) {
    EXPECT_TRUE(ValidateSubClusterId(id).ok()) << id;
  }
}

TEST(ValidateSubClusterIdTest, RefusesOthersNamingTheProblem) {
  EXPECT_THAT(ValidateSubClusterId("").message(), HasSubstr("empty"));
  EXPECT_THAT(ValidateSubClusterId(std::string(65, 'z')).message(), HasSubstr("65 characters"));
  for (const std::string& id :
       std::vector<std::string>{"a/b", "a b", "sc1\n", std::string("a\0b", 3), "é", "a:1"}) {
    absl::Status s = ValidateSubClusterId(id);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << id;
    EXPECT_THAT(s.message(), HasSubstr("has the character")) << s;
  }
}

v1::SubClusterInfo Info(v1::SubClusterState state, int64_t last_heartbeat_ms) {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id("sc1");
  info.set_state(state);
  info.set_last_heartbeat_ms(last_heartbeat_ms);
  return info;
}

TEST(IsSubClusterUsableTest, RunningAndHeardFromWithinTheExpiry) {
  constexpr int64_t kNow = 1'700'000'000'000;
  EXPECT_TRUE(IsSubClusterUsable(Info(v1::SC_RUNNING, kNow), kNow, 30'000));
  EXPECT_TRUE(IsSubClusterUsable(Info(v1::SC_RUNNING, kNow - 30'000), kNow, 30'000));
  EXPECT_FALSE(IsSubClusterUsable(Info(v1::SC_RUNNING, kNow - 30'001), kNow, 30'000));
  // A heartbeat stamped ahead of the reader's clock (skew) is fresh.
  EXPECT_TRUE(IsSubClusterUsable(Info(v1::SC_RUNNING, kNow + 5'000), kNow, 30'000));
  for (v1::SubClusterState state :
       {v1::SUB_CLUSTER_STATE_UNSPECIFIED, v1::SC_NEW, v1::SC_UNHEALTHY, v1::SC_DECOMMISSIONING,
        v1::SC_DECOMMISSIONED, v1::SC_LOST, v1::SC_UNREGISTERED}) {
    EXPECT_FALSE(IsSubClusterUsable(Info(state, kNow), kNow, 30'000)) << state;
  }
}

TEST(IsSubClusterUsableTest, ExtremeValuesDoNotOverflow) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_FALSE(IsSubClusterUsable(Info(v1::SC_RUNNING, kMin), kMax, kMax));
  EXPECT_TRUE(IsSubClusterUsable(Info(v1::SC_RUNNING, 0), kMax, kMax));
  EXPECT_FALSE(IsSubClusterUsable(Info(v1::SC_RUNNING, 0), 1, -1));
  EXPECT_TRUE(IsSubClusterUsable(Info(v1::SC_RUNNING, kMax), kMin, 0));
}

v1::SubClusterPolicyConfiguration Good() {
  v1::SubClusterPolicyConfiguration c;
  c.set_queue("root.a");
  c.set_router_policy("weighted-random");
  c.set_amrm_policy("broadcast");
  (*c.mutable_router_weights())["sc1"] = 0;
  (*c.mutable_router_weights())["sc2"] = 2.5;
  (*c.mutable_amrm_weights())["sc1"] = 1;
  c.set_headroom_alpha(1);
  return c;
}

TEST(ValidatePolicyConfigurationTest, AcceptsEveryKnownPolicyName) {
  EXPECT_TRUE(ValidatePolicyConfiguration(Good()).ok());
  for (absl::string_view name : kRouterPolicyNames) {
    v1::SubClusterPolicyConfiguration c = Good();
    c.set_router_policy(std::string(name));
    EXPECT_TRUE(ValidatePolicyConfiguration(c).ok()) << name;
  }
  for (absl::string_view name : kAmrmPolicyNames) {
    v1::SubClusterPolicyConfiguration c = Good();
    c.set_amrm_policy(std::string(name));
    EXPECT_TRUE(ValidatePolicyConfiguration(c).ok()) << name;
  }
  v1::SubClusterPolicyConfiguration default_queue = Good();
  default_queue.set_queue("*");
  default_queue.clear_router_weights();
  default_queue.set_headroom_alpha(0);
  EXPECT_TRUE(ValidatePolicyConfiguration(default_queue).ok());
}

TEST(ValidatePolicyConfigurationTest, RefusesBadFieldsNamingThem) {
  struct Case {
    const char* name;
    void (*mutate)(v1::SubClusterPolicyConfiguration*);
    const char* message;
  };
  const Case cases[] = {
      {"empty queue", [](auto* c) { c->set_queue(""); }, "queue is empty"},
      {"control character", [](auto* c) { c->set_queue("root\n"); }, "control character"},
      {"unknown router policy", [](auto* c) { c->set_router_policy("round-robin"); },
       "router_policy 'round-robin' is not one of uniform, hashing"},
      {"empty router policy", [](auto* c) { c->set_router_policy(""); }, "router_policy ''"},
      {"unknown amrm policy", [](auto* c) { c->set_amrm_policy("uniform"); },
       "amrm_policy 'uniform'"},
      {"negative weight", [](auto* c) { (*c->mutable_router_weights())["sc3"] = -0.5; },
       "router_weights['sc3'] = -0.5 is negative"},
      {"nan weight", [](auto* c) { (*c->mutable_amrm_weights())["sc3"] = std::nan(""); },
       "amrm_weights['sc3'] = nan is not finite"},
      {"infinite weight",
       [](auto* c) {
         (*c->mutable_amrm_weights())["sc3"] = std::numeric_limits<double>::infinity();
       },
       "is not finite"},
      {"bad weight key", [](auto* c) { (*c->mutable_router_weights())["s c"] = 1; },
       "router_weights key: sub-cluster id 's c'"},
      {"alpha above 1", [](auto* c) { c->set_headroom_alpha(1.01); }, "headroom_alpha 1.01"},
      {"alpha below 0", [](auto* c) { c->set_headroom_alpha(-0.1); }, "headroom_alpha -0.1"},
      {"nan alpha", [](auto* c) { c->set_headroom_alpha(std::nan("")); }, "headroom_alpha nan"},
  };
  for (const Case& test : cases) {
    v1::SubClusterPolicyConfiguration c = Good();
    test.mutate(&c);
    absl::Status s = ValidatePolicyConfiguration(c);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << test.name << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr(test.message)) << test.name;
  }
}

}  // namespace
}  // namespace weft::federation
