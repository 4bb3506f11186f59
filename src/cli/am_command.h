// Copyright Weft authors. `weft am shell`: the distributed-shell ApplicationMaster, as run
// inside its AM container (by `weft app run-shell`).
#ifndef WEFT_CLI_AM_COMMAND_H_
#define WEFT_CLI_AM_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `am` subcommand group to `app`; when one runs, its exit code is stored in
// *exit_code (0 when the application SUCCEEDED).
void AddAmCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_AM_COMMAND_H_
