// weft: the command-line entry point. One binary, one subcommand per job.
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/synchronization/mutex.h"
#include "cli/accounting_command.h"
#include "cli/admin_command.h"
#include "cli/am_command.h"
#include "cli/app_command.h"
#include "cli/certs_command.h"
#include "cli/cli_common.h"
#include "cli/completion_command.h"
#include "cli/config_command.h"
#include "cli/demo_command.h"
#include "cli/dev_command.h"
#include "cli/federation_command.h"
#include "cli/gpg_command.h"
#include "cli/history_command.h"
#include "cli/nm_command.h"
#include "cli/node_command.h"
#include "cli/rm_command.h"
#include "cli/router_command.h"
#include "cli/sim_command.h"
#include "cli/transfer_command.h"
#include "cli/web_command.h"
#include "common/log.h"
#include "common/private_files.h"

int main(int argc, char** argv) {
  // Abseil's mutex deadlock detection keeps a global lock-order graph updated on every
  // Mutex::Lock: about 4% of the RM loop's time under `weft bench rm`. The unit tests keep it;
  // the shipped binary does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  CLI::App app{"weft: a cluster resource manager in the style of Apache Hadoop YARN"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "weft " WEFT_VERSION);  // the CMake project version
  int exit_code = 0;
  app.fallthrough();  // subcommands inherit it: parent options (--log-level) go anywhere
  weft::cli::AddRmCommand(app, &exit_code);
  weft::cli::AddRouterCommand(app, &exit_code);
  weft::cli::AddNmCommand(app, &exit_code);
  weft::cli::AddDevCommand(app, &exit_code);
  weft::cli::AddAppCommand(app, &exit_code);
  weft::cli::AddNodeCommand(app, &exit_code);
  weft::cli::AddAmCommand(app, &exit_code);
  weft::cli::AddQueueCommand(app, &exit_code);
  weft::cli::AddAdminCommand(app, &exit_code);
  weft::cli::AddCertsCommand(app, &exit_code);
  weft::cli::AddBenchCommand(app, &exit_code);
  weft::cli::AddDemoCommand(app, &exit_code);
  weft::cli::AddSimCommand(app, &exit_code);
  weft::cli::AddTransferCommand(app, &exit_code);
  weft::cli::AddGpgCommand(app, &exit_code);
  weft::cli::AddFederationCommand(app, &exit_code);
  weft::cli::AddConfigCommand(app, &exit_code);
  weft::cli::AddHistoryCommand(app, &exit_code);
  weft::cli::AddWebCommand(app, &exit_code);
  weft::cli::AddAccountingCommand(app, &exit_code);
  weft::cli::AddCompletionCommand(app, &exit_code);  // hidden; walks the tree built above
  // The daemons' log threshold (common/log.h), accepted before or after the subcommand
  // (`weft rm --log-level debug`). Logs go to stderr, named by the subcommand.
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "log threshold: debug, info, warn, error or off")
      ->capture_default_str()
      ->check([](const std::string& text) {
        absl::StatusOr<weft::log::Level> level = weft::log::ParseLevel(text);
        return level.ok() ? std::string() : std::string(level.status().message());
      });
  app.parse_complete_callback([&app, &log_level] {
    const std::vector<CLI::App*> sub = app.get_subcommands();
    // A one-shot report (the demo, the simulator) prints its result on stdout: its in-process
    // daemons log warnings and errors only, unless --log-level asks for more.
    static const std::set<std::string> kReports = {"demo", "sim"};
    std::string level = log_level;
    if (app.get_option("--log-level")->count() == 0 && !sub.empty() &&
        kReports.count(sub.front()->get_name()) > 0)
      level = "warn";
    weft::log::Init(sub.empty() ? "weft" : sub.front()->get_name(), *weft::log::ParseLevel(level));
    // Daemons keep keys, tokens and state: what they write is theirs alone unless a mode is
    // chosen explicitly (common/private_files.h; containers get their own umask).
    static const std::set<std::string> kDaemons = {"rm", "nm", "router", "gpg", "dev", "demo"};
    if (!sub.empty() && kDaemons.count(sub.front()->get_name()) > 0) weft::SetDaemonUmask();
    // What would otherwise reach gRPC as a malformed header and abort the process.
    if (absl::Status s = weft::cli::CheckClientEnvironment(); !s.ok()) {
      throw CLI::ValidationError(std::string(s.message()));
    }
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
