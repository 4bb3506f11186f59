// Container turnaround without heartbeat waits (issue 17), on real daemons: an RmServer and a
// NodeManager on 127.0.0.1 port 0 whose periodic NM heartbeat and scheduling timer are both 10
// minutes, and an unmanaged AM in this process. A container's allocation must reach the AM
// through the event-driven pass and the long-poll Allocate, and its completion through the NM's
// out-of-band heartbeat: asserted by what each long-poll reply carries (a reply with nothing
// after its whole wait fails the test), not by timing the machine. The control test turns the
// out-of-band heartbeat off and sees the completion not arrive.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "am/am_client.h"
#include "common/test_poll.h"
#include "gtest/gtest.h"
#include "nm/node_manager.h"
#include "rm/rm_server.h"
#include "security/tokens.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft {
namespace {

constexpr int64_t kTenMinutesMs = 600000;
// The longest one long-poll Allocate is held: well below the periodic heartbeat, so a reply
// that carries the completion cannot have waited for it.
constexpr int64_t kWaitMs = 20000;

class EventDrivenTurnaroundTest : public ::testing::TestWithParam<bool> {
 protected:
  // GetParam(): whether the NM sends out-of-band heartbeats.
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("weft_turnaround_", getpid(), "_", GetParam());
    std::filesystem::create_directories(dir_);
    // The RM's state store lives here: its directory must be private (common/private_files.h).
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    rm::RmServerOptions ro;
    ro.auth.mode = rm::UserAuthentication::kDeclared;
    ro.rm.heartbeat_interval_ms = kTenMinutesMs;  // told to the NM
    ro.rm.pass_interval_ms = kTenMinutesMs;       // no timer-driven passes to speak of
    ro.state_store_path = (dir_ / "rm.db").string();
    auto rm = rm::RmServer::Start(std::move(ro));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
    loop_ = std::make_unique<ThreadEventLoop>();
    loop_->Start();
    nm::NodeManagerOptions no;
    no.rm_tracker_address = rm_->address();
    no.capability = Resource::Of(2048, 2);
    no.work_root = (dir_ / "nm").string();
    no.use_cgroups = geteuid() == 0;
    no.cgroup_hierarchy = absl::StrCat("weft_turnaround_", getpid(), "_", GetParam());
    no.stop_grace_ms = 500;
    no.run_as = nm::ContainerRunAs::kNmUser;
    no.out_of_band_heartbeat_gap_ms = GetParam() ? 10 : -1;
    auto nm = nm::NodeManager::Start(no, loop_.get());
    ASSERT_TRUE(nm.ok()) << nm.status();
    nm_ = std::move(*nm);
    client_ = v1::ClientService::NewStub(
        grpc::CreateChannel(rm_->address(), grpc::InsecureChannelCredentials()));
    // Registered (bounded wait on the RM's own view).
    PollUntil([&] { return Nodes() >= 1; }, absl::Seconds(10), absl::Milliseconds(50));
    ASSERT_EQ(Nodes(), 1);
  }
  void TearDown() override {
    am_.reset();
    if (nm_) nm_->Shutdown();
    nm_.reset();
    if (loop_) loop_->Stop();
    rm_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  int Nodes() {
    int n = 0;
    rm_->RunOnLoop([&](rm::ResourceManager& rm) { n = rm.scheduler().num_nodes(); });
    return n;
  }
  // Submits an unmanaged app as "alice" and connects this process as its AM.
  void StartUnmanagedAm() {
    grpc::ClientContext c1;
    c1.AddMetadata("weft-user", "alice");
    v1::NewApplicationResponse app;
    ASSERT_TRUE(client_->NewApplication(&c1, {}, &app).ok());
    grpc::ClientContext c2;
    c2.AddMetadata("weft-user", "alice");
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->set_unmanaged_am(true);
    v1::SubmitApplicationResponse r;
    grpc::Status s = client_->SubmitApplication(&c2, sub, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    v1::ApplicationReport report;
    PollUntil(
        [&] {
          grpc::ClientContext c3;
          c3.AddMetadata("weft-user", "alice");
          v1::GetApplicationRequest req;
          req.set_application_id(app.application_id());
          v1::GetApplicationResponse resp;
          if (client_->GetApplication(&c3, req, &resp).ok()) report = resp.report();
          return !report.amrm_token().identifier().empty();
        },
        absl::Seconds(10), absl::Milliseconds(50));
    ASSERT_FALSE(report.amrm_token().identifier().empty()) << "no AMRM token for the owner";
    am::AmEnvironment env;
    env.rm_address = rm_->address();
    env.application_id = app.application_id();
    env.amrm_token = report.amrm_token();
    auto data = security::DecodeAmRmToken(env.amrm_token.identifier());
    ASSERT_TRUE(data.ok()) << data.status();
    env.attempt_id = data->app_attempt_id;
    auto am = am::AmRmClient::Connect(env);
    ASSERT_TRUE(am.ok()) << am.status();
    am_ = std::move(*am);
    ASSERT_TRUE(am_->Register("localhost").ok());
    nm_client_ = std::make_unique<am::NmClient>(grpc::InsecureChannelCredentials());
  }
  void Ask(int n) {
    v1::ResourceRequest ask;
    ask.set_priority(1);
    ask.set_resource_name("*");
    ask.set_relax_locality(true);
    (*ask.mutable_capability()->mutable_values())["memory-mb"] = 128;
    (*ask.mutable_capability()->mutable_values())["vcores"] = 1;
    ask.set_num_containers(n);
    am_->Ask(ask);
  }

  std::filesystem::path dir_;
  std::unique_ptr<rm::RmServer> rm_;
  std::unique_ptr<ThreadEventLoop> loop_;
  std::unique_ptr<nm::NodeManager> nm_;
  std::unique_ptr<v1::ClientService::Stub> client_;
  std::unique_ptr<am::AmRmClient> am_;
  std::unique_ptr<am::NmClient> nm_client_;
};

// Three short containers one after another: each allocation and each completion reaches the
// AM in the long-poll reply itself, never after the 10-minute heartbeat or pass timer.
TEST_P(EventDrivenTurnaroundTest, CompletionsReachTheAmWithoutAHeartbeatInterval) {
  ASSERT_NO_FATAL_FAILURE(StartUnmanagedAm());
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    Ask(1);
    absl::StatusOr<v1::AllocateResponse> placed = am_->Allocate(0, kWaitMs);
    ASSERT_TRUE(placed.ok()) << placed.status();
    // The first reply may come at once (nothing to hold for yet); the next is held until the
    // event-driven pass placed the ask.
    if (placed->allocated_containers_size() == 0) placed = am_->Allocate(0, kWaitMs);
    ASSERT_TRUE(placed.ok()) << placed.status();
    ASSERT_EQ(placed->allocated_containers_size(), 1)
        << "the allocation did not reach the AM within one held Allocate";
    const v1::Container& c = placed->allocated_containers(0);
    ASSERT_TRUE(nm_client_->Start(c, "exit 0", {}).ok());
    Ask(0);
    absl::StatusOr<v1::AllocateResponse> done = am_->Allocate(0, GetParam() ? kWaitMs : 3000);
    ASSERT_TRUE(done.ok()) << done.status();
    if (GetParam()) {
      ASSERT_EQ(done->completed_containers_size(), 1)
          << "the completion did not reach the AM within one held Allocate (" << kWaitMs
          << " ms, against a " << kTenMinutesMs << " ms heartbeat)";
      EXPECT_EQ(done->completed_containers(0).container_id(), c.container_id());
      EXPECT_EQ(done->completed_containers(0).exit_status(), 0);
    } else {
      // The control: without the out-of-band heartbeat the completion waits for the periodic
      // one, 10 minutes away, and the held call ends empty.
      EXPECT_EQ(done->completed_containers_size(), 0);
      return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(OutOfBand, EventDrivenTurnaroundTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? std::string("OutOfBandHeartbeat")
                                             : std::string("PeriodicHeartbeatOnly");
                         });

}  // namespace
}  // namespace weft
