// Copyright Weft authors. NodeTracker: registration, heartbeats, liveness and decommissioning.
#include "rm/node_tracker.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

TEST(NodeTrackerTest, BadRegistrationsAreRefusedAndAddNoNode) {
  RmHarness h;
  auto no_port = h.rm().RegisterNode(NodeRequest("host-without-port"));
  EXPECT_EQ(no_port.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_port.status().message(), HasSubstr("'host-without-port' is not host:port"));
  auto negative = h.rm().RegisterNode(NodeRequest("h1:1", -5, 4));
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("negative"));
  v1::RegisterNodeManagerRequest unknown_type = NodeRequest("h2:1");
  (*unknown_type.mutable_capability()->mutable_values())["qubits"] = 3;
  EXPECT_THAT(h.rm().RegisterNode(unknown_type).status().message(),
              HasSubstr("unknown resource type 'qubits'"));
  EXPECT_EQ(h.rm().ListNodes({}).nodes_size(), 0);
  EXPECT_EQ(h.rm().scheduler().num_nodes(), 0);
}

TEST(NodeTrackerTest, ARegistrationHandsOutTheContainerKeysAndTheInterval) {
  RmHarness h;
  auto r = h.rm().RegisterNode(NodeRequest("h1:1"));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->action(), v1::NODE_ACTION_NORMAL);
  EXPECT_EQ(r->container_key().key_id(), h.rm().container_keys().current().id);
  EXPECT_EQ(r->next_container_key().key_id(), h.rm().container_keys().next().id);
  EXPECT_EQ(r->rm_epoch(), h.rm().epoch());
  EXPECT_EQ(r->heartbeat_interval_ms(), RmOptions().heartbeat_interval_ms);
}

TEST(NodeTrackerTest, ASilentNodeIsLostAndMustRegisterAgain) {
  RmHarness h;  // nm_expiry_ms 10 s
  h.AddNode("h1:1");
  h.AddNode("h2:1");
  for (int i = 0; i < 12; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat("h2:1");  // only h2 keeps talking
  }
  v1::GetClusterMetricsResponse m = h.rm().GetClusterMetrics();
  EXPECT_EQ(m.lost_nodes(), 1);
  EXPECT_EQ(m.active_nodes(), 1);
  EXPECT_EQ(h.rm().scheduler().num_nodes(), 1);
  EXPECT_EQ(h.Heartbeat("h1:1").action(), v1::NODE_ACTION_RESYNC);
  // It may come back by registering again.
  h.AddNode("h1:1");
  EXPECT_EQ(h.rm().GetClusterMetrics().active_nodes(), 2);
}

TEST(NodeTrackerTest, AnUnhealthyNodeKeepsItsContainersButGetsNoNewOnes) {
  RmHarness h;
  h.AddNode("h1:1");
  v1::NodeHeartbeatRequest sick;
  sick.set_node_id("h1:1");
  sick.mutable_health()->set_healthy(false);
  sick.mutable_health()->set_report("disk /data failed");
  ASSERT_TRUE(h.rm().NodeHeartbeat(sick).ok());
  v1::ListNodesResponse nodes = h.rm().ListNodes({});
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).state(), v1::NODE_UNHEALTHY);
  EXPECT_EQ(nodes.nodes(0).health_report(), "disk /data failed");
  h.Submit();
  h.loop.Advance(500);
  EXPECT_TRUE(h.launcher.launches.empty());  // no AM placed on the unhealthy node
}

TEST(NodeTrackerTest, AnEndedAppIsCleanedUpOnTheNodesThatRanItOnce) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  h.loop.Advance(500);
  ASSERT_EQ(h.launcher.launches.size(), 1u);  // its AM, on h1
  h.AddNode("h2:1");                           // never ran anything of it
  EXPECT_EQ(h.Heartbeat("h1:1").applications_to_cleanup_size(), 0);  // still running
  ASSERT_TRUE(h.rm().KillApplication(app, "test").ok());
  v1::NodeHeartbeatResponse ran = h.Heartbeat("h1:1");
  ASSERT_EQ(ran.applications_to_cleanup_size(), 1);
  EXPECT_EQ(ran.applications_to_cleanup(0), app);
  EXPECT_EQ(h.Heartbeat("h2:1").applications_to_cleanup_size(), 0);
  EXPECT_EQ(h.Heartbeat("h1:1").applications_to_cleanup_size(), 0);  // said once
}

TEST(NodeTrackerTest, ANodeRegisteringAgainWithContainersOfEndedAppsIsToldToCleanThemUp) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string ended = h.Submit();
  const std::string live = h.Submit();
  h.loop.Advance(500);
  ASSERT_EQ(h.launcher.launches.size(), 2u);  // both AMs, on h1
  const std::string ended_am = h.rm().GetApplicationAttempts(ended)->attempts(0).am_container_id();
  const std::string live_am = h.rm().GetApplicationAttempts(live)->attempts(0).am_container_id();
  ASSERT_TRUE(h.rm().KillApplication(ended, "test").ok());
  // The NM takes the cleanup in a heartbeat reply and is killed before it acts on it.
  ASSERT_EQ(h.Heartbeat("h1:1").applications_to_cleanup_size(), 1);
  // The restarted NM re-attached to both AM containers and still keeps the completed status of
  // a container of an application this RM does not know.
  v1::RegisterNodeManagerRequest again = NodeRequest("h1:1");
  for (const std::string& id : {ended_am, live_am}) {
    v1::ContainerStatus* running = again.add_running_containers();
    running->set_container_id(id);
    running->set_state(v1::CONTAINER_RUNNING);
  }
  v1::ContainerStatus* unknown = again.add_completed_containers();
  unknown->set_container_id("container_e1_99_0042_01_000002");
  unknown->set_state(v1::CONTAINER_COMPLETE);
  auto r = h.rm().RegisterNode(again);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->action(), v1::NODE_ACTION_NORMAL);
  v1::NodeHeartbeatResponse reply = h.Heartbeat("h1:1");
  EXPECT_THAT(reply.applications_to_cleanup(),
              UnorderedElementsAre(ended, "application_99_0042"));
  EXPECT_THAT(reply.containers_to_cleanup(), ElementsAre(ended_am));
  auto live_attempts = h.rm().GetApplicationAttempts(live);
  ASSERT_EQ(live_attempts->attempts_size(), 1);
  EXPECT_EQ(live_attempts->attempts(0).state(), "LAUNCHED");
  EXPECT_EQ(h.Heartbeat("h1:1").applications_to_cleanup_size(), 0);  // said once
}

TEST(NodeTrackerTest, DecommissioningByHostNameAndAnEmptyName) {
  RmHarness h;
  h.AddNode("h1:1");
  v1::RefreshNodesRequest empty;
  empty.add_decommission("");
  EXPECT_EQ(h.rm().RefreshNodes(empty).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(h.rm().GetClusterMetrics().active_nodes(), 1);
  v1::RefreshNodesRequest req;
  req.add_decommission("h1");  // the host: every NM on it
  ASSERT_TRUE(h.rm().RefreshNodes(req).ok());
  EXPECT_EQ(h.rm().GetClusterMetrics().decommissioned_nodes(), 1);
  EXPECT_EQ(h.Heartbeat("h1:1").action(), v1::NODE_ACTION_SHUTDOWN);
  EXPECT_EQ(h.rm().RegisterNode(NodeRequest("h1:2"))->action(), v1::NODE_ACTION_SHUTDOWN);
}

// An admin's decisions outlive the RM: after a kill -9 and a restart over the same store, a
// decommissioned host's NMs are still refused and a node's central attributes apply again when
// it registers; recommissioning and removing the attributes outlive it too.
TEST(NodeTrackerTest, DecommissionsAndAdminAttributesSurviveARestart) {
  RmHarness h;
  h.AddNode("h1:1");
  h.AddNode("h2:1");
  v1::RefreshNodesRequest decommission;
  decommission.add_decommission("h1");
  ASSERT_TRUE(h.rm().RefreshNodes(decommission).ok());
  ASSERT_TRUE(h.rm()
                  .SetNodeAttributes(
                      NodeAttributesOf(v1::NodeAttributesRequest::ADD, "h2:1", "rack", "r7"))
                  .ok());

  h.Restart();
  EXPECT_EQ(h.rm().RegisterNode(NodeRequest("h1:1"))->action(), v1::NODE_ACTION_SHUTDOWN);
  EXPECT_EQ(h.rm().RegisterNode(NodeRequest("h1:2"))->action(), v1::NODE_ACTION_SHUTDOWN);
  ASSERT_NE(h.rm().RegisterNode(NodeRequest("h2:1"))->action(), v1::NODE_ACTION_SHUTDOWN);
  v1::ListNodesResponse nodes = h.rm().ListNodes({});
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).attributes().at("rack"), "r7");

  v1::RefreshNodesRequest recommission;
  recommission.add_recommission("h1");
  ASSERT_TRUE(h.rm().RefreshNodes(recommission).ok());
  ASSERT_TRUE(h.rm()
                  .SetNodeAttributes(
                      NodeAttributesOf(v1::NodeAttributesRequest::REMOVE, "h2:1", "rack", ""))
                  .ok());
  h.Restart();
  EXPECT_NE(h.rm().RegisterNode(NodeRequest("h1:1"))->action(), v1::NODE_ACTION_SHUTDOWN);
  ASSERT_NE(h.rm().RegisterNode(NodeRequest("h2:1"))->action(), v1::NODE_ACTION_SHUTDOWN);
  const v1::ListNodesResponse after = h.rm().ListNodes({});
  for (const v1::NodeReport& n : after.nodes())
    EXPECT_FALSE(n.attributes().contains("rack")) << n.node_id();
}

// A decision the store cannot keep is refused, and nothing changes: the node keeps running.
TEST(NodeTrackerTest, AnAdminDecisionTheStoreCannotKeepChangesNothing) {
  RmHarness h;
  h.AddNode("h1:1");
  h.store().fail_writes = true;
  v1::RefreshNodesRequest decommission;
  decommission.add_decommission("h1:1");
  absl::Status s = h.rm().RefreshNodes(decommission);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("nothing changed"), std::string::npos) << s;
  EXPECT_EQ(h.rm()
                .SetNodeAttributes(
                    NodeAttributesOf(v1::NodeAttributesRequest::REPLACE, "h1:1", "rack", "r7"))
                .code(),
            absl::StatusCode::kUnavailable);
  h.store().fail_writes = false;
  EXPECT_EQ(h.rm().GetClusterMetrics().active_nodes(), 1);
  EXPECT_NE(h.Heartbeat("h1:1").action(), v1::NODE_ACTION_SHUTDOWN);
  const v1::ListNodesResponse nodes = h.rm().ListNodes({});
  EXPECT_TRUE(nodes.nodes(0).attributes().empty());
  h.Restart();
  EXPECT_NE(h.rm().RegisterNode(NodeRequest("h1:1"))->action(), v1::NODE_ACTION_SHUTDOWN);
}

}  // namespace
}  // namespace weft::rm

namespace weft::rm {
namespace {

// A heartbeat reporting one running container with `cpu_ms` of CPU time so far.
v1::NodeHeartbeatRequest BusyHeartbeat(const std::string& node, const std::string& container,
                                       int64_t cpu_ms) {
  v1::NodeHeartbeatRequest req;
  req.set_node_id(node);
  v1::ContainerStatus* st = req.add_container_statuses();
  st->set_container_id(container);
  st->set_state(v1::CONTAINER_RUNNING);
  st->mutable_usage()->set_cpu_time_ms(cpu_ms);
  return req;
}

// YARN-10475: a node busier than the cluster's average is told to heartbeat less often, an
// idle one more often, within the bounds; with scaling off every node gets the interval.
TEST(NodeTrackerTest, HeartbeatIntervalsFollowCpuUtilizationAgainstTheCluster) {
  RmOptions options = RmHarness::DefaultOptions();
  options.heartbeat_scaling.enabled = true;
  options.heartbeat_scaling.min_ms = 200;
  options.heartbeat_scaling.max_ms = 5000;
  RmHarness h(options);
  h.AddNode("busy:1", 8192, 4);
  h.AddNode("idle:1", 8192, 4);
  // First heartbeats: no utilization known yet.
  auto busy = h.rm().NodeHeartbeat(BusyHeartbeat("busy:1", "c1", 0));
  ASSERT_TRUE(busy.ok()) << busy.status();
  EXPECT_EQ(busy->next_heartbeat_interval_ms(), 1000);
  ASSERT_TRUE(h.rm().NodeHeartbeat(BusyHeartbeat("idle:1", "c2", 0)).ok());
  h.loop.Advance(1000);
  // In 1 s, busy's container used 4 s of CPU on 4 vcores (100%), idle's none (0%): the
  // cluster's average is 50%.
  busy = h.rm().NodeHeartbeat(BusyHeartbeat("busy:1", "c1", 4000));
  auto idle = h.rm().NodeHeartbeat(BusyHeartbeat("idle:1", "c2", 0));
  ASSERT_TRUE(busy.ok() && idle.ok());
  EXPECT_EQ(idle->next_heartbeat_interval_ms(), 500);    // 1000 x (1 - 0.5)
  // Busy was answered before idle's report counted (the average was its own); a second
  // heartbeat in the same ms keeps its utilization and now sees the 50% average.
  busy = h.rm().NodeHeartbeat(BusyHeartbeat("busy:1", "c1", 4000));
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(busy->next_heartbeat_interval_ms(), 1500);
  h.loop.Advance(1000);
  busy = h.rm().NodeHeartbeat(BusyHeartbeat("busy:1", "c1", 8000));
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(busy->next_heartbeat_interval_ms(), 1500);  // 1000 x (1 + 0.5)
  // A container that ended takes its CPU time with it: no negative utilization.
  h.loop.Advance(1000);
  idle = h.rm().NodeHeartbeat(BusyHeartbeat("idle:1", "c3", 0));
  ASSERT_TRUE(idle.ok());
  EXPECT_GE(idle->next_heartbeat_interval_ms(), 200);

  RmHarness plain;
  plain.AddNode("h:1");
  plain.loop.Advance(1000);
  auto r = plain.rm().NodeHeartbeat(BusyHeartbeat("h:1", "c", 4000));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->next_heartbeat_interval_ms(), RmOptions().heartbeat_interval_ms);
}

// As YARN: the container keys go only to an NM that does not know the current one.
TEST(NodeTrackerTest, HeartbeatsCarryTheKeysOnlyToAnNmWithoutThem) {
  RmHarness h;
  h.AddNode("h1:1");
  v1::NodeHeartbeatRequest req;
  req.set_node_id("h1:1");
  req.set_last_known_container_key_id(h.rm().container_keys().current().id);
  auto knows = h.rm().NodeHeartbeat(req);
  ASSERT_TRUE(knows.ok());
  EXPECT_FALSE(knows->has_container_key());
  EXPECT_FALSE(knows->has_next_container_key());
  req.set_last_known_container_key_id(h.rm().container_keys().current().id - 1);
  auto stale = h.rm().NodeHeartbeat(req);
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->container_key().key_id(), h.rm().container_keys().current().id);
  EXPECT_EQ(stale->next_container_key().key_id(), h.rm().container_keys().next().id);
  EXPECT_FALSE(stale->container_key().secret().empty());
}

TEST(NodeTrackerTest, AHeartbeatResolvedOffTheLoopIsTheNodesOwn) {
  RmHarness h;
  h.AddNode("h1:1");
  h.AddNode("h2:1");
  const std::shared_ptr<const NodeDirectory> directory = h.rm().node_directory();
  EXPECT_EQ(directory->Find("nowhere:1"), nullptr);
  RmNode* h1 = directory->Find("h1:1");
  ASSERT_NE(h1, nullptr);
  EXPECT_NE(h1, directory->Find("h2:1"));
  // The same record whether the heartbeat's thread found it or the loop looks it up.
  v1::NodeHeartbeatRequest req;
  req.set_node_id("h1:1");
  auto resolved = h.rm().NodeHeartbeat(req, h1);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(resolved->action(), v1::NODE_ACTION_NORMAL);
  auto looked_up = h.rm().NodeHeartbeat(req);
  ASSERT_TRUE(looked_up.ok());
  EXPECT_EQ(looked_up->response_id(), resolved->response_id() + 1);
  EXPECT_EQ(h1->response_id, looked_up->response_id());
  // A node registered later is found too (the directory is the tracker's, not a copy).
  h.AddNode("h3:1");
  EXPECT_NE(directory->Find("h3:1"), nullptr);
  // A heartbeat's thread may still hold the directory when the RM is destroyed (a failover):
  // looking an id up then reads none of the old tracker's memory (ASan would say so).
  h.Restart();
  EXPECT_NE(directory->Find("h1:1"), nullptr);
  EXPECT_EQ(directory->Find("nowhere:1"), nullptr);
  EXPECT_NE(h.rm().node_directory(), directory);  // the new RM's is another
}

TEST(NodeTrackerTest, HeartbeatScalingBoundsAreValidated) {
  RmOptions options = RmHarness::DefaultOptions();
  options.heartbeat_scaling.enabled = true;
  options.heartbeat_scaling.min_ms = 2000;  // above the 1 s interval
  options.heartbeat_scaling.max_ms = 5000;
  ManualEventLoop loop;
  auto store = store::NewMemoryStore();
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  auto rm = ResourceManager::Create(options, &loop, store.get(), &launcher, &secrets);
  ASSERT_FALSE(rm.ok());
  EXPECT_EQ(rm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(rm.status().message(), HasSubstr("scaling bounds 2000..5000"));
}

}  // namespace
}  // namespace weft::rm
