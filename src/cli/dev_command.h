// Copyright Weft authors. `weft dev`: a whole cluster in one process for development, an RM and
// N NodeManagers on 127.0.0.1 with the RM's state in SQLite under a data directory.
#ifndef WEFT_CLI_DEV_COMMAND_H_
#define WEFT_CLI_DEV_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `dev` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddDevCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_DEV_COMMAND_H_
