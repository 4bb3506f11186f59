// Copyright Weft authors. `weft config import-yarn`: an Apache Hadoop YARN operator's XML
// configuration converted into Weft's (config/yarn_import.h), written to files. `weft config
// show DAEMON`: a daemon's effective configuration from its config file and flags
// (cli/daemon_config.h), as a table or as a config file.
#ifndef WEFT_CLI_CONFIG_COMMAND_H_
#define WEFT_CLI_CONFIG_COMMAND_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds the `config` subcommand group to `app`; when one runs, its exit code is stored in
// *exit_code: 0 on success, 2 for a usage error (a missing, conflicting or malformed argument),
// 1 for any other failure (an unreadable or invalid input file, an output file that exists).
// Errors are one line on stderr.
void AddConfigCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_CONFIG_COMMAND_H_
