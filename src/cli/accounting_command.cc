// Copyright Weft authors.
#include "cli/accounting_command.h"

#include <cstdint>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "cli/history_command.h"
#include "nlohmann/json.hpp"
#include "web/history_api.h"

namespace weft::cli {
namespace {

struct ReportFlags {
  std::string history;
  std::string by = "user";
  std::string since = "30d";
  std::string until;
  bool csv = false;
  bool json = false;
};

std::string Hours(int64_t unit_seconds) {
  return absl::StrFormat("%.2f", static_cast<double>(unit_seconds) / 3600.0);
}

// A CSV field: quoted when it holds a comma, quote or line break (RFC 4180).
std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

int Report(const ReportFlags& f) {
  if (f.by != "user" && f.by != "queue")
    return PrintError(absl::StrCat("--by '", f.by, "': one of user, queue"));
  if (f.csv && f.json) return PrintError("--csv and --json do not go together");
  const int64_t now = absl::ToUnixMillis(absl::Now());
  absl::StatusOr<int64_t> since = ParseTimeFlag("--since", f.since, now);
  if (!since.ok()) return PrintError(since.status().message());
  int64_t until_ms = now;
  if (!f.until.empty()) {
    absl::StatusOr<int64_t> until = ParseTimeFlag("--until", f.until, now);
    if (!until.ok()) return PrintError(until.status().message());
    until_ms = *until;
  }
  if (*since > until_ms) return PrintError("--since is after --until");
  absl::StatusOr<nlohmann::json> j =
      HistoryGet(f.history, absl::StrCat(web::HistoryApi::kPrefix, "/accounting?by=", f.by,
                                         "&since=", *since, "&until=", until_ms));
  if (!j.ok()) return PrintError(j.status().message());
  if (f.json) {
    std::cout << j->dump() << std::endl;
    return 0;
  }
  const nlohmann::json report = j->value("accounting", nlohmann::json::object());
  // Allocated: what the scheduler granted (YARN's memorySeconds, vcoreSeconds), in hours.
  // Measured: what the NMs' cgroups charged.
  std::vector<std::vector<std::string>> rows = {{f.by, "applications", "memory_mb_hours",
                                                 "vcore_hours", "memory_mb_hours_used", "cpu_hours",
                                                 "network_tx_bytes"}};
  if (!f.csv)
    rows[0] = {absl::AsciiStrToUpper(f.by),
               "APPS",
               "MEMORY(MB-h)",
               "VCORES(vcore-h)",
               "MEM-USED(MB-h)",
               "CPU(h)",
               "NET-TX(bytes)"};
  for (const nlohmann::json& line : report.value("line", nlohmann::json::array())) {
    rows.push_back({line.value(f.by, ""), absl::StrCat(line.value("applications", int64_t{0})),
                    Hours(line.value("memorySeconds", int64_t{0})),
                    Hours(line.value("vcoreSeconds", int64_t{0})),
                    Hours(line.value("memoryMbSecondsUsed", int64_t{0})),
                    absl::StrFormat("%.2f", line.value("cpuTimeMs", int64_t{0}) / 3.6e6),
                    absl::StrCat(line.value("networkTxBytes", int64_t{0}))});
  }
  if (f.csv) {
    for (const auto& row : rows) {
      std::vector<std::string> fields;
      for (const std::string& cell : row) fields.push_back(CsvField(cell));
      std::cout << absl::StrJoin(fields, ",") << "\n";
    }
    std::cout << std::flush;
    return 0;
  }
  std::cout << "Applications finished " << FormatTimeMs(*since) << " - "
            << FormatTimeMs(until_ms) << ", by " << f.by;
  if (!report.value("complete", true)) std::cout << " (your own line only: you are not an admin)";
  std::cout << "\n";
  PrintTable(rows);
  return 0;
}

}  // namespace

void AddAccountingCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "accounting", "Resource usage of finished applications (from the history server)");
  group->require_subcommand(1);
  auto f = std::make_shared<ReportFlags>();
  CLI::App* cmd = group->add_subcommand(
      "report",
      "Usage per user or queue over a time window (as sreport's "
      "AccountUtilizationByUser): allocated MB-hours and vcore-hours, measured "
      "memory, CPU hours and network bytes");
  AddHistoryOption(cmd, &f->history);
  cmd->add_option("--by", f->by, "user or queue")->capture_default_str();
  cmd->add_option("--since", f->since,
                  "apps that finished from: 7d, 12h, an ISO date or time, or ms since the epoch")
      ->capture_default_str();
  cmd->add_option("--until", f->until, "... until (exclusive; default now), the same forms");
  cmd->add_flag("--csv", f->csv, "comma-separated values, a header line first");
  cmd->add_flag("--json", f->json, "the history server's JSON");
  cmd->callback([f, exit_code] { *exit_code = Report(*f); });
}

}  // namespace weft::cli
