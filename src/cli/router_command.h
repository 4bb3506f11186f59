// Copyright Weft authors. `weft router`: runs a federation router (seed 004) until SIGINT or
// SIGTERM: ClientService over the federation's sub-clusters, its web server and /metrics.
#ifndef WEFT_CLI_ROUTER_COMMAND_H_
#define WEFT_CLI_ROUTER_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/cli_common.h"
#include "federation/router/router_server.h"
#include "federation/router/router_web_server.h"

namespace weft::cli {

struct RouterFlags {
  std::string router_id = "router1";  // names its certificate router/<id>, logs and metrics
  std::string federation_store;       // URI (federation/store/federation_store.h); required
  std::string bind_host = "127.0.0.1";
  int port = 8050;       // YARN's yarn.router.clientrm.address port; 0 = any free port
  // REST writes (new-application, submit, kill) by MUNGE-authenticated writers; off = 403.
  bool http_enable_writes = false;
  int http_port = 8089;  // YARN's yarn.router.webapp.address port; 0 = any free port
  web::HttpLimits http_limits;
  // The router's TLS material: a directory laid out as `weft certs` makes it (ca.pem,
  // router-<id>.pem, router-<id>.key), or the three files.
  std::string tls_dir;
  TlsFlags tls;
  int64_t membership_expiry_ms = federation::kDefaultRouterMembershipExpiryMs;
  int submit_retries = 3;
  int64_t cache_ttl_ms = federation::kDefaultRouterCacheTtlMs;
  int64_t call_timeout_ms = 10000;
  // Users are authenticated as by an RM.
  std::vector<std::string> proxy_users;
  std::vector<std::string> admins;
  std::string munge_socket;
  std::string secret_file;
};

// Checks the flags and builds the server's options (TLS loaded, names checked). Errors name the
// flag.
absl::StatusOr<federation::RouterServerOptions> MakeRouterServerOptions(const RouterFlags& flags);

// Adds the `router` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddRouterCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_ROUTER_COMMAND_H_
