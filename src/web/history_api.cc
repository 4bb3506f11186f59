#include "web/history_api.h"

#include <algorithm>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"
#include "rm/app_acls.h"
#include "store/state_names.h"
#include "web/http_server.h"
#include "web/rest_api.h"
#include "web/yarn_json_decode.h"

namespace weft::web {
namespace {

constexpr int64_t kMaxMs = std::numeric_limits<int64_t>::max();

HttpResponse JsonOk(const Json& j) {
  HttpResponse r;
  r.body = Dump(j);
  return r;
}

HttpResponse StoreError(const absl::Status& s) {
  return JsonError(HttpStatusOf(s.code()) == 404 ? 500 : HttpStatusOf(s.code()),
                   absl::StrCat("the history store: ", s.message()));
}

int64_t ValueOf(const google::protobuf::Map<std::string, int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

Json ResourceMapJson(const google::protobuf::Map<std::string, int64_t>& m) {
  Json j = Json::object();
  for (const auto& [type, value] : m) j[type] = value;
  return j;
}

// YARN's StringHelper.getResourceSecondsString: "<m> MB-seconds, <v> vcore-seconds" and, for
// each other type, ", <n> <type>-seconds".
std::string ResourceSecondsString(const google::protobuf::Map<std::string, int64_t>& m) {
  std::string s = absl::StrCat(ValueOf(m, "memory-mb"), " MB-seconds, ", ValueOf(m, "vcores"),
                               " vcore-seconds");
  std::map<std::string, int64_t> others;
  for (const auto& [type, value] : m)
    if (type != "memory-mb" && type != "vcores") others[type] = value;
  for (const auto& [type, value] : others) absl::StrAppend(&s, ", ", value, " ", type, "-seconds");
  return s;
}

std::string OrNA(const std::string& s) { return s.empty() ? "N/A" : s; }

// YARN's state names: "FINISHED" for ATTEMPT_FINISHED, "COMPLETE" for CONTAINER_COMPLETE.
std::string AttemptStateText(v1::ApplicationAttemptState s) {
  return std::string(absl::StripPrefix(v1::ApplicationAttemptState_Name(s), "ATTEMPT_"));
}
std::string ContainerStateText(v1::ContainerState s) {
  return std::string(absl::StripPrefix(v1::ContainerState_Name(s), "CONTAINER_"));
}

// Letters, digits and _ only, at most 128 characters: what YARN's ids are made of.
bool ValidId(absl::string_view id, absl::string_view prefix) {
  return absl::StartsWith(id, prefix) && id.size() <= 128 &&
         std::all_of(id.begin(), id.end(),
                     [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// Comma-separated values of repeated query parameters `name`, empty ones dropped.
std::vector<std::string> ListParam(const HttpRequest& req, const std::string& name) {
  std::vector<std::string> out;
  auto [begin, end] = req.params.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    for (absl::string_view v : absl::StrSplit(it->second, ',', absl::SkipWhitespace()))
      out.push_back(std::string(absl::StripAsciiWhitespace(v)));
  }
  return out;
}

// A time or count query parameter: an integer in [min, kMaxMs]; nullopt when absent.
absl::StatusOr<std::optional<int64_t>> IntParam(const HttpRequest& req, const std::string& name,
                                                int64_t min) {
  if (!req.HasParam(name)) return std::nullopt;
  int64_t v = 0;
  const std::string text = req.Param(name);
  if (!absl::SimpleAtoi(text, &v) || v < min)
    return absl::InvalidArgumentError(absl::StrCat("query parameter ", name, "=",
                                                   QuoteClientText(text),
                                                   ": expected an integer of at least ", min));
  return std::optional<int64_t>(v);
}

HttpResponse MayNotView(const rm::Caller& reader, absl::string_view what, absl::string_view id) {
  return JsonError(
      403, absl::StrCat(reader.user.empty() ? "an anonymous reader" : QuoteClientText(reader.user),
                        " may not view the ", what, " of ", id,
                        ": not its owner, an admin or in its view ACL"));
}

}  // namespace

Json HistoryAppJson(const v1::ApplicationHistoryRecord& app, bool redacted) {
  Json j;
  j["appId"] = app.application_id();
  j["currentAppAttemptId"] = app.current_attempt_id();
  j["user"] = app.user();
  j["name"] = app.name();
  j["queue"] = app.queue();
  j["type"] = app.application_type().empty() ? "YARN" : app.application_type();
  j["host"] = redacted ? "N/A" : OrNA(app.host());
  j["rpcPort"] = redacted ? -1 : app.rpc_port();
  j["appState"] = store::ReportedAppState(app.final_state());
  j["runningContainers"] = 0;
  j["progress"] = 100.0;
  j["diagnosticsInfo"] = redacted ? "N/A" : app.diagnostics();
  j["originalTrackingUrl"] = redacted ? "N/A" : OrNA(app.tracking_url());
  j["trackingUrl"] = redacted ? "N/A" : OrNA(app.tracking_url());
  j["finalAppStatus"] = store::ReportedFinalStatus(app.final_status());
  j["submittedTime"] = app.submit_time_ms();
  j["startedTime"] = app.start_time_ms();
  j["launchTime"] = app.start_time_ms();
  j["finishedTime"] = app.finish_time_ms();
  j["elapsedTime"] = app.start_time_ms() > 0 && app.finish_time_ms() >= app.start_time_ms()
                         ? app.finish_time_ms() - app.start_time_ms()
                         : 0;
  if (!app.application_tags().empty())
    j["applicationTags"] = absl::StrJoin(app.application_tags(), ",");
  j["priority"] = app.priority();
  // A finished app holds nothing.
  j["allocatedCpuVcores"] = 0;
  j["allocatedMemoryMB"] = 0;
  j["reservedCpuVcores"] = 0;
  j["reservedMemoryMB"] = 0;
  j["unmanagedApplication"] = app.unmanaged();
  j["aggregateResourceAllocation"] =
      redacted ? "N/A" : ResourceSecondsString(app.resource_seconds());
  // Weft: resource-seconds by type (the RM REST API's names) and measured usage, -1 redacted.
  const int64_t hidden = -1;
  j["memorySeconds"] = redacted ? hidden : ValueOf(app.resource_seconds(), "memory-mb");
  j["vcoreSeconds"] = redacted ? hidden : ValueOf(app.resource_seconds(), "vcores");
  j["resourceSeconds"] = redacted ? Json::object() : ResourceMapJson(app.resource_seconds());
  j["memoryMbSecondsUsed"] = redacted ? hidden : app.memory_mb_seconds_used();
  j["cpuTimeMs"] = redacted ? hidden : app.cpu_time_ms();
  j["networkTxBytes"] = redacted ? hidden : app.network_tx_bytes();
  j["peakMemoryBytes"] = redacted ? hidden : app.peak_memory_bytes();
  return j;
}

Json HistoryAttemptJson(const v1::AttemptHistoryRecord& a) {
  Json j;
  j["appAttemptId"] = a.attempt_id();
  j["host"] = OrNA(a.host());
  j["rpcPort"] = a.rpc_port();
  j["trackingUrl"] = OrNA(a.tracking_url());
  j["originalTrackingUrl"] = OrNA(a.tracking_url());
  j["diagnosticsInfo"] = a.diagnostics();
  j["appAttemptState"] = AttemptStateText(a.state());
  j["amContainerId"] = a.am_container_id();
  j["startedTime"] = a.start_time_ms();
  j["finishedTime"] = a.finish_time_ms();
  return j;
}

Json HistoryContainerJson(const v1::ContainerHistoryRecord& c) {
  Json j;
  j["containerId"] = c.container_id();
  j["allocatedMB"] = ValueOf(c.allocated(), "memory-mb");
  j["allocatedVCores"] = ValueOf(c.allocated(), "vcores");
  j["assignedNodeId"] = c.node_id();
  j["priority"] = c.priority();
  j["startedTime"] = c.start_time_ms();
  j["finishedTime"] = c.finish_time_ms();
  j["elapsedTime"] = c.start_time_ms() > 0 && c.finish_time_ms() >= c.start_time_ms()
                         ? c.finish_time_ms() - c.start_time_ms()
                         : 0;
  j["diagnosticsInfo"] = c.diagnostics();
  // The NM's log page while it keeps the logs (--log-retention-s); aggregated logs are the
  // RM's GET /ws/v1/cluster/apps/{appid}/logs.
  j["logUrl"] = c.node_http_address().empty()
                    ? ""
                    : absl::StrCat("http://", c.node_http_address(), "/node/containerlogs/",
                                   c.container_id(), "/", c.user());
  j["containerExitStatus"] = c.exit_status();
  j["containerState"] = ContainerStateText(c.state());
  j["nodeHttpAddress"] =
      c.node_http_address().empty() ? "" : absl::StrCat("http://", c.node_http_address());
  // Weft: its attempt, every resource type granted and what the NM measured.
  j["appAttemptId"] = c.attempt_id();
  j["allocatedResources"] = ResourceMapJson(c.allocated());
  j["memoryMbSecondsUsed"] = c.memory_mb_seconds();
  j["vcoreSecondsUsed"] = c.vcore_seconds();
  j["maxRssBytes"] = c.max_rss_bytes();
  j["cpuTimeMs"] = c.cpu_time_ms();
  j["networkTxBytes"] = c.network_tx_bytes();
  return j;
}

HistoryApi::HistoryApi(HistoryApiOptions options, history::HistoryStore* store)
    : options_(std::move(options)), store_(store) {}

bool HistoryApi::Handles(const HttpRequest& req) {
  absl::string_view path = req.path;
  return absl::ConsumePrefix(&path, kPrefix) && (path.empty() || path[0] == '/');
}

absl::StatusOr<rm::Caller> HistoryApi::Reader(const HttpRequest& req, HttpResponse* refusal) const {
  if (!PresentsCredential(req)) return SessionReader(req, options_.sessions);
  absl::StatusOr<rm::Presented> presented = PresentedOf(req);
  if (!presented.ok()) {
    *refusal = JsonError(400, presented.status().message());
    return presented.status();
  }
  absl::StatusOr<rm::Caller> caller =
      options_.authenticate
          ? options_.authenticate(*presented)
          : absl::UnauthenticatedError("this history server authenticates no reader");
  if (caller.ok()) return caller;
  *refusal = AuthenticationRefusal(caller.status());
  return caller;
}

bool HistoryApi::MayView(const v1::ApplicationHistoryRecord& app, const rm::Caller& reader,
                         const scheduler::SchedulerConfig& config) const {
  if (options_.anonymous_view) return true;
  if (reader.user.empty()) return false;  // an anonymous reader is no one
  absl::StatusOr<AccessControlList> acl = rm::ParseViewAcl(app.view_acl());
  return rm::MayViewApplication(reader, app.user(), app.queue(),
                                acl.ok() ? *acl : AccessControlList::Nobody(), config);
}

HttpResponse HistoryApi::Handle(const HttpRequest& req) const {
  absl::string_view path = req.path;
  while (path.size() > 1 && absl::EndsWith(path, "/")) path.remove_suffix(1);
  if (!absl::ConsumePrefix(&path, kPrefix) || (!path.empty() && path[0] != '/'))
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path),
                                       " (the history API is under ", kPrefix, ")"));
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = JsonError(405, absl::StrCat("method ", req.method.substr(0, 16),
                                                 " is not allowed here (allowed: GET)"));
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  std::vector<std::string> parts;
  absl::ConsumePrefix(&path, "/");
  if (!path.empty()) parts = absl::StrSplit(path, '/');
  if (parts.size() > 6)
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
  HttpResponse refusal;
  absl::StatusOr<rm::Caller> reader = Reader(req, &refusal);
  if (!reader.ok()) return refusal;
  return Get(req, parts, *reader);
}

HttpResponse HistoryApi::Get(const HttpRequest& req, const std::vector<std::string>& parts,
                             const rm::Caller& reader) const {
  if (parts.empty() || (parts.size() == 1 && parts[0] == "about")) {
    Json about;
    about["About"] = "Generic History Service API";
    about["timeline-service-version"] = WeftVersion();
    about["timeline-service-build-version"] = absl::StrCat("weft ", WeftVersion());
    about["hadoop-version"] = WeftVersion();
    about["startedOn"] = options_.started_ms;  // Weft
    about["store"] = store_->Describe();       // Weft
    return JsonOk(about);
  }
  if (parts.size() == 1 && parts[0] == "apps") return Apps(req, reader);
  if (parts.size() == 1 && parts[0] == "accounting") return Accounting(req, reader);
  const scheduler::SchedulerConfig config =
      options_.queue_config ? options_.queue_config() : scheduler::SchedulerConfig{};

  if (parts[0] == "containers" && parts.size() == 2) {
    const std::string& id = parts[1];
    if (!ValidId(id, "container_"))
      return JsonError(400, absl::StrCat("Invalid ContainerId: ", QuoteClientText(id)));
    absl::StatusOr<v1::ContainerHistoryRecord> c = store_->GetContainer(id);
    if (c.status().code() == absl::StatusCode::kNotFound)
      return JsonError(404, absl::StrCat("container with id: ", id, " not found"));
    if (!c.ok()) return StoreError(c.status());
    const std::string app_id =
        c->application_id().empty() ? AppOfContainer(id) : c->application_id();
    absl::StatusOr<v1::ApplicationHistoryRecord> app = store_->GetApplication(app_id);
    if (!app.ok() && app.status().code() != absl::StatusCode::kNotFound)
      return StoreError(app.status());
    // A container whose app is not (yet) stored: only those who see everything may read it.
    const bool may_view =
        app.ok() ? MayView(*app, reader, config) : options_.anonymous_view || reader.admin;
    if (!may_view) return MayNotView(reader, "containers", app_id);
    return JsonOk(HistoryContainerJson(*c));
  }
  if (parts[0] != "apps")
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));

  const std::string& app_id = parts[1];
  if (!IsApplicationId(app_id))
    return JsonError(400, absl::StrCat("Invalid ApplicationId: ", QuoteClientText(app_id),
                                       " (expected application_<cluster ts>_<seq>)"));
  absl::StatusOr<v1::ApplicationHistoryRecord> app = store_->GetApplication(app_id);
  if (app.status().code() == absl::StatusCode::kNotFound)
    return JsonError(404, absl::StrCat("app with id: ", app_id, " not found"));
  if (!app.ok()) return StoreError(app.status());
  const bool may_view = MayView(*app, reader, config);
  if (parts.size() == 2) return JsonOk(HistoryAppJson(*app, !may_view));
  if (parts[2] != "appattempts")
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
  if (!may_view) return MayNotView(reader, "attempts", app_id);
  if (parts.size() == 3) {
    absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> attempts = store_->ListAttempts(app_id);
    if (!attempts.ok()) return StoreError(attempts.status());
    Json list = Json::array();
    for (const v1::AttemptHistoryRecord& a : *attempts) list.push_back(HistoryAttemptJson(a));
    return JsonOk({{"appAttempt", list}});
  }
  const std::string& attempt_id = parts[3];
  if (!ValidId(attempt_id, "appattempt_"))
    return JsonError(400, absl::StrCat("Invalid AppAttemptId: ", QuoteClientText(attempt_id)));
  absl::StatusOr<v1::AttemptHistoryRecord> attempt = store_->GetAttempt(attempt_id);
  if (attempt.status().code() == absl::StatusCode::kNotFound ||
      (attempt.ok() && attempt->application_id() != app_id))
    return JsonError(404,
                     absl::StrCat("appattempt with id: ", attempt_id, " not found in ", app_id));
  if (!attempt.ok()) return StoreError(attempt.status());
  if (parts.size() == 4) return JsonOk(HistoryAttemptJson(*attempt));
  if (parts[4] != "containers")
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
  if (parts.size() == 5) {
    absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> containers =
        store_->ListContainers("", attempt_id);
    if (!containers.ok()) return StoreError(containers.status());
    Json list = Json::array();
    for (const v1::ContainerHistoryRecord& c : *containers) list.push_back(HistoryContainerJson(c));
    return JsonOk({{"container", list}});
  }
  const std::string& container_id = parts[5];
  if (!ValidId(container_id, "container_"))
    return JsonError(400, absl::StrCat("Invalid ContainerId: ", QuoteClientText(container_id)));
  absl::StatusOr<v1::ContainerHistoryRecord> c = store_->GetContainer(container_id);
  if (c.status().code() == absl::StatusCode::kNotFound || (c.ok() && c->attempt_id() != attempt_id))
    return JsonError(
        404, absl::StrCat("container with id: ", container_id, " not found in ", attempt_id));
  if (!c.ok()) return StoreError(c.status());
  return JsonOk(HistoryContainerJson(*c));
}

HttpResponse HistoryApi::Apps(const HttpRequest& req, const rm::Caller& reader) const {
  history::ApplicationFilter filter;
  for (const std::string& name : ListParam(req, "states")) {
    const std::string upper = absl::AsciiStrToUpper(name);
    v1::ApplicationState st;
    if (upper == "NEW_SAVING") {
      st = v1::APP_NEW;
    } else if (!v1::ApplicationState_Parse(absl::StrCat("APP_", upper), &st) ||
               st == v1::APPLICATION_STATE_UNSPECIFIED) {
      return JsonError(400, absl::StrCat("Invalid application-state ", QuoteClientText(name),
                                         " specified. It should be one of NEW, NEW_SAVING, "
                                         "SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, "
                                         "KILLED"));
    }
    filter.states.push_back(st);  // a state no finished app has matches nothing
  }
  const bool states_given = !filter.states.empty();
  const std::string final_status = absl::AsciiStrToUpper(req.Param("finalStatus"));
  if (!final_status.empty() && final_status != "UNDEFINED" && final_status != "SUCCEEDED" &&
      final_status != "FAILED" && final_status != "KILLED")
    return JsonError(400, absl::StrCat("Invalid final status ", QuoteClientText(final_status),
                                       ": one of UNDEFINED, SUCCEEDED, FAILED, KILLED"));
  auto limit = IntParam(req, "limit", 1);
  auto started_begin = IntParam(req, "startedTimeBegin", 0);
  auto started_end = IntParam(req, "startedTimeEnd", 0);
  auto finished_begin = IntParam(req, "finishedTimeBegin", 0);
  auto finished_end = IntParam(req, "finishedTimeEnd", 0);
  for (const auto* p : {&limit, &started_begin, &started_end, &finished_begin, &finished_end})
    if (!p->ok()) return JsonError(400, p->status().message());
  if (started_begin->value_or(0) > started_end->value_or(kMaxMs))
    return JsonError(400, "startedTimeEnd must be greater than startedTimeBegin");
  if (finished_begin->value_or(0) > finished_end->value_or(kMaxMs))
    return JsonError(400, "finishedTimeEnd must be greater than finishedTimeBegin");
  std::set<std::string> types;
  for (const std::string& t : ListParam(req, "applicationTypes"))
    types.insert(absl::AsciiStrToLower(t));

  filter.user = req.Param("user");
  filter.queue = req.Param("queue");
  if (finished_begin->has_value()) filter.finished_since_ms = **finished_begin;
  if (finished_end->has_value() && **finished_end < kMaxMs)
    filter.finished_until_ms = **finished_end + 1;  // the store's end is exclusive
  // Filters the store does not know are applied here, so the limit is too.
  const bool local_filters = !final_status.empty() || started_begin->has_value() ||
                             started_end->has_value() || !types.empty();
  const int64_t wanted = limit->value_or(0);
  if (!local_filters) filter.limit = wanted;
  if (states_given && std::none_of(filter.states.begin(), filter.states.end(), [](auto s) {
        return s == v1::APP_FINISHED || s == v1::APP_FAILED || s == v1::APP_KILLED;
      }))
    return JsonOk({{"app", Json::array()}});

  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> apps = store_->ListApplications(filter);
  if (!apps.ok()) return StoreError(apps.status());
  const scheduler::SchedulerConfig config =
      options_.queue_config ? options_.queue_config() : scheduler::SchedulerConfig{};
  Json list = Json::array();
  for (const v1::ApplicationHistoryRecord& app : *apps) {
    if (wanted > 0 && static_cast<int64_t>(list.size()) >= wanted) break;
    if (!final_status.empty() && store::ReportedFinalStatus(app.final_status()) != final_status)
      continue;
    if (app.start_time_ms() < started_begin->value_or(0) ||
        app.start_time_ms() > started_end->value_or(kMaxMs))
      continue;
    const std::string type = app.application_type().empty() ? "yarn" : app.application_type();
    if (!types.empty() && !types.contains(absl::AsciiStrToLower(type))) continue;
    list.push_back(HistoryAppJson(app, !MayView(app, reader, config)));
  }
  return JsonOk({{"app", list}});
}

HttpResponse HistoryApi::Accounting(const HttpRequest& req, const rm::Caller& reader) const {
  if (reader.user.empty())
    return JsonError(403,
                     "the accounting report is for authenticated readers (a MUNGE "
                     "credential in X-Weft-Munge-Credential)");
  const std::string by = req.Param("by", "user");
  if (by != "user" && by != "queue")
    return JsonError(
        400, absl::StrCat("query parameter by=", QuoteClientText(by), ": one of user, queue"));
  auto since = IntParam(req, "since", 0);
  auto until = IntParam(req, "until", 0);
  for (const auto* p : {&since, &until})
    if (!p->ok()) return JsonError(400, p->status().message());
  const int64_t since_ms = since->value_or(0);
  const int64_t until_ms = until->value_or(kMaxMs);
  if (since_ms > until_ms) return JsonError(400, "until must not be before since");

  // The store's reports (derived aggregates summed over the apps that finished in [since,
  // until)). A cluster admin sees every line; anyone else, by user, only their own.
  absl::StatusOr<std::vector<history::UsageLine>> lines =
      by == "user" ? store_->UserReport(since_ms, until_ms)
                   : store_->QueueReport(since_ms, until_ms);
  if (!lines.ok()) return StoreError(lines.status());
  const bool complete = by == "queue" || reader.admin;
  Json rows = Json::array();
  for (const history::UsageLine& line : *lines) {
    if (!complete && line.key != reader.user) continue;
    Json row;
    row[by] = line.key;
    row["applications"] = line.applications;
    auto seconds = [&line](const std::string& type) {
      auto it = line.resource_seconds.find(type);
      return it == line.resource_seconds.end() ? int64_t{0} : it->second;
    };
    row["memorySeconds"] = seconds("memory-mb");  // MB-seconds allocated
    row["vcoreSeconds"] = seconds("vcores");      // vcore-seconds allocated
    Json all = Json::object();
    for (const auto& [type, value] : line.resource_seconds) all[type] = value;
    row["resourceSeconds"] = all;
    row["memoryMbSecondsUsed"] = line.memory_mb_seconds_used;  // measured
    row["cpuTimeMs"] = line.cpu_time_ms;                       // measured
    row["networkTxBytes"] = line.network_tx_bytes;             // measured
    rows.push_back(std::move(row));
  }
  Json report;
  report["by"] = by;
  report["since"] = since_ms;
  report["until"] = until_ms;
  report["complete"] = complete;  // false: only the reader's own line
  report["line"] = rows;
  return JsonOk({{"accounting", report}});
}

}  // namespace weft::web
