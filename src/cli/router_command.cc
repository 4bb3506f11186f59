// Copyright Weft authors.
#include "cli/router_command.h"

#include <csignal>
#include <iostream>
#include <memory>

#include "absl/strings/str_cat.h"
#include "cli/daemon_config.h"
#include "common/log.h"
#include "federation/store/federation_store.h"
#include "security/munge.h"
#include "security/tls.h"

namespace weft::cli {

absl::StatusOr<federation::RouterServerOptions> MakeRouterServerOptions(const RouterFlags& f) {
  if (absl::Status s = security::ValidateDaemonName(f.router_id); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("--router-id: ", s.message()));
  if (f.federation_store.empty())
    return absl::InvalidArgumentError(
        "--federation-store is required: the store the sub-clusters heartbeat into, e.g. "
        "sqlite:/var/lib/weft/federation.db or zk://host:2181/weft-federation");
  if (f.port < 0 || f.port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("--port ", f.port, " is not a port"));
  if (f.http_port < 0 || f.http_port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("--http-port ", f.http_port, " is not a port"));
  if (f.membership_expiry_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--membership-expiry-ms ", f.membership_expiry_ms, " must be > 0"));
  if (f.submit_retries < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("--submit-retries ", f.submit_retries, " must be >= 1"));
  if (f.cache_ttl_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--cache-ttl-ms ", f.cache_ttl_ms, " must be >= 0 (0 = no cache)"));
  if (f.call_timeout_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--call-timeout-ms ", f.call_timeout_ms, " must be > 0"));
  for (const std::string& u : f.proxy_users)
    if (u == "root" || u == "*")
      return absl::InvalidArgumentError(
          absl::StrCat("--proxy-users '", u, "': name the service users that may act as others"));

  federation::RouterServerOptions o;
  o.bind_host = f.bind_host;
  o.port = f.port;
  o.router.router_id = f.router_id;
  o.router.membership_expiry_ms = f.membership_expiry_ms;
  o.router.submit_retries = f.submit_retries;
  o.router.cache_ttl_ms = f.cache_ttl_ms;
  o.router.call_timeout_ms = f.call_timeout_ms;
  o.auth.mode = rm::UserAuthentication::kMunge;
  o.auth.munge_socket =
      f.munge_socket.empty() ? security::MungeSocketFromEnvironment() : f.munge_socket;
  o.auth.proxy_users = f.proxy_users;
  o.auth.admins = f.admins;
  if (!f.secret_file.empty()) {
    auto secret = ReadSecretFile(f.secret_file);
    if (!secret.ok()) return secret.status();
    o.auth.admin_secret = *secret;
  }
  const bool files_given = !f.tls.ca.empty() || !f.tls.cert.empty() || !f.tls.key.empty();
  if (!f.tls_dir.empty() && files_given)
    return absl::InvalidArgumentError(
        "--tls-dir and --tls-ca/--tls-cert/--tls-key do not go together: give the directory or "
        "the three files");
  absl::StatusOr<security::TlsFiles> tls =
      f.tls_dir.empty() ? LoadTlsFlags(f.tls, "router")
                        : security::LoadTlsFiles(security::DaemonTlsPaths(
                              f.tls_dir, security::DaemonRole::kRouter, f.router_id));
  if (!tls.ok()) {
    if (f.tls_dir.empty()) return tls.status();
    return absl::Status(tls.status().code(),
                        absl::StrCat("--tls-dir ", f.tls_dir, ": ", tls.status().message(),
                                     " (make it with `weft certs issue --ca-dir D --out-dir ",
                                     f.tls_dir, " --role router --name ", f.router_id, "`)"));
  }
  o.tls = *std::move(tls);
  return o;
}

namespace {

int RunRouter(const RouterFlags& flags) {
  absl::StatusOr<federation::RouterServerOptions> options = MakeRouterServerOptions(flags);
  if (!options.ok()) return PrintError(options.status().message());
  // Refused before anything starts: e.g. a cache TTL that outlives the membership expiry.
  if (absl::Status s = federation::ValidateRouterOptions(options->router); !s.ok())
    return PrintError(s.message());
  absl::StatusOr<std::unique_ptr<federation::FederationStateStore>> store =
      federation::OpenFederationStore(flags.federation_store);
  if (!store.ok())
    return PrintError(absl::StrCat("--federation-store: ", store.status().message()));
  BlockTerminationSignals();
  auto server = federation::RouterServer::Start(*std::move(options), store->get());
  if (!server.ok())
    return PrintError(absl::StrCat("starting the router: ", server.status().message()));
  federation::RouterWebOptions web_options;
  web_options.bind_host = flags.bind_host;
  web_options.port = flags.http_port;
  web_options.writes_enabled = flags.http_enable_writes;
  web_options.limits = flags.http_limits;
  federation::RouterServer* s = server->get();
  auto http = federation::RouterWebServer::Start(
      &s->router(), [s](const rm::Presented& p) { return s->Authenticate(p); }, web_options);
  if (!http.ok())
    return PrintError(absl::StrCat("starting the web server: ", http.status().message()));
  std::cout << "weft router: router " << flags.router_id << " listening on " << s->address()
            << " (ClientService; federation store " << (*store)->Describe() << ")\n"
            << "weft router: federation page " << (*http)->url() << ", REST API http://"
            << (*http)->address() << "/ws/v1/cluster, metrics http://" << (*http)->address()
            << "/metrics\n"
            << "weft router: point clients at it with --rm " << s->address()
            << "; Ctrl-C or SIGTERM stops it" << std::endl;
  int sig = WaitForTerminationSignal();
  log::Info("shutting_down", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  (*http)->Stop();
  (*server)->Shutdown();
  server->reset();
  return 0;
}

}  // namespace

void AddRouterCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RouterFlags>();
  // The router's own defaults: a membership cache well under the expiry (RouterFlags' older
  // cache default of 60 s outlived the 30 s expiry and made every sub-cluster look expired for
  // half of each minute; RouterServer::Start refuses that combination naming both flags).
  f->membership_expiry_ms = federation::kDefaultRouterMembershipExpiryMs;
  f->cache_ttl_ms = federation::kDefaultRouterCacheTtlMs;
  CLI::App* cmd = app.add_subcommand(
      "router",
      "Run a federation router: ClientService over the sub-clusters of a federation store "
      "(clients use it as an RM), with a web page and REST API aggregated across them");
  cmd->add_option("--router-id", f->router_id,
                  "this router's name: its certificate is router/<id>; logs and metrics")
      ->capture_default_str();
  cmd->add_option("--federation-store", f->federation_store,
                  "the federation store's URI: sqlite:/path, zk://host:port[,...]/root, "
                  "postgresql://user@host:port/db (memory: is for tests)")
      ->required();
  cmd->add_option("--port", f->port, "port of ClientService (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--bind", f->bind_host,
                  "address to listen on; any other than 127.0.0.1 is an explicit choice")
      ->capture_default_str();
  cmd->add_option("--http-port", f->http_port,
                  "port of the federation page, REST API (/ws/v1/cluster, "
                  "/ws/v1/federation/subclusters) and /metrics (0 = any free port)")
      ->capture_default_str();
  AddHttpLimitFlags(cmd, &f->http_limits);
  cmd->add_flag("--http-enable-writes", f->http_enable_writes,
                "take YARN's REST writes (POST /ws/v1/cluster/apps/new-application, POST "
                "/ws/v1/cluster/apps, PUT /ws/v1/cluster/apps/{id}/state) from writers "
                "authenticated as on ClientService (X-Weft-Munge-Credential, or the admin secret)");
  cmd->add_option("--tls-dir", f->tls_dir,
                  "directory with ca.pem and this router's router-<id>.pem/.key (`weft certs "
                  "issue --role router`); or give --tls-ca, --tls-cert, --tls-key");
  AddTlsFlags(cmd, &f->tls);
  cmd->add_option("--membership-expiry-ms", f->membership_expiry_ms,
                  "a sub-cluster not heard from this long is not chosen nor asked")
      ->capture_default_str();
  cmd->add_option("--submit-retries", f->submit_retries,
                  "sub-clusters a submission is tried on before it fails")
      ->capture_default_str();
  cmd->add_option("--cache-ttl-ms", f->cache_ttl_ms,
                  "how long app homes, membership and queue policies read from the store are "
                  "believed (0 = read every time); at most half of --membership-expiry-ms")
      ->capture_default_str();
  cmd->add_option("--call-timeout-ms", f->call_timeout_ms,
                  "deadline of one call to a sub-cluster RM")
      ->capture_default_str();
  cmd->add_option("--proxy-users", f->proxy_users,
                  "users who may act as another user (clients' --user); comma-separated")
      ->delimiter(',');
  cmd->add_option("--admins", f->admins, "cluster admins besides the router's own user")
      ->delimiter(',');
  cmd->add_option("--munge-socket", f->munge_socket,
                  "munged's socket for authenticating users (default: $WEFT_MUNGE_SOCKET, else "
                  "/run/munge/munge.socket.2)");
  cmd->add_option("--secret-file", f->secret_file,
                  "also accept this file's secret from clients (cluster admins)");
  AddDaemonConfig(cmd);  // --config: every flag may also be set in weft.yaml's section
  cmd->callback([f, exit_code] { *exit_code = RunRouter(*f); });
}

}  // namespace weft::cli
