// Copyright Weft authors. The ResourceManager's web server (YARN's port 8088): the web UI, the
// YARN-compatible REST API under /ws/v1/cluster and Prometheus metrics at /metrics.
#ifndef WEFT_WEB_RM_WEB_SERVER_H_
#define WEFT_WEB_RM_WEB_SERVER_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "rm/rm_server.h"
#include "web/http_server.h"
#include "web/rest_api.h"
#include "web/snapshot.h"
#include "web/web_sessions.h"

namespace weft::web {

struct RmWebOptions {
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 8088;                      // YARN's; 0 = a free port the kernel picks
  // REST writes (new-application, submit, kill). Off by default; on, they still need the RM's
  // client secret (RestApiOptions; docs/web.md explains why).
  bool writes_enabled = false;
  // REST reads of app details for everyone (RestApiOptions::anonymous_view).
  bool anonymous_view = false;
  int64_t refresh_ms = 1000;  // how often the RM loop publishes a new snapshot
  size_t max_body_bytes = 1 << 20;
  // "" serves the UI compiled into the binary; a directory serves its files instead (UI
  // development: edit and reload without rebuilding).
  std::string ui_dir;
  // Aggregated container logs (RestApiOptions::log_aggregation_dir); "" = off.
  std::string log_aggregation_dir;
  // More routes the server answers before its own (e.g. the Application History REST API,
  // web/history_api.h, when the RM writes history): called on HTTP threads; nullopt passes the
  // request on. Null = none. Answered by a standby too (history is not the RM's state).
  std::function<std::optional<HttpResponse>(const HttpRequest&)> more_routes;
  // Serve the application history page at /applicationhistory (when more_routes serves the
  // history API it reads).
  bool history_page = false;
  HttpLimits limits;  // connections and deadlines (--http-* flags)
  // Browser sign-in (web/web_sessions.h; docs/web.md): shared with more_routes' history API so
  // one session reads both. Null = the server makes its own with the default lifetimes.
  std::shared_ptr<WebSessions> sessions;
};

// Serves, on its own threads:
//   GET  /                       -> redirect to /cluster
//   GET  /cluster[/apps|/app/ID|/nodes|/scheduler]   the web UI (one page, live refresh)
//   GET  /static/FILE            the UI's scripts and styles
//   *    /ws/v1/cluster/...      the REST API (RestApi)
//   GET  /metrics                Prometheus text format: the RmServer's registry (RPC latencies,
//                                pass durations) and the snapshot's figures (rm_metrics.h)
// Reads never touch RM state: a snapshot is rebuilt on the RM loop every refresh_ms (or, on a
// cluster large enough that a rebuild takes over 1/20 of that, every 20 rebuild times: at most
// 5% of the loop) and after every write (reusing the last node reports: a write changes apps),
// and HTTP threads read the latest one. Writes run on the RM loop (bounded wait).
class RmWebServer {
 public:
  // `rm` is not owned and must outlive the RmWebServer (stop this first). Errors: the HTTP
  // server's (Unavailable when the port is taken), InvalidArgument for writes enabled without
  // a client secret.
  static absl::StatusOr<std::unique_ptr<RmWebServer>> Start(rm::RmServer* rm, RmWebOptions options);
  ~RmWebServer();  // Stop()

  int port() const { return http_->port(); }
  std::string address() const { return http_->address(); }  // host:port
  std::string url() const { return "http://" + address() + "/cluster"; }
  // Rebuilds the snapshot on the RM loop now and waits for it (tests; bounded: 10 s).
  void Refresh();
  void Stop();  // idempotent

  // The queue tree of the latest snapshot, with its ACLs (for readers' view rights elsewhere,
  // e.g. the history API's queue administrators). Thread-safe.
  scheduler::SchedulerConfig QueueConfig() const;

  // Handles one request as the server would (tests call it without a socket).
  HttpResponse Handle(const HttpRequest& request) const;

 private:
  class Writer;
  struct Shared;  // what RM-loop tasks share with this object, kept alive by them

  RmWebServer() = default;
  HttpResponse Ui(const HttpRequest& request) const;
  HttpResponse Metrics() const;

  rm::RmServer* rm_ = nullptr;
  RmWebOptions options_;
  std::shared_ptr<Shared> shared_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<RestApi> api_;
  std::unique_ptr<HttpServer> http_;
  std::thread refresher_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weft::web

#endif  // WEFT_WEB_RM_WEB_SERVER_H_
