// Copyright Weft authors. Tests of cgroup detection and the v1/v2 handlers: against prepared
// directory trees (any user), and against the machine's real cgroups (root only).
#include "nm/cgroups.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/os_env.h"

namespace weft::nm {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// The content of `path`, "" when it cannot be read.
std::string Slurp(const std::string& path) { return ReadFile(path).value_or(""); }

void Put(const std::string& path, absl::string_view text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// The real file system under a prepared tree, made to behave like cgroupfs where it matters:
// mountinfo is whatever the test says, rmdir ignores the control files in a group, signals
// are recorded instead of sent, and time is fake so that retry loops finish at once.
class FakeTreeEnv : public OsEnv {
 public:
  std::string mountinfo;
  std::vector<std::pair<pid_t, int>> kills;
  std::vector<std::pair<std::string, std::string>> writes;  // (path, contents), in order

  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    if (path == "/proc/self/mountinfo") return mountinfo;
    return real_->ReadFile(path);
  }
  absl::Status WriteFile(const std::string& path, absl::string_view contents) override {
    absl::Status s = real_->WriteFile(path, contents);
    writes.emplace_back(path, std::string(contents));
    if (s.ok() && absl::EndsWith(path, "/cgroup.kill")) {  // the kernel empties the group
      Put(std::filesystem::path(path).parent_path() / "cgroup.procs", "");
    }
    return s;
  }
  bool PathExists(const std::string& path) override { return real_->PathExists(path); }
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    return real_->ListDir(path);
  }
  absl::Status CreateDir(const std::string& path) override { return real_->CreateDir(path); }
  absl::Status CreateDirs(const std::string& path) override { return real_->CreateDirs(path); }
  absl::Status RemoveDir(const std::string& path) override {
    std::string procs = Slurp(path + "/cgroup.procs");
    if (!absl::StripAsciiWhitespace(procs).empty()) {
      return absl::UnavailableError(absl::StrCat("rmdir '", path, "': Device or resource busy"));
    }
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      if (entry.is_regular_file()) std::filesystem::remove(entry.path(), ec);
    }
    return real_->RemoveDir(path);
  }
  absl::Status RemoveTree(const std::string& path) override { return real_->RemoveTree(path); }
  absl::StatusOr<pid_t> Spawn(const SpawnOptions&,
                              absl::FunctionRef<absl::Status(pid_t)>) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<std::optional<ProcessStatus>> TryWait(pid_t) override {
    return absl::UnimplementedError("fake");
  }
  absl::StatusOr<ProcessStatus> Wait(pid_t) override { return absl::UnimplementedError("fake"); }
  absl::Status Kill(pid_t pid, int signal) override {
    kills.emplace_back(pid, signal);
    return absl::OkStatus();
  }
  int64_t NowMs() override { return now_ms_; }
  void SleepMs(int64_t ms) override { now_ms_ += ms; }

 private:
  OsEnv* const real_ = OsEnv::Default();
  int64_t now_ms_ = 0;
};

class FakeTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = absl::StrCat(::testing::TempDir(), "weft_cgroups_", getpid(), "_", info->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  // A v1 controller directory as the kernel shows it (the files detection looks at).
  void MakeV1Controller(const std::string& name) {
    Put(absl::StrCat(root_, "/", name, "/cgroup.procs"), "");
    Put(absl::StrCat(root_, "/", name, "/tasks"), "");
  }
  std::string MountLine(int id, const std::string& dir, const std::string& fstype,
                        const std::string& options) {
    return absl::StrCat(id, " 30 0:", id, " / ", root_, dir, " rw,relatime shared:9 - ", fstype,
                        " ", fstype, " ", options, "\n");
  }

  std::string root_;
  FakeTreeEnv env_;
};

TEST(CgroupMountsTest, ParsesCgroupMountsOnly) {
  std::vector<internal::CgroupMount> mounts = internal::ParseCgroupMounts(
      "22 1 0:21 / /proc rw,nosuid - proc proc rw\n"
      "31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup "
      "rw,cpu,cpuacct\n"
      "39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup "
      "rw,xattr,name=systemd\n"
      "40 30 0:37 / /sys/fs/cgroup/my\\040space rw - cgroup cgroup rw,memory\n"
      "41 22 0:38 / /sys/fs/cgroup rw,nosuid master:1 - cgroup2 cgroup2 rw,nsdelegate\n"
      "garbage line\n");
  ASSERT_EQ(mounts.size(), 4u);
  EXPECT_EQ(mounts[0].mount_point, "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_FALSE(mounts[0].v2);
  EXPECT_THAT(mounts[0].controllers, ElementsAre("cpu", "cpuacct"));
  EXPECT_THAT(mounts[1].controllers, ElementsAre("xattr"));  // name=systemd is no controller
  EXPECT_EQ(mounts[2].mount_point, "/sys/fs/cgroup/my space");
  EXPECT_THAT(mounts[2].controllers, ElementsAre("memory"));
  EXPECT_TRUE(mounts[3].v2);
  EXPECT_EQ(mounts[3].mount_point, "/sys/fs/cgroup");
}

TEST(CgroupMountsTest, CpuSharesToWeight) {
  EXPECT_EQ(internal::CpuSharesToWeight(2), 1);
  EXPECT_EQ(internal::CpuSharesToWeight(kCpuSharesPerVcore), 39);
  EXPECT_EQ(internal::CpuSharesToWeight(2 * kCpuSharesPerVcore), 79);
  EXPECT_EQ(internal::CpuSharesToWeight(262144), 10000);
  EXPECT_EQ(internal::CpuSharesToWeight(1 << 30), 10000);
}

TEST_F(FakeTreeTest, NoCgroupFilesystemIsAnError) {
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_FALSE(handler.ok());
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(handler.status().message(), HasSubstr("no cgroup filesystem at " + root_));
}

TEST_F(FakeTreeTest, RejectsBadHierarchyAndRoot) {
  MakeV1Controller("memory");
  EXPECT_EQ(DetectCgroups(root_, "../escape", &env_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DetectCgroups(root_, "", &env_).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DetectCgroups("relative", "weft", &env_).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(FakeTreeTest, V1FromMountinfoReportsMissingControllers) {
  MakeV1Controller("cpu,cpuacct");
  MakeV1Controller("memory");
  MakeV1Controller("blkio");
  Put(root_ + "/unified/cgroup.controllers", "");  // hybrid: an empty cgroup2 beside v1
  env_.mountinfo = MountLine(31, "/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct") +
                   MountLine(32, "/memory", "cgroup", "rw,memory") +
                   MountLine(33, "/blkio", "cgroup", "rw,blkio") +
                   MountLine(34, "/unified", "cgroup2", "rw");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  EXPECT_EQ(h.version(), "v1");
  EXPECT_THAT(h.controllers(), ElementsAre("cpu", "cpuacct", "memory", "blkio"));
  EXPECT_THAT(h.missing_features(),
              ElementsAre("cgroup v1 controller net_cls not mounted under " + root_,
                          "cgroup v1 controller pids not mounted under " + root_));
  EXPECT_TRUE(h.HasController("memory"));
  EXPECT_FALSE(h.HasController("net_cls"));
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/memory/weft"));
  EXPECT_EQ(h.Path("cpuacct", "c1"), root_ + "/cpu,cpuacct/weft/c1");
  EXPECT_EQ(h.Path("net_cls", "c1"), "");
}

// Device isolation (issue 32) on v1: the devices controller is managed only once enabled, and
// a container's group gets one devices.deny line per denied device.
TEST_F(FakeTreeTest, V1DeviceControlWritesDevicesDeny) {
  MakeV1Controller("cpu");
  MakeV1Controller("memory");
  MakeV1Controller("devices");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  EXPECT_THAT(h.controllers(), ElementsAre("cpu", "memory"));
  CgroupLimits limits;
  limits.denied_devices = {{1, 7}, {1, 8}};
  absl::Status refused = h.Create("c0", limits);
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("device isolation is not enabled"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/memory/weft/c0"));  // undone

  ASSERT_TRUE(h.EnableDeviceControl().ok());
  ASSERT_TRUE(h.EnableDeviceControl().ok());  // idempotent
  EXPECT_THAT(h.controllers(), ElementsAre("cpu", "memory", "devices"));
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/devices/weft"));
  env_.writes.clear();
  ASSERT_TRUE(h.Create("c1", limits).ok());
  std::vector<std::string> deny;
  for (const auto& [path, contents] : env_.writes) {
    if (path == root_ + "/devices/weft/c1/devices.deny") deny.push_back(contents);
  }
  EXPECT_THAT(deny, ElementsAre("c 1:7 rwm", "c 1:8 rwm"));
  ASSERT_TRUE(h.AddProcess("c1", 4242).ok());
  EXPECT_EQ(Slurp(root_ + "/devices/weft/c1/cgroup.procs"), "4242");
  EXPECT_THAT(h.ListContainers().value_or(std::vector<std::string>{}), ElementsAre("c1"));
  // A container without denied devices still gets a devices group (its processes are in the
  // hierarchy), and no rule.
  env_.writes.clear();
  ASSERT_TRUE(h.Create("c2", CgroupLimits{}).ok());
  EXPECT_TRUE(std::filesystem::is_directory(root_ + "/devices/weft/c2"));
  for (const auto& [path, contents] : env_.writes) EXPECT_THAT(path, Not(HasSubstr("devices.deny")));
}

TEST_F(FakeTreeTest, V1DeviceControlNeedsTheDevicesController) {
  MakeV1Controller("cpu");
  MakeV1Controller("memory");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  absl::Status s = (*handler)->EnableDeviceControl();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("devices controller is not mounted"));
}

TEST_F(FakeTreeTest, V1FromDirectoryTreeWhenMountinfoHasNothing) {
  MakeV1Controller("cpu");
  MakeV1Controller("cpuacct");
  MakeV1Controller("memory");
  MakeV1Controller("net_cls,net_prio");
  MakeV1Controller("pids");
  std::filesystem::create_directories(root_ + "/not_a_controller");
  env_.mountinfo = "22 1 0:21 / /proc rw,nosuid - proc proc rw\n";
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "a/b", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  EXPECT_EQ((*handler)->version(), "v1");
  EXPECT_THAT((*handler)->controllers(),
              ElementsAre("cpu", "cpuacct", "memory", "net_cls", "pids"));
  EXPECT_THAT((*handler)->missing_features(),
              ElementsAre("cgroup v1 controller blkio not mounted under " + root_));
  EXPECT_EQ((*handler)->Path("net_cls", "c1"), root_ + "/net_cls,net_prio/a/b/c1");
}

TEST_F(FakeTreeTest, V1UnusableControllerIsReported) {
  MakeV1Controller("cpu");
  MakeV1Controller("memory");
  Put(root_ + "/memory/weft", "a file where the parent group should go");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  EXPECT_THAT((*handler)->controllers(), ElementsAre("cpu"));
  EXPECT_THAT((*handler)->missing_features(),
              Contains(HasSubstr("cgroup v1 controller memory unusable: mkdir -p '" + root_ +
                                 "/memory/weft'")));
}

TEST_F(FakeTreeTest, NeitherCpuNorMemoryIsAnError) {
  MakeV1Controller("blkio");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_FALSE(handler.ok());
  EXPECT_EQ(handler.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(handler.status().message(), HasSubstr("no usable cgroup controller"));
  EXPECT_THAT(handler.status().message(), HasSubstr("controller memory not mounted"));
}

TEST_F(FakeTreeTest, V1CreateLimitsUsageOomAndDestroy) {
  for (const char* name : {"cpu", "cpuacct", "memory"}) MakeV1Controller(name);
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  const std::string memory = root_ + "/memory/weft/c1";
  const std::string cpu = root_ + "/cpu/weft/c1";
  const std::string cpuacct = root_ + "/cpuacct/weft/c1";
  // The kernel creates this file in every new memory group when swap accounting is on.
  Put(memory + "/memory.memsw.limit_in_bytes", "9223372036854771712");

  ASSERT_TRUE(h.Create("c1", {.memory_bytes = 64 << 20,
                              .cpu_weight = 2 * kCpuSharesPerVcore,
                              .cpu_quota_us = 50000})
                  .ok());
  EXPECT_EQ(Slurp(memory + "/memory.limit_in_bytes"), "67108864");
  EXPECT_EQ(Slurp(memory + "/memory.memsw.limit_in_bytes"), "67108864");
  EXPECT_EQ(Slurp(cpu + "/cpu.shares"), "2048");
  EXPECT_EQ(Slurp(cpu + "/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(Slurp(cpu + "/cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(h.Path("memory", "c1"), memory);

  ASSERT_TRUE(h.AddProcess("c1", 4242).ok());
  for (const std::string& dir : {memory, cpu, cpuacct}) {
    EXPECT_EQ(Slurp(dir + "/cgroup.procs"), "4242") << dir;
  }

  Put(memory + "/memory.usage_in_bytes", "1000\n");
  Put(memory + "/memory.stat", "cache 10\nrss 400\ntotal_cache 10\ntotal_rss 500\n");
  Put(cpuacct + "/cpuacct.usage", "123456789\n");
  absl::StatusOr<CgroupUsage> usage = h.Usage("c1");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->memory_bytes, 1000);
  EXPECT_EQ(usage->rss_bytes, 500);
  EXPECT_EQ(usage->cpu_ns, 123456789);
  EXPECT_EQ(usage->peak_memory_bytes, std::nullopt) << "no memory.max_usage_in_bytes yet";
  Put(memory + "/memory.max_usage_in_bytes", "4096000\n");
  usage = h.Usage("c1");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->peak_memory_bytes, 4096000);

  Put(memory + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
  EXPECT_EQ(h.OomKilled("c1").value_or(true), false);
  Put(memory + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
  EXPECT_EQ(h.OomKilled("c1").value_or(false), true);

  // A task that does not go away: Destroy kills it, retries, and gives up at its deadline.
  absl::Status stuck = h.Destroy("c1");
  EXPECT_EQ(stuck.code(), absl::StatusCode::kDeadlineExceeded) << stuck;
  EXPECT_THAT(stuck.message(), HasSubstr("tasks [4242] remain"));
  EXPECT_THAT(env_.kills, Contains(std::make_pair(4242, SIGKILL)));
  for (const std::string& dir : {memory, cpu, cpuacct}) Put(dir + "/cgroup.procs", "");

  ASSERT_TRUE(h.Destroy("c1").ok());
  for (const std::string& dir : {memory, cpu, cpuacct}) {
    EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
  }
  EXPECT_TRUE(h.Destroy("c1").ok()) << "Destroy is idempotent";
  EXPECT_EQ(h.Usage("c1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(h.OomKilled("c1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(h.RemoveHierarchy().ok());
  EXPECT_FALSE(std::filesystem::exists(root_ + "/memory/weft"));
}

// A v1 memory group's rules for writes: memory.limit_in_bytes <= memory.memsw.limit_in_bytes
// (EINVAL otherwise), and a memory limit below `usage` cannot be reclaimed down to (EBUSY).
class MemoryRulesEnv : public FakeTreeEnv {
 public:
  int64_t usage = 0;
  std::vector<std::string> writes;  // "<file name>=<value>", in order

  absl::Status WriteFile(const std::string& path, absl::string_view contents) override {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    const std::string name = std::filesystem::path(path).filename().string();
    int64_t value = 0;
    if ((name == "memory.limit_in_bytes" || name == "memory.memsw.limit_in_bytes") &&
        absl::SimpleAtoi(contents, &value)) {
      int64_t memory = 0, memsw = 0;
      const bool has_memory = absl::SimpleAtoi(
          absl::StripAsciiWhitespace(Slurp(dir + "/memory.limit_in_bytes")), &memory);
      const bool has_memsw = absl::SimpleAtoi(
          absl::StripAsciiWhitespace(Slurp(dir + "/memory.memsw.limit_in_bytes")), &memsw);
      if (name == "memory.limit_in_bytes" && has_memsw && value > memsw) {
        return absl::InvalidArgumentError("write: Invalid argument");
      }
      if (name == "memory.memsw.limit_in_bytes" && has_memory && value < memory) {
        return absl::InvalidArgumentError("write: Invalid argument");
      }
      if (name == "memory.limit_in_bytes" && value < usage) {
        return absl::UnavailableError("write: Device or resource busy");
      }
    }
    writes.push_back(absl::StrCat(name, "=", contents));
    return FakeTreeEnv::WriteFile(path, contents);
  }
};

TEST_F(FakeTreeTest, V1UpdateLimitsRaisesAndLowersMemoryInTheOrderTheKernelAccepts) {
  for (const char* name : {"cpu", "cpuacct", "memory", "pids"}) MakeV1Controller(name);
  MemoryRulesEnv env;
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  const std::string memory = root_ + "/memory/weft/c1";
  const std::string cpu = root_ + "/cpu/weft/c1";
  const std::string pids = root_ + "/pids/weft/c1";
  EXPECT_EQ(h.UpdateLimits("c1", {.memory_bytes = 1}).code(), absl::StatusCode::kNotFound);
  Put(memory + "/memory.memsw.limit_in_bytes", "9223372036854771712");
  ASSERT_TRUE(
      h.Create("c1", {.memory_bytes = 64 << 20, .cpu_weight = kCpuSharesPerVcore, .pids_max = 512})
          .ok());
  Put(memory + "/memory.usage_in_bytes", absl::StrCat(40 << 20));
  env.usage = 40 << 20;

  // Up: memory+swap first.
  env.writes.clear();
  ASSERT_TRUE(h.UpdateLimits("c1", {.memory_bytes = 256 << 20,
                                    .cpu_weight = 2 * kCpuSharesPerVcore,
                                    .net_cls_classid = 0x10010,
                                    .pids_max = 1024})
                  .ok());
  EXPECT_THAT(env.writes,
              ElementsAre("memory.memsw.limit_in_bytes=268435456",
                          "memory.limit_in_bytes=268435456", "pids.max=1024", "cpu.shares=2048"))
      << "memory first (the one write the kernel may refuse), and no net_cls.classid";
  EXPECT_EQ(Slurp(memory + "/memory.limit_in_bytes"), "268435456");
  EXPECT_EQ(Slurp(memory + "/memory.memsw.limit_in_bytes"), "268435456");
  EXPECT_EQ(Slurp(cpu + "/cpu.shares"), "2048");
  EXPECT_EQ(Slurp(pids + "/pids.max"), "1024");

  // Down: memory first.
  env.writes.clear();
  ASSERT_TRUE(h.UpdateLimits("c1", {.memory_bytes = 48 << 20}).ok());
  EXPECT_THAT(env.writes, ElementsAre("memory.limit_in_bytes=50331648",
                                      "memory.memsw.limit_in_bytes=50331648"));
  EXPECT_EQ(Slurp(cpu + "/cpu.shares"), "2048") << "a zero limit is left as it is";

  // Below the usage: refused, nothing changed.
  env.writes.clear();
  absl::Status busy = h.UpdateLimits("c1", {.memory_bytes = 16 << 20, .cpu_weight = 1024});
  EXPECT_EQ(busy.code(), absl::StatusCode::kResourceExhausted) << busy;
  EXPECT_THAT(busy.message(), HasSubstr("memory limit 16777216 bytes is below the 41943040 "
                                        "bytes the container uses"));
  EXPECT_THAT(busy.message(), HasSubstr("the limit stays 50331648 bytes"));
  EXPECT_THAT(env.writes, IsEmpty());
  EXPECT_EQ(Slurp(memory + "/memory.limit_in_bytes"), "50331648");
  EXPECT_EQ(Slurp(cpu + "/cpu.shares"), "2048");

  EXPECT_EQ(h.UpdateLimits("c1", {.memory_bytes = -1}).code(), absl::StatusCode::kInvalidArgument);
  for (const std::string& dir : {memory, cpu, pids, root_ + "/cpuacct/weft/c1"}) {
    Put(dir + "/cgroup.procs", "");
  }
  ASSERT_TRUE(h.Destroy("c1").ok());
}

TEST_F(FakeTreeTest, V1PidsLimitAndItsRefusedForks) {
  for (const char* name : {"cpu", "memory", "pids"}) MakeV1Controller(name);
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  const std::string pids = root_ + "/pids/weft/c1";
  ASSERT_TRUE(h.Create("c1", {.memory_bytes = 64 << 20, .pids_max = 512}).ok());
  EXPECT_EQ(Slurp(pids + "/pids.max"), "512");
  ASSERT_TRUE(h.AddProcess("c1", 4242).ok());
  EXPECT_EQ(Slurp(pids + "/cgroup.procs"), "4242");
  EXPECT_EQ(h.PidsLimitHits("c1").value_or(-1), 0) << "no pids.events yet: nothing refused";
  Put(pids + "/pids.events", "max 7\n");
  EXPECT_EQ(h.PidsLimitHits("c1").value_or(-1), 7);
  for (const char* name : {"cpu", "memory", "pids"})
    Put(absl::StrCat(root_, "/", name, "/weft/c1/cgroup.procs"), "");
  ASSERT_TRUE(h.Destroy("c1").ok());
  EXPECT_FALSE(std::filesystem::exists(pids));
  EXPECT_EQ(h.PidsLimitHits("c1").status().code(), absl::StatusCode::kNotFound);

  // Negative: refused like the other limits.
  absl::Status s = h.Create("c2", {.pids_max = -1});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("pids_max=-1"));
}

TEST_F(FakeTreeTest, MissingPidsControllerIsReportedAndItsLimitNotWritten) {
  for (const char* name : {"cpu", "memory"}) MakeV1Controller(name);
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  EXPECT_FALSE(h.HasController("pids"));
  EXPECT_THAT(h.missing_features(),
              Contains("cgroup v1 controller pids not mounted under " + root_));
  ASSERT_TRUE(h.Create("c1", {.pids_max = 512}).ok());
  EXPECT_EQ(h.PidsLimitHits("c1").value_or(-1), 0);
  ASSERT_TRUE(h.Destroy("c1").ok());
}

TEST_F(FakeTreeTest, CreateRejectsBadIdsAndNegativeLimits) {
  MakeV1Controller("memory");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  for (const char* id : {"", "../etc", "a/b", ".hidden", "sp ace"}) {
    absl::Status s = (*handler)->Create(id, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << id;
  }
  absl::Status s = (*handler)->Create("c1", {.memory_bytes = -1});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("creating cgroup of container c1: negative limit"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/memory/weft/c1"));
}

// Device isolation on v2 goes through a device program attached to the container's group: on
// a fake tree (not a cgroup2 directory) the attach fails, or, without root, the load, and the
// container's group is undone. The program itself is tested on the real kernel in
// devices/device_isolation_test.cc.
TEST_F(FakeTreeTest, V2DeviceControlAttachesAProgramToTheGroup) {
  Put(root_ + "/cgroup.controllers", "cpu memory\n");
  Put(root_ + "/cgroup.procs", "1\n");
  env_.mountinfo = MountLine(40, "", "cgroup2", "rw,nsdelegate");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  ASSERT_TRUE(h.EnableDeviceControl().ok());
  EXPECT_THAT(h.controllers(), ElementsAre("cpu", "cpuacct", "memory"));  // no controller added
  CgroupLimits limits;
  limits.denied_devices = {{1, 7}};
  absl::Status s = h.Create("c1", limits);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cgroup v2 device program for " + root_ + "/weft/c1"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/weft/c1"));
  EXPECT_TRUE(h.Create("c2", CgroupLimits{}).ok());  // nothing to deny: no program
}

TEST_F(FakeTreeTest, V2EnablesControllersAndReportsMissingOnes) {
  Put(root_ + "/cgroup.controllers", "cpuset cpu memory pids\n");
  Put(root_ + "/cgroup.procs", "1\n");
  env_.mountinfo = MountLine(40, "", "cgroup2", "rw,nsdelegate");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  CgroupsHandler& h = **handler;
  EXPECT_EQ(h.version(), "v2");
  EXPECT_THAT(h.controllers(), ElementsAre("cpu", "cpuacct", "memory", "pids"));
  EXPECT_THAT(h.missing_features(), ElementsAre("cgroup v2 controller io not available (not in " +
                                                    root_ + "/cgroup.controllers)",
                                                HasSubstr("cgroup v2 has no net_cls controller")));
  EXPECT_EQ(Slurp(root_ + "/cgroup.subtree_control"), "+cpu +memory +pids");
  EXPECT_EQ(Slurp(root_ + "/weft/cgroup.subtree_control"), "+cpu +memory +pids");
  EXPECT_EQ(h.Path("memory", "c1"), root_ + "/weft/c1");
  EXPECT_EQ(h.Path("blkio", "c1"), "");

  const std::string dir = root_ + "/weft/c1";
  Put(dir + "/memory.swap.max", "max");
  ASSERT_TRUE(h.Create("c1", {.memory_bytes = 64 << 20,
                              .cpu_weight = 2 * kCpuSharesPerVcore,
                              .cpu_quota_us = 50000,
                              .cpu_period_us = 200000,
                              .pids_max = 1024})
                  .ok());
  EXPECT_EQ(Slurp(dir + "/pids.max"), "1024");
  Put(dir + "/pids.events", "max 2\n");
  EXPECT_EQ(h.PidsLimitHits("c1").value_or(-1), 2);
  EXPECT_EQ(Slurp(dir + "/memory.max"), "67108864");
  EXPECT_EQ(Slurp(dir + "/memory.swap.max"), "0");
  EXPECT_EQ(Slurp(dir + "/cpu.weight"), "79");
  EXPECT_EQ(Slurp(dir + "/cpu.max"), "50000 200000");
  ASSERT_TRUE(h.AddProcess("c1", 77).ok());
  EXPECT_EQ(Slurp(dir + "/cgroup.procs"), "77");

  Put(dir + "/memory.current", "2000\n");
  Put(dir + "/memory.stat", "anon 700\nfile 100\n");
  Put(dir + "/cpu.stat", "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n");
  absl::StatusOr<CgroupUsage> usage = h.Usage("c1");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->memory_bytes, 2000);
  EXPECT_EQ(usage->rss_bytes, 700);
  EXPECT_EQ(usage->cpu_ns, 1500000);
  EXPECT_EQ(usage->peak_memory_bytes, std::nullopt) << "memory.peak is from kernel 5.19";
  Put(dir + "/memory.peak", "8192000\n");
  usage = h.Usage("c1");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_EQ(usage->peak_memory_bytes, 8192000);

  Put(dir + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n");
  EXPECT_EQ(h.OomKilled("c1").value_or(false), true);

  // cgroup.kill empties the group at once where the kernel has it: no pid is signalled.
  Put(dir + "/cgroup.kill", "");
  ASSERT_TRUE(h.Destroy("c1").ok());
  EXPECT_FALSE(std::filesystem::exists(dir));
  EXPECT_THAT(env_.kills, IsEmpty());
}

TEST_F(FakeTreeTest, V2FromDirectoryWithoutMountinfo) {
  Put(root_ + "/cgroup.controllers", "memory\n");
  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler = DetectCgroups(root_, "weft", &env_);
  ASSERT_TRUE(handler.ok()) << handler.status();
  EXPECT_EQ((*handler)->version(), "v2");
  EXPECT_THAT((*handler)->controllers(), ElementsAre("cpuacct", "memory"));
  EXPECT_THAT((*handler)->missing_features(),
              Contains(HasSubstr("cgroup v2 controller cpu not available")));
}

// ---- The machine's real cgroups.

bool IsRoot() { return geteuid() == 0; }

class RealCgroupsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!IsRoot()) GTEST_SKIP() << "needs root to create cgroups";
    hierarchy_ = absl::StrCat("weft_test_", getpid());
    absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler =
        DetectCgroups("/sys/fs/cgroup", hierarchy_);
    if (!handler.ok()) GTEST_SKIP() << "no usable cgroups: " << handler.status();
    handler_ = std::move(*handler);
    if (!handler_->HasController("memory")) {
      GTEST_SKIP() << "no memory controller: " << absl::StrJoin(handler_->missing_features(), "; ");
    }
  }
  void TearDown() override {
    if (handler_ != nullptr) {
      absl::Status removed = handler_->RemoveHierarchy();
      EXPECT_TRUE(removed.ok()) << removed;
    }
  }

  std::string hierarchy_;
  std::unique_ptr<CgroupsHandler> handler_;
};

TEST_F(RealCgroupsTest, DetectsThisMachine) {
  bool v2 = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
  EXPECT_EQ(handler_->version(), v2 ? "v2" : "v1");
  EXPECT_TRUE(handler_->HasController("cpu"));
  EXPECT_TRUE(std::filesystem::is_directory(handler_->Path("memory", "")));
  for (const std::string& line : handler_->missing_features()) {
    std::cout << "missing feature: " << line << "\n";
  }
}

TEST_F(RealCgroupsTest, UpdateLimitsRaisesAndLowersALiveGroupsLimits) {
  const std::string id = "c2";
  ASSERT_TRUE(
      handler_->Create(id, {.memory_bytes = 64 << 20, .cpu_weight = kCpuSharesPerVcore}).ok());
  const std::string memory = handler_->Path("memory", id);
  const std::string file = handler_->version() == "v1" ? "/memory.limit_in_bytes" : "/memory.max";
  // Above the memory+swap limit Create set (v1 with swap accounting): that one moves first.
  absl::Status up =
      handler_->UpdateLimits(id, {.memory_bytes = 256 << 20, .cpu_weight = 2 * kCpuSharesPerVcore});
  ASSERT_TRUE(up.ok()) << up;
  EXPECT_EQ(Slurp(memory + file), "268435456\n");
  if (std::filesystem::exists(memory + "/memory.memsw.limit_in_bytes")) {
    EXPECT_EQ(Slurp(memory + "/memory.memsw.limit_in_bytes"), "268435456\n");
  }
  absl::Status down = handler_->UpdateLimits(id, {.memory_bytes = 32 << 20});
  ASSERT_TRUE(down.ok()) << down;
  EXPECT_EQ(Slurp(memory + file), "33554432\n");
  ASSERT_TRUE(handler_->Destroy(id).ok());
  EXPECT_EQ(handler_->UpdateLimits(id, {.memory_bytes = 1 << 20}).code(),
            absl::StatusCode::kNotFound);
}

// The lifetime totals a container's history record needs (issue 31) are read from a group whose
// process has ended, before Destroy: its CPU time and the most memory it held.
TEST_F(RealCgroupsTest, UsageKeepsCpuTimeAndPeakMemoryAfterTheProcessEnds) {
  const std::string id = "c3";
  ASSERT_TRUE(handler_->Create(id, {.memory_bytes = 256 << 20}).ok());
  OsEnv* env = OsEnv::Default();
  // 48 MiB held in a shell variable, then a loop that burns CPU.
  constexpr int64_t kAllocated = 48 << 20;
  absl::StatusOr<pid_t> pid =
      env->Spawn({.argv = {"/bin/bash", "-c",
                           "x=$(head -c 50331648 /dev/zero | tr '\\0' a); i=0; "
                           "while [ $i -lt 100000 ]; do i=$((i+1)); done; echo ${#x}"},
                  .work_dir = "/",
                  .stdout_path = "/dev/null",
                  .stderr_path = "/dev/null"},
                 [&](pid_t child) { return handler_->AddProcess(id, child); });
  ASSERT_TRUE(pid.ok()) << pid.status();
  absl::StatusOr<ProcessStatus> status = env->Wait(*pid);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_EQ(status->exit_code, 0);
  absl::StatusOr<CgroupUsage> usage = handler_->Usage(id);
  ASSERT_TRUE(usage.ok()) << usage.status();
  ASSERT_TRUE(usage->cpu_ns.has_value());
  EXPECT_GT(*usage->cpu_ns, 0);
  if (handler_->version() == "v1" || usage->peak_memory_bytes.has_value()) {
    ASSERT_TRUE(usage->peak_memory_bytes.has_value());
    EXPECT_GE(*usage->peak_memory_bytes, kAllocated);
  } else {
    std::cout << "memory.peak not offered by this kernel (before 5.19): peak not checked\n";
  }
  ASSERT_TRUE(handler_->Destroy(id).ok());
}

TEST_F(RealCgroupsTest, CreateAddProcessAndDestroyKillsTasks) {
  const std::string id = "c1";
  ASSERT_TRUE(handler_
                  ->Create(id, {.memory_bytes = 64 << 20,
                                .cpu_weight = 2 * kCpuSharesPerVcore,
                                .cpu_quota_us = 50000})
                  .ok());
  const std::string memory = handler_->Path("memory", id);
  const std::string cpu = handler_->Path("cpu", id);
  if (handler_->version() == "v1") {
    EXPECT_EQ(Slurp(memory + "/memory.limit_in_bytes"), "67108864\n");
    EXPECT_EQ(Slurp(cpu + "/cpu.shares"), "2048\n");
    EXPECT_EQ(Slurp(cpu + "/cpu.cfs_quota_us"), "50000\n");
  } else {
    EXPECT_EQ(Slurp(memory + "/memory.max"), "67108864\n");
    EXPECT_EQ(Slurp(cpu + "/cpu.weight"), "79\n");
    EXPECT_EQ(Slurp(cpu + "/cpu.max"), "50000 100000\n");
  }

  OsEnv* env = OsEnv::Default();
  absl::StatusOr<pid_t> pid =
      env->Spawn({.argv = {"/bin/sleep", "100"},
                  .work_dir = "/",
                  .stdout_path = "/dev/null",
                  .stderr_path = "/dev/null"},
                 [&](pid_t child) { return handler_->AddProcess(id, child); });
  ASSERT_TRUE(pid.ok()) << pid.status();
  std::string membership = Slurp(absl::StrCat("/proc/", *pid, "/cgroup"));
  EXPECT_THAT(membership, HasSubstr(absl::StrCat("/", hierarchy_, "/", id, "\n")));
  EXPECT_THAT(Slurp(memory + "/cgroup.procs"), HasSubstr(absl::StrCat(*pid, "\n")));

  ASSERT_TRUE(handler_->Destroy(id).ok());
  for (const char* controller : {"cpu", "cpuacct", "memory", "blkio"}) {
    std::string dir = handler_->Path(controller, id);
    if (!dir.empty()) {
      EXPECT_FALSE(std::filesystem::exists(dir)) << dir;
    }
  }
  absl::StatusOr<ProcessStatus> status = env->Wait(*pid);
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(status->signaled);
  EXPECT_EQ(status->signal, SIGKILL);
  EXPECT_TRUE(handler_->Destroy(id).ok());
}

}  // namespace
}  // namespace weft::nm
