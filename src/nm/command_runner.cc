// Copyright Weft authors. The real CommandRunner: posix_spawn with pipes for stdout and stderr.
#include "nm/command_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/errors.h"

extern char** environ;

namespace weft::nm {
namespace {

constexpr char kSearchPath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The first executable `name` on kSearchPath, or `name` itself when it holds a '/'.
std::string Resolve(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = kSearchPath;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    std::string candidate = absl::StrCat(path.substr(start, end - start), "/", name);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

class RealCommandRunner : public CommandRunner {
 public:
  absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv) override {
    if (argv.empty()) return absl::InvalidArgumentError("running a command: empty argv");
    const std::string program = Resolve(argv[0]);
    if (program.empty()) {
      return absl::NotFoundError(absl::StrCat("running '", CommandLine(argv), "': ", argv[0],
                                              " not found in ", kSearchPath));
    }
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) < 0) return ErrnoError(errno, "pipe2");
    if (pipe2(err_pipe, O_CLOEXEC) < 0) {
      int err = errno;
      close(out_pipe[0]);
      close(out_pipe[1]);
      return ErrnoError(err, "pipe2");
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
    std::vector<char*> args;
    for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    pid_t pid = 0;
    int rc = posix_spawn(&pid, program.c_str(), &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
      close(out_pipe[0]);
      close(err_pipe[0]);
      return ErrnoError(rc, absl::StrCat("running '", CommandLine(argv), "'"));
    }
    CommandResult result;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.stdout_text, &result.stderr_text};
    int open_fds = 2;
    char buffer[16384];
    while (open_fds > 0) {
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      for (int i = 0; i < 2; ++i) {
        if (fds[i].fd < 0 || fds[i].revents == 0) continue;
        ssize_t n = read(fds[i].fd, buffer, sizeof(buffer));
        if (n > 0) {
          sinks[i]->append(buffer, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          close(fds[i].fd);
          fds[i].fd = -1;
          --open_fds;
        }
      }
    }
    for (const pollfd& fd : fds) {
      if (fd.fd >= 0) close(fd.fd);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
      if (errno != EINTR) return ErrnoError(errno, "waitpid");
    }
    result.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
    return result;
  }
};

}  // namespace

CommandRunner* CommandRunner::Default() {
  static CommandRunner* runner = new RealCommandRunner();
  return runner;
}

std::string CommandLine(const std::vector<std::string>& argv) { return absl::StrJoin(argv, " "); }

absl::Status RunChecked(CommandRunner* runner, const std::vector<std::string>& argv,
                        std::string* stdout_text) {
  absl::StatusOr<CommandResult> result = runner->Run(argv);
  if (!result.ok()) return result.status();
  if (result->exit_code != 0) {
    return absl::InternalError(
        absl::StrCat("'", CommandLine(argv), "' exited with ", result->exit_code, ": ",
                     absl::StrReplaceAll(absl::StripAsciiWhitespace(result->stderr_text),
                                         {{"\n", "; "}})));
  }
  if (stdout_text != nullptr) *stdout_text = std::move(result->stdout_text);
  return absl::OkStatus();
}

}  // namespace weft::nm
