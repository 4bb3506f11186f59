// Copyright Weft authors. The child side of spawning a container's process: the steps a child
// runs between fork and exec, and the monitor that waits for a container's program and records
// how it ended (OsEnv::SpawnMonitored). Used by the NodeManager (after fork) and by the
// stand-alone monitor binary weft-container-monitor (after exec), so both behave the same.
// Everything here is async-signal-safe and allocates nothing; libc only.
#ifndef WEFT_NM_SPAWN_CHILD_H_
#define WEFT_NM_SPAWN_CHILD_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace weft::nm::spawn_internal {

// Steps of the child between fork and exec (and of a monitor before it forks its program); a
// failure is reported as a ChildReport on a pipe.
enum ChildStep : int {
  kSetsid,
  kChdir,
  kStdin,
  kStdout,
  kStderr,
  kSetgroups,
  kSetgid,
  kSetuid,
  kNoNewPrivs,
  kExec,
  kMonitorFds,
  kMonitorFork,
  kSeccomp
};

// What a child (or a monitor) writes on its report pipe: one record, at most PIPE_BUF bytes so
// that the writes of a monitor and of its program never interleave.
struct ChildReport {
  enum Kind : int32_t { kFailed = 1, kStarted = 2 };
  int32_t kind = 0;
  int32_t step = 0;   // kFailed: the ChildStep
  int32_t error = 0;  // kFailed: errno
  int32_t pid = 0;    // kStarted: the monitor's program
};

// Everything the child needs, prepared before fork: after fork the child of a multi-threaded
// process may only call async-signal-safe functions, so it must not allocate.
struct ChildArgs {
  int go_fd;      // read end: one byte once the parent is done with before_exec; -1: no wait
  int report_fd;  // write end, close-on-exec: ChildReport, or EOF when exec succeeded
  int stdin_fd, stdout_fd, stderr_fd;  // all >= 3 (or already 0, 1, 2 under a monitor)
  const char* work_dir;
  const char* program;
  char* const* argv;
  char* const* envp;
  bool set_ids;  // run as uid/gid/groups below
  uid_t uid;
  gid_t gid;
  const gid_t* groups;
  size_t num_groups;
  const char* oom_score_adj;  // written to /proc/self/oom_score_adj first; null: left alone
  // A seccomp filter before exec refuses to create user namespaces (unshare/clone with
  // CLONE_NEWUSER: EPERM; clone3, whose flags a filter cannot read: ENOSYS, and libc falls back
  // to clone). Needs kUserNamespaceFilterSupported.
  bool deny_user_namespaces;
};

// Whether this build can refuse user namespaces (x86-64: native, i386 and x32 system calls).
#if defined(__x86_64__)
inline constexpr bool kUserNamespaceFilterSupported = true;
#else
inline constexpr bool kUserNamespaceFilterSupported = false;
#endif

// What a monitor needs besides its program's ChildArgs; prepared before fork.
struct MonitorArgs {
  ChildArgs program;  // go_fd -1, fds 0, 1, 2 and 3 (the monitor moves them there)
  int go_fd;
  int report_fd;
  int stdin_fd, stdout_fd, stderr_fd;
  const char* pid_path;
  const char* pid_tmp_path;
  const char* exit_path;
  const char* exit_tmp_path;
  // Bytes of stdout and of stderr each kept on disk; 0 = unlimited (the program then writes to
  // the files itself). Otherwise the program writes into pipes and the monitor copies them into
  // the files; a file about to pass the limit keeps only its newest bytes (at most half the
  // limit) after a one-line note of how much was dropped, so neither ever holds more than
  // max(limit, kMinLogLimitBytes) bytes.
  int64_t log_limit_bytes;
  // Where the monitor records, before the exit file, how many bytes it dropped ("stdout N\n",
  // "stderr N\n", the streams that lost some); not written when none did.
  const char* logs_path;
  const char* logs_tmp_path;
};

// The smallest log limit the monitor applies (a smaller one is raised to this), bytes.
inline constexpr int64_t kMinLogLimitBytes = 256 * 1024;

// Writes one report on `fd` (errors ignored).
void WriteReport(int fd, const ChildReport& report);
// Reports the failed `step` with errno on `report_fd` and exits 127.
[[noreturn]] void ChildFail(int report_fd, int step);
// Marks every descriptor >= `from` close-on-exec (`close_all`: closes them).
void CloseFrom(int from, bool close_all);
// Runs in the child after fork: async-signal-safe calls only. Sets it up and execs the program.
[[noreturn]] void RunChild(const ChildArgs& args);
// The decimal digits of `value`, written backwards from `end`; returns the first character.
char* FormatDecimal(int64_t value, char* end);
// Writes `text` to `tmp_path` and renames it to `path` (async-signal-safe).
bool WriteFileAtomically(const char* path, const char* tmp_path, const char* text);
// The monitor: waits for go, forks its program, records its pid and then its end, and exits
// with the program's status. See OsEnv::SpawnMonitored. It is a child sub-reaper
// (PR_SET_CHILD_SUBREAPER): every descendant the program orphans (double forks, setsid
// daemons) is re-parented to it, it reaps them as they end, and once the program has ended it
// SIGKILLs every descendant that is left and waits until none remains before it records the
// end, so a container leaves no process behind, with or without cgroups.
[[noreturn]] void RunMonitor(const MonitorArgs& args);

}  // namespace weft::nm::spawn_internal

#endif  // WEFT_NM_SPAWN_CHILD_H_
