#include "web/nm_web_server.h"

#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"

namespace weft::web {
namespace {

// container_[e<digits>_]<digits>_<digits>_<digits>_<digits>: nothing else reaches the disk.
bool ValidContainerId(absl::string_view id) { return !AppOfContainer(id).empty(); }

}  // namespace

absl::StatusOr<std::unique_ptr<NmWebServer>> NmWebServer::Start(NmWebOptions options,
                                                                metrics::Registry* metrics) {
  std::unique_ptr<NmWebServer> s(new NmWebServer());
  HttpServerOptions http;
  http.bind_host = options.bind_host;
  http.port = options.port;
  http.threads = 4;
  http.max_body_bytes = 4096;
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
  if (!absl::ConsumePrefix(&path, "/node/containerlogs/"))
    return JsonError(404, "no such resource (try /metrics or /node/containerlogs/CONTAINER_ID)");
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  if (parts.empty() || parts.size() > 3 || !ValidContainerId(parts[0]))
    return JsonError(400, "expected /node/containerlogs/CONTAINER_ID[/USER[/stdout|stderr]]");
  const std::filesystem::path dir = std::filesystem::path(options.work_root) / "logs" / parts[0];
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
  std::ifstream in(dir / parts[2], std::ios::binary | std::ios::ate);
  if (!in) return JsonError(404, absl::StrCat("no ", parts[2], " for container ", parts[0]));
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > static_cast<std::streamoff>(options.max_log_bytes)
                                   ? size - static_cast<std::streamoff>(options.max_log_bytes)
                                   : 0;
  in.seekg(start);
  HttpResponse r;
  r.content_type = "text/plain; charset=utf-8";
  r.body.resize(static_cast<size_t>(size - start));
  in.read(r.body.data(), static_cast<std::streamsize>(r.body.size()));
  r.body.resize(static_cast<size_t>(in.gcount()));
  return r;
}

}  // namespace weft::web
