#include "web/nm_web_server.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"
#include "security/munge.h"
#include "security/user_identity.h"

namespace weft::web {
namespace {

// container_[e<digits>_]<digits>_<digits>_<digits>_<digits>: nothing else reaches the disk.
bool ValidContainerId(absl::string_view id) { return !AppOfContainer(id).empty(); }

// application_<digits>_<digits>.
bool ValidAppId(absl::string_view id) {
  absl::string_view rest = id;
  if (!absl::ConsumePrefix(&rest, "application_")) return false;
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '_');
  return parts.size() == 2 && !parts[0].empty() && !parts[1].empty() &&
         std::all_of(rest.begin(), rest.end(),
                     [](char c) { return c == '_' || absl::ascii_isdigit(c); });
}

absl::StatusOr<LogReader> MungeReader(const NmWebOptions& options, const HttpRequest& req) {
  const std::string credential = req.Header("x-weft-munge-credential");
  if (credential.empty()) return LogReader{};  // anonymous
  absl::StatusOr<security::UnixUser> user =
      security::MungeClientUser(options.munge_socket, credential);
  if (!user.ok()) return user.status();
  LogReader reader;
  reader.user = user->name;
  reader.groups = user->groups;
  reader.admin =
      std::find(options.admins.begin(), options.admins.end(), user->name) != options.admins.end() ||
      std::find(options.admins.begin(), options.admins.end(), "*") != options.admins.end();
  return reader;
}

// The reader of `req`, or the refusal in *refusal.
absl::StatusOr<LogReader> ReaderOf(const NmWebOptions& options, const HttpRequest& req,
                                   HttpResponse* refusal) {
  absl::StatusOr<LogReader> reader =
      options.authenticate ? options.authenticate(req) : MungeReader(options, req);
  if (!reader.ok()) *refusal = LogRefusal(reader.status());
  return reader;
}

// Whether `reader` may read `app_id`'s logs; the refusal in *refusal when not.
bool MayRead(const NmWebOptions& options, const LogReader& reader, const std::string& app_id,
             HttpResponse* refusal) {
  LogOwner owner;  // unknown: nobody but admins
  if (options.app_owner) {
    if (absl::StatusOr<LogOwner> o = options.app_owner(app_id); o.ok()) owner = *o;
  }
  if (MayReadLogs(reader, owner)) return true;
  *refusal = LogForbidden(reader, app_id);
  return false;
}

}  // namespace

absl::StatusOr<std::unique_ptr<NmWebServer>> NmWebServer::Start(NmWebOptions options,
                                                                metrics::Registry* metrics) {
  std::unique_ptr<NmWebServer> s(new NmWebServer());
  // The NM's own user is always an admin (as the RM's is).
  if (absl::StatusOr<security::UnixUser> me = security::CurrentUser(); me.ok())
    options.admins.push_back(me->name);
  HttpServerOptions http;
  http.bind_host = options.bind_host;
  http.port = options.port;
  http.threads = 4;
  http.max_body_bytes = 4096;
  http.limits = options.limits;
  auto server = HttpServer::Start(http, [options, metrics](const HttpRequest& r) {
    return HandleRequest(options, *metrics, r);
  });
  if (!server.ok()) return server.status();
  s->http_ = *std::move(server);
  return s;
}

HttpResponse NmWebServer::HandleRequest(const NmWebOptions& options,
                                        const metrics::Registry& metrics, const HttpRequest& req) {
  if (req.method != "GET" && req.method != "HEAD") {
    HttpResponse r = JsonError(405, "the NodeManager's web server only answers GET");
    r.headers.emplace_back("Allow", "GET");
    return r;
  }
  if (req.path == "/metrics") {
    HttpResponse r;
    r.content_type = "text/plain; version=0.0.4; charset=utf-8";
    r.body = metrics.Render();
    return r;
  }
  absl::string_view path = req.path;
  const std::filesystem::path logs = std::filesystem::path(options.work_root) / "logs";
  if (absl::ConsumePrefix(&path, "/ws/v1/node/apps/")) {
    std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
    if (parts.size() != 2 || parts[1] != "containerlogs" || !ValidAppId(parts[0]))
      return JsonError(400, "expected /ws/v1/node/apps/APP_ID/containerlogs");
    HttpResponse refusal;
    absl::StatusOr<LogReader> reader = ReaderOf(options, req, &refusal);
    if (!reader.ok()) return refusal;
    if (!MayRead(options, *reader, parts[0], &refusal)) return refusal;
    std::vector<ContainerLogDir> dirs;
    std::error_code ec;
    if (!options.work_root.empty()) {
      for (std::filesystem::directory_iterator it(logs, ec), end; !ec && it != end;
           it.increment(ec)) {
        const std::string id = it->path().filename().string();
        if (AppOfContainer(id) != parts[0] || it->is_symlink(ec) || !it->is_directory(ec)) continue;
        const bool running = options.container_running && options.container_running(id);
        dirs.push_back({id, options.node_id, it->path().string(), running, "LOCAL"});
      }
    }
    std::sort(dirs.begin(), dirs.end(), [](const ContainerLogDir& a, const ContainerLogDir& b) {
      return a.container_id < b.container_id;
    });
    return LogListing(dirs);
  }
  if (!absl::ConsumePrefix(&path, "/node/containerlogs/"))
    return JsonError(404,
                     "no such resource (try /metrics, /node/containerlogs/CONTAINER_ID or "
                     "/ws/v1/node/apps/APP_ID/containerlogs)");
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  if (parts.empty() || parts.size() > 3 || !ValidContainerId(parts[0]))
    return JsonError(400, "expected /node/containerlogs/CONTAINER_ID[/USER[/stdout|stderr]]");
  HttpResponse refusal;
  absl::StatusOr<LogReader> reader = ReaderOf(options, req, &refusal);
  if (!reader.ok()) return refusal;
  if (!MayRead(options, *reader, AppOfContainer(parts[0]), &refusal)) return refusal;
  const std::filesystem::path dir = logs / parts[0];
  std::error_code ec;
  if (options.work_root.empty() || !std::filesystem::is_directory(dir, ec))
    return JsonError(404, absl::StrCat("no logs of container ", parts[0], " on this node"));
  if (parts.size() < 3) {
    const std::string user = parts.size() == 2 ? parts[1] : "-";
    std::string html = absl::StrCat("<!doctype html><meta charset=utf-8><title>Logs of ", parts[0],
                                    "</title><h1>Logs of ", parts[0], "</h1><ul>");
    for (const char* f : {"stdout", "stderr"}) {
      const auto size = std::filesystem::file_size(dir / f, ec);
      if (ec) continue;
      absl::StrAppend(&html, "<li><a href=\"/node/containerlogs/", parts[0], "/", HtmlEscape(user),
                      "/", f, "\">", f, "</a> (", size, " bytes)</li>");
    }
    html += "</ul>";
    HttpResponse r;
    r.content_type = "text/html; charset=utf-8";
    r.body = std::move(html);
    return r;
  }
  if (parts[2] != "stdout" && parts[2] != "stderr")
    return JsonError(400, "a container's log files are stdout and stderr");
  const bool running = options.container_running && options.container_running(parts[0]);
  return ServeLogFile((dir / parts[2]).string(), req, options.max_log_bytes, running);
}

}  // namespace weft::web
