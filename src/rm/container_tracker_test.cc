// Copyright Weft authors. ContainerTracker: names, tokens, and one end per container.
#include "rm/container_tracker.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"
#include "security/tokens.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// An app with a registered AM holding `n` task containers; their names in `names`.
struct Running {
  std::string app;
  v1::Token token;
  std::vector<v1::Container> containers;
  int32_t response_id = 0;
};

Running StartWithTasks(RmHarness& h, int n) {
  Running r;
  r.app = h.Submit();
  h.loop.Advance(200);
  r.token = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(n);
  auto reply = h.rm().Allocate(r.token, ask);
  EXPECT_TRUE(reply.ok());
  h.loop.Advance(200);
  v1::AllocateRequest poll;
  poll.set_response_id(reply->response_id());
  reply = h.rm().Allocate(r.token, poll);
  EXPECT_TRUE(reply.ok());
  r.response_id = reply->response_id();
  for (const auto& c : reply->allocated_containers()) r.containers.push_back(c);
  return r;
}

TEST(ContainerTrackerTest, NamesCarryTheEpochAndTokensNameTheNodeAndUser) {
  RmHarness h;
  h.AddNode("h1:1");
  Running r = StartWithTasks(h, 2);
  ASSERT_EQ(r.containers.size(), 2u);
  for (const v1::Container& c : r.containers) {
    EXPECT_THAT(c.container_id(), StartsWith(absl::StrCat("container_e", h.rm().epoch(), "_")));
    EXPECT_EQ(c.node_id(), "h1:1");
    auto data = security::DecodeContainerToken(c.container_token().identifier());
    ASSERT_TRUE(data.ok());
    EXPECT_EQ(data->container_id, c.container_id());
    EXPECT_EQ(data->node_id, "h1:1");
    EXPECT_EQ(data->user, "alice");
    EXPECT_EQ(data->app_id, r.app);
  }
  EXPECT_NE(r.containers[0].container_id(), r.containers[1].container_id());
}

TEST(ContainerTrackerTest, ACompletionReportedTwiceEndsTheContainerOnce) {
  RmHarness h;
  h.AddNode("h1:1");
  Running r = StartWithTasks(h, 1);
  ASSERT_EQ(r.containers.size(), 1u);
  const std::string name = r.containers[0].container_id();
  const int64_t before = h.rm().containers_completed();
  h.Heartbeat("h1:1", {{name, 0}});
  h.Heartbeat("h1:1", {{name, 0}});  // a retried heartbeat
  EXPECT_EQ(h.rm().containers_completed(), before + 1);
  v1::AllocateRequest poll;
  poll.set_response_id(r.response_id);
  auto reply = h.rm().Allocate(r.token, poll);
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->completed_containers_size(), 1);
  EXPECT_EQ(reply->completed_containers(0).container_id(), name);
  EXPECT_EQ(reply->completed_containers(0).exit_status(), 0);
  EXPECT_EQ(h.rm().GetApplication(r.app)->running_containers(), 1);  // the AM
}

TEST(ContainerTrackerTest, AReleasedContainerIsStoppedOnItsNodeAndChargedToItsApp) {
  RmHarness h;
  h.AddNode("h1:1");
  Running r = StartWithTasks(h, 1);
  ASSERT_EQ(r.containers.size(), 1u);
  h.loop.Advance(3000);  // held for 3 s
  v1::AllocateRequest release;
  release.set_response_id(r.response_id);
  release.add_releases(r.containers[0].container_id());
  ASSERT_TRUE(h.rm().Allocate(r.token, release).ok());
  v1::NodeHeartbeatResponse hb = h.Heartbeat("h1:1");
  ASSERT_EQ(hb.containers_to_cleanup_size(), 1);
  EXPECT_EQ(hb.containers_to_cleanup(0), r.containers[0].container_id());
  // 1024 MB for >= 3 s, plus the AM's share so far.
  auto report = h.rm().GetApplication(r.app);
  EXPECT_GE(report->resource_seconds().values().at("memory-mb"), 3 * 1024);
  // Releasing it again is ignored, as YARN does (the AM may not have heard of its end yet);
  // the node is not told to clean it up a second time.
  v1::AllocateRequest again;
  again.set_response_id(r.response_id + 1);
  again.add_releases(r.containers[0].container_id());
  EXPECT_TRUE(h.rm().Allocate(r.token, again).ok());
  EXPECT_EQ(h.Heartbeat("h1:1").containers_to_cleanup_size(), 0);
}

}  // namespace
}  // namespace weft::rm
