// Copyright Weft authors.
#include "nm/spawn_child.h"

#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

// ---- The monitor's helpers: async-signal-safe, no allocation.

// Bytes the monitor moves at a time: a pipe read, a log compaction's copy.
constexpr size_t kChunk = 64 * 1024;
// Rounds of the final sweep (kill, reap) before the monitor gives up and records the end.
constexpr int kMaxSweepRounds = 100000;

// SIGCHLD only has to interrupt ppoll; the monitor reaps in its loop.
void OnChild(int) {}

bool PwriteAll(int fd, const char* data, size_t len, off_t offset) {
  while (len > 0) {
    ssize_t n = pwrite(fd, data, len, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
    offset += n;
  }
  return true;
}

// Appends `text` at `out[*len]` (bounded by `cap`).
void Append(char* out, size_t cap, size_t* len, const char* text) {
  while (*text != '\0' && *len < cap) out[(*len)++] = *text++;
}

void AppendNumber(char* out, size_t cap, size_t* len, int64_t value) {
  char digits[24];
  char* end = digits + sizeof(digits);
  *--end = '\0';
  Append(out, cap, len, FormatDecimal(value, end));
}

// One of the program's output streams: copied from a pipe into its log file, keeping at most
// `limit` bytes there.
struct CappedLog {
  const char* name;      // "stdout", "stderr"
  int pipe_fd = -1;      // read end (non-blocking); -1: closed, or no pipe (unlimited)
  int file_fd = -1;      // the log file
  int64_t size = 0;      // bytes in the file
  int64_t note = 0;      // bytes of the truncation note at its start (0: none yet)
  int64_t dropped = 0;   // bytes of output dropped so far
  int64_t limit = 0;
};

// Writes `data` to the end of the log; when it would pass the limit, first keeps only the
// newest bytes (the note, then at most half the limit in all with `data`).
void AppendCapped(CappedLog& log, const char* data, size_t n) {
  if (log.size + static_cast<int64_t>(n) <= log.limit) {
    if (PwriteAll(log.file_fd, data, n, log.size)) log.size += static_cast<int64_t>(n);
    return;
  }
  const int64_t half = log.limit / 2;
  const int64_t data_kept = static_cast<int64_t>(n) < half ? static_cast<int64_t>(n) : half;
  char note[192];
  size_t note_len = 0;
  const int64_t body = log.size - log.note;  // the output in the file, after the old note
  int64_t old_kept = half - data_kept;
  if (old_kept > body) old_kept = body;
  if (old_kept < 0) old_kept = 0;
  log.dropped += (body - old_kept) + (static_cast<int64_t>(n) - data_kept);
  Append(note, sizeof(note), &note_len, "[weft: ");
  AppendNumber(note, sizeof(note), &note_len, log.dropped);
  Append(note, sizeof(note), &note_len, " earlier bytes of this log were dropped: over the ");
  AppendNumber(note, sizeof(note), &note_len, log.limit);
  Append(note, sizeof(note), &note_len, "-byte container log limit]\n");
  // Move the kept tail to just after the note; the source lies beyond the destination (the
  // limit is at least kMinLogLimitBytes), so copying forward never overwrites unread bytes.
  char buffer[kChunk];
  int64_t src = log.size - old_kept;
  int64_t dst = static_cast<int64_t>(note_len);
  for (int64_t moved = 0; moved < old_kept;) {
    size_t want = static_cast<size_t>(old_kept - moved < static_cast<int64_t>(kChunk)
                                          ? old_kept - moved
                                          : static_cast<int64_t>(kChunk));
    ssize_t got = pread(log.file_fd, buffer, want, src + moved);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      old_kept = moved;  // what could be read is what is kept
      break;
    }
    if (!PwriteAll(log.file_fd, buffer, static_cast<size_t>(got), dst + moved)) break;
    moved += got;
  }
  (void)PwriteAll(log.file_fd, note, note_len, 0);
  log.note = static_cast<int64_t>(note_len);
  log.size = dst + old_kept;
  while (ftruncate(log.file_fd, log.size) < 0 && errno == EINTR) {
  }
  data += static_cast<int64_t>(n) - data_kept;
  if (PwriteAll(log.file_fd, data, static_cast<size_t>(data_kept), log.size)) log.size += data_kept;
}

// Copies what the pipe holds now (at most `max_reads` reads) into the log; closes the pipe at
// EOF.
void Pump(CappedLog& log, int max_reads) {
  char buffer[kChunk];
  for (int i = 0; i < max_reads && log.pipe_fd >= 0; ++i) {
    ssize_t n = read(log.pipe_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN: nothing more now
    if (n == 0) {
      close(log.pipe_fd);
      log.pipe_fd = -1;
      return;
    }
    AppendCapped(log, buffer, static_cast<size_t>(n));
  }
}

// The parent pid in /proc/<pid>/stat, or -1.
pid_t ParentOf(pid_t pid) {
  char path[48];
  size_t len = 0;
  Append(path, sizeof(path) - 1, &len, "/proc/");
  AppendNumber(path, sizeof(path) - 1, &len, pid);
  Append(path, sizeof(path) - 1, &len, "/stat");
  path[len] = '\0';
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char stat[512];
  ssize_t n;
  do {
    n = read(fd, stat, sizeof(stat) - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return -1;
  // "<pid> (<comm>) <state> <ppid> ...": comm may hold anything, so from its last ')'.
  ssize_t paren = n - 1;
  while (paren >= 0 && stat[paren] != ')') --paren;
  if (paren < 0 || paren + 4 >= n) return -1;
  ssize_t i = paren + 4;  // ") S " then the parent
  int64_t parent = 0;
  bool any = false;
  while (i < n && stat[i] >= '0' && stat[i] <= '9') {
    parent = parent * 10 + (stat[i++] - '0');
    any = true;
  }
  return any ? static_cast<pid_t>(parent) : -1;
}

// SIGKILLs the program's process group and every child of this process (a sub-reaper's
// children include the descendants that lost their parents). Returns how many children were
// signalled.
int KillChildren(pid_t self, pid_t group) {
  (void)kill(-group, SIGKILL);
  int dir = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return 0;
  int killed = 0;
  alignas(8) char entries[8192];
  while (true) {
    long n = syscall(SYS_getdents64, dir, entries, sizeof(entries));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    for (long offset = 0; offset < n;) {
      // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name.
      unsigned short reclen = 0;
      __builtin_memcpy(&reclen, entries + offset + 16, sizeof(reclen));
      const char* name = entries + offset + 19;
      offset += reclen;
      if (reclen == 0) break;
      int64_t pid = 0;
      bool numeric = *name != '\0';
      for (const char* c = name; *c != '\0'; ++c) {
        if (*c < '0' || *c > '9' || pid > (int64_t{1} << 31)) {
          numeric = false;
          break;
        }
        pid = pid * 10 + (*c - '0');
      }
      if (!numeric || pid == self) continue;
      if (ParentOf(static_cast<pid_t>(pid)) == self &&
          kill(static_cast<pid_t>(pid), SIGKILL) == 0) {
        ++killed;
      }
    }
  }
  close(dir);
  return killed;
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
namespace {

#if defined(__x86_64__)
// Refuses CLONE_NEWUSER in unshare(2) and clone(2) (EPERM) and clone3(2) altogether (ENOSYS),
// for x86-64 system calls, x32 ones (the same numbers with bit 30 set) and i386 ones (int 0x80).
// Everything else is allowed. BPF jumps are forward only: jt/jf count instructions skipped.
constexpr uint32_t kX32Bit = 0x40000000;
constexpr sock_filter kDenyUserNamespaces[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 6),  // else 8
    /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    /* 3 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~kX32Bit),
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 435, 12, 0),  // clone3 -> 17
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 272, 7, 0),   // unshare -> 13
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 56, 6, 0),    // clone -> 13
    /* 7 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 7),  // else 16
    /* 9 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
    /* 10 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 435, 6, 0),  // clone3 -> 17
    /* 11 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 310, 1, 0),  // unshare -> 13
    /* 12 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 120, 0, 3),  // clone -> 13, else 16
    /* 13 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])),  // low half
    /* 14 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, CLONE_NEWUSER),
    /* 15 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),  // no CLONE_NEWUSER -> 16, else 18
    /* 16 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    /* 17 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
    /* 18 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
};
#endif

// Installs the filter (after PR_SET_NO_NEW_PRIVS). False, with errno, if it cannot.
bool DenyUserNamespaces() {
#if defined(__x86_64__)
  sock_fprog program;
  program.len = sizeof(kDenyUserNamespaces) / sizeof(kDenyUserNamespaces[0]);
  program.filter = const_cast<sock_filter*>(kDenyUserNamespaces);
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) == 0;
#else
  errno = ENOSYS;
  return false;
#endif
}

}  // namespace

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
  if (args.deny_user_namespaces && !DenyUserNamespaces()) ChildFail(args.report_fd, kSeccomp);
  // The NodeManager runs with the daemons' private umask (077, common/private_files.h); the
  // container's program gets the conventional 022, as under a login shell. Its own dirs are
  // 0700 whatever it sets.
  umask(022);
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
// hears "started") and every completion a disk flush. Not common/files.h's: this one runs in a
// child after fork (and in the monitor binary), so it may not allocate, lock or use absl.
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
  // SIGCHLD gets a handler that does nothing (so that it interrupts ppoll) and stays blocked
  // except while ppoll waits, so that no child's end is missed between a reap and the wait.
  struct sigaction action = {};
  sigemptyset(&action.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    const bool ignore = sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT ||
                        sig == SIGPIPE || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
    action.sa_handler = ignore ? SIG_IGN : SIG_DFL;
    action.sa_flags = 0;
    if (sig == SIGCHLD) {
      action.sa_handler = OnChild;
      action.sa_flags = SA_NOCLDSTOP | SA_RESTART;
    }
    sigaction(sig, &action, nullptr);  // EINVAL is fine
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t only_child;
  sigemptyset(&only_child);
  sigaddset(&only_child, SIGCHLD);
  sigprocmask(SIG_SETMASK, &only_child, nullptr);
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
  // Orphaned descendants come to the monitor, which reaps them and kills what is left at the
  // end. Without it (a kernel before 3.4) they go to init, as before.
  (void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

  // With a log limit the program writes into pipes, which the monitor copies into the files.
  ChildArgs program = args.program;
  CappedLog logs[2];
  logs[0].name = "stdout";
  logs[0].file_fd = STDOUT_FILENO;
  logs[1].name = "stderr";
  logs[1].file_fd = STDERR_FILENO;
  if (args.log_limit_bytes > 0) {
    const int64_t limit =
        args.log_limit_bytes < kMinLogLimitBytes ? kMinLogLimitBytes : args.log_limit_bytes;
    int write_ends[2];
    for (int i = 0; i < 2; ++i) {
      int fds[2];
      if (pipe2(fds, O_CLOEXEC) < 0) ChildFail(3, kMonitorFds);
      if (fcntl(fds[0], F_SETFL, O_NONBLOCK) < 0) ChildFail(3, kMonitorFds);
      struct stat st;
      logs[i].size = fstat(logs[i].file_fd, &st) == 0 ? st.st_size : 0;
      logs[i].pipe_fd = fds[0];
      logs[i].limit = limit;
      write_ends[i] = fds[1];
    }
    program.stdout_fd = write_ends[0];
    program.stderr_fd = write_ends[1];
  }
  // _Fork: no atfork handlers, which assume the caller's threads.
  pid_t pid = _Fork();
  if (pid < 0) ChildFail(3, kMonitorFork);
  if (pid == 0) RunChild(program);
  if (args.log_limit_bytes > 0) {
    close(program.stdout_fd);
    close(program.stderr_fd);
  }

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

  // Until the program ends: copy its output, reap whatever ends (orphans included).
  int status = 0;
  bool ended = false;
  while (!ended) {
    int child_status = 0;
    pid_t r;
    while ((r = waitpid(-1, &child_status, WNOHANG)) > 0) {
      if (r == pid) {
        status = child_status;
        ended = true;
      }
    }
    if (ended || (r < 0 && errno == ECHILD)) break;
    struct pollfd fds[2];
    int which[2];
    nfds_t count = 0;
    for (int i = 0; i < 2; ++i) {
      if (logs[i].pipe_fd < 0) continue;
      fds[count].fd = logs[i].pipe_fd;
      fds[count].events = POLLIN;
      fds[count].revents = 0;
      which[count++] = i;
    }
    if (ppoll(fds, count, nullptr, &empty) > 0) {
      for (nfds_t i = 0; i < count; ++i) {
        if (fds[i].revents != 0) Pump(logs[which[i]], 1);
      }
    }
  }

  // The program has ended: nothing of the container may outlive it. Kill every descendant
  // (re-parented here when orphaned) until there is none left to reap.
  const pid_t self = getpid();
  for (int round = 0; round < kMaxSweepRounds; ++round) {
    pid_t r;
    int ignored = 0;
    while ((r = waitpid(-1, &ignored, WNOHANG)) > 0) {
    }
    if (r < 0 && errno == ECHILD) break;  // no descendant is left
    for (CappedLog& log : logs) Pump(log, 16);  // writers blocked on a full pipe get on
    if (KillChildren(self, pid) > 0) {
      do {
        r = waitpid(-1, &ignored, 0);  // a killed child ends soon
      } while (r < 0 && errno == EINTR);
    } else {
      // Children exist that /proc does not show yet (being created or ending): a moment.
      struct timespec pause = {0, 1000000};
      (void)ppoll(nullptr, 0, &pause, &empty);
    }
  }
  // Every writer is gone: what the pipes still hold is all there is.
  for (CappedLog& log : logs) {
    Pump(log, 1 << 20);
    if (log.pipe_fd >= 0) close(log.pipe_fd);
  }
  if (logs[0].dropped > 0 || logs[1].dropped > 0) {
    char text[96];
    size_t len = 0;
    for (const CappedLog& log : logs) {
      if (log.dropped == 0) continue;
      Append(text, sizeof(text) - 1, &len, log.name);
      Append(text, sizeof(text) - 1, &len, " ");
      AppendNumber(text, sizeof(text) - 1, &len, log.dropped);
      Append(text, sizeof(text) - 1, &len, "\n");
    }
    text[len] = '\0';
    (void)WriteFileAtomically(args.logs_path, args.logs_tmp_path, text);
  }

  // "exit <code>\n" or "signal <number>\n" (FormatExitFile).
  const bool signaled = ended && WIFSIGNALED(status);
  const int value = !ended ? 255 : signaled ? WTERMSIG(status) : WEXITSTATUS(status);
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
