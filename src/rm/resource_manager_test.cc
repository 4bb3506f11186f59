#include "rm/resource_manager.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/escaping.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"
#include "security/tokens.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

class ResourceManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = store::NewMemoryStore();
    RmOptions o;
    o.nm_expiry_ms = 10000;
    o.am_expiry_ms = 60000;
    auto rm = ResourceManager::Create(o, &loop_, store_.get(), &launcher_, &secrets_);
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
  }

  void AddNode(const std::string& id, int64_t mb = 8192, int64_t vcores = 8) {
    ASSERT_TRUE(rm_->RegisterNode(NodeRequest(id, mb, vcores)).ok());
  }

  std::string Submit(const std::string& queue = "default", int attempts = 0) {
    auto id = rm_->NewApplication();
    EXPECT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.set_queue(queue);
    ctx.set_max_app_attempts(attempts);
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    EXPECT_TRUE(rm_->SubmitApplication(ctx, "alice").ok());
    return id->application_id();
  }

  v1::Token AmToken(size_t launch = 0) {
    v1::Token t;
    EXPECT_TRUE(
        t.ParseFromString(launcher_.launches.at(launch).second.launch_context().tokens().at("amrm")));
    return t;
  }

  v1::NodeHeartbeatResponse Heartbeat(const std::string& node,
                                      std::vector<std::pair<std::string, int>> done = {}) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(node);
    for (auto& [id, exit] : done) {
      v1::ContainerStatus* s = req.add_container_statuses();
      s->set_container_id(id);
      s->set_state(v1::CONTAINER_COMPLETE);
      s->set_exit_status(exit);
    }
    auto r = rm_->NodeHeartbeat(req);
    EXPECT_TRUE(r.ok());
    return *r;
  }

  ManualEventLoop loop_;
  std::unique_ptr<store::StateStore> store_;
  FakeLauncher launcher_;
  security::FakeSecretSource secrets_;
  std::unique_ptr<ResourceManager> rm_;
};

TEST_F(ResourceManagerTest, SubmissionIsStoredBeforeSuccessAndTheAmIsLaunched) {
  AddNode("h1:1");
  std::string app = Submit();
  auto stored = store_->Load();
  ASSERT_TRUE(stored.ok());
  ASSERT_EQ(stored->apps.size(), 1u);
  EXPECT_EQ(stored->apps[0].app_id, app);
  EXPECT_EQ(stored->apps[0].state, "ACCEPTED");
  loop_.Advance(200);  // a scheduling pass
  ASSERT_EQ(launcher_.launches.size(), 1u);
  EXPECT_EQ(launcher_.launches[0].first, "h1:1");
  const auto& env = launcher_.launches[0].second.launch_context().environment();
  EXPECT_EQ(env.at("WEFT_APPLICATION_ID"), app);
  EXPECT_THAT(launcher_.launches[0].second.container_token().identifier(), HasSubstr("h1:1"));
  auto report = rm_->GetApplication(app);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->current_attempt(), 1);
  EXPECT_EQ(report->am_host(), "h1:1");
}

TEST_F(ResourceManagerTest, InvalidSubmissionsAreRefusedAndChangeNothing) {
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id("application_1_9999");
  ctx.mutable_am_container_spec()->add_command("true");
  EXPECT_EQ(rm_->SubmitApplication(ctx, "u").code(), absl::StatusCode::kNotFound);
  auto id = rm_->NewApplication();
  ctx.set_application_id(id->application_id());
  ctx.set_queue("nosuch");
  absl::Status s = rm_->SubmitApplication(ctx, "u");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("unknown queue 'nosuch'"));
  ctx.set_queue("default");
  (*ctx.mutable_am_resource()->mutable_values())["memory-mb"] = -5;
  EXPECT_THAT(rm_->SubmitApplication(ctx, "u").message(), HasSubstr("memory-mb=-5 is negative"));
  (*ctx.mutable_am_resource()->mutable_values())["gpus"] = 1;
  EXPECT_THAT(rm_->SubmitApplication(ctx, "u").message(),
              HasSubstr("unknown resource type 'gpus'"));
  ctx.clear_am_resource();
  ctx.clear_am_container_spec();
  EXPECT_THAT(rm_->SubmitApplication(ctx, "u").message(), HasSubstr("empty AM command"));
  EXPECT_TRUE(rm_->ListApplications({}).applications().empty());
  EXPECT_TRUE(store_->Load()->apps.empty());
  // The id is still usable once the submission is right.
  ctx.mutable_am_container_spec()->add_command("true");
  EXPECT_TRUE(rm_->SubmitApplication(ctx, "u").ok());
  EXPECT_EQ(rm_->SubmitApplication(ctx, "u").code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(ResourceManagerTest, BadProfilesAndAmSizingRequestsAreRefusedAndChangeNothing) {
  auto id = rm_->NewApplication();
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.mutable_am_container_spec()->add_command("true");
  auto refused = [&](const std::string& want) {
    absl::Status s = rm_->SubmitApplication(ctx, "u");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(want));
  };
  ctx.mutable_profile()->set_completion_goal_ms(-5);
  refused("completion_goal_ms -5 is negative");
  ctx.mutable_profile()->set_completion_goal_ms(0);
  v1::PhaseProfile* map = ctx.mutable_profile()->add_phases();
  map->set_name("map");
  map->set_priority(1);
  map->set_has_usage(true);
  map->set_cpu(1.5);
  refused("profile phase 'map' (priority 1): cpu share 1.5 is not within [0, 1]");
  map->set_cpu(0.5);
  map->set_expected_task_ms(-3);
  refused("profile phase 'map' (priority 1): expected_task_ms -3 is negative");
  map->set_expected_task_ms(60000);
  *ctx.mutable_profile()->add_phases() = *map;
  refused("another phase has that priority");
  ctx.clear_profile();
  ctx.mutable_am_sizing()->set_enabled(true);
  refused("AM sizing needs input_bytes > 0");
  ctx.mutable_am_sizing()->set_input_bytes(1 << 20);
  ctx.mutable_am_sizing()->set_reduce_tasks(-1);
  refused("reduce_tasks >= 0");
  ctx.mutable_am_sizing()->set_reduce_tasks(0);
  (*ctx.mutable_am_sizing()->mutable_worker_resource()->mutable_values())["memory-mb"] = -1;
  refused("AM sizing worker resource");
  EXPECT_TRUE(rm_->ListApplications({}).applications().empty());
  EXPECT_TRUE(store_->Load()->apps.empty());
  // Right, the RM sizes the AM itself and says why.
  ctx.mutable_am_sizing()->clear_worker_resource();
  ASSERT_TRUE(rm_->SubmitApplication(ctx, "u").ok());
  auto report = rm_->GetApplication(id->application_id());
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->am_sizing_decisions_size(), 1);
  EXPECT_THAT(report->am_sizing_decisions(0), HasSubstr("attempt 1: AM"));
}

TEST_F(ResourceManagerTest, AllocateProtocolAndCompletedStatusesExactlyOnce) {
  AddNode("h1:1");
  std::string app = Submit();
  loop_.Advance(200);
  v1::Token token = AmToken();
  ASSERT_TRUE(rm_->RegisterApplicationMaster(token, {}).ok());
  EXPECT_EQ(rm_->GetApplication(app)->state(), v1::APP_RUNNING);

  v1::AllocateRequest req;
  req.set_response_id(0);
  *req.add_asks() = AnyAsk(2);
  auto r1 = rm_->Allocate(token, req);
  ASSERT_TRUE(r1.ok()) << r1.status();
  EXPECT_EQ(r1->response_id(), 1);
  EXPECT_EQ(r1->allocated_containers_size(), 0);  // asynchronous: allocated by the next pass
  loop_.Advance(200);
  v1::AllocateRequest next;
  next.set_response_id(1);
  auto r2 = rm_->Allocate(token, next);
  ASSERT_TRUE(r2.ok());
  ASSERT_EQ(r2->allocated_containers_size(), 2);
  EXPECT_FALSE(r2->allocated_containers(0).container_token().password().empty());
  // A lost reply: the same response_id gets the same reply again.
  auto again = rm_->Allocate(token, next);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*again, *r2));
  // Out of sequence: resync.
  v1::AllocateRequest stale;
  stale.set_response_id(7);
  EXPECT_EQ(rm_->Allocate(token, stale)->am_command(), v1::AM_RESYNC);

  // The NM reports one container done with exit 3: the AM hears it once.
  std::string c0 = r2->allocated_containers(0).container_id();
  Heartbeat("h1:1", {{c0, 3}});
  Heartbeat("h1:1", {{c0, 3}});  // repeated by the NM: still once
  v1::AllocateRequest third;
  third.set_response_id(2);
  auto r3 = rm_->Allocate(token, third);
  ASSERT_EQ(r3->completed_containers_size(), 1);
  EXPECT_EQ(r3->completed_containers(0).container_id(), c0);
  EXPECT_EQ(r3->completed_containers(0).exit_status(), 3);
  v1::AllocateRequest fourth;
  fourth.set_response_id(3);
  EXPECT_EQ(rm_->Allocate(token, fourth)->completed_containers_size(), 0);

  v1::FinishApplicationMasterRequest fin;
  fin.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(rm_->FinishApplicationMaster(token, fin).ok());
  EXPECT_EQ(rm_->GetApplication(app)->state(), v1::APP_FINISHED);
  EXPECT_EQ(rm_->GetApplication(app)->final_status(), v1::FINAL_SUCCEEDED);
  EXPECT_EQ(store_->Load()->apps[0].state, "FINISHED");
  // Its remaining containers are cleaned up on their node.
  EXPECT_GE(Heartbeat("h1:1").containers_to_cleanup_size(), 1);
}

TEST_F(ResourceManagerTest, NetworkAsksAreValidatedAndUsageReachesTheNodeReport) {
  v1::RegisterNodeManagerRequest node = NodeRequest("h1:1");
  (*node.mutable_capability()->mutable_values())["network-mbps"] = 180;  // containers' share
  node.set_network_isolation("HTB on eth0: link 200 Mbit/s, containers 180 Mbit/s");
  ASSERT_TRUE(rm_->RegisterNode(node).ok());
  Submit();
  loop_.Advance(200);
  v1::Token token = AmToken();
  ASSERT_TRUE(rm_->RegisterApplicationMaster(token, {}).ok());
  loop_.Advance(5000);  // past max_allocation_wait_ms: the largest node caps asks

  // Negative, and above every node's containers' total: refused, naming the type and value,
  // and nothing is asked for.
  for (int64_t mbps : {-5, 181}) {
    v1::AllocateRequest bad;
    bad.set_response_id(0);
    *bad.add_asks() = AnyAsk(1);
    (*bad.mutable_asks(0)->mutable_capability()->mutable_values())["network-mbps"] = mbps;
    auto refused = rm_->Allocate(token, bad);
    ASSERT_FALSE(refused.ok()) << mbps;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(refused.status().message(), HasSubstr(absl::StrCat("network-mbps=", mbps)));
  }
  // 100 Mbit/s fits once; a second container of 100 does not fit beside it.
  v1::AllocateRequest req;
  req.set_response_id(0);
  *req.add_asks() = AnyAsk(2);
  (*req.mutable_asks(0)->mutable_capability()->mutable_values())["network-mbps"] = 100;
  ASSERT_TRUE(rm_->Allocate(token, req).ok());
  loop_.Advance(200);
  v1::AllocateRequest next;
  next.set_response_id(1);
  auto got = rm_->Allocate(token, next);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->allocated_containers_size(), 1);
  const std::string c = got->allocated_containers(0).container_id();

  // The NM's per-container network counters show in the node report.
  v1::NodeHeartbeatRequest hb;
  hb.set_node_id("h1:1");
  v1::ContainerStatus* st = hb.add_container_statuses();
  st->set_container_id(c);
  st->set_state(v1::CONTAINER_RUNNING);
  st->mutable_usage()->set_network_tx_bytes(12345678);
  st->mutable_usage()->set_network_tx_rate_mbps(97);
  hb.mutable_node_usage()->set_network_tx_rate_mbps(97);
  ASSERT_TRUE(rm_->NodeHeartbeat(hb).ok());
  v1::NodeReport report = rm_->ListNodes({}).nodes(0);
  EXPECT_EQ(report.network_isolation(), "HTB on eth0: link 200 Mbit/s, containers 180 Mbit/s");
  EXPECT_EQ(report.used().values().at("network-mbps"), 100);  // the AM container has none
  ASSERT_GE(report.containers_size(), 1);
  EXPECT_EQ(report.containers(0).usage().network_tx_rate_mbps(), 97);
  EXPECT_EQ(report.usage().network_tx_rate_mbps(), 97);
}

TEST_F(ResourceManagerTest, ForgedOrForeignAmrmTokensAreRefused) {
  AddNode("h1:1");
  Submit();
  loop_.Advance(200);
  v1::Token token = AmToken();
  v1::Token forged = token;
  forged.mutable_password()->back() ^= 1;
  EXPECT_EQ(rm_->RegisterApplicationMaster(forged, {}).status().code(),
            absl::StatusCode::kPermissionDenied);
  v1::Token garbage;
  garbage.set_identifier("nonsense");
  EXPECT_EQ(rm_->Allocate(garbage, {}).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(rm_->Allocate(token, {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

// YARN-614: an attempt whose AM its node lost (or whose AM was aborted, preempted, killed by the
// RM) does not count toward max attempts; one whose AM exits non-zero does.
TEST_F(ResourceManagerTest, LostNodeFailsTheAttemptWithoutCountingItTowardMaxAttempts) {
  AddNode("h1:1");
  std::string app = Submit("default", 2);
  loop_.Advance(200);
  ASSERT_EQ(launcher_.launches.size(), 1u);
  // h1 stops heartbeating; h2 joins and keeps heartbeating.
  AddNode("h2:1");
  for (int i = 0; i < 12; ++i) {
    loop_.Advance(1000);
    Heartbeat("h2:1");
  }
  auto nodes = rm_->ListNodes({});
  EXPECT_EQ(nodes.nodes(0).state(), v1::NODE_LOST);
  EXPECT_EQ(nodes.nodes(1).state(), v1::NODE_RUNNING);
  // Attempt 2 runs on h2.
  ASSERT_EQ(launcher_.launches.size(), 2u);
  EXPECT_EQ(launcher_.launches[1].first, "h2:1");
  EXPECT_EQ(rm_->GetApplication(app)->current_attempt(), 2);
  auto exit_am = [&](size_t launch, int status) {
    auto am = security::DecodeContainerToken(
        launcher_.launches[launch].second.container_token().identifier());
    ASSERT_TRUE(am.ok());
    Heartbeat("h2:1", {{am->container_id, status}});
    loop_.Advance(200);
  };
  // Its AM is aborted (its NM's federation fence): not counted either; attempt 3 starts.
  exit_am(1, v1::CONTAINER_EXIT_ABORTED);
  ASSERT_EQ(launcher_.launches.size(), 3u);
  EXPECT_EQ(rm_->GetApplication(app)->state(), v1::APP_ACCEPTED);
  // Its AM exits non-zero: the first counted failure, so attempt 4 starts ...
  exit_am(2, 1);
  ASSERT_EQ(launcher_.launches.size(), 4u);
  // ... and the second counted failure fails the app.
  exit_am(3, 1);
  auto report = rm_->GetApplication(app);
  EXPECT_EQ(report->state(), v1::APP_FAILED);
  EXPECT_THAT(report->diagnostics(), HasSubstr("failed 2 time(s) (max attempts 2)"));
  EXPECT_THAT(report->diagnostics(), HasSubstr("exited with status 1"));
  EXPECT_EQ(store_->Load()->apps[0].state, "FAILED");
  // The uncounted ends are stored with the attempts, so a restarted RM counts the same.
  absl::StatusOr<store::RmState> state = store_->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  std::vector<int32_t> stored;
  for (const store::AttemptRecord& a : state->attempts) stored.push_back(a.exit_status);
  EXPECT_THAT(stored, ::testing::ElementsAre(v1::CONTAINER_EXIT_LOST_NODE,
                                             v1::CONTAINER_EXIT_ABORTED, 1, 1));
}

TEST_F(ResourceManagerTest, KillReleasesContainersAndIsIdempotent) {
  AddNode("h1:1");
  std::string app = Submit();
  loop_.Advance(200);
  ASSERT_TRUE(rm_->KillApplication(app, "").ok());
  EXPECT_EQ(rm_->GetApplication(app)->state(), v1::APP_KILLED);
  EXPECT_EQ(Heartbeat("h1:1").containers_to_cleanup_size(), 1);  // the AM container
  EXPECT_TRUE(rm_->KillApplication(app, "").ok());
  EXPECT_EQ(rm_->KillApplication("application_0_0000", "").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(rm_->scheduler().cluster_allocated(), Resource());
}

TEST_F(ResourceManagerTest, AttemptsAndResourceSecondsAreReported) {
  AddNode("h1:1");
  std::string app = Submit();
  loop_.Advance(200);
  const int64_t am_mb = rm_->GetApplication(app)->allocated().values().at("memory-mb");
  ASSERT_GT(am_mb, 0);
  for (int i = 0; i < 5; ++i) {  // 10 s, the node heartbeating
    loop_.Advance(2000);
    Heartbeat("h1:1");
  }
  // Running: the AM container's time so far (allocated within the first 200 ms).
  const int64_t running = rm_->GetApplication(app)->resource_seconds().values().at("memory-mb");
  EXPECT_GE(running, am_mb * 98 / 10);
  EXPECT_LE(running, am_mb * 102 / 10);
  ASSERT_TRUE(rm_->KillApplication(app, "").ok());
  loop_.Advance(2000);
  // Ended: frozen at the kill.
  EXPECT_EQ(rm_->GetApplication(app)->resource_seconds().values().at("memory-mb"), running);
  auto attempts = rm_->GetApplicationAttempts(app);
  ASSERT_TRUE(attempts.ok()) << attempts.status();
  ASSERT_EQ(attempts->attempts_size(), 1);
  const v1::ApplicationAttemptReport& a = attempts->attempts(0);
  EXPECT_EQ(a.attempt(), 1);
  EXPECT_THAT(a.attempt_id(), HasSubstr("appattempt_"));
  EXPECT_EQ(a.state(), "KILLED");
  EXPECT_EQ(a.am_node_id(), "h1:1");
  EXPECT_THAT(a.am_container_id(), HasSubstr("container_e"));
  EXPECT_GT(a.finish_time_ms(), a.start_time_ms());
  EXPECT_EQ(rm_->GetApplicationAttempts("application_0_0000").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_GE(rm_->containers_completed(), 1);
  EXPECT_GT(rm_->cluster_timestamp_ms(), 0);
}

TEST_F(ResourceManagerTest, RestartRecoversAppsWithANewEpochAndNeverReusesIds) {
  AddNode("h1:1");
  std::string done = Submit();
  loop_.Advance(200);
  v1::Token done_token = AmToken(0);
  ASSERT_TRUE(rm_->RegisterApplicationMaster(done_token, {}).ok());
  v1::FinishApplicationMasterRequest fin;
  fin.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(rm_->FinishApplicationMaster(done_token, fin).ok());
  std::string running = Submit("default", 2);
  loop_.Advance(200);
  ASSERT_EQ(launcher_.launches.size(), 2u);
  v1::Token old_token = AmToken(1);
  auto old_am =
      security::DecodeContainerToken(launcher_.launches[1].second.container_token().identifier());
  ASSERT_TRUE(old_am.ok());
  EXPECT_THAT(old_am->container_id, HasSubstr("container_e1_"));

  // The RM goes away and comes back on the same store.
  rm_.reset();
  RmOptions o;
  o.nm_expiry_ms = 10000;
  o.am_expiry_ms = 60000;
  auto rm = ResourceManager::Create(o, &loop_, store_.get(), &launcher_, &secrets_);
  ASSERT_TRUE(rm.ok()) << rm.status();
  rm_ = std::move(*rm);
  EXPECT_EQ(rm_->epoch(), 2);
  EXPECT_EQ(rm_->GetApplication(done)->state(), v1::APP_FINISHED);
  EXPECT_EQ(rm_->GetApplication(done)->final_status(), v1::FINAL_SUCCEEDED);
  auto report = rm_->GetApplication(running);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->state(), v1::APP_ACCEPTED);
  EXPECT_EQ(report->current_attempt(), 1);  // work-preserving: the attempt carries on
  // Its AM's token still verifies (the master key was restored): it is told to resync.
  EXPECT_EQ(rm_->Allocate(old_token, {})->am_command(), v1::AM_RESYNC);
  // The NM re-registers without that AM container (it never started): the same attempt's new
  // AM container gets an id of the new epoch.
  AddNode("h1:1");
  EXPECT_EQ(rm_->GetApplication(running)->current_attempt(), 1);
  loop_.Advance(200);
  ASSERT_EQ(launcher_.launches.size(), 3u);
  auto new_am =
      security::DecodeContainerToken(launcher_.launches[2].second.container_token().identifier());
  ASSERT_TRUE(new_am.ok());
  EXPECT_THAT(new_am->container_id, HasSubstr("container_e2_"));
  EXPECT_NE(new_am->container_id, old_am->container_id);
  // New application ids continue after the recovered ones.
  auto next = rm_->NewApplication();
  EXPECT_GT(next->application_id(), running);
}

TEST(ResourceManagerAdminTest, RefreshQueuesAppliesAValidFileAndRefusesABadOne) {
  ManualEventLoop loop;
  auto store = store::NewMemoryStore();
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  std::string path = ::testing::TempDir() + "/weft_refresh_queues.yaml";
  auto write = [&](const std::string& text) { std::ofstream(path) << text; };
  write("queues: {root: {children: {default: {}, prod: {weight: 3}}}}\n");
  RmOptions o;
  o.scheduler_config_path = path;
  auto config = scheduler::LoadSchedulerConfigFile(path, o.registry);
  ASSERT_TRUE(config.ok());
  o.scheduler = *config;
  auto rm = ResourceManager::Create(o, &loop, store.get(), &launcher, &secrets);
  ASSERT_TRUE(rm.ok());
  v1::GetQueueRequest q;
  q.set_queue("prod");
  EXPECT_EQ((*rm)->GetQueue(q)->queue().weight(), 3);
  write("queues: {root: {children: {default: {}, prod: {weight: 5}, dev: {}}}}\n");
  ASSERT_TRUE((*rm)->RefreshQueues().ok());
  EXPECT_EQ((*rm)->GetQueue(q)->queue().weight(), 5);
  write("queues: {root: {children: {default: {}, prod: {wieght: 5}}}}\n");
  absl::Status bad = (*rm)->RefreshQueues();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.message(), HasSubstr("the old configuration stays"));
  EXPECT_THAT(bad.message(), HasSubstr("unknown key 'wieght'"));
  EXPECT_EQ((*rm)->GetQueue(q)->queue().weight(), 5);
  v1::GetQueueRequest root;
  root.set_recursive(true);
  EXPECT_EQ((*rm)->GetQueue(root)->queue().children_size(), 3);
  v1::GetQueueRequest unknown;
  unknown.set_queue("nosuch");
  EXPECT_EQ((*rm)->GetQueue(unknown).status().code(), absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST_F(ResourceManagerTest, DecommissionedNodeLosesItsContainersAndIsToldToShutDown) {
  AddNode("h1:1");
  AddNode("h2:1");
  std::string app = Submit("default", 2);
  loop_.Advance(200);
  ASSERT_EQ(launcher_.launches.size(), 1u);
  std::string am_node = launcher_.launches[0].first;
  v1::RefreshNodesRequest req;
  req.add_decommission(am_node.substr(0, am_node.find(':')));  // by host name
  ASSERT_TRUE(rm_->RefreshNodes(req).ok());
  EXPECT_EQ(Heartbeat(am_node).action(), v1::NODE_ACTION_SHUTDOWN);
  v1::RegisterNodeManagerRequest again;
  again.set_node_id(am_node);
  EXPECT_EQ(rm_->RegisterNode(again)->action(), v1::NODE_ACTION_SHUTDOWN);
  // The AM's attempt failed with its node; attempt 2 runs on the other node.
  loop_.Advance(200);
  ASSERT_EQ(launcher_.launches.size(), 2u);
  EXPECT_NE(launcher_.launches[1].first, am_node);
  v1::GetClusterMetricsResponse m = rm_->GetClusterMetrics();
  EXPECT_EQ(m.active_nodes(), 1);
  EXPECT_EQ(m.decommissioned_nodes(), 1);
  EXPECT_EQ(m.apps_pending() + m.apps_running(), 1);
  EXPECT_EQ(m.total().values().at("vcores"), 8);
}

TEST_F(ResourceManagerTest, LostNodesContainersReachTheAmAsLostAndAreReplacedElsewhere) {
  AddNode("h1:1", 1024, 1);  // room for the AM only
  std::string app = Submit();
  loop_.Advance(200);
  v1::Token token = AmToken();
  ASSERT_TRUE(rm_->RegisterApplicationMaster(token, {}).ok());
  AddNode("h2:1", 4096, 4);
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(2);
  ASSERT_TRUE(rm_->Allocate(token, ask).ok());
  loop_.Advance(200);
  v1::AllocateRequest next;
  next.set_response_id(1);
  auto got = rm_->Allocate(token, next);
  ASSERT_EQ(got->allocated_containers_size(), 2);
  EXPECT_EQ(got->allocated_containers(0).node_id(), "h2:1");
  // h2 goes silent; h1 and a new h3 keep heartbeating.
  AddNode("h3:1", 4096, 4);
  for (int i = 0; i < 20; ++i) {  // expiry 10 s, checked every 2.5 s
    loop_.Advance(1000);
    Heartbeat("h1:1");
    Heartbeat("h3:1");
    v1::AllocateRequest keep_alive;  // the AM keeps calling, as a live AM does
    keep_alive.set_response_id(2 + i);
    auto ka = rm_->Allocate(token, keep_alive);
    ASSERT_TRUE(ka.ok());
    if (ka->completed_containers_size() == 0) continue;
    ASSERT_EQ(ka->completed_containers_size(), 2);
    EXPECT_EQ(ka->completed_containers(0).exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
    EXPECT_THAT(ka->completed_containers(0).diagnostics(), HasSubstr("h2:1 stopped heartbeating"));
    // The AM asks again; the replacements land on the live node.
    v1::AllocateRequest again;
    again.set_response_id(ka->response_id());
    *again.add_asks() = AnyAsk(2);
    ASSERT_TRUE(rm_->Allocate(token, again).ok());
    loop_.Advance(200);
    v1::AllocateRequest fetch;
    fetch.set_response_id(ka->response_id() + 1);
    auto repl = rm_->Allocate(token, fetch);
    ASSERT_EQ(repl->allocated_containers_size(), 2);
    for (const auto& c : repl->allocated_containers()) EXPECT_EQ(c.node_id(), "h3:1");
    EXPECT_EQ(rm_->GetApplication(app)->state(), v1::APP_RUNNING);
    return;
  }
  ADD_FAILURE() << "the AM never heard that h2's containers were lost";
}

TEST(ResourceManagerKeysTest, AmrmTokenIsRolledInAnAllocateReplyAfterAKeyRoll) {
  ManualEventLoop loop;
  auto store = store::NewMemoryStore();
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  RmOptions o;
  o.key_roll_interval_ms = 10000;
  o.am_expiry_ms = 600000;
  auto rm = ResourceManager::Create(o, &loop, store.get(), &launcher, &secrets);
  ASSERT_TRUE(rm.ok());
  v1::RegisterNodeManagerRequest node = NodeRequest("h1:1");
  ASSERT_TRUE((*rm)->RegisterNode(node).ok());
  auto id = (*rm)->NewApplication();
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.mutable_am_container_spec()->add_command("sleep 100");
  ASSERT_TRUE((*rm)->SubmitApplication(ctx, "u").ok());
  loop.Advance(200);
  v1::Token token;
  ASSERT_TRUE(token.ParseFromString(launcher.launches.at(0).second.launch_context().tokens().at("amrm")));
  EXPECT_FALSE(launcher.launches.at(0).second.launch_context().environment().contains("WEFT_AMRM_TOKEN"));
  ASSERT_TRUE((*rm)->RegisterApplicationMaster(token, {}).ok());
  auto first = (*rm)->Allocate(token, {});
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->has_amrm_token());  // no roll yet
  for (int i = 0; i < 3; ++i) {
    // Twice past the roll interval; node heartbeats keep h1 alive.
    loop.Advance(10000);
    v1::NodeHeartbeatRequest hb;
    hb.set_node_id("h1:1");
    ASSERT_TRUE((*rm)->NodeHeartbeat(hb).ok());
  }
  v1::AllocateRequest next;
  next.set_response_id(first->response_id());
  auto rolled = (*rm)->Allocate(token, next);
  ASSERT_TRUE(rolled.ok()) << rolled.status();
  ASSERT_TRUE(rolled->has_amrm_token());
  EXPECT_NE(rolled->amrm_token().identifier(), token.identifier());
  v1::AllocateRequest after;
  after.set_response_id(rolled->response_id());
  EXPECT_TRUE((*rm)->Allocate(rolled->amrm_token(), after).ok());
}

TEST_F(ResourceManagerTest, OversizedSubmissionIsRefused) {
  auto id = rm_->NewApplication();
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.mutable_am_container_spec()->add_command(std::string(2 << 20, 'x'));
  absl::Status s = rm_->SubmitApplication(ctx, "u");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("exceeds"));
  EXPECT_TRUE(rm_->ListApplications({}).applications().empty());
}

TEST(ResourceManagerRestartTest, SqliteStoreSurvivesARealRestart) {
  std::string dir = ::testing::TempDir() + "/weft_rm_restart_" + std::to_string(getpid());
  std::string path = dir + "/rm.db";
  ManualEventLoop loop;
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  std::string app;
  std::string first_container;
  {
    auto store = store::OpenSqliteStore(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto rm = ResourceManager::Create({}, &loop, store->get(), &launcher, &secrets);
    ASSERT_TRUE(rm.ok());
    v1::RegisterNodeManagerRequest node = NodeRequest("h1:1");
    ASSERT_TRUE((*rm)->RegisterNode(node).ok());
    auto id = (*rm)->NewApplication();
    app = id->application_id();
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(app);
    ctx.set_max_app_attempts(2);
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    ASSERT_TRUE((*rm)->SubmitApplication(ctx, "alice").ok());
    loop.Advance(200);
    ASSERT_EQ(launcher.launches.size(), 1u);
    first_container =
        security::DecodeContainerToken(launcher.launches[0].second.container_token().identifier())
            ->container_id;
    rm->reset();
    ASSERT_TRUE((*store)->Close().ok());
  }
  auto store = store::OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  auto rm = ResourceManager::Create({}, &loop, store->get(), &launcher, &secrets);
  ASSERT_TRUE(rm.ok()) << rm.status();
  EXPECT_EQ((*rm)->epoch(), 2);
  auto report = (*rm)->GetApplication(app);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->user(), "alice");
  EXPECT_EQ(report->current_attempt(), 1);  // it carries on
  // Its node comes back without the AM container (it never started): asked for again.
  v1::RegisterNodeManagerRequest node = NodeRequest("h1:1");
  ASSERT_TRUE((*rm)->RegisterNode(node).ok());
  EXPECT_EQ((*rm)->GetApplication(app)->current_attempt(), 1);
  loop.Advance(200);
  ASSERT_EQ(launcher.launches.size(), 2u);
  std::string second =
      security::DecodeContainerToken(launcher.launches[1].second.container_token().identifier())
          ->container_id;
  EXPECT_NE(second, first_container);
  EXPECT_THAT(second, HasSubstr("container_e2_"));
  rm->reset();
  (void)(*store)->Close();
  std::filesystem::remove_all(dir);
}

TEST_F(ResourceManagerTest, UnknownNodeHeartbeatIsToldToResync) {
  EXPECT_EQ(Heartbeat("ghost:1").action(), v1::NODE_ACTION_RESYNC);
  v1::RegisterNodeManagerRequest bad;
  bad.set_node_id("nohostport");
  EXPECT_EQ(rm_->RegisterNode(bad).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::rm
