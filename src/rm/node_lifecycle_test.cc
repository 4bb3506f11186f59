// Copyright Weft authors.
#include "rm/node_lifecycle.h"

#include <gtest/gtest.h>

#include "store/state_names.h"

namespace weft::rm {
namespace {

TEST(NodeLifecycleTest, ANodeRunsFromItsRegistrationUntilItIsLost) {
  EXPECT_EQ(*NextNodeState(v1::NODE_NEW, NodeEvent::kRegistered), v1::NODE_RUNNING);
  EXPECT_EQ(*NextNodeState(v1::NODE_RUNNING, NodeEvent::kUnhealthy), v1::NODE_UNHEALTHY);
  EXPECT_EQ(*NextNodeState(v1::NODE_UNHEALTHY, NodeEvent::kHealthy), v1::NODE_RUNNING);
  EXPECT_EQ(*NextNodeState(v1::NODE_UNHEALTHY, NodeEvent::kExpired), v1::NODE_LOST);
  EXPECT_EQ(*NextNodeState(v1::NODE_RUNNING, NodeEvent::kExpired), v1::NODE_LOST);
  // A lost node comes back by registering; an NM that restarts registers while running.
  EXPECT_EQ(*NextNodeState(v1::NODE_LOST, NodeEvent::kRegistered), v1::NODE_RUNNING);
  EXPECT_EQ(*NextNodeState(v1::NODE_RUNNING, NodeEvent::kRegistered), v1::NODE_RUNNING);
}

TEST(NodeLifecycleTest, ADecommissionedNodeComesBackOnlyThroughRecommissioning) {
  for (v1::NodeState s : {v1::NODE_RUNNING, v1::NODE_UNHEALTHY, v1::NODE_LOST}) {
    EXPECT_EQ(*NextNodeState(s, NodeEvent::kDecommissioned), v1::NODE_DECOMMISSIONED)
        << store::NodeStateName(s);
  }
  absl::StatusOr<v1::NodeState> again =
      NextNodeState(v1::NODE_DECOMMISSIONED, NodeEvent::kRegistered);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(again.status().message(),
            "node in state DECOMMISSIONED cannot take event 'registered'");
  EXPECT_EQ(*NextNodeState(v1::NODE_DECOMMISSIONED, NodeEvent::kRecommissioned), v1::NODE_LOST);
}

TEST(NodeLifecycleTest, LateEventsAreRefused) {
  // A lost node's heartbeat health, an expiry of a node already gone, a second decommission.
  EXPECT_FALSE(NextNodeState(v1::NODE_LOST, NodeEvent::kHealthy).ok());
  EXPECT_FALSE(NextNodeState(v1::NODE_LOST, NodeEvent::kExpired).ok());
  EXPECT_FALSE(NextNodeState(v1::NODE_DECOMMISSIONED, NodeEvent::kExpired).ok());
  EXPECT_FALSE(NextNodeState(v1::NODE_DECOMMISSIONED, NodeEvent::kDecommissioned).ok());
  EXPECT_FALSE(NextNodeState(v1::NODE_RUNNING, NodeEvent::kHealthy).ok());
  EXPECT_FALSE(NextNodeState(v1::NODE_RUNNING, NodeEvent::kRecommissioned).ok());
}

TEST(NodeLifecycleTest, NamesDropTheProtoPrefix) {
  EXPECT_EQ(store::NodeStateName(v1::NODE_UNHEALTHY), "UNHEALTHY");
  EXPECT_EQ(store::ReportedNodeState(v1::NODE_STATE_UNSPECIFIED), "NEW");
  EXPECT_TRUE(IsGone(v1::NODE_LOST));
  EXPECT_TRUE(IsGone(v1::NODE_DECOMMISSIONED));
  EXPECT_FALSE(IsGone(v1::NODE_UNHEALTHY));
}

}  // namespace
}  // namespace weft::rm
