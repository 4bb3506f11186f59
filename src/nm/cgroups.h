// Copyright Weft authors. Per-container control groups: resource limits, usage, OOM detection.
//
// A `CgroupsHandler` owns one parent group (the "hierarchy", default "weft") under each usable
// controller and one child group per container below it:
//
//   cgroup v1:  <root>/<controller mount>/<hierarchy>/<container_id>   e.g. .../memory/weft/c1
//   cgroup v2:  <root>/<hierarchy>/<container_id>                      e.g. .../weft/c1
//
// Controllers are named as in cgroup v1: "cpu", "cpuacct", "memory", "blkio", "net_cls",
// "pids". On v2 "blkio" is the io controller, "cpuacct" is the always-present cpu.stat, and
// there is no net_cls (traffic is classified by cgroup-v2 socket matching instead).
//
// What the kernel does not offer is reported by `missing_features()`, never silently ignored:
// the NM puts these lines in its node status. Limits for a missing controller are not enforced.
#ifndef WEFT_NM_CGROUPS_H_
#define WEFT_NM_CGROUPS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/devices/device_number.h"
#include "nm/os_env.h"

namespace weft::nm {

// cgroup v1 cpu.shares per vcore (the kernel's default share of one task is 1024).
inline constexpr int64_t kCpuSharesPerVcore = 1024;

// Resource limits of one container's group. Zero means "no limit" (the kernel's default).
struct CgroupLimits {
  // Hard memory limit in bytes; above it the kernel OOM-kills a process of the container.
  // Swap beyond the limit is also prevented where the kernel offers the knob.
  int64_t memory_bytes = 0;
  // Relative CPU share in cgroup-v1 cpu.shares units: kCpuSharesPerVcore * vcores. v1 writes it
  // to cpu.shares; v2 maps it onto cpu.weight (1..10000) as runc and systemd do.
  int64_t cpu_weight = 0;
  // Optional hard cap: at most cpu_quota_us microseconds of CPU time every cpu_period_us
  // (0 = the kernel's default period, 100000 us). A quota of 0 means no cap.
  int64_t cpu_quota_us = 0;
  int64_t cpu_period_us = 0;
  // cgroup v1 net_cls.classid: 0xMMMMmmmm for the traffic-control class MMMM:mmmm (hex) that
  // the container's packets are tagged with (see nm/traffic_controller.h). 0: untagged.
  // Create fails when it is set and the net_cls controller is not usable.
  uint32_t net_cls_classid = 0;
  // Most tasks (processes and threads) the group may hold at once: pids.max of the pids
  // controller (v1 and v2). A fork or clone beyond it fails with EAGAIN. Not enforced when the
  // pids controller is not usable (missing_features() says so).
  int64_t pids_max = 0;
  // Character devices the container's processes may not open or mknod (device isolation,
  // issue 32: the GPUs it was not given): cgroup v1 devices.deny "c MAJOR:MINOR rwm" lines,
  // cgroup v2 a BPF_PROG_TYPE_CGROUP_DEVICE program attached to its group (devices/
  // device_bpf.h). Everything else stays as the parent group allows. Applied by Create only
  // (UpdateLimits ignores it); Create fails with FailedPrecondition when it is set and
  // EnableDeviceControl has not succeeded.
  std::vector<DeviceNumber> denied_devices;
};

// A container's resource usage. nullopt: the controller that measures it is not usable.
struct CgroupUsage {
  // Memory charged to the group, bytes, page cache included (v1 memory.usage_in_bytes, v2
  // memory.current).
  std::optional<int64_t> memory_bytes;
  // Anonymous memory (resident, not file-backed), bytes (v1 memory.stat total_rss, v2 anon).
  std::optional<int64_t> rss_bytes;
  // Cumulative CPU time of all its tasks, nanoseconds (v1 cpuacct.usage, v2 cpu.stat
  // usage_usec * 1000).
  std::optional<int64_t> cpu_ns;
  // The most memory the group has been charged at once since it was created, bytes, page cache
  // included (v1 memory.max_usage_in_bytes, v2 memory.peak: kernels from 5.19). nullopt also
  // when the kernel does not offer the file.
  std::optional<int64_t> peak_memory_bytes;
};

// Creates, limits, measures and removes containers' groups.
//
// Thread-safe as far as the kernel is: calls for different containers may run concurrently;
// calls for one container must not (the executor's owner thread serializes them).
// Container ids must match [A-Za-z0-9_.-]+ and not start with '.'; others are InvalidArgument.
class CgroupsHandler {
 public:
  virtual ~CgroupsHandler() = default;

  // "v1" or "v2".
  virtual std::string version() const = 0;
  // The usable controllers, in the order cpu, cpuacct, memory, blkio, net_cls, pids.
  virtual std::vector<std::string> controllers() const = 0;
  bool HasController(absl::string_view controller) const { return !Path(controller, "").empty(); }
  // Human-readable lines, one per missing feature, e.g.
  // "cgroup v1 controller net_cls not mounted under /sys/fs/cgroup". Empty when complete.
  virtual std::vector<std::string> missing_features() const = 0;

  // Creates the container's group under every usable controller and applies `limits`.
  // An existing group of that id is reused (its limits rewritten). On error nothing is left
  // behind. Errors: InvalidArgument for a bad id or negative limits; the failing write.
  virtual absl::Status Create(absl::string_view container_id, const CgroupLimits& limits) = 0;
  // Rewrites the limits of an existing container's groups (a resource update: YARN's
  // container increase or decrease) while its processes run: memory (and memory+swap where
  // v1 has the knob, written in the order the kernel accepts for a rise or a fall), CPU weight
  // and quota, and pids.max. A zero memory_bytes, cpu_weight, cpu_quota_us or pids_max leaves
  // that limit as it is; net_cls_classid is ignored (the class stays). A memory limit below
  // what the group uses: v1 reclaims what it can and otherwise refuses the write, which is
  // ResourceExhausted naming the limit and the usage (nothing has changed then); v2 accepts it
  // and the kernel reclaims or OOM-kills in the group (OomKilled() says so afterwards).
  // Errors: InvalidArgument (bad id, negative limits), NotFound (no group), the failing write.
  // The default implementation returns Unimplemented.
  virtual absl::Status UpdateLimits(absl::string_view container_id, const CgroupLimits& limits);
  // Turns device isolation on (CgroupLimits::denied_devices). v1: manages the devices
  // controller from now on (its parent group is created, controllers() lists "devices",
  // containers' groups get one there); FailedPrecondition when it is not mounted. v2: device
  // programs are attached to the containers' groups (nothing to mount). Idempotent. Call it
  // before creating or recovering containers. The default implementation returns
  // Unimplemented.
  virtual absl::Status EnableDeviceControl();
  // Moves process `pid` (all its threads) into the container's groups. Its future children
  // start there too.
  virtual absl::Status AddProcess(absl::string_view container_id, pid_t pid) = 0;
  // Current usage, and the peak so far (read it before Destroy for the container's lifetime
  // totals: cpu_ns and peak_memory_bytes). NotFound when the container has no group.
  virtual absl::StatusOr<CgroupUsage> Usage(absl::string_view container_id) = 0;
  // True once the kernel OOM killer has killed a process of the container (v1: the oom_kill
  // counter of memory.oom_control, or memory.failcnt > 0 on kernels before 4.13; v2: oom_kill
  // in memory.events). False when the memory controller is not usable. NotFound when the
  // container has no group. Read it before Destroy.
  virtual absl::StatusOr<bool> OomKilled(absl::string_view container_id) = 0;
  // How many forks the pids limit has refused in the container's group (pids.events "max"),
  // 0 when the pids controller is not usable. NotFound when the container has no group. Read
  // it before Destroy. The default implementation returns 0.
  virtual absl::StatusOr<int64_t> PidsLimitHits(absl::string_view container_id);
  // SIGKILLs whatever still runs in the container's groups, then removes them. Idempotent: OK
  // when they do not exist. Blocks until the tasks are gone, at most about 2 s; then
  // DeadlineExceeded naming the remaining pids.
  virtual absl::Status Destroy(absl::string_view container_id) = 0;
  // The directory of the container's group for `controller` (with an empty id: the parent
  // group's), or "" when that controller is not usable.
  virtual std::string Path(absl::string_view controller, absl::string_view container_id) const = 0;
  // Removes the parent groups (e.g. on NM shutdown or after a test). FailedPrecondition while
  // container groups remain; OK when already gone.
  virtual absl::Status RemoveHierarchy() = 0;

  // The names of the groups below the parent groups (under any controller), sorted: the
  // containers' groups, including those a previous NM left. The default implementation
  // returns Unimplemented.
  virtual absl::StatusOr<std::vector<std::string>> ListContainers();
  // The processes in the container's groups (with an empty id: in the parent groups
  // themselves), from cgroup.procs of every controller, sorted and without duplicates.
  // NotFound when the container has no group. The default implementation returns
  // Unimplemented.
  virtual absl::StatusOr<std::vector<pid_t>> Processes(absl::string_view container_id);
};

// SIGKILLs whatever runs in the group directories `dirs` (absolute cgroupfs paths, e.g. a
// container group of a hierarchy the current handler does not manage) and removes them, as
// CgroupsHandler::Destroy does. OK for directories that do not exist.
absl::Status DestroyCgroupDirs(const std::vector<std::string>& dirs, OsEnv* env);

// OK when `id` can name a container (and its directories): [A-Za-z0-9_.-]+, at most 255
// characters, not starting with '.'. Otherwise InvalidArgument naming the id.
absl::Status ValidateContainerId(absl::string_view id);

// Finds the cgroup filesystems under `root`, decides between v1 and v2, creates the parent
// group `hierarchy` (a relative path such as "weft" or "weft/nm1") under each usable
// controller and returns a handler for them.
//
// Detection reads /proc/self/mountinfo (through `env`): a cgroup2 mount at `root` means v2,
// cgroup (v1) mounts directly below `root` mean v1 (a hybrid system's root/unified cgroup2
// mount, which has no controllers, is ignored). When mountinfo shows no cgroup mount there,
// the directory itself is inspected: root/cgroup.controllers means v2, subdirectories holding
// cgroup.procs mean v1 with the controllers named by the directory ("cpu,cpuacct").
// On v2 the controllers are enabled in cgroup.subtree_control from `root` down to the
// hierarchy. This needs `root` to be the real root or a group without processes of its own.
//
// Errors: InvalidArgument for a bad `hierarchy`; FailedPrecondition when there is no cgroup
// filesystem at `root` or neither cpu nor memory is usable (the message lists why).
absl::StatusOr<std::unique_ptr<CgroupsHandler>> DetectCgroups(
    absl::string_view root = "/sys/fs/cgroup", absl::string_view hierarchy = "weft",
    OsEnv* env = OsEnv::Default());

// Exposed for tests.
namespace internal {

// One cgroup filesystem mount from /proc/self/mountinfo.
struct CgroupMount {
  std::string mount_point;               // octal escapes such as \040 decoded
  bool v2 = false;                       // fstype cgroup2 (else cgroup)
  std::vector<std::string> controllers;  // v1: from the super options, e.g. {"cpu","cpuacct"}
};
std::vector<CgroupMount> ParseCgroupMounts(absl::string_view mountinfo);

// cpu.shares (2..262144) to cpu.weight (1..10000), the mapping runc and systemd use.
int64_t CpuSharesToWeight(int64_t shares);

}  // namespace internal
}  // namespace weft::nm

#endif  // WEFT_NM_CGROUPS_H_
