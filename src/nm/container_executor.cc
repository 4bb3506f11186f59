// Copyright Weft authors. Runs containers as isolated process groups in their own cgroups.
#include "nm/container_executor.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/log.h"
#include "nm/spawn_child.h"

namespace weft::nm {
namespace {

absl::Status InContext(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context, ": ", status.message()));
}

// "64 MiB", "1 GiB", "1000 bytes".
std::string FormatBytes(int64_t bytes) {
  constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (bytes > 0 && bytes % kGiB == 0) return absl::StrCat(bytes / kGiB, " GiB");
  if (bytes > 0 && bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes > 0 && bytes % kKiB == 0) return absl::StrCat(bytes / kKiB, " KiB");
  return absl::StrCat(bytes, " bytes");
}

// "SIGKILL", or "signal 64" for one without a name.
std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? absl::StrCat("SIG", abbrev) : absl::StrCat("signal ", sig);
}

std::string DescribeEnd(const ProcessStatus& status) {
  if (status.signaled) return absl::StrCat("killed by ", SignalName(status.signal));
  return absl::StrCat("exited with code ", status.exit_code);
}

bool IsAbsolute(absl::string_view path) { return !path.empty() && path.front() == '/'; }

// "312 MB", "0.5 MB", "1.2 MB" (MB = 2^20 bytes, as the --*-mb flags count).
std::string FormatMb(int64_t bytes) {
  constexpr int64_t kMb = int64_t{1} << 20;
  const int64_t tenths = bytes / kMb * 10 + (bytes % kMb) * 10 / kMb;
  if (tenths % 10 == 0 || tenths >= 1000) return absl::StrCat(tenths / 10, " MB");
  return absl::StrCat(tenths / 10, ".", tenths % 10, " MB");
}

// The processes below `root` (not `root` itself), from /proc; empty when /proc is unreadable.
std::vector<pid_t> Descendants(OsEnv* env, pid_t root) {
  absl::StatusOr<std::vector<std::string>> names = env->ListDir("/proc");
  if (!names.ok()) return {};
  absl::flat_hash_map<pid_t, std::vector<pid_t>> children;
  for (const std::string& name : *names) {
    int pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid <= 0) continue;
    absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env, pid);
    if (info.ok() && !info->Ended()) children[info->parent].push_back(pid);
  }
  std::vector<pid_t> found;
  std::vector<pid_t> pending = {root};
  while (!pending.empty() && found.size() < names->size()) {
    const pid_t parent = pending.back();
    pending.pop_back();
    auto it = children.find(parent);
    if (it == children.end()) continue;
    for (pid_t child : it->second) {
      found.push_back(child);
      pending.push_back(child);
    }
  }
  return found;
}

absl::Status ValidateSpec(const LaunchSpec& spec) {
  if (absl::Status s = ValidateContainerId(spec.container_id); !s.ok()) return s;
  if (spec.argv.empty() || spec.argv[0].empty()) {
    return absl::InvalidArgumentError("no program to run (argv is empty)");
  }
  if (!IsAbsolute(spec.work_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("work_dir '", spec.work_dir, "' is not an absolute path"));
  }
  if (!IsAbsolute(spec.log_dir)) {
    return absl::InvalidArgumentError(
        absl::StrCat("log_dir '", spec.log_dir, "' is not an absolute path"));
  }
  for (const auto& [name, value] : spec.tokens) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
          return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
        }))
      return absl::InvalidArgumentError(
          absl::StrCat("token name '", name, "' is not [a-z0-9_]+"));
  }
  for (const auto& [name, value] : spec.env) {
    if (name.empty() || absl::StrContains(name, '=') || absl::StrContains(name, '\0') ||
        absl::StrContains(value, '\0')) {
      return absl::InvalidArgumentError(absl::StrCat("invalid environment variable '", name, "'"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ShellCommand(absl::string_view command) {
  return {"/bin/bash", "-c", std::string(command)};
}

ContainerExecutor::ContainerExecutor(CgroupsHandler* cgroups, OsEnv* env)
    : cgroups_(cgroups), env_(env) {}

ContainerExecutor::~ContainerExecutor() {
  for (auto& [id, container] : containers_) {
    if (!container.running) continue;
    KillForCleanup(env_, -container.pid, SIGKILL);
    // A monitor ends once its process has; an adopted one is not ours to wait for (its
    // cgroups' destruction kills it).
    if (!container.adopted)
      (void)env_->Wait(container.monitor_pid > 0 ? container.monitor_pid : container.pid);
    if (cgroups_ != nullptr)
      log::WarnIfError(cgroups_->Destroy(id), "container_cgroups_not_removed", {{"container", id}});
  }
}

absl::StatusOr<pid_t> ContainerExecutor::Launch(const LaunchSpec& spec) {
  const std::string context = absl::StrCat("launching ", spec.container_id);
  if (absl::Status s = ValidateSpec(spec); !s.ok()) return InContext(s, context);
  if (auto it = containers_.find(spec.container_id); it != containers_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat(context, ": the container already exists (",
                     it->second.running ? "running" : "exited, not cleaned up", ")"));
  }
  if (absl::Status s = env_->CreateDirs(spec.work_dir); !s.ok()) return InContext(s, context);
  if (absl::Status s = env_->CreateDirs(spec.log_dir); !s.ok()) return InContext(s, context);
  std::map<std::string, std::string> token_env;
  if (absl::Status s = PrepareDirs(spec, &token_env); !s.ok()) return InContext(s, context);
  std::map<std::string, std::string> env = spec.env;
  env.emplace("PATH", kDefaultContainerPath);
  if (!spec.user.empty()) env["USER"] = spec.user;
  env["CONTAINER_ID"] = spec.container_id;
  env["PWD"] = spec.work_dir;
  env["LOG_DIRS"] = spec.log_dir;
  for (const auto& [name, value] : token_env) env[name] = value;

  // The state directory exists before the cgroups do: a group of the hierarchy without one is
  // not this executor's (NodeManager recovery leaves such groups to the NM they belong to).
  const bool monitored = !spec.state_dir.empty();
  if (monitored) {
    if (!IsAbsolute(spec.state_dir)) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, ": state_dir '", spec.state_dir, "' is not an absolute path"));
    }
    // Only this executor's user may write it: a container must not forge its exit status.
    if (absl::Status s = env_->RemoveTree(spec.state_dir); !s.ok()) return InContext(s, context);
    if (absl::Status s = env_->CreateDirs(spec.state_dir); !s.ok()) return InContext(s, context);
    if (absl::Status s = env_->SetOwner(spec.state_dir, geteuid(), getegid(), 0700); !s.ok())
      return InContext(s, context);
  }
  if (cgroups_ != nullptr) {
    if (absl::Status s = cgroups_->Create(spec.container_id, spec.limits); !s.ok()) {
      return InContext(s, context);
    }
  }

  SpawnOptions options;
  options.argv = spec.argv;
  for (const auto& [name, value] : env) options.env.push_back(absl::StrCat(name, "=", value));
  options.work_dir = spec.work_dir;
  options.stdout_path = absl::StrCat(spec.log_dir, "/stdout");
  options.stderr_path = absl::StrCat(spec.log_dir, "/stderr");
  options.run_as = spec.run_as;
  if (monitored) options.log_limit_bytes = std::max<int64_t>(spec.log_limit_bytes, 0);
  options.deny_user_namespaces = spec.deny_user_namespaces;

  auto join_cgroups = [&](pid_t child) {
    return cgroups_ != nullptr ? cgroups_->AddProcess(spec.container_id, child) : absl::OkStatus();
  };
  MonitoredProcess started;
  if (monitored) {
    absl::StatusOr<MonitoredProcess> spawned =
        env_->SpawnMonitored(options, spec.state_dir, [&](pid_t monitor) {
          if (absl::Status s = join_cgroups(monitor); !s.ok()) return s;
          return spec.on_monitor_started ? spec.on_monitor_started(monitor) : absl::OkStatus();
        });
    if (!spawned.ok()) {
      if (cgroups_ != nullptr)
        log::WarnIfError(cgroups_->Destroy(spec.container_id), "container_cgroups_not_removed",
                         {{"container", spec.container_id}});
      return InContext(spawned.status(), context);
    }
    started = *spawned;
  } else {
    absl::StatusOr<pid_t> pid = env_->Spawn(options, join_cgroups);
    if (!pid.ok()) {
      if (cgroups_ != nullptr)
        log::WarnIfError(cgroups_->Destroy(spec.container_id), "container_cgroups_not_removed",
                         {{"container", spec.container_id}});
      return InContext(pid.status(), context);
    }
    started.pid = *pid;
  }
  Container& container = containers_[spec.container_id];
  container.pid = started.pid;
  container.monitor_pid = started.monitor_pid;
  container.state_dir = spec.state_dir;
  container.work_dir = spec.work_dir;
  container.memory_limit_bytes = spec.limits.memory_bytes;
  container.disk_limit_bytes = std::max<int64_t>(spec.disk_limit_bytes, 0);
  container.log_dir = spec.log_dir;
  container.pids_max = spec.limits.pids_max;
  container.log_limit_bytes =
      monitored && spec.log_limit_bytes > 0
          ? std::max<int64_t>(spec.log_limit_bytes, spawn_internal::kMinLogLimitBytes)
          : 0;
  container.next_disk_check_ms = env_->NowMs() + kDiskCheckIntervalMs;
  return started.pid;
}

absl::Status ContainerExecutor::Adopt(const AdoptSpec& spec) {
  const std::string context = absl::StrCat("adopting ", spec.container_id);
  if (absl::Status s = ValidateContainerId(spec.container_id); !s.ok()) {
    return InContext(s, context);
  }
  if (spec.pid <= 0 || spec.monitor_pid <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": bad pids (process ", spec.pid,
                                                   ", monitor ", spec.monitor_pid, ")"));
  }
  if (!IsAbsolute(spec.state_dir) || !IsAbsolute(spec.work_dir)) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": state_dir '", spec.state_dir,
                                                   "' and work_dir '", spec.work_dir,
                                                   "' must be absolute paths"));
  }
  if (containers_.contains(spec.container_id)) {
    return absl::AlreadyExistsError(absl::StrCat(context, ": the container already exists"));
  }
  Container& container = containers_[spec.container_id];
  container.pid = spec.pid;
  container.monitor_pid = spec.monitor_pid;
  container.adopted = true;
  container.monitor_start_time = spec.monitor_start_time;
  container.start_time = spec.start_time;
  container.state_dir = spec.state_dir;
  container.work_dir = spec.work_dir;
  container.memory_limit_bytes = spec.memory_limit_bytes;
  container.disk_limit_bytes = std::max<int64_t>(spec.disk_limit_bytes, 0);
  container.log_dir = spec.log_dir;
  container.pids_max = spec.pids_max;
  container.log_limit_bytes =
      spec.log_limit_bytes > 0 ? std::max<int64_t>(spec.log_limit_bytes, spawn_internal::kMinLogLimitBytes) : 0;
  container.next_disk_check_ms = env_->NowMs();  // at the first Reap: it ran unwatched
  return absl::OkStatus();
}

absl::StatusOr<pid_t> ContainerExecutor::MonitorPid(absl::string_view container_id) const {
  auto it = containers_.find(container_id);
  if (it == containers_.end()) {
    return absl::NotFoundError(absl::StrCat("container ", container_id, " is unknown"));
  }
  return it->second.monitor_pid;
}

absl::Status ContainerExecutor::PrepareDirs(const LaunchSpec& spec,
                                           std::map<std::string, std::string>* token_env) {
  std::vector<std::string> owned = {spec.work_dir, spec.log_dir};
  if (!spec.app_dir.empty()) owned.push_back(spec.app_dir);
  if (!spec.tokens.empty()) {
    const std::string dir = absl::StrCat(spec.work_dir, "/.tokens");
    if (absl::Status s = env_->CreateDirs(dir); !s.ok()) return s;
    owned.push_back(dir);
    if (!spec.run_as.has_value()) {
      if (absl::Status s = env_->SetOwner(dir, getuid(), getgid(), 0700); !s.ok()) return s;
    }
  }
  if (spec.run_as.has_value()) {
    for (const std::string& dir : owned) {
      if (absl::Status s = env_->SetOwner(dir, spec.run_as->uid, spec.run_as->gid, 0700);
          !s.ok())
        return s;
    }
  }
  for (const auto& [name, value] : spec.tokens) {
    const std::string path = absl::StrCat(spec.work_dir, "/.tokens/", name);
    if (absl::Status s = env_->WriteFile(path, value); !s.ok()) return s;
    const uid_t uid = spec.run_as.has_value() ? spec.run_as->uid : getuid();
    const gid_t gid = spec.run_as.has_value() ? spec.run_as->gid : getgid();
    if (absl::Status s = env_->SetOwner(path, uid, gid, 0600); !s.ok()) return s;
    (*token_env)[absl::StrCat("WEFT_TOKEN_FILE_", absl::AsciiStrToUpper(name))] = path;
  }
  return absl::OkStatus();
}

absl::Status ContainerExecutor::Signal(absl::string_view container_id, int sig) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.running) {
    return absl::NotFoundError(
        absl::StrCat("signalling ", container_id, ": no such running container"));
  }
  return InContext(env_->Kill(-it->second.pid, sig),
                     absl::StrCat("signalling ", container_id, " with ", SignalName(sig)));
}

void ContainerExecutor::Stop(absl::string_view container_id, int64_t grace_ms) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.running) return;
  Container& container = it->second;
  if (container.sigkill_sent) return;
  const int64_t now = env_->NowMs();
  if (grace_ms <= 0) {
    SignalAll(container, SIGKILL);
    container.sigkill_sent = true;
    container.grace_ms = 0;
    return;
  }
  if (!container.sigterm_sent) {
    SignalAll(container, SIGTERM);  // NotFound: it is exiting; Reap will tell
    container.sigterm_sent = true;
  }
  if (container.kill_deadline_ms < 0 || now + grace_ms < container.kill_deadline_ms) {
    container.kill_deadline_ms = now + grace_ms;
    container.grace_ms = grace_ms;
  }
}

std::vector<ContainerExit> ContainerExecutor::Reap() {
  const int64_t now = env_->NowMs();
  std::vector<std::string> ids;
  for (auto& [id, container] : containers_) {
    if (!container.running) continue;
    ids.push_back(id);
    if (!container.sigkill_sent && container.kill_deadline_ms >= 0 &&
        now >= container.kill_deadline_ms) {
      SignalAll(container, SIGKILL);
      container.sigkill_sent = true;
    }
    const bool log_dir_limited = container.log_limit_bytes > 0 && !container.log_dir.empty();
    if (!container.sigkill_sent && (container.disk_limit_bytes > 0 || log_dir_limited) &&
        now >= container.next_disk_check_ms) {
      CheckDisk(container, now);
    }
  }
  std::sort(ids.begin(), ids.end());
  std::vector<ContainerExit> exits;
  for (const std::string& id : ids) {
    Container& container = containers_.find(id)->second;
    if (container.monitor_pid > 0) {
      if (std::optional<ContainerExit> exit = PollMonitored(id, container); exit.has_value()) {
        exits.push_back(*std::move(exit));
      }
      continue;
    }
    absl::StatusOr<std::optional<ProcessStatus>> status = env_->TryWait(container.pid);
    if (status.ok() && !status->has_value()) continue;
    if (status.ok()) {
      exits.push_back(Finish(id, container, **status));
    } else {
      // Someone else reaped our child (ECHILD): the exit status is lost.
      exits.push_back(FinishLost(id, container, status.status().message()));
    }
  }
  return exits;
}

void ContainerExecutor::SignalAll(const Container& container, int sig) {
  // The group first: the usual case, one call. An adopted container's group id may have been
  // reused only once its monitor is gone, and then it has no descendants either.
  KillForCleanup(env_, -container.pid, sig);
  const pid_t root = container.monitor_pid > 0 ? container.monitor_pid : container.pid;
  for (pid_t pid : Descendants(env_, root)) KillForCleanup(env_, pid, sig);
}

void ContainerExecutor::CheckDisk(Container& container, int64_t now) {
  container.next_disk_check_ms = now + kDiskCheckIntervalMs;
  // The log dir belongs to the container's user, who could write there past the monitor (to
  // the log files themselves, or other files): it may hold the two capped logs and a little.
  if (container.log_limit_bytes > 0 && !container.log_dir.empty()) {
    const int64_t allowed = 2 * container.log_limit_bytes + kLogDirSlackBytes;
    absl::StatusOr<DiskUsage> logs = env_->MeasureDiskUsage(container.log_dir, 1000);
    if (logs.ok() && (logs->truncated || logs->bytes > allowed)) {
      container.limit_kill = absl::StrCat(
          "Container killed: its log dir used ", FormatMb(logs->bytes), ", over twice the log "
          "limit of ", FormatMb(container.log_limit_bytes),
          " (--container-log-limit-mb): it wrote there other than through stdout and stderr");
      SignalAll(container, SIGKILL);
      container.sigkill_sent = true;
      return;
    }
  }
  if (container.disk_limit_bytes <= 0) return;
  absl::StatusOr<DiskUsage> usage =
      env_->MeasureDiskUsage(container.work_dir, kDiskCheckMaxEntries);
  if (!usage.ok()) return;  // e.g. not created yet, or removed: looked at again next time
  if (usage->truncated) {
    container.limit_kill = absl::StrCat(
        "Container killed: its work dir holds more than ", kDiskCheckMaxEntries,
        " files and directories, more than the disk limit of ",
        FormatMb(container.disk_limit_bytes), " (--container-disk-limit-mb) lets it count");
  } else if (usage->bytes > container.disk_limit_bytes) {
    container.limit_kill = absl::StrCat("Container killed: its work dir used ",
                                        FormatMb(usage->bytes), ", over the disk limit of ",
                                        FormatMb(container.disk_limit_bytes),
                                        " (--container-disk-limit-mb)");
  } else {
    return;
  }
  SignalAll(container, SIGKILL);
  container.sigkill_sent = true;
}

std::optional<absl::StatusOr<ProcessStatus>> ContainerExecutor::ReadExitFile(
    const Container& container) {
  const std::string path = absl::StrCat(container.state_dir, "/", kMonitorExitFile);
  absl::StatusOr<std::string> text = env_->ReadFile(path);
  if (!text.ok()) {
    if (absl::IsNotFound(text.status())) return std::nullopt;
    return text.status();
  }
  absl::StatusOr<ProcessStatus> status = ParseExitFile(*text);
  if (!status.ok()) return InContext(status.status(), path);
  return status;
}

std::optional<ContainerExit> ContainerExecutor::PollMonitored(const std::string& id,
                                                              Container& container) {
  std::string monitor_end;
  if (!container.adopted) {
    absl::StatusOr<std::optional<ProcessStatus>> monitor = env_->TryWait(container.monitor_pid);
    if (monitor.ok() && !monitor->has_value()) return std::nullopt;
    monitor_end = monitor.ok() ? DescribeEnd(**monitor) : std::string(monitor.status().message());
  } else {
    // Not our child: the exit file first (written before the monitor exits), then whether the
    // monitor still lives (then no file yet means it still runs), then the file again.
    if (std::optional<absl::StatusOr<ProcessStatus>> file = ReadExitFile(container);
        file.has_value() && file->ok()) {
      return Finish(id, container, **file);
    }
    absl::StatusOr<ProcessInfo> info = ReadProcessInfo(env_, container.monitor_pid);
    const bool gone =
        absl::IsNotFound(info.status()) ||
        (info.ok() && (info->Ended() || info->start_time != container.monitor_start_time));
    if (!gone) return std::nullopt;  // alive, or unreadable: looked at again next time
    monitor_end = info.ok() && !info->Ended() ? "its pid now names another process" : "ended";
  }
  std::optional<absl::StatusOr<ProcessStatus>> file = ReadExitFile(container);
  if (file.has_value() && file->ok()) return Finish(id, container, **file);
  return FinishLost(
      id, container,
      absl::StrCat("its monitor (pid ", container.monitor_pid, ") ", monitor_end,
                   " without recording it",
                   file.has_value() ? absl::StrCat(" (", file->status().message(), ")") : ""));
}

ContainerExit ContainerExecutor::FinishLost(const std::string& id, Container& container,
                                            absl::string_view why) {
  ContainerExit exit = Finish(id, container, ProcessStatus{});
  exit.exit_code = -1;
  exit.status_lost = true;
  exit.diagnostics = absl::StrCat("Container exit status unknown: ", why,
                                  exit.diagnostics.empty() ? "" : "; ", exit.diagnostics);
  return exit;
}

ContainerExit ContainerExecutor::Finish(const std::string& id, Container& container,
                                        const ProcessStatus& status) {
  container.running = false;
  ContainerExit exit;
  exit.container_id = id;
  exit.killed_by_signal = status.signaled;
  exit.signal = status.signaled ? status.signal : 0;
  exit.exit_code = status.signaled ? 128 + status.signal : status.exit_code;

  // Whatever the main process left behind in its group goes too (NotFound: nothing left). An
  // adopted container's group is killed through its cgroups, or, without them, only while its
  // leader is known to be the same process (the group id cannot have been reused).
  bool kill_group = !container.adopted;
  if (container.adopted && cgroups_ == nullptr && container.start_time != 0) {
    absl::StatusOr<ProcessInfo> leader = ReadProcessInfo(env_, container.pid);
    kill_group = leader.ok() && leader->start_time == container.start_time;
  }
  if (kill_group) KillForCleanup(env_, -container.pid, SIGKILL);
  std::vector<std::string> problems;
  // Limits it hit without being ended by them.
  std::vector<std::string> notes;
  if (cgroups_ != nullptr) {
    absl::StatusOr<bool> oom = cgroups_->OomKilled(id);
    if (oom.ok()) {
      exit.oom_killed = *oom;
    } else {
      problems.push_back(absl::StrCat("reading its OOM state failed: ", oom.status().message()));
    }
    // Its totals, before the groups go (what Destroy still kills adds nothing of note). Not
    // a problem for its diagnostics when unreadable (e.g. the groups of an adopted container
    // are gone already, which the OOM state's failure says): the usage is then not measured.
    if (absl::StatusOr<CgroupUsage> usage = cgroups_->Usage(id); usage.ok()) exit.usage = *usage;
    absl::StatusOr<int64_t> refused = cgroups_->PidsLimitHits(id);
    if (refused.ok() && *refused > 0) {
      notes.push_back(absl::StrCat("pids limit of ", container.pids_max, " reached: ", *refused,
                                   *refused == 1 ? " fork" : " forks",
                                   " refused (--container-pids-per-vcore, --container-pids-max)"));
    }
    if (absl::Status s = cgroups_->Destroy(id); !s.ok()) {
      problems.push_back(absl::StrCat("removing its cgroup failed: ", s.message()));
    }
  }

  if (!container.state_dir.empty()) {
    absl::StatusOr<std::string> text =
        env_->ReadFile(absl::StrCat(container.state_dir, "/", kMonitorLogsFile));
    absl::StatusOr<LogsDropped> dropped =
        text.ok() ? ParseLogsDroppedFile(*text) : absl::StatusOr<LogsDropped>(text.status());
    if (dropped.ok()) {
      const std::pair<const char*, int64_t> streams[] = {{"stdout", dropped->stdout_bytes},
                                                          {"stderr", dropped->stderr_bytes}};
      for (const auto& [name, bytes] : streams) {
        if (bytes <= 0) continue;
        notes.push_back(absl::StrCat(name, " truncated: its oldest ", FormatMb(bytes),
                                     " dropped, over the log limit of ",
                                     FormatMb(container.log_limit_bytes),
                                     " (--container-log-limit-mb)"));
      }
    }
  }

  const std::string code = absl::StrCat("exit code ", exit.exit_code);
  if (!container.limit_kill.empty()) {
    exit.disk_limit_exceeded = true;
    exit.diagnostics = absl::StrCat(container.limit_kill, " (", code, ")");
  } else if (exit.oom_killed) {
    exit.diagnostics =
        container.memory_limit_bytes > 0
            ? absl::StrCat("Container killed: exceeded its memory limit of ",
                           FormatBytes(container.memory_limit_bytes), " (", code, ")")
            : absl::StrCat("Container killed: out of memory (", code, ")");
  } else if (container.sigkill_sent && status.signaled && status.signal == SIGKILL) {
    exit.diagnostics = container.grace_ms > 0
                           ? absl::StrCat("Container stopped: killed by SIGKILL after the ",
                                          container.grace_ms, " ms grace period (", code, ")")
                           : absl::StrCat("Container stopped: killed by SIGKILL (", code, ")");
  } else if (container.sigterm_sent || container.sigkill_sent) {
    exit.diagnostics = absl::StrCat("Container stopped: ", DescribeEnd(status), " (", code, ")");
  } else if (status.signaled) {
    exit.diagnostics =
        absl::StrCat("Container killed by ", SignalName(status.signal), " (", code, ")");
  } else if (status.exit_code != 0) {
    exit.diagnostics = absl::StrCat("Container exited with code ", status.exit_code);
  }
  for (const std::string& note : notes) {
    absl::StrAppend(&exit.diagnostics, exit.diagnostics.empty() ? "" : "; ", note);
  }
  for (const std::string& problem : problems) {
    absl::StrAppend(&exit.diagnostics, exit.diagnostics.empty() ? "" : "; ", problem);
  }
  return exit;
}

int64_t ContainerExecutor::NextDeadlineMs() const {
  int64_t next = -1;
  for (const auto& [id, container] : containers_) {
    if (!container.running || container.sigkill_sent || container.kill_deadline_ms < 0) continue;
    if (next < 0 || container.kill_deadline_ms < next) next = container.kill_deadline_ms;
  }
  return next;
}

absl::Status ContainerExecutor::UpdateLimits(absl::string_view container_id,
                                             const CgroupLimits& limits) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.running) {
    return absl::NotFoundError(absl::StrCat("container ", container_id, " is not running"));
  }
  if (cgroups_ != nullptr) {
    if (absl::Status s = cgroups_->UpdateLimits(container_id, limits); !s.ok()) return s;
  }
  if (limits.memory_bytes > 0) it->second.memory_limit_bytes = limits.memory_bytes;
  if (limits.pids_max > 0) it->second.pids_max = limits.pids_max;
  return absl::OkStatus();
}

bool ContainerExecutor::IsRunning(absl::string_view container_id) const {
  auto it = containers_.find(container_id);
  return it != containers_.end() && it->second.running;
}

absl::Status ContainerExecutor::Cleanup(absl::string_view container_id) {
  auto it = containers_.find(container_id);
  if (it == containers_.end()) {
    return absl::NotFoundError(absl::StrCat("cleaning up ", container_id, ": unknown container"));
  }
  if (it->second.running) {
    return absl::FailedPreconditionError(
        absl::StrCat("cleaning up ", container_id, ": the container is still running"));
  }
  if (absl::Status s = env_->RemoveTree(it->second.work_dir); !s.ok()) {
    return InContext(s, absl::StrCat("cleaning up ", container_id));
  }
  containers_.erase(it);
  return absl::OkStatus();
}

}  // namespace weft::nm
