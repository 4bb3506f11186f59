// Copyright Weft authors. weft-container-monitor: a container's monitor as a small program of
// its own. The NodeManager starts it with posix_spawn (no copy of the NM's address space, which
// a fork of the multi-threaded NM costs in page tables and copy-on-write faults at every
// launch), and it does what the forked monitor does (spawn_child.h, RunMonitor): waits for the
// NM's go, forks the container's program, records its pid and then how it ended.
//
// Not for people. Usage, with the descriptors already in place:
//   weft-container-monitor PID_FILE EXIT_FILE WORK_DIR OOM_SCORE_ADJ|- UID:GID:G1,G2..|-
//                          LOG_LIMIT_BYTES LOGS_FILE userns=allow|deny PROGRAM ARGV0 [ARGS...]
//   (LOG_LIMIT_BYTES 0: unlimited; LOGS_FILE: where dropped log bytes are recorded;
//   userns=deny: the program may not create user namespaces)
//   fd 0, 1, 2: the program's stdin, stdout and stderr; fd 3: the report pipe (write end);
//   fd 4: the go pipe (read end). The program's environment is this process's environment.
// Exits with the program's status (128 + signal when it was killed), 127 on a failed step
// (reported on fd 3), 2 on bad arguments.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "nm/spawn_child.h"

extern char** environ;

namespace {

bool ParseId(const char* text, unsigned long* out) {
  if (*text == '\0') return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtoul(text, &end, 10);
  return errno == 0 && *end == '\0' && *out <= UINT_MAX - 1;
}

// "UID:GID:G1,G2,..." (the group list may be empty).
bool ParseIds(const std::string& text, uid_t* uid, gid_t* gid, std::vector<gid_t>* groups) {
  const size_t a = text.find(':');
  const size_t b = a == std::string::npos ? a : text.find(':', a + 1);
  if (b == std::string::npos) return false;
  unsigned long u = 0, g = 0;
  if (!ParseId(text.substr(0, a).c_str(), &u) || !ParseId(text.substr(a + 1, b - a - 1).c_str(), &g))
    return false;
  *uid = static_cast<uid_t>(u);
  *gid = static_cast<gid_t>(g);
  std::string rest = text.substr(b + 1);
  size_t pos = 0;
  while (pos < rest.size()) {
    size_t comma = rest.find(',', pos);
    if (comma == std::string::npos) comma = rest.size();
    unsigned long id = 0;
    if (!ParseId(rest.substr(pos, comma - pos).c_str(), &id)) return false;
    groups->push_back(static_cast<gid_t>(id));
    pos = comma + 1;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  using weft::nm::spawn_internal::ChildArgs;
  using weft::nm::spawn_internal::MonitorArgs;
  if (argc < 11) {
    const char usage[] =
        "weft-container-monitor: started by the NodeManager only (see its source for usage)\n";
    (void)!write(STDERR_FILENO, usage, sizeof(usage) - 1);
    return 2;
  }
  const std::string pid_path = argv[1];
  const std::string exit_path = argv[2];
  const std::string pid_tmp = pid_path + ".tmp";
  const std::string exit_tmp = exit_path + ".tmp";
  const std::string logs_path = argv[7];
  const std::string logs_tmp = logs_path + ".tmp";
  char* limit_end = nullptr;
  errno = 0;
  const long long log_limit = std::strtoll(argv[6], &limit_end, 10);
  if (errno != 0 || *argv[6] == '\0' || *limit_end != '\0' || log_limit < 0) return 2;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  const bool set_ids = std::strcmp(argv[5], "-") != 0;
  if (set_ids && !ParseIds(argv[5], &uid, &gid, &groups)) return 2;

  MonitorArgs args;
  ChildArgs& program = args.program;
  program.go_fd = -1;
  program.report_fd = 3;
  program.stdin_fd = STDIN_FILENO;
  program.stdout_fd = STDOUT_FILENO;
  program.stderr_fd = STDERR_FILENO;
  program.work_dir = argv[3];
  if (std::strcmp(argv[8], "userns=deny") != 0 && std::strcmp(argv[8], "userns=allow") != 0)
    return 2;
  program.deny_user_namespaces = std::strcmp(argv[8], "userns=deny") == 0;
  program.program = argv[9];
  program.argv = argv + 10;
  program.envp = environ;
  program.set_ids = set_ids;
  program.uid = uid;
  program.gid = gid;
  program.groups = groups.data();
  program.num_groups = groups.size();
  program.oom_score_adj = std::strcmp(argv[4], "-") == 0 ? nullptr : argv[4];
  args.go_fd = 4;
  args.report_fd = 3;
  args.stdin_fd = STDIN_FILENO;
  args.stdout_fd = STDOUT_FILENO;
  args.stderr_fd = STDERR_FILENO;
  args.pid_path = pid_path.c_str();
  args.pid_tmp_path = pid_tmp.c_str();
  args.exit_path = exit_path.c_str();
  args.exit_tmp_path = exit_tmp.c_str();
  args.log_limit_bytes = log_limit;
  args.logs_path = logs_path.c_str();
  args.logs_tmp_path = logs_tmp.c_str();
  weft::nm::spawn_internal::RunMonitor(args);
}
