// Copyright Weft authors. cgroup v1 and v2 handlers over an OsEnv.
#include "nm/cgroups.h"

#include <signal.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "nm/devices/device_bpf.h"

namespace weft::nm {
namespace {

// The controllers a handler manages, in the order controllers() reports them.
constexpr std::array<absl::string_view, 6> kManaged = {"cpu",   "cpuacct", "memory",
                                                       "blkio", "net_cls", "pids"};
constexpr int64_t kDestroyTimeoutMs = 2000;
constexpr int64_t kDestroyPollMs = 5;
constexpr int64_t kDefaultCpuPeriodUs = 100000;

absl::Status WithContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

absl::Status ValidateHierarchy(absl::string_view hierarchy) {
  bool valid = !hierarchy.empty() && hierarchy.front() != '/' && hierarchy.back() != '/';
  for (absl::string_view part : absl::StrSplit(hierarchy, '/')) {
    valid &= !part.empty() && part != "." && part != "..";
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat("invalid cgroup hierarchy '", hierarchy,
                                                   "': want a relative path such as 'weft'"));
  }
  return absl::OkStatus();
}

std::string Dirname(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash == absl::string_view::npos) return "";
  if (slash == 0) return "/";
  return std::string(path.substr(0, slash));
}

// The value of `key` in "key value" lines (memory.stat, cpu.stat, memory.events, ...).
std::optional<int64_t> StatField(absl::string_view text, absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    int64_t value = 0;
    if (kv.first == key && absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &value)) {
      return value;
    }
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> ReadInt(OsEnv* env, const std::string& path) {
  absl::StatusOr<std::string> text = env->ReadFile(path);
  if (!text.ok()) return text.status();
  int64_t value = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return absl::DataLossError(absl::StrCat(
        "'", path, "' holds '", absl::StripAsciiWhitespace(*text), "', not an integer"));
  }
  return value;
}

// ReadInt for a file the kernel may not offer: nullopt when it does not exist.
absl::StatusOr<std::optional<int64_t>> ReadOptionalInt(OsEnv* env, const std::string& path) {
  absl::StatusOr<int64_t> value = ReadInt(env, path);
  if (absl::IsNotFound(value.status())) return std::optional<int64_t>();
  if (!value.ok()) return value.status();
  return std::optional<int64_t>(*value);
}

absl::StatusOr<std::optional<int64_t>> ReadStatField(OsEnv* env, const std::string& path,
                                                     absl::string_view key) {
  absl::StatusOr<std::string> text = env->ReadFile(path);
  if (!text.ok()) return text.status();
  return StatField(*text, key);
}

// Parses cgroup.procs: one pid per line.
std::vector<pid_t> ParsePids(absl::string_view text) {
  std::vector<pid_t> pids;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    int pid = 0;
    if (absl::SimpleAtoi(line, &pid) && pid > 0) pids.push_back(pid);
  }
  return pids;
}

// Kills the tasks of each directory (with `kill`) and removes it, retrying while the kernel
// says busy, for at most kDestroyTimeoutMs in all.
template <typename KillFn>
absl::Status DestroyDirs(const std::vector<std::string>& dirs, OsEnv* env, KillFn kill,
                         absl::string_view context) {
  const int64_t deadline = env->NowMs() + kDestroyTimeoutMs;
  for (const std::string& dir : dirs) {
    while (env->PathExists(dir)) {
      std::vector<pid_t> pids;
      if (absl::StatusOr<std::string> procs = env->ReadFile(dir + "/cgroup.procs"); procs.ok()) {
        pids = ParsePids(*procs);
      }
      if (!pids.empty()) kill(dir, pids);
      absl::Status removed = env->RemoveDir(dir);
      if (removed.ok() || absl::IsNotFound(removed)) break;
      if (env->NowMs() >= deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat(context, ": tasks [", absl::StrJoin(pids, " "), "] remain after ",
                         kDestroyTimeoutMs, " ms: ", removed.message()));
      }
      env->SleepMs(kDestroyPollMs);
    }
  }
  return absl::OkStatus();
}

// SIGKILL to every task of a group: through cgroup.kill (v2, Linux 5.14+), which also gets
// tasks forking meanwhile, else one by one.
void KillGroupTasks(OsEnv* env, const std::string& dir, const std::vector<pid_t>& pids) {
  std::string kill_file = dir + "/cgroup.kill";
  if (env->PathExists(kill_file) && env->WriteFile(kill_file, "1").ok()) return;
  for (pid_t pid : pids) KillForCleanup(env, pid, SIGKILL);  // NotFound: already gone
}

// The common part of both versions: a parent group per usable controller.
class CgroupsHandlerBase : public CgroupsHandler {
 public:
  CgroupsHandlerBase(OsEnv* env, std::vector<std::pair<std::string, std::string>> parents,
                     std::vector<std::string> missing)
      : env_(env), parents_(std::move(parents)), missing_(std::move(missing)) {}

  std::vector<std::string> controllers() const override {
    std::vector<std::string> names;
    for (const auto& [controller, dir] : parents_) names.push_back(controller);
    return names;
  }

  std::vector<std::string> missing_features() const override { return missing_; }

  std::string Path(absl::string_view controller, absl::string_view container_id) const override {
    for (const auto& [name, dir] : parents_) {
      if (name != controller) continue;
      return container_id.empty() ? dir : absl::StrCat(dir, "/", container_id);
    }
    return "";
  }

  absl::Status Create(absl::string_view container_id, const CgroupLimits& limits) override {
    std::string context = absl::StrCat("creating cgroup of container ", container_id);
    if (absl::Status s = ValidateContainerId(container_id); !s.ok()) return s;
    if (limits.memory_bytes < 0 || limits.cpu_weight < 0 || limits.cpu_quota_us < 0 ||
        limits.cpu_period_us < 0 || limits.pids_max < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": negative limit (memory_bytes=", limits.memory_bytes,
                       " cpu_weight=", limits.cpu_weight, " cpu_quota_us=", limits.cpu_quota_us,
                       " cpu_period_us=", limits.cpu_period_us, " pids_max=", limits.pids_max,
                       ")"));
    }
    std::vector<std::string> created;
    for (const std::string& dir : GroupDirs(container_id)) {
      absl::Status s = env_->CreateDir(dir);
      if (s.ok()) {
        created.push_back(dir);
      } else if (!absl::IsAlreadyExists(s)) {
        for (const std::string& undo : created)
          log::WarnIfError(env_->RemoveDir(undo), "cgroup_undo_failed", {{"dir", undo}});
        return WithContext(s, context);
      }
    }
    absl::Status applied = ApplyLimits(container_id, limits);
    if (applied.ok() && !limits.denied_devices.empty()) {
      applied = device_control_
                    ? DenyDevices(container_id, limits.denied_devices)
                    : absl::FailedPreconditionError(absl::StrCat(
                          "device isolation is not enabled but ", limits.denied_devices.size(),
                          " device(s) must be denied"));
    }
    if (!applied.ok()) {
      log::WarnIfError(Destroy(container_id), "cgroup_undo_failed", {{"container", container_id}});
      return WithContext(applied, context);
    }
    return absl::OkStatus();
  }

  absl::Status UpdateLimits(absl::string_view container_id, const CgroupLimits& limits) override {
    const std::string context = absl::StrCat("updating cgroup limits of container ", container_id);
    if (absl::Status s = CheckExists(container_id); !s.ok()) return WithContext(s, context);
    if (limits.memory_bytes < 0 || limits.cpu_weight < 0 || limits.cpu_quota_us < 0 ||
        limits.cpu_period_us < 0 || limits.pids_max < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          context, ": negative limit (memory_bytes=", limits.memory_bytes,
          " cpu_weight=", limits.cpu_weight, " cpu_quota_us=", limits.cpu_quota_us,
          " cpu_period_us=", limits.cpu_period_us, " pids_max=", limits.pids_max, ")"));
    }
    // Memory first: the one limit the kernel may refuse, before anything else has changed.
    if (HasController("memory") && limits.memory_bytes > 0) {
      if (absl::Status s = UpdateMemory(container_id, limits.memory_bytes); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
      }
    }
    CgroupLimits rest = limits;
    rest.memory_bytes = 0;
    rest.net_cls_classid = 0;
    return WithContext(ApplyLimits(container_id, rest), context);
  }

  absl::Status AddProcess(absl::string_view container_id, pid_t pid) override {
    if (absl::Status s = ValidateContainerId(container_id); !s.ok()) return s;
    for (const std::string& dir : GroupDirs(container_id)) {
      absl::Status s = env_->WriteFile(absl::StrCat(dir, "/cgroup.procs"), absl::StrCat(pid));
      if (!s.ok()) {
        return WithContext(
            s, absl::StrCat("adding pid ", pid, " to cgroup of container ", container_id));
      }
    }
    return absl::OkStatus();
  }

  absl::Status Destroy(absl::string_view container_id) override {
    if (absl::Status s = ValidateContainerId(container_id); !s.ok()) return s;
    return DestroyDirs(
        GroupDirs(container_id), env_,
        [this](const std::string& dir, const std::vector<pid_t>& pids) { KillTasks(dir, pids); },
        absl::StrCat("destroying cgroup of container ", container_id));
  }

  absl::StatusOr<std::vector<std::string>> ListContainers() override {
    std::vector<std::string> names;
    for (const std::string& parent : GroupDirs("")) {
      absl::StatusOr<std::vector<std::string>> entries = env_->ListDir(parent);
      if (!entries.ok()) {
        if (absl::IsNotFound(entries.status())) continue;
        return entries.status();
      }
      for (const std::string& name : *entries) {
        if (env_->PathExists(absl::StrCat(parent, "/", name, "/cgroup.procs"))) {
          names.push_back(name);
        }
      }
    }
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    return names;
  }

  absl::StatusOr<std::vector<pid_t>> Processes(absl::string_view container_id) override {
    if (!container_id.empty()) {
      if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    }
    std::vector<pid_t> pids;
    for (const std::string& dir : GroupDirs(container_id)) {
      absl::StatusOr<std::string> procs = env_->ReadFile(dir + "/cgroup.procs");
      if (!procs.ok()) {
        if (absl::IsNotFound(procs.status())) continue;
        return procs.status();
      }
      for (pid_t pid : ParsePids(*procs)) pids.push_back(pid);
    }
    std::sort(pids.begin(), pids.end());
    pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
    return pids;
  }

  absl::StatusOr<int64_t> PidsLimitHits(absl::string_view container_id) override {
    if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    if (!HasController("pids")) return 0;
    const std::string events = Path("pids", container_id) + "/pids.events";
    if (!env_->PathExists(events)) return 0;  // kernels before 4.6
    absl::StatusOr<std::optional<int64_t>> hits = ReadStatField(env_, events, "max");
    if (!hits.ok()) return hits.status();
    return hits->value_or(0);
  }

  absl::Status RemoveHierarchy() override {
    for (const std::string& dir : GroupDirs("")) {
      absl::Status s = env_->RemoveDir(dir);
      if (s.ok() || absl::IsNotFound(s)) continue;
      return absl::FailedPreconditionError(
          absl::StrCat("removing cgroup hierarchy (container groups remain?): ", s.message()));
    }
    return absl::OkStatus();
  }

 protected:
  // The distinct directories of a container's groups (co-mounted v1 controllers and v2 share
  // one), or of the parent groups when `container_id` is empty.
  std::vector<std::string> GroupDirs(absl::string_view container_id) const {
    std::vector<std::string> dirs;
    for (const auto& [controller, dir] : parents_) {
      std::string path = Path(controller, container_id);
      if (std::find(dirs.begin(), dirs.end(), path) == dirs.end()) dirs.push_back(path);
    }
    return dirs;
  }

  // NotFound unless the container's groups exist.
  absl::Status CheckExists(absl::string_view container_id) const {
    if (absl::Status s = ValidateContainerId(container_id); !s.ok()) return s;
    std::vector<std::string> dirs = GroupDirs(container_id);
    if (dirs.empty() || !env_->PathExists(dirs.front())) {
      return absl::NotFoundError(absl::StrCat("container ", container_id, " has no cgroup"));
    }
    return absl::OkStatus();
  }

  // pids.max (the same file on v1 and v2); nothing when unlimited or not usable.
  absl::Status ApplyPidsLimit(absl::string_view id, const CgroupLimits& limits) {
    if (limits.pids_max <= 0 || !HasController("pids")) return absl::OkStatus();
    return Write("pids", id, "pids.max", absl::StrCat(limits.pids_max));
  }

  // Writes `value` to `file` in the container's group of `controller`.
  absl::Status Write(absl::string_view controller, absl::string_view container_id,
                     absl::string_view file, absl::string_view value) {
    return env_->WriteFile(absl::StrCat(Path(controller, container_id), "/", file), value);
  }

  virtual absl::Status ApplyLimits(absl::string_view container_id, const CgroupLimits& limits) = 0;
  // Refuses the container's processes the character devices `denied` (after EnableDeviceControl).
  virtual absl::Status DenyDevices(absl::string_view container_id,
                                   const std::vector<DeviceNumber>& denied) = 0;
  // Sets the memory limit of a container whose group exists to `bytes` (> 0), as
  // UpdateLimits describes.
  virtual absl::Status UpdateMemory(absl::string_view container_id, int64_t bytes) = 0;
  // Sends SIGKILL to the tasks `pids` listed in the group `dir`.
  virtual void KillTasks(const std::string& /*dir*/, const std::vector<pid_t>& pids) {
    for (pid_t pid : pids) KillForCleanup(env_, pid, SIGKILL);  // NotFound: already gone
  }

  OsEnv* const env_;
  // (controller, parent group directory) for each usable controller, in kManaged order, then
  // "devices" once EnableDeviceControl has added it (v1).
  std::vector<std::pair<std::string, std::string>> parents_;
  const std::vector<std::string> missing_;
  bool device_control_ = false;  // EnableDeviceControl succeeded
};

class CgroupsV1Handler : public CgroupsHandlerBase {
 public:
  // `devices_parent`: <devices mount>/<hierarchy>, or "" when the devices controller is not
  // mounted.
  CgroupsV1Handler(OsEnv* env, std::vector<std::pair<std::string, std::string>> parents,
                   std::vector<std::string> missing, std::string devices_parent)
      : CgroupsHandlerBase(env, std::move(parents), std::move(missing)),
        devices_parent_(std::move(devices_parent)) {}

  std::string version() const override { return "v1"; }

  absl::Status EnableDeviceControl() override {
    if (device_control_) return absl::OkStatus();
    if (devices_parent_.empty()) {
      return absl::FailedPreconditionError(
          "device isolation: the cgroup v1 devices controller is not mounted");
    }
    if (absl::Status s = env_->CreateDirs(devices_parent_); !s.ok()) {
      return WithContext(s, "device isolation: creating the devices cgroup hierarchy");
    }
    parents_.emplace_back("devices", devices_parent_);
    device_control_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<CgroupUsage> Usage(absl::string_view container_id) override {
    if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    CgroupUsage usage;
    if (HasController("memory")) {
      std::string dir = Path("memory", container_id);
      absl::StatusOr<int64_t> bytes = ReadInt(env_, dir + "/memory.usage_in_bytes");
      if (!bytes.ok()) return bytes.status();
      usage.memory_bytes = *bytes;
      absl::StatusOr<std::string> stat = env_->ReadFile(dir + "/memory.stat");
      if (!stat.ok()) return stat.status();
      usage.rss_bytes = StatField(*stat, "total_rss");
      if (!usage.rss_bytes) usage.rss_bytes = StatField(*stat, "rss");
      absl::StatusOr<std::optional<int64_t>> peak =
          ReadOptionalInt(env_, dir + "/memory.max_usage_in_bytes");
      if (!peak.ok()) return peak.status();
      usage.peak_memory_bytes = *peak;
    }
    if (HasController("cpuacct")) {
      absl::StatusOr<int64_t> ns = ReadInt(env_, Path("cpuacct", container_id) + "/cpuacct.usage");
      if (!ns.ok()) return ns.status();
      usage.cpu_ns = *ns;
    }
    return usage;
  }

  absl::StatusOr<bool> OomKilled(absl::string_view container_id) override {
    if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    if (!HasController("memory")) return false;
    std::string dir = Path("memory", container_id);
    absl::StatusOr<std::optional<int64_t>> kills =
        ReadStatField(env_, dir + "/memory.oom_control", "oom_kill");
    if (!kills.ok()) return kills.status();
    if (kills->has_value()) return **kills > 0;
    // Kernels before 4.13 have no counter: the limit was hit (and, on this path, a task died).
    absl::StatusOr<int64_t> failcnt = ReadInt(env_, dir + "/memory.failcnt");
    if (!failcnt.ok()) return failcnt.status();
    return *failcnt > 0;
  }

 protected:
  absl::Status UpdateMemory(absl::string_view id, int64_t bytes) override {
    const std::string dir = Path("memory", id);
    absl::StatusOr<int64_t> current = ReadInt(env_, dir + "/memory.limit_in_bytes");
    if (!current.ok()) return current.status();
    const std::string value = absl::StrCat(bytes);
    const bool memsw = env_->PathExists(dir + "/memory.memsw.limit_in_bytes");
    // memory.limit_in_bytes <= memory.memsw.limit_in_bytes at every step: a rise moves the
    // memory+swap limit first, a fall the memory limit first.
    if (bytes >= *current) {
      if (memsw) {
        if (absl::Status s = Write("memory", id, "memory.memsw.limit_in_bytes", value); !s.ok())
          return s;
      }
      return Write("memory", id, "memory.limit_in_bytes", value);
    }
    if (absl::Status s = Write("memory", id, "memory.limit_in_bytes", value); !s.ok()) {
      // EBUSY (Unavailable here): the kernel could not reclaim down to the new limit.
      if (!absl::IsUnavailable(s)) return s;
      absl::StatusOr<int64_t> usage = ReadInt(env_, dir + "/memory.usage_in_bytes");
      return absl::ResourceExhaustedError(absl::StrCat(
          "memory limit ", bytes, " bytes is below the ", usage.ok() ? absl::StrCat(*usage) : "?",
          " bytes the container uses (the kernel could not reclaim enough; the limit stays ",
          *current, " bytes): ", s.message()));
    }
    if (memsw) return Write("memory", id, "memory.memsw.limit_in_bytes", value);
    return absl::OkStatus();
  }

  absl::Status ApplyLimits(absl::string_view id, const CgroupLimits& limits) override {
    if (absl::Status s = ApplyPidsLimit(id, limits); !s.ok()) return s;
    if (HasController("memory") && limits.memory_bytes > 0) {
      std::string bytes = absl::StrCat(limits.memory_bytes);
      if (absl::Status s = Write("memory", id, "memory.limit_in_bytes", bytes); !s.ok()) return s;
      // memory+swap: only present with swap accounting; must be set after the memory limit.
      if (env_->PathExists(Path("memory", id) + "/memory.memsw.limit_in_bytes")) {
        absl::Status s = Write("memory", id, "memory.memsw.limit_in_bytes", bytes);
        if (!s.ok()) return s;
      }
    }
    if (HasController("cpu")) {
      if (limits.cpu_weight > 0) {
        int64_t shares = std::clamp<int64_t>(limits.cpu_weight, 2, 262144);
        if (absl::Status s = Write("cpu", id, "cpu.shares", absl::StrCat(shares)); !s.ok()) {
          return s;
        }
      }
      if (limits.cpu_quota_us > 0) {
        int64_t period = limits.cpu_period_us > 0 ? limits.cpu_period_us : kDefaultCpuPeriodUs;
        if (absl::Status s = Write("cpu", id, "cpu.cfs_period_us", absl::StrCat(period)); !s.ok()) {
          return s;
        }
        if (absl::Status s =
                Write("cpu", id, "cpu.cfs_quota_us", absl::StrCat(limits.cpu_quota_us));
            !s.ok()) {
          return s;
        }
      }
    }
    if (limits.net_cls_classid != 0) {
      if (!HasController("net_cls")) {
        return absl::FailedPreconditionError(absl::StrCat(
            "container ", id, " needs net_cls.classid ", limits.net_cls_classid,
            " but the net_cls controller is not mounted"));
      }
      absl::Status s =
          Write("net_cls", id, "net_cls.classid", absl::StrCat(limits.net_cls_classid));
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // devices.deny, one "c MAJOR:MINOR rwm" line per device (the group starts with its parent's
  // list, which allows everything unless the operator narrowed it).
  absl::Status DenyDevices(absl::string_view id, const std::vector<DeviceNumber>& denied) override {
    for (const DeviceNumber& number : denied) {
      const std::string rule = absl::StrCat("c ", number.major, ":", number.minor, " rwm");
      if (absl::Status s = Write("devices", id, "devices.deny", rule); !s.ok()) {
        return WithContext(s, absl::StrCat("denying device ", number.major, ":", number.minor));
      }
    }
    return absl::OkStatus();
  }

 private:
  const std::string devices_parent_;
};

class CgroupsV2Handler : public CgroupsHandlerBase {
 public:
  using CgroupsHandlerBase::CgroupsHandlerBase;

  std::string version() const override { return "v2"; }

  // Device programs need no controller: bpf() is checked when the first one is attached.
  absl::Status EnableDeviceControl() override {
    device_control_ = true;
    return absl::OkStatus();
  }

  absl::StatusOr<CgroupUsage> Usage(absl::string_view container_id) override {
    if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    CgroupUsage usage;
    if (HasController("memory")) {
      std::string dir = Path("memory", container_id);
      absl::StatusOr<int64_t> bytes = ReadInt(env_, dir + "/memory.current");
      if (!bytes.ok()) return bytes.status();
      usage.memory_bytes = *bytes;
      absl::StatusOr<std::optional<int64_t>> anon =
          ReadStatField(env_, dir + "/memory.stat", "anon");
      if (!anon.ok()) return anon.status();
      usage.rss_bytes = *anon;
      absl::StatusOr<std::optional<int64_t>> peak = ReadOptionalInt(env_, dir + "/memory.peak");
      if (!peak.ok()) return peak.status();
      usage.peak_memory_bytes = *peak;
    }
    if (HasController("cpuacct")) {
      absl::StatusOr<std::optional<int64_t>> usec =
          ReadStatField(env_, Path("cpuacct", container_id) + "/cpu.stat", "usage_usec");
      if (!usec.ok()) return usec.status();
      if (usec->has_value()) usage.cpu_ns = **usec * 1000;
    }
    return usage;
  }

  absl::StatusOr<bool> OomKilled(absl::string_view container_id) override {
    if (absl::Status s = CheckExists(container_id); !s.ok()) return s;
    if (!HasController("memory")) return false;
    absl::StatusOr<std::optional<int64_t>> kills =
        ReadStatField(env_, Path("memory", container_id) + "/memory.events", "oom_kill");
    if (!kills.ok()) return kills.status();
    return kills->value_or(0) > 0;
  }

 protected:
  // memory.max takes any value; above the usage the kernel reclaims or OOM-kills.
  absl::Status UpdateMemory(absl::string_view id, int64_t bytes) override {
    return Write("memory", id, "memory.max", absl::StrCat(bytes));
  }

  absl::Status ApplyLimits(absl::string_view id, const CgroupLimits& limits) override {
    if (absl::Status s = ApplyPidsLimit(id, limits); !s.ok()) return s;
    if (HasController("memory") && limits.memory_bytes > 0) {
      absl::Status s = Write("memory", id, "memory.max", absl::StrCat(limits.memory_bytes));
      if (!s.ok()) return s;
      if (env_->PathExists(Path("memory", id) + "/memory.swap.max")) {
        if (absl::Status s = Write("memory", id, "memory.swap.max", "0"); !s.ok()) return s;
      }
    }
    if (HasController("cpu")) {
      if (limits.cpu_weight > 0) {
        std::string weight = absl::StrCat(internal::CpuSharesToWeight(limits.cpu_weight));
        if (absl::Status s = Write("cpu", id, "cpu.weight", weight); !s.ok()) return s;
      }
      if (limits.cpu_quota_us > 0) {
        int64_t period = limits.cpu_period_us > 0 ? limits.cpu_period_us : kDefaultCpuPeriodUs;
        std::string max = absl::StrCat(limits.cpu_quota_us, " ", period);
        if (absl::Status s = Write("cpu", id, "cpu.max", max); !s.ok()) return s;
      }
    }
    return absl::OkStatus();
  }

  // cgroup.kill (Linux 5.14+) kills every task atomically, even ones forking meanwhile.
  void KillTasks(const std::string& dir, const std::vector<pid_t>& pids) override {
    std::string kill_file = dir + "/cgroup.kill";
    if (env_->PathExists(kill_file) && env_->WriteFile(kill_file, "1").ok()) return;
    CgroupsHandlerBase::KillTasks(dir, pids);
  }

  // One program per container group, refusing `denied`; the parent group's programs (e.g.
  // systemd's) still apply.
  absl::Status DenyDevices(absl::string_view id, const std::vector<DeviceNumber>& denied) override {
    std::vector<std::string> dirs = GroupDirs(id);
    if (dirs.empty()) return absl::FailedPreconditionError("no cgroup v2 group to attach to");
    return AttachDeviceDenyProgram(dirs.front(), denied);
  }
};

// The v2 name of a managed controller; "" when v2 needs none (cpuacct) or has none (net_cls).
absl::string_view V2Name(absl::string_view controller) {
  if (controller == "blkio") return "io";
  if (controller == "cpuacct" || controller == "net_cls") return "";
  return controller;
}

absl::StatusOr<std::unique_ptr<CgroupsHandler>> BuildV1(
    OsEnv* env, const std::string& root, absl::string_view hierarchy,
    const std::vector<internal::CgroupMount>& mounts) {
  std::vector<std::pair<std::string, std::string>> parents;
  std::vector<std::string> missing;
  for (absl::string_view controller : kManaged) {
    const internal::CgroupMount* mount = nullptr;
    for (const internal::CgroupMount& m : mounts) {
      if (std::find(m.controllers.begin(), m.controllers.end(), controller) !=
          m.controllers.end()) {
        mount = &m;
      }
    }
    if (mount == nullptr) {
      missing.push_back(
          absl::StrCat("cgroup v1 controller ", controller, " not mounted under ", root));
      continue;
    }
    std::string parent = absl::StrCat(mount->mount_point, "/", hierarchy);
    if (absl::Status s = env->CreateDirs(parent); !s.ok()) {
      missing.push_back(
          absl::StrCat("cgroup v1 controller ", controller, " unusable: ", s.message()));
      continue;
    }
    parents.emplace_back(std::string(controller), parent);
  }
  // The devices controller is managed only once device isolation is enabled.
  std::string devices_parent;
  for (const internal::CgroupMount& m : mounts) {
    if (std::find(m.controllers.begin(), m.controllers.end(), "devices") != m.controllers.end())
      devices_parent = absl::StrCat(m.mount_point, "/", hierarchy);
  }
  return std::unique_ptr<CgroupsHandler>(new CgroupsV1Handler(
      env, std::move(parents), std::move(missing), std::move(devices_parent)));
}

absl::StatusOr<std::unique_ptr<CgroupsHandler>> BuildV2(OsEnv* env, const std::string& root,
                                                        absl::string_view hierarchy) {
  std::vector<std::string> missing;
  std::string controllers_file = root + "/cgroup.controllers";
  absl::StatusOr<std::string> available_text = env->ReadFile(controllers_file);
  if (!available_text.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("cgroup v2 at ", root, ": ", available_text.status().message()));
  }
  std::vector<std::string> available =
      absl::StrSplit(*available_text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
  // The controllers to enable, in kManaged order.
  std::vector<std::string> enable;
  for (absl::string_view controller : kManaged) {
    absl::string_view name = V2Name(controller);
    if (controller == "net_cls") {
      missing.push_back(
          "cgroup v2 has no net_cls controller: traffic must be classified by cgroup-v2 socket "
          "matching");
    }
    if (name.empty()) continue;
    if (std::find(available.begin(), available.end(), name) == available.end()) {
      missing.push_back(absl::StrCat("cgroup v2 controller ", name, " not available (not in ",
                                     controllers_file, ")"));
    } else {
      enable.emplace_back(name);
    }
  }
  // Enable them in cgroup.subtree_control of root and every level of the hierarchy, so that
  // the container groups below the hierarchy get them.
  std::string level = root;
  std::vector<std::string> parts = absl::StrSplit(hierarchy, '/');
  for (size_t i = 0; i <= parts.size(); ++i) {
    if (i > 0) {
      level = absl::StrCat(level, "/", parts[i - 1]);
      absl::Status s = env->CreateDir(level);
      if (!s.ok() && !absl::IsAlreadyExists(s)) {
        return absl::FailedPreconditionError(
            absl::StrCat("creating cgroup v2 hierarchy: ", s.message()));
      }
    }
    if (enable.empty()) continue;
    std::string subtree = level + "/cgroup.subtree_control";
    std::vector<std::string> tokens;
    for (const std::string& name : enable) tokens.push_back("+" + name);
    if (env->WriteFile(subtree, absl::StrJoin(tokens, " ")).ok()) continue;
    // One at a time, to learn which controller the kernel refuses.
    std::vector<std::string> enabled;
    for (const std::string& name : enable) {
      absl::Status s = env->WriteFile(subtree, "+" + name);
      if (s.ok()) {
        enabled.push_back(name);
      } else {
        missing.push_back(
            absl::StrCat("cgroup v2 controller ", name, " could not be enabled: ", s.message()));
      }
    }
    enable = std::move(enabled);
  }
  std::vector<std::pair<std::string, std::string>> parents;
  for (absl::string_view controller : kManaged) {
    absl::string_view name = V2Name(controller);
    bool usable = controller == "cpuacct" ||
                  (!name.empty() && std::find(enable.begin(), enable.end(), name) != enable.end());
    if (usable) parents.emplace_back(std::string(controller), level);
  }
  return std::unique_ptr<CgroupsHandler>(
      new CgroupsV2Handler(env, std::move(parents), std::move(missing)));
}

}  // namespace

namespace internal {

std::vector<CgroupMount> ParseCgroupMounts(absl::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (absl::string_view line : absl::StrSplit(mountinfo, '\n', absl::SkipEmpty())) {
    // "36 35 98:0 /root /mnt1 rw,noatime master:1 - ext3 /dev/root rw,errors=continue":
    // optional fields end at "-", then fstype, source and super options.
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 1 >= fields.size()) continue;
    absl::string_view fstype = fields[dash + 1];
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    CgroupMount mount;
    mount.v2 = fstype == "cgroup2";
    absl::string_view escaped = fields[4];
    for (size_t i = 0; i < escaped.size(); ++i) {
      if (escaped[i] == '\\' && i + 3 < escaped.size() &&
          std::all_of(escaped.begin() + i + 1, escaped.begin() + i + 4,
                      [](char c) { return c >= '0' && c <= '7'; })) {
        mount.mount_point.push_back(static_cast<char>(
            (escaped[i + 1] - '0') * 64 + (escaped[i + 2] - '0') * 8 + (escaped[i + 3] - '0')));
        i += 3;
      } else {
        mount.mount_point.push_back(escaped[i]);
      }
    }
    if (!mount.v2 && dash + 3 < fields.size()) {
      for (absl::string_view option : absl::StrSplit(fields[dash + 3], ',')) {
        if (option == "rw" || option == "ro" || option.empty() || absl::StrContains(option, '=')) {
          continue;
        }
        mount.controllers.emplace_back(option);
      }
    }
    mounts.push_back(std::move(mount));
  }
  return mounts;
}

int64_t CpuSharesToWeight(int64_t shares) {
  shares = std::clamp<int64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

}  // namespace internal

absl::StatusOr<std::vector<std::string>> CgroupsHandler::ListContainers() {
  return absl::UnimplementedError("listing container cgroups: not supported by this handler");
}

absl::StatusOr<std::vector<pid_t>> CgroupsHandler::Processes(absl::string_view container_id) {
  return absl::UnimplementedError(
      absl::StrCat("listing processes of cgroup ", container_id, ": not supported"));
}

absl::StatusOr<int64_t> CgroupsHandler::PidsLimitHits(absl::string_view) { return 0; }

absl::Status CgroupsHandler::EnableDeviceControl() {
  return absl::UnimplementedError("device isolation: not supported by this cgroups handler");
}

absl::Status CgroupsHandler::UpdateLimits(absl::string_view container_id, const CgroupLimits&) {
  return absl::UnimplementedError(
      absl::StrCat("updating cgroup limits of container ", container_id, ": not supported"));
}

absl::Status DestroyCgroupDirs(const std::vector<std::string>& dirs, OsEnv* env) {
  for (const std::string& dir : dirs) {
    if (dir.empty() || dir.front() != '/') {
      return absl::InvalidArgumentError(absl::StrCat("cgroup '", dir, "' is not absolute"));
    }
  }
  return DestroyDirs(
      dirs, env,
      [env](const std::string& dir, const std::vector<pid_t>& pids) {
        KillGroupTasks(env, dir, pids);
      },
      absl::StrCat("destroying cgroups ", absl::StrJoin(dirs, ", ")));
}

absl::Status ValidateContainerId(absl::string_view id) {
  bool valid = !id.empty() && id.size() <= 255 && id.front() != '.';
  for (char c : id) {
    valid &= absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  }
  if (!valid) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid container id '", id, "': want [A-Za-z0-9_.-]+, not starting with '.'"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<CgroupsHandler>> DetectCgroups(absl::string_view root_arg,
                                                              absl::string_view hierarchy,
                                                              OsEnv* env) {
  if (absl::Status s = ValidateHierarchy(hierarchy); !s.ok()) return s;
  std::string root(root_arg);
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root.empty() || root.front() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("cgroup root '", root_arg, "' is not an absolute path"));
  }

  bool v2 = false;
  std::vector<internal::CgroupMount> v1_mounts;
  absl::StatusOr<std::string> mountinfo = env->ReadFile("/proc/self/mountinfo");
  if (mountinfo.ok()) {
    for (internal::CgroupMount& mount : internal::ParseCgroupMounts(*mountinfo)) {
      if (mount.v2 && mount.mount_point == root) v2 = true;
      if (!mount.v2 && Dirname(mount.mount_point) == root) {
        // A later mount on the same point hides the earlier one.
        std::erase_if(v1_mounts, [&](const internal::CgroupMount& m) {
          return m.mount_point == mount.mount_point;
        });
        v1_mounts.push_back(std::move(mount));
      }
    }
  }
  if (!v2 && v1_mounts.empty()) {
    // Not in mountinfo (e.g. a prepared directory tree): look at the directory itself.
    if (env->PathExists(root + "/cgroup.controllers")) {
      v2 = true;
    } else if (absl::StatusOr<std::vector<std::string>> names = env->ListDir(root); names.ok()) {
      for (const std::string& name : *names) {
        std::string dir = absl::StrCat(root, "/", name);
        if (!env->PathExists(dir + "/cgroup.procs") ||
            env->PathExists(dir + "/cgroup.controllers")) {
          continue;
        }
        internal::CgroupMount mount;
        mount.mount_point = dir;
        mount.controllers = absl::StrSplit(name, ',');
        v1_mounts.push_back(std::move(mount));
      }
    }
  }

  absl::StatusOr<std::unique_ptr<CgroupsHandler>> handler;
  if (v2) {
    handler = BuildV2(env, root, hierarchy);
  } else if (!v1_mounts.empty()) {
    handler = BuildV1(env, root, hierarchy, v1_mounts);
  } else {
    return absl::FailedPreconditionError(
        absl::StrCat("no cgroup filesystem at ", root,
                     ": /proc/self/mountinfo shows no cgroup mount there and it holds neither "
                     "cgroup.controllers (v2) nor controller directories (v1)"));
  }
  if (!handler.ok()) return handler.status();
  if (!(*handler)->HasController("cpu") && !(*handler)->HasController("memory")) {
    return absl::FailedPreconditionError(
        absl::StrCat("no usable cgroup controller under ", root, " (cgroup ", (*handler)->version(),
                     "): ", absl::StrJoin((*handler)->missing_features(), "; ")));
  }
  return handler;
}

}  // namespace weft::nm
