// Copyright Weft authors. The router's web server (YARN's router webapp, port 8089;
// FederationInterceptorREST): YARN's REST API aggregated across the sub-clusters, the
// federation's membership, a small page showing the federation, and Prometheus /metrics.
#ifndef WEFT_FEDERATION_ROUTER_ROUTER_WEB_SERVER_H_
#define WEFT_FEDERATION_ROUTER_ROUTER_WEB_SERVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "federation/router/router.h"
#include "rm/client_auth.h"
#include "web/http.h"
#include "web/http_server.h"
#include "web/rest_api.h"

namespace weft::federation {

struct RouterWebOptions {
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 8089;                      // YARN's router webapp port; 0 = a free port
  // Whom anonymous REST readers are to the RMs (YARN's anonymous web user is "dr.who"; Weft's
  // RMs look users up in the OS, so an account that exists everywhere and is no admin).
  std::string anonymous_user = "nobody";
  // REST writes (YARN's POST apps/new-application, POST apps, PUT apps/{id}/state) through
  // the router, by writers authenticated as ClientService authenticates them (MUNGE, the admin
  // secret); refused with 403 when false.
  bool writes_enabled = false;
  web::HttpLimits limits;  // connections and deadlines (--http-* flags)
};

// Authenticates what a REST call presented (RouterServer::Authenticate).
using RestAuthenticator = std::function<absl::StatusOr<rm::Caller>(const rm::Presented&)>;

// Serves, on its own threads (every request asks the sub-clusters; nothing is cached here):
//   GET /ws/v1/cluster[/info]     clusterInfo of the federation
//   GET /ws/v1/cluster/metrics    clusterMetrics summed over the sub-clusters
//   GET /ws/v1/cluster/apps       apps of every sub-cluster (states, queue, user, limit)
//   GET /ws/v1/cluster/apps/ID    one app, from its home
//   GET /ws/v1/cluster/nodes      nodes of every sub-cluster
//   GET /ws/v1/federation/subclusters   the membership records
//   GET /, /federation            the federation page (sub-clusters, state, load, heartbeat)
//   GET /metrics                  the router's counters and per-sub-cluster gauges
//   POST /ws/v1/cluster/apps/new-application, POST /ws/v1/cluster/apps,
//   PUT /ws/v1/cluster/apps/ID/state   YARN's REST writes (web/rest_api.h), through the
//                                 router (ids issued by the federation), when writes_enabled
// YARN's JSON shapes (web/yarn_json.h), plus "subClusterId" on apps and nodes. REST readers
// are who their X-Weft-Munge-Credential or X-Weft-Secret header proves, else anonymous.
class RouterWebServer {
 public:
  // `router` is not owned and must outlive the server. Errors: the HTTP server's.
  static absl::StatusOr<std::unique_ptr<RouterWebServer>> Start(Router* router,
                                                                RestAuthenticator authenticate,
                                                                RouterWebOptions options);
  ~RouterWebServer();  // Stop()

  int port() const { return http_->port(); }
  std::string address() const { return http_->address(); }
  std::string url() const { return "http://" + address() + "/federation"; }
  void Stop();

  // Handles one request as the server would (tests call it without a socket). Thread-safe.
  web::HttpResponse Handle(const web::HttpRequest& request) const;

 private:
  RouterWebServer() = default;
  web::HttpResponse Rest(const web::HttpRequest& request) const;
  web::HttpResponse FederationPage() const;
  web::HttpResponse Metrics() const;
  web::HttpResponse SubClustersJson() const;

  class Writer;

  Router* router_ = nullptr;
  RestAuthenticator authenticate_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<web::RestApi> writes_;  // serves the writes only (no snapshot)
  RouterWebOptions options_;
  int64_t started_ms_ = 0;
  std::unique_ptr<web::HttpServer> http_;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_ROUTER_WEB_SERVER_H_
