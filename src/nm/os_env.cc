// Copyright Weft authors. The real OsEnv: POSIX and Linux system calls.
#include "nm/os_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/errors.h"
#include "common/log.h"
#include "nm/spawn_child.h"

namespace weft::nm {
namespace {

using namespace spawn_internal;  // NOLINT: the child-side steps shared with the monitor binary

constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

// "<what> '<path>': <strerror>", with common/errors.h's code for `err`.
absl::Status PathError(int err, absl::string_view what, absl::string_view path) {
  return ErrnoError(err, absl::StrCat(what, " '", path, "'"));
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
  if (fd < 0) return PathError(errno, what, path);
  if (fd <= 2) {
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int err = errno;
    close(fd);
    if (high < 0) return PathError(err, what, path);
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

// The error of a failed step, as Spawn and SpawnMonitored return it.
absl::Status StepError(const ChildReport& failure, const SpawnOptions& options) {
  switch (failure.step) {
    case kSetsid:
      return ErrnoError(failure.error, "setsid");
    case kChdir:
      return ErrnoError(failure.error, absl::StrCat("chdir '", options.work_dir, "'"));
    case kStdin:
      return ErrnoError(failure.error, "dup2 stdin");
    case kStdout:
      return ErrnoError(failure.error, "dup2 stdout");
    case kStderr:
      return ErrnoError(failure.error, "dup2 stderr");
    case kSetgroups:
      return ErrnoError(failure.error, "setgroups");
    case kSetgid:
      return ErrnoError(failure.error, absl::StrCat("setresgid ", options.run_as->gid));
    case kSetuid:
      return ErrnoError(failure.error, absl::StrCat("setresuid ", options.run_as->uid));
    case kNoNewPrivs:
      return ErrnoError(failure.error, "prctl PR_SET_NO_NEW_PRIVS");
    case kMonitorFds:
      return ErrnoError(failure.error, "monitor: moving descriptors");
    case kMonitorFork:
      return ErrnoError(failure.error, "monitor: fork");
    case kSeccomp:
      return ErrnoError(failure.error,
                        "seccomp: installing the filter that refuses user namespaces");
    default:
      return ErrnoError(failure.error, absl::StrCat("exec '", options.argv[0], "'"));
  }
}

// Reads ChildReport records until EOF (every write end closed: the program exec'd, or the
// writers ended). Keeps the first failure and the started pid.
void ReadReports(int fd, std::optional<ChildReport>* failure, pid_t* started, bool* truncated) {
  while (true) {
    ChildReport report;
    size_t got = 0;
    while (got < sizeof(report)) {
      ssize_t n = read(fd, reinterpret_cast<char*>(&report) + got, sizeof(report) - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    if (got == 0) return;
    if (got != sizeof(report)) {
      *truncated = true;
      return;
    }
    if (report.kind == ChildReport::kFailed && !failure->has_value()) *failure = report;
    if (report.kind == ChildReport::kStarted) *started = report.pid;
  }
}

// A pipe whose ends are close-on-exec and >= 3 (so that dup2 onto 0, 1, 2 never clobbers one).
absl::Status PipeAbove2(UniqueFd* read_end, UniqueFd* write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) return ErrnoError(errno, "pipe2");
  for (int i = 0; i < 2; ++i) {
    if (fds[i] > 2) continue;
    int high = fcntl(fds[i], F_DUPFD_CLOEXEC, 3);
    int err = errno;
    close(fds[i]);
    fds[i] = high;
    if (high < 0) {
      if (fds[1 - i] >= 0) close(fds[1 - i]);
      return ErrnoError(err, "pipe2: moving above 2");
    }
  }
  read_end->Reset(fds[0]);
  write_end->Reset(fds[1]);
  return absl::OkStatus();
}

// The monitor binary SpawnMonitored starts, or "" to fork the monitor from this process:
// $WEFT_CONTAINER_MONITOR when set ("fork" forks), else weft-container-monitor next to this
// executable or in ../libexec/weft (the Debian package's place), else "".
std::string MonitorBinary() {
  if (const char* chosen = getenv("WEFT_CONTAINER_MONITOR"); chosen != nullptr && *chosen != '\0')
    return std::string(chosen) == "fork" ? "" : chosen;
  static const std::string found = [] {
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec) return std::string();
    for (const std::filesystem::path& candidate :
         {self.parent_path() / "weft-container-monitor",
          self.parent_path().parent_path() / "libexec" / "weft" / "weft-container-monitor"}) {
      if (access(candidate.c_str(), X_OK) == 0) return candidate.string();
    }
    return std::string();
  }();
  return found;
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
  return ErrnoError(ENOENT, absl::StrCat("exec '", name, "' (searched PATH=", path_var, ")"));
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
      if (n < 0) return PathError(errno, "read", path);
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
    if (n < 0) return PathError(errno, absl::StrCat("write '", contents, "' to"), path);
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
    if (dir == nullptr) return PathError(errno, "opendir", path);
    std::vector<std::string> names;
    errno = 0;
    while (struct dirent* entry = readdir(dir)) {
      absl::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    int err = errno;
    closedir(dir);
    if (err != 0) return PathError(err, "readdir", path);
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status CreateDir(const std::string& path) override {
    if (mkdir(path.c_str(), 0755) < 0) return PathError(errno, "mkdir", path);
    return absl::OkStatus();
  }

  absl::Status CreateDirs(const std::string& path) override {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) return PathError(ec.value(), "mkdir -p", path);
    return absl::OkStatus();
  }

  absl::StatusOr<DiskUsage> MeasureDiskUsage(const std::string& path,
                                             int64_t max_entries) override {
    struct stat top;
    if (lstat(path.c_str(), &top) < 0) return PathError(errno, "stat", path);
    DiskUsage usage;
    std::set<std::pair<dev_t, ino_t>> linked;  // inodes with several names
    auto count = [&](const struct stat& st) {
      ++usage.entries;
      if (!S_ISDIR(st.st_mode) && st.st_nlink > 1 && !linked.insert({st.st_dev, st.st_ino}).second)
        return;
      usage.bytes += static_cast<int64_t>(st.st_blocks) * 512;
    };
    count(top);
    if (!S_ISDIR(top.st_mode)) return usage;
    std::vector<std::string> pending = {path};
    while (!pending.empty()) {
      const std::string dir_path = std::move(pending.back());
      pending.pop_back();
      int fd = open(dir_path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;  // gone meanwhile, or unreadable
      DIR* dir = fdopendir(fd);
      if (dir == nullptr) {
        close(fd);
        continue;
      }
      while (struct dirent* entry = readdir(dir)) {
        absl::string_view name = entry->d_name;
        if (name == "." || name == "..") continue;
        if (usage.entries >= max_entries) {
          usage.truncated = true;
          break;
        }
        struct stat st;
        if (fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
        count(st);
        if (S_ISDIR(st.st_mode) && st.st_dev == top.st_dev) {
          pending.push_back(absl::StrCat(dir_path, "/", name));
        }
      }
      closedir(dir);
      if (usage.truncated) break;
    }
    return usage;
  }

  absl::Status RemoveDir(const std::string& path) override {
    if (rmdir(path.c_str()) < 0) return PathError(errno, "rmdir", path);
    return absl::OkStatus();
  }

  absl::Status SetOwner(const std::string& path, uid_t uid, gid_t gid, mode_t mode) override {
    if (lchown(path.c_str(), uid, gid) < 0) return PathError(errno, "chown", path);
    if (chmod(path.c_str(), mode) < 0) return PathError(errno, "chmod", path);
    return absl::OkStatus();
  }

  absl::Status RemoveTree(const std::string& path) override {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    if (ec) return PathError(ec.value(), "rm -rf", path);
    return absl::OkStatus();
  }

  absl::StatusOr<pid_t> Spawn(const SpawnOptions& options,
                              absl::FunctionRef<absl::Status(pid_t)> before_exec) override {
    absl::StatusOr<Prepared> prepared = Prepare(options);
    if (!prepared.ok()) return prepared.status();
    UniqueFd go_read, go_write, report_read, report_write;
    if (absl::Status s = PipeAbove2(&go_read, &go_write); !s.ok()) return s;
    if (absl::Status s = PipeAbove2(&report_read, &report_write); !s.ok()) return s;
    ChildArgs args = prepared->ChildArgsFor(options);
    args.go_fd = go_read.get();
    args.report_fd = report_write.get();
    pid_t pid = fork();
    if (pid < 0) return ErrnoError(errno, "fork");
    if (pid == 0) RunChild(args);

    absl::StatusOr<Reports> r = ReleaseChild(pid, go_read, go_write, report_read, report_write,
                                             before_exec);
    if (!r.ok()) return r.status();
    if (!r->failure.has_value() && !r->truncated) return pid;  // close-on-exec: the program runs
    (void)Wait(pid);
    if (r->truncated) {
      return absl::InternalError(absl::StrCat("spawn: truncated report from child ", pid));
    }
    return StepError(*r->failure, options);
  }

  absl::StatusOr<MonitoredProcess> SpawnMonitored(
      const SpawnOptions& options, const std::string& state_dir,
      absl::FunctionRef<absl::Status(pid_t)> before_start) override {
    absl::StatusOr<Prepared> prepared = Prepare(options);
    if (!prepared.ok()) return prepared.status();
    if (state_dir.empty() || state_dir.front() != '/') {
      return absl::InvalidArgumentError(
          absl::StrCat("spawn: state directory '", state_dir, "' is not an absolute path"));
    }
    const std::string pid_path = absl::StrCat(state_dir, "/", kMonitorPidFile);
    const std::string pid_tmp = pid_path + ".tmp";
    const std::string exit_path = absl::StrCat(state_dir, "/", kMonitorExitFile);
    const std::string exit_tmp = exit_path + ".tmp";
    // The program gets back the caller's OOM preference, which the monitor gives up.
    std::string oom_score_adj;
    if (absl::StatusOr<std::string> adj = ReadFile("/proc/self/oom_score_adj"); adj.ok()) {
      oom_score_adj = std::string(absl::StripAsciiWhitespace(*adj));
    }
    UniqueFd go_read, go_write, report_read, report_write;
    if (absl::Status s = PipeAbove2(&go_read, &go_write); !s.ok()) return s;
    if (absl::Status s = PipeAbove2(&report_read, &report_write); !s.ok()) return s;
    MonitorArgs args;
    args.program = prepared->ChildArgsFor(options);
    args.program.go_fd = -1;
    args.program.report_fd = 3;
    args.program.stdin_fd = STDIN_FILENO;
    args.program.stdout_fd = STDOUT_FILENO;
    args.program.stderr_fd = STDERR_FILENO;
    args.program.oom_score_adj = oom_score_adj.empty() ? nullptr : oom_score_adj.c_str();
    args.go_fd = go_read.get();
    args.report_fd = report_write.get();
    args.stdin_fd = prepared->in.get();
    args.stdout_fd = prepared->out.get();
    args.stderr_fd = prepared->err.get();
    args.pid_path = pid_path.c_str();
    args.pid_tmp_path = pid_tmp.c_str();
    args.exit_path = exit_path.c_str();
    args.exit_tmp_path = exit_tmp.c_str();
    const std::string logs_path = absl::StrCat(state_dir, "/", kMonitorLogsFile);
    const std::string logs_tmp = logs_path + ".tmp";
    args.log_limit_bytes = std::max<int64_t>(options.log_limit_bytes, 0);
    args.logs_path = logs_path.c_str();
    args.logs_tmp_path = logs_tmp.c_str();
    pid_t monitor = 0;
    if (const std::string binary = MonitorBinary(); !binary.empty()) {
      absl::StatusOr<pid_t> spawned = SpawnMonitorBinary(binary, *prepared, options, oom_score_adj,
                                                        pid_path, exit_path, args);
      if (!spawned.ok()) return spawned.status();
      monitor = *spawned;
    } else {
      monitor = fork();
      if (monitor < 0) return ErrnoError(errno, "fork");
      if (monitor == 0) RunMonitor(args);
    }

    absl::StatusOr<Reports> r = ReleaseChild(monitor, go_read, go_write, report_read,
                                             report_write, before_start);
    if (!r.ok()) return r.status();
    if (!r->failure.has_value() && !r->truncated && r->started > 0) {
      return MonitoredProcess{monitor, r->started};
    }
    // The monitor ends on its own: at once, or once its program has failed to exec.
    (void)Wait(monitor);
    if (r->failure.has_value()) return StepError(*r->failure, options);
    return absl::InternalError(
        absl::StrCat("spawn: monitor ", monitor, " ended without starting its program"));
  }

 private:
  // What a forked child (Spawn's program, SpawnMonitored's monitor) reported on its pipe.
  struct Reports {
    std::optional<ChildReport> failure;
    pid_t started = 0;
    bool truncated = false;
  };
  // The parent's side of a fork for Spawn and SpawnMonitored: closes the child's ends of the
  // pipes, runs `hook` (on its error the child is killed and reaped, and the error returned),
  // lets the child go on and reads its reports until the report pipe closes.
  absl::StatusOr<Reports> ReleaseChild(pid_t child, UniqueFd& go_read, UniqueFd& go_write,
                                       UniqueFd& report_read, UniqueFd& report_write,
                                       absl::FunctionRef<absl::Status(pid_t)> hook) {
    go_read.Reset(-1);
    report_write.Reset(-1);
    if (absl::Status s = hook(child); !s.ok()) {
      go_write.Reset(-1);  // the child sees EOF and exits
      kill(child, SIGKILL);
      (void)Wait(child);
      return s;
    }
    SendGo(&go_write);
    Reports r;
    ReadReports(report_read.get(), &r.failure, &r.started, &r.truncated);
    return r;
  }

  struct Prepared;
  // Starts weft-container-monitor (`binary`) with posix_spawn: its descriptors 0-2 are the
  // program's stdin, stdout and stderr, 3 the report pipe and 4 the go pipe (`args` has them
  // where they are now); every other descriptor is closed. Errors: posix_spawn's (e.g. the
  // binary is not executable).
  static absl::StatusOr<pid_t> SpawnMonitorBinary(const std::string& binary,
                                                  const Prepared& prepared,
                                                  const SpawnOptions& options,
                                                  const std::string& oom_score_adj,
                                                  const std::string& pid_path,
                                                  const std::string& exit_path,
                                                  const MonitorArgs& args);

  // What Spawn and SpawnMonitored prepare before fork.
  struct Prepared {
    std::string program;
    std::vector<char*> argv;
    std::vector<char*> envp;
    UniqueFd in, out, err;
    std::vector<gid_t> groups;

    ChildArgs ChildArgsFor(const SpawnOptions& options) const {
      return ChildArgs{-1,
                       -1,
                       in.get(),
                       out.get(),
                       err.get(),
                       options.work_dir.c_str(),
                       program.c_str(),
                       argv.data(),
                       envp.data(),
                       options.run_as.has_value(),
                       options.run_as.has_value() ? options.run_as->uid : 0,
                       options.run_as.has_value() ? options.run_as->gid : 0,
                       groups.data(),
                       groups.size(),
                       nullptr,
                       options.deny_user_namespaces};
    }
  };

  static absl::StatusOr<Prepared> Prepare(const SpawnOptions& options) {
    if (options.argv.empty()) return absl::InvalidArgumentError("spawn: empty argv");
    Prepared p;
    absl::StatusOr<std::string> program = ResolveProgram(options);
    if (!program.ok()) return program.status();
    p.program = *std::move(program);
    for (const std::string& arg : options.argv) p.argv.push_back(const_cast<char*>(arg.c_str()));
    p.argv.push_back(nullptr);
    for (const std::string& var : options.env) p.envp.push_back(const_cast<char*>(var.c_str()));
    p.envp.push_back(nullptr);

    absl::StatusOr<UniqueFd> in = OpenAbove2("/dev/null", O_RDONLY, 0, "open stdin");
    if (!in.ok()) return in.status();
    // A monitor that keeps the logs under a limit reads their tails back.
    const int mode = options.log_limit_bytes > 0 ? O_RDWR : O_WRONLY;
    absl::StatusOr<UniqueFd> out =
        OpenAbove2(options.stdout_path, mode | O_CREAT | O_TRUNC, 0640, "open stdout log");
    if (!out.ok()) return out.status();
    absl::StatusOr<UniqueFd> err =
        OpenAbove2(options.stderr_path, mode | O_CREAT | O_TRUNC, 0640, "open stderr log");
    if (!err.ok()) return err.status();
    p.in = *std::move(in);
    p.out = *std::move(out);
    p.err = *std::move(err);
    if (options.run_as.has_value()) {
      // The container's user owns its log files.
      for (const UniqueFd* fd : {&p.out, &p.err}) {
        if (fchown(fd->get(), options.run_as->uid, options.run_as->gid) < 0)
          return PathError(errno, "chown log of", options.stdout_path);
      }
      p.groups = options.run_as->groups;
    }
    return p;
  }

  static void SendGo(UniqueFd* go_write) {
    char go = 1;
    ssize_t n;
    do {
      n = write(go_write->get(), &go, 1);
    } while (n < 0 && errno == EINTR);
    go_write->Reset(-1);
  }

 public:
  absl::StatusOr<std::optional<ProcessStatus>> TryWait(pid_t pid) override {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return ErrnoError(errno, absl::StrCat("waitpid ", pid));
    if (r == 0) return std::optional<ProcessStatus>();
    return std::optional<ProcessStatus>(DecodeWaitStatus(status));
  }

  absl::StatusOr<ProcessStatus> Wait(pid_t pid) override {
    int status = 0;
    pid_t r;
    do {
      r = waitpid(pid, &status, 0);
    } while (r < 0 && errno == EINTR);
    if (r < 0) return ErrnoError(errno, absl::StrCat("waitpid ", pid));
    return DecodeWaitStatus(status);
  }

  absl::Status Kill(pid_t pid, int signal) override {
    // 0 would signal the NM's own group and -1 every process we may signal: never intended.
    if (pid == 0 || pid == -1) {
      return absl::InvalidArgumentError(absl::StrCat("kill: refusing pid ", pid));
    }
    if (kill(pid, signal) < 0) {
      return ErrnoError(errno, absl::StrCat("kill ", pid, " with signal ", signal));
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

absl::StatusOr<pid_t> PosixOsEnv::SpawnMonitorBinary(const std::string& binary,
                                                     const Prepared& prepared,
                                                     const SpawnOptions& options,
                                                     const std::string& oom_score_adj,
                                                     const std::string& pid_path,
                                                     const std::string& exit_path,
                                                     const MonitorArgs& args) {
  std::vector<std::string> words = {binary, pid_path, exit_path, options.work_dir,
                                    oom_score_adj.empty() ? "-" : oom_score_adj};
  if (options.run_as.has_value()) {
    words.push_back(absl::StrCat(options.run_as->uid, ":", options.run_as->gid, ":",
                                 absl::StrJoin(prepared.groups, ",")));
  } else {
    words.push_back("-");
  }
  words.push_back(absl::StrCat(args.log_limit_bytes));
  words.push_back(args.logs_path);
  words.push_back(options.deny_user_namespaces ? "userns=deny" : "userns=allow");
  words.push_back(prepared.program);
  for (char* const* a = prepared.argv.data(); *a != nullptr; ++a) words.push_back(*a);
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  if (int err = posix_spawn_file_actions_init(&actions); err != 0)
    return ErrnoError(err, "posix_spawn_file_actions_init");
  // Every source is >= 3 and may sit on a target (0-4): each goes up out of the way first, to
  // numbers above every source (so that none is overwritten before it moved), then down to its
  // place; everything else is closed.
  const int sources[] = {args.stdin_fd, args.stdout_fd, args.stderr_fd, args.report_fd,
                         args.go_fd};
  const int aside = *std::max_element(std::begin(sources), std::end(sources)) + 1;
  int err = 0;
  for (int i = 0; i < 5 && err == 0; ++i)
    err = posix_spawn_file_actions_adddup2(&actions, sources[i], aside + i);
  for (int i = 0; i < 5 && err == 0; ++i)
    err = posix_spawn_file_actions_adddup2(&actions, aside + i, i);
  if (err == 0) err = posix_spawn_file_actions_addclosefrom_np(&actions, 5);
  pid_t pid = 0;
  if (err == 0) err = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(),
                                  prepared.envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0)
    return ErrnoError(err, absl::StrCat("spawn: starting the monitor '", binary, "'"));
  return pid;
}

}  // namespace

absl::Status OsEnv::SetOwner(const std::string& path, uid_t, gid_t, mode_t) {
  return absl::UnimplementedError(absl::StrCat("chown ", path, ": not supported here"));
}

absl::StatusOr<MonitoredProcess> OsEnv::SpawnMonitored(const SpawnOptions&, const std::string&,
                                                       absl::FunctionRef<absl::Status(pid_t)>) {
  return absl::UnimplementedError("spawning under a monitor: not supported here");
}

absl::StatusOr<DiskUsage> OsEnv::MeasureDiskUsage(const std::string& path, int64_t) {
  return absl::UnimplementedError(absl::StrCat("measuring disk usage of ", path, ": not supported"));
}

absl::StatusOr<LogsDropped> ParseLogsDroppedFile(absl::string_view text) {
  LogsDropped dropped;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(line, absl::MaxSplits(' ', 1));
    int64_t bytes = 0;
    if (!absl::SimpleAtoi(parts.second, &bytes) || bytes < 0 ||
        (parts.first != "stdout" && parts.first != "stderr")) {
      return absl::InvalidArgumentError(
          absl::StrCat("logs-dropped line '", line, "' is not 'stdout|stderr BYTES'"));
    }
    (parts.first == "stdout" ? dropped.stdout_bytes : dropped.stderr_bytes) = bytes;
  }
  return dropped;
}

std::string FormatExitFile(const ProcessStatus& status) {
  return status.signaled ? absl::StrCat("signal ", status.signal, "\n")
                         : absl::StrCat("exit ", status.exit_code, "\n");
}

absl::StatusOr<ProcessStatus> ParseExitFile(absl::string_view text) {
  absl::string_view rest = text;
  if (!absl::ConsumeSuffix(&rest, "\n")) {
    return absl::InvalidArgumentError(absl::StrCat("exit file '", text, "' is not one whole line"));
  }
  ProcessStatus status;
  int value = 0;
  if (absl::ConsumePrefix(&rest, "exit ") && absl::SimpleAtoi(rest, &value) && value >= 0 &&
      value <= 255) {
    status.exit_code = value;
    return status;
  }
  if (absl::ConsumePrefix(&rest, "signal ") && absl::SimpleAtoi(rest, &value) && value > 0 &&
      value < 128) {
    status.signaled = true;
    status.signal = value;
    return status;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("exit file '", absl::StripAsciiWhitespace(text), "' does not parse"));
}

absl::StatusOr<ProcessInfo> ParseProcessStat(absl::string_view stat) {
  // "<pid> (<comm>) <state> <ppid> ... <starttime: field 22> ...": comm may hold anything,
  // so the fields are counted from its last ')'.
  size_t paren = stat.rfind(')');
  if (paren == absl::string_view::npos) {
    return absl::DataLossError(absl::StrCat("process stat '", stat, "' has no command"));
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(stat.substr(paren + 1), ' ', absl::SkipEmpty());
  ProcessInfo info;
  int parent = 0;
  if (fields.size() < 20 || fields[0].size() != 1 || !absl::SimpleAtoi(fields[1], &parent) ||
      !absl::SimpleAtoi(fields[19], &info.start_time)) {
    return absl::DataLossError(absl::StrCat("process stat '", stat, "' does not parse"));
  }
  info.state = fields[0][0];
  info.parent = parent;
  return info;
}

absl::StatusOr<ProcessInfo> ReadProcessInfo(OsEnv* env, pid_t pid) {
  if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat("no process ", pid));
  absl::StatusOr<std::string> stat = env->ReadFile(absl::StrCat("/proc/", pid, "/stat"));
  if (!stat.ok()) {
    if (absl::IsNotFound(stat.status())) {
      return absl::NotFoundError(absl::StrCat("no process ", pid));
    }
    return stat.status();
  }
  return ParseProcessStat(*stat);
}

OsEnv* OsEnv::Default() {
  static OsEnv* const env = new PosixOsEnv();
  return env;
}

void KillForCleanup(OsEnv* env, pid_t pid, int signal) {
  absl::Status s = env->Kill(pid, signal);
  if (!s.ok() && !absl::IsNotFound(s))
    log::Warn("kill_failed", {{"pid", static_cast<int64_t>(pid)}, {"signal", signal}, {"error", s}});
}

}  // namespace weft::nm
