// Copyright Weft authors. `weft app submit|list|status|kill|wait|run-shell`: applications on a
// live cluster, through the RM's ClientService.
#ifndef WEFT_CLI_APP_COMMAND_H_
#define WEFT_CLI_APP_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `app` subcommand group to `app`; when one runs, its exit code is stored in
// *exit_code: 0 on success, 1 on an error (one line "weft: ..." on stderr). Commands that wait
// for an application exit 0 only when it FINISHED with final status SUCCEEDED.
void AddAppCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_APP_COMMAND_H_
