// Copyright Weft authors. `weft gpg`: runs the federation's Global Policy Generator
// (federation/gpg/global_policy_generator.h) until SIGINT or SIGTERM.
#ifndef WEFT_CLI_GPG_COMMAND_H_
#define WEFT_CLI_GPG_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `gpg` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddGpgCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_GPG_COMMAND_H_
