// Copyright Weft authors. The real OsEnv: POSIX and Linux system calls.
#include "nm/os_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace weft::nm {
namespace {

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

absl::Status ErrnoError(int err, absl::string_view what, absl::string_view path) {
  return absl::ErrnoToStatus(err, absl::StrCat(what, " '", path, "'"));
}

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(-1); }

  int get() const { return fd_; }
  void Reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// open(2) with O_CLOEXEC, and the result moved to fd 3 or above so that a child's dup2 onto
// 0, 1 and 2 never overwrites another of these descriptors.
absl::StatusOr<UniqueFd> OpenAbove2(const std::string& path, int flags, mode_t mode,
                                    absl::string_view what) {
  int fd = open(path.c_str(), flags | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoError(errno, what, path);
  if (fd <= 2) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int err = errno;
    close(fd);
    if (high < 0) return ErrnoError(err, what, path);
    fd = high;
  }
  return UniqueFd(fd);
}

ProcessStatus DecodeWaitStatus(int status) {
  ProcessStatus result;
  if (WIFSIGNALED(status)) {
    result.signaled = true;
    result.signal = WTERMSIG(status);
  } else {
    result.exit_code = WEXITSTATUS(status);
  }
  return result;
}

// Steps of the child between fork and exec; a failure reports {step, errno} on a pipe.
enum ChildStep : int {
  kSetsid, kChdir, kStdin, kStdout, kStderr, kSetgroups, kSetgid, kSetuid, kNoNewPrivs, kExec
};
struct ChildFailure {
  int step;
  int error;
};

// Everything the child needs, prepared before fork: after fork the child of a multi-threaded
// process may only call async-signal-safe functions, so it must not allocate.
struct ChildArgs {
  int go_fd;      // read end: one byte once the parent is done with before_exec
  int report_fd;  // write end, close-on-exec: ChildFailure, or EOF when exec succeeded
  int stdin_fd, stdout_fd, stderr_fd;  // all >= 3
  const char* work_dir;
  const char* program;
  char* const* argv;
  char* const* envp;
  bool set_ids;  // run as uid/gid/groups below
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t num_groups;
};

[[noreturn]] void ChildFail(const ChildArgs& args, int step) {
  ChildFailure failure{step, errno};
  ssize_t ignored = write(args.report_fd, &failure, sizeof(failure));
  (void)ignored;
  _exit(127);
}

// Runs in the child after fork: async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildArgs& args) {
  if (setsid() < 0) ChildFail(args, kSetsid);
  char go = 0;
  ssize_t n;
  do {
    n = read(args.go_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);  // the parent gave up (before_exec failed); it kills us anyway
  if (chdir(args.work_dir) < 0) ChildFail(args, kChdir);
  if (dup2(args.stdin_fd, STDIN_FILENO) < 0) ChildFail(args, kStdin);
  if (dup2(args.stdout_fd, STDOUT_FILENO) < 0) ChildFail(args, kStdout);
  if (dup2(args.stderr_fd, STDERR_FILENO) < 0) ChildFail(args, kStderr);
  // Groups, then gid, then uid (after setuid there is no right left to change the others);
  // a change of uid away from 0 drops every capability.
  if (args.set_ids) {
    if (setgroups(args.num_groups, args.groups) < 0) ChildFail(args, kSetgroups);
    if (setresgid(args.gid, args.gid, args.gid) < 0) ChildFail(args, kSetgid);
    if (setresuid(args.uid, args.uid, args.uid) < 0) ChildFail(args, kSetuid);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) ChildFail(args, kNoNewPrivs);
  // Default dispositions and an empty mask: exec keeps ignored signals and the mask.
  struct sigaction dfl = {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);  // EINVAL is fine
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  // No descriptor of the NM leaks into the container: mark every fd >= 3 close-on-exec.
  if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) < 0) {
    struct rlimit limit;
    rlim_t max_fd = 65536;
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
      max_fd = std::min<rlim_t>(limit.rlim_cur, 1 << 20);
    }
    for (int fd = 3; fd < static_cast<int>(max_fd); ++fd) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  execve(args.program, args.argv, args.envp);
  ChildFail(args, kExec);
}

// Resolves a bare program name against PATH the way execvp does (first executable match).
absl::StatusOr<std::string> ResolveProgram(const SpawnOptions& options) {
  const std::string& name = options.argv[0];
  if (name.empty()) return absl::InvalidArgumentError("exec '': empty program name");
  if (absl::StrContains(name, '/')) return name;
  std::string path_var = kDefaultPath;
  for (const std::string& entry : options.env) {
    if (absl::StartsWith(entry, "PATH=")) path_var = entry.substr(5);
  }
  for (absl::string_view dir : absl::StrSplit(path_var, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return absl::ErrnoToStatus(ENOENT,
                             absl::StrCat("exec '", name, "' (searched PATH=", path_var, ")"));
}

class PosixOsEnv : public OsEnv {
 public:
  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    absl::StatusOr<UniqueFd> fd = OpenAbove2(path, O_RDONLY, 0, "open");
    if (!fd.ok()) return fd.status();
    std::string contents;
    char buffer[8192];
    while (true) {
      ssize_t n = read(fd->get(), buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError(errno, "read", path);
      if (n == 0) break;
      contents.append(buffer, static_cast<size_t>(n));
    }
    return contents;
  }

  absl::Status WriteFile(const std::string& path, absl::string_view contents) override {
    absl::StatusOr<UniqueFd> fd = OpenAbove2(path, O_WRONLY | O_CREAT | O_TRUNC, 0644, "open");
    if (!fd.ok()) return fd.status();
    ssize_t n;
    do {
      n = write(fd->get(), contents.data(), contents.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return ErrnoError(errno, absl::StrCat("write '", contents, "' to"), path);
    if (static_cast<size_t>(n) != contents.size()) {
      return absl::DataLossError(
          absl::StrCat("short write to '", path, "': ", n, " of ", contents.size(), " bytes"));
    }
    return absl::OkStatus();
  }

  bool PathExists(const std::string& path) override {
    struct stat st;
    return lstat(path.c_str(), &st) == 0;
  }

  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& path) override {
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) return ErrnoError(errno, "opendir", path);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* entry = readdir(dir)) {
      absl::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    int err = errno;
    closedir(dir);
    if (err != 0) return ErrnoError(err, "readdir", path);
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status CreateDir(const std::string& path) override {
    if (mkdir(path.c_str(), 0755) < 0) return ErrnoError(errno, "mkdir", path);
    return absl::OkStatus();
  }

  absl::Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return ErrnoError(ec.value(), "mkdir -p", path);
    return absl::OkStatus();
  }

  absl::Status RemoveDir(const std::string& path) override {
    if (rmdir(path.c_str()) < 0) return ErrnoError(errno, "rmdir", path);
    return absl::OkStatus();
  }

  absl::Status SetOwner(const std::string& path, uid_t uid, gid_t gid, mode_t mode) override {
    if (lchown(path.c_str(), uid, gid) < 0) return ErrnoError(errno, "chown", path);
    if (chmod(path.c_str(), mode) < 0) return ErrnoError(errno, "chmod", path);
    return absl::OkStatus();
  }

  absl::Status RemoveTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return ErrnoError(ec.value(), "rm -rf", path);
    return absl::OkStatus();
  }

  absl::StatusOr<pid_t> Spawn(const SpawnOptions& options,
                              absl::FunctionRef<absl::Status(pid_t)> before_exec) override {
    if (options.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
    absl::StatusOr<std::string> program = ResolveProgram(options);
    if (!program.ok()) return program.status();

    std::vector<char*> argv;
    for (const std::string& arg : options.argv) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const std::string& var : options.env) envp.push_back(const_cast<char*>(var.c_str()));
    envp.push_back(nullptr);

    absl::StatusOr<UniqueFd> in = OpenAbove2("/dev/null", O_RDONLY, 0, "open stdin");
    if (!in.ok()) return in.status();
    absl::StatusOr<UniqueFd> out =
        OpenAbove2(options.stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0640, "open stdout log");
    if (!out.ok()) return out.status();
    absl::StatusOr<UniqueFd> err =
        OpenAbove2(options.stderr_path, O_WRONLY | O_CREAT | O_TRUNC, 0640, "open stderr log");
    if (!err.ok()) return err.status();

    int go_pipe[2], report_pipe[2];
    if (pipe2(go_pipe, O_CLOEXEC) < 0) return absl::ErrnoToStatus(errno, "pipe2");
    UniqueFd go_read(go_pipe[0]), go_write(go_pipe[1]);
    if (pipe2(report_pipe, O_CLOEXEC) < 0) return absl::ErrnoToStatus(errno, "pipe2");
    UniqueFd report_read(report_pipe[0]), report_write(report_pipe[1]);

    if (options.run_as.has_value()) {
      // The container's user owns its log files.
      for (const UniqueFd* fd : {&*out, &*err}) {
        if (fchown(fd->get(), options.run_as->uid, options.run_as->gid) < 0)
          return ErrnoError(errno, "chown log of", options.stdout_path);
      }
    }
    const std::vector<gid_t> no_groups;
    const std::vector<gid_t>& groups =
        options.run_as.has_value() ? options.run_as->groups : no_groups;
    ChildArgs args{go_read.get(),
                   report_write.get(),
                   in->get(),
                   out->get(),
                   err->get(),
                   options.work_dir.c_str(),
                   program->c_str(),
                   argv.data(),
                   envp.data(),
                   options.run_as.has_value(),
                   options.run_as.has_value() ? options.run_as->uid : 0,
                   options.run_as.has_value() ? options.run_as->gid : 0,
                   groups.data(),
                   groups.size()};
    pid_t pid = fork();
    if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
    if (pid == 0) RunChild(args);

    go_read.Reset(-1);
    report_write.Reset(-1);
    if (absl::Status hook = before_exec(pid); !hook.ok()) {
      go_write.Reset(-1);  // the child sees EOF and exits
      kill(pid, SIGKILL);
      (void)Wait(pid);
      return hook;
    }
    char go = 1;
    ssize_t n;
    do {
      n = write(go_write.get(), &go, 1);
    } while (n < 0 && errno == EINTR);
    go_write.Reset(-1);

    ChildFailure failure{};
    size_t got = 0;
    while (got < sizeof(failure)) {
      n = read(report_read.get(), reinterpret_cast<char*>(&failure) + got, sizeof(failure) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == 0) return pid;  // close-on-exec closed the pipe: the program runs
    (void)Wait(pid);
    if (got != sizeof(failure)) {
      return absl::InternalError(absl::StrCat("spawn: truncated report from child ", pid));
    }
    switch (failure.step) {
      case kSetsid:
        return absl::ErrnoToStatus(failure.error, "setsid");
      case kChdir:
        return ErrnoError(failure.error, "chdir", options.work_dir);
      case kStdin:
        return absl::ErrnoToStatus(failure.error, "dup2 stdin");
      case kStdout:
        return absl::ErrnoToStatus(failure.error, "dup2 stdout");
      case kStderr:
        return absl::ErrnoToStatus(failure.error, "dup2 stderr");
      case kSetgroups:
        return absl::ErrnoToStatus(failure.error, "setgroups");
      case kSetgid:
        return absl::ErrnoToStatus(failure.error,
                                   absl::StrCat("setresgid ", options.run_as->gid));
      case kSetuid:
        return absl::ErrnoToStatus(failure.error,
                                   absl::StrCat("setresuid ", options.run_as->uid));
      case kNoNewPrivs:
        return absl::ErrnoToStatus(failure.error, "prctl PR_SET_NO_NEW_PRIVS");
      default:
        return ErrnoError(failure.error, "exec", options.argv[0]);
    }
  }

  absl::StatusOr<std::optional<ProcessStatus>> TryWait(pid_t pid) override {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return absl::ErrnoToStatus(errno, absl::StrCat("waitpid ", pid));
    if (r == 0) return std::optional<ProcessStatus>();
    return std::optional<ProcessStatus>(DecodeWaitStatus(status));
  }

  absl::StatusOr<ProcessStatus> Wait(pid_t pid) override {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return absl::ErrnoToStatus(errno, absl::StrCat("waitpid ", pid));
    return DecodeWaitStatus(status);
  }

  absl::Status Kill(pid_t pid, int signal) override {
    // 0 would signal the NM's own group and -1 every process we may signal: never intended.
    if (pid == 0 || pid == -1) {
      return absl::InvalidArgumentError(absl::StrCat("kill: refusing pid ", pid));
    }
    if (kill(pid, signal) < 0) {
      return absl::ErrnoToStatus(errno, absl::StrCat("kill ", pid, " with signal ", signal));
    }
    return absl::OkStatus();
  }

  int64_t NowMs() override {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
  }

  void SleepMs(int64_t ms) override {
    if (ms <= 0) return;
    struct timespec ts {
      static_cast<time_t>(ms / 1000), static_cast<long>(ms % 1000) * 1000000
    };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
    }
  }
};

}  // namespace

absl::Status OsEnv::SetOwner(const std::string& path, uid_t, gid_t, mode_t) {
  return absl::UnimplementedError(absl::StrCat("chown ", path, ": not supported here"));
}

OsEnv* OsEnv::Default() {
  static OsEnv* const env = new PosixOsEnv();
  return env;
}

}  // namespace weft::nm
