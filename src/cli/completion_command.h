// Copyright Weft authors. `weft completion bash`: a bash completion script generated from the
// CLI11 tree of subcommands and options, so that it never falls behind the commands. The
// Debian package installs its output as /usr/share/bash-completion/completions/weft.
#ifndef WEFT_CLI_COMPLETION_COMMAND_H_
#define WEFT_CLI_COMPLETION_COMMAND_H_

#include <string>
#include <string_view>

#include "CLI/CLI.hpp"

namespace weft::cli {

// The bash completion script for `program` whose command line is `root` (fully built: every
// subcommand and option added). It completes, at each level of subcommands, the visible
// subcommand names (hidden ones, those in group "", are left out), the long options of that
// level and of `root` (root's options are accepted anywhere: the CLI falls through), and file
// names for the value of an option that takes one. Deterministic: the same tree gives the
// same script.
std::string BashCompletionScript(const CLI::App& root, std::string_view program);

// Adds the hidden `completion` subcommand group (`completion bash`) to `app`. Call it once;
// the tree is walked when the command runs, so subcommands added after it are included.
// *exit_code: 0.
void AddCompletionCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_COMPLETION_COMMAND_H_
