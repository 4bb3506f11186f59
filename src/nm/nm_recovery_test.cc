// Copyright Weft authors. Tests of NodeManager restart (docs/nm-recovery.md): a real NM runs in a
// child process (this binary, re-executed) against the test's fake RM and is killed with
// SIGKILL; a new NM on the same work root and port then re-attaches to, reports or kills what
// the first one left. As root, the same with real cgroups.
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
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

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/files.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "nm/cgroups.h"
#include "nm/devices/gpu_plugin.h"
#include "nm/fake_rm_test_util.h"
#include "nm/nm_state_store.h"
#include "nm/node_manager.h"
#include "nm/node_manager_internal.h"
#include "nm/os_env.h"
#include "nm/pid_file_test_util.h"
#include "weft/v1/container.grpc.pb.h"

extern char** environ;

namespace weft::nm {
namespace {

using google::protobuf::util::MessageDifferencer;

using ::testing::ElementsAre;
using testing::FakeRm;
using testing::FindStatus;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// Set in the environment of the child NM process:
// "rm|work_root|port|cgroups(0/1)|hierarchy|gpus" (gpus: a --gpus list, "" = none).
constexpr char kChildEnv[] = "WEFT_NM_RECOVERY_TEST_CHILD";

NodeManagerOptions BaseOptions(const std::string& rm, const std::string& work_root, int port,
                               bool use_cgroups, const std::string& hierarchy,
                               const std::string& gpus = "") {
  NodeManagerOptions options;
  if (!gpus.empty()) {
    GpuPluginOptions gpu;
    gpu.mode = GpuPluginOptions::Mode::kList;
    absl::StatusOr<std::vector<GpuListEntry>> list = ParseGpuList(gpus);
    EXPECT_TRUE(list.ok()) << list.status();
    gpu.list = list.value_or(std::vector<GpuListEntry>());
    options.device_plugins.push_back(std::make_shared<GpuPlugin>(gpu));
  }
  options.rm_tracker_address = rm;
  options.port = port;
  options.capability = Resource::Of(4096, 4);
  options.work_root = work_root;
  options.stop_grace_ms = 500;
  options.use_cgroups = use_cgroups;
  options.cgroup_hierarchy = hierarchy;
  // The tokens' users ("alice") are not Unix users.
  options.run_as = ContainerRunAs::kNmUser;
  return options;
}

// The child process: an NM that serves until it is killed. Not a test of its own (it runs
// only when the tests below re-execute this binary with kChildEnv set).
TEST(NmRecoveryChild, DISABLED_ServeUntilKilled) {
  const char* config = std::getenv(kChildEnv);
  if (config == nullptr) GTEST_SKIP() << kChildEnv << " is not set";
  std::vector<std::string> parts = absl::StrSplit(config, '|');
  ASSERT_EQ(parts.size(), 6u) << config;
  int port = 0;
  ASSERT_TRUE(absl::SimpleAtoi(parts[2], &port));
  ThreadEventLoop loop;
  loop.Start();
  absl::StatusOr<std::unique_ptr<NodeManager>> nm =
      NodeManager::Start(BaseOptions(parts[0], parts[1], port, parts[3] == "1", parts[4], parts[5]),
                         &loop);
  if (!nm.ok()) {
    std::cerr << "child NodeManager failed to start: " << nm.status() << "\n";
    _exit(3);
  }
  while (true) pause();  // until SIGKILL: nothing of the NM is cleaned up
}

// The content of `path`, "" when it cannot be read.
std::string Slurp(const std::string& path) { return ReadFile(path).value_or(""); }

// How long PollUntil (common/test_poll.h) waits for what no event announces (a process that
// another process's exit ends, a file another process writes).
constexpr absl::Duration kPollTimeout = absl::Seconds(10);

// True once `pid` has exited (gone, or a zombie).
bool ProcessGone(pid_t pid) {
  absl::StatusOr<ProcessInfo> info = ReadProcessInfo(OsEnv::Default(), pid);
  return !info.ok() || info->Ended();
}


class NmRecoveryTestBase : public ::testing::Test {
 protected:
  // use_cgroups_ is set before.
  void SetUp() override {
    static std::atomic<int> counter{0};
    hierarchy_ = absl::StrCat("weft_nm_recovery_test_", getpid(), "_", counter++);
    if (use_cgroups_) {
      if (geteuid() != 0) GTEST_SKIP() << "needs root to create cgroups";
      absl::StatusOr<std::unique_ptr<CgroupsHandler>> view =
          DetectCgroups("/sys/fs/cgroup", hierarchy_);
      if (!view.ok()) GTEST_SKIP() << "cgroups are unusable here: " << view.status();
      cgroups_ = *std::move(view);
    }
    // Orphaned monitors (their NM killed) become this process's children, as they would
    // become init's: ended ones are reaped in TearDown instead of lingering.
    ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), 0);
    loop_.Start();
    rm_ = std::make_unique<FakeRm>(loop_.NowMs());
    rm_server_ = testing::ServeOnLoopback(rm_.get(), &rm_port_);
    ASSERT_NE(rm_server_, nullptr);
    work_root_ = std::filesystem::path(::testing::TempDir()) /
                 absl::StrCat("weft_nm_recovery_test_", getpid(), "_", counter++);
  }

  void TearDown() override {
    if (nm_ != nullptr) nm_->Shutdown();
    nm_.reset();
    KillChildNm();
    for (pid_t pid : pids_to_kill_) (void)kill(pid, SIGKILL);
    if (cgroups_ != nullptr) {
      for (const std::string& name :
           cgroups_->ListContainers().value_or(std::vector<std::string>())) {
        ADD_FAILURE() << "cgroup " << name << " was left behind";
        (void)cgroups_->Destroy(name);
      }
      absl::Status removed = cgroups_->RemoveHierarchy();
      EXPECT_TRUE(removed.ok()) << removed;
    }
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (rm_server_ != nullptr) rm_server_->Shutdown();
    loop_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(work_root_, ignored);
  }

  std::string RmAddress() const { return absl::StrCat("127.0.0.1:", rm_port_); }

  NodeManagerOptions Options(int port) {
    return BaseOptions(RmAddress(), work_root_.string(), port, use_cgroups_, hierarchy_, gpus_);
  }

  // Waits for the first heartbeat of a node that registered after the first `registrations`
  // registrations (from then on it holds the RM's keys); returns its node id.
  std::string WaitForNewNode(size_t registrations) {
    std::string node_id;
    EXPECT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
      if (rm.registrations_.size() <= registrations) return false;
      node_id = rm.registrations_.back().node_id();
      for (const v1::NodeHeartbeatRequest& h : rm.heartbeats_) {
        if (h.node_id() == node_id && h.response_id() == 0) return true;
      }
      return false;
    })) << "no node registered and heartbeated";
    return node_id;
  }

  // Starts an NM in a child process (this binary) and waits until it heartbeats.
  void StartChildNm(int port = 0) {
    const size_t before = rm_->With([](FakeRm& rm) { return rm.registrations_.size(); });
    // The heartbeat of a previous node with response id 0 must not count: drop them.
    rm_->With([](FakeRm& rm) {
      rm.heartbeats_.clear();
      return 0;
    });
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back(absl::StrCat(kChildEnv, "=", RmAddress(), "|", work_root_.string(), "|", port,
                               "|", use_cgroups_ ? "1" : "0", "|", hierarchy_, "|", gpus_));
    std::vector<std::string> args = {"/proc/self/exe",
                                     "--gtest_filter=NmRecoveryChild.DISABLED_ServeUntilKilled",
                                     "--gtest_also_run_disabled_tests"};
    std::vector<char*> argv, envp;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (std::string& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&child_, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data()),
              0);
    node_id_ = WaitForNewNode(before);
    ASSERT_FALSE(node_id_.empty());
    port_ = std::stoi(node_id_.substr(node_id_.rfind(':') + 1));
    Connect();
  }

  // kill -9 of the child NM: nothing of it runs any cleanup.
  void KillChildNm() {
    if (child_ <= 0) return;
    (void)kill(child_, SIGKILL);
    (void)waitpid(child_, nullptr, 0);
    child_ = 0;
  }

  // Starts an NM in this process on the port the child NM had (the node keeps its id).
  // `tweak` changes its options before it starts.
  void StartNm(bool recover = true,
               const std::function<void(NodeManagerOptions&)>& tweak = nullptr) {
    const size_t before = rm_->With([](FakeRm& rm) {
      rm.heartbeats_.clear();
      return rm.registrations_.size();
    });
    NodeManagerOptions options = Options(port_);
    options.recover = recover;
    if (tweak) tweak(options);
    absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
    ASSERT_TRUE(nm.ok()) << nm.status();
    nm_ = *std::move(nm);
    ASSERT_EQ(WaitForNewNode(before), node_id_);
    registration_ = rm_->With([](FakeRm& rm) { return rm.registrations_.back(); });
    Connect();
  }

  void Connect() {
    stub_ = v1::ContainerService::NewStub(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials()));
  }

  security::ContainerTokenData TokenData(const std::string& container_id,
                                         const std::string& app_id = "application_1_0001") {
    security::ContainerTokenData data;
    data.container_id = container_id;
    data.node_id = node_id_;
    data.user = "alice";
    data.resource = "memory-mb=128,vcores=1";
    data.expiry_ms = loop_.NowMs() + 600'000;
    data.rm_epoch = 1;
    data.app_id = app_id;
    return data;
  }

  // Starts `command` as container `id` (of application_1_0001), its token carrying `tags`;
  // true when the NM said so.
  bool StartContainer(const std::string& id, const std::string& command,
                      const std::vector<std::string>& tags = {}) {
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    security::ContainerTokenData data = TokenData(id);
    data.allocation_tags = tags;
    *one->mutable_container_token() = rm_->IssueToken(data);
    one->mutable_launch_context()->add_command(command);
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.failed_size(), 0)
        << (response.failed_size() > 0 ? response.failed(0).message() : "");
    return response.succeeded_size() == 1 && response.succeeded(0) == id;
  }

  // One StartContainers call with `token` and the command `true`; the call itself must
  // succeed (each container's failure is in the response).
  v1::StartContainersResponse TryStart(const v1::Token& token) {
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    *one->mutable_container_token() = token;
    one->mutable_launch_context()->add_command("true");
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::StopContainersResponse StopContainer(const std::string& id) {
    v1::StopContainersRequest request;
    request.add_container_ids(id);
    *request.add_container_tokens() = rm_->IssueToken(TokenData(id));
    v1::StopContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StopContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  v1::UpdateContainersResponse UpdateContainer(const v1::Token& token) {
    v1::UpdateContainersRequest request;
    *request.add_container_tokens() = token;
    v1::UpdateContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->UpdateContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // The memory limit of the container's cgroup, bytes as the kernel prints them.
  std::string MemoryLimit(const std::string& id) {
    const std::string file = cgroups_->version() == "v1" ? "/memory.limit_in_bytes" : "/memory.max";
    return std::string(absl::StripAsciiWhitespace(Slurp(cgroups_->Path("memory", id) + file)));
  }

  // The work dir of container `id` (of application_1_0001).
  std::string WorkDir(const std::string& id) {
    return (work_root_ / "application_1_0001" / id).string();
  }

  // The pid the container wrote to its work dir's file "pid"; killed in TearDown.
  pid_t ContainerPid(const std::string& id) {
    pid_t pid = ReadPidFile(WorkDir(id) + "/pid", kPollTimeout);
    if (pid > 0) pids_to_kill_.push_back(pid);
    return pid;
  }

  // FakeRm::WaitCompleted.
  std::optional<v1::ContainerStatus> WaitCompleted(const std::string& id) {
    return rm_->WaitCompleted(id);
  }

  // The status of `id` in the last registration (running or completed), or nullopt.
  std::optional<v1::ContainerStatus> Registered(const std::string& id) {
    for (const auto* list :
         {&registration_.running_containers(), &registration_.completed_containers()}) {
      for (const v1::ContainerStatus& status : *list) {
        if (status.container_id() == id) return status;
      }
    }
    return std::nullopt;
  }

  // The cgroup (v1: of `controller`) that /proc/<pid>/cgroup names, "" if none.
  std::string CgroupOf(pid_t pid, absl::string_view controller) {
    for (absl::string_view line :
         absl::StrSplit(Slurp(absl::StrCat("/proc/", pid, "/cgroup")), '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3) continue;
      std::vector<absl::string_view> controllers = absl::StrSplit(parts[1], ',');
      bool match = cgroups_->version() == "v2" ? parts[0] == "0"
                                               : std::find(controllers.begin(), controllers.end(),
                                                           controller) != controllers.end();
      if (match) return std::string(parts[2]);
    }
    return "";
  }

  bool use_cgroups_ = false;
  std::string gpus_;  // the NMs' GPUs as a --gpus list; "" = none
  std::string hierarchy_;
  std::unique_ptr<CgroupsHandler> cgroups_;  // the test's own view of the NM's hierarchy
  ThreadEventLoop loop_;
  std::unique_ptr<FakeRm> rm_;
  int rm_port_ = 0;
  std::unique_ptr<grpc::Server> rm_server_;
  std::filesystem::path work_root_;
  pid_t child_ = 0;
  std::string node_id_;
  int port_ = 0;
  std::unique_ptr<NodeManager> nm_;
  v1::RegisterNodeManagerRequest registration_;  // of nm_
  std::unique_ptr<v1::ContainerService::Stub> stub_;
  std::vector<pid_t> pids_to_kill_;
};

// Without cgroups (false) and, as root, with them (true).
class NmRecoveryTest : public NmRecoveryTestBase, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    use_cgroups_ = GetParam();
    NmRecoveryTestBase::SetUp();
  }
};

INSTANTIATE_TEST_SUITE_P(Cgroups, NmRecoveryTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "WithCgroups" : "WithoutCgroups";
                         });

TEST_P(NmRecoveryTest, RestartedNmReattachesToARunningContainerAndCanStopIt) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000001";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  EXPECT_FALSE(ProcessGone(pid)) << "the container died with its NM";

  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_RUNNING);
  ASSERT_THAT(registration_.running_containers(), ::testing::SizeIs(1));
  // With what it was granted, for a restarted RM to charge it again.
  ASSERT_TRUE(registration_.container_resources().contains(id));
  EXPECT_EQ(registration_.container_resources().at(id).values().at("memory-mb"), 128);
  EXPECT_EQ(registration_.container_resources().at(id).values().at("vcores"), 1);
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
    return !rm.heartbeats_.empty() &&
           FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING) != nullptr;
  }));
  EXPECT_THAT(StopContainer(id).succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_AM);
  EXPECT_THAT(completed->diagnostics(), HasSubstr("StopContainers"));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
  // Its application's cleanup removes it, its record included.
  rm_->With([](FakeRm& rm) {
    rm.apps_to_cleanup_.push_back("application_1_0001");
    return 0;
  });
  EXPECT_TRUE(PollUntil([&] { return !std::filesystem::exists(WorkDir(id)); }, kPollTimeout));
}

TEST_P(NmRecoveryTest, AResizedContainerKeepsItsResourceAndVersionAcrossARestart) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000031";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  security::ContainerTokenData increase = TokenData(id);
  increase.resource = "memory-mb=256,vcores=2";
  increase.version = 2;
  const v1::Token increase_token = rm_->IssueToken(increase);
  v1::UpdateContainersResponse updated = UpdateContainer(increase_token);
  ASSERT_THAT(updated.succeeded(), ElementsAre(id))
      << (updated.failed_size() > 0 ? updated.failed(0).message() : "");
  const bool check_memory = use_cgroups_ && cgroups_->HasController("memory");
  if (check_memory) {
    EXPECT_EQ(MemoryLimit(id), "268435456");
  }
  KillChildNm();  // kill -9: the update must already be durable
  EXPECT_FALSE(ProcessGone(pid));

  StartNm();
  ASSERT_TRUE(Registered(id).has_value()) << registration_.DebugString();
  EXPECT_EQ(Registered(id)->state(), v1::CONTAINER_RUNNING);
  // The RM hears what it granted last, at which version.
  ASSERT_TRUE(registration_.container_resources().contains(id));
  EXPECT_EQ(registration_.container_resources().at(id).values().at("memory-mb"), 256);
  EXPECT_EQ(registration_.container_resources().at(id).values().at("vcores"), 2);
  ASSERT_TRUE(registration_.container_versions().contains(id)) << registration_.DebugString();
  EXPECT_EQ(registration_.container_versions().at(id), 2);
  if (check_memory) {
    EXPECT_EQ(MemoryLimit(id), "268435456");
  }
  // The version survived too: a replay of the update is refused, a newer decrease applies.
  v1::UpdateContainersResponse replay = UpdateContainer(increase_token);
  ASSERT_EQ(replay.failed_size(), 1);
  EXPECT_EQ(replay.failed(0).code(), static_cast<int32_t>(absl::StatusCode::kFailedPrecondition));
  EXPECT_THAT(replay.failed(0).message(), HasSubstr("not above the container's version 2"));
  security::ContainerTokenData decrease = TokenData(id);
  decrease.resource = "memory-mb=64,vcores=1";
  decrease.version = 3;
  EXPECT_THAT(UpdateContainer(rm_->IssueToken(decrease)).succeeded(), ElementsAre(id));
  if (check_memory) {
    EXPECT_EQ(MemoryLimit(id), "67108864");
  }
  EXPECT_THAT(StopContainer(id).succeeded(), ElementsAre(id));
  ASSERT_TRUE(WaitCompleted(id).has_value());
}

TEST_P(NmRecoveryTest, AContainersAllocationTagsAreReportedAfterARestart) {
  StartChildNm();
  const std::string tagged = "container_e1_1_0001_01_000041";
  const std::string plain = "container_e1_1_0001_01_000042";
  ASSERT_TRUE(StartContainer(tagged, "echo $$ > pid; exec sleep 30", {"hbase-rs", "web.1"}));
  ASSERT_TRUE(StartContainer(plain, "echo $$ > pid; exec sleep 30"));
  ASSERT_GT(ContainerPid(tagged), 0);
  ASSERT_GT(ContainerPid(plain), 0);
  KillChildNm();  // kill -9: the tags must already be durable

  // The restarted NM (now with a node label and attributes) reports them in its registration,
  // for a restarted RM's recovery; a container without tags is left out of container_tags.
  StartNm(/*recover=*/true, [](NodeManagerOptions& o) {
    o.node_label = "gpu";
    o.node_attributes = {{"example.com/os", "linux"}, {"zone", "z1"}};
  });
  ASSERT_TRUE(Registered(tagged).has_value()) << registration_.DebugString();
  ASSERT_TRUE(Registered(plain).has_value()) << registration_.DebugString();
  ASSERT_TRUE(registration_.container_tags().contains(tagged)) << registration_.DebugString();
  EXPECT_THAT(registration_.container_tags().at(tagged).tags(), ElementsAre("hbase-rs", "web.1"));
  EXPECT_FALSE(registration_.container_tags().contains(plain));
  EXPECT_EQ(registration_.node_label(), "gpu");
  EXPECT_EQ(registration_.node_attributes().size(), 2u);
  EXPECT_EQ(registration_.node_attributes().at("zone"), "z1");
  EXPECT_EQ(registration_.node_attributes().at("example.com/os"), "linux");
  EXPECT_THAT(StopContainer(tagged).succeeded(), ElementsAre(tagged));
  EXPECT_THAT(StopContainer(plain).succeeded(), ElementsAre(plain));
  ASSERT_TRUE(WaitCompleted(tagged).has_value());
  ASSERT_TRUE(WaitCompleted(plain).has_value());
}

TEST_P(NmRecoveryTest, AContainerThatEndedWhileTheNmWasDownIsReportedWithItsExitCode) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000002";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; while [ ! -e go ]; do sleep 0.01; done; exit 7"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  std::ofstream(WorkDir(id) + "/go").close();
  // Its monitor records the end in the NM's state directory.
  const std::string exit_file = (work_root_ / "nm-state" / id / "exit_code").string();
  ASSERT_TRUE(PollUntil([&] { return Slurp(exit_file) == "exit 7\n"; }, kPollTimeout))
      << Slurp(exit_file);

  StartNm();
  ASSERT_THAT(registration_.completed_containers(), ::testing::SizeIs(1));
  EXPECT_THAT(registration_.running_containers(), IsEmpty());
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(registered->exit_status(), 7);
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), 7);
  EXPECT_EQ(completed->diagnostics(), "Container exited with code 7");
}

// Application history (issue 31): a completed container the RM has not released is reported by
// the restarted NM (after a kill -9) with the figures the killed NM reported: times, what its
// token granted, and its lifetime usage (measured through its cgroups when it has them).
TEST_P(NmRecoveryTest, ACompletedContainersTimesAndUsageSurviveAKilledNm) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000008";
  constexpr int64_t kAllocated = 48 << 20;
  // Holds 48 MiB in a shell string and burns CPU until the test lets it end.
  ASSERT_TRUE(StartContainer(id,
                             "x=$(head -c 50331648 /dev/zero | tr '\\0' a); i=0; "
                             "while [ ! -e go ]; do i=$((i+1)); done; echo ${#x}"));
  if (use_cgroups_ && cgroups_->HasController("memory")) {
    // The NM has sampled it holding the memory for a while.
    ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
      if (rm.heartbeats_.empty()) return false;
      const v1::ContainerStatus* running =
          FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING);
      return running != nullptr && running->usage().memory_rss_bytes() >= kAllocated &&
             running->usage().memory_mb_seconds() >= 10;
    })) << "no heartbeat showed it holding 48 MiB for a while";
  }
  std::ofstream(WorkDir(id) + "/go").close();
  std::optional<v1::ContainerStatus> before = WaitCompleted(id);
  ASSERT_TRUE(before.has_value());
  EXPECT_EQ(before->exit_status(), 0) << before->diagnostics();
  EXPECT_GT(before->start_time_ms(), 0);
  EXPECT_LE(before->start_time_ms(), before->finish_time_ms());
  EXPECT_EQ(before->allocated().values().at("memory-mb"), 128);
  EXPECT_EQ(before->allocated().values().at("vcores"), 1);
  if (use_cgroups_ && cgroups_->HasController("memory")) {
    EXPECT_GT(before->usage().cpu_time_ms(), 0);
    if (cgroups_->version() == "v1" || before->usage().peak_memory_bytes() > 0) {
      EXPECT_GE(before->usage().peak_memory_bytes(), kAllocated);
    }
    EXPECT_GE(before->usage().memory_mb_seconds(), 10);
  } else {
    // Nothing measures it: 0, not a guess.
    EXPECT_EQ(before->usage().cpu_time_ms(), 0);
    EXPECT_EQ(before->usage().peak_memory_bytes(), 0);
    EXPECT_EQ(before->usage().memory_mb_seconds(), 0);
  }
  KillChildNm();

  // The fake RM never releases it (containers_to_be_removed_from_nm): the new NM reports it,
  // the same, in its registration and in GetContainerStatuses.
  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals(*registered, *before))
      << registered->DebugString() << " vs " << before->DebugString();
  v1::GetContainerStatusesRequest request;
  request.add_container_ids(id);
  *request.add_container_tokens() = rm_->IssueToken(TokenData(id));
  v1::GetContainerStatusesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->GetContainerStatuses(&context, request, &response).ok());
  ASSERT_EQ(response.statuses_size(), 1);
  EXPECT_TRUE(MessageDifferencer::Equals(response.statuses(0), *before))
      << response.statuses(0).DebugString();
}

// A container that ran across the restart: its start time is the first NM's, its end the
// second's, and its figures are measured by both (the first NM's part as last written).
TEST_P(NmRecoveryTest, AReattachedContainerKeepsItsStartTimeAndReportsItsTotals) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000009";
  const int64_t launched_after = loop_.NowMs();
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; while [ ! -e go ]; do i=$((i+1)); done"));
  ASSERT_GT(ContainerPid(id), 0);
  KillChildNm();
  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_RUNNING);
  std::ofstream(WorkDir(id) + "/go").close();
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), 0) << completed->diagnostics();
  EXPECT_GE(completed->start_time_ms(), launched_after);
  EXPECT_LE(completed->start_time_ms(), completed->finish_time_ms());
  EXPECT_EQ(completed->allocated().values().at("memory-mb"), 128);
  if (use_cgroups_) {
    EXPECT_GT(completed->usage().cpu_time_ms(), 0);
  }
}

TEST_P(NmRecoveryTest, AContainerThatVanishedWithoutAnExitFileIsReportedLost) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000003";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  // Its monitor (its parent) dies without a word, then the container.
  absl::StatusOr<ProcessInfo> info = ReadProcessInfo(OsEnv::Default(), pid);
  ASSERT_TRUE(info.ok()) << info.status();
  const pid_t monitor = info->parent;
  ASSERT_GT(monitor, 1);
  ASSERT_EQ(kill(monitor, SIGKILL), 0);
  ASSERT_TRUE(PollUntil([&] { return ProcessGone(monitor); }, kPollTimeout));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  ASSERT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));

  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(registered->exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
  EXPECT_THAT(registered->diagnostics(), HasSubstr("exit status unknown"));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
}

TEST_P(NmRecoveryTest, TheRmsCleanupStopsAReattachedContainer) {
  // What the RM sends a node it had declared LOST and that comes back (fencing).
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000004";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  StartNm();
  ASSERT_TRUE(Registered(id).has_value());
  rm_->With([&](FakeRm& rm) {
    rm.containers_to_cleanup_.push_back(id);
    return 0;
  });
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_RM);
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
}

TEST_P(NmRecoveryTest, WithoutRecoveryWhatAnEarlierNmLeftIsKilled) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000005";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  StartNm(/*recover=*/false);
  EXPECT_THAT(registration_.running_containers(), IsEmpty());
  EXPECT_THAT(registration_.completed_containers(), IsEmpty());
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
  // The container's id is free of any record: it is unknown here.
  v1::StopContainersResponse stopped = StopContainer(id);
  ASSERT_EQ(stopped.failed_size(), 1);
  EXPECT_THAT(stopped.failed(0).message(), HasSubstr("not known here"));
}

TEST_P(NmRecoveryTest, ANewPortIsANewNodeThatKillsTheOldNodesContainers) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000006";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  port_ = 0;  // another port: another node id, which the container's tokens do not name
  const size_t before = rm_->With([](FakeRm& rm) { return rm.registrations_.size(); });
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(Options(0), &loop_);
  ASSERT_TRUE(nm.ok()) << nm.status();
  nm_ = *std::move(nm);
  WaitForNewNode(before);
  EXPECT_THAT(rm_->With([](FakeRm& rm) { return rm.registrations_.back(); }).running_containers(),
              IsEmpty());
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
}

TEST_P(NmRecoveryTest, AStopTheKilledNmHadBegunIsCarriedOn) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000007";
  // It ignores SIGTERM: only the SIGKILL after the grace (500 ms) ends it.
  ASSERT_TRUE(StartContainer(id, "trap '' TERM; echo $$ > pid; while :; do sleep 0.05; done"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  EXPECT_THAT(StopContainer(id).succeeded(), ElementsAre(id));
  KillChildNm();  // before the grace ends
  EXPECT_FALSE(ProcessGone(pid));
  StartNm();
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_AM);
  EXPECT_THAT(completed->diagnostics(), HasSubstr("StopContainers"));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
}

TEST_P(NmRecoveryTest, ALaunchCutShortIsKilledAndReportedLost) {
  // What an NM killed between recording a container's monitor and confirming its start leaves:
  // a "launching" record, and the monitor with its program (found through the pid file).
  const std::string id = "container_e1_1_0001_01_000008";
  std::filesystem::create_directories(work_root_ / "nm-state" / id);
  std::filesystem::create_directories(WorkDir(id));
  SpawnOptions options;
  options.argv = {"/bin/sh", "-c", "exec sleep 30"};
  options.work_dir = WorkDir(id);
  options.stdout_path = "/dev/null";
  options.stderr_path = "/dev/null";
  std::vector<std::string> cgroup_dirs;
  if (cgroups_ != nullptr) {
    ASSERT_TRUE(cgroups_->Create(id, CgroupLimits()).ok());
    for (const std::string& controller : cgroups_->controllers()) {
      const std::string dir = cgroups_->Path(controller, id);
      if (std::find(cgroup_dirs.begin(), cgroup_dirs.end(), dir) == cgroup_dirs.end()) {
        cgroup_dirs.push_back(dir);
      }
    }
  }
  absl::StatusOr<MonitoredProcess> started = OsEnv::Default()->SpawnMonitored(
      options, (work_root_ / "nm-state" / id).string(), [&](pid_t monitor) {
        return cgroups_ != nullptr ? cgroups_->AddProcess(id, monitor) : absl::OkStatus();
      });
  ASSERT_TRUE(started.ok()) << started.status();
  pids_to_kill_.push_back(started->pid);
  pids_to_kill_.push_back(started->monitor_pid);
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store =
        NmStateStore::Open((work_root_ / "nm-state.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord record;
    record.container_id = id;
    record.app_id = "application_1_0001";
    record.user = "alice";
    record.resource = "memory-mb=128,vcores=1";
    record.state = NmContainerRecord::State::kLaunching;
    record.monitor_pid = started->monitor_pid;
    record.monitor_start_time = ReadProcessInfo(OsEnv::Default(), started->monitor_pid)->start_time;
    record.cgroup_dirs = cgroup_dirs;
    record.state_dir = (work_root_ / "nm-state" / id).string();
    record.work_dir = WorkDir(id);
    ASSERT_TRUE((*store)->PutContainer(record).ok());
  }
  port_ = 0;
  node_id_.clear();
  const size_t before = rm_->With([](FakeRm& rm) { return rm.registrations_.size(); });
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(Options(0), &loop_);
  ASSERT_TRUE(nm.ok()) << nm.status();
  nm_ = *std::move(nm);
  WaitForNewNode(before);
  registration_ = rm_->With([](FakeRm& rm) { return rm.registrations_.back(); });
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(registered->exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
  EXPECT_THAT(registered->diagnostics(), HasSubstr("restarted while launching it"));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(started->pid); }, kPollTimeout));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(started->monitor_pid); }, kPollTimeout));
  (void)waitpid(started->monitor_pid, nullptr, 0);
}

// ---- With cgroups: nothing escapes them, and orphans in the hierarchy are killed.

class NmRecoveryCgroupsTest : public NmRecoveryTestBase {
 protected:
  void SetUp() override {
    use_cgroups_ = true;
    NmRecoveryTestBase::SetUp();
  }
};

TEST_F(NmRecoveryCgroupsTest, AKilledNmsContainersStayInTheirCgroupsAndOrphansAreKilled) {
  if (!cgroups_->HasController("memory")) {
    GTEST_SKIP() << "no memory controller: " << absl::StrJoin(cgroups_->missing_features(), "; ");
  }
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000010";
  // A background child that leaves the process group, and the main process.
  ASSERT_TRUE(StartContainer(id, "setsid sleep 30 & echo $! > bg; echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  const pid_t escaped = ReadPidFile(WorkDir(id) + "/bg", kPollTimeout);
  ASSERT_GT(escaped, 0);
  pids_to_kill_.push_back(escaped);
  KillChildNm();
  absl::StatusOr<ProcessInfo> info = ReadProcessInfo(OsEnv::Default(), pid);
  ASSERT_TRUE(info.ok()) << info.status();
  const pid_t monitor = info->parent;
  // Every process of the container, its monitor included, is in the container's cgroups,
  // and nothing else is.
  const std::string want = absl::StrCat("/", hierarchy_, "/", id);
  for (pid_t p : {monitor, pid, escaped}) {
    for (const std::string& controller : cgroups_->controllers()) {
      if (controller == "cpuacct" && cgroups_->version() == "v2") continue;
      EXPECT_TRUE(absl::EndsWith(CgroupOf(p, controller), want))
          << "pid " << p << " is in " << CgroupOf(p, controller) << " for " << controller;
    }
  }
  absl::StatusOr<std::vector<pid_t>> in_group = cgroups_->Processes(id);
  ASSERT_TRUE(in_group.ok()) << in_group.status();
  std::vector<pid_t> expected = {monitor, pid, escaped};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(*in_group, expected);

  // An orphan: a process in a group of the hierarchy no record names, with its state directory
  // under this work root (made before the group: what a launch cut short leaves).
  std::filesystem::create_directories(
      internal::ContainerStateDir(work_root_.string(), "stray_group"));
  ASSERT_TRUE(cgroups_->Create("stray_group", CgroupLimits()).ok());
  SpawnOptions stray_options;
  stray_options.argv = {"/bin/sleep", "30"};
  stray_options.work_dir = "/";
  stray_options.stdout_path = "/dev/null";
  stray_options.stderr_path = "/dev/null";
  absl::StatusOr<pid_t> stray = OsEnv::Default()->Spawn(
      stray_options, [&](pid_t p) { return cgroups_->AddProcess("stray_group", p); });
  ASSERT_TRUE(stray.ok()) << stray.status();
  pids_to_kill_.push_back(*stray);

  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_RUNNING);
  // The stray was killed before the NM registered (it is our child: a zombie now).
  EXPECT_TRUE(ProcessGone(*stray));
  (void)waitpid(*stray, nullptr, 0);
  EXPECT_THAT(cgroups_->ListContainers().value_or(std::vector<std::string>()), ElementsAre(id));
  EXPECT_FALSE(ProcessGone(pid));
  EXPECT_FALSE(ProcessGone(escaped));

  // Stopping it ends all of it, the escaped child too, and removes its cgroups.
  EXPECT_THAT(StopContainer(id).succeeded(), ElementsAre(id));
  std::optional<v1::ContainerStatus> completed = WaitCompleted(id);
  ASSERT_TRUE(completed.has_value());
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_BY_AM);
  for (pid_t p : {monitor, pid, escaped}) {
    EXPECT_TRUE(PollUntil([&] { return ProcessGone(p); }, kPollTimeout))
        << "pid " << p << " survived";
  }
  EXPECT_THAT(cgroups_->ListContainers().value_or(std::vector<std::string>()), IsEmpty());
}

TEST_F(NmRecoveryCgroupsTest, AnotherNmsContainersInTheSharedHierarchyLiveOn) {
  if (!cgroups_->HasController("memory")) {
    GTEST_SKIP() << "no memory controller: " << absl::StrJoin(cgroups_->missing_features(), "; ");
  }
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000011";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  ASSERT_GT(pid, 0);
  KillChildNm();
  // A container of another NodeManager on this host, in the same hierarchy (every `weft nm`
  // shares the default "weft"): its group, its process, and no state directory here (its NM
  // has its own work root). The restarted NM must not take it for an orphan of its own.
  const std::string other = "container_e1_1_0002_01_000001";
  ASSERT_TRUE(cgroups_->Create(other, CgroupLimits()).ok());
  SpawnOptions options;
  options.argv = {"/bin/sleep", "30"};
  options.work_dir = "/";
  options.stdout_path = "/dev/null";
  options.stderr_path = "/dev/null";
  absl::StatusOr<pid_t> foreign = OsEnv::Default()->Spawn(
      options, [&](pid_t p) { return cgroups_->AddProcess(other, p); });
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  pids_to_kill_.push_back(*foreign);

  StartNm();
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  EXPECT_EQ(registered->state(), v1::CONTAINER_RUNNING);
  EXPECT_FALSE(ProcessGone(pid));
  EXPECT_FALSE(ProcessGone(*foreign)) << "the restarted NM killed another NM's container";
  EXPECT_THAT(cgroups_->ListContainers().value_or(std::vector<std::string>()),
              UnorderedElementsAre(id, other));

  // The other NM's container is the test's to end.
  (void)kill(*foreign, SIGKILL);
  (void)waitpid(*foreign, nullptr, 0);
  EXPECT_TRUE(cgroups_->Destroy(other).ok());
}

// ---- The RM decides what lives (in this process only).

// Devices across an NM kill -9 (issue 32): the GPUs are real character devices standing in
// (/dev/zero, /dev/full), without cgroups, so any user can run it.
class NmRecoveryDevicesTest : public NmRecoveryTestBase {
 protected:
  void SetUp() override {
    gpus_ = "0:/dev/zero,1:/dev/full";
    NmRecoveryTestBase::SetUp();
  }
  // Starts `id` holding `device` (e.g. "gpu:1=1000", gpu-milli 1000); "" or the failure.
  std::string StartWithGpu(const std::string& id, const std::string& device) {
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    security::ContainerTokenData data = TokenData(id);
    data.resource = "memory-mb=128,vcores=1,gpu-milli=1000";
    data.devices = {device};
    *one->mutable_container_token() = rm_->IssueToken(data);
    one->mutable_launch_context()->add_command("echo $$ > pid; exec sleep 30");
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response.failed_size() > 0 ? response.failed(0).message() : "";
  }
};

TEST_F(NmRecoveryDevicesTest, AHeldGpuIsReportedAndKeptAfterKill9) {
  StartChildNm();
  const std::string id = "container_e1_1_0001_01_000020";
  ASSERT_EQ(StartWithGpu(id, "gpu:1=1000"), "");
  ASSERT_GT(ContainerPid(id), 0);
  KillChildNm();
  StartNm();
  ASSERT_EQ(registration_.devices_size(), 2);
  EXPECT_EQ(registration_.capability().values().at("gpu-milli"), 2000);
  std::optional<v1::ContainerStatus> registered = Registered(id);
  ASSERT_TRUE(registered.has_value()) << registration_.DebugString();
  ASSERT_EQ(registered->devices_size(), 1);
  EXPECT_EQ(registered->devices(0).index(), 1);
  EXPECT_EQ(registered->devices(0).milli(), 1000);
  // Still held: GPU 1 is refused, GPU 0 is given.
  EXPECT_THAT(StartWithGpu("container_e1_1_0001_01_000021", "gpu:1=1000"),
              HasSubstr("running containers hold 1000"));
  EXPECT_EQ(StartWithGpu("container_e1_1_0001_01_000022", "gpu:0=1000"), "");
  // Once it ends its GPU is free again.
  EXPECT_THAT(StopContainer(id).succeeded(), ElementsAre(id));
  ASSERT_TRUE(WaitCompleted(id).has_value());
  EXPECT_EQ(StartWithGpu("container_e1_1_0001_01_000023", "gpu:1=1000"), "");
}

class NmFencingTest : public NmRecoveryTestBase {
 protected:
  void StartFirstNm() {
    const size_t before = rm_->With([](FakeRm& rm) { return rm.registrations_.size(); });
    absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(Options(0), &loop_);
    ASSERT_TRUE(nm.ok()) << nm.status();
    nm_ = *std::move(nm);
    node_id_ = WaitForNewNode(before);
    port_ = nm_->port();
    Connect();
  }
};

TEST_F(NmFencingTest, ResyncKeepsTheContainersAndReportsWhatTheyWereGranted) {
  StartFirstNm();
  const std::string id = "container_e1_1_0001_01_000021";
  const std::string done = "container_e1_1_0001_01_000022";
  ASSERT_TRUE(StartContainer(id, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(id);
  // The RM answers the heartbeat reporting `done` with RESYNC (as after its restart): the
  // registration that follows has `done` as completed, `id` as running with its resource.
  rm_->With([](FakeRm& rm) {
    rm.resync_heartbeats_with_completed_ = true;
    rm.rm_epoch_ = 2;
    return 0;
  });
  ASSERT_TRUE(StartContainer(done, "exit 4"));
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return rm.registrations_.size() >= 2; }));
  const v1::RegisterNodeManagerRequest again =
      rm_->With([](FakeRm& rm) { return rm.registrations_.back(); });
  ASSERT_EQ(again.running_containers_size(), 1) << again.DebugString();
  EXPECT_EQ(again.running_containers(0).container_id(), id);
  EXPECT_TRUE(again.container_resources().contains(id));
  EXPECT_FALSE(again.container_resources().contains(done));
  ASSERT_EQ(again.completed_containers_size(), 1) << again.DebugString();
  EXPECT_EQ(again.completed_containers(0).container_id(), done);
  EXPECT_EQ(again.completed_containers(0).exit_status(), 4);
  // It runs on, reported in the heartbeats after the registration.
  const size_t heartbeats = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
    return rm.heartbeats_.size() >= heartbeats + 3 &&
           FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING) != nullptr;
  }));
  EXPECT_FALSE(ProcessGone(pid));
  EXPECT_EQ(rm_->With([&](FakeRm& rm) { return rm.CompletedIndex(id); }), -1);
}

TEST_F(NmFencingTest, AStartBeforeTheFirstRegistrationIsUnavailableNotRefused) {
  // An NM whose RM does not answer yet, as a restarted NM before its registration: it has no
  // container master keys to verify a token with, so a start is to be tried again (the RM
  // retries an AM launch that is Unavailable), not refused (which would fail the attempt).
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(
      BaseOptions("127.0.0.1:1", work_root_.string(), 0, use_cgroups_, hierarchy_), &loop_);
  ASSERT_TRUE(nm.ok()) << nm.status();
  nm_ = *std::move(nm);
  node_id_ = nm_->node_id();
  port_ = nm_->port();
  Connect();
  const std::string id = "container_e1_1_0001_01_000031";
  const v1::StartContainersResponse response = TryStart(rm_->IssueToken(TokenData(id)));
  ASSERT_EQ(response.failed_size(), 1) << response.DebugString();
  EXPECT_EQ(response.failed(0).container_id(), id);
  EXPECT_THAT(response.failed(0).message(), HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(response.failed(0).message(), HasSubstr("no container master keys yet"));
}

TEST_F(NmFencingTest, ARestartedNmVerifiesWithTheKeysItKeptBeforeItRegisters) {
  // The first NM hears the RM's keys and is killed with -9; the second, on the same work root
  // and port, cannot reach any RM. It starts a container under the key it kept, stops a
  // running one its predecessor started, and answers a token under a key it never held with
  // Unavailable (the RM may have rolled its keys meanwhile), not with a refusal.
  StartChildNm();
  const std::string running = "container_e1_1_0001_01_000041";
  ASSERT_TRUE(StartContainer(running, "echo $$ > pid; exec sleep 30"));
  const pid_t pid = ContainerPid(running);
  KillChildNm();
  NodeManagerOptions options = Options(port_);
  options.rm_tracker_address = "127.0.0.1:1";  // no RM: it never registers
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
  ASSERT_TRUE(nm.ok()) << nm.status();
  nm_ = *std::move(nm);
  ASSERT_EQ(nm_->node_id(), node_id_);
  Connect();

  const std::string id = "container_e1_1_0001_01_000042";
  ASSERT_TRUE(StartContainer(id, "exit 0"));
  EXPECT_THAT(StopContainer(running).succeeded(), ElementsAre(running));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(pid); }, kPollTimeout));
  // A replay of the first start is still refused: its container is recorded here.
  const v1::StartContainersResponse replayed = TryStart(rm_->IssueToken(TokenData(running)));
  ASSERT_EQ(replayed.failed_size(), 1) << replayed.DebugString();
  EXPECT_THAT(replayed.failed(0).message(), HasSubstr("already started here"));

  security::MasterKey unknown = rm_->current_key();
  unknown.id += 100;
  const v1::StartContainersResponse response =
      TryStart(rm_->IssueToken(TokenData("container_e1_1_0001_01_000043"), unknown));
  ASSERT_EQ(response.failed_size(), 1) << response.DebugString();
  EXPECT_THAT(response.failed(0).message(), HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(response.failed(0).message(),
              HasSubstr(absl::StrCat("not key ", unknown.id, ", and has not registered")));
}

TEST_F(NmFencingTest, ASecondNmOnTheSameWorkRootIsRefused) {
  StartFirstNm();
  absl::StatusOr<std::unique_ptr<NodeManager>> second = NodeManager::Start(Options(0), &loop_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("another NodeManager"));
}

}  // namespace
}  // namespace weft::nm
