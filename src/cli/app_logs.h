// Copyright Weft authors. `weft app logs`: an application's container logs (YARN's
// `yarn logs -applicationId`), from the NMs' web servers while they hold them and from the
// RM's aggregated logs once the application has ended.
#ifndef WEFT_CLI_APP_LOGS_H_
#define WEFT_CLI_APP_LOGS_H_

#include "CLI/CLI.hpp"

namespace weft::cli {

// Adds `logs` to the `app` group `group`; when it runs, its exit code goes to *exit_code: 0
// when it printed the logs asked for (or followed them to their end), 1 on an error (one line
// "weft: ..." on stderr: no such app, no logs found, refused by the app's view ACL).
void AddAppLogsCommand(CLI::App* group, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_APP_LOGS_H_
