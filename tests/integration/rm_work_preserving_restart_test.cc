// Work-preserving RM restart end to end (YARN-556): a real RmServer over a SQLite state file,
// two real NodeManagers and the distributed-shell AM with real containers, all in this process
// on 127.0.0.1. The RM is stopped hard in the middle of the run and a new one starts on the
// same port and state file: the NMs and the AM ride out the outage, the new RM takes the
// running containers back, and the app finishes on its first attempt with every container
// run exactly once.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/node_manager.h"
#include "rm/rm_server.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft {
namespace {

class WorkPreservingRestartTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / absl::StrCat("weft_rmrestart_", getpid());
    std::filesystem::create_directories(dir_);
    // The RM's state store lives here: its directory must be private (common/private_files.h).
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all);
    ASSERT_NO_FATAL_FAILURE(StartRm(0));
    for (int i = 0; i < 2; ++i) {
      loops_.push_back(std::make_unique<ThreadEventLoop>());
      loops_.back()->Start();
      nm::NodeManagerOptions no;
      no.rm_tracker_address = rm_->address();
      no.capability = Resource::Of(2048, 2);
      no.work_root = (dir_ / absl::StrCat("nm", i)).string();
      no.use_cgroups = geteuid() == 0;
      no.cgroup_hierarchy = absl::StrCat("weft_rmrestart_", getpid(), "_", i);
      no.stop_grace_ms = 500;
      no.run_as = nm::ContainerRunAs::kNmUser;  // the declared users are not Unix users
      auto nm = nm::NodeManager::Start(no, loops_.back().get());
      ASSERT_TRUE(nm.ok()) << nm.status();
      nms_.push_back(std::move(*nm));
    }
    ASSERT_TRUE(WaitFor([&] { return RunningNodes() == 2; }));
  }
  void TearDown() override {
    if (HasFailure() || getenv("WEFT_DUMP")) {
      // The AM's own account (its container's stderr) says why it did what it did.
      std::error_code ec;
      for (const auto& f : std::filesystem::recursive_directory_iterator(dir_, ec)) {
        if (f.path().filename() != "stderr") continue;
        std::ifstream in(f.path());
        std::stringstream text;
        text << in.rdbuf();
        if (text.str().find("shell_am") != std::string::npos)
          std::cout << "---- " << f.path() << "\n" << text.str();
      }
    }
    for (auto& nm : nms_) nm->Shutdown();
    nms_.clear();
    for (auto& l : loops_) l->Stop();
    rm_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // An RM on `port` (0: any) over the state file in dir_.
  void StartRm(int port) {
    rm::RmServerOptions ro;
    ro.auth.mode = rm::UserAuthentication::kDeclared;
    ro.rm.pass_interval_ms = 20;
    ro.rm.heartbeat_interval_ms = 100;
    ro.state_store_path = (dir_ / "rm.db").string();
    ro.port = port;
    auto rm = rm::RmServer::Start(std::move(ro));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
    client_ = v1::ClientService::NewStub(
        grpc::CreateChannel(rm_->address(), grpc::InsecureChannelCredentials()));
  }
  // Polls `done` every 50 ms for at most `ms`; whether it came true.
  static bool WaitFor(const std::function<bool()>& done, int64_t ms = 30000) {
    return PollUntil(done, absl::Milliseconds(ms), absl::Milliseconds(50));
  }
  int RunningNodes() {
    int n = 0;
    rm_->RunOnLoop([&](rm::ResourceManager& rm) { n = rm.scheduler().num_nodes(); });
    return n;
  }
  std::string Submit(const std::string& am_command) {
    grpc::ClientContext c1;
    v1::NewApplicationResponse app;
    EXPECT_TRUE(client_->NewApplication(&c1, {}, &app).ok());
    grpc::ClientContext c2;
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->set_max_app_attempts(1);  // a restart must not need a second one
    (*sub.mutable_context()->mutable_am_resource()->mutable_values())["memory-mb"] = 256;
    sub.mutable_context()->mutable_am_container_spec()->add_command(am_command);
    v1::SubmitApplicationResponse r;
    grpc::Status s = client_->SubmitApplication(&c2, sub, &r);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return app.application_id();
  }
  // Polls until the app is in a final state (bounded: 90 s).
  v1::ApplicationReport WaitFinal(const std::string& id) {
    v1::GetApplicationResponse resp;
    WaitFor(
        [&] {
          grpc::ClientContext c;
          v1::GetApplicationRequest req;
          req.set_application_id(id);
          if (!client_->GetApplication(&c, req, &resp).ok()) return false;
          auto st = resp.report().state();
          return st == v1::APP_FINISHED || st == v1::APP_FAILED || st == v1::APP_KILLED;
        },
        90000);
    return resp.report();
  }
  // The RM goes away mid-run: the server stops, its state goes (nothing is written on the way
  // out: the store holds what it held), and after an outage of `outage_ms` (the NMs and the AM
  // keep retrying) a new RM starts on the same port and state file. Returns its recovery
  // counts once both NMs registered again and `containers` were dealt with.
  rm::ResourceManager::RecoveryCounts RestartRm(int containers, int64_t outage_ms = 1000) {
    const int port = rm_->port();
    rm_.reset();
    usleep(static_cast<useconds_t>(outage_ms * 1000));
    rm::ResourceManager::RecoveryCounts counts;
    StartRm(port);
    if (rm_ == nullptr) return counts;
    bool settled = WaitFor([&] {
      rm_->RunOnLoop([&](rm::ResourceManager& rm) { counts = rm.recovery_counts(); });
      return RunningNodes() == 2 && counts.recovered + counts.refused >= containers;
    });
    EXPECT_TRUE(settled) << "recovered " << counts.recovered << ", refused " << counts.refused;
    return counts;
  }
  // What each NM runs (its last report) is what the RM counts on its node (when no allocation
  // is on its way to a node).
  void ExpectNodesCountedOnce() {
    rm_->RunOnLoop([&](rm::ResourceManager& rm) {
      const v1::ListNodesResponse nodes = rm.ListNodes({});
      for (const v1::NodeReport& n : nodes.nodes())
        EXPECT_EQ(n.containers_size(), n.num_containers()) << n.node_id();
    });
  }
  // The app ended SUCCEEDED on its first and only attempt, and each of its `n` containers ran
  // once, to its end.
  void ExpectSucceededOnce(const std::string& id, int n) {
    v1::ApplicationReport r = WaitFinal(id);
    EXPECT_EQ(r.state(), v1::APP_FINISHED) << r.diagnostics();
    EXPECT_EQ(r.final_status(), v1::FINAL_SUCCEEDED) << r.diagnostics();
    EXPECT_EQ(r.current_attempt(), 1);
    EXPECT_THAT(r.diagnostics(), ::testing::HasSubstr(absl::StrCat(n, " containers succeeded")));
    grpc::ClientContext c;
    v1::GetApplicationAttemptsRequest req;
    req.set_application_id(id);
    v1::GetApplicationAttemptsResponse attempts;
    ASSERT_TRUE(client_->GetApplicationAttempts(&c, req, &attempts).ok());
    EXPECT_EQ(attempts.attempts_size(), 1);
    auto marks = Marks();
    EXPECT_EQ(marks["start"].size(), static_cast<size_t>(n));
    for (const auto& [container, times] : marks["start"]) {
      EXPECT_EQ(times, 1) << container << " started " << times << " times";
      EXPECT_EQ(marks["end"][container], 1) << container;
    }
    EXPECT_EQ(marks["end"].size(), static_cast<size_t>(n));
  }
  // A shell command that marks its start and its end in dir_/ran, sleeping in between.
  std::string MarkedSleep(int seconds) {
    const std::string marker = (dir_ / "ran").string();
    return absl::StrCat("echo start $WEFT_SHELL_CONTAINER >> ", marker, "; sleep ", seconds,
                        "; echo end $WEFT_SHELL_CONTAINER >> ", marker);
  }
  // The marker file's lines "<event> <container id>", counted by event and container.
  std::map<std::string, std::map<std::string, int>> Marks() {
    std::map<std::string, std::map<std::string, int>> out;
    std::ifstream in(dir_ / "ran");
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f = absl::StrSplit(line, ' ');
      if (f.size() == 2) ++out[f[0]][f[1]];
    }
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<rm::RmServer> rm_;
  std::vector<std::unique_ptr<ThreadEventLoop>> loops_;
  std::vector<std::unique_ptr<nm::NodeManager>> nms_;
  std::unique_ptr<v1::ClientService::Stub> client_;
};

// The loop in small: the RM stopped hard twice while three containers run. No
// attempt is used up (max attempts 1), nothing runs twice, nothing is counted twice.
TEST_F(WorkPreservingRestartTest, AppsSurviveHardRmRestartsWithEveryContainerRunOnce) {
  // shell_am_main NUM_CONTAINERS MAX_RETRIES COMMAND: no retries, so any lost container fails.
  const std::string id = Submit(absl::StrCat(WEFT_SHELL_AM, " 3 0 '", MarkedSleep(8), "'"));
  ASSERT_TRUE(WaitFor([&] { return Marks()["start"].size() == 3; }))
      << "the three containers did not start";
  for (int restart = 0; restart < 2; ++restart) {
    SCOPED_TRACE(absl::StrCat("restart ", restart + 1));
    rm::ResourceManager::RecoveryCounts counts = RestartRm(4);
    if (counts.refused_without_resource > 0) {
      // An NM that does not fill RegisterNodeManagerRequest.container_resources: its task
      // containers cannot be charged again and are stopped (docs/reliability.md).
      GTEST_SKIP() << counts.refused_without_resource
                   << " task container(s) reported without their resource: this NodeManager "
                      "does not fill RegisterNodeManagerRequest.container_resources";
    }
    EXPECT_EQ(counts.recovered, 4);  // the AM and its three containers
    EXPECT_EQ(counts.refused, 0);
    ExpectNodesCountedOnce();
    rm_->RunOnLoop([&](rm::ResourceManager& rm) {
      EXPECT_EQ(rm.scheduler().stats().allocations, 0);  // nothing was allocated again
    });
  }
  ExpectSucceededOnce(id, 3);
}

// The RM stops as soon as the AM registered, before it got its containers: the AM registers
// again and asks again, and the new RM allocates them (once).
TEST_F(WorkPreservingRestartTest, AnAmThatHadNotGotItsContainersAsksForThemAgain) {
  const std::string id = Submit(absl::StrCat(WEFT_SHELL_AM, " 3 0 '", MarkedSleep(2), "'"));
  ASSERT_TRUE(WaitFor([&] {
    grpc::ClientContext c;
    v1::GetApplicationRequest req;
    req.set_application_id(id);
    v1::GetApplicationResponse resp;
    return client_->GetApplication(&c, req, &resp).ok() && resp.report().state() == v1::APP_RUNNING;
  }));
  rm::ResourceManager::RecoveryCounts counts = RestartRm(1);
  EXPECT_GE(counts.recovered, 1);  // at least the AM container
  EXPECT_EQ(counts.refused, 0);
  ExpectSucceededOnce(id, 3);
}

}  // namespace
}  // namespace weft
