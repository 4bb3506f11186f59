// Copyright Weft authors.
#include "cli/history_command.h"

#include <httplib.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "cli/munge_http.h"
#include "common/log.h"
#include "google/protobuf/util/json_util.h"
#include "history/lazy_history_store.h"
#include "history/open_history_store.h"
#include "rm/client_auth.h"
#include "scheduler/registry.h"
#include "security/munge.h"
#include "store/state_names.h"
#include "web/history_api.h"
#include "web/http_server.h"
#include "web/ui_assets.h"

namespace weft::cli {
namespace {

// How long one HTTP request of a reader may take, s.
constexpr int kHttpTimeoutS = 30;
// The retention pass runs at start and then this often.
constexpr absl::Duration kRetentionInterval = absl::Hours(1);
constexpr int64_t kDayMs = 24LL * 3600 * 1000;

struct HistoryFlags {
  std::string store;
  std::string bind_host = "127.0.0.1";
  int http_port = 8188;
  web::HttpLimits http_limits;
  bool anonymous_view = false;
  std::vector<std::string> admins;
  std::string scheduler_config;
  std::string munge_socket;
  double retention_days = 0;
  int64_t retention_max_apps = 0;
};

struct ImportFlags {
  std::string store;
  std::string file;
};

std::string OwnUser() {
  if (const struct passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr)
    return pw->pw_name;
  return "";
}

// The history page and its files; everything else is the REST API's.
web::HttpResponse Ui(const web::HttpRequest& req) {
  absl::string_view path = req.path;
  web::HttpResponse r;
  if (path == "/" || path.empty()) {
    r.status = 302;
    r.content_type = "text/plain; charset=utf-8";
    r.body = "see /applicationhistory\n";
    r.headers.emplace_back("Location", "/applicationhistory");
    return r;
  }
  std::string name;
  if (path == "/applicationhistory" || path == "/applicationhistory/") {
    name = "history.html";
  } else if (absl::ConsumePrefix(&path, "/static/")) {
    name = std::string(path);
  } else {
    return web::JsonError(404, absl::StrCat("no such page: ", req.path.substr(0, 128)));
  }
  const web::UiAsset* asset = web::FindUiAsset(name);
  if (asset == nullptr) return web::JsonError(404, "no such file");
  r.content_type = asset->content_type;
  r.body.assign(reinterpret_cast<const char*>(asset->data), asset->size);
  r.headers.emplace_back("Content-Security-Policy",
                         "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                         "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
  return r;
}

// One retention pass: apps finished more than `days` ago (0: none by age) and all but the
// newest `max_apps` (0: no cap) are removed.
void Prune(history::HistoryStore* store, double days, int64_t max_apps) {
  if (days <= 0 && max_apps <= 0) return;
  const int64_t older_than =
      days > 0 ? absl::ToUnixMillis(absl::Now()) - static_cast<int64_t>(days * kDayMs) : 0;
  absl::StatusOr<int64_t> removed =
      store->Prune(older_than, max_apps > 0 ? std::optional<int64_t>(max_apps) : std::nullopt);
  if (!removed.ok()) {
    log::Warn("history_prune_failed", {{"store", store->Describe()}, {"error", removed.status()}});
    return;
  }
  log::Info("history_pruned", {{"store", store->Describe()}, {"applications", *removed}});
}

int RunHistory(const HistoryFlags& f) {
  if (f.store.empty())
    return PrintError("--store is required (memory, sqlite:/abs/path or postgresql://...)");
  // A store that cannot be reached now (a PostgreSQL server that is down) is opened on first
  // use: the server starts and answers 503 until it is back. Any other error is the flag's.
  absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = history::OpenHistoryStore(f.store);
  if (!store.ok() && store.status().code() == absl::StatusCode::kUnavailable) {
    log::Warn("history_store_unavailable", {{"store", f.store}, {"error", store.status()}});
    store = std::unique_ptr<history::HistoryStore>(
        std::make_unique<history::LazyHistoryStore>(f.store));
  }
  if (!store.ok()) return PrintError(absl::StrCat("--store: ", store.status().message()));

  web::HistoryApiOptions options;
  options.anonymous_view = f.anonymous_view;
  options.started_ms = absl::ToUnixMillis(absl::Now());
  if (!f.scheduler_config.empty()) {
    ResourceTypeRegistry registry;
    auto config = scheduler::LoadSchedulerConfigFile(f.scheduler_config, registry);
    if (!config.ok())
      return PrintError(absl::StrCat("--scheduler-config: ", config.status().message()));
    options.queue_config = [parsed = *std::move(config)] { return parsed; };
  }
  rm::ClientAuthOptions auth;
  auth.mode = rm::UserAuthentication::kMunge;
  auth.munge_socket =
      f.munge_socket.empty() ? security::MungeSocketFromEnvironment() : f.munge_socket;
  auth.admins = f.admins;
  auth.rm_user = OwnUser();  // the server's own user is an admin, as the RM's is
  options.authenticate = [auth](const rm::Presented& p) { return rm::AuthenticateClient(auth, p); };
  auto api = std::make_shared<web::HistoryApi>(std::move(options), store->get());

  BlockTerminationSignals();
  web::HttpServerOptions http;
  http.bind_host = f.bind_host;
  http.port = f.http_port;
  http.limits = f.http_limits;
  auto server = web::HttpServer::Start(http, [api](const web::HttpRequest& req) {
    return web::HistoryApi::Handles(req) ? api->Handle(req) : Ui(req);
  });
  if (!server.ok())
    return PrintError(absl::StrCat("starting the web server: ", server.status().message()));

  absl::Notification stop;
  history::HistoryStore* s = store->get();
  std::thread retention([&stop, s, &f] {
    do {
      Prune(s, f.retention_days, f.retention_max_apps);
    } while (!stop.WaitForNotificationWithTimeout(kRetentionInterval));
  });
  std::cout << "weft history: serving " << (*store)->Describe() << " at http://"
            << (*server)->address() << "/applicationhistory (REST " << web::HistoryApi::kPrefix
            << ")" << std::endl;
  WaitForTerminationSignal();
  stop.Notify();
  retention.join();
  (*server)->Stop();
  return 0;
}

// Each line: {"application": {...}}, {"attempt": {...}} or {"container": {...}}, the record
// as protobuf JSON (proto/weft/v1/history.proto). Blank lines and lines starting with '#' are
// skipped. Stops at the first bad line, naming it; the lines before it stay imported.
int RunImport(const ImportFlags& f) {
  absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = history::OpenHistoryStore(f.store);
  if (!store.ok()) return PrintError(absl::StrCat("--store: ", store.status().message()));
  std::ifstream in(f.file);
  if (!in) return PrintError(absl::StrCat("cannot read ", f.file));
  std::string line;
  int64_t n = 0, imported = 0;
  google::protobuf::util::JsonParseOptions parse;
  while (std::getline(in, line)) {
    ++n;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    auto bad = [&](absl::string_view why) {
      return PrintError(
          absl::StrCat(f.file, ":", n, ": ", why, " (", imported, " records imported before it)"));
    };
    if (!j.is_object() || j.size() != 1)
      return bad("expected one object with one key: application, attempt or container");
    const std::string kind = j.begin().key();
    const std::string body = j.begin().value().dump();
    // The record as protobuf JSON (protobuf's own status type: its message is kept).
    auto decode = [&](google::protobuf::Message* r) {
      auto parsed = google::protobuf::util::JsonStringToMessage(body, r, parse);
      return parsed.ok() ? absl::OkStatus()
                         : absl::InvalidArgumentError(
                               absl::StrCat(kind, ": ", std::string(parsed.message())));
    };
    absl::Status s;
    if (kind == "application") {
      v1::ApplicationHistoryRecord r;
      s = decode(&r);
      if (s.ok()) s = (*store)->PutApplication(r);
    } else if (kind == "attempt") {
      v1::AttemptHistoryRecord r;
      s = decode(&r);
      if (s.ok()) s = (*store)->PutAttempt(r);
    } else if (kind == "container") {
      v1::ContainerHistoryRecord r;
      s = decode(&r);
      if (s.ok()) s = (*store)->PutContainer(r);
    } else {
      return bad(absl::StrCat("unknown record kind '", kind, "'"));
    }
    if (!s.ok()) return bad(s.message());
    ++imported;
  }
  std::cout << "weft history import: " << imported << " records into " << (*store)->Describe()
            << std::endl;
  return 0;
}

std::string FormatDurationMs(int64_t ms) {
  if (ms <= 0) return "-";
  const int64_t s = ms / 1000;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrCat(s / 60, "m", s % 60, "s");
  return absl::StrCat(s / 3600, "h", (s % 3600) / 60, "m");
}

}  // namespace

std::string ConfiguredHistoryAddress() {
  const char* env = std::getenv("WEFT_HISTORY_ADDRESS");
  return env != nullptr ? env : "";
}

std::string DefaultHistoryAddress() {
  std::string configured = ConfiguredHistoryAddress();
  if (!configured.empty()) return configured;
  return "http://127.0.0.1:8188";
}

void AddHistoryOption(CLI::App* cmd, std::string* address) {
  *address = DefaultHistoryAddress();
  cmd->add_option("--history", *address,
                  "the history server, http://HOST:PORT (default $WEFT_HISTORY_ADDRESS, else "
                  "http://127.0.0.1:8188)");
}

absl::StatusOr<nlohmann::json> HistoryGet(const std::string& address, const std::string& target) {
  std::string base = address;
  if (absl::StartsWith(base, "https://"))
    return absl::InvalidArgumentError(
        absl::StrCat("--history ", address, ": https is not supported; give http://HOST:PORT"));
  if (!absl::StrContains(base, "://")) base = absl::StrCat("http://", base);
  while (absl::EndsWith(base, "/")) base.pop_back();
  if (!absl::StartsWith(base, "http://") || base.size() == std::string("http://").size())
    return absl::InvalidArgumentError(
        absl::StrCat("--history '", address, "': not http://HOST:PORT"));
  absl::StatusOr<std::string> secret = ClientSecret();
  if (!secret.ok()) return secret.status();
  httplib::Headers headers;
  if (!secret->empty()) {
    headers.emplace("X-Weft-Secret", *secret);
  } else {
    absl::StatusOr<std::string> credential = security::MungeEncode(
        security::MungeSocketFromEnvironment(), security::kClientMungePayload);
    if (!credential.ok()) return credential.status();
    headers.emplace("X-Weft-Munge-Credential", *credential);
  }
  httplib::Client client(base);
  if (!client.is_valid())
    return absl::InvalidArgumentError(
        absl::StrCat("--history ", address, ": not http://HOST:PORT"));
  client.set_connection_timeout(kHttpTimeoutS, 0);
  client.set_read_timeout(kHttpTimeoutS, 0);
  httplib::Result res = client.Get(target.c_str(), headers);
  if (!res)
    return absl::UnavailableError(absl::StrCat("cannot reach the history server at ", base, " (",
                                               httplib::to_string(res.error()),
                                               " error; is `weft history` running there?)"));
  nlohmann::json j = nlohmann::json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (res->status == 200 && !j.is_discarded()) return j;
  const HttpAnswer answer{res->status, res->body, res->headers};
  const std::string message = absl::StrCat("the history server at ", base, " answered ",
                                           res->status, ": ", answer.ErrorMessage());
  switch (res->status) {
    case 400:
      return absl::InvalidArgumentError(message);
    case 401:
      return absl::UnauthenticatedError(message);
    case 403:
      return absl::PermissionDeniedError(message);
    case 404:
      return absl::NotFoundError(message);
    default:
      return absl::UnavailableError(message);
  }
}

absl::StatusOr<int64_t> ParseTimeFlag(absl::string_view flag, absl::string_view text,
                                      int64_t now_ms) {
  const std::string t(absl::StripAsciiWhitespace(text));
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, " '", t,
        "': expected a duration back from now (7d, 12h, 30m, 45s, 2w), an ISO date or time "
        "(2026-11-20, 2026-11-20T10:00:00Z) or ms since the epoch"));
  };
  if (t.empty()) return bad();
  int64_t n = 0;
  if (std::all_of(t.begin(), t.end(), [](char c) { return absl::ascii_isdigit(c); }))
    return absl::SimpleAtoi(t, &n) ? absl::StatusOr<int64_t>(n) : bad();
  // A duration: digits and one unit.
  const char unit = t.back();
  const std::string digits = t.substr(0, t.size() - 1);
  if (!digits.empty() &&
      std::all_of(digits.begin(), digits.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    int64_t unit_ms = 0;
    switch (unit) {
      case 's':
        unit_ms = 1000;
        break;
      case 'm':
        unit_ms = 60 * 1000;
        break;
      case 'h':
        unit_ms = 3600 * 1000;
        break;
      case 'd':
        unit_ms = kDayMs;
        break;
      case 'w':
        unit_ms = 7 * kDayMs;
        break;
      default:
        return bad();
    }
    if (!absl::SimpleAtoi(digits, &n) || n > now_ms / unit_ms) return bad();
    return now_ms - n * unit_ms;
  }
  absl::Time time;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, t, &time, &err) ||
      absl::ParseTime("%Y-%m-%dT%H:%M:%S", t, absl::UTCTimeZone(), &time, &err) ||
      absl::ParseTime("%Y-%m-%d", t, absl::UTCTimeZone(), &time, &err))
    return absl::ToUnixMillis(time);
  return bad();
}

int ListFinishedApps(const FinishedListFlags& f) {
  std::string target = absl::StrCat(web::HistoryApi::kPrefix, "/apps");
  std::vector<std::string> params;
  if (!f.since.empty()) {
    absl::StatusOr<int64_t> since =
        ParseTimeFlag("--since", f.since, absl::ToUnixMillis(absl::Now()));
    if (!since.ok()) return PrintError(since.status().message());
    params.push_back(absl::StrCat("finishedTimeBegin=", *since));
  }
  if (!f.user.empty()) params.push_back(absl::StrCat("user=", web::PercentEncode(f.user)));
  if (!f.queue.empty()) params.push_back(absl::StrCat("queue=", web::PercentEncode(f.queue)));
  if (!f.states.empty()) params.push_back(absl::StrCat("states=", web::PercentEncode(f.states)));
  if (f.limit < 0) return PrintError("--limit: must not be negative");
  if (f.limit > 0) params.push_back(absl::StrCat("limit=", f.limit));
  for (size_t i = 0; i < params.size(); ++i)
    absl::StrAppend(&target, i == 0 ? "?" : "&", params[i]);
  absl::StatusOr<nlohmann::json> j = HistoryGet(f.history, target);
  if (!j.ok()) return PrintError(j.status().message());
  if (f.json) {
    std::cout << j->dump() << std::endl;
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"APPLICATION-ID", "NAME", "USER", "QUEUE", "STATE",
                                                 "FINAL-STATUS", "STARTED", "FINISHED", "ELAPSED",
                                                 "MB-SECONDS", "VCORE-SECONDS"}};
  auto num = [](const nlohmann::json& v) {
    return v.is_number() && v.get<int64_t>() >= 0 ? absl::StrCat(v.get<int64_t>()) : "N/A";
  };
  for (const nlohmann::json& a : j->value("app", nlohmann::json::array())) {
    rows.push_back({a.value("appId", ""), a.value("name", ""), a.value("user", ""),
                    a.value("queue", ""), a.value("appState", ""), a.value("finalAppStatus", ""),
                    FormatTimeMs(a.value("startedTime", int64_t{0})),
                    FormatTimeMs(a.value("finishedTime", int64_t{0})),
                    FormatDurationMs(a.value("elapsedTime", int64_t{0})),
                    num(a.value("memorySeconds", nlohmann::json())),
                    num(a.value("vcoreSeconds", nlohmann::json()))});
  }
  PrintTable(rows);
  return 0;
}

absl::StatusOr<v1::ApplicationReport> FinishedAppReport(const std::string& history,
                                                        const std::string& app_id) {
  absl::StatusOr<nlohmann::json> j = HistoryGet(
      history, absl::StrCat(web::HistoryApi::kPrefix, "/apps/", web::PercentEncode(app_id)));
  if (!j.ok()) return j.status();
  auto bad = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("the history server's record of ", app_id, ": ", what));
  };
  if (!j->is_object()) return bad("not a JSON object");
  auto text = [&](const char* key) {
    auto it = j->find(key);
    return it != j->end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  auto number = [&](const char* key) {
    auto it = j->find(key);
    return it != j->end() && it->is_number_integer() ? it->get<int64_t>() : int64_t{0};
  };
  v1::ApplicationReport r;
  r.set_application_id(text("appId"));
  if (r.application_id() != app_id)
    return bad(absl::StrCat("it names another application, '", r.application_id(), "'"));
  r.set_name(text("name"));
  r.set_user(text("user"));
  r.set_queue(text("queue"));
  r.set_priority(static_cast<int32_t>(number("priority")));
  absl::StatusOr<v1::ApplicationState> state = store::ParseAppState(text("appState"));
  if (!state.ok()) return bad(state.status().message());
  r.set_state(*state);
  absl::StatusOr<v1::FinalApplicationStatus> final_status =
      store::ParseFinalStatus(text("finalAppStatus"));
  if (!final_status.ok()) return bad(final_status.status().message());
  r.set_final_status(*final_status);
  r.set_diagnostics(text("diagnosticsInfo"));
  if (auto it = j->find("progress"); it != j->end() && it->is_number())
    r.set_progress(static_cast<float>(it->get<double>() / 100));
  r.set_submit_time_ms(number("submittedTime"));
  r.set_start_time_ms(number("startedTime"));
  r.set_finish_time_ms(number("finishedTime"));
  // appattempt_<cluster ts>_<seq>_<attempt>
  const std::string attempt = text("currentAppAttemptId");
  int32_t attempt_number = 0;
  if (size_t at = attempt.rfind('_'); at != std::string::npos &&
                                      absl::SimpleAtoi(attempt.substr(at + 1), &attempt_number))
    r.set_current_attempt(attempt_number);
  r.set_am_host(text("host"));
  if (auto it = j->find("resourceSeconds"); it != j->end() && it->is_object()) {
    for (const auto& [type, value] : it->items())
      if (value.is_number_integer())
        (*r.mutable_resource_seconds()->mutable_values())[type] = value.get<int64_t>();
  }
  if (auto it = j->find("unmanagedApplication"); it != j->end() && it->is_boolean())
    r.set_unmanaged_am(it->get<bool>());
  return r;
}

void AddHistoryCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<HistoryFlags>();
  CLI::App* cmd = app.add_subcommand(
      "history",
      "Run the application history server (YARN's Timeline Server REST API for finished apps)");
  cmd->add_option("--store", f->store,
                  "the history store: memory, sqlite:/abs/path or postgresql://...");
  AddHttpLimitFlags(cmd, &f->http_limits);
  cmd->add_option("--http-port", f->http_port, "the REST API and page's port (YARN's 8188)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--bind-host", f->bind_host, "the address to listen on")->capture_default_str();
  cmd->add_flag("--http-anonymous-view", f->anonymous_view,
                "everyone sees every app's details (YARN's yarn.acl.enable=false); otherwise "
                "only its owner, admins, its queue's admins and its view ACL");
  cmd->add_option("--admins", f->admins, "cluster admins besides the server's own user")
      ->delimiter(',');
  cmd->add_option("--scheduler-config", f->scheduler_config,
                  "the RM's scheduler configuration, for its queues' administrators");
  cmd->add_option("--munge-socket", f->munge_socket,
                  "munged's socket (default $WEFT_MUNGE_SOCKET or /run/munge/munge.socket.2)");
  cmd->add_option("--retention-days", f->retention_days,
                  "remove apps that finished longer ago than this (0 = keep them)")
      ->check(FiniteNumberValidator("days", 0, 1e6));
  cmd->add_option("--retention-max-apps", f->retention_max_apps,
                  "keep at most this many apps, the newest (0 = no cap)")
      ->check(CLI::NonNegativeNumber);

  auto imp = std::make_shared<ImportFlags>();
  CLI::App* import_cmd = cmd->add_subcommand(
      "import", "Add history records from a JSON-lines file ({\"application\": {...}} etc.)");
  import_cmd
      ->add_option("--store", imp->store,
                   "the history store: memory, sqlite:/abs/path or postgresql://...")
      ->required();
  import_cmd->add_option("FILE", imp->file, "one record a line")->required();
  import_cmd->callback([imp, exit_code] { *exit_code = RunImport(*imp); });
  cmd->callback([f, import_cmd, exit_code] {
    if (import_cmd->parsed()) return;
    *exit_code = RunHistory(*f);
  });
}

}  // namespace weft::cli
