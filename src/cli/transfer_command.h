// Copyright Weft authors. `weft transfer send|sink`: bulk TCP transfers measured per second, the
// workload of the transfer job (`weft app run-transfer`) and of experiments/bandwidth.
#ifndef WEFT_CLI_TRANSFER_COMMAND_H_
#define WEFT_CLI_TRANSFER_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

void AddTransferCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_TRANSFER_COMMAND_H_
