// Copyright Weft authors.
#include "federation/router/router_web_server.h"

#include <algorithm>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "common/metrics.h"
#include "web/rest_api.h"
#include "web/snapshot.h"
#include "web/yarn_json.h"

namespace weft::federation {
namespace {

using web::HttpRequest;
using web::HttpResponse;
using web::Json;

HttpResponse JsonOk(const Json& j) {
  HttpResponse r;
  r.body = web::Dump(j);
  return r;
}

HttpResponse Error(const absl::Status& s) {
  return web::JsonError(web::HttpStatusOf(s.code()), s.message());
}

std::string StateName(v1::SubClusterState state) {
  absl::string_view name = v1::SubClusterState_Name(state);
  absl::ConsumePrefix(&name, "SC_");
  return std::string(name);
}

Json ResourceJson(const v1::Resource& r) {
  Json out = Json::object();
  for (const auto& [name, value] : r.values()) out[name] = value;
  return out;
}

// The resource types to show: YARN's three first, then any other the sub-clusters report.
std::vector<std::pair<std::string, std::string>> ResourceTypes(const v1::Resource& total) {
  std::vector<std::pair<std::string, std::string>> types = {
      {"memory-mb", "MB"}, {"vcores", "vcores"}, {"network-mbps", "Mbit/s"}};
  std::set<std::string> names;
  for (const auto& [name, value] : total.values()) names.insert(name);
  for (const std::string& name : names)
    if (name != "memory-mb" && name != "vcores" && name != "network-mbps")
      types.emplace_back(name, "");
  return types;
}

std::string Age(int64_t now_ms, int64_t then_ms) {
  if (then_ms <= 0) return "never";
  return absl::StrCat(std::max<int64_t>(0, now_ms - then_ms) / 1000, " s ago");
}

}  // namespace

// REST writes through the router: ids issued by the federation (Router::NewApplication, for
// the caller's user), submissions homed by the queue's policy, kills at the home. The router
// called as the authenticated user; the RMs apply their own ACLs.
class RouterWebServer::Writer final : public web::RmWriter {
 public:
  explicit Writer(Router* router) : router_(router) {}

  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const rm::Caller& caller) override {
    return router_->NewApplication(caller.user);
  }
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const rm::Caller& caller) override {
    return router_->SubmitApplication(context, caller.user);
  }
  absl::StatusOr<v1::ApplicationReport> KillApplication(const std::string& app_id,
                                                        const std::string& diagnostics,
                                                        const rm::Caller& caller) override {
    v1::KillApplicationRequest request;
    request.set_application_id(app_id);
    request.set_diagnostics(diagnostics);
    absl::StatusOr<v1::KillApplicationResponse> killed =
        router_->KillApplication(request, caller.user);
    if (!killed.ok()) return killed.status();
    return router_->GetApplication(app_id, caller.user);
  }

 private:
  Router* router_;
};

absl::StatusOr<std::unique_ptr<RouterWebServer>> RouterWebServer::Start(
    Router* router, RestAuthenticator authenticate, RouterWebOptions options) {
  std::unique_ptr<RouterWebServer> s(new RouterWebServer());
  s->router_ = router;
  s->authenticate_ = std::move(authenticate);
  s->options_ = std::move(options);
  s->started_ms_ = router->NowMs();
  s->writer_ = std::make_unique<Writer>(router);
  web::RestApiOptions writes;
  writes.writes_enabled = s->options_.writes_enabled;
  writes.writes_disabled_message =
      "REST writes are disabled on this router (enable them with weft router "
      "--http-enable-writes; writers authenticate as on the RMs, with MUNGE)";
  writes.authenticate = s->authenticate_;
  writes.http_address = absl::StrCat(s->options_.bind_host, ":", s->options_.port);
  s->writes_ = std::make_unique<web::RestApi>(std::move(writes), nullptr, s->writer_.get());
  web::HttpServerOptions http;
  http.bind_host = s->options_.bind_host;
  http.port = s->options_.port;
  http.limits = s->options_.limits;
  auto server = web::HttpServer::Start(
      http, [p = s.get()](const HttpRequest& req) { return p->Handle(req); });
  if (!server.ok()) return server.status();
  s->http_ = *std::move(server);
  return s;
}

RouterWebServer::~RouterWebServer() { Stop(); }

void RouterWebServer::Stop() {
  if (http_) http_->Stop();
}

HttpResponse RouterWebServer::Handle(const HttpRequest& req) const {
  absl::string_view path = req.path;
  while (path.size() > 1 && absl::EndsWith(path, "/")) path.remove_suffix(1);
  if (std::optional<HttpResponse> written = writes_->HandleWrite(req)) return *std::move(written);
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = web::JsonError(
        405, "the router's web server takes GET, and POST/PUT only for the REST writes "
             "(POST /ws/v1/cluster/apps/new-application, POST /ws/v1/cluster/apps, PUT "
             "/ws/v1/cluster/apps/{id}/state)");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  if (path == "/") {
    HttpResponse r;
    r.status = 302;
    r.content_type = "text/plain";
    r.headers.emplace_back("Location", "/federation");
    return r;
  }
  if (path == "/federation" || path == "/cluster") return FederationPage();
  if (path == "/metrics") return Metrics();
  if (path == "/ws/v1/federation/subclusters") return SubClustersJson();
  if (path == "/ws/v1/cluster" || absl::StartsWith(path, "/ws/v1/cluster/")) return Rest(req);
  return web::JsonError(404, absl::StrCat("no such resource: '", path.substr(0, 64),
                                          "' (the REST API is under /ws/v1/cluster)"));
}

HttpResponse RouterWebServer::Rest(const HttpRequest& req) const {
  absl::string_view path = req.path;
  while (path.size() > 1 && absl::EndsWith(path, "/")) path.remove_suffix(1);
  absl::ConsumePrefix(&path, "/ws/v1/cluster");
  absl::ConsumePrefix(&path, "/");
  std::vector<std::string> parts;
  if (!path.empty()) parts = absl::StrSplit(path, '/');

  // Who reads: a proven user, else the anonymous one (the RMs redact what it may not see).
  std::string user = options_.anonymous_user;
  rm::Presented presented;
  presented.munge_credential = req.Header("x-weft-munge-credential");
  presented.secret = req.Header("x-weft-secret");
  if (!presented.munge_credential.empty() || !presented.secret.empty()) {
    absl::StatusOr<rm::Caller> caller = authenticate_(presented);
    if (!caller.ok()) return Error(caller.status());
    user = caller->user;
  }

  web::ClusterSnapshot s;
  s.taken_ms = router_->NowMs();
  s.started_ms = started_ms_;
  s.policy = "federation";
  s.store_name = router_->store_description();
  s.ha_description = absl::StrCat("Weft federation router ", router_->options().router_id);
  s.resource_types = ResourceTypes({});

  const std::string resource = parts.empty() ? "info" : parts[0];
  if (parts.size() <= 1 && resource == "info") {
    Json j = web::ClusterInfoJson(s);
    j["clusterInfo"]["routerId"] = router_->options().router_id;
    return JsonOk(j);
  }
  if (parts.size() == 1 && (resource == "metrics" || resource == "nodes")) {
    absl::StatusOr<v1::ListNodesResponse> nodes = router_->ListNodes({}, user);
    if (!nodes.ok()) return Error(nodes.status());
    s.node_reports = std::make_shared<const std::vector<v1::NodeReport>>(
        nodes->nodes().begin(), nodes->nodes().end());
    if (resource == "nodes") {
      Json list = Json::array();
      for (const v1::NodeReport& n : s.nodes()) {
        Json j = web::NodeJson(s, n);
        j["subClusterId"] = n.sub_cluster_id();
        list.push_back(std::move(j));
      }
      return JsonOk({{"nodes", {{"node", list}}}});
    }
    absl::StatusOr<v1::GetClusterMetricsResponse> metrics = router_->GetClusterMetrics(user);
    if (!metrics.ok()) return Error(metrics.status());
    s.metrics = *std::move(metrics);
    s.resource_types = ResourceTypes(s.metrics.total());
    return JsonOk(web::ClusterMetricsJson(s));
  }
  if (resource != "apps" || parts.size() > 2)
    return web::JsonError(404, absl::StrCat("no such resource: '", req.path.substr(0, 64),
                                            "' (the router serves info, metrics, apps, nodes)"));
  // Each app's tracking URL points at its home RM's web server.
  std::map<std::string, std::string> http_of;
  if (absl::StatusOr<std::vector<v1::SubClusterInfo>> scs = router_->SubClusters(); scs.ok())
    for (const auto& sc : *scs) http_of[sc.sub_cluster_id()] = sc.rm_http_address();
  auto app_json = [&](const v1::ApplicationReport& app) {
    Json j = web::AppJson(s, app, http_of[app.sub_cluster_id()]);
    j["subClusterId"] = app.sub_cluster_id();
    return j;
  };
  if (parts.size() == 2) {
    absl::StatusOr<v1::ApplicationReport> app = router_->GetApplication(parts[1], user);
    if (!app.ok()) return Error(app.status());
    return JsonOk({{"app", app_json(*app)}});
  }
  v1::ListApplicationsRequest list_req;
  for (const std::string& key : {std::string("states"), std::string("state")}) {
    auto [begin, end] = req.params.equal_range(key);
    for (auto it = begin; it != end; ++it) {
      for (absl::string_view v : absl::StrSplit(it->second, ',', absl::SkipWhitespace())) {
        v1::ApplicationState st;
        const std::string name = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(v));
        if (!v1::ApplicationState_Parse(absl::StrCat("APP_", name), &st))
          return web::JsonError(
              400, absl::StrCat("Invalid application-state '", name.substr(0, 32), "'"));
        list_req.add_states(st);
      }
    }
  }
  list_req.set_queue(req.Param("queue"));
  list_req.set_user(req.Param("user"));
  if (req.HasParam("limit")) {
    int32_t limit = 0;
    if (!absl::SimpleAtoi(req.Param("limit"), &limit) || limit < 1)
      return web::JsonError(400, "query parameter limit: expected an integer >= 1");
    list_req.set_limit(limit);
  }
  absl::StatusOr<v1::ListApplicationsResponse> apps = router_->ListApplications(list_req, user);
  if (!apps.ok()) return Error(apps.status());
  Json list = Json::array();
  for (const v1::ApplicationReport& app : apps->applications()) list.push_back(app_json(app));
  return JsonOk({{"apps", {{"app", list}}}});
}

HttpResponse RouterWebServer::SubClustersJson() const {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> scs = router_->SubClusters();
  if (!scs.ok()) return Error(scs.status());
  Json list = Json::array();
  for (const v1::SubClusterInfo& sc : *scs) {
    list.push_back({{"subClusterId", sc.sub_cluster_id()},
                    {"state", StateName(sc.state())},
                    {"usable", router_->Usable(sc)},
                    {"rmAddress", sc.rm_address()},
                    {"rmWebAddress", sc.rm_http_address()},
                    {"lastHeartbeat", sc.last_heartbeat_ms()},
                    {"lastStartTime", sc.last_start_ms()},
                    {"capability", ResourceJson(sc.capability())},
                    {"used", ResourceJson(sc.used())},
                    {"available", ResourceJson(sc.available())},
                    {"pending", ResourceJson(sc.pending())},
                    {"activeNodes", sc.active_nodes()},
                    {"appsRunning", sc.apps_running()},
                    {"appsPending", sc.apps_pending()},
                    {"federationCommitment", sc.federation_commitment()}});
  }
  return JsonOk({{"subClusters", {{"subCluster", list}}}});
}

HttpResponse RouterWebServer::FederationPage() const {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> scs = router_->SubClusters();
  const int64_t now = router_->NowMs();
  std::string rows;
  if (scs.ok()) {
    for (const v1::SubClusterInfo& sc : *scs) {
      auto mb = [](const v1::Resource& r) { return web::ResourceValue(r, "memory-mb"); };
      auto vc = [](const v1::Resource& r) { return web::ResourceValue(r, "vcores"); };
      const std::string web_link =
          sc.rm_http_address().empty()
              ? "-"
              : absl::StrCat("<a href=\"http://", web::HtmlEscape(sc.rm_http_address()), "/cluster\">",
                             web::HtmlEscape(sc.rm_http_address()), "</a>");
      absl::StrAppend(&rows, "<tr class=\"", router_->Usable(sc) ? "usable" : "unusable", "\"><td>",
                      web::HtmlEscape(sc.sub_cluster_id()), "</td><td>", StateName(sc.state()),
                      router_->Usable(sc) ? "" : " (not usable)", "</td><td>",
                      web::HtmlEscape(sc.rm_address()), "</td><td>", web_link, "</td><td>",
                      mb(sc.used()), " / ", mb(sc.capability()), " MB</td><td>", vc(sc.used()),
                      " / ", vc(sc.capability()), "</td><td>", mb(sc.pending()), " MB</td><td>",
                      sc.active_nodes(), "</td><td>", sc.apps_running(), " / ", sc.apps_pending(),
                      "</td><td>", sc.federation_commitment(), "</td><td>",
                      Age(now, sc.last_heartbeat_ms()), "</td></tr>\n");
    }
  }
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.body = absl::StrCat(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" "
      "content=\"5\"><title>Weft federation</title>\n<style>body{font-family:sans-serif;"
      "margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;"
      "text-align:left}tr.unusable{color:#a33}</style></head><body>\n"
      "<h1>Weft federation</h1>\n<p>Router <b>",
      web::HtmlEscape(router_->options().router_id), "</b>, store <code>",
      web::HtmlEscape(router_->store_description()), "</code>, membership expiry ",
      router_->options().membership_expiry_ms,
      " ms. REST: <a href=\"/ws/v1/cluster/apps\">apps</a>, <a "
      "href=\"/ws/v1/cluster/nodes\">nodes</a>, <a href=\"/ws/v1/cluster/metrics\">metrics</a>, "
      "<a href=\"/ws/v1/federation/subclusters\">sub-clusters</a>.</p>\n",
      scs.ok() ? ""
               : absl::StrCat("<p class=\"error\">", web::HtmlEscape(scs.status().message()), "</p>\n"),
      "<table><tr><th>Sub-cluster</th><th>State</th><th>RM</th><th>Web</th><th>Memory used</th>"
      "<th>vcores used</th><th>Pending</th><th>Nodes</th><th>Apps running / pending</th>"
      "<th>Commitment</th><th>Last heartbeat</th></tr>\n",
      rows, "</table>\n</body></html>\n");
  return r;
}

HttpResponse RouterWebServer::Metrics() const {
  metrics::TextWriter w;
  router_->metrics().RenderTo(&w);
  if (absl::StatusOr<std::vector<v1::SubClusterInfo>> scs = router_->SubClusters(); scs.ok()) {
    const int64_t now = router_->NowMs();
    w.Family("weft_router_sub_cluster_usable",
             "1 when the router may home apps in the sub-cluster (running, heard from within "
             "the membership expiry), else 0.",
             metrics::TextWriter::Type::kGauge);
    for (const auto& sc : *scs)
      w.Sample("weft_router_sub_cluster_usable", {{"sub_cluster", sc.sub_cluster_id()}},
               router_->Usable(sc) ? 1 : 0);
    w.Family("weft_router_sub_cluster_heartbeat_age_seconds",
             "Seconds since the sub-cluster's last heartbeat in the federation store.",
             metrics::TextWriter::Type::kGauge);
    for (const auto& sc : *scs)
      w.Sample("weft_router_sub_cluster_heartbeat_age_seconds",
               {{"sub_cluster", sc.sub_cluster_id()}},
               static_cast<double>(now - sc.last_heartbeat_ms()) / 1000.0);
  }
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = w.Take();
  return r;
}

}  // namespace weft::federation
