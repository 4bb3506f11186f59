// Copyright Weft authors. `weft queue status`, `weft admin ...` and `weft bench rm`.
#ifndef WEFT_CLI_ADMIN_COMMAND_H_
#define WEFT_CLI_ADMIN_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

void AddQueueCommand(CLI::App& app, int* exit_code);
void AddAdminCommand(CLI::App& app, int* exit_code);
void AddBenchCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_ADMIN_COMMAND_H_
