// The distributed shell end to end on real daemons: an RmServer and two NodeManagers on
// 127.0.0.1 port 0, the AM and its containers as real processes (in cgroups when root).
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/node_manager.h"
#include "rm/rm_server.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft {
namespace {

class DistributedShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / absl::StrCat("weft_dshell_", getpid());
    std::filesystem::create_directories(dir_);
    // The RM's state store lives here: its directory must be private (common/private_files.h).
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    rm::RmServerOptions ro;
    ro.auth.mode = rm::UserAuthentication::kDeclared;
    ro.rm.pass_interval_ms = 20;
    ro.rm.heartbeat_interval_ms = 100;
    ro.state_store_path = (dir_ / "rm.db").string();
    auto rm = rm::RmServer::Start(std::move(ro));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
    for (int i = 0; i < 2; ++i) {
      loops_.push_back(std::make_unique<ThreadEventLoop>());
      loops_.back()->Start();
      nm::NodeManagerOptions no;
      no.rm_tracker_address = rm_->address();
      no.capability = Resource::Of(2048, 2);
      no.work_root = (dir_ / absl::StrCat("nm", i)).string();
      no.use_cgroups = geteuid() == 0;
      no.cgroup_hierarchy = absl::StrCat("weft_dshell_", getpid(), "_", i);
      no.stop_grace_ms = 500;
      no.run_as = nm::ContainerRunAs::kNmUser;  // the declared users are not Unix users
      auto nm = nm::NodeManager::Start(no, loops_.back().get());
      ASSERT_TRUE(nm.ok()) << nm.status();
      nms_.push_back(std::move(*nm));
    }
    client_ = v1::ClientService::NewStub(
        grpc::CreateChannel(rm_->address(), grpc::InsecureChannelCredentials()));
    // Both nodes registered (bounded wait on the RM's own view).
    PollUntil([&] { return RunningNodes() >= 2; }, absl::Seconds(10), absl::Milliseconds(50));
    ASSERT_EQ(RunningNodes(), 2);
  }
  void TearDown() override {
    for (auto& nm : nms_) nm->Shutdown();
    nms_.clear();
    for (auto& l : loops_) l->Stop();
    rm_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  int RunningNodes() {
    int n = 0;
    rm_->RunOnLoop([&](rm::ResourceManager& rm) { n = rm.scheduler().num_nodes(); });
    return n;
  }
  std::string Submit(const std::string& am_command, int max_attempts = 1) {
    grpc::ClientContext c1;
    v1::NewApplicationResponse app;
    EXPECT_TRUE(client_->NewApplication(&c1, {}, &app).ok());
    grpc::ClientContext c2;
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->set_max_app_attempts(max_attempts);
    (*sub.mutable_context()->mutable_am_resource()->mutable_values())["memory-mb"] = 256;
    sub.mutable_context()->mutable_am_container_spec()->add_command(am_command);
    v1::SubmitApplicationResponse r;
    grpc::Status s = client_->SubmitApplication(&c2, sub, &r);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return app.application_id();
  }
  // Polls until the app is in a final state (bounded: 60 s).
  v1::ApplicationReport WaitFinal(const std::string& id) {
    v1::GetApplicationResponse resp;
    PollUntil(
        [&] {
          grpc::ClientContext c;
          v1::GetApplicationRequest req;
          req.set_application_id(id);
          if (!client_->GetApplication(&c, req, &resp).ok()) return false;
          auto st = resp.report().state();
          return st == v1::APP_FINISHED || st == v1::APP_FAILED || st == v1::APP_KILLED;
        },
        absl::Seconds(60), absl::Milliseconds(50));
    return resp.report();
  }
  std::string AmCommand(int n, int retries, const std::string& cmd) {
    return absl::StrCat(WEFT_SHELL_AM, " ", n, " ", retries, " '", cmd, "'");
  }

  std::filesystem::path dir_;
  std::unique_ptr<rm::RmServer> rm_;
  std::vector<std::unique_ptr<ThreadEventLoop>> loops_;
  std::vector<std::unique_ptr<nm::NodeManager>> nms_;
  std::unique_ptr<v1::ClientService::Stub> client_;
};

TEST_F(DistributedShellTest, RunsRealContainersToSucceeded) {
  std::string marker = (dir_ / "ran").string();
  std::string id = Submit(AmCommand(3, 0, absl::StrCat("echo $WEFT_SHELL_CONTAINER >> ", marker)));
  v1::ApplicationReport r = WaitFinal(id);
  EXPECT_EQ(r.state(), v1::APP_FINISHED) << r.diagnostics();
  EXPECT_EQ(r.final_status(), v1::FINAL_SUCCEEDED) << r.diagnostics();
  EXPECT_THAT(r.diagnostics(), ::testing::HasSubstr("3 containers succeeded"));
  // Three real processes wrote their container ids.
  std::ifstream in(marker);
  int lines = 0;
  for (std::string l; std::getline(in, l);) lines += l.rfind("container_", 0) == 0;
  EXPECT_EQ(lines, 3);
}

TEST_F(DistributedShellTest, FailingContainersFailTheApp) {
  std::string id = Submit(AmCommand(2, 1, "exit 7"));
  v1::ApplicationReport r = WaitFinal(id);
  EXPECT_EQ(r.state(), v1::APP_FAILED) << r.diagnostics();
  EXPECT_EQ(r.final_status(), v1::FINAL_FAILED);
  EXPECT_THAT(r.diagnostics(), ::testing::HasSubstr("exit 7"));
}

TEST_F(DistributedShellTest, AnAmThatExitsNonZeroGetsANewAttemptThenFails) {
  std::string id = Submit("exit 5", /*max_attempts=*/2);
  v1::ApplicationReport r = WaitFinal(id);
  EXPECT_EQ(r.state(), v1::APP_FAILED);
  EXPECT_EQ(r.current_attempt(), 2);
  EXPECT_THAT(r.diagnostics(), ::testing::HasSubstr("exited with status 5"));
}

}  // namespace
}  // namespace weft
