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
};

// How a process ended.
struct ProcessStatus {
  bool signaled = false;  // true: killed by `signal`; false: exited with `exit_code`
  int exit_code = 0;      // 0..255, when !signaled
  int signal = 0;         // when signaled
};

// The operating system. Implementations must be thread-safe: several components may share one.
//
// Paths are absolute. Errors carry the path and the system's message, e.g.
// "rmdir '/sys/fs/cgroup/memory/weft/c1': Device or resource busy", with the status code that
// absl::ErrnoToStatus gives the errno (ENOENT -> NotFound, EEXIST -> AlreadyExists, ...).
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
  // kill(2): pid > 0 is one process, pid < 0 the process group -pid. NotFound (ESRCH) when no
  // such process or group exists. pid 0 and -1 are refused (InvalidArgument).
  virtual absl::Status Kill(pid_t pid, int signal) = 0;

  // ---- Time.

  // Monotonic milliseconds since an arbitrary origin.
  virtual int64_t NowMs() = 0;
  virtual void SleepMs(int64_t ms) = 0;
};

}  // namespace weft::nm

#endif  // WEFT_NM_OS_ENV_H_
