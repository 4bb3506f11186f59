// Copyright Weft authors. `weft web login`: signs a browser in to the RM's web UI (docs/web.md,
// "Signing in a browser").
#ifndef WEFT_CLI_WEB_COMMAND_H_
#define WEFT_CLI_WEB_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `web` group (`web login`) to `app`; a command's exit code goes to *exit_code: 0 when
// it printed a sign-in link, 1 on an error (one line "weft: ..." on stderr).
void AddWebCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_WEB_COMMAND_H_
