// Copyright Weft authors. `weft federation`: an operator's view of the federation state store
// and the way to set its policies (YARN's `yarn routeradmin -policy`): sub-clusters, app
// homes, per-queue policies.
#ifndef WEFT_CLI_FEDERATION_COMMAND_H_
#define WEFT_CLI_FEDERATION_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `federation` subcommand to `app`; when it runs, its exit code is in *exit_code.
void AddFederationCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_FEDERATION_COMMAND_H_
