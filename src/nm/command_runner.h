// Copyright Weft authors. Runs short administrative commands (tc, iptables) and captures their
// output, behind an interface so tests can check what would be run without root.
#ifndef WEFT_NM_COMMAND_RUNNER_H_
#define WEFT_NM_COMMAND_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft::nm {

// How a command ended and what it printed.
struct CommandResult {
  int exit_code = 0;  // 128 + signal when killed by a signal
  std::string stdout_text;
  std::string stderr_text;
};

// Runs a program to completion. Implementations are thread-safe.
class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv (argv[0] looked up in /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:
  // /bin) with stdin from /dev/null and the caller's environment, and waits for it.
  // A non-zero exit is not an error here: it is in the result. Errors: the program could not
  // be started (NotFound when it does not exist), or reading its output failed.
  virtual absl::StatusOr<CommandResult> Run(const std::vector<std::string>& argv) = 0;

  // The process-wide real runner.
  static CommandRunner* Default();
};

// "tc qdisc add dev eth0 ..." from argv, for messages.
std::string CommandLine(const std::vector<std::string>& argv);

// Run(argv) and require exit 0. The error names the command and carries its stderr, e.g.
// "tc class add dev eth0 ... exited with 2: Error: Specified class not found."
absl::Status RunChecked(CommandRunner* runner, const std::vector<std::string>& argv,
                        std::string* stdout_text = nullptr);

}  // namespace weft::nm

#endif  // WEFT_NM_COMMAND_RUNNER_H_
