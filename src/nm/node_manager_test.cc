// Copyright Weft authors. Tests of the NodeManager daemon: real gRPC on 127.0.0.1 port 0
// against an in-process fake RM, real container processes, and (as root) real cgroups.
#include "nm/node_manager.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/rm_failover.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nm/cgroups.h"
#include "nm/log_aggregator.h"
#include "nm/fake_rm_test_util.h"
#include "nm/nm_test_fixture.h"
#include "security/master_key.h"
#include "security/secret_source.h"
#include "security/tokens.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::nm {
namespace {

using google::protobuf::util::MessageDifferencer;

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using testing::FakeRm;
using testing::FindStatus;
using testing::kHeartbeatMs;
using testing::kHourMs;
using testing::kWait;

bool IsRoot() { return geteuid() == 0; }

class NodeManagerTest : public testing::NmTestFixture {
 protected:
  NodeManagerTest() : NmTestFixture("weft_nm_test") {}
  NodeManagerOptions Options(bool use_cgroups = false) { return BaseOptions(use_cgroups); }

  security::ContainerTokenData TokenData(const std::string& container_id,
                                         const std::string& app_id = "application_1_0001") {
    security::ContainerTokenData data;
    data.container_id = container_id;
    data.node_id = nm_->node_id();
    data.user = "alice";
    data.resource = "memory-mb=128,vcores=1";
    data.expiry_ms = loop_.NowMs() + 600'000;
    data.rm_epoch = 1;
    data.app_id = app_id;
    return data;
  }

  static v1::StartContainerRequest Request(v1::Token token, std::vector<std::string> command) {
    v1::StartContainerRequest request;
    *request.mutable_container_token() = std::move(token);
    for (std::string& arg : command) request.mutable_launch_context()->add_command(arg);
    return request;
  }

  v1::StartContainersResponse Start(std::vector<v1::StartContainerRequest> requests) {
    v1::StartContainersRequest request;
    for (auto& one : requests) *request.add_requests() = std::move(one);
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::StartContainersResponse StartOne(const std::string& container_id,
                                       std::vector<std::string> command) {
    return Start({Request(rm_->IssueToken(TokenData(container_id)), std::move(command))});
  }

  // Stop and status calls as the AM makes them: with each container's token (a valid one
  // for this node, issued by the RM for the id; none for an empty id).
  template <typename Request>
  void AddTokens(const std::vector<std::string>& ids, Request* request) {
    for (const std::string& id : ids) {
      request->add_container_ids(id);
      if (!id.empty()) *request->add_container_tokens() = rm_->IssueToken(TokenData(id));
    }
  }

  v1::StopContainersResponse Stop(std::vector<std::string> ids) {
    v1::StopContainersRequest request;
    AddTokens(ids, &request);
    return StopRaw(request);
  }

  v1::StopContainersResponse StopRaw(const v1::StopContainersRequest& request) {
    v1::StopContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StopContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::GetContainerStatusesResponse Statuses(std::vector<std::string> ids) {
    v1::GetContainerStatusesRequest request;
    AddTokens(ids, &request);
    return StatusesRaw(request);
  }

  v1::GetContainerStatusesResponse StatusesRaw(const v1::GetContainerStatusesRequest& request) {
    v1::GetContainerStatusesResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->GetContainerStatuses(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }
};

TEST_F(NodeManagerTest, RegistersCapabilityRackAndMissingFeatures) {
  NodeManagerOptions options = Options();
  options.capability = Resource::Of(4096, 3, 100);
  options.rack = "/rack7";
  StartNm(options);
  EXPECT_EQ(nm_->node_id(), absl::StrCat("127.0.0.1:", nm_->port()));
  v1::RegisterNodeManagerRequest registration =
      rm_->With([](FakeRm& rm) { return rm.registrations_.at(0); });
  EXPECT_EQ(registration.node_id(), nm_->node_id());
  EXPECT_EQ(registration.rack(), "/rack7");
  EXPECT_EQ(registration.capability().values().at("memory-mb"), 4096);
  EXPECT_EQ(registration.capability().values().at("vcores"), 3);
  EXPECT_EQ(registration.capability().values().at("network-mbps"), 100);
  EXPECT_THAT(registration.running_containers(), IsEmpty());
  // network-mbps is offered without a network interface to shape: said, not hidden.
  EXPECT_THAT(registration.missing_features(),
              ElementsAre(HasSubstr("use_cgroups=false"), HasSubstr("not enforced")));
  EXPECT_THAT(nm_->missing_features(),
              ElementsAre(HasSubstr("use_cgroups=false"), HasSubstr("not enforced")));
  EXPECT_EQ(registration.network_isolation(), "");
  // Heartbeats follow, from response id 0 on, healthy.
  v1::NodeHeartbeatRequest first = rm_->With([](FakeRm& rm) { return rm.heartbeats_.at(0); });
  EXPECT_EQ(first.node_id(), nm_->node_id());
  EXPECT_EQ(first.response_id(), 0);
  EXPECT_TRUE(first.health().healthy());
  EXPECT_GT(first.last_known_container_key_id(), 0);
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return rm.heartbeats_.size() >= 3; }));
  EXPECT_EQ(rm_->With([](FakeRm& rm) { return rm.heartbeats_.at(2).response_id(); }), 2);
}

TEST_F(NodeManagerTest, DetectsCapabilityWhenNotConfigured) {
  NodeManagerOptions options = Options();
  options.capability = Resource();
  StartNm(options);
  EXPECT_GT(nm_->capability()[kMemoryMb], 0);
  EXPECT_EQ(nm_->capability()[kVcores], sysconf(_SC_NPROCESSORS_ONLN));
  v1::RegisterNodeManagerRequest registration =
      rm_->With([](FakeRm& rm) { return rm.registrations_.at(0); });
  EXPECT_EQ(registration.capability().values().at("memory-mb"), nm_->capability()[kMemoryMb]);
}

TEST_F(NodeManagerTest, RejectsBadOptions) {
  NodeManagerOptions options = Options();
  options.work_root = "relative";
  EXPECT_EQ(NodeManager::Start(options, &loop_).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = Options();
  options.rm_tracker_address = "";
  EXPECT_EQ(NodeManager::Start(options, &loop_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NodeManagerTest, CgroupsRequiredButUnusableFailsStart) {
  if (IsRoot()) GTEST_SKIP() << "as root cgroups are usable; this checks the non-root refusal";
  absl::StatusOr<std::unique_ptr<NodeManager>> nm =
      NodeManager::Start(Options(/*use_cgroups=*/true), &loop_);
  ASSERT_FALSE(nm.ok());
  EXPECT_EQ(nm.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nm.status().message(), HasSubstr("use_cgroups=false"));
}

TEST_F(NodeManagerTest, BandwidthIsolationThatCannotBeSetUpFailsStart) {
  NodeManagerOptions options = Options(/*use_cgroups=*/false);
  options.network_interface = "weftnosuch0";
  options.link_mbps = 200;
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
  ASSERT_FALSE(nm.ok());
  EXPECT_EQ(nm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nm.status().message(), HasSubstr("needs cgroups"));
  if (!IsRoot()) return;  // the rest needs cgroups
  options.use_cgroups = true;
  nm = NodeManager::Start(options, &loop_);
  ASSERT_FALSE(nm.ok());
  EXPECT_EQ(nm.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(nm.status().message(), HasSubstr("interface 'weftnosuch0' does not exist"));
}

TEST_F(NodeManagerTest, RunsContainerAndReportsItsExitStatusToTheRm) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000002";
  v1::StartContainersResponse started = StartOne(id, {"echo hi; echo \"$FOO\" >&2; exit 3"});
  EXPECT_THAT(started.succeeded(), ElementsAre(id));
  EXPECT_THAT(started.failed(), IsEmpty());

  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), 3);
  EXPECT_EQ(ReadLog(id, "stdout"), "hi\n");
  EXPECT_TRUE(std::filesystem::is_directory(work_root_ / "application_1_0001" / id));

  v1::GetContainerStatusesResponse statuses = Statuses({id});
  ASSERT_EQ(statuses.statuses_size(), 1);
  EXPECT_EQ(statuses.statuses(0).state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(statuses.statuses(0).exit_status(), 3);

  // Acknowledged: later heartbeats no longer carry it.
  int acked = rm_->With([&](FakeRm& rm) { return rm.CompletedIndex(id); });
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) { return rm.heartbeats_.size() > acked + 2u; }));
  EXPECT_EQ(rm_->With([&](FakeRm& rm) { return rm.CompletedIndex(id, acked + 1); }), -1);
}

TEST_F(NodeManagerTest, PassesEnvironmentAndArgv) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000003";
  v1::StartContainerRequest request = Request(
      rm_->IssueToken(TokenData(id)), {"/bin/sh", "-c", "echo \"$FOO $CONTAINER_ID\"", "x"});
  (*request.mutable_launch_context()->mutable_environment())["FOO"] = "bar";
  v1::StartContainersResponse started = Start({request});
  EXPECT_THAT(started.succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), 0);
  EXPECT_EQ(ReadLog(id, "stdout"), absl::StrCat("bar ", id, "\n"));
}

TEST_F(NodeManagerTest, CompletedStatusSurvivesALostHeartbeat) {
  StartNm(Options());
  rm_->With([](FakeRm& rm) {
    rm.fail_heartbeats_with_completed_ = 2;
    return 0;
  });
  const std::string id = "container_e1_1_0001_01_000004";
  EXPECT_THAT(StartOne(id, {"exit 7"}).succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), 7);
  rm_->With([&](FakeRm& rm) {
    EXPECT_EQ(rm.failed_heartbeats_.size(), 2u);
    for (const v1::NodeHeartbeatRequest& lost : rm.failed_heartbeats_) {
      EXPECT_NE(FindStatus(lost, id, v1::CONTAINER_COMPLETE), nullptr);
    }
    return 0;
  });
}

TEST_F(NodeManagerTest, RefusesForgedExpiredWrongNodeAndReplayedTokens) {
  StartNm(Options());
  security::MasterKey forged_key = rm_->current_key();
  forged_key.secret[0] ^= 0x5a;
  security::ContainerTokenData expired = TokenData("container_e1_1_0001_01_000011");
  expired.expiry_ms = loop_.NowMs() - 1;
  security::ContainerTokenData other_node = TokenData("container_e1_1_0001_01_000012");
  other_node.node_id = "127.0.0.1:1";
  security::MasterKey unknown_key = rm_->current_key();
  unknown_key.id = 999;
  const std::string replayed = "container_e1_1_0001_01_000014";
  v1::Token replay_token = rm_->IssueToken(TokenData(replayed));
  ASSERT_THAT(Start({Request(replay_token, {"sleep 100"})}).succeeded(), ElementsAre(replayed));

  v1::StartContainersResponse response = Start({
      Request(rm_->IssueToken(TokenData("container_e1_1_0001_01_000010"), forged_key), {"true"}),
      Request(rm_->IssueToken(expired), {"true"}),
      Request(rm_->IssueToken(other_node), {"true"}),
      Request(rm_->IssueToken(TokenData("container_e1_1_0001_01_000013"), unknown_key), {"true"}),
      Request(replay_token, {"true"}),
  });
  EXPECT_THAT(response.succeeded(), IsEmpty());
  ASSERT_EQ(response.failed_size(), 5);
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"container_e1_1_0001_01_000010", "bad signature"},
      {"container_e1_1_0001_01_000011", "expired at"},
      {"container_e1_1_0001_01_000012", "issued for node 127.0.0.1:1, this is node"},
      {"container_e1_1_0001_01_000013", "unknown master key 999"},
      {replayed, "already used (replay)"},
  };
  for (int i = 0; i < 5; ++i) {
    const v1::ContainerFailure& failure = response.failed(i);
    EXPECT_EQ(failure.container_id(), expected[i].first);
    EXPECT_THAT(failure.message(),
                AllOf(HasSubstr("PERMISSION_DENIED"),
                      HasSubstr(absl::StrCat("container token for ", expected[i].first, ": ")),
                      HasSubstr(expected[i].second)));
    if (i < 4) {
      // Nothing ran: no log directory, unknown to the NM.
      EXPECT_FALSE(std::filesystem::exists(work_root_ / "logs" / expected[i].first));
      EXPECT_EQ(Statuses({expected[i].first}).failed_size(), 1);
    }
  }
  // The replay started nothing new: the first start still runs.
  v1::GetContainerStatusesResponse statuses = Statuses({replayed});
  ASSERT_EQ(statuses.statuses_size(), 1);
  EXPECT_EQ(statuses.statuses(0).state(), v1::CONTAINER_RUNNING);
}

TEST_F(NodeManagerTest, MalformedRequestsAreFailuresNotErrors) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000020";
  v1::Token token = rm_->IssueToken(TokenData(id));
  v1::Token garbage;
  garbage.set_identifier("xyz");
  garbage.set_password("abc");
  v1::StartContainersResponse response = Start({
      Request(v1::Token(), {"true"}),
      Request(token, {}),
      Request(token, {"   "}),
      Request(garbage, {"true"}),
  });
  EXPECT_THAT(response.succeeded(), IsEmpty());
  ASSERT_EQ(response.failed_size(), 4);
  EXPECT_THAT(response.failed(0).message(), HasSubstr("missing container token"));
  EXPECT_EQ(response.failed(1).container_id(), id);
  EXPECT_THAT(response.failed(1).message(), HasSubstr("empty command"));
  EXPECT_THAT(response.failed(2).message(), HasSubstr("empty command"));
  EXPECT_THAT(response.failed(3).message(), HasSubstr("malformed container token identifier"));
  // A malformed launch context does not spend the token.
  EXPECT_THAT(Start({Request(token, {"true"})}).succeeded(), ElementsAre(id));

  // A token whose resource does not parse is refused before anything runs.
  security::ContainerTokenData bad_resource = TokenData("container_e1_1_0001_01_000021");
  bad_resource.resource = "memory-mb=lots";
  v1::StartContainersResponse refused = Start({Request(rm_->IssueToken(bad_resource), {"true"})});
  ASSERT_EQ(refused.failed_size(), 1);
  EXPECT_THAT(refused.failed(0).message(), HasSubstr("bad item 'memory-mb=lots'"));

  v1::StopContainersResponse stopped = Stop({"", "container_e1_1_0001_01_000099"});
  ASSERT_EQ(stopped.failed_size(), 2);
  EXPECT_THAT(stopped.failed(0).message(), HasSubstr("empty container id"));
  EXPECT_THAT(stopped.failed(1).message(), HasSubstr("not known here"));
  v1::GetContainerStatusesResponse statuses = Statuses({""});
  ASSERT_EQ(statuses.failed_size(), 1);
  EXPECT_THAT(statuses.failed(0).message(), HasSubstr("empty container id"));
}

TEST_F(NodeManagerTest, StopContainersStopsALongRunningContainer) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000030";
  ASSERT_THAT(StartOne(id, {"sleep 100"}).succeeded(), ElementsAre(id));
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
    return !rm.heartbeats_.empty() &&
           FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING) != nullptr;
  }));
  v1::StopContainersResponse stopped = Stop({id});
  EXPECT_THAT(stopped.succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_AM);
  EXPECT_THAT(completed->diagnostics(), HasSubstr("StopContainers"));
  // Stopping a completed container again is a no-op success.
  EXPECT_THAT(Stop({id}).succeeded(), ElementsAre(id));
}

TEST_F(NodeManagerTest, StopAndStatusNeedTheContainersOwnTokenForThisNode) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000040";
  const std::string other = "container_e1_1_0002_01_000041";  // another app's container
  ASSERT_THAT(StartOne(id, {"sleep 100"}).succeeded(), ElementsAre(id));
  auto refused = [&](const v1::StopContainersRequest& request, const std::string& why) {
    v1::StopContainersResponse r = StopRaw(request);
    EXPECT_THAT(r.succeeded(), IsEmpty()) << why;
    ASSERT_EQ(r.failed_size(), 1) << why;
    EXPECT_THAT(r.failed(0).message(), AllOf(HasSubstr("PERMISSION_DENIED"), HasSubstr(why)));
  };
  // No token at all (the attack of issue 14: any local caller stopped any container).
  v1::StopContainersRequest bare;
  bare.add_container_ids(id);
  refused(bare, "no container token for " + id);
  // Another container's valid token does not cover this one.
  v1::StopContainersRequest wrong = bare;
  *wrong.add_container_tokens() = rm_->IssueToken(TokenData(other, "application_1_0002"));
  refused(wrong, "no container token for " + id);
  // A token for this container but another node.
  security::ContainerTokenData elsewhere = TokenData(id);
  elsewhere.node_id = "otherhost:1";
  v1::StopContainersRequest moved = bare;
  *moved.add_container_tokens() = rm_->IssueToken(elsewhere);
  refused(moved, "issued for node otherhost:1");
  // A forged one (right fields, wrong key).
  v1::StopContainersRequest forged = bare;
  v1::Token t = rm_->IssueToken(TokenData(id));
  t.set_password(std::string(32, 'x'));
  *forged.add_container_tokens() = t;
  refused(forged, "bad signature");
  // Statuses are private too.
  v1::GetContainerStatusesRequest peek;
  peek.add_container_ids(id);
  v1::GetContainerStatusesResponse seen = StatusesRaw(peek);
  EXPECT_EQ(seen.statuses_size(), 0);
  ASSERT_EQ(seen.failed_size(), 1);
  EXPECT_THAT(seen.failed(0).message(), HasSubstr("PERMISSION_DENIED"));
  // It still runs; with its own token (expired since: control calls do not check that) the
  // owner stops it.
  v1::GetContainerStatusesResponse running = Statuses({id});
  ASSERT_EQ(running.statuses_size(), 1);
  EXPECT_EQ(running.statuses(0).state(), v1::CONTAINER_RUNNING);
  security::ContainerTokenData old = TokenData(id);
  old.expiry_ms = loop_.NowMs() - 1;
  v1::StopContainersRequest owner = bare;
  *owner.add_container_tokens() = rm_->IssueToken(old);
  EXPECT_THAT(StopRaw(owner).succeeded(), ElementsAre(id));
}

TEST_F(NodeManagerTest, StopEscalatesToSigkillAfterTheGrace) {
  NodeManagerOptions options = Options();
  options.stop_grace_ms = 50;
  StartNm(options);
  const std::string id = "container_e1_1_0001_01_000031";
  // SIGTERM is ignored by the shell and, inherited, by sleep.
  ASSERT_THAT(StartOne(id, {"trap '' TERM; sleep 100"}).succeeded(), ElementsAre(id));
  EXPECT_THAT(Stop({id}).succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_AM);
}

TEST_F(NodeManagerTest, ResyncMakesItRegisterAgainWithItsRunningContainers) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000040";
  ASSERT_THAT(StartOne(id, {"sleep 100"}).succeeded(), ElementsAre(id));
  rm_->With([](FakeRm& rm) {
    rm.next_action_ = v1::NODE_ACTION_RESYNC;
    return 0;
  });
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return rm.registrations_.size() >= 2; }));
  v1::RegisterNodeManagerRequest again =
      rm_->With([](FakeRm& rm) { return rm.registrations_.at(1); });
  EXPECT_EQ(again.node_id(), nm_->node_id());
  ASSERT_EQ(again.running_containers_size(), 1);
  EXPECT_EQ(again.running_containers(0).container_id(), id);
  EXPECT_EQ(again.running_containers(0).state(), v1::CONTAINER_RUNNING);
  // Heartbeats resume, numbered from 0 again: a second heartbeat with response_id 0 arrives
  // (the first was before the resync). Counting them avoids racing with heartbeats in flight.
  EXPECT_TRUE(rm_->WaitUntil([](FakeRm& rm) {
    return std::count_if(rm.heartbeats_.begin(), rm.heartbeats_.end(),
                         [](const v1::NodeHeartbeatRequest& h) { return h.response_id() == 0; }) >=
           2;
  }));
}

// A standby RM's TrackerService: UNAVAILABLE, naming the active in the trailing metadata.
class StandbyTracker final : public v1::TrackerService::Service {
 public:
  explicit StandbyTracker(std::string active) : active_(std::move(active)) {}
  grpc::Status RegisterNodeManager(grpc::ServerContext* context,
                                   const v1::RegisterNodeManagerRequest*,
                                   v1::RegisterNodeManagerResponse*) override {
    return Refuse(context);
  }
  grpc::Status NodeHeartbeat(grpc::ServerContext* context, const v1::NodeHeartbeatRequest*,
                             v1::NodeHeartbeatResponse*) override {
    return Refuse(context);
  }
  int calls() {
    absl::MutexLock lock(&mu_);
    return calls_;
  }

 private:
  grpc::Status Refuse(grpc::ServerContext* context) {
    absl::MutexLock lock(&mu_);
    ++calls_;
    context->AddTrailingMetadata(kActiveRmMetadata, active_);
    return grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrCat("ResourceManager rm2 is standby; the active is rm1 at ", active_));
  }
  const std::string active_;
  absl::Mutex mu_;
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

TEST_F(NodeManagerTest, RejectsABadRmAddressList) {
  NodeManagerOptions options = Options();
  options.rm_tracker_address = absl::StrCat("127.0.0.1:", rm_port_, ",127.0.0.1:nope");
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
  EXPECT_EQ(nm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(nm.status().message(), HasSubstr("127.0.0.1:nope"));
}

TEST_F(NodeManagerTest, AStandbyRmLeadsTheNmToTheActive) {
  const std::string active = absl::StrCat("127.0.0.1:", rm_port_);
  StandbyTracker standby(active);
  int standby_port = 0;
  std::unique_ptr<grpc::Server> standby_server =
      testing::ServeOnLoopback(&standby, &standby_port);
  ASSERT_NE(standby_server, nullptr);
  NodeManagerOptions options = Options();
  options.rm_tracker_address = absl::StrCat("127.0.0.1:", standby_port, ",", active);
  StartNm(options);  // waits for a heartbeat at the active
  EXPECT_EQ(rm_->With([](FakeRm& rm) { return rm.registrations_.size(); }), 1u);
  EXPECT_EQ(standby.calls(), 1);
  nm_->Shutdown();
  standby_server->Shutdown();
}

TEST_F(NodeManagerTest, WhenTheActiveDiesTheNmRegistersWithTheNextRm) {
  // rm2 takes over when rm_ dies; it does not know the node, so it answers RESYNC.
  FakeRm rm2(loop_.NowMs());
  rm2.With([](FakeRm& rm) {
    rm.next_action_ = v1::NODE_ACTION_RESYNC;
    rm.rm_epoch_ = 2;
    return 0;
  });
  int port2 = 0;
  std::unique_ptr<grpc::Server> server2 = testing::ServeOnLoopback(&rm2, &port2);
  ASSERT_NE(server2, nullptr);
  NodeManagerOptions options = Options();
  options.rm_tracker_address = absl::StrCat("127.0.0.1:", rm_port_, ",127.0.0.1:", port2);
  StartNm(options);
  const std::string id = "container_e1_1_0001_01_000041";
  ASSERT_THAT(StartOne(id, {"sleep 100"}).succeeded(), ElementsAre(id));
  rm_server_->Shutdown();
  rm_server_.reset();
  ASSERT_TRUE(rm2.WaitUntil([](FakeRm& rm) { return !rm.registrations_.empty(); }));
  v1::RegisterNodeManagerRequest again = rm2.With([](FakeRm& rm) { return rm.registrations_[0]; });
  EXPECT_EQ(again.node_id(), nm_->node_id());
  ASSERT_EQ(again.running_containers_size(), 1);
  EXPECT_EQ(again.running_containers(0).container_id(), id);
  // It heartbeats to rm2 from then on, numbered from 0.
  EXPECT_TRUE(rm2.WaitUntil([](FakeRm& rm) {
    return !rm.heartbeats_.empty() && rm.heartbeats_.back().response_id() >= 1;
  }));
  nm_->Shutdown();
  server2->Shutdown();
}

TEST_F(NodeManagerTest, RmCleanupStopsContainersAndRemovesApplicationDirs) {
  StartNm(Options());
  const std::string app = "application_1_0002";
  const std::string c1 = "container_e1_1_0002_01_000001";
  const std::string c2 = "container_e1_1_0002_01_000002";
  v1::StartContainersResponse started =
      Start({Request(rm_->IssueToken(TokenData(c1, app)), {"sleep 100"}),
             Request(rm_->IssueToken(TokenData(c2, app)), {"sleep 100"})});
  ASSERT_THAT(started.succeeded(), ElementsAre(c1, c2));
  EXPECT_TRUE(std::filesystem::is_directory(work_root_ / app / c1));

  rm_->With([&](FakeRm& rm) {
    rm.containers_to_cleanup_.push_back(c1);
    return 0;
  });
  std::optional<v1::ContainerStatus> first = WaitCompleted(c1);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_RM);

  rm_->With([&](FakeRm& rm) {
    rm.apps_to_cleanup_.push_back(app);
    return 0;
  });
  std::optional<v1::ContainerStatus> second = WaitCompleted(c2);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->exit_status(), v1::CONTAINER_EXIT_KILLED_AFTER_APP_COMPLETION);
  // The cleanup ran on the loop before the heartbeat that reported c2.
  EXPECT_FALSE(std::filesystem::exists(work_root_ / app));
  EXPECT_TRUE(std::filesystem::exists(work_root_ / "logs" / c2 / "stdout"));
  // The finished application takes no new containers here.
  v1::StartContainersResponse late =
      Start({Request(rm_->IssueToken(TokenData("container_e1_1_0002_01_000003", app)), {"true"})});
  ASSERT_EQ(late.failed_size(), 1);
  EXPECT_THAT(late.failed(0).message(), HasSubstr("has finished on this node"));
}

// A finished application's logs outlive its work dir by log_retention_ms, then go too (the
// test above shows them kept under the default 3 h).
TEST_F(NodeManagerTest, FinishedApplicationsLogsAreDeletedAfterTheRetention) {
  NodeManagerOptions options = Options();
  options.log_retention_ms = 200;
  StartNm(options);
  const std::string app = "application_1_0003";
  const std::string c1 = "container_e1_1_0003_01_000001";
  ASSERT_THAT(Start({Request(rm_->IssueToken(TokenData(c1, app)), {"echo kept"})}).succeeded(),
              ElementsAre(c1));
  ASSERT_TRUE(WaitCompleted(c1).has_value());
  rm_->With([&](FakeRm& rm) {
    rm.apps_to_cleanup_.push_back(app);
    return 0;
  });
  // Bounded wait for the deletion (the NM's own timer): 10 s.
  const bool gone = PollUntil([&] { return !std::filesystem::exists(work_root_ / "logs" / c1); },
                              absl::Seconds(10), absl::Milliseconds(50));
  EXPECT_TRUE(gone);
  EXPECT_FALSE(std::filesystem::exists(work_root_ / app));
}

// With --log-aggregation-dir: the app's owner and view ACL come from its token, and its logs
// are aggregated at its cleanup, before the retention deletes them here.
TEST_F(NodeManagerTest, FinishedApplicationsLogsAreAggregatedBeforeTheyAreDeleted) {
  NodeManagerOptions options = Options();
  options.log_retention_ms = 200;
  const std::filesystem::path aggregated = work_root_.string() + "-aggregated";
  std::filesystem::remove_all(aggregated);
  options.log_aggregation_dir = aggregated.string();
  StartNm(options);
  const std::string app = "application_1_0004";
  const std::string c1 = "container_e1_1_0004_01_000001";
  security::ContainerTokenData data = TokenData(c1, app);
  data.view_acl = "bob ops";
  ASSERT_THAT(Start({Request(rm_->IssueToken(data), {"echo aggregated-line"})}).succeeded(),
              ElementsAre(c1));
  ASSERT_TRUE(WaitCompleted(c1).has_value());
  absl::StatusOr<AppLogOwner> owner = LogAggregator::ReadAppOwner(work_root_.string(), app);
  ASSERT_TRUE(owner.ok()) << owner.status();
  EXPECT_EQ(owner->user, "alice");
  EXPECT_EQ(owner->view_acl, "bob ops");
  rm_->With([&](FakeRm& rm) {
    rm.apps_to_cleanup_.push_back(app);
    return 0;
  });
  // Bounded wait for the node's own deletion: 10 s.
  const bool gone = PollUntil([&] { return !std::filesystem::exists(work_root_ / "logs" / c1); },
                              absl::Seconds(10), absl::Milliseconds(50));
  EXPECT_TRUE(gone);
  std::ifstream in(aggregated / "alice" / "logs" / app / nm_->node_id() / c1 / "stdout");
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "aggregated-line");
  // The owner record goes with the logs.
  EXPECT_FALSE(LogAggregator::ReadAppOwner(work_root_.string(), app).ok());
  std::filesystem::remove_all(aggregated);
}

TEST_F(NodeManagerTest, ShutdownStopsRunningContainers) {
  StartNm(Options());
  const std::string id = "container_e1_1_0001_01_000050";
  ASSERT_THAT(StartOne(id, {"sleep 100"}).succeeded(), ElementsAre(id));
  nm_->Shutdown();
  nm_->Shutdown();  // idempotent
  // Shutdown returned only once the container was reaped; its log dir stays.
  EXPECT_TRUE(std::filesystem::exists(work_root_ / "logs" / id));
}

// ---- With real cgroups (root only).

TEST_F(NodeManagerTest, CgroupLimitsFollowTheTokensResource) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to create cgroups";
  StartNm(Options(/*use_cgroups=*/true));
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> view =
      DetectCgroups("/sys/fs/cgroup", cgroup_hierarchy_);
  ASSERT_TRUE(view.ok()) << view.status();
  CgroupsHandler& cgroups = **view;
  EXPECT_EQ(nm_->missing_features(), cgroups.missing_features());
  v1::RegisterNodeManagerRequest registration =
      rm_->With([](FakeRm& rm) { return rm.registrations_.at(0); });
  EXPECT_EQ(std::vector<std::string>(registration.missing_features().begin(),
                                     registration.missing_features().end()),
            cgroups.missing_features());
  if (!cgroups.HasController("memory") || !cgroups.HasController("cpu")) {
    GTEST_SKIP() << "no memory or cpu controller: "
                 << absl::StrJoin(cgroups.missing_features(), "; ");
  }

  const std::string id = "container_e1_1_0001_01_000060";
  security::ContainerTokenData data = TokenData(id);
  data.resource = "memory-mb=256,vcores=2";
  ASSERT_THAT(Start({Request(rm_->IssueToken(data), {"sleep 100"})}).succeeded(), ElementsAre(id));
  auto read = [](const std::string& path) {
    std::ifstream in(path);
    std::string value;
    in >> value;
    return value;
  };
  const std::string memory_dir = cgroups.Path("memory", id);
  const std::string cpu_dir = cgroups.Path("cpu", id);
  if (cgroups.HasController("pids")) {  // 2 vcores at the default 512 per vcore
    EXPECT_EQ(read(cgroups.Path("pids", id) + "/pids.max"), "1024");
  }
  if (cgroups.version() == "v1") {
    EXPECT_EQ(read(memory_dir + "/memory.limit_in_bytes"), "268435456");
    EXPECT_EQ(read(cpu_dir + "/cpu.shares"), "2048");
  } else {
    EXPECT_EQ(read(memory_dir + "/memory.max"), "268435456");
    EXPECT_EQ(read(cpu_dir + "/cpu.weight"), absl::StrCat(internal::CpuSharesToWeight(2048)));
  }
  const std::string parent = cgroups.Path("memory", "");
  nm_->Shutdown();
  EXPECT_FALSE(std::filesystem::exists(memory_dir));
  EXPECT_FALSE(std::filesystem::exists(parent)) << "the hierarchy is removed on shutdown";
}

// The NM's disk and log limits reach its containers, and what they hit reaches the RM.
TEST_F(NodeManagerTest, DiskAndLogLimitsApplyAndAreReported) {
  NodeManagerOptions options = Options();
  options.container_disk_limit_mb = 2;
  options.container_log_limit_mb = 1;
  StartNm(options);
  const std::string disk = "container_e1_1_0001_01_000070";
  const std::string logs = "container_e1_1_0001_01_000071";
  ASSERT_THAT(StartOne(disk, {"head -c 8388608 /dev/zero > big; exec sleep 100"}).succeeded(),
              ElementsAre(disk));
  ASSERT_THAT(StartOne(logs, {"head -c 5242880 /dev/zero | tr '\\0' y; echo; echo end"})
                  .succeeded(),
              ElementsAre(logs));
  std::optional<v1::ContainerStatus> killed = WaitCompleted(disk);
  ASSERT_TRUE(killed.has_value());
  EXPECT_EQ(killed->exit_status(), 128 + SIGKILL);
  EXPECT_THAT(killed->diagnostics(),
              HasSubstr("over the disk limit of 2 MB (--container-disk-limit-mb)"));
  std::optional<v1::ContainerStatus> truncated = WaitCompleted(logs);
  ASSERT_TRUE(truncated.has_value());
  EXPECT_EQ(truncated->exit_status(), 0);
  EXPECT_THAT(truncated->diagnostics(),
              HasSubstr("stdout truncated: its oldest 4"));  // of 5 MB, at most 1 MB kept
  const std::string out = ReadLog(logs, "stdout");
  EXPECT_LE(out.size(), 1u << 20);
  EXPECT_TRUE(absl::EndsWith(out, "y\nend\n"));
}

TEST_F(NodeManagerTest, ContainerOverItsMemoryLimitIsReportedAsSuch) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to create cgroups";
  StartNm(Options(/*use_cgroups=*/true));
  const std::string id = "container_e1_1_0001_01_000061";
  security::ContainerTokenData data = TokenData(id);
  data.resource = "memory-mb=32,vcores=1";
  // Grows a shell string well past 32 MiB.
  ASSERT_THAT(Start({Request(rm_->IssueToken(data),
                             {"x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}"})})
                  .succeeded(),
              ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  if (completed->exit_status() == 0) GTEST_SKIP() << "the kernel did not enforce the limit";
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM)
      << completed->diagnostics();
}

// Application history (issue 31): a completed container's status carries when it ran, what its
// token granted and its lifetime usage, measured through its cgroups; the same figures in the
// heartbeat, GetContainerStatuses and a later registration's completed containers.
TEST_F(NodeManagerTest, ACompletedContainerReportsItsTimesAllocationAndLifetimeUsage) {
  if (!IsRoot()) GTEST_SKIP() << "needs root to create cgroups";
  StartNm(Options(/*use_cgroups=*/true));
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> view =
      DetectCgroups("/sys/fs/cgroup", cgroup_hierarchy_);
  ASSERT_TRUE(view.ok()) << view.status();
  if (!(*view)->HasController("memory") || !(*view)->HasController("cpuacct")) {
    GTEST_SKIP() << "no memory or cpuacct controller: "
                 << absl::StrJoin((*view)->missing_features(), "; ");
  }
  const std::string id = "container_e1_1_0001_01_000062";
  security::ContainerTokenData data = TokenData(id);
  data.resource = "memory-mb=256,vcores=1";
  // Holds 48 MiB in a shell string, then burns CPU until the test lets it end.
  constexpr int64_t kAllocated = 48 << 20;
  const int64_t before_ms = loop_.NowMs();
  ASSERT_THAT(Start({Request(rm_->IssueToken(data),
                             {"x=$(head -c 50331648 /dev/zero | tr '\\0' a); i=0; "
                              "while [ ! -e go ]; do i=$((i+1)); done; echo ${#x}"})})
                  .succeeded(),
              ElementsAre(id));
  // A heartbeat shows it running with its memory sampled over time: the NM has measured it.
  int64_t seen_mb_seconds = 0;
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
    if (rm.heartbeats_.empty()) return false;
    const v1::ContainerStatus* running =
        FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING);
    if (running == nullptr || running->usage().memory_rss_bytes() < kAllocated) return false;
    seen_mb_seconds = running->usage().memory_mb_seconds();
    return seen_mb_seconds >= 10;
  })) << "no heartbeat showed it holding 48 MiB for a while";
  std::ofstream(work_root_ / "application_1_0001" / id / "go").close();

  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  const int64_t after_ms = loop_.NowMs();
  std::cout << "completed: " << completed->ShortDebugString() << "\n";
  EXPECT_EQ(completed->exit_status(), 0) << completed->diagnostics();
  EXPECT_EQ(ReadLog(id, "stdout"), "50331648\n");
  EXPECT_GE(completed->start_time_ms(), before_ms);
  EXPECT_LE(completed->start_time_ms(), completed->finish_time_ms());
  EXPECT_LE(completed->finish_time_ms(), after_ms);
  EXPECT_EQ(completed->allocated().values().at("memory-mb"), 256);
  EXPECT_EQ(completed->allocated().values().at("vcores"), 1);
  EXPECT_GT(completed->usage().cpu_time_ms(), 0);
  if ((*view)->version() == "v1" || completed->usage().peak_memory_bytes() > 0) {
    EXPECT_GE(completed->usage().peak_memory_bytes(), kAllocated);
  } else {
    std::cout << "memory.peak not offered by this kernel (before 5.19): peak not checked\n";
  }
  EXPECT_GE(completed->usage().memory_mb_seconds(), seen_mb_seconds);
  EXPECT_EQ(completed->usage().memory_rss_bytes(), 0);

  v1::GetContainerStatusesResponse statuses = Statuses({id});
  ASSERT_EQ(statuses.statuses_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(statuses.statuses(0), *completed))
      << statuses.statuses(0).DebugString() << " vs " << completed->DebugString();

  // Registering again (RESYNC), the NM reports it among the completed ones, the same.
  rm_->With([](FakeRm& rm) {
    rm.next_action_ = v1::NODE_ACTION_RESYNC;
    return 0;
  });
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return rm.registrations_.size() >= 2; }));
  v1::RegisterNodeManagerRequest again =
      rm_->With([](FakeRm& rm) { return rm.registrations_.at(1); });
  ASSERT_EQ(again.completed_containers_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(again.completed_containers(0), *completed))
      << again.completed_containers(0).DebugString();
}

// Seed 004 step 6: with the AMRMProxy, an AM container's launch context is rewritten so that
// the AM talks only to this NM's proxy, with a token valid there only; the proxy forwards to the
// RM the launch named and forgets the attempt when its AM container ends.
TEST_F(NodeManagerTest, TheAmrmProxyTakesOverTheAmsTokenAndRmAddress) {
  NodeManagerOptions options = Options();
  options.amrmproxy.emplace();
  StartNm(options);
  const std::string id = "container_e1_1_0001_01_000001";
  const std::string attempt = "appattempt_1_0001_000001";
  security::MasterKey key;
  key.id = 1;
  key.secret = std::string(32, 'k');
  key.expires_ms = loop_.NowMs() + kHourMs;
  security::Token real = security::IssueAmRmToken({attempt, 0, loop_.NowMs() + kHourMs}, key);
  v1::Token real_proto;
  real_proto.set_identifier(real.identifier);
  real_proto.set_password(real.password);
  v1::StartContainerRequest request =
      Request(rm_->IssueToken(TokenData(id)), {"echo \"$WEFT_RM_ADDRESS\"; sleep 100"});
  auto& env = *request.mutable_launch_context()->mutable_environment();
  env["WEFT_APP_ATTEMPT_ID"] = attempt;
  env["WEFT_RM_ADDRESS"] = "127.0.0.1:1";  // no RM there
  (*request.mutable_launch_context()->mutable_tokens())["amrm"] = real_proto.SerializeAsString();
  ASSERT_THAT(Start({request}).succeeded(), ElementsAre(id));
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
    return !rm.heartbeats_.empty() &&
           FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING) != nullptr;
  }));
  // The AM got a proxy token, not the RM's.
  std::ifstream in(work_root_ / "application_1_0001" / id / ".tokens" / "amrm", std::ios::binary);
  std::stringstream raw;
  raw << in.rdbuf();
  v1::Token given;
  ASSERT_TRUE(given.ParseFromString(raw.str()));
  EXPECT_EQ(given.kind(), "AMRMProxyToken");
  EXPECT_NE(given.identifier(), real.identifier);

  auto proxy = v1::AmService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", nm_->port()), grpc::InsecureChannelCredentials()));
  auto register_with = [&](const v1::Token* token) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    if (token != nullptr) ctx.AddMetadata("weft-amrm-token-bin", token->SerializeAsString());
    v1::RegisterApplicationMasterResponse response;
    return proxy->RegisterApplicationMaster(&ctx, {}, &response);
  };
  // Authenticated, forwarded to the RM the launch named (which is not there).
  grpc::Status forwarded = register_with(&given);
  EXPECT_EQ(forwarded.error_code(), grpc::StatusCode::UNAVAILABLE) << forwarded.error_message();
  EXPECT_THAT(forwarded.error_message(), HasSubstr("127.0.0.1:1"));
  EXPECT_EQ(register_with(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(register_with(&real_proto).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // The AM container ends: its token is refused from then on. (Once it has written its
  // address: RUNNING does not mean that its shell has run the echo yet.)
  ASSERT_TRUE(PollUntil([&] { return !ReadLog(id, "stdout").empty(); }, kWait));
  ASSERT_THAT(Stop({id}).succeeded(), ElementsAre(id));
  ASSERT_TRUE(WaitCompleted(id).has_value());
  EXPECT_EQ(ReadLog(id, "stdout"), absl::StrCat(nm_->node_id(), "\n"));
  EXPECT_EQ(register_with(&given).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

}  // namespace
}  // namespace weft::nm
