// Copyright Weft authors.
#include "cli/app_logs.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/cli_common.h"
#include "cli/munge_http.h"
#include "common/terminal_text.h"
#include "nlohmann/json.hpp"
#include "web/http.h"

namespace weft::cli {
namespace {

// How long one HTTP request may take, s.
constexpr int kHttpTimeoutS = 30;
// --follow: the poll interval grows from the first to the second while nothing new comes, ms.
constexpr int64_t kFollowInitialMs = 100;
constexpr int64_t kFollowMaxMs = 1000;
// --follow gives up after this many polls in a row that reached no NM.
constexpr int kFollowMaxFailures = 30;
// A log file is read in pieces of at most the servers' answer size; this bounds the pieces.
constexpr int kMaxPieces = 1 << 16;

struct LogsFlags {
  std::string rm_address;
  std::string rm_http;
  std::string app_id;
  std::vector<std::string> containers;
  std::vector<std::string> log_files;
  std::vector<std::string> nodes;
  bool follow = false;
};

using Fetched = HttpAnswer;

// GET http://host_port/target as the caller (CallAsUser). Unavailable "cannot reach
// http://HOST:PORT: ..." when the server cannot be reached.
absl::StatusOr<Fetched> HttpGet(const std::string& host_port, const std::string& target) {
  absl::StatusOr<Fetched> f = CallAsUser("GET", host_port, target, kHttpTimeoutS);
  if (absl::IsUnavailable(f.status()))
    return absl::UnavailableError(
        absl::StrCat("cannot reach http://", host_port, ": ", f.status().message()));
  return f;
}

// One container's logs as a server lists them.
struct ContainerLogs {
  std::string container_id;
  std::string node_id;
  std::string type;    // LOCAL or AGGREGATED
  std::string server;  // host:port of the web server that holds them
  bool from_rm = false;
  bool running = false;
  std::vector<std::string> files;
};

// Where one file's bytes from `start` are.
std::string FileTarget(const ContainerLogs& c, const std::string& app_id, const std::string& file,
                       int64_t start) {
  if (c.from_rm)
    return absl::StrCat("/ws/v1/cluster/apps/", app_id,
                        "/logs?containerid=", web::PercentEncode(c.container_id),
                        "&filename=", web::PercentEncode(file), "&start=", start);
  return absl::StrCat("/node/containerlogs/", c.container_id, "/-/", web::PercentEncode(file),
                      "?start=", start);
}

// The listing (web/container_logs.h LogListing) into `out`; node ids from it unless
// `node_id` is given.
absl::Status ParseListing(const Fetched& f, const std::string& server, bool from_rm,
                          const std::string& node_id, std::vector<ContainerLogs>* out) {
  nlohmann::json j = nlohmann::json::parse(f.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("containerLogsInfo") || !j["containerLogsInfo"].is_array())
    return absl::DataLossError(absl::StrCat("http://", server, " sent no containerLogsInfo"));
  for (const auto& c : j["containerLogsInfo"]) {
    if (!c.is_object()) continue;
    ContainerLogs logs;
    logs.container_id = c.value("containerId", "");
    logs.node_id = node_id.empty() ? c.value("nodeId", "") : node_id;
    logs.type = c.value("logAggregationType", from_rm ? "AGGREGATED" : "LOCAL");
    logs.running = c.value("running", false);
    logs.server = server;
    logs.from_rm = from_rm;
    if (c.contains("containerLogInfo") && c["containerLogInfo"].is_array()) {
      for (const auto& file : c["containerLogInfo"]) {
        if (file.is_object() && file.contains("fileName") && file["fileName"].is_string())
          logs.files.push_back(file["fileName"].get<std::string>());
      }
    }
    if (!logs.container_id.empty()) out->push_back(std::move(logs));
  }
  return absl::OkStatus();
}

// A refusal (401/403) as an error that names the server; other statuses as NotFound.
absl::Status HttpError(const Fetched& f, const std::string& what) {
  if (f.status == 401 || f.status == 403)
    return absl::PermissionDeniedError(
        absl::StrCat(what, ": refused (", f.status, "): ", f.ErrorMessage()));
  return absl::NotFoundError(absl::StrCat(what, ": ", f.status, " ", f.ErrorMessage()));
}

// The RM's aggregated logs of the app: NotFound when it has none (aggregation off, not yet).
absl::StatusOr<std::vector<ContainerLogs>> ListAggregated(const LogsFlags& flags) {
  absl::StatusOr<Fetched> f =
      HttpGet(flags.rm_http, absl::StrCat("/ws/v1/cluster/apps/", flags.app_id, "/logs"));
  if (!f.ok()) return f.status();
  if (f->status != 200)
    return HttpError(*f, absl::StrCat("aggregated logs at http://", flags.rm_http));
  std::vector<ContainerLogs> out;
  if (absl::Status s = ParseListing(*f, flags.rm_http, /*from_rm=*/true, "", &out); !s.ok())
    return s;
  return out;
}

bool NodeWanted(const LogsFlags& flags, const v1::NodeReport& n) {
  if (flags.nodes.empty()) return true;
  const std::string host = n.node_id().substr(0, n.node_id().rfind(':'));
  return std::any_of(flags.nodes.begin(), flags.nodes.end(),
                     [&](const std::string& want) { return want == n.node_id() || want == host; });
}

// The app's logs on the NMs (every node the RM knows, or --node's). Unreachable nodes are
// skipped with a warning; a refusal is an error.
absl::StatusOr<std::vector<ContainerLogs>> ListOnNodes(RmClient& client, const LogsFlags& flags) {
  v1::ListNodesRequest req;
  v1::ListNodesResponse resp;
  if (absl::Status s = client.Call(&v1::ClientService::Stub::ListNodes, req, &resp); !s.ok())
    return s;
  std::vector<ContainerLogs> out;
  for (const v1::NodeReport& n : resp.nodes()) {
    if (!NodeWanted(flags, n) || n.http_address().empty()) continue;
    absl::StatusOr<Fetched> f = HttpGet(
        n.http_address(), absl::StrCat("/ws/v1/node/apps/", flags.app_id, "/containerlogs"));
    if (!f.ok()) {
      std::cerr << "weft: skipping node "
                << EscapeForTerminal(absl::StrCat(n.node_id(), ": ", f.status().message())) << "\n";
      continue;
    }
    const std::string what = absl::StrCat("logs on node ", n.node_id());
    if (f->status == 401 || f->status == 403) return HttpError(*f, what);
    if (f->status != 200) {
      std::cerr << "weft: skipping node "
                << EscapeForTerminal(
                       absl::StrCat(n.node_id(), ": ", f->status, " ", f->ErrorMessage()))
                << "\n";
      continue;
    }
    if (absl::Status s = ParseListing(*f, n.http_address(), false, n.node_id(), &out); !s.ok())
      return s;
  }
  return out;
}

bool Wanted(const std::vector<std::string>& filter, const std::string& name) {
  return filter.empty() || std::find(filter.begin(), filter.end(), name) != filter.end();
}

// A whole log file, in pieces (a server answers at most a few MiB at once).
absl::StatusOr<std::string> ReadWhole(const ContainerLogs& c, const std::string& app_id,
                                      const std::string& file) {
  std::string content;
  int64_t length = -1;
  for (int piece = 0; piece < kMaxPieces; ++piece) {
    absl::StatusOr<Fetched> f =
        HttpGet(c.server, FileTarget(c, app_id, file, static_cast<int64_t>(content.size())));
    if (!f.ok()) return f.status();
    if (f->status != 200)
      return HttpError(*f, absl::StrCat(file, " of ", c.container_id, " at http://", c.server));
    if (length < 0 && !absl::SimpleAtoi(f->Header("X-Weft-Log-Length"), &length)) length = 0;
    content += f->body;
    if (f->body.empty() || static_cast<int64_t>(content.size()) >= length) break;
  }
  return content;
}

// YARN's `yarn logs` layout. The headers are escaped (a container names its own log files);
// the logs themselves are printed as they are, like `yarn logs` and `cat`.
absl::Status PrintContainer(const ContainerLogs& c, const LogsFlags& flags) {
  std::cout << "Container: " << EscapeForTerminal(c.container_id) << " on "
            << EscapeForTerminal(c.node_id) << "\n"
            << "LogAggregationType: " << EscapeForTerminal(c.type) << "\n"
            << std::string(56, '=') << "\n";
  for (const std::string& file : c.files) {
    if (!Wanted(flags.log_files, file)) continue;
    absl::StatusOr<std::string> content = ReadWhole(c, flags.app_id, file);
    if (!content.ok()) return content.status();
    std::cout << "LogType:" << EscapeForTerminal(file) << "\n"
              << "LogLength:" << content->size() << "\n"
              << "LogContents:\n"
              << *content;
    if (!content->empty() && content->back() != '\n') std::cout << "\n";
    std::cout << "End of LogType:" << EscapeForTerminal(file) << "\n"
              << std::string(64, '*') << "\n\n";
  }
  std::cout.flush();
  return absl::OkStatus();
}

// --follow: polls each file from where it was, printing what is new, until none of the
// containers runs and everything is printed.
int Follow(const LogsFlags& flags, const std::vector<ContainerLogs>& containers) {
  struct Stream {
    const ContainerLogs* c;
    std::string file;
    int64_t offset = 0;
    bool done = false;
  };
  std::vector<Stream> streams;
  for (const ContainerLogs& c : containers) {
    std::vector<std::string> files = flags.log_files;
    if (files.empty()) files = {"stdout", "stderr"};
    for (const std::string& f : files) streams.push_back({&c, f, 0, false});
  }
  if (streams.empty()) return PrintError("--follow: no log files to follow");
  const Stream* last = nullptr;
  int64_t wait_ms = kFollowInitialMs;
  int failures = 0;
  for (;;) {  // ends when every stream is done; bounded by kFollowMaxFailures when NMs go away
    bool any_data = false;
    bool any_reached = false;
    bool all_done = true;
    for (Stream& s : streams) {
      if (s.done) continue;
      absl::StatusOr<Fetched> f =
          HttpGet(s.c->server, FileTarget(*s.c, flags.app_id, s.file, s.offset));
      if (!f.ok()) {
        all_done = false;
        continue;
      }
      any_reached = true;
      if (f->status == 404) {  // not written (yet), or removed with its app
        if (!s.c->running || f->Header("X-Weft-Container-Running") != "true") {
          // A file that does not exist while its container has ended never will.
          absl::StatusOr<Fetched> again = HttpGet(
              s.c->server, absl::StrCat("/ws/v1/node/apps/", flags.app_id, "/containerlogs"));
          bool running = false;
          if (again.ok() && again->status == 200) {
            std::vector<ContainerLogs> now;
            if (ParseListing(*again, s.c->server, false, s.c->node_id, &now).ok())
              for (const ContainerLogs& c : now)
                if (c.container_id == s.c->container_id) running = c.running;
          }
          if (!running) {
            s.done = true;
            continue;
          }
        }
        all_done = false;
        continue;
      }
      if (f->status != 200) {
        return PrintError(HttpError(*f, absl::StrCat(s.file, " of ", s.c->container_id)).message());
      }
      if (!f->body.empty()) {
        if (streams.size() > 1 && last != &s)
          std::cout << "\n==> " << EscapeForTerminal(absl::StrCat(s.c->container_id, " ", s.file))
                    << " <==\n";
        last = &s;
        std::cout << f->body << std::flush;
        s.offset += static_cast<int64_t>(f->body.size());
        any_data = true;
      }
      int64_t length = 0;
      (void)absl::SimpleAtoi(f->Header("X-Weft-Log-Length"), &length);
      if (f->Header("X-Weft-Container-Running") != "true" && s.offset >= length) {
        s.done = true;
      } else {
        all_done = false;
      }
    }
    if (all_done) return 0;
    failures = any_reached ? 0 : failures + 1;
    if (failures >= kFollowMaxFailures)
      return PrintError(absl::StrCat("--follow: no NodeManager answered ", kFollowMaxFailures,
                                     " polls in a row; giving up"));
    wait_ms = any_data ? kFollowInitialMs : std::min(wait_ms * 2, kFollowMaxMs);
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
  }
}

bool IsFinal(v1::ApplicationState state) {
  return state == v1::APP_FINISHED || state == v1::APP_FAILED || state == v1::APP_KILLED;
}

int Logs(const LogsFlags& in) {
  LogsFlags flags = in;
  flags.rm_http = RmHttpAddress(flags.rm_http, flags.rm_address);
  RmClient client(flags.rm_address, "");
  absl::StatusOr<v1::ApplicationReport> app = client.GetApplication(flags.app_id);
  if (!app.ok()) return PrintError(app.status().message());
  const bool final = IsFinal(app->state());

  std::vector<ContainerLogs> containers;
  bool found = false;
  if (final && !flags.follow) {
    absl::StatusOr<std::vector<ContainerLogs>> aggregated = ListAggregated(flags);
    if (aggregated.ok()) {
      containers = *std::move(aggregated);
      found = !containers.empty();
    } else if (absl::IsPermissionDenied(aggregated.status())) {
      return PrintError(aggregated.status().message());
    } else if (!absl::IsNotFound(aggregated.status())) {
      std::cerr << "weft: " << EscapeForTerminal(aggregated.status().message())
                << "; looking on the NodeManagers\n";
    }
  }
  if (!found) {
    absl::StatusOr<std::vector<ContainerLogs>> on_nodes = ListOnNodes(client, flags);
    if (!on_nodes.ok()) return PrintError(on_nodes.status().message());
    containers = *std::move(on_nodes);
  }
  std::vector<ContainerLogs> selected;
  for (ContainerLogs& c : containers)
    if (Wanted(flags.containers, c.container_id)) selected.push_back(std::move(c));
  std::sort(selected.begin(), selected.end(), [](const ContainerLogs& a, const ContainerLogs& b) {
    return a.container_id < b.container_id;
  });
  if (selected.empty()) {
    std::string what =
        flags.containers.empty()
            ? absl::StrCat("no logs of ", flags.app_id)
            : absl::StrCat("no logs of container ", absl::StrJoin(flags.containers, ", "));
    return PrintError(absl::StrCat(
        what, " found: ",
        final ? "not aggregated (is the RM's --log-aggregation-dir set? is --rm-http right?) and "
                "no NodeManager holds them any more"
              : "no NodeManager holds any yet"));
  }
  if (flags.follow) {
    if (final)
      std::cerr << "weft: " << EscapeForTerminal(flags.app_id)
                << " has ended; printing what is left\n";
    return Follow(flags, selected);
  }
  for (const ContainerLogs& c : selected) {
    if (absl::Status s = PrintContainer(c, flags); !s.ok()) return PrintError(s.message());
  }
  return 0;
}

}  // namespace

void AddAppLogsCommand(CLI::App* group, int* exit_code) {
  auto f = std::make_shared<LogsFlags>();
  CLI::App* cmd = group->add_subcommand(
      "logs",
      "Print an application's container logs (YARN's `yarn logs`): from the NodeManagers while "
      "it runs, from the RM's aggregated logs once it has ended");
  AddRmOption(cmd, &f->rm_address);
  cmd->add_option("APP_ID", f->app_id, "application id")->required();
  cmd->add_option("--rm-http", f->rm_http,
                  "the RM's web server, HOST:PORT, for aggregated logs (default: $WEFT_RM_HTTP, "
                  "else the --rm host on port 8088)");
  cmd->add_option("--container", f->containers, "only these containers, comma-separated")
      ->delimiter(',');
  cmd->add_option("--log-files", f->log_files,
                  "only these log files, comma-separated, e.g. stdout,stderr (default: all)")
      ->delimiter(',');
  cmd->add_option("--node", f->nodes, "only logs on these nodes (node id or host), comma-separated")
      ->delimiter(',');
  cmd->add_flag("--follow", f->follow,
                "print new lines of the containers' stdout and stderr as they come, until the "
                "containers end");
  cmd->callback([f, exit_code] { *exit_code = Logs(*f); });
}

}  // namespace weft::cli
