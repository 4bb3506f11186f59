// Copyright Weft authors. Tests of the container executor: its bookkeeping against a fake
// operating system, then real processes (and, as root, real cgroups).
#include "nm/container_executor.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/cgroups.h"
#include "nm/os_env.h"
#include "nm/pid_file_test_util.h"
#include "nm/spawn_child.h"

namespace weft::nm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::Not;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

// ---- Against a fake operating system: exact signals and deadlines, no processes.

// Processes are entries in a map; SIGKILL ends one, other signals are ignored. Time moves only
// when the test says so.
class FakeOs : public OsEnv {
 public:
  std::set<std::string> dirs;
  std::vector<std::string> removed_trees;
  std::vector<SpawnOptions> spawned;
  std::vector<std::pair<pid_t, int>> kills;
  std::map<pid_t, std::optional<ProcessStatus>> processes;  // nullopt: running
  int64_t now_ms = 1000;
  pid_t next_pid = 500;
  std::map<std::string, std::string> files;                     // what ReadFile finds
  std::map<std::string, std::vector<std::string>> listings;     // what ListDir finds
  std::map<std::string, DiskUsage> disk_usage;                  // what MeasureDiskUsage finds
  std::vector<std::string> measured;                            // MeasureDiskUsage's paths

  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    auto it = files.find(path);
    if (it == files.end()) return absl::NotFoundError(path);
    return it->second;
  }
  absl::StatusOr<DiskUsage> MeasureDiskUsage(const std::string& path, int64_t) override {
    measured.push_back(path);
    auto it = disk_usage.find(path);
    if (it == disk_usage.end()) return absl::NotFoundError(path);
    return it->second;
  }
  absl::Status WriteFile(const std::string&, absl::string_view) override {
    return absl::OkStatus();
  }
  bool PathExists(const std::string& path) override { return dirs.contains(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    auto it = listings.find(path);
    return it == listings.end() ? std::vector<std::string>() : it->second;
  }
  absl::Status CreateDir(const std::string& path) override {
    dirs.insert(path);
    return absl::OkStatus();
  }
  absl::Status CreateDirs(const std::string& path) override { return CreateDir(path); }
  absl::Status RemoveDir(const std::string& path) override {
    dirs.erase(path);
    return absl::OkStatus();
  }
  absl::Status RemoveTree(const std::string& path) override {
    dirs.erase(path);
    removed_trees.push_back(path);
    return absl::OkStatus();
  }
  absl::StatusOr<pid_t> Spawn(const SpawnOptions& options,
                              absl::FunctionRef<absl::Status(pid_t)> before_exec) override {
    spawned.push_back(options);
    pid_t pid = next_pid++;
    if (absl::Status s = before_exec(pid); !s.ok()) return s;
    processes[pid] = std::nullopt;
    return pid;
  }
  absl::StatusOr<std::optional<ProcessStatus>> TryWait(pid_t pid) override {
    auto it = processes.find(pid);
    if (it == processes.end()) return absl::FailedPreconditionError("waitpid: No child processes");
    std::optional<ProcessStatus> status = it->second;
    if (status.has_value()) processes.erase(it);
    return status;
  }
  absl::StatusOr<ProcessStatus> Wait(pid_t pid) override {
    absl::StatusOr<std::optional<ProcessStatus>> status = TryWait(pid);
    if (!status.ok()) return status.status();
    if (!status->has_value()) return absl::InternalError("the fake would block forever");
    return **status;
  }
  absl::Status Kill(pid_t pid, int signal) override {
    kills.emplace_back(pid, signal);
    auto it = processes.find(pid < 0 ? -pid : pid);
    if (it == processes.end()) return absl::NotFoundError("No such process");
    if (signal == SIGKILL && !it->second.has_value()) {
      it->second = ProcessStatus{.signaled = true, .signal = SIGKILL};
    }
    return absl::OkStatus();
  }
  int64_t NowMs() override { return now_ms; }
  void SleepMs(int64_t ms) override { now_ms += ms; }
};

class FakeCgroups : public CgroupsHandler {
 public:
  std::vector<std::string> created, destroyed;
  std::vector<std::pair<std::string, pid_t>> added;
  absl::Status add_error;
  bool oom = false;

  std::string version() const override { return "v2"; }
  std::vector<std::string> controllers() const override { return {"cpu", "memory"}; }
  std::vector<std::string> missing_features() const override { return {}; }
  absl::Status Create(absl::string_view id, const CgroupLimits&) override {
    created.emplace_back(id);
    return absl::OkStatus();
  }
  absl::Status AddProcess(absl::string_view id, pid_t pid) override {
    if (!add_error.ok()) return add_error;
    added.emplace_back(id, pid);
    return absl::OkStatus();
  }
  absl::StatusOr<CgroupUsage> Usage(absl::string_view) override { return CgroupUsage(); }
  absl::StatusOr<bool> OomKilled(absl::string_view) override { return oom; }
  absl::StatusOr<int64_t> PidsLimitHits(absl::string_view) override { return pids_hits; }
  int64_t pids_hits = 0;
  absl::Status Destroy(absl::string_view id) override {
    destroyed.emplace_back(id);
    return absl::OkStatus();
  }
  std::string Path(absl::string_view controller, absl::string_view id) const override {
    return controller == "cpu" || controller == "memory" ? absl::StrCat("/fake/", id) : "";
  }
  absl::Status RemoveHierarchy() override { return absl::OkStatus(); }
};

LaunchSpec FakeSpec(const std::string& id) {
  LaunchSpec spec;
  spec.container_id = id;
  spec.argv = {"/bin/true"};
  spec.work_dir = "/work/" + id;
  spec.log_dir = "/logs/" + id;
  spec.limits.memory_bytes = 64 << 20;
  return spec;
}

TEST(ContainerExecutorFakeTest, LaunchPreparesDirsEnvironmentLogsAndCgroup) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  LaunchSpec spec = FakeSpec("c1");
  spec.env = {{"FOO", "bar"}, {"CONTAINER_ID", "spoofed"}};
  spec.user = "alice";
  absl::StatusOr<pid_t> pid = executor.Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_EQ(*pid, 500);
  EXPECT_TRUE(executor.IsRunning("c1"));
  EXPECT_TRUE(os.dirs.contains("/work/c1"));
  EXPECT_TRUE(os.dirs.contains("/logs/c1"));
  EXPECT_THAT(cgroups.created, ElementsAre("c1"));
  EXPECT_THAT(cgroups.added, ElementsAre(Pair("c1", 500)));
  ASSERT_EQ(os.spawned.size(), 1u);
  const SpawnOptions& options = os.spawned[0];
  EXPECT_THAT(options.argv, ElementsAre("/bin/true"));
  EXPECT_THAT(options.env, ElementsAre("CONTAINER_ID=c1", "FOO=bar", "LOG_DIRS=/logs/c1",
                                       absl::StrCat("PATH=", kDefaultContainerPath), "PWD=/work/c1",
                                       "USER=alice"));
  EXPECT_EQ(options.work_dir, "/work/c1");
  EXPECT_EQ(options.stdout_path, "/logs/c1/stdout");
  EXPECT_EQ(options.stderr_path, "/logs/c1/stderr");

  absl::StatusOr<pid_t> again = executor.Launch(spec);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(again.status().message(), HasSubstr("launching c1: the container already exists"));
}

TEST(ContainerExecutorFakeTest, LaunchRejectsBadSpecsWithoutSideEffects) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  std::vector<std::pair<LaunchSpec, std::string>> cases;
  cases.emplace_back(FakeSpec("c1"), "no program to run");
  cases.back().first.argv.clear();
  cases.emplace_back(FakeSpec("c1"), "work_dir 'relative' is not an absolute path");
  cases.back().first.work_dir = "relative";
  cases.emplace_back(FakeSpec("c1"), "log_dir '' is not an absolute path");
  cases.back().first.log_dir = "";
  cases.emplace_back(FakeSpec("../c1"), "invalid container id '../c1'");
  cases.emplace_back(FakeSpec("c1"), "invalid environment variable 'A=B'");
  cases.back().first.env["A=B"] = "x";
  for (const auto& [spec, message] : cases) {
    absl::StatusOr<pid_t> pid = executor.Launch(spec);
    EXPECT_EQ(pid.status().code(), absl::StatusCode::kInvalidArgument) << message;
    EXPECT_THAT(pid.status().message(), HasSubstr(message));
  }
  EXPECT_THAT(os.dirs, IsEmpty());
  EXPECT_THAT(os.spawned, IsEmpty());
  EXPECT_THAT(cgroups.created, IsEmpty());
}

TEST(ContainerExecutorFakeTest, FailedCgroupJoinRemovesTheCgroupAndAllowsARetry) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  cgroups.add_error = absl::PermissionDeniedError("write '500' to 'cgroup.procs': Denied");
  absl::StatusOr<pid_t> pid = executor.Launch(FakeSpec("c1"));
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(pid.status().message(), "launching c1: write '500' to 'cgroup.procs': Denied");
  EXPECT_THAT(cgroups.destroyed, ElementsAre("c1"));
  EXPECT_FALSE(executor.IsRunning("c1"));
  EXPECT_THAT(executor.Reap(), IsEmpty());

  cgroups.add_error = absl::OkStatus();
  EXPECT_TRUE(executor.Launch(FakeSpec("c1")).ok());
}

TEST(ContainerExecutorFakeTest, StopSendsSigtermThenSigkillOnlyAfterTheGrace) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  ASSERT_TRUE(executor.Launch(FakeSpec("c1")).ok());
  EXPECT_EQ(executor.NextDeadlineMs(), -1);

  executor.Stop("c1", 500);
  EXPECT_THAT(os.kills, ElementsAre(Pair(-500, SIGTERM)));
  EXPECT_EQ(executor.NextDeadlineMs(), 1500);
  executor.Stop("c1", 800);  // a later deadline does not postpone the first one
  EXPECT_EQ(executor.NextDeadlineMs(), 1500);
  EXPECT_THAT(os.kills, ElementsAre(Pair(-500, SIGTERM)));

  os.now_ms = 1499;
  EXPECT_THAT(executor.Reap(), IsEmpty());
  EXPECT_THAT(os.kills, ElementsAre(Pair(-500, SIGTERM)));
  EXPECT_TRUE(executor.IsRunning("c1"));

  os.now_ms = 1500;
  std::vector<ContainerExit> exits = executor.Reap();
  EXPECT_THAT(os.kills, Contains(Pair(-500, SIGKILL)));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].container_id, "c1");
  EXPECT_TRUE(exits[0].killed_by_signal);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_EQ(exits[0].exit_code, 137);
  EXPECT_FALSE(exits[0].oom_killed);
  EXPECT_EQ(exits[0].diagnostics,
            "Container stopped: killed by SIGKILL after the 500 ms grace period (exit code 137)");
  EXPECT_THAT(cgroups.destroyed, ElementsAre("c1"));
  EXPECT_EQ(executor.NextDeadlineMs(), -1);
  EXPECT_FALSE(executor.IsRunning("c1"));
  EXPECT_THAT(executor.Reap(), IsEmpty()) << "each exit is reported once";
  EXPECT_EQ(executor.Signal("c1", SIGTERM).code(), absl::StatusCode::kNotFound);

  EXPECT_EQ(executor.Cleanup("c1").ok(), true);
  EXPECT_THAT(os.removed_trees, ElementsAre("/work/c1"));
  EXPECT_EQ(executor.Cleanup("c1").code(), absl::StatusCode::kNotFound);
}

TEST(ContainerExecutorFakeTest, OomKillIsReportedWithTheLimit) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  absl::StatusOr<pid_t> pid = executor.Launch(FakeSpec("c1"));
  ASSERT_TRUE(pid.ok());
  EXPECT_EQ(executor.Cleanup("c1").code(), absl::StatusCode::kFailedPrecondition);
  cgroups.oom = true;
  os.processes[*pid] = ProcessStatus{.exit_code = 137};  // a shell whose child was OOM-killed
  std::vector<ContainerExit> exits = executor.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(exits[0].oom_killed);
  EXPECT_FALSE(exits[0].killed_by_signal);
  EXPECT_EQ(exits[0].exit_code, 137);
  EXPECT_EQ(exits[0].diagnostics,
            "Container killed: exceeded its memory limit of 64 MiB (exit code 137)");
}

TEST(ContainerExecutorFakeTest, DestructorKillsWhatStillRuns) {
  FakeOs os;
  FakeCgroups cgroups;
  {
    ContainerExecutor executor(&cgroups, &os);
    ASSERT_TRUE(executor.Launch(FakeSpec("c1")).ok());
    ASSERT_TRUE(executor.Launch(FakeSpec("c2")).ok());
  }
  EXPECT_THAT(os.kills, UnorderedElementsAre(Pair(-500, SIGKILL), Pair(-501, SIGKILL)));
  EXPECT_THAT(os.processes, IsEmpty()) << "both reaped";
  EXPECT_EQ(cgroups.destroyed.size(), 2u);
}

// "<pid> (<comm>) S <parent> ..." with the 20 fields after the command ParseProcessStat needs.
std::string StatLine(pid_t pid, pid_t parent) {
  return absl::StrCat(pid, " (sleep) S ", parent, " 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777");
}

TEST(ContainerExecutorFakeTest, StopSignalsTheGroupAndEveryProcessThatLeftIt) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  ASSERT_TRUE(executor.Launch(FakeSpec("c1")).ok());  // pid 500
  // 700 left the group (setsid) and forked 701; 702 belongs to somebody else.
  os.listings["/proc"] = {"700", "701", "702", "self", "cpuinfo"};
  os.files["/proc/700/stat"] = StatLine(700, 500);
  os.files["/proc/701/stat"] = StatLine(701, 700);
  os.files["/proc/702/stat"] = StatLine(702, 1);
  executor.Stop("c1", 500);
  EXPECT_THAT(os.kills, UnorderedElementsAre(Pair(-500, SIGTERM), Pair(700, SIGTERM),
                                             Pair(701, SIGTERM)));
  os.kills.clear();
  os.now_ms += 500;
  (void)executor.Reap();
  EXPECT_THAT(os.kills, IsSupersetOf({Pair(-500, SIGKILL), Pair(700, SIGKILL),
                                       Pair(701, SIGKILL)}));
}

TEST(ContainerExecutorFakeTest, DiskLimitKillsTheContainerWithADiagnosticNamingTheLimit) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  LaunchSpec spec = FakeSpec("c1");
  spec.disk_limit_bytes = int64_t{256} << 20;
  ASSERT_TRUE(executor.Launch(spec).ok());
  os.disk_usage["/work/c1"] = DiskUsage{.bytes = int64_t{100} << 20, .entries = 3};
  EXPECT_THAT(executor.Reap(), IsEmpty());
  EXPECT_THAT(os.measured, IsEmpty()) << "not due before kDiskCheckIntervalMs";
  os.now_ms += kDiskCheckIntervalMs;
  EXPECT_THAT(executor.Reap(), IsEmpty());
  EXPECT_THAT(os.measured, ElementsAre("/work/c1"));
  EXPECT_THAT(os.kills, IsEmpty()) << "under its limit";

  os.disk_usage["/work/c1"].bytes = int64_t{312} << 20;
  os.now_ms += kDiskCheckIntervalMs;
  std::vector<ContainerExit> exits = executor.Reap();
  EXPECT_THAT(os.kills, Contains(Pair(-500, SIGKILL)));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(exits[0].disk_limit_exceeded);
  EXPECT_EQ(exits[0].exit_code, 137);
  EXPECT_EQ(exits[0].diagnostics,
            "Container killed: its work dir used 312 MB, over the disk limit of 256 MB "
            "(--container-disk-limit-mb) (exit code 137)");

  // More entries than one check counts: over its limit too.
  spec = FakeSpec("c2");
  spec.disk_limit_bytes = int64_t{1} << 20;
  ASSERT_TRUE(executor.Launch(spec).ok());  // pid 501
  os.disk_usage["/work/c2"] = DiskUsage{.bytes = 4096, .entries = kDiskCheckMaxEntries,
                                        .truncated = true};
  os.now_ms += kDiskCheckIntervalMs;
  exits = executor.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_THAT(exits[0].diagnostics,
              HasSubstr("its work dir holds more than 1000000 files and directories, more than "
                        "the disk limit of 1 MB (--container-disk-limit-mb) lets it count"));

  // No limit: never measured.
  os.measured.clear();
  ASSERT_TRUE(executor.Launch(FakeSpec("c3")).ok());
  os.now_ms += 10 * kDiskCheckIntervalMs;
  (void)executor.Reap();
  EXPECT_THAT(os.measured, IsEmpty());
}

TEST(ContainerExecutorFakeTest, ALogDirFilledPastTheMonitorKillsTheContainer) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  AdoptSpec adopt;
  adopt.container_id = "c1";
  adopt.pid = 600;
  adopt.monitor_pid = 601;
  adopt.state_dir = "/state/c1";
  adopt.work_dir = "/work/c1";
  adopt.log_dir = "/logs/c1";
  adopt.log_limit_bytes = int64_t{1} << 20;
  adopt.monitor_start_time = 777;  // StatLine's: the monitor lives
  os.listings["/proc"] = {"601"};
  os.files["/proc/601/stat"] = StatLine(601, 1);
  ASSERT_TRUE(executor.Adopt(adopt).ok());
  os.disk_usage["/logs/c1"] = DiskUsage{.bytes = int64_t{3} << 20, .entries = 2};
  EXPECT_THAT(executor.Reap(), IsEmpty()) << "two capped logs and the slack";
  EXPECT_THAT(os.kills, IsEmpty());
  os.disk_usage["/logs/c1"].bytes = int64_t{300} << 20;
  os.now_ms += kDiskCheckIntervalMs;
  (void)executor.Reap();
  EXPECT_THAT(os.kills, Contains(Pair(-600, SIGKILL)));
  os.files["/state/c1/exit_code"] = "signal 9\n";
  std::vector<ContainerExit> exits = executor.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].diagnostics,
            "Container killed: its log dir used 300 MB, over twice the log limit of 1 MB "
            "(--container-log-limit-mb): it wrote there other than through stdout and stderr "
            "(exit code 137)");
}

TEST(ContainerExecutorFakeTest, LimitsHitWithoutEndingTheContainerAreInItsDiagnostics) {
  FakeOs os;
  FakeCgroups cgroups;
  ContainerExecutor executor(&cgroups, &os);
  AdoptSpec adopt;
  adopt.container_id = "c1";
  adopt.pid = 600;
  adopt.monitor_pid = 601;
  adopt.state_dir = "/state/c1";
  adopt.work_dir = "/work/c1";
  adopt.pids_max = 512;
  adopt.log_limit_bytes = int64_t{1} << 20;
  ASSERT_TRUE(executor.Adopt(adopt).ok());
  cgroups.pids_hits = 3;
  os.files["/state/c1/exit_code"] = "exit 0\n";
  os.files["/state/c1/logs_dropped"] = "stdout 209715200\nstderr 524288\n";
  std::vector<ContainerExit> exits = executor.Reap();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0);
  EXPECT_EQ(exits[0].diagnostics,
            "pids limit of 512 reached: 3 forks refused (--container-pids-per-vcore, "
            "--container-pids-max); stdout truncated: its oldest 200 MB dropped, over the log "
            "limit of 1 MB (--container-log-limit-mb); stderr truncated: its oldest 0.5 MB "
            "dropped, over the log limit of 1 MB (--container-log-limit-mb)");
}

TEST(MonitorFilesTest, LogsDroppedFileParses) {
  absl::StatusOr<LogsDropped> both = ParseLogsDroppedFile("stdout 10\nstderr 20\n");
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_EQ(both->stdout_bytes, 10);
  EXPECT_EQ(both->stderr_bytes, 20);
  EXPECT_EQ(ParseLogsDroppedFile("stderr 5\n")->stdout_bytes, 0);
  EXPECT_FALSE(ParseLogsDroppedFile("stdin 5\n").ok());
  EXPECT_FALSE(ParseLogsDroppedFile("stdout -5\n").ok());
  EXPECT_FALSE(ParseLogsDroppedFile("stdout\n").ok());
}

// ---- Real processes.

// The content of `path`, "" when it cannot be read.
std::string SlurpFile(const std::string& path) { return ReadFile(path).value_or(""); }

// How long PollUntil (common/test_poll.h) waits unless a test says otherwise.
constexpr absl::Duration kPollTimeout = absl::Seconds(5);

// True once `pid` has exited: gone, or a zombie waiting for its new parent to reap it.
bool ProcessGone(pid_t pid) {
  std::string stat = SlurpFile(absl::StrCat("/proc/", pid, "/stat"));
  size_t paren = stat.rfind(") ");
  if (stat.empty() || paren == std::string::npos) return true;
  char state = stat[paren + 2];
  return state == 'Z' || state == 'X';
}


// Uses the machine's cgroups when running as root (in a hierarchy of its own), none otherwise;
// tests that need them skip.
class ContainerExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    base_ = absl::StrCat(::testing::TempDir(), "weft_executor_", getpid(), "_", info->name());
    std::filesystem::remove_all(base_);
    hierarchy_ = absl::StrCat("weft_test_", getpid());
    if (geteuid() == 0) {
      absl::StatusOr<std::unique_ptr<CgroupsHandler>> cgroups =
          DetectCgroups("/sys/fs/cgroup", hierarchy_);
      if (cgroups.ok()) {
        cgroups_ = std::move(*cgroups);
      } else {
        cgroups_error_ = cgroups.status().ToString();
      }
    } else {
      cgroups_error_ = "not root";
    }
    executor_ = std::make_unique<ContainerExecutor>(cgroups_.get());
  }

  void TearDown() override {
    executor_.reset();
    if (cgroups_ != nullptr) {
      absl::Status removed = cgroups_->RemoveHierarchy();
      EXPECT_TRUE(removed.ok()) << removed;
    }
    std::filesystem::remove_all(base_);
  }

  LaunchSpec Spec(const std::string& id, std::vector<std::string> argv) {
    LaunchSpec spec;
    spec.container_id = id;
    spec.argv = std::move(argv);
    spec.work_dir = absl::StrCat(base_, "/work/", id);
    spec.log_dir = absl::StrCat(base_, "/logs/", id);
    return spec;
  }

  // Reaps until `id` exits, for at most `timeout_ms`.
  std::optional<ContainerExit> ReapUntilExit(const std::string& id, int64_t timeout_ms = 5000) {
    std::optional<ContainerExit> result;
    PollUntil(
        [&] {
          for (ContainerExit& exit : executor_->Reap()) {
            if (exit.container_id == id) result = std::move(exit);
          }
          return result.has_value();
        },
        absl::Milliseconds(timeout_ms));
    return result;
  }

  // The cgroup path of `pid` for `controller` as /proc/<pid>/cgroup shows it ("" if none).
  std::string CgroupOf(pid_t pid, absl::string_view controller) {
    for (absl::string_view line : absl::StrSplit(SlurpFile(absl::StrCat("/proc/", pid, "/cgroup")),
                                                 '\n', absl::SkipEmpty())) {
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

  std::string base_;
  std::string hierarchy_;
  std::string cgroups_error_;
  std::unique_ptr<CgroupsHandler> cgroups_;
  std::unique_ptr<ContainerExecutor> executor_;
};

#define SKIP_WITHOUT_MEMORY_CGROUP()                                                  \
  do {                                                                                \
    if (cgroups_ == nullptr) GTEST_SKIP() << "no usable cgroups: " << cgroups_error_; \
    if (!cgroups_->HasController("memory")) {                                         \
      GTEST_SKIP() << "no memory controller: "                                        \
                   << absl::StrJoin(cgroups_->missing_features(), "; ");              \
    }                                                                                 \
  } while (0)

TEST_F(ContainerExecutorTest, RunsCommandWithItsEnvironmentAndCapturesOutput) {
  ASSERT_EQ(setenv("WEFT_NM_TEST_LEAK", "leaked", 1), 0);
  LaunchSpec spec = Spec("container_1", {"/bin/sh", "-c",
                                         "echo hello; echo err >&2; "
                                         "echo \"id=$CONTAINER_ID foo=$FOO "
                                         "leak=${WEFT_NM_TEST_LEAK-unset}\"; "
                                         "echo \"pwd=$PWD logs=$LOG_DIRS\"; pwd; exit 3"});
  spec.env["FOO"] = "bar baz";
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  EXPECT_GT(*pid, 0);

  std::optional<ContainerExit> exit = ReapUntilExit("container_1");
  ASSERT_TRUE(exit.has_value()) << "no exit within 5 s";
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->killed_by_signal);
  EXPECT_FALSE(exit->oom_killed);
  EXPECT_EQ(exit->diagnostics, "Container exited with code 3");
  EXPECT_EQ(SlurpFile(spec.log_dir + "/stdout"),
            absl::StrCat("hello\nid=container_1 foo=bar baz leak=unset\npwd=", spec.work_dir,
                         " logs=", spec.log_dir, "\n", spec.work_dir, "\n"));
  EXPECT_EQ(SlurpFile(spec.log_dir + "/stderr"), "err\n");
  if (cgroups_ != nullptr) {
    EXPECT_FALSE(std::filesystem::exists(cgroups_->Path("memory", "container_1")))
        << "the cgroup is destroyed after reaping";
  }

  EXPECT_FALSE(executor_->IsRunning("container_1"));
  ASSERT_TRUE(executor_->Cleanup("container_1").ok());
  EXPECT_FALSE(std::filesystem::exists(spec.work_dir));
  EXPECT_TRUE(std::filesystem::exists(spec.log_dir + "/stdout")) << "logs outlive Cleanup";
  unsetenv("WEFT_NM_TEST_LEAK");
}

// The NM runs with the daemons' private umask; a container's program gets 022 (issue 26).
TEST_F(ContainerExecutorTest, TheProgramGetsTheConventionalUmaskNotTheDaemons) {
  const mode_t before = ::umask(077);
  LaunchSpec spec = Spec("container_umask", {"/bin/sh", "-c", "umask"});
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ::umask(before);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::optional<ContainerExit> exit = ReapUntilExit("container_umask");
  ASSERT_TRUE(exit.has_value()) << "no exit within 5 s";
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(SlurpFile(spec.log_dir + "/stdout"), "0022\n");
}

TEST_F(ContainerExecutorTest, MissingBinaryFailsLaunchWithAClearMessage) {
  absl::StatusOr<pid_t> pid = executor_->Launch(Spec("container_2", {"/no/such", "arg"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(pid.status().message(),
            "launching container_2: exec '/no/such': No such file or directory");
  EXPECT_FALSE(executor_->IsRunning("container_2"));
  EXPECT_THAT(executor_->Reap(), IsEmpty());
  if (cgroups_ != nullptr) {
    EXPECT_FALSE(std::filesystem::exists(cgroups_->Path("memory", "container_2")))
        << "a failed launch leaves no cgroup behind";
  }

  pid = executor_->Launch(Spec("container_3", {"weft-no-such-program"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.status().message(),
              HasSubstr("launching container_3: exec 'weft-no-such-program' (searched PATH="));

  // A file that is not executable.
  std::filesystem::create_directories(base_);
  std::ofstream(base_ + "/script.sh") << "echo hi\n";
  pid = executor_->Launch(Spec("container_4", {base_ + "/script.sh"}));
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().message(),
            absl::StrCat("launching container_4: exec '", base_, "/script.sh': Permission denied"));

  // A bare name found on the PATH runs.
  pid = executor_->Launch(Spec("container_5", {"true"}));
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::optional<ContainerExit> exit = ReapUntilExit("container_5");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->diagnostics, "");
}

TEST_F(ContainerExecutorTest, StopKillsAGroupThatIgnoresSigtermAfterTheGrace) {
  LaunchSpec spec =
      Spec("container_6", {"/bin/sh", "-c", "trap '' TERM; sleep 100 & echo $! > child.pid; wait"});
  ASSERT_TRUE(executor_->Launch(spec).ok());
  pid_t child = ReadPidFile(spec.work_dir + "/child.pid", kPollTimeout);
  ASSERT_GT(child, 0) << "the script did not start its child";

  constexpr int64_t kGraceMs = 300;
  auto stopped_at = std::chrono::steady_clock::now();
  executor_->Stop("container_6", kGraceMs);
  EXPECT_THAT(executor_->Reap(), IsEmpty()) << "SIGTERM is ignored";
  EXPECT_TRUE(executor_->IsRunning("container_6"));

  std::optional<ContainerExit> exit = ReapUntilExit("container_6");
  ASSERT_TRUE(exit.has_value()) << "not killed within 5 s";
  EXPECT_GE(std::chrono::steady_clock::now() - stopped_at, std::chrono::milliseconds(kGraceMs));
  EXPECT_TRUE(exit->killed_by_signal);
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_EQ(exit->diagnostics,
            "Container stopped: killed by SIGKILL after the 300 ms grace period (exit code 137)");
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(child); }, kPollTimeout))
      << "the container's child " << child << " survived";
}

TEST_F(ContainerExecutorTest, SignalReachesTheWholeGroup) {
  LaunchSpec spec = Spec("container_7", {"/bin/sh", "-c", "sleep 100 & echo $! > child.pid; wait"});
  ASSERT_TRUE(executor_->Launch(spec).ok());
  pid_t child = ReadPidFile(spec.work_dir + "/child.pid", kPollTimeout);
  ASSERT_GT(child, 0);
  ASSERT_TRUE(executor_->Signal("container_7", SIGTERM).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_7");
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_signal);
  EXPECT_EQ(exit->signal, SIGTERM);
  EXPECT_EQ(exit->exit_code, 143);
  EXPECT_EQ(exit->diagnostics, "Container killed by SIGTERM (exit code 143)");
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(child); }, kPollTimeout));
  EXPECT_EQ(executor_->Signal("container_7", SIGTERM).code(), absl::StatusCode::kNotFound);
}

TEST_F(ContainerExecutorTest, ReapKillsWhatTheMainProcessLeftBehind) {
  LaunchSpec spec = Spec("container_8", {"/bin/sh", "-c", "sleep 100 & echo $! > child.pid"});
  ASSERT_TRUE(executor_->Launch(spec).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_8");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  pid_t child = ReadPidFile(spec.work_dir + "/child.pid", kPollTimeout);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(child); }, kPollTimeout))
      << "the background child " << child << " survived its container";
}

TEST_F(ContainerExecutorTest, ProcessRunsInItsCgroupWithItsLimits) {
  SKIP_WITHOUT_MEMORY_CGROUP();
  // The shell's first command shows where the container was before it could run anything.
  LaunchSpec spec =
      Spec("container_9", {"/bin/sh", "-c", "cat /proc/$$/cgroup > cgroup.txt; exec sleep 100"});
  spec.limits = {.memory_bytes = 64 << 20, .cpu_weight = kCpuSharesPerVcore};
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::string want = absl::StrCat("/", hierarchy_, "/container_9");
  std::string first;
  EXPECT_TRUE(PollUntil(
      [&] {
        first = SlurpFile(spec.work_dir + "/cgroup.txt");
        return absl::StrContains(first, want);
      },
      kPollTimeout))
      << "at its start the container was in:\n"
      << first;
  EXPECT_TRUE(absl::EndsWith(CgroupOf(*pid, "memory"), want)) << CgroupOf(*pid, "memory");
  if (cgroups_->HasController("cpu")) {
    EXPECT_TRUE(absl::EndsWith(CgroupOf(*pid, "cpu"), want)) << CgroupOf(*pid, "cpu");
  }
  const std::string memory_dir = cgroups_->Path("memory", "container_9");
  EXPECT_EQ(SlurpFile(memory_dir +
                      (cgroups_->version() == "v1" ? "/memory.limit_in_bytes" : "/memory.max")),
            "67108864\n");

  executor_->Stop("container_9", 0);
  std::optional<ContainerExit> exit = ReapUntilExit("container_9");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->diagnostics, "Container stopped: killed by SIGKILL (exit code 137)");
  for (const std::string& controller : cgroups_->controllers()) {
    EXPECT_FALSE(std::filesystem::exists(cgroups_->Path(controller, "container_9"))) << controller;
  }
}

TEST_F(ContainerExecutorTest, ContainerAboveItsMemoryLimitIsOomKilledAndReported) {
  SKIP_WITHOUT_MEMORY_CGROUP();
  // tail keeps a "line" with no newline in memory: it grows until the limit stops it.
  LaunchSpec spec = Spec("container_10", {"/bin/sh", "-c", "head -c 200M /dev/zero | tail"});
  spec.limits.memory_bytes = 64 << 20;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_10", 10000);
  ASSERT_TRUE(exit.has_value()) << "not killed within 10 s";
  EXPECT_TRUE(exit->oom_killed);
  EXPECT_NE(exit->exit_code, 0);
  EXPECT_THAT(exit->diagnostics,
              HasSubstr("Container killed: exceeded its memory limit of 64 MiB"));
}

TEST_F(ContainerExecutorTest, UsageOfABusyContainerIsNonZero) {
  SKIP_WITHOUT_MEMORY_CGROUP();
  LaunchSpec spec = Spec("container_11", {"/bin/sh", "-c", "while :; do :; done"});
  spec.limits.memory_bytes = 64 << 20;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  CgroupUsage usage;
  EXPECT_TRUE(PollUntil(
      [&] {
        absl::StatusOr<CgroupUsage> now = cgroups_->Usage("container_11");
        if (now.ok()) usage = *now;
        return now.ok() && usage.memory_bytes.value_or(0) > 0 && usage.cpu_ns.value_or(0) > 0;
      },
      kPollTimeout))
      << "memory " << usage.memory_bytes.value_or(-1) << " cpu " << usage.cpu_ns.value_or(-1);
  EXPECT_TRUE(usage.rss_bytes.has_value());
  EXPECT_FALSE(cgroups_->OomKilled("container_11").value_or(true));
  executor_->Stop("container_11", 0);
  std::optional<ContainerExit> exit = ReapUntilExit("container_11");
  ASSERT_TRUE(exit.has_value());
  // Its lifetime totals, read before its cgroups went: at least what was seen while it ran.
  ASSERT_TRUE(exit->usage.has_value());
  EXPECT_GE(exit->usage->cpu_ns.value_or(-1), *usage.cpu_ns);
  if (cgroups_->version() == "v1" || exit->usage->peak_memory_bytes.has_value()) {
    EXPECT_GE(exit->usage->peak_memory_bytes.value_or(-1), *usage.memory_bytes);
  }
  EXPECT_EQ(cgroups_->Usage("container_11").status().code(), absl::StatusCode::kNotFound);
}

// ---- Monitored containers (LaunchSpec::state_dir) and adoption: what NM restart relies on.

TEST(MonitorFilesTest, ExitFileAndProcessStatRoundTrip) {
  EXPECT_EQ(FormatExitFile({.exit_code = 7}), "exit 7\n");
  EXPECT_EQ(FormatExitFile({.signaled = true, .signal = 9}), "signal 9\n");
  absl::StatusOr<ProcessStatus> exited = ParseExitFile("exit 7\n");
  ASSERT_TRUE(exited.ok()) << exited.status();
  EXPECT_FALSE(exited->signaled);
  EXPECT_EQ(exited->exit_code, 7);
  absl::StatusOr<ProcessStatus> killed = ParseExitFile("signal 15\n");
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_TRUE(killed->signaled);
  EXPECT_EQ(killed->signal, 15);
  for (const char* bad : {"", "exit 7", "exit 256\n", "signal 0\n", "exit -1\n", "quit 1\n"}) {
    EXPECT_FALSE(ParseExitFile(bad).ok()) << bad;
  }
  // A command may hold spaces and parentheses: fields count from the last ')'.
  absl::StatusOr<ProcessInfo> info = ParseProcessStat(
      "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 12345 "
      "67 18446744073709551615\n");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->state, 'S');
  EXPECT_EQ(info->parent, 17);
  EXPECT_EQ(info->start_time, 987654u);
  EXPECT_FALSE(info->Ended());
  EXPECT_FALSE(ParseProcessStat("4242 (x) S 1 2").ok());
  EXPECT_EQ(ReadProcessInfo(OsEnv::Default(), getpid())->parent, getppid());
}

// The real process's start time, as ReadProcessInfo gives it.
uint64_t StartTime(pid_t pid) {
  absl::StatusOr<ProcessInfo> info = ReadProcessInfo(OsEnv::Default(), pid);
  return info.ok() ? info->start_time : 0;
}

TEST_F(ContainerExecutorTest, MonitoredContainerRecordsHowItEnded) {
  LaunchSpec spec = Spec("container_20", {"/bin/sh", "-c", "echo out; exit 7"});
  spec.state_dir = absl::StrCat(base_, "/state/container_20");
  pid_t recorded_monitor = 0;
  spec.on_monitor_started = [&](pid_t monitor) {
    recorded_monitor = monitor;
    return absl::OkStatus();
  };
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  absl::StatusOr<pid_t> monitor = executor_->MonitorPid("container_20");
  ASSERT_TRUE(monitor.ok());
  EXPECT_EQ(*monitor, recorded_monitor);
  EXPECT_NE(*monitor, *pid);
  std::optional<ContainerExit> exit = ReapUntilExit("container_20");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 7);
  EXPECT_FALSE(exit->status_lost);
  EXPECT_EQ(exit->diagnostics, "Container exited with code 7");
  EXPECT_EQ(SlurpFile(spec.state_dir + "/exit_code"), "exit 7\n");
  EXPECT_EQ(SlurpFile(spec.state_dir + "/pid"), absl::StrCat(*pid, "\n"));
  EXPECT_EQ(SlurpFile(spec.log_dir + "/stdout"), "out\n");
  struct stat st;
  ASSERT_EQ(stat(spec.state_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u) << "the container's user must not forge its exit";

  // Killed by a signal: recorded as such.
  LaunchSpec killed = Spec("container_21", {"/bin/sh", "-c", "kill -TERM $$"});
  killed.state_dir = absl::StrCat(base_, "/state/container_21");
  ASSERT_TRUE(executor_->Launch(killed).ok());
  exit = ReapUntilExit("container_21");
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->killed_by_signal);
  EXPECT_EQ(exit->exit_code, 128 + SIGTERM);
  EXPECT_EQ(SlurpFile(killed.state_dir + "/exit_code"), "signal 15\n");

  // A failing hook starts nothing.
  LaunchSpec refused = Spec("container_22", {"/bin/sh", "-c", "touch ran"});
  refused.state_dir = absl::StrCat(base_, "/state/container_22");
  refused.on_monitor_started = [](pid_t) { return absl::UnavailableError("store down"); };
  absl::StatusOr<pid_t> none = executor_->Launch(refused);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(std::filesystem::exists(refused.work_dir + "/ran"));
  EXPECT_FALSE(executor_->IsRunning("container_22"));
}

TEST_F(ContainerExecutorTest, MonitoredLaunchReportsAnExecFailure) {
  LaunchSpec spec = Spec("container_23", {"/no/such/program"});
  spec.state_dir = absl::StrCat(base_, "/state/container_23");
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_THAT(pid.status().message(),
              HasSubstr("launching container_23: exec '/no/such/program': No such file"));
  EXPECT_FALSE(executor_->IsRunning("container_23"));
}

// The monitor as its own program (weft-container-monitor, started with posix_spawn), with the
// NM's descriptors numbered past the ones it moves aside: its pipes and logs still reach it.
TEST_F(ContainerExecutorTest, MonitorProgramRecordsHowItEndedWithManyDescriptorsOpen) {
  ASSERT_EQ(setenv("WEFT_CONTAINER_MONITOR", WEFT_CONTAINER_MONITOR_PATH, 1), 0);
  // A busy NM (sockets, pidfds, its store): descriptors up to 99 taken, so that the launch's
  // pipes and log files land on 100 and above, where the monitor's descriptors are moved.
  std::vector<int> held;
  for (int fd = 0; fd < 99;) {
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  LaunchSpec spec = Spec("container_24", {"/bin/sh", "-c", "echo out; exit 7"});
  spec.state_dir = absl::StrCat(base_, "/state/container_24");
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  LaunchSpec missing = Spec("container_25", {"/no/such/program"});
  missing.state_dir = absl::StrCat(base_, "/state/container_25");
  absl::StatusOr<pid_t> failed = executor_->Launch(missing);
  for (int fd : held) close(fd);
  unsetenv("WEFT_CONTAINER_MONITOR");
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::optional<ContainerExit> exit = ReapUntilExit("container_24");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 7);
  EXPECT_FALSE(exit->status_lost);
  EXPECT_EQ(SlurpFile(spec.state_dir + "/exit_code"), "exit 7\n");
  EXPECT_EQ(SlurpFile(spec.state_dir + "/pid"), absl::StrCat(*pid, "\n"));
  EXPECT_EQ(SlurpFile(spec.log_dir + "/stdout"), "out\n");
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.status().message(),
              HasSubstr("launching container_25: exec '/no/such/program': No such file"));

  // A monitor program that is not there: the launch fails naming it, and nothing runs.
  ASSERT_EQ(setenv("WEFT_CONTAINER_MONITOR", "/no/such/weft-container-monitor", 1), 0);
  LaunchSpec orphan = Spec("container_26", {"/bin/sh", "-c", "touch ran"});
  orphan.state_dir = absl::StrCat(base_, "/state/container_26");
  absl::StatusOr<pid_t> none = executor_->Launch(orphan);
  unsetenv("WEFT_CONTAINER_MONITOR");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(),
              HasSubstr("starting the monitor '/no/such/weft-container-monitor'"));
  EXPECT_FALSE(executor_->IsRunning("container_26"));
  EXPECT_FALSE(std::filesystem::exists(orphan.work_dir + "/ran"));
}

TEST_F(ContainerExecutorTest, MonitorAndContainerShareTheCgroupsAndTheOomPreference) {
  SKIP_WITHOUT_MEMORY_CGROUP();
  LaunchSpec spec = Spec("container_24", {"/bin/sh", "-c", "exec sleep 100"});
  spec.state_dir = absl::StrCat(base_, "/state/container_24");
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  ASSERT_TRUE(pid.ok()) << pid.status();
  pid_t monitor = *executor_->MonitorPid("container_24");
  const std::string want = absl::StrCat("/", hierarchy_, "/container_24");
  for (pid_t p : {monitor, *pid}) {
    EXPECT_TRUE(absl::EndsWith(CgroupOf(p, "memory"), want)) << p << " " << CgroupOf(p, "memory");
  }
  absl::StatusOr<std::vector<pid_t>> in_group = cgroups_->Processes("container_24");
  ASSERT_TRUE(in_group.ok()) << in_group.status();
  EXPECT_THAT(*in_group, Contains(monitor));
  EXPECT_THAT(*in_group, Contains(*pid));
  EXPECT_THAT(cgroups_->ListContainers().value_or(std::vector<std::string>()),
              Contains("container_24"));
  // The monitor gives up its OOM preference only with CAP_SYS_RESOURCE (bit 24 of CapEff).
  uint64_t caps = 0;
  for (absl::string_view line : absl::StrSplit(SlurpFile("/proc/self/status"), '\n')) {
    if (absl::ConsumePrefix(&line, "CapEff:")) {
      (void)absl::SimpleHexAtoi(absl::StripAsciiWhitespace(line), &caps);
    }
  }
  EXPECT_EQ(SlurpFile(absl::StrCat("/proc/", monitor, "/oom_score_adj")),
            (caps >> 24) & 1 ? "-1000\n" : SlurpFile("/proc/self/oom_score_adj"));
  EXPECT_EQ(SlurpFile(absl::StrCat("/proc/", *pid, "/oom_score_adj")),
            SlurpFile("/proc/self/oom_score_adj"));
  // Each leads its own session: a signal to the container's group spares the monitor.
  EXPECT_EQ(getsid(monitor), monitor);
  EXPECT_EQ(getsid(*pid), *pid);
  executor_->Stop("container_24", 0);
  std::optional<ContainerExit> exit = ReapUntilExit("container_24");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_EQ(SlurpFile(spec.state_dir + "/exit_code"), "signal 9\n");
}

// Adoption: the monitor is spawned here directly (as an earlier NM did) and handed over.
class AdoptionTest : public ContainerExecutorTest {
 protected:
  void TearDown() override {
    // The monitors are this process's children: reap them (killed first, should a test have
    // failed half-way).
    for (auto [monitor, pid] : spawned_) {
      (void)kill(-pid, SIGKILL);
      (void)kill(monitor, SIGKILL);
      (void)OsEnv::Default()->Wait(monitor);
    }
    ContainerExecutorTest::TearDown();
  }

  // Starts `command` under a monitor, in cgroups when there are some, and returns its spec.
  AdoptSpec SpawnElsewhere(const std::string& id, const std::string& command) {
    AdoptSpec adopt;
    adopt.container_id = id;
    adopt.work_dir = absl::StrCat(base_, "/work/", id);
    adopt.state_dir = absl::StrCat(base_, "/state/", id);
    std::filesystem::create_directories(adopt.work_dir);
    std::filesystem::create_directories(adopt.state_dir);
    std::filesystem::create_directories(absl::StrCat(base_, "/logs/", id));
    SpawnOptions options;
    options.argv = {"/bin/sh", "-c", command};
    options.env = {absl::StrCat("PATH=", kDefaultContainerPath)};
    options.work_dir = adopt.work_dir;
    options.stdout_path = absl::StrCat(base_, "/logs/", id, "/stdout");
    options.stderr_path = absl::StrCat(base_, "/logs/", id, "/stderr");
    if (cgroups_ != nullptr) {
      EXPECT_TRUE(cgroups_->Create(id, CgroupLimits()).ok());
    }
    absl::StatusOr<MonitoredProcess> started =
        OsEnv::Default()->SpawnMonitored(options, adopt.state_dir, [&](pid_t monitor) {
          return cgroups_ != nullptr ? cgroups_->AddProcess(id, monitor) : absl::OkStatus();
        });
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return adopt;
    spawned_.emplace_back(started->monitor_pid, started->pid);
    adopt.pid = started->pid;
    adopt.monitor_pid = started->monitor_pid;
    adopt.monitor_start_time = StartTime(started->monitor_pid);
    adopt.start_time = StartTime(started->pid);
    return adopt;
  }

  std::vector<std::pair<pid_t, pid_t>> spawned_;  // (monitor, container)
};

TEST_F(AdoptionTest, AdoptedContainerEndsWithTheStatusItsMonitorRecorded) {
  AdoptSpec adopt =
      SpawnElsewhere("container_30", "while [ ! -e go ]; do sleep 0.01; done; exit 3");
  ASSERT_GT(adopt.pid, 0);
  ASSERT_TRUE(executor_->Adopt(adopt).ok());
  EXPECT_EQ(executor_->Adopt(adopt).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(executor_->IsRunning("container_30"));
  EXPECT_THAT(executor_->Reap(), IsEmpty());
  std::ofstream(adopt.work_dir + "/go").close();
  std::optional<ContainerExit> exit = ReapUntilExit("container_30");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->status_lost);
  // Its monitor is a zombie of this process, not reaped by the executor: it did not wait.
  ASSERT_TRUE(executor_->Cleanup("container_30").ok());
}

TEST_F(AdoptionTest, AdoptedContainerCanBeStopped) {
  AdoptSpec adopt = SpawnElsewhere("container_31", "exec sleep 100");
  ASSERT_GT(adopt.pid, 0);
  ASSERT_TRUE(executor_->Adopt(adopt).ok());
  executor_->Stop("container_31", 0);
  std::optional<ContainerExit> exit = ReapUntilExit("container_31");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_EQ(exit->diagnostics, "Container stopped: killed by SIGKILL (exit code 137)");
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(adopt.pid); }, kPollTimeout));
}

TEST_F(AdoptionTest, AContainerWhoseMonitorVanishedIsLostAndKilled) {
  AdoptSpec adopt = SpawnElsewhere("container_32", "exec sleep 100");
  ASSERT_GT(adopt.pid, 0);
  ASSERT_TRUE(executor_->Adopt(adopt).ok());
  ASSERT_EQ(kill(adopt.monitor_pid, SIGKILL), 0);  // it can record nothing
  std::optional<ContainerExit> exit = ReapUntilExit("container_32");
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->status_lost);
  EXPECT_EQ(exit->exit_code, -1);
  EXPECT_THAT(exit->diagnostics,
              HasSubstr(absl::StrCat("Container exit status unknown: its monitor (pid ",
                                     adopt.monitor_pid, ") ended without recording it")));
  EXPECT_TRUE(PollUntil([&] { return ProcessGone(adopt.pid); }, kPollTimeout))
      << "the container outlived its lost monitor";
}

TEST_F(AdoptionTest, AReusedMonitorPidIsNotMistakenForTheMonitor) {
  AdoptSpec adopt = SpawnElsewhere("container_33", "exec sleep 100");
  ASSERT_GT(adopt.pid, 0);
  adopt.monitor_start_time += 1;  // as if the pid now named a later process
  ASSERT_TRUE(executor_->Adopt(adopt).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_33");
  ASSERT_TRUE(exit.has_value());
  EXPECT_TRUE(exit->status_lost);
  EXPECT_THAT(exit->diagnostics, HasSubstr("its pid now names another process"));
  if (cgroups_ == nullptr) {
    // Without cgroups only the (verified) process group is killed: here, the real one.
    EXPECT_TRUE(PollUntil([&] { return ProcessGone(adopt.pid); }, kPollTimeout));
  }
  (void)kill(adopt.monitor_pid, SIGKILL);
  (void)kill(-adopt.pid, SIGKILL);
}

// ---- Container limits (pids, disk, logs) and leftovers without cgroups.

// Sets $WEFT_CONTAINER_MONITOR for one scope: "fork" forks the monitor from this process, a
// path starts that program.
class ScopedMonitor {
 public:
  explicit ScopedMonitor(const char* monitor) { setenv("WEFT_CONTAINER_MONITOR", monitor, 1); }
  ~ScopedMonitor() { unsetenv("WEFT_CONTAINER_MONITOR"); }
};

TEST_F(ContainerExecutorTest, LogLimitKeepsAtMostTheLimitOfAHugeOutputOnDisk) {
  constexpr int64_t kLimit = 1 << 20;
  int n = 0;
  for (const char* monitor : {"fork", WEFT_CONTAINER_MONITOR_PATH}) {
    SCOPED_TRACE(monitor);
    ScopedMonitor scoped(monitor);
    const std::string id = absl::StrCat("container_log_", n++);
    // 20 MB of stdout, then a last line that must survive; a little stderr, under the limit.
    LaunchSpec spec = Spec(id, {"/bin/sh", "-c",
                                "head -c 20971520 /dev/zero | tr '\\0' x; echo; echo last-line; "
                                "echo err >&2"});
    spec.state_dir = absl::StrCat(base_, "/state/", id);
    spec.log_limit_bytes = kLimit;
    ASSERT_TRUE(executor_->Launch(spec).ok());
    std::optional<ContainerExit> exit = ReapUntilExit(id, 60000);
    ASSERT_TRUE(exit.has_value());
    EXPECT_EQ(exit->exit_code, 0);
    struct stat st;
    ASSERT_EQ(stat((spec.log_dir + "/stdout").c_str(), &st), 0);
    EXPECT_LE(st.st_size, kLimit);
    EXPECT_LE(static_cast<int64_t>(st.st_blocks) * 512, kLimit + 64 * 1024) << "allocated";
    const std::string out = SlurpFile(spec.log_dir + "/stdout");
    EXPECT_TRUE(absl::StartsWith(out, "[weft: ")) << out.substr(0, 200);
    EXPECT_THAT(out.substr(0, 200), HasSubstr("earlier bytes of this log were dropped: over the "
                                              "1048576-byte container log limit]\n"));
    EXPECT_TRUE(absl::EndsWith(out, "xxx\nlast-line\n")) << "the newest output is kept";
    EXPECT_EQ(SlurpFile(spec.log_dir + "/stderr"), "err\n");
    EXPECT_THAT(exit->diagnostics, HasSubstr("stdout truncated: its oldest 19"));
    EXPECT_THAT(exit->diagnostics,
                HasSubstr("MB dropped, over the log limit of 1 MB (--container-log-limit-mb)"));
    EXPECT_THAT(exit->diagnostics, Not(HasSubstr("stderr")));
  }
}

// Issue 26: `unshare -Ur` worked inside containers. By default a seccomp filter refuses user
// namespaces (as root too), with every way of starting the program; allowed, they work.
TEST_F(ContainerExecutorTest, UserNamespacesAreRefusedUnlessAllowed) {
  if (!spawn_internal::kUserNamespaceFilterSupported) GTEST_SKIP() << "no filter on this arch";
  if (access("/usr/bin/unshare", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/unshare (util-linux)";
  // unshare(1) itself, and a clone(CLONE_NEWUSER) through python3 where it is installed.
  const std::string command =
      "unshare -U true && echo unshare-ok; "
      "python3 -c 'import os; os.unshare(os.CLONE_NEWUSER); print(\"python-ok\")' "
      "2>/dev/null || true";
  int n = 0;
  for (const char* monitor : {"plain", "fork", WEFT_CONTAINER_MONITOR_PATH}) {
    for (const bool deny : {true, false}) {
      SCOPED_TRACE(absl::StrCat(monitor, deny ? " deny" : " allow"));
      const std::string id = absl::StrCat("container_userns_", n++);
      LaunchSpec spec = Spec(id, {"/bin/sh", "-c", command});
      std::optional<ScopedMonitor> scoped;
      if (std::string(monitor) != "plain") {
        scoped.emplace(monitor);
        spec.state_dir = absl::StrCat(base_, "/state/", id);
      }
      spec.deny_user_namespaces = deny;
      ASSERT_TRUE(executor_->Launch(spec).ok());
      std::optional<ContainerExit> exit = ReapUntilExit(id);
      ASSERT_TRUE(exit.has_value());
      const std::string out = SlurpFile(spec.log_dir + "/stdout");
      if (deny) {
        EXPECT_THAT(out, Not(HasSubstr("unshare-ok")));
        EXPECT_THAT(out, Not(HasSubstr("python-ok")));
        EXPECT_THAT(SlurpFile(spec.log_dir + "/stderr"), HasSubstr("Operation not permitted"));
      } else {
        EXPECT_THAT(out, HasSubstr("unshare-ok"));
      }
    }
  }
}

TEST_F(ContainerExecutorTest, DiskLimitKillsAContainerThatWritesPastIt) {
  LaunchSpec spec = Spec("container_disk", {"/bin/sh", "-c",
                                            "head -c 8388608 /dev/zero > big; exec sleep 100"});
  spec.state_dir = absl::StrCat(base_, "/state/container_disk");
  spec.disk_limit_bytes = 2 << 20;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_disk", 30000);
  ASSERT_TRUE(exit.has_value()) << "not killed";
  EXPECT_TRUE(exit->disk_limit_exceeded);
  EXPECT_EQ(exit->exit_code, 128 + SIGKILL);
  EXPECT_THAT(exit->diagnostics, HasSubstr("Container killed: its work dir used 8"));
  EXPECT_THAT(exit->diagnostics,
              HasSubstr("over the disk limit of 2 MB (--container-disk-limit-mb) (exit code 137)"));

  // Under the limit: runs to its end.
  LaunchSpec small = Spec("container_disk_ok", {"/bin/sh", "-c", "head -c 4096 /dev/zero > f"});
  small.state_dir = absl::StrCat(base_, "/state/container_disk_ok");
  small.disk_limit_bytes = 2 << 20;
  ASSERT_TRUE(executor_->Launch(small).ok());
  exit = ReapUntilExit("container_disk_ok");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(exit->diagnostics, "");
}

TEST_F(ContainerExecutorTest, ForkBombStopsAtItsPidsLimitAndTheNodeGoesOn) {
  if (cgroups_ == nullptr) GTEST_SKIP() << "no usable cgroups: " << cgroups_error_;
  if (!cgroups_->HasController("pids")) {
    GTEST_SKIP() << "no pids controller: " << absl::StrJoin(cgroups_->missing_features(), "; ");
  }
  constexpr int64_t kPidsMax = 40;
  LaunchSpec spec =
      Spec("container_bomb", {"/bin/bash", "-c", "bomb() { bomb | bomb & }; bomb; exec sleep 1000"});
  spec.state_dir = absl::StrCat(base_, "/state/container_bomb");
  spec.limits.pids_max = kPidsMax;
  ASSERT_TRUE(executor_->Launch(spec).ok());
  const std::string group = cgroups_->Path("pids", "container_bomb");
  EXPECT_EQ(SlurpFile(group + "/pids.max"), absl::StrCat(kPidsMax, "\n"));
  ASSERT_TRUE(PollUntil([&] { return cgroups_->PidsLimitHits("container_bomb").value_or(0) > 0; },
                        absl::Seconds(20)))
      << "the bomb never reached its limit";
  int64_t current = 0;
  ASSERT_TRUE(
      absl::SimpleAtoi(absl::StripAsciiWhitespace(SlurpFile(group + "/pids.current")), &current));
  EXPECT_LE(current, kPidsMax);

  // The node can still start work beside it.
  LaunchSpec other = Spec("container_after_bomb", {"/bin/sh", "-c", "echo fine"});
  other.state_dir = absl::StrCat(base_, "/state/container_after_bomb");
  ASSERT_TRUE(executor_->Launch(other).ok());
  std::optional<ContainerExit> exit = ReapUntilExit("container_after_bomb");
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_EQ(SlurpFile(other.log_dir + "/stdout"), "fine\n");

  executor_->Stop("container_bomb", 0);
  exit = ReapUntilExit("container_bomb", 20000);
  ASSERT_TRUE(exit.has_value()) << "the bomb was not stopped";
  EXPECT_THAT(exit->diagnostics, HasSubstr(absl::StrCat("pids limit of ", kPidsMax, " reached: ")));
  EXPECT_FALSE(std::filesystem::exists(group)) << "its cgroup is gone, and every task with it";
}

// A free TCP port on 127.0.0.1 (bound and released).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

// Whether a listening socket can be bound to 127.0.0.1:`port` now.
bool CanListenOn(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 && listen(fd, 1) == 0;
  close(fd);
  return ok;
}

// Without cgroups, the monitor is what finds a container's processes: those that left its
// process group (setsid), were orphaned (double fork) or ignore SIGTERM all end with it.
TEST_F(ContainerExecutorTest, WithoutCgroupsStopLeavesNoProcessAndFreesItsPort) {
  if (access("/usr/bin/perl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/perl for the listener";
  ScopedMonitor scoped(WEFT_CONTAINER_MONITOR_PATH);
  ContainerExecutor executor(nullptr);
  const int port = FreePort();
  ASSERT_GT(port, 0);
  const std::string listener = absl::StrCat(
      "setsid /usr/bin/perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "
      "\"127.0.0.1\", LocalPort => ",
      port,
      ", Listen => 5, ReuseAddr => 1) or die; open(F, \">listening\"); close(F); sleep 1000' & "
      "echo $! > listener.pid; ");
  LaunchSpec spec = Spec(
      "container_nocg",
      {"/bin/sh", "-c",
       absl::StrCat("setsid sleep 1000 & echo $! > setsid.pid; "
                    "sh -c 'sleep 1000 & echo $! > double.pid'; "
                    "sh -c \"trap '' TERM; exec sleep 1000\" & echo $! > ignoring.pid; ",
                    listener, "trap '' TERM; echo started > started; wait")});
  spec.state_dir = absl::StrCat(base_, "/state/container_nocg");
  ASSERT_TRUE(executor.Launch(spec).ok());
  std::vector<pid_t> pids;
  for (const char* file : {"setsid.pid", "double.pid", "ignoring.pid", "listener.pid"}) {
    pids.push_back(ReadPidFile(spec.work_dir + "/" + file, kPollTimeout));
    ASSERT_GT(pids.back(), 0) << file;
  }
  ASSERT_TRUE(PollUntil([&] { return std::filesystem::exists(spec.work_dir + "/listening"); },
                        kPollTimeout))
      << SlurpFile(spec.log_dir + "/stderr");
  EXPECT_FALSE(CanListenOn(port)) << "the container listens on " << port;

  constexpr int64_t kGraceMs = 200;
  executor.Stop("container_nocg", kGraceMs);
  std::optional<ContainerExit> exit;
  PollUntil(
      [&] {
        for (ContainerExit& e : executor.Reap()) exit = std::move(e);
        return exit.has_value();
      },
      absl::Seconds(10));
  ASSERT_TRUE(exit.has_value()) << "not stopped";
  EXPECT_EQ(exit->diagnostics,
            "Container stopped: killed by SIGKILL after the 200 ms grace period (exit code 137)");
  // Reported only once every descendant was gone: none is left, not even as a zombie.
  for (pid_t pid : pids) {
    EXPECT_FALSE(std::filesystem::exists(absl::StrCat("/proc/", pid))) << pid << " survived";
  }
  EXPECT_TRUE(CanListenOn(port)) << "port " << port << " is still taken";

  // A container whose main process ends on its own takes its daemons with it too.
  LaunchSpec done = Spec("container_nocg_done",
                         {"/bin/sh", "-c",
                          "setsid sleep 1000 & echo $! > setsid.pid; "
                          "sh -c 'sleep 1000 & echo $! > double.pid'; exit 0"});
  done.state_dir = absl::StrCat(base_, "/state/container_nocg_done");
  ASSERT_TRUE(executor.Launch(done).ok());
  exit.reset();
  PollUntil(
      [&] {
        for (ContainerExit& e : executor.Reap()) exit = std::move(e);
        return exit.has_value();
      },
      absl::Seconds(10));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  for (const char* file : {"setsid.pid", "double.pid"}) {
    pid_t pid = ReadPidFile(done.work_dir + "/" + file, kPollTimeout);
    ASSERT_GT(pid, 0) << file;
    EXPECT_FALSE(std::filesystem::exists(absl::StrCat("/proc/", pid))) << file << " survived";
  }
}

}  // namespace
}  // namespace weft::nm
