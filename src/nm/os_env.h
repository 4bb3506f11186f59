// Copyright Weft authors. The NodeManager's window on the operating system.
//
// Everything the container executor and the cgroups layer ask of the kernel (files, processes,
// signals, time) goes through an `OsEnv`, in the manner of leveldb's `Env`: production code uses
// `OsEnv::Default()`, tests substitute a fake or wrap the default to redirect a few calls.
#ifndef WEFT_NM_OS_ENV_H_
#define WEFT_NM_OS_ENV_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::nm {

// What `OsEnv::Spawn` runs.
struct SpawnOptions {
  // argv[0] is the program: a path (relative paths are resolved after the chdir to work_dir),
  // or a bare name looked up in the PATH given in `env` (or /usr/local/bin:/usr/bin:/bin).
  std::vector<std::string> argv;
  // The complete environment of the new process, as "NAME=value". Nothing is inherited.
  std::vector<std::string> env;
  // The process chdirs here before exec. Must exist.
  std::string work_dir;
  // Created or truncated (mode 0640) and connected to the process's fds 1 and 2. Stdin is
  // /dev/null.
  std::string stdout_path;
  std::string stderr_path;
  // When set, the process runs as this user: its supplementary groups, gid and then uid are
  // set before exec (the spawner must be root unless they are its own), so it keeps no
  // capability, and the log files are owned by it. Either way the process gets
  // PR_SET_NO_NEW_PRIVS: no setuid program or file capability can raise its privileges.
  struct RunAs {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;  // supplementary groups
  };
  std::optional<RunAs> run_as;
  // SpawnMonitored only: bytes of stdout and of stderr each kept on disk (0 = unlimited). The
  // program then writes into pipes that its monitor copies into the files, keeping the newest
  // output after a note of what was dropped (spawn_child.h, MonitorArgs::log_limit_bytes);
  // values below 256 KiB count as 256 KiB.
  int64_t log_limit_bytes = 0;
  // The process may not create user namespaces (spawn_child.h, ChildArgs::deny_user_namespaces;
  // Spawn fails if this build cannot filter them).
  bool deny_user_namespaces = false;
};

// How a process ended.
struct ProcessStatus {
  bool signaled = false;  // true: killed by `signal`; false: exited with `exit_code`
  int exit_code = 0;      // 0..255, when !signaled
  int signal = 0;         // when signaled
};

// A process started by OsEnv::SpawnMonitored: the program and the monitor that waits for it.
struct MonitoredProcess {
  pid_t monitor_pid = 0;  // the caller's child
  pid_t pid = 0;          // the program: the monitor's child, leader of its own session
};

// The files a monitor (OsEnv::SpawnMonitored) writes in its state directory, which must be
// writable by the spawner and by nobody else (a container's user must not forge its own end).
inline constexpr char kMonitorPidFile[] = "pid";         // "<program pid>\n", once it is forked
inline constexpr char kMonitorExitFile[] = "exit_code";  // FormatExitFile(), once it has ended
// Before the exit file, when the log limit dropped output: "stdout <bytes>\n" and/or
// "stderr <bytes>\n" (ParseLogsDroppedFile).
inline constexpr char kMonitorLogsFile[] = "logs_dropped";

// "exit <code>\n" or "signal <number>\n": how a monitor records its program's end.
std::string FormatExitFile(const ProcessStatus& status);
// The inverse; InvalidArgument for anything else (e.g. a truncated file).
absl::StatusOr<ProcessStatus> ParseExitFile(absl::string_view text);

// Bytes dropped from each log, as the monitor records them in kMonitorLogsFile.
struct LogsDropped {
  int64_t stdout_bytes = 0;
  int64_t stderr_bytes = 0;
};
// InvalidArgument for a line that is not "stdout N" or "stderr N".
absl::StatusOr<LogsDropped> ParseLogsDroppedFile(absl::string_view text);

// What a walk of a directory tree counted (OsEnv::DiskUsage).
struct DiskUsage {
  int64_t bytes = 0;    // allocated on disk (st_blocks * 512), each inode counted once
  int64_t entries = 0;  // files, directories, links, ... seen
  bool truncated = false;  // the walk stopped at its entry bound: bytes is a lower bound
};

// What /proc/<pid>/stat says of a process.
struct ProcessInfo {
  char state = '?';  // R, S, D, Z (zombie), X (dead), ...
  pid_t parent = 0;
  uint64_t start_time = 0;  // clock ticks after boot: with the pid, identifies the process
  bool Ended() const { return state == 'Z' || state == 'X'; }
};
// The parsing part of ReadProcessInfo, for tests.
absl::StatusOr<ProcessInfo> ParseProcessStat(absl::string_view stat);

// The operating system. Implementations must be thread-safe: several components may share one.
//
// Paths are absolute. Errors carry the path and the system's message, e.g.
// "rmdir '/sys/fs/cgroup/memory/weft/c1': Device or resource busy", with the status code that
// common/errors.h's ErrnoCode gives the errno (ENOENT -> NotFound, EEXIST -> AlreadyExists,
// EBUSY -> Unavailable, ...).
class OsEnv {
 public:
  virtual ~OsEnv() = default;

  // The real operating system. Never null; lives for the whole process.
  static OsEnv* Default();

  // ---- Files.

  // The whole content of a file (works for /proc and cgroupfs files, whose size is unknown).
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Opens `path` for writing (creating a regular file, mode 0644, when it does not exist),
  // truncates it and writes `contents` with a single write(2), as cgroup control files require.
  virtual absl::Status WriteFile(const std::string& path, absl::string_view contents) = 0;
  // True when something (file, directory, ...) exists at `path`.
  virtual bool PathExists(const std::string& path) = 0;
  // The names in a directory, without "." and "..", sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;
  // mkdir(2), mode 0755: the parent must exist; AlreadyExists when `path` exists.
  virtual absl::Status CreateDir(const std::string& path) = 0;
  // mkdir -p: creates the missing parents too; OK when `path` is already a directory.
  virtual absl::Status CreateDirs(const std::string& path) = 0;
  // rmdir(2): NotFound when missing; cgroupfs answers Unavailable (EBUSY) while populated.
  virtual absl::Status RemoveDir(const std::string& path) = 0;
  // rm -rf without following symbolic links. OK when `path` does not exist.
  virtual absl::Status RemoveTree(const std::string& path) = 0;
  // Walks the tree at `path` without following symbolic links or leaving its file system and
  // counts the disk space allocated to it, visiting at most `max_entries` entries (then
  // truncated). Unreadable subdirectories are skipped. NotFound when `path` does not exist.
  // The default implementation returns Unimplemented.
  virtual absl::StatusOr<DiskUsage> MeasureDiskUsage(const std::string& path, int64_t max_entries);
  // chown(uid, gid) then chmod(mode) of an existing path (not following a final symlink).
  // The default implementation returns Unimplemented (fakes that never run as another user).
  virtual absl::Status SetOwner(const std::string& path, uid_t uid, gid_t gid, mode_t mode);

  // ---- Processes. The caller of Spawn owns the child: it must reap it with TryWait or Wait.

  // Starts a process in a new session (so also a new process group whose id is the returned
  // pid) and returns its pid once it has exec'd. Between fork and exec the child waits while
  // `before_exec(pid)` runs in the caller, so the caller can move it into cgroups before it
  // runs any code of the program. When `before_exec` fails, the child is killed and reaped
  // and that error is returned. When the child cannot exec (or chdir, ...), it is reaped and
  // the error says which step failed, e.g. "exec '/no/such': No such file or directory".
  // Blocks until the child has exec'd or failed.
  virtual absl::StatusOr<pid_t> Spawn(const SpawnOptions& options,
                                      absl::FunctionRef<absl::Status(pid_t)> before_exec) = 0;
  // Non-blocking waitpid(pid, WNOHANG): nullopt while the child runs, its status once it has
  // ended (the child is then reaped: a second call fails). Errors: not our child (ECHILD).
  virtual absl::StatusOr<std::optional<ProcessStatus>> TryWait(pid_t pid) = 0;
  // Blocking waitpid: only for a child that is known to be ending (e.g. after SIGKILL).
  virtual absl::StatusOr<ProcessStatus> Wait(pid_t pid) = 0;
  // Like Spawn, but the program runs under a monitor, a child of the caller that forks it, waits
  // for it and records how it ended, so that whoever finds the files later (e.g. a restarted
  // NM, which is not the program's parent) learns it:
  //   * the monitor starts its own session, ignores SIGTERM, SIGINT, SIGHUP and SIGQUIT, sets
  //     its oom_score_adj to -1000 when it may (the program gets the caller's back), closes
  //     every descriptor of the caller and outlives the caller (no parent-death signal);
  //   * `before_start(monitor_pid)` runs in the caller while the monitor waits, so the caller
  //     can put it into cgroups (the program, forked after, starts there too) and record it;
  //     when it fails, the monitor is killed and reaped and that error is returned;
  //   * the monitor forks the program, which starts its own session (its pid is its process
  //     group id) and continues as Spawn's child does (chdir, logs, run_as, no-new-privs,
  //     exec); the monitor stays as the caller's user;
  //   * the monitor writes <state_dir>/pid, waits for the program, writes
  //     <state_dir>/exit_code (FormatExitFile; a temporary file renamed into place, so it is
  //     whole or absent) and exits with the program's exit code (128 + signal when killed).
  // Returns once the program has exec'd. When it cannot exec (or chdir, ...), the monitor is
  // reaped and the error says which step failed. The caller must reap the monitor (TryWait,
  // Wait); nobody needs to reap the program. `state_dir` must exist.
  // The default implementation returns Unimplemented (fakes that never run processes).
  virtual absl::StatusOr<MonitoredProcess> SpawnMonitored(
      const SpawnOptions& options, const std::string& state_dir,
      absl::FunctionRef<absl::Status(pid_t)> before_start);
  // kill(2): pid > 0 is one process, pid < 0 the process group -pid. NotFound (ESRCH) when no
  // such process or group exists. pid 0 and -1 are refused (InvalidArgument).
  virtual absl::Status Kill(pid_t pid, int signal) = 0;

  // ---- Time.

  // Monotonic milliseconds since an arbitrary origin.
  virtual int64_t NowMs() = 0;
  virtual void SleepMs(int64_t ms) = 0;
};

// Reads /proc/<pid>/stat through `env`. NotFound when there is no such process; DataLoss when
// the file does not parse.
absl::StatusOr<ProcessInfo> ReadProcessInfo(OsEnv* env, pid_t pid);

// env->Kill(pid, signal) for a clean-up, where a process (group) that is gone already is the
// goal: NotFound is fine, any other error is logged at warn.
void KillForCleanup(OsEnv* env, pid_t pid, int signal);

}  // namespace weft::nm

#endif  // WEFT_NM_OS_ENV_H_
