// Copyright Weft authors. A NodeManager's web server (YARN's port 8042): Prometheus metrics and
// container logs.
#ifndef WEFT_WEB_NM_WEB_SERVER_H_
#define WEFT_WEB_NM_WEB_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "web/container_logs.h"
#include "web/http_server.h"

namespace weft::web {

struct NmWebOptions {
  std::string bind_host = "127.0.0.1";
  int port = 8042;  // YARN's NM web port; 0 = a free port the kernel picks
  // The NM's work root: container logs are <work_root>/logs/<container_id>/{stdout,stderr}.
  std::string work_root;
  // The node's id (host:port of its ContainerService), named in log listings; "" = unknown.
  std::string node_id;
  // Log files are served up to this many bytes (their end, when longer and no start is given).
  size_t max_log_bytes = 4 << 20;
  HttpLimits limits;  // connections and deadlines (--http-* flags)

  // Who reads logs. Null: MUNGE, as the RM's REST API (a fresh credential in header
  // X-Weft-Munge-Credential, sealed with payload "weft-client", decoded by the munged at
  // munge_socket; the user and groups from the OS). Unauthenticated errors become 401, others
  // 403. Tests inject their own.
  std::function<absl::StatusOr<LogReader>(const HttpRequest&)> authenticate;
  std::string munge_socket;  // "" = libmunge's default
  // Cluster admins, who read every app's logs, besides the NM's own user (Start adds it).
  std::vector<std::string> admins;
  // The owner and view ACL of an app's logs (the NM records them from its container tokens,
  // nm/log_aggregator.h). Non-OK (unknown app): only admins may read. Null: unknown for all.
  std::function<absl::StatusOr<LogOwner>(const std::string& app_id)> app_owner;
  // Whether a container may still write its logs. Null: false.
  std::function<bool(const std::string& container_id)> container_running;
};

// Serves:
//   GET /metrics                                    the NM's registry, Prometheus text format
//   GET /node/containerlogs/CONTAINER_ID[/USER]     links to the container's log files
//   GET /node/containerlogs/CONTAINER_ID/USER/FILE[?start=N]  one log file, as text
//                                                   (web/container_logs.h ServeLogFile)
//   GET /ws/v1/node/apps/APP_ID/containerlogs       the app's containers with logs on this
//                                                   node and their files (LogListing)
// Logs are served only to readers who may view the app (MayReadLogs: its owner, an admin, its
// view ACL): anonymous requests get 401, others 403 (YARN's NM with security on). Ids are
// validated (no path can escape the log directory). HandleRequest is the same routing without
// a socket (tests).
class NmWebServer {
 public:
  // `metrics` is not owned and must outlive the server.
  static absl::StatusOr<std::unique_ptr<NmWebServer>> Start(NmWebOptions options,
                                                            metrics::Registry* metrics);
  int port() const { return http_->port(); }
  std::string address() const { return http_->address(); }
  void Stop() { http_->Stop(); }

  static HttpResponse HandleRequest(const NmWebOptions& options, const metrics::Registry& metrics,
                                    const HttpRequest& request);

 private:
  NmWebServer() = default;
  std::unique_ptr<HttpServer> http_;
};

}  // namespace weft::web

#endif  // WEFT_WEB_NM_WEB_SERVER_H_
