// Copyright Weft authors. A NodeManager's web server (YARN's port 8042): Prometheus metrics and
// container logs.
#ifndef WEFT_WEB_NM_WEB_SERVER_H_
#define WEFT_WEB_NM_WEB_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/metrics.h"
#include "web/http_server.h"

namespace weft::web {

struct NmWebOptions {
  std::string bind_host = "127.0.0.1";
  int port = 8042;  // YARN's NM web port; 0 = a free port the kernel picks
  // The NM's work root: container logs are <work_root>/logs/<container_id>/{stdout,stderr}.
  std::string work_root;
  // Log files are served up to this many bytes (their end, when longer).
  size_t max_log_bytes = 4 << 20;
};

// Serves:
//   GET /metrics                                    the NM's registry, Prometheus text format
//   GET /node/containerlogs/CONTAINER_ID[/USER]     links to the container's log files
//   GET /node/containerlogs/CONTAINER_ID/USER/FILE  stdout or stderr, as text
// Container ids are validated (no path can escape the log directory). Logs are readable by
// anyone who reaches the port, as in YARN without security: bind it to a private address.
// HandleRequest is the same routing without a socket (tests).
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
