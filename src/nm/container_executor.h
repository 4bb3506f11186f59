// Copyright Weft authors. Runs containers as isolated process groups in their own cgroups.
#ifndef WEFT_NM_CONTAINER_EXECUTOR_H_
#define WEFT_NM_CONTAINER_EXECUTOR_H_

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/cgroups.h"
#include "nm/os_env.h"

namespace weft::nm {

// What to run for one container.
struct LaunchSpec {
  std::string container_id;  // [A-Za-z0-9_.-]+, e.g. "container_1700000000000_0001_01_000002"
  // The program and its arguments; argv[0] is a path or a name looked up in env's PATH. For a
  // shell command line use ShellCommand("...").
  std::vector<std::string> argv;
  // The container's environment. Nothing of the NM's own environment is inherited; PATH
  // defaults to kDefaultContainerPath. The executor also sets CONTAINER_ID, PWD (= work_dir)
  // and LOG_DIRS (= log_dir), overriding entries of the same name, and USER when `user` is set.
  std::map<std::string, std::string> env;
  std::string work_dir;  // absolute; created if missing; the process starts there
  std::string log_dir;   // absolute; created if missing; gets the files "stdout" and "stderr"
  CgroupLimits limits;
  std::string user;  // the app's user: USER in the environment
  // When set, the process runs as this user (os_env.h), and work_dir, log_dir and app_dir are
  // created owned by it with mode 0700, so that no other user reads them.
  std::optional<SpawnOptions::RunAs> run_as;
  // The app's directory (work_dir's parent), created and owned like work_dir; "" = none.
  std::string app_dir;
  // Credentials by name ([a-z0-9_]+): each is written to <work_dir>/.tokens/<name> (mode
  // 0600, in a 0700 directory, owned by run_as when set) and WEFT_TOKEN_FILE_<NAME> names it.
  std::map<std::string, std::string> tokens;
  // Absolute; "" = none. When set, the process runs under a monitor (OsEnv::SpawnMonitored)
  // that writes its pid and, once it has ended, its exit status into this directory (created
  // if missing, mode 0700, owned by the executor's user): a later executor (a restarted NM)
  // can Adopt it. The monitor joins the container's cgroups before it forks the process.
  // The directory is made before the container's cgroups are, so that a group in the
  // hierarchy with no state directory is known not to be this executor's.
  std::string state_dir;
  // Runs with the monitor's pid once the monitor exists (and is in the cgroups), before the
  // process is forked: e.g. to record the monitor durably. An error fails the launch (nothing
  // is left running). Only with state_dir.
  std::function<absl::Status(pid_t monitor_pid)> on_monitor_started;
  // Most bytes work_dir may use on disk (allocated blocks, counted by a walk every
  // kDiskCheckIntervalMs, at most kDiskCheckMaxEntries entries); above it, or with more
  // entries than that, the container is killed (SIGKILL) and its diagnostics say why. 0 = no
  // limit.
  int64_t disk_limit_bytes = 0;
  // Bytes of stdout and of stderr each kept in log_dir (SpawnOptions::log_limit_bytes): the
  // newest output, after a note of what was dropped. Only with state_dir (the monitor enforces
  // it). 0 = no limit. Reap also measures log_dir with the disk check: a container whose log
  // dir holds more than twice this plus kLogDirSlackBytes (it wrote there past the monitor)
  // is killed.
  int64_t log_limit_bytes = 0;
  // The container's processes may not create user namespaces (a seccomp filter; see
  // SpawnOptions::deny_user_namespaces).
  bool deny_user_namespaces = false;
};

// A container whose processes a previous executor (a previous NM) launched with a state_dir,
// for ContainerExecutor::Adopt.
struct AdoptSpec {
  std::string container_id;
  pid_t pid = 0;          // the container's main process, leader of its process group
  pid_t monitor_pid = 0;  // its monitor
  // ProcessInfo::start_time of the monitor when it was launched: a process with that pid and
  // another start time is someone else (the pid was reused).
  uint64_t monitor_start_time = 0;
  // ProcessInfo::start_time of the main process (0: unknown). Without cgroups, what is left of
  // its process group is killed at the end only when the main process is still this one.
  uint64_t start_time = 0;
  std::string state_dir;  // where the monitor writes its exit file
  std::string work_dir;
  int64_t memory_limit_bytes = 0;  // for the OOM diagnostics
  // As in LaunchSpec: enforced from now on (disk), or for the diagnostics (pids: the cgroup
  // keeps its limit; logs: the monitor keeps enforcing what it was started with).
  int64_t disk_limit_bytes = 0;
  int64_t pids_max = 0;
  int64_t log_limit_bytes = 0;
  std::string log_dir;  // "" = its log dir is not measured
};

// How often Reap measures a container's work dir against its disk limit, ms.
inline constexpr int64_t kDiskCheckIntervalMs = 1000;
// Most entries one measurement visits; a work dir with more is over its limit.
inline constexpr int64_t kDiskCheckMaxEntries = 1'000'000;
// What a log dir may hold besides its two capped logs (notes, block rounding), bytes.
inline constexpr int64_t kLogDirSlackBytes = 1 << 20;

inline constexpr char kDefaultContainerPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// {"/bin/bash", "-c", command}.
std::vector<std::string> ShellCommand(absl::string_view command);

// How a container ended, as reported by ContainerExecutor::Reap.
struct ContainerExit {
  std::string container_id;
  // The exit status, or 128 + signal when killed by a signal; -1 when the status was lost
  // (status_lost: diagnostics say why).
  int exit_code = 0;
  // Nobody knows how the main process ended: it was reaped by someone else, or an adopted
  // container's monitor ended without recording it (e.g. it was SIGKILLed).
  bool status_lost = false;
  bool killed_by_signal = false;
  int signal = 0;  // when killed_by_signal
  // The memory cgroup's OOM killer killed a process of the container. The main process may
  // still have exited normally (a shell whose child was killed exits 137).
  bool oom_killed = false;
  // Killed by the executor for using more disk than its limits (LaunchSpec::disk_limit_bytes
  // for its work dir, log_limit_bytes for its log dir).
  bool disk_limit_exceeded = false;
  // Its cgroups' totals over its life, read after its last process ended and before the
  // groups were removed (CgroupsHandler::Usage: cpu_ns, peak_memory_bytes; rss is then about
  // 0). nullopt without cgroups or when they could not be read.
  std::optional<CgroupUsage> usage;
  // For people: why it ended, e.g. "Container killed: exceeded its memory limit of 64 MiB
  // (exit code 137)", or "Container killed: its work dir used 312 MB, over the disk limit of
  // 256 MB (--container-disk-limit-mb) (exit code 137)". Limits that were hit without ending
  // it are appended: forks refused by the pids limit, output dropped by the log limit. Empty
  // for a clean exit 0 that hit no limit. Cleanup problems are appended.
  std::string diagnostics;
};

// Launches containers and owns their processes until they are reaped.
//
// Each container runs in its own session and process group (its pid is the group id), inside
// its own cgroups when a CgroupsHandler is given: the process joins them before it execs, so
// everything it runs is accounted and limited. Its stdout and stderr go to files in log_dir.
//
// With a LaunchSpec::state_dir the process runs under a monitor (OsEnv::SpawnMonitored) in the
// same cgroups, which outlives the executor's process and records the exit status in a file:
// the executor then learns the end from that file once it has reaped the monitor, and another
// executor (after an NM restart) can Adopt the container, watch it by polling the file and
// the monitor's /proc entry, stop it and destroy its cgroups.
//
// Thread-compatible: one owner thread (the NM's container loop) makes every call. Nothing
// happens in the background: the owner calls Reap() periodically (e.g. every 100 ms, and at
// least by NextDeadlineMs()) to collect exits and to escalate Stop() to SIGKILL.
class ContainerExecutor {
 public:
  // `cgroups` may be null: containers then run without resource isolation (the NM reports
  // this in its node status). Neither pointer is owned; both must outlive the executor.
  explicit ContainerExecutor(CgroupsHandler* cgroups, OsEnv* env = OsEnv::Default());
  // SIGKILLs the process groups of the containers still running, reaps them (their monitors)
  // and destroys their cgroups. Work directories are left alone.
  ~ContainerExecutor();

  ContainerExecutor(const ContainerExecutor&) = delete;
  ContainerExecutor& operator=(const ContainerExecutor&) = delete;

  // Creates work_dir and log_dir, creates the cgroups with spec.limits, and starts the process.
  // Returns its pid once it has exec'd. On error nothing is left running and the cgroups are
  // removed (the directories may remain); the message names the container and the step, e.g.
  //   "launching container_1: exec '/no/such': No such file or directory".
  // Errors: InvalidArgument (bad spec), AlreadyExists (id known and not yet cleaned up), or
  // the failing system call's status. Blocks for the fork/exec (milliseconds).
  absl::StatusOr<pid_t> Launch(const LaunchSpec& spec);

  // Takes over a container launched with a state_dir by another executor (a previous NM):
  // from now on it is running here (Stop, Signal, Reap, Cleanup) until Reap reports its end,
  // read from the monitor's exit file. Its cgroups, when a CgroupsHandler is given, must be the
  // ones this executor's handler names. A monitor that is gone (or whose pid now names another
  // process) without an exit file makes Reap report the status as lost, after killing what is
  // left of the container. Errors: InvalidArgument (bad spec), AlreadyExists (id known).
  absl::Status Adopt(const AdoptSpec& spec);

  // The pid of the container's monitor (LaunchSpec::state_dir or Adopt), 0 when it has none.
  // NotFound for an unknown container.
  absl::StatusOr<pid_t> MonitorPid(absl::string_view container_id) const;

  // Sends `sig` to the container's whole process group. NotFound for an unknown container or
  // one that has already been reaped.
  absl::Status Signal(absl::string_view container_id, int sig);

  // Asks the container to stop: SIGTERM to its process group and to every descendant of its
  // monitor (processes that left the group: setsid, double forks) now, SIGKILL to them once
  // `grace_ms` milliseconds have passed, sent by the first Reap() at or after that time
  // (grace_ms <= 0: SIGKILL now). Whatever is left when the main process has ended, the
  // monitor kills before it records the end (spawn_child.h). A second Stop keeps the earlier
  // deadline. No-op for unknown or already reaped containers.
  void Stop(absl::string_view container_id, int64_t grace_ms);

  // Does not wait for running containers. Sends due SIGKILLs (see Stop), measures the work
  // dirs that are due against their disk limits (killing those over it), then collects every
  // container whose main process has ended: kills what remains of its process group, reads
  // the OOM state and its lifetime usage (ContainerExit::usage) and destroys its cgroups
  // (which waits for those leftovers to die, normally well under a millisecond, at most about
  // 2 s). Each exit is returned exactly once, in id order.
  std::vector<ContainerExit> Reap();

  // The OsEnv::NowMs() time by which Reap() must run to send a pending SIGKILL, or -1 when
  // none is pending.
  int64_t NextDeadlineMs() const;

  // Applies a resource update to a running container: rewrites the limits of its cgroups
  // (CgroupsHandler::UpdateLimits; nothing to rewrite without cgroups) and what the executor
  // reports against from now on (the memory limit its OOM diagnostics name, the pids limit).
  // Zero fields of `limits` leave those limits as they are. Errors: NotFound for an unknown or
  // reaped container; the handler's otherwise (ResourceExhausted: a memory decrease the kernel
  // refused), and then the executor's own record is unchanged too.
  absl::Status UpdateLimits(absl::string_view container_id, const CgroupLimits& limits);

  // True between a successful Launch and the Reap that reports the exit.
  bool IsRunning(absl::string_view container_id) const;

  // Removes the work dir of a reaped container and forgets it (its id may be launched again).
  // Log files stay. FailedPrecondition while it runs; NotFound for an unknown id.
  absl::Status Cleanup(absl::string_view container_id);

 private:
  struct Container {
    pid_t pid = 0;  // also the process group id
    pid_t monitor_pid = 0;  // 0: pid is the executor's own child, reaped directly
    bool adopted = false;   // the monitor is not the executor's child: watched through /proc
    uint64_t monitor_start_time = 0;  // when adopted
    uint64_t start_time = 0;          // when adopted: of pid (0: unknown)
    std::string state_dir;            // with a monitor
    std::string work_dir;
    int64_t memory_limit_bytes = 0;
    int64_t disk_limit_bytes = 0;
    int64_t pids_max = 0;
    int64_t log_limit_bytes = 0;
    std::string log_dir;
    int64_t next_disk_check_ms = 0;
    // Why the executor killed it for a limit ("" = it did not), e.g. "Container killed: its
    // work dir used ...".
    std::string limit_kill;
    bool running = true;
    int64_t kill_deadline_ms = -1;  // when Stop's SIGKILL is due; -1: not stopping
    int64_t grace_ms = 0;
    bool sigterm_sent = false;
    bool sigkill_sent = false;
  };

  // Creates the token files and gives run_as the container's directories (LaunchSpec);
  // `token_env` gets WEFT_TOKEN_FILE_<NAME> for each token.
  absl::Status PrepareDirs(const LaunchSpec& spec, std::map<std::string, std::string>* token_env);

  // Sends `sig` to the container's process group and to every descendant of its monitor (of
  // its main process when it has none).
  void SignalAll(const Container& container, int sig);
  // Measures the work dir of a container whose disk check is due; kills it when over its limit.
  void CheckDisk(Container& container, int64_t now);
  // Builds the report of a container whose main process ended with `status`, and releases
  // what remains of it (process group, cgroups).
  ContainerExit Finish(const std::string& id, Container& container, const ProcessStatus& status);
  // Finish for a container whose status is unknown: `why` goes into the diagnostics.
  ContainerExit FinishLost(const std::string& id, Container& container, absl::string_view why);
  // The end of a monitored container: nullopt while it runs. Reaps a launched container's
  // monitor; reads the exit file.
  std::optional<ContainerExit> PollMonitored(const std::string& id, Container& container);
  // Its monitor's exit file: nullopt when absent; an error when it does not parse.
  std::optional<absl::StatusOr<ProcessStatus>> ReadExitFile(const Container& container);

  CgroupsHandler* const cgroups_;  // may be null
  OsEnv* const env_;
  absl::flat_hash_map<std::string, Container> containers_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_CONTAINER_EXECUTOR_H_
