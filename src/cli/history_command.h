// Copyright Weft authors. `weft history`: the application history server (YARN's Timeline
// Server serving its Generic Data REST APIs, web/history_api.h) over a history store, with
// retention; `weft history import` fills a store from JSON lines. Also what the CLI's history
// readers (`weft app list --finished`, `weft accounting report`) share: where the server is,
// how to ask it as the caller, and how times are given on the command line.
#ifndef WEFT_CLI_HISTORY_COMMAND_H_
#define WEFT_CLI_HISTORY_COMMAND_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "weft/v1/common.pb.h"

namespace weft::cli {

void AddHistoryCommand(CLI::App& app, int* exit_code);

// The history server the environment names: $WEFT_HISTORY_ADDRESS, "" when unset or empty.
std::string ConfiguredHistoryAddress();
// The history server readers ask without --history: ConfiguredHistoryAddress(), else
// "http://127.0.0.1:8188" (YARN's Timeline Server port).
std::string DefaultHistoryAddress();
// Adds `--history URL` (defaulting to DefaultHistoryAddress()) to `cmd`.
void AddHistoryOption(CLI::App* cmd, std::string* address);

// GET `target` ("/ws/v1/applicationhistory/...") from the history server at `address`
// ("http://host:port" or "host:port") as the caller: the admin secret of $WEFT_SECRET_FILE
// when set, else a fresh MUNGE credential (as cli_common's AddClientCredentials). The parsed
// JSON body of a 200; otherwise an error carrying the server's RemoteException message
// (PermissionDenied for 403, NotFound for 404, InvalidArgument for 400, ...), Unavailable
// naming the address when it cannot be reached.
absl::StatusOr<nlohmann::json> HistoryGet(const std::string& address, const std::string& target);

// A time given on the command line, as ms since the epoch: a duration back from `now_ms`
// ("7d", "12h", "30m", "45s", "2w"), an ISO date or time ("2026-11-20",
// "2026-11-20T10:00:00Z", "2026-11-20T10:00:00+01:00"), or ms since the epoch (digits only).
// InvalidArgument naming `flag` and the three forms otherwise.
absl::StatusOr<int64_t> ParseTimeFlag(absl::string_view flag, absl::string_view text,
                                      int64_t now_ms);

// `weft app list --finished`: the finished apps the history server has, newest first, as a
// table or (json) the server's JSON. `states`: "FINISHED,FAILED" etc. ("" = all); `since`:
// ParseTimeFlag's forms ("" = all time). Returns the exit code.
struct FinishedListFlags {
  std::string history;
  std::string since;
  std::string user;
  std::string queue;
  std::string states;
  int limit = 0;
  bool json = false;
};
int ListFinishedApps(const FinishedListFlags& flags);

// For `weft app status ID` when the RM does not hold the app (it ended and was forgotten, or
// its RM's state is gone): the history server's record of it as the RM would report it, as
// YARN's client asks its history service on ApplicationNotFoundException. Errors: HistoryGet's
// (NotFound when the server does not know it either), DataLoss naming what in the record does
// not fit a report (a state it cannot parse, another app's id).
absl::StatusOr<v1::ApplicationReport> FinishedAppReport(const std::string& history,
                                                        const std::string& app_id);

}  // namespace weft::cli

#endif  // WEFT_CLI_HISTORY_COMMAND_H_
