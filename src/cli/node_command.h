// Copyright Weft authors. `weft node list|status`: the cluster's NodeManagers as the RM sees
// them.
#ifndef WEFT_CLI_NODE_COMMAND_H_
#define WEFT_CLI_NODE_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `node` subcommand group to `app`; when one runs, its exit code is stored in
// *exit_code (1 on an error, reported as one line on stderr).
void AddNodeCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_NODE_COMMAND_H_
