// Copyright Weft authors. `weft sim`: replay a workload trace on a simulated cluster.
#ifndef WEFT_CLI_SIM_COMMAND_H_
#define WEFT_CLI_SIM_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `sim` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddSimCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_SIM_COMMAND_H_
