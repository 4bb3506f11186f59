// Copyright Weft authors.
#include "nm/spawn_child.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

namespace weft::nm::spawn_internal {
namespace {

// Writes a NUL-terminated string with one write(2), ignoring errors.
void WriteString(int fd, const char* text) {
  size_t len = 0;
  while (text[len] != '\0') ++len;
  ssize_t ignored = write(fd, text, len);
  (void)ignored;
}

// open + write + close of a small /proc file, ignoring errors (async-signal-safe).
void WriteProcFile(const char* path, const char* value) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  WriteString(fd, value);
  close(fd);
}

}  // namespace

void WriteReport(int fd, const ChildReport& report) {
  ssize_t n;
  do {
    n = write(fd, &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
}

[[noreturn]] void ChildFail(int report_fd, int step) {
  ChildReport report;
  report.kind = ChildReport::kFailed;
  report.step = step;
  report.error = errno;
  WriteReport(report_fd, report);
  _exit(127);
}

// Marks every descriptor >= `from` close-on-exec (`close_all`: closes them).
void CloseFrom(int from, bool close_all) {
  if (close_range(from, ~0U, close_all ? 0 : CLOSE_RANGE_CLOEXEC) == 0) return;
  struct rlimit limit;
  rlim_t max_fd = 65536;
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    max_fd = std::min<rlim_t>(limit.rlim_cur, 1 << 20);
  }
  for (int fd = from; fd < static_cast<int>(max_fd); ++fd) {
    if (close_all) {
      close(fd);
    } else {
      fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
  }
}

// Runs in the child after fork: async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildArgs& args) {
  if (setsid() < 0) ChildFail(args.report_fd, kSetsid);
  if (args.go_fd >= 0) {
    char go = 0;
    ssize_t n;
    do {
      n = read(args.go_fd, &go, 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) _exit(127);  // the parent gave up (before_exec failed); it kills us anyway
  }
  if (args.oom_score_adj != nullptr) WriteProcFile("/proc/self/oom_score_adj", args.oom_score_adj);
  if (chdir(args.work_dir) < 0) ChildFail(args.report_fd, kChdir);
  if (dup2(args.stdin_fd, STDIN_FILENO) < 0) ChildFail(args.report_fd, kStdin);
  if (dup2(args.stdout_fd, STDOUT_FILENO) < 0) ChildFail(args.report_fd, kStdout);
  if (dup2(args.stderr_fd, STDERR_FILENO) < 0) ChildFail(args.report_fd, kStderr);
  // Groups, then gid, then uid (after setuid there is no right left to change the others);
  // a change of uid away from 0 drops every capability.
  if (args.set_ids) {
    if (setgroups(args.num_groups, args.groups) < 0) ChildFail(args.report_fd, kSetgroups);
    if (setresgid(args.gid, args.gid, args.gid) < 0) ChildFail(args.report_fd, kSetgid);
    if (setresuid(args.uid, args.uid, args.uid) < 0) ChildFail(args.report_fd, kSetuid);
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) ChildFail(args.report_fd, kNoNewPrivs);
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
  CloseFrom(3, /*close_all=*/false);
  execve(args.program, args.argv, args.envp);
  ChildFail(args.report_fd, kExec);
}

// The decimal digits of `value`, written backwards from `end`; returns the first character.
char* FormatDecimal(int64_t value, char* end) {
  bool negative = value < 0;
  uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  do {
    *--end = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) *--end = '-';
  return end;
}

// Writes `text` to `tmp_path` and renames it to `path` (async-signal-safe): a reader sees the
// whole text or no file, whenever the writer or the NM is killed. Not fsynced (as YARN's exit
// code file): only a machine crash could lose it, and that ends the program it describes too -
// the NM that starts after the crash finds no process and no file, and reports the container
// lost. An fsync here cost every container launch (the pid file is written before the NM
// hears "started") and every completion a disk flush.
bool WriteFileAtomically(const char* path, const char* tmp_path, const char* text) {
  int fd = open(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  size_t len = 0;
  while (text[len] != '\0') ++len;
  ssize_t n;
  do {
    n = write(fd, text, len);
  } while (n < 0 && errno == EINTR);
  bool ok = n == static_cast<ssize_t>(len);
  ok &= close(fd) == 0;
  return ok && rename(tmp_path, path) == 0;
}

// Runs in the monitor after fork: async-signal-safe calls only. See OsEnv::SpawnMonitored.
[[noreturn]] void RunMonitor(const MonitorArgs& args) {
  if (setsid() < 0) ChildFail(args.report_fd, kSetsid);
  // Nobody's terminal or signal reaches it by accident; SIGKILL (cgroup kill) still does.
  struct sigaction action = {};
  sigemptyset(&action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    const bool ignore = sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT ||
                        sig == SIGPIPE || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
    action.sa_handler = ignore ? SIG_IGN : SIG_DFL;
    sigaction(sig, &action, nullptr);  // EINVAL is fine
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  // The memory cgroup's OOM killer must pick the program, not the monitor (whose resident set
  // counts the caller's pages it shares). Fails harmlessly without CAP_SYS_RESOURCE.
  WriteProcFile("/proc/self/oom_score_adj", "-1000");
  if (chdir("/") < 0) ChildFail(args.report_fd, kChdir);
  char go = 0;
  ssize_t n;
  do {
    n = read(args.go_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(127);  // the caller gave up (or died) before releasing us
  // Keep the logs (as 0, 1, 2) and the report pipe (as 3); close every other descriptor of the
  // caller, so that none (e.g. its listening socket) outlives it here.
  if (dup2(args.stdin_fd, STDIN_FILENO) < 0) ChildFail(args.report_fd, kStdin);
  if (dup2(args.stdout_fd, STDOUT_FILENO) < 0) ChildFail(args.report_fd, kStdout);
  if (dup2(args.stderr_fd, STDERR_FILENO) < 0) ChildFail(args.report_fd, kStderr);
  if (args.report_fd != 3) {
    if (dup3(args.report_fd, 3, O_CLOEXEC) < 0) ChildFail(args.report_fd, kMonitorFds);
  } else if (fcntl(3, F_SETFD, FD_CLOEXEC) < 0) {
    ChildFail(3, kMonitorFds);
  }
  CloseFrom(4, /*close_all=*/true);
  // _Fork: no atfork handlers, which assume the caller's threads.
  pid_t pid = _Fork();
  if (pid < 0) ChildFail(3, kMonitorFork);
  if (pid == 0) RunChild(args.program);

  char buffer[32];
  char* end = buffer + sizeof(buffer);
  *--end = '\0';
  *--end = '\n';
  (void)WriteFileAtomically(args.pid_path, args.pid_tmp_path, FormatDecimal(pid, end));
  ChildReport started;
  started.kind = ChildReport::kStarted;
  started.pid = pid;
  WriteReport(3, started);
  close(3);

  int status = 0;
  pid_t r;
  do {
    r = waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  // "exit <code>\n" or "signal <number>\n" (FormatExitFile).
  const bool signaled = r == pid && WIFSIGNALED(status);
  const int value = r != pid ? 255 : signaled ? WTERMSIG(status) : WEXITSTATUS(status);
  char text[48];
  end = text + sizeof(text);
  *--end = '\0';
  *--end = '\n';
  char* first = FormatDecimal(value, end);
  const char* kind = signaled ? "signal " : "exit ";
  size_t kind_len = signaled ? 7 : 5;
  first -= kind_len;
  for (size_t i = 0; i < kind_len; ++i) first[i] = kind[i];
  (void)WriteFileAtomically(args.exit_path, args.exit_tmp_path, first);
  _exit(signaled ? (128 + value) & 0xff : value);
}

}  // namespace weft::nm::spawn_internal
