#include "web/rest_api.h"

#include <openssl/crypto.h>

#include <algorithm>
#include <limits>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "rm/app_acls.h"
#include "store/state_names.h"
#include "web/container_logs.h"
#include "web/http_server.h"
#include "web/yarn_json.h"
#include "web/yarn_json_decode.h"

namespace weft::web {
namespace {

HttpResponse JsonOk(const Json& j, int status = 200) {
  HttpResponse r;
  r.status = status;
  r.body = Dump(j);
  return r;
}

HttpResponse MethodNotAllowed(const HttpRequest& req, absl::string_view allowed) {
  HttpResponse r = JsonError(405, absl::StrCat("method ", req.method.substr(0, 16),
                                               " is not allowed here (allowed: ", allowed, ")"));
  r.headers.emplace_back("Allow", std::string(allowed));
  return r;
}

// host:port and the like: letters, digits and . : _ - only.
bool ValidNodeId(absl::string_view id) {
  return !id.empty() && id.size() <= 255 && std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == ':' || c == '_' || c == '-';
  });
}

bool ValidUser(absl::string_view user) {
  return !user.empty() && user.size() <= 64 && std::all_of(user.begin(), user.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-' || c == '@';
  });
}

// Comma-separated values of repeated query parameters `name`, upper-cased, empty ones dropped.
std::vector<std::string> ListParam(const HttpRequest& req, const std::string& name) {
  std::vector<std::string> out;
  auto [begin, end] = req.params.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    for (absl::string_view v : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
      out.push_back(absl::AsciiStrToUpper(absl::StripAsciiWhitespace(v)));
    }
  }
  return out;
}

// An integer query parameter in [min, max]; `fallback` when absent.
absl::StatusOr<int64_t> IntParam(const HttpRequest& req, const std::string& name, int64_t fallback,
                                 int64_t min, int64_t max) {
  if (!req.HasParam(name)) return fallback;
  int64_t v = 0;
  const std::string text = req.Param(name);
  if (!absl::SimpleAtoi(text, &v) || v < min || v > max)
    return absl::InvalidArgumentError(
        absl::StrCat("query parameter ", name, "=", QuoteClientText(text),
                     ": expected an integer in [", min, ", ", max, "]"));
  return v;
}

}  // namespace

int HttpStatusOf(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk:
      return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return 400;
    case absl::StatusCode::kUnauthenticated:
      return 401;
    case absl::StatusCode::kPermissionDenied:
      return 403;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted:
      return 409;
    case absl::StatusCode::kResourceExhausted:
      return 429;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return 503;
    default:
      return 500;
  }
}

RestApi::RestApi(RestApiOptions options, const SnapshotHolder* snapshots, RmWriter* writer)
    : options_(std::move(options)), snapshots_(snapshots), writer_(writer) {}

std::string RestApi::BaseUrl(const HttpRequest& req) const {
  std::string host = req.Header("host");
  const bool host_ok =
      !host.empty() && host.size() <= 255 && std::all_of(host.begin(), host.end(), [](char c) {
        return absl::ascii_isalnum(c) || c == '.' || c == ':' || c == '-' || c == '[' || c == ']';
      });
  return absl::StrCat("http://", host_ok ? host : options_.http_address);
}

namespace {

// The path's parts under /ws/v1/cluster, or the 404 refusing it.
absl::StatusOr<std::vector<std::string>> RestPathParts(const HttpRequest& req,
                                                       HttpResponse* refusal) {
  absl::string_view path = req.path;
  while (path.size() > 1 && absl::EndsWith(path, "/")) path.remove_suffix(1);
  if (!absl::ConsumePrefix(&path, "/ws/v1/cluster")) {
    *refusal = JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path),
                                           " (the REST API is under /ws/v1/cluster)"));
    return absl::NotFoundError("path");
  }
  const bool under_cluster = path.empty() || absl::ConsumePrefix(&path, "/");
  std::vector<std::string> parts;
  if (under_cluster && !path.empty()) parts = absl::StrSplit(path, '/');
  if (!under_cluster || parts.size() > 4) {
    *refusal = JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
    return absl::NotFoundError("path");
  }
  return parts;
}

bool IsWrite(const HttpRequest& req, const std::vector<std::string>& parts) {
  return (req.method == "POST" &&
          ((parts.size() == 2 && parts[0] == "apps" && parts[1] == "new-application") ||
           (parts.size() == 1 && parts[0] == "apps"))) ||
         (req.method == "PUT" && parts.size() == 3 && parts[0] == "apps" && parts[2] == "state");
}

}  // namespace

std::optional<HttpResponse> RestApi::HandleWrite(const HttpRequest& req) const {
  HttpResponse refusal;
  absl::StatusOr<std::vector<std::string>> parts = RestPathParts(req, &refusal);
  if (!parts.ok() || !IsWrite(req, *parts)) return std::nullopt;
  if (req.body.size() > options_.max_body_bytes)
    return JsonError(413, absl::StrCat("the request body has ", req.body.size(), " bytes; at most ",
                                       options_.max_body_bytes, " are accepted"));
  return Write(req, *parts);
}

HttpResponse RestApi::Handle(const HttpRequest& req) const {
  if (req.body.size() > options_.max_body_bytes)
    return JsonError(413, absl::StrCat("the request body has ", req.body.size(), " bytes; at most ",
                                       options_.max_body_bytes, " are accepted"));
  HttpResponse refusal;
  absl::StatusOr<std::vector<std::string>> path_parts = RestPathParts(req, &refusal);
  if (!path_parts.ok()) return refusal;
  const std::vector<std::string>& parts = *path_parts;

  if (parts.size() == 1 && parts[0] == "session") return Session(req);
  // Writes: POST apps/new-application, POST apps, PUT apps/{id}/state.
  if (IsWrite(req, parts)) return Write(req, parts);
  if (req.method != "GET" && req.method != "HEAD") {
    if (parts.size() == 1 && parts[0] == "apps") return MethodNotAllowed(req, "GET, POST");
    if (parts.size() == 2 && parts[0] == "apps" && parts[1] == "new-application")
      return MethodNotAllowed(req, "POST");
    if (parts.size() == 3 && parts[0] == "apps" && parts[2] == "state")
      return MethodNotAllowed(req, "GET, PUT");
    return MethodNotAllowed(req, "GET");
  }
  std::shared_ptr<const ClusterSnapshot> snapshot = snapshots_->Get();
  if (snapshot == nullptr) return JsonError(503, "the ResourceManager is starting");
  return Get(req, *snapshot, parts);
}

HttpResponse RestApi::Get(const HttpRequest& req, const ClusterSnapshot& s,
                          const std::vector<std::string>& parts) const {
  const std::string resource = parts.empty() ? "info" : parts[0];
  if (parts.size() <= 1 && resource == "info") return JsonOk(ClusterInfoJson(s));
  if (parts.size() == 1 && resource == "metrics") return JsonOk(ClusterMetricsJson(s));
  if (parts.size() == 1 && resource == "scheduler") return JsonOk(SchedulerJson(s));
  if (parts.size() == 1 && resource == "history") {
    auto since = IntParam(req, "since", 0, 0, std::numeric_limits<int64_t>::max());
    if (!since.ok()) return JsonError(400, since.status().message());
    return JsonOk(ClusterHistoryJson(s, *since));
  }
  const std::string base = BaseUrl(req);
  const std::string http_address = std::string(absl::StripPrefix(base, "http://"));

  HttpResponse refusal;
  absl::StatusOr<rm::Caller> reader = rm::Caller{};
  if (resource == "apps") {
    reader = Reader(req, &refusal);
    if (!reader.ok()) return refusal;
  }
  if (resource == "apps" && parts.size() == 1) {
    std::set<v1::ApplicationState> states;
    std::vector<std::string> wanted = ListParam(req, "states");
    for (const std::string& st : ListParam(req, "state")) wanted.push_back(st);
    for (const std::string& name : wanted) {
      v1::ApplicationState st;
      if (name == "NEW_SAVING") {
        st = v1::APP_NEW;
      } else if (!v1::ApplicationState_Parse(absl::StrCat("APP_", name), &st)) {
        return JsonError(400, absl::StrCat("Invalid application-state ", QuoteClientText(name),
                                           " specified. It should be one of NEW, NEW_SAVING, "
                                           "SUBMITTED, ACCEPTED, RUNNING, FINISHED, FAILED, "
                                           "KILLED"));
      }
      states.insert(st);
    }
    const std::string final_status = absl::AsciiStrToUpper(req.Param("finalStatus"));
    if (!final_status.empty() && final_status != "UNDEFINED" && final_status != "SUCCEEDED" &&
        final_status != "FAILED" && final_status != "KILLED")
      return JsonError(400, absl::StrCat("Invalid final status ", QuoteClientText(final_status),
                                         ": one of UNDEFINED, SUCCEEDED, FAILED, KILLED"));
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    auto limit = IntParam(req, "limit", kMax, 1, kMax);
    auto started_begin = IntParam(req, "startedTimeBegin", 0, 0, kMax);
    auto started_end = IntParam(req, "startedTimeEnd", kMax, 0, kMax);
    auto finished_begin = IntParam(req, "finishedTimeBegin", 0, 0, kMax);
    auto finished_end = IntParam(req, "finishedTimeEnd", kMax, 0, kMax);
    for (const auto* p : {&limit, &started_begin, &started_end, &finished_begin, &finished_end}) {
      if (!p->ok()) return JsonError(400, p->status().message());
    }
    const bool finished_filter =
        req.HasParam("finishedTimeBegin") || req.HasParam("finishedTimeEnd");
    const std::string queue = req.Param("queue");
    const std::string user = req.Param("user");
    Json list = Json::array();
    for (const v1::ApplicationReport& app : s.apps) {
      if (static_cast<int64_t>(list.size()) >= *limit) break;
      if (!states.empty() && !states.contains(app.state())) continue;
      if (!final_status.empty() && store::ReportedFinalStatus(app.final_status()) != final_status) continue;
      if (!queue.empty() && queue != app.queue() && queue != absl::StrCat("root.", app.queue()) &&
          app.queue() != absl::StrCat("root.", queue))
        continue;
      if (!user.empty() && app.user() != user) continue;
      if (app.submit_time_ms() < *started_begin || app.submit_time_ms() > *started_end) continue;
      if (finished_filter && (app.finish_time_ms() == 0 || app.finish_time_ms() < *finished_begin ||
                              app.finish_time_ms() > *finished_end))
        continue;
      list.push_back(VisibleAppJson(s, app, http_address, *reader));
    }
    return JsonOk({{"apps", {{"app", list}}}});
  }
  if (resource == "apps") {
    const std::string& id = parts[1];
    if (!IsApplicationId(id))
      return JsonError(400, absl::StrCat("Invalid ApplicationId: ", QuoteClientText(id),
                                         " (expected application_<cluster ts>_<seq>)"));
    const v1::ApplicationReport* app = s.FindApp(id);
    if (app == nullptr) return JsonError(404, absl::StrCat("app with id: ", id, " not found"));
    if (parts.size() == 2) return JsonOk({{"app", VisibleAppJson(s, *app, http_address, *reader)}});
    if (parts.size() == 3 && parts[2] == "appattempts") {
      if (!MayView(s, *app, *reader))
        return JsonError(403, absl::StrCat(reader->user.empty() ? "an anonymous reader"
                                                                : QuoteClientText(reader->user),
                                           " may not view the attempts of ", id,
                                           ": not its owner, an admin or in its view ACL"));
      Json list = Json::array();
      auto it = s.attempts.find(id);
      if (it != s.attempts.end()) {
        for (const auto& a : it->second) list.push_back(AppAttemptJson(s, *app, a));
      }
      return JsonOk({{"appAttempts", {{"appAttempt", list}}}});
    }
    if (parts.size() == 3 && parts[2] == "state")
      return JsonOk({{"state", store::ReportedAppState(app->state())}});
    if (parts.size() == 3 && parts[2] == "logs") {
      // Aggregated container logs: the RM's view rule decides (owner, cluster and queue
      // admins, view ACL), never anonymous_view; its verdict goes to ServeAggregatedLogs as
      // `admin`, which refuses anonymous readers (401) and the others (403).
      auto acl_text = s.view_acls.find(id);
      absl::StatusOr<AccessControlList> acl =
          rm::ParseViewAcl(acl_text == s.view_acls.end() ? "" : acl_text->second);
      LogReader log_reader{reader->user, reader->groups, /*admin=*/false};
      log_reader.admin =
          !reader->user.empty() &&
          rm::MayViewApplication(*reader, app->user(), app->queue(),
                                 acl.ok() ? *acl : AccessControlList::Nobody(), s.queue_config);
      return ServeAggregatedLogs(options_.log_aggregation_dir, id, {app->user(), ""}, log_reader,
                                 req, 4 << 20);
    }
    return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
  }
  if (resource == "nodes" && parts.size() == 1) {
    std::set<v1::NodeState> states;
    std::vector<std::string> wanted = ListParam(req, "states");
    for (const std::string& st : ListParam(req, "state")) wanted.push_back(st);
    for (const std::string& name : wanted) {
      v1::NodeState st;
      if (name == "REBOOTED" || name == "DECOMMISSIONING") {
        st = v1::NODE_STATE_UNSPECIFIED;  // states Weft never has: they match nothing
      } else if (!v1::NodeState_Parse(absl::StrCat("NODE_", name), &st)) {
        return JsonError(400, absl::StrCat("Invalid node state ", QuoteClientText(name),
                                           ": one of NEW, RUNNING, UNHEALTHY, DECOMMISSIONED, "
                                           "LOST, REBOOTED, SHUTDOWN"));
      }
      states.insert(st);
    }
    Json list = Json::array();
    for (const v1::NodeReport& n : s.nodes()) {
      if (!states.empty() && !states.contains(n.state())) continue;
      list.push_back(NodeJson(s, n));
    }
    return JsonOk({{"nodes", {{"node", list}}}});
  }
  if (resource == "nodes" && parts.size() == 2) {
    const std::string& id = parts[1];
    if (!ValidNodeId(id))
      return JsonError(400, absl::StrCat("Invalid NodeId: ", QuoteClientText(id)));
    const v1::NodeReport* n = s.FindNode(id);
    if (n == nullptr) return JsonError(404, absl::StrCat("nodeId, ", id, ", is not found"));
    return JsonOk({{"node", NodeJson(s, *n)}});
  }
  return JsonError(404, absl::StrCat("no such resource: ", QuoteClientText(req.path)));
}

absl::StatusOr<rm::Presented> PresentedOf(const HttpRequest& req) {
  rm::Presented presented;
  presented.munge_credential = req.Header("x-weft-munge-credential");
  presented.secret = req.Header("x-weft-secret");
  if (presented.secret.empty()) {
    const std::string header = req.Header("authorization");
    absl::string_view auth = header;
    if (absl::ConsumePrefix(&auth, "Bearer ")) presented.secret = std::string(auth);
  }
  presented.declared_user = req.Header("x-weft-user");
  if (presented.declared_user.empty()) presented.declared_user = req.Param("user.name", "");
  if (!presented.declared_user.empty() && !ValidUser(presented.declared_user))
    return absl::InvalidArgumentError(
        absl::StrCat("user ", QuoteClientText(presented.declared_user),
                     " is not a user name (letters, digits, . _ - @)"));
  return presented;
}

bool PresentsCredential(const HttpRequest& req) {
  return !req.Header("x-weft-munge-credential").empty() || !req.Header("x-weft-secret").empty() ||
         !req.Header("authorization").empty();
}

HttpResponse AuthenticationRefusal(const absl::Status& status) {
  HttpResponse refusal = JsonError(HttpStatusOf(status.code()), status.message());
  if (status.code() == absl::StatusCode::kUnauthenticated)
    refusal.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"weft\"");
  return refusal;
}

absl::StatusOr<rm::Caller> RestApi::Authenticate(const HttpRequest& req,
                                                 HttpResponse* refusal) const {
  absl::StatusOr<rm::Presented> parsed = PresentedOf(req);
  if (!parsed.ok()) {
    *refusal = JsonError(400, parsed.status().message());
    return absl::InvalidArgumentError("bad user");
  }
  const rm::Presented& presented = *parsed;
  absl::StatusOr<rm::Caller> caller;
  if (options_.authenticate) {
    caller = options_.authenticate(presented);
  } else if (options_.client_secret.empty()) {
    caller = absl::PermissionDeniedError(
        "REST writes need a client secret (--secret-file); see docs/web.md");
  } else if (presented.secret.size() != options_.client_secret.size() ||
             CRYPTO_memcmp(presented.secret.data(), options_.client_secret.data(),
                           presented.secret.size()) != 0) {
    caller = absl::UnauthenticatedError(
        presented.secret.empty()
            ? "this write needs the client secret in header X-Weft-Secret (or Authorization: "
              "Bearer)"
            : "wrong client secret");
  } else {
    rm::Caller c;
    c.user = presented.declared_user.empty() ? "default" : presented.declared_user;
    c.real_user = "client-secret";
    c.admin = true;
    caller = c;
  }
  if (caller.ok()) return caller;
  *refusal = AuthenticationRefusal(caller.status());
  return caller;
}

absl::StatusOr<rm::Caller> RestApi::Reader(const HttpRequest& req, HttpResponse* refusal) const {
  if (!PresentsCredential(req)) return SessionReader(req, options_.sessions);
  return Authenticate(req, refusal);
}

bool RestApi::MayView(const ClusterSnapshot& s, const v1::ApplicationReport& app,
                      const rm::Caller& reader) const {
  if (options_.anonymous_view) return true;
  auto acl_text = s.view_acls.find(app.application_id());
  absl::StatusOr<AccessControlList> acl =
      rm::ParseViewAcl(acl_text == s.view_acls.end() ? "" : acl_text->second);
  return rm::MayViewApplication(reader, app.user(), app.queue(),
                                acl.ok() ? *acl : AccessControlList::Nobody(), s.queue_config);
}

Json RestApi::VisibleAppJson(const ClusterSnapshot& s, const v1::ApplicationReport& app,
                             const std::string& http_address, const rm::Caller& reader) const {
  if (MayView(s, app, reader)) return AppJson(s, app, http_address);
  Json j = AppJson(s, rm::RedactedReport(app), http_address);
  j["amContainerLogs"] = "N/A";
  j["amHostHttpAddress"] = "N/A";
  return j;
}

HttpResponse RestApi::Session(const HttpRequest& req) const {
  auto no_store = [](HttpResponse r) {
    r.headers.emplace_back("Cache-Control", "no-store");
    return r;
  };
  WebSessions* sessions = options_.sessions;
  const std::string session = req.Header(kSessionHeader);
  if (req.method == "GET" || req.method == "HEAD") {
    HttpResponse refusal;
    absl::StatusOr<rm::Caller> reader = Reader(req, &refusal);
    if (!reader.ok()) return refusal;
    Json j = {{"signedIn", !reader->user.empty()}, {"signInServed", sessions != nullptr}};
    if (!reader->user.empty()) j["user"] = reader->user;
    if (!PresentsCredential(req) && sessions != nullptr && !session.empty()) {
      if (int64_t expires = sessions->ExpiresMs(session); expires > 0) j["expiresMs"] = expires;
    }
    return no_store(JsonOk({{"session", j}}));
  }
  if (req.method == "DELETE") {  // sign-out
    if (sessions != nullptr && !session.empty()) sessions->End(session);
    return no_store(JsonOk({{"session", {{"signedIn", false}}}}));
  }
  if (req.method != "POST") return MethodNotAllowed(req, "GET, POST, DELETE");
  if (sessions == nullptr)
    return JsonError(404, "this server does not sign in browsers (no session store)");
  if (const std::string ticket = req.Header(kSignInTicketHeader); !ticket.empty()) {
    absl::StatusOr<std::string> id = sessions->Redeem(ticket);
    if (!id.ok()) return AuthenticationRefusal(id.status());
    absl::StatusOr<rm::Caller> caller = sessions->Find(*id);
    return no_store(JsonOk({{"session",
                             {{"id", *id},
                              {"signedIn", true},
                              {"user", caller.ok() ? caller->user : ""},
                              {"expiresMs", sessions->ExpiresMs(*id)}}}}));
  }
  // A sign-in link only for a MUNGE credential or the secret, never for a session.
  HttpResponse refusal;
  absl::StatusOr<rm::Caller> caller = Authenticate(req, &refusal);
  if (!caller.ok()) return refusal;
  absl::StatusOr<std::string> ticket = sessions->IssueTicket(*caller);
  if (!ticket.ok())
    return JsonError(HttpStatusOf(ticket.status().code()), ticket.status().message());
  return no_store(JsonOk(
      {{"signIn",
        {{"user", caller->user},
         {"url", absl::StrCat(BaseUrl(req), "/cluster#sign-in=", *ticket)},
         {"expiresInSeconds", sessions->options().ticket_ttl_ms / 1000},
         {"sessionSeconds", sessions->options().session_ttl_ms / 1000}}}}));
}

HttpResponse RestApi::Write(const HttpRequest& req, const std::vector<std::string>& parts) const {
  if (!options_.writes_enabled || writer_ == nullptr)
    return JsonError(403, options_.writes_disabled_message);
  HttpResponse refusal;
  absl::StatusOr<rm::Caller> caller = Authenticate(req, &refusal);
  if (!caller.ok()) return refusal;
  const std::string& user = caller->user;
  const std::string content_type = absl::AsciiStrToLower(req.Header("content-type"));
  if (absl::StrContains(content_type, "xml"))
    return JsonError(415, "only JSON bodies are supported (Content-Type: application/json)");

  if (parts.size() == 2) {  // POST apps/new-application
    auto r = writer_->NewApplication(*caller);
    if (!r.ok()) return JsonError(HttpStatusOf(r.status().code()), r.status().message());
    return JsonOk({{"application-id", r->application_id()},
                   {"maximum-resource-capability",
                    {{"memory", ResourceValue(r->maximum_capability(), "memory-mb")},
                     {"vCores", ResourceValue(r->maximum_capability(), "vcores")}}}});
  }
  if (parts.size() == 1) {  // POST apps
    auto ctx = ParseSubmission(req.body);
    if (!ctx.ok()) return JsonError(400, ctx.status().message());
    if (absl::Status s = writer_->SubmitApplication(*ctx, *caller); !s.ok())
      return JsonError(HttpStatusOf(s.code()), s.message());
    HttpResponse r;
    r.status = 202;
    r.headers.emplace_back(
        "Location", absl::StrCat(BaseUrl(req), "/ws/v1/cluster/apps/", ctx->application_id()));
    return r;
  }
  // PUT apps/{id}/state
  const std::string& id = parts[1];
  if (!IsApplicationId(id))
    return JsonError(400, absl::StrCat("Invalid ApplicationId: ", QuoteClientText(id),
                                       " (expected application_<cluster ts>_<seq>)"));
  auto change = ParseAppStateChange(req.body);
  if (!change.ok()) return JsonError(400, change.status().message());
  const std::string& diagnostics = change->diagnostics;
  auto report = writer_->KillApplication(
      id,
      diagnostics.empty() ? absl::StrCat("Application killed by ", user, " (REST)") : diagnostics,
      *caller);
  if (!report.ok())
    return JsonError(HttpStatusOf(report.status().code()), report.status().message());
  const bool final = report->state() == v1::APP_KILLED || report->state() == v1::APP_FINISHED ||
                     report->state() == v1::APP_FAILED;
  HttpResponse r = JsonOk({{"state", store::ReportedAppState(report->state())}}, final ? 200 : 202);
  if (!final)
    r.headers.emplace_back("Location", absl::StrCat(BaseUrl(req), "/ws/v1/cluster/apps/", id));
  return r;
}

}  // namespace weft::web
