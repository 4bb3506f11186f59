// Copyright Weft authors. `weft accounting report`: resource usage of finished applications per
// user or queue over a time window, from the history server (GET
// /ws/v1/applicationhistory/accounting), as Slurm's `sreport cluster AccountUtilizationByUser`.
#ifndef WEFT_CLI_ACCOUNTING_COMMAND_H_
#define WEFT_CLI_ACCOUNTING_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

void AddAccountingCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_ACCOUNTING_COMMAND_H_
