// Copyright Weft authors. cgroup v2 device isolation on the real kernel: the device program
// (device_bpf.h) attached to a cgroup v2 group refuses exactly the listed devices. Needs root
// and a cgroup2 mount (the unified hierarchy of a hybrid v1 system will do: device programs
// apply there too); otherwise it skips saying why.
#include "nm/devices/device_bpf.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

TEST(DeviceBpfTest, ProgramShape) {
  EXPECT_EQ(DeviceDenyProgram({}).size(), 6u);
  EXPECT_EQ(DeviceDenyProgram({{1, 7}, {1, 8}}).size(), 16u);
  std::vector<bpf_insn> prog = DeviceDenyProgram({{195, 3}});
  EXPECT_EQ(prog[5].imm, 195);
  EXPECT_EQ(prog[6].imm, 3);
}

// A cgroup2 mount point where groups can be made, or "".
std::string Cgroup2Root() {
  for (const char* dir : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (std::filesystem::exists(absl::StrCat(dir, "/cgroup.procs")) &&
        std::filesystem::exists(absl::StrCat(dir, "/cgroup.controllers"))) {
      return dir;
    }
  }
  return "";
}

// In a child moved into `group`: open each path; the exit code's bit i is set when path i
// opened.
int OpenMaskInGroup(const std::string& group, const std::vector<std::string>& paths) {
  pid_t child = fork();
  if (child == 0) {
    {
      std::ofstream procs(group + "/cgroup.procs");
      procs << getpid();
    }
    int mask = 0;
    for (size_t i = 0; i < paths.size(); ++i) {
      int fd = open(paths[i].c_str(), O_RDONLY);
      if (fd >= 0) {
        mask |= 1 << i;
        close(fd);
      } else if (errno != EPERM) {
        mask |= 1 << 6;  // an unexpected error
      }
    }
    _exit(mask);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(DeviceBpfTest, AttachedProgramRefusesExactlyTheListedDevices) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (bpf and cgroups)";
  const std::string root = Cgroup2Root();
  if (root.empty()) GTEST_SKIP() << "no cgroup2 mount at /sys/fs/cgroup or /sys/fs/cgroup/unified";
  const std::string group = absl::StrCat(root, "/weft_device_bpf_test_", getpid());
  ASSERT_TRUE(std::filesystem::create_directory(group));
  // /dev/full (1:7) and /dev/random (1:8) refused; /dev/zero (1:5) and /dev/null (1:3) not.
  absl::Status attached = AttachDeviceDenyProgram(group, {{1, 7}, {1, 8}});
  if (!attached.ok()) {
    rmdir(group.c_str());  // nothing was attached
    if (absl::IsPermissionDenied(attached)) GTEST_SKIP() << attached;
    FAIL() << attached;
  }
  int mask = OpenMaskInGroup(group, {"/dev/zero", "/dev/full", "/dev/random", "/dev/null"});
  EXPECT_EQ(mask, 0b1001) << "bit 0 /dev/zero, 1 /dev/full, 2 /dev/random, 3 /dev/null";
  // Outside the group nothing is refused.
  int outside = OpenMaskInGroup(root, {"/dev/zero", "/dev/full"});
  EXPECT_EQ(outside, 0b11);
  EXPECT_EQ(rmdir(group.c_str()), 0) << std::strerror(errno);
}

TEST(DeviceBpfTest, MissingGroupIsNotFound) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  absl::Status s = AttachDeviceDenyProgram("/nonexistent/weft", {{1, 7}});
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("/nonexistent/weft"));
}

}  // namespace
}  // namespace weft::nm
