// RM high availability end to end: two real RmServers elect their active on a real ZooKeeper
// (started by the test on a free loopback port) and share its state store. The standby
// answers UNAVAILABLE naming the active; the active's leaving (shutdown, manual failover, lost
// ZooKeeper) hands over to the other, which recovers the applications from ZooKeeper.
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_server.h"
#include "store/test_zookeeper.h"
#include "store/zk_client.h"
#include "web/rm_web_server.h"
#include "weft/v1/admin.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

class RmHaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::TestZooKeeper::Options zo;
    zo.tick_ms = 200;  // sessions of 400 ms..20 s
    auto zk = store::TestZooKeeper::Start(zo);
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = *std::move(zk);
  }
  void TearDown() override {
    for (int i : {0, 1}) StopRm(i);
  }

  // Stops RM `i`: its web server first (it posts to the RM's loop), then the RM.
  void StopRm(int i) {
    webs_[i].reset();
    rms_[i].reset();
  }

  // Starts RM `i` (rm1, rm2) as a standby and lets it join the election.
  void StartRm(int i) {
    StopRm(i);
    RmServerOptions o;
    o.auth.mode = UserAuthentication::kDeclared;
    o.auth.admins = {"ops"};
    o.rm.pass_interval_ms = 20;
    HaOptions ha;
    ha.rm_id = i == 0 ? "rm1" : "rm2";
    ha.zk_connect = zk_->connect_string();
    ha.zk_auth = zk_->auth();
    ha.zk_root = "/weft-test";
    ha.session_timeout_ms = 1000;
    ha.poll_interval_ms = 50;
    o.ha = ha;
    auto s = RmServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    rms_[i] = *std::move(s);
    EXPECT_FALSE(rms_[i]->ha_status().active) << "an HA RM starts as a standby";
    web::RmWebOptions wo;
    wo.port = 0;
    wo.refresh_ms = 50;
    auto web = web::RmWebServer::Start(rms_[i].get(), wo);
    ASSERT_TRUE(web.ok()) << web.status();
    webs_[i] = *std::move(web);
    ASSERT_TRUE(rms_[i]->JoinElection(webs_[i]->address()).ok());
  }

  // Waits (bounded) until RM `i` is active / knows `active_id` as the active.
  bool WaitActive(int i, absl::Duration limit = absl::Seconds(20)) {
    return PollUntil([&] { return rms_[i] && rms_[i]->ha_status().active; }, limit,
                     absl::Milliseconds(20));
  }
  bool WaitKnowsActive(int i, const std::string& active_id) {
    return PollUntil(
        [&] {
          HaStatus h = rms_[i]->ha_status();
          return h.leader.has_value() && h.leader->rm_id == active_id;
        },
        absl::Seconds(20), absl::Milliseconds(20));
  }

  std::unique_ptr<v1::ClientService::Stub> Client(int i) {
    return v1::ClientService::NewStub(
        grpc::CreateChannel(rms_[i]->address(), grpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<v1::AdminService::Stub> Admin(int i) {
    return v1::AdminService::NewStub(
        grpc::CreateChannel(rms_[i]->address(), grpc::InsecureChannelCredentials()));
  }

  // Submits an application to RM `i` as alice; returns its id.
  std::string Submit(int i) {
    auto client = Client(i);
    grpc::ClientContext c1;
    v1::NewApplicationResponse app;
    EXPECT_TRUE(client->NewApplication(&c1, {}, &app).ok());
    grpc::ClientContext c2;
    c2.AddMetadata("weft-user", "alice");
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->set_name("ha-app");
    sub.mutable_context()->mutable_am_container_spec()->add_command("sleep 100");
    v1::SubmitApplicationResponse resp;
    grpc::Status st = client->SubmitApplication(&c2, sub, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
    return app.application_id();
  }

  std::unique_ptr<store::TestZooKeeper> zk_;
  std::unique_ptr<RmServer> rms_[2];
  std::unique_ptr<web::RmWebServer> webs_[2];
};

TEST_F(RmHaTest, OneActiveAndAStandbyThatNamesIt) {
  StartRm(0);
  ASSERT_TRUE(WaitActive(0));
  StartRm(1);
  ASSERT_TRUE(WaitKnowsActive(1, "rm1"));
  EXPECT_FALSE(rms_[1]->ha_status().active);

  // The standby refuses client calls with UNAVAILABLE, naming the active in the message and
  // in trailing metadata, which is how clients find it.
  grpc::ClientContext ctx;
  v1::ListApplicationsResponse apps;
  grpc::Status st = Client(1)->ListApplications(&ctx, {}, &apps);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(st.error_message(), HasSubstr("rm2 is standby; the active is rm1 at " +
                                            rms_[0]->address()));
  auto hint = ctx.GetServerTrailingMetadata().find("weft-active-rm");
  ASSERT_NE(hint, ctx.GetServerTrailingMetadata().end());
  EXPECT_EQ(std::string(hint->second.data(), hint->second.size()), rms_[0]->address());

  // GetServiceState is answered by both.
  for (int i : {0, 1}) {
    grpc::ClientContext c;
    v1::GetServiceStateResponse state;
    ASSERT_TRUE(Admin(i)->GetServiceState(&c, {}, &state).ok());
    EXPECT_TRUE(state.ha_enabled());
    EXPECT_EQ(state.ha_state(), i == 0 ? "ACTIVE" : "STANDBY");
    EXPECT_EQ(state.rm_id(), i == 0 ? "rm1" : "rm2");
    EXPECT_EQ(state.active_rm_id(), "rm1");
    EXPECT_EQ(state.active_address(), rms_[0]->address());
  }
  grpc::ClientContext c;
  v1::ListApplicationsResponse ok_apps;
  EXPECT_TRUE(Client(0)->ListApplications(&c, {}, &ok_apps).ok());
}

TEST_F(RmHaTest, TheStandbysWebRedirectsToTheActive) {
  StartRm(0);
  ASSERT_TRUE(WaitActive(0));
  StartRm(1);
  ASSERT_TRUE(WaitKnowsActive(1, "rm1"));

  httplib::Client standby("127.0.0.1", webs_[1]->port());
  auto r = standby.Get("/ws/v1/cluster/apps?state=RUNNING");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 307);
  EXPECT_EQ(r->get_header_value("Location"),
            "http://" + webs_[0]->address() + "/ws/v1/cluster/apps?state=RUNNING");
  EXPECT_THAT(r->body, HasSubstr("rm2 is standby; the active is rm1"));
  auto metrics = standby.Get("/metrics");  // each RM's own
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);

  httplib::Client active("127.0.0.1", webs_[0]->port());
  std::string body;
  for (absl::Time end = absl::Now() + absl::Seconds(10); absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(50))) {
    // No snapshot yet (503), or one that predates the activation, until the RM's first one.
    auto info = active.Get("/ws/v1/cluster/info");
    ASSERT_TRUE(info);
    body = info->body;
    if (info->status == 200 && absl::StrContains(body, "rm1")) break;
  }
  EXPECT_THAT(body, HasSubstr("\"haState\":\"ACTIVE\""));
  EXPECT_THAT(body, HasSubstr("this is rm1"));
  EXPECT_THAT(body, HasSubstr("weft-zookeeper"));
}

TEST_F(RmHaTest, TheStandbyTakesOverWithTheApplications) {
  StartRm(0);
  ASSERT_TRUE(WaitActive(0));
  StartRm(1);
  ASSERT_TRUE(WaitKnowsActive(1, "rm1"));
  const std::string app = Submit(0);
  grpc::ClientContext c0;
  v1::GetServiceStateResponse before;
  ASSERT_TRUE(Admin(0)->GetServiceState(&c0, {}, &before).ok());

  StopRm(0);  // the active stops: its leader node goes with its session
  ASSERT_TRUE(WaitActive(1, absl::Seconds(10)));

  grpc::ClientContext c1;
  c1.AddMetadata("weft-user", "alice");
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  grpc::Status st = Client(1)->GetApplication(&c1, get, &report);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(report.report().name(), "ha-app");
  grpc::ClientContext c2;
  v1::GetServiceStateResponse after;
  ASSERT_TRUE(Admin(1)->GetServiceState(&c2, {}, &after).ok());
  EXPECT_GT(after.rm_epoch(), before.rm_epoch()) << "each activation takes a new epoch";

  // The old one comes back as a standby and names rm2.
  StartRm(0);
  ASSERT_TRUE(WaitKnowsActive(0, "rm2"));
  EXPECT_FALSE(rms_[0]->ha_status().active);
}

TEST_F(RmHaTest, ManualFailover) {
  StartRm(0);
  ASSERT_TRUE(WaitActive(0));
  StartRm(1);
  ASSERT_TRUE(WaitKnowsActive(1, "rm1"));
  const std::string app = Submit(0);

  // Only a cluster admin may, and only on the active.
  {
    grpc::ClientContext c;
    c.AddMetadata("weft-user", "mallory");
    v1::TransitionToStandbyResponse r;
    EXPECT_EQ(Admin(0)->TransitionToStandby(&c, {}, &r).error_code(),
              grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext c;
    c.AddMetadata("weft-user", "ops");
    v1::TransitionToStandbyResponse r;
    grpc::Status st = Admin(1)->TransitionToStandby(&c, {}, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << st.error_message();
  }
  {
    grpc::ClientContext c;
    c.AddMetadata("weft-user", "ops");
    v1::TransitionToStandbyRequest bad;
    bad.set_hold_ms(-1);
    v1::TransitionToStandbyResponse r;
    grpc::Status st = Admin(0)->TransitionToStandby(&c, bad, &r);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(st.error_message(), HasSubstr("hold_ms -1 is negative"));
  }
  EXPECT_TRUE(rms_[0]->ha_status().active);

  grpc::ClientContext c;
  c.AddMetadata("weft-user", "ops");
  v1::TransitionToStandbyRequest req;
  req.set_hold_ms(30000);
  v1::TransitionToStandbyResponse r;
  grpc::Status st = Admin(0)->TransitionToStandby(&c, req, &r);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(rms_[0]->ha_status().active) << "standby when the call returns";
  ASSERT_TRUE(WaitActive(1, absl::Seconds(10)));
  ASSERT_TRUE(WaitKnowsActive(0, "rm2"));

  grpc::ClientContext c1;
  c1.AddMetadata("weft-user", "alice");
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  EXPECT_TRUE(Client(1)->GetApplication(&c1, get, &report).ok());
}

TEST_F(RmHaTest, ARestartedRmClearsTheLeaderNodeOfItsEarlierRun) {
  // The leader node of a "killed" rm1: held by a session that stays alive for 60 s.
  auto zk = store::zk::ZkClient::Create(zk_->connect_string(), 60000, zk_->auth());
  ASSERT_TRUE(zk.ok()) << zk.status();
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  ASSERT_TRUE((*zk)->Connect(deadline).ok());
  using Op = store::zk::ZkClient::Op;
  ASSERT_TRUE((*zk)->Multi({Op::Create("/weft-test", "")}, deadline).ok());
  auto made = (*zk)->Multi(
      {Op::CreateEphemeral("/weft-test/leader",
                           EncodeLeaderInfo({"rm1", "127.0.0.1:1", ""}))},
      deadline);
  ASSERT_TRUE(made.ok() && made->rc == ZOK);

  // rm2 must not touch another RM's node: it waits for that session to end.
  StartRm(1);
  ASSERT_TRUE(WaitKnowsActive(1, "rm1"));
  absl::SleepFor(absl::Milliseconds(500));
  EXPECT_FALSE(rms_[1]->ha_status().active);
  // rm1 restarted: the node names it under a session that is not its own, so it is its dead
  // earlier run's; it goes at once and an RM is active long before that session could expire.
  StartRm(0);
  const bool any_active =
      PollUntil([&] { return rms_[0]->ha_status().active || rms_[1]->ha_status().active; },
                absl::Seconds(10), absl::Milliseconds(20));
  EXPECT_TRUE(any_active);
}

TEST_F(RmHaTest, AnActiveCutOffFromZooKeeperStepsDown) {
  StartRm(0);
  ASSERT_TRUE(WaitActive(0));
  // A hung ZooKeeper: the active cannot know whether its session lives on, so it stops
  // serving before the server could expire it and elect another.
  ASSERT_TRUE(zk_->Pause().ok());
  PollUntil([&] { return !rms_[0]->ha_status().active; }, absl::Seconds(10),
            absl::Milliseconds(20));
  EXPECT_FALSE(rms_[0]->ha_status().active);
  grpc::ClientContext ctx;
  v1::ListApplicationsResponse apps;
  EXPECT_EQ(Client(0)->ListApplications(&ctx, {}, &apps).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // ZooKeeper back: an RM leads again.
  ASSERT_TRUE(zk_->Resume().ok());
  EXPECT_TRUE(WaitActive(0, absl::Seconds(20))) << zk_->LogTail();
}

}  // namespace
}  // namespace weft::rm
