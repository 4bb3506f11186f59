#include "cli/rm_command.h"

#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <system_error>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "cli/daemon_config.h"
#include "common/log.h"
#include "common/open_files.h"
#include "common/private_files.h"
#include "common/reachable_host.h"
#include "federation/membership/sub_cluster_heartbeater.h"
#include "federation/store/federation_store.h"
#include "history/lazy_history_store.h"
#include "rm/cluster_history.h"
#include "rm/heartbeat_interval.h"
#include "scheduler/config.h"
#include "security/munge.h"
#include "web/history_api.h"

namespace weft::cli {

absl::Status ApplyResourceLimits(const std::vector<std::string>& limits,
                                 ResourceTypeRegistry* registry) {
  for (const std::string& text : limits) {
    std::vector<std::string> parts = absl::StrSplit(text, ':');
    int64_t values[3] = {0, 0, 1};
    bool ok = parts.size() == 3 || parts.size() == 4;
    for (size_t i = 1; ok && i < parts.size(); ++i) ok = absl::SimpleAtoi(parts[i], &values[i - 1]);
    if (!ok)
      return absl::InvalidArgumentError(
          absl::StrCat("--resource-limit '", text,
                       "': expected NAME:MIN:MAX[:INCREMENT], e.g. network-mbps:1:200"));
    if (absl::Status s = registry->SetLimits(parts[0], values[0], values[1], values[2]); !s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("--resource-limit '", text, "': ", s.message()));
  }
  return absl::OkStatus();
}

void AddResourceLimitFlag(CLI::App* cmd, std::vector<std::string>* limits) {
  cmd->add_option("--resource-limit", *limits,
                  "per-container allocation limits NAME:MIN:MAX[:INCREMENT], repeatable; e.g. "
                  "network-mbps:1:200 (requests are rounded up to the increment, raised to the "
                  "minimum, refused above the maximum)");
}

absl::Status ValidateFederationFlags(const RmFlags& flags) {
  if (flags.sub_cluster_id.empty() && !flags.federation_store.empty())
    return absl::InvalidArgumentError(
        "--federation-store needs --sub-cluster-id: the id this RM registers under");
  if (!flags.sub_cluster_id.empty() && flags.federation_store.empty())
    return absl::InvalidArgumentError(absl::StrCat(
        "--sub-cluster-id ", flags.sub_cluster_id,
        " needs --federation-store: the store the sub-cluster heartbeats into"));
  if (!flags.sub_cluster_id.empty()) {
    if (absl::Status s = federation::ValidateSubClusterId(flags.sub_cluster_id); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("--sub-cluster-id: ", s.message()));
  }
  if (flags.federation_heartbeat_ms <= 0)
    return absl::InvalidArgumentError(absl::StrCat(
        "--federation-heartbeat-ms ", flags.federation_heartbeat_ms, " must be > 0"));
  if (!(flags.federation_commitment > 0 && flags.federation_commitment <= 1))
    return absl::InvalidArgumentError(
        absl::StrCat("--federation-commitment ", flags.federation_commitment,
                     " must be in (0, 1]: the fraction of this RM's capacity the federation "
                     "may use"));
  return absl::OkStatus();
}

absl::StatusOr<rm::RmServerOptions> MakeRmServerOptions(const RmFlags& flags) {
  rm::RmServerOptions options;
  if (absl::Status s = ValidateFederationFlags(flags); !s.ok()) return s;
  if (!flags.sub_cluster_id.empty()) {
    options.rm.sub_cluster_id = flags.sub_cluster_id;
    options.federation_proxies = true;
    options.auth.federation_root_apps = flags.federation_root_apps;
    // A federated app's failed attempt waits for a home check once the last one is older than
    // two heartbeats - from this RM's first moment (an HA RM just elected included).
    options.rm.federation_fence_ms = 2 * flags.federation_heartbeat_ms;
  }
  // Before the scheduler configuration, which is parsed against the registry.
  if (absl::Status s = ApplyResourceLimits(flags.resource_limits, &options.rm.registry); !s.ok())
    return s;
  options.bind_host = flags.bind_host;
  options.port = flags.port;
  if (flags.port < 0 || flags.port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("--port ", flags.port, " is not a port"));
  if (flags.nm_expiry_ms <= 0 || flags.am_expiry_ms <= 0)
    return absl::InvalidArgumentError("--nm-expiry-ms and --am-expiry-ms must be > 0");
  if (absl::Status s = rm::ValidateLoopPoll(flags.loop_poll_us); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("--loop-poll-us: ", s.message()));
  options.loop_poll_us = flags.loop_poll_us;
  options.rm.nm_expiry_ms = flags.nm_expiry_ms;
  options.rm.am_expiry_ms = flags.am_expiry_ms;
  options.rm.heartbeat_interval_ms = flags.nm_heartbeat_ms;
  options.rm.heartbeat_scaling = {flags.nm_heartbeat_scaling, flags.nm_heartbeat_min_ms,
                                  flags.nm_heartbeat_max_ms, flags.nm_heartbeat_speedup,
                                  flags.nm_heartbeat_slowdown};
  if (absl::Status s = rm::ValidateHeartbeatScaling(options.rm.heartbeat_scaling,
                                                    options.rm.heartbeat_interval_ms);
      !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(
        "--nm-heartbeat-ms/--nm-heartbeat-{min,max}-ms/--nm-heartbeat-{speedup,slowdown}: ",
        s.message()));
  if (absl::Status s = rm::ValidateHistoryOptions(
          {flags.history_sample_ms, flags.history_retention_s});
      !s.ok())
    return s;
  options.rm.history_sample_ms = flags.history_sample_ms;
  options.rm.history_retention_s = flags.history_retention_s;
  if (!flags.scheduler_config.empty()) {
    auto config = scheduler::LoadSchedulerConfigFile(flags.scheduler_config, options.rm.registry);
    if (!config.ok())
      return absl::Status(config.status().code(),
                          absl::StrCat("--scheduler-config: ", config.status().message()));
    options.rm.scheduler = *std::move(config);
    options.rm.scheduler_config_path = flags.scheduler_config;
  }
  options.auth.mode = rm::UserAuthentication::kMunge;
  options.auth.munge_socket =
      flags.munge_socket.empty() ? security::MungeSocketFromEnvironment() : flags.munge_socket;
  options.auth.proxy_users = flags.proxy_users;
  options.auth.admins = flags.admins;
  for (const std::string& u : flags.proxy_users)
    if (u == "root" || u == "*")
      return absl::InvalidArgumentError(absl::StrCat(
          "--proxy-users '", u, "': name the service users that may act as others"));
  if (!flags.secret_file.empty()) {
    auto secret = ReadSecretFile(flags.secret_file);
    if (!secret.ok()) return secret.status();
    options.client_secret = *secret;
  }
  options.rm.history_store = flags.history_store;
  options.rm.max_completed_apps = flags.max_completed_apps;
  options.rm.history_keep_days = flags.history_keep_days;
  options.rm.history_keep_apps = flags.history_keep_apps;
  if (flags.history_keep_days < 0 || flags.history_keep_apps < 0)
    return absl::InvalidArgumentError("--history-keep-days and --history-keep-apps must be >= 0");
  if (flags.max_completed_apps < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--max-completed-apps ", flags.max_completed_apps, " is negative"));
  if (!flags.history_store.empty()) {
    std::string outbox = flags.history_outbox;
    if (outbox.empty() && !flags.ha_id.empty())
      return absl::InvalidArgumentError(
          "--history-store with --ha-id needs --history-outbox: a local file for this RM's "
          "outbox");
    if (outbox.empty() && flags.state_store.empty())
      return absl::InvalidArgumentError(
          "--history-store with an in-memory state store needs --history-outbox");
    if (outbox.empty())
      outbox = (std::filesystem::absolute(flags.state_store).parent_path() / "history-outbox.db")
                   .string();
    options.rm.history_outbox = std::filesystem::absolute(outbox).lexically_normal().string();
  }
  if (!flags.ha_id.empty()) {
    if (flags.state_store_given)
      return absl::InvalidArgumentError(
          "--state-store and --ha-id do not go together: HA RMs keep their state in ZooKeeper "
          "(--ha-zk), where the standby finds it");
    rm::HaOptions ha;
    ha.rm_id = flags.ha_id;
    ha.zk_connect = flags.ha_zk;
    ha.zk_root = flags.ha_zk_root;
    if (!flags.ha_zk_auth_file.empty()) {
      absl::StatusOr<std::string> auth =
          ReadPrivateSecretFile(flags.ha_zk_auth_file, "--ha-zk-auth-file");
      if (!auth.ok()) return auth.status();
      ha.zk_auth = *std::move(auth);
    }
    ha.rm_addresses = flags.ha_rm_addresses;
    ha.session_timeout_ms = flags.ha_session_timeout_ms;
    if (absl::Status s = rm::ValidateHaOptions(ha); !s.ok()) return s;
    options.ha = std::move(ha);
    return options;
  }
  if (!flags.ha_zk.empty() || !flags.ha_rm_addresses.empty())
    return absl::InvalidArgumentError("--ha-zk and --ha-rm-addresses need --ha-id");
  if (!flags.state_store.empty()) {
    std::filesystem::path path = std::filesystem::absolute(flags.state_store).lexically_normal();
    // An existing directory that others can read is refused now (common/private_files.h; it is
    // left as it is). A missing one is created 0700 when the RM opens its store, not here: a
    // command refused for another flag leaves nothing behind.
    std::error_code ec;
    if (std::filesystem::exists(path.parent_path(), ec)) {
      if (absl::Status s = EnsurePrivateDirectory(path.parent_path().string(),
                                                  "--state-store: state store directory");
          !s.ok())
        return s;
    }
    options.state_store_path = path.string();
  }
  return options;
}

void AddUserAuthFlags(CLI::App* cmd, RmFlags* flags) {
  cmd->add_option("--proxy-users", flags->proxy_users,
                  "users who may act as another user (clients' --user), as YARN's proxy users; "
                  "comma-separated or repeated")
      ->delimiter(',');
  cmd->add_option("--admins", flags->admins,
                  "cluster admins besides the RM's own user (may kill any app, refresh queues, "
                  "decommission nodes); comma-separated or repeated")
      ->delimiter(',');
  cmd->add_option("--munge-socket", flags->munge_socket,
                  "munged's socket for authenticating users (default: $WEFT_MUNGE_SOCKET, else "
                  "/run/munge/munge.socket.2)");
}

void AddHttpFlags(CLI::App* cmd, RmFlags* flags) {
  cmd->add_option("--http-port", flags->http_port,
                  "port of the web UI, the YARN-compatible REST API (/ws/v1/cluster) and "
                  "/metrics (0 = any free port)")
      ->capture_default_str();
  cmd->add_flag("--http-enable-writes", flags->http_enable_writes,
                "allow REST submissions and kills (needs --secret-file; callers send the secret "
                "in header X-Weft-Secret; see docs/web.md)");
  cmd->add_flag("--http-anonymous-view", flags->http_anonymous_view,
                "let anonymous REST readers and the web UI see every app's details "
                "(diagnostics, AM logs, attempts); otherwise only its owner, its queue's admins, "
                "cluster admins and its view ACL's users do (docs/security.md)");
  AddHttpLimitFlags(cmd, &flags->http_limits);
  cmd->add_option("--log-aggregation-dir", flags->log_aggregation_dir,
                  "where NodeManagers aggregate finished apps' container logs (their "
                  "--log-aggregation-dir): served at /ws/v1/cluster/apps/ID/logs to readers the "
                  "app's view ACL allows, for `weft app logs` (default: off)");
}

void AddHistoryFlags(CLI::App* cmd, RmFlags* flags) {
  cmd->add_option("--history-sample-ms", flags->history_sample_ms,
                  "how often the RM samples cluster, container and queue utilisation for the "
                  "web UI's charts and GET /ws/v1/cluster/history")
      ->capture_default_str();
  cmd->add_option("--history-retention-s", flags->history_retention_s,
                  "how long those samples are kept (in memory; at most 100,000 samples)")
      ->capture_default_str();
  cmd->add_option("--history-store", flags->history_store,
                  "application history store that finished apps, attempts and containers are "
                  "written to: sqlite:/PATH or postgresql://... (\"\" = none; docs/history.md)");
  cmd->add_option("--history-outbox", flags->history_outbox,
                  "durable outbox the history records wait in while the store is slow or down "
                  "(default: history-outbox.db beside the state store)");
  cmd->add_option("--history-keep-days", flags->history_keep_days,
                  "retention: remove from the history store the apps that finished more than "
                  "this many days ago, at start and hourly (0 = keep them)")
      ->capture_default_str();
  cmd->add_option("--history-keep-apps", flags->history_keep_apps,
                  "retention: keep at most this many finished apps in the history store, the "
                  "newest (0 = no bound)")
      ->capture_default_str();
  cmd->add_option("--max-completed-apps", flags->max_completed_apps,
                  "finished apps the RM keeps in memory and in its state store (older ones are "
                  "forgotten once their history is written; YARN's max-completed-applications)")
      ->capture_default_str();
}

void AddHistoryRoutes(const RmFlags& flags, rm::RmServer* rm,
                      std::shared_ptr<std::atomic<web::RmWebServer*>> web,
                      web::RmWebOptions* options) {
  if (flags.history_store.empty()) return;
  auto store = std::make_shared<history::LazyHistoryStore>(flags.history_store);
  web::HistoryApiOptions api;
  api.authenticate = [rm](const rm::Presented& presented) { return rm->Authenticate(presented); };
  api.anonymous_view = options->anonymous_view;
  if (options->sessions == nullptr) options->sessions = std::make_shared<web::WebSessions>();
  api.sessions = options->sessions.get();  // one browser sign-in for the UI and history
  api.queue_config = [web] {
    web::RmWebServer* w = web->load();
    return w != nullptr ? w->QueueConfig() : scheduler::SchedulerConfig{};
  };
  api.started_ms = absl::ToUnixMillis(absl::Now());
  auto handler = std::make_shared<web::HistoryApi>(std::move(api), store.get());
  options->more_routes = [store, handler](
                             const web::HttpRequest& r) -> std::optional<web::HttpResponse> {
    if (!web::HistoryApi::Handles(r)) return std::nullopt;
    return handler->Handle(r);
  };
  options->history_page = true;
}

absl::StatusOr<web::RmWebOptions> MakeRmWebOptions(const RmFlags& flags) {
  if (flags.http_port < 0 || flags.http_port > 65535)
    return absl::InvalidArgumentError(
        absl::StrCat("--http-port ", flags.http_port, " is not a port"));
  if (flags.http_enable_writes && flags.secret_file.empty())
    return absl::InvalidArgumentError(
        "--http-enable-writes needs --secret-file: REST writes without authentication let "
        "anyone who reaches the HTTP port run commands on the cluster (docs/web.md)");
  web::RmWebOptions options;
  options.bind_host = flags.bind_host;
  options.port = flags.http_port;
  options.writes_enabled = flags.http_enable_writes;
  options.anonymous_view = flags.http_anonymous_view;
  options.limits = flags.http_limits;
  if (!flags.log_aggregation_dir.empty())
    options.log_aggregation_dir =
        std::filesystem::absolute(flags.log_aggregation_dir).lexically_normal().string();
  return options;
}

namespace {

// Open files below which the RM warns at start: YARN's and Hadoop's guides ask 65,536 of an
// RM host, room for tens of thousands of NMs.
constexpr uint64_t kManyNodesOpenFiles = 65536;

// Where others reach a server bound to `address` (host:port): a wildcard host (0.0.0.0, ::)
// is replaced by this machine's host name, which the RM's certificate must then name
// (`weft certs issue --san`).
std::string ReachableAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  return absl::StrCat(ReachableHost(address.substr(0, colon)), address.substr(colon));
}

// `cluster_timestamp_ms`: --cluster-timestamp-ms, the first part of this RM's application ids
// (0 = its start time). A federation sub-cluster claims it in the federation store before it
// starts: the store moves it on to the next free millisecond when another RM holds it.
int RunRm(const RmFlags& flags, int64_t cluster_timestamp_ms) {
  auto options = MakeRmServerOptions(flags);
  if (!options.ok()) return PrintError(options.status().message());
  if (cluster_timestamp_ms < 0)
    return PrintError(absl::StrCat("--cluster-timestamp-ms ", cluster_timestamp_ms,
                                   " must be >= 0 (0 = the RM's start time)"));
  options->rm.cluster_timestamp_ms = cluster_timestamp_ms;
  absl::StatusOr<security::TlsFiles> tls = LoadTlsFlags(flags.tls, "rm");
  if (!tls.ok()) return PrintError(tls.status().message());
  options->tls = *std::move(tls);
  // The RM holds a connection per NM and per AM: the operator's hard limit on open files is
  // its bound on them, so the soft limit rises to it (docs/cluster.md, "Many nodes: open files").
  if (absl::StatusOr<OpenFilesLimit> files = RaiseOpenFilesLimit(); !files.ok()) {
    log::Warn("open_files_limit_unread", {{"why", files.status()}});
  } else if (files->soft < kManyNodesOpenFiles) {
    log::Warn("open_files_limit_low",
              {{"limit", files->soft},
               {"why", absl::StrCat("each NM and AM holds a connection: about ", files->soft,
                                    " of them in all; raise the hard limit (systemd's "
                                    "LimitNOFILE, ulimit -Hn) to ",
                                    kManyNodesOpenFiles, " or more for a large cluster")}});
  } else {
    log::Info("open_files_limit", {{"limit", files->soft}});
  }
  auto web_options = MakeRmWebOptions(flags);
  if (!web_options.ok()) return PrintError(web_options.status().message());
  std::string store = options->ha.has_value()
                          ? absl::StrCat("in ZooKeeper ", options->ha->zk_connect,
                                         options->ha->zk_root, "/rm-state")
                      : options->state_store_path.empty() ? "in memory"
                                                          : options->state_store_path;
  const bool ha = options->ha.has_value();
  // A federation sub-cluster: its store is opened before the RM starts (a bad URI fails fast).
  std::unique_ptr<federation::FederationStateStore> federation_store;
  if (!flags.sub_cluster_id.empty()) {
    auto opened = federation::OpenFederationStore(flags.federation_store);
    if (!opened.ok())
      return PrintError(absl::StrCat("--federation-store: ", opened.status().message()));
    federation_store = *std::move(opened);
    // One id space for the federation: no other RM (of any sub-cluster, this one's HA partner,
    // or an earlier run of this one) hands out ids with the timestamp claimed here.
    const int64_t wanted =
        cluster_timestamp_ms > 0 ? cluster_timestamp_ms : absl::ToUnixMillis(absl::Now());
    absl::StatusOr<int64_t> claimed =
        federation_store->ClaimClusterTimestamp(flags.sub_cluster_id, wanted);
    if (!claimed.ok())
      return PrintError(
          absl::StrCat("claiming this RM's cluster timestamp in the federation store: ",
                       claimed.status().message()));
    options->rm.cluster_timestamp_ms = *claimed;
    // Where the RM checks what NMs (AMRMProxies) and the GPG claim about an app (its home).
    options->federation_store = federation_store.get();
    if (*claimed != wanted)
      log::Info("cluster_timestamp_moved", {{"sub_cluster", flags.sub_cluster_id},
                                            {"wanted_ms", wanted},
                                            {"claimed_ms", *claimed}});
  }
  BlockTerminationSignals();
  auto server = rm::RmServer::Start(*std::move(options));
  if (!server.ok())
    return PrintError(absl::StrCat("starting the ResourceManager: ", server.status().message()));
  auto web_slot = std::make_shared<std::atomic<web::RmWebServer*>>(nullptr);
  AddHistoryRoutes(flags, server->get(), web_slot, &*web_options);
  auto http = web::RmWebServer::Start(server->get(), *web_options);
  if (!http.ok())
    return PrintError(absl::StrCat("starting the web server: ", http.status().message()));
  web_slot->store(http->get());
  std::cout << "weft rm: ResourceManager listening on " << (*server)->address() << " (state "
            << store << ")\n"
            << "weft rm: web UI " << (*http)->url() << ", REST API http://" << (*http)->address()
            << "/ws/v1/cluster (writes "
            << (web_options->writes_enabled ? "enabled, secret required" : "disabled")
            << "), metrics http://" << (*http)->address() << "/metrics\n"
            << "weft rm: Ctrl-C or SIGTERM stops it" << std::endl;
  if (ha) {
    if (absl::Status s = (*server)->JoinElection(ReachableAddress((*http)->address())); !s.ok())
      return PrintError(absl::StrCat("joining the RM election: ", s.message()));
    std::cout << "weft rm: HA id " << flags.ha_id << ": standby until elected on ZooKeeper "
              << flags.ha_zk << flags.ha_zk_root << "/leader" << std::endl;
  }
  std::unique_ptr<federation::SubClusterHeartbeater> heartbeater;
  if (federation_store != nullptr) {
    federation::HeartbeaterOptions h;
    h.sub_cluster_id = flags.sub_cluster_id;
    // Clients follow an HA pair: register every RM's address.
    h.rm_address = ha && !flags.ha_rm_addresses.empty()
                       ? absl::StrJoin(flags.ha_rm_addresses, ",")
                       : ReachableAddress((*server)->address());
    h.rm_http_address = ReachableAddress((*http)->address());
    h.heartbeat_interval_ms = flags.federation_heartbeat_ms;
    h.federation_commitment = flags.federation_commitment;
    h.deregister_on_stop = !ha;  // an HA standby takes over the sub-cluster
    rm::RmServer* rm = server->get();
    auto started = federation::SubClusterHeartbeater::Start(
        h, federation_store.get(), federation::FiguresFromRmServer(rm),
        [rm] { return rm->NowMs(); });
    if (!started.ok())
      return PrintError(absl::StrCat("federation membership: ", started.status().message()));
    heartbeater = *std::move(started);
    std::cout << "weft rm: federation sub-cluster " << flags.sub_cluster_id << ", heartbeating "
              << "every " << flags.federation_heartbeat_ms << " ms into "
              << federation_store->Describe() << " (commitment " << flags.federation_commitment
              << ")" << std::endl;
  }
  int sig = WaitForTerminationSignal();
  log::Info("shutting_down", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  if (heartbeater) heartbeater->Stop();  // deregisters before the RM goes away
  (*http)->Stop();
  (*server)->Shutdown();
  server->reset();
  return 0;
}

}  // namespace

void AddRmCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RmFlags>();
  CLI::App* cmd = app.add_subcommand(
      "rm", "Run the ResourceManager (ClientService, AmService, TrackerService, AdminService)");
  cmd->add_option("--port", f->port, "port of every RM service (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--bind", f->bind_host,
                  "address to listen on; any other than 127.0.0.1 is "
                  "an explicit choice")
      ->capture_default_str();
  AddResourceLimitFlag(cmd, &f->resource_limits);
  AddTlsFlags(cmd, &f->tls);
  cmd->add_option("--scheduler-config", f->scheduler_config,
                  "queues and scheduler YAML (reloaded by `admin refresh-queues`)");
  CLI::Option* store_opt =
      cmd->add_option("--state-store", f->state_store,
                      "SQLite file of the RM's state (\"\" = memory); not with --ha-id")
          ->capture_default_str();
  cmd->add_option("--ha-id", f->ha_id,
                  "run as one of several HA RMs with this id (e.g. rm1): elect the active on "
                  "ZooKeeper (--ha-zk) and keep the state there; a standby redirects clients")
      ->group("High availability");
  cmd->add_option("--ha-zk", f->ha_zk, "ZooKeeper ensemble HOST:PORT[,HOST:PORT...] for HA")
      ->group("High availability");
  cmd->add_option("--ha-zk-root", f->ha_zk_root,
                  "the cluster's node in ZooKeeper (election at ROOT/leader, state at "
                  "ROOT/rm-state)")
      ->capture_default_str()
      ->group("High availability");
  cmd->add_option("--ha-zk-auth-file", f->ha_zk_auth_file,
                  "file (mode 0600) holding the ZooKeeper digest credential user:password that "
                  "every RM of the cluster shares; the RM's nodes in ZooKeeper are readable with "
                  "it only (required with --ha-zk)")
      ->group("High availability");
  cmd->add_option("--ha-rm-addresses", f->ha_rm_addresses,
                  "every RM's HOST:PORT, comma-separated, given to AMs so that they follow the "
                  "active (default: this RM's)")
      ->delimiter(',')
      ->group("High availability");
  cmd->add_option("--ha-session-timeout-ms", f->ha_session_timeout_ms,
                  "ZooKeeper session timeout: a killed active is replaced about this long after "
                  "it died (the server clamps it to 2..20 x its tickTime)")
      ->capture_default_str()
      ->group("High availability");
  cmd->add_option("--nm-expiry-ms", f->nm_expiry_ms, "a NodeManager silent this long is LOST")
      ->capture_default_str();
  cmd->add_option("--nm-heartbeat-ms", f->nm_heartbeat_ms,
                  "the interval NodeManagers heartbeat at, told to them by the RM")
      ->capture_default_str()
      ->group("NodeManager heartbeats");
  cmd->add_flag("--nm-heartbeat-scaling", f->nm_heartbeat_scaling,
                "scale each NM's interval by its CPU utilization against the cluster's average "
                "(YARN-10475), within --nm-heartbeat-min-ms..--nm-heartbeat-max-ms")
      ->group("NodeManager heartbeats");
  cmd->add_option("--nm-heartbeat-min-ms", f->nm_heartbeat_min_ms,
                  "with scaling: the shortest interval")
      ->capture_default_str()
      ->group("NodeManager heartbeats");
  cmd->add_option("--nm-heartbeat-max-ms", f->nm_heartbeat_max_ms,
                  "with scaling: the longest interval")
      ->capture_default_str()
      ->group("NodeManager heartbeats");
  cmd->add_option("--nm-heartbeat-speedup", f->nm_heartbeat_speedup,
                  "with scaling: at 1.0 a node 20 points below the cluster's CPU utilization "
                  "heartbeats 20% more often")
      ->capture_default_str()
      ->group("NodeManager heartbeats");
  cmd->add_option("--nm-heartbeat-slowdown", f->nm_heartbeat_slowdown,
                  "with scaling: at 1.0 a node 20 points above the cluster's CPU utilization "
                  "heartbeats 20% less often")
      ->capture_default_str()
      ->group("NodeManager heartbeats");
  cmd->add_option("--loop-poll-us", f->loop_poll_us,
                  "the RM loop, out of work, polls (spins) this many µs before it sleeps: its "
                  "caches stay warm for the next event, at the price of a core's time; -1 = "
                  "never sleeps (a core kept for the loop), 0 = sleeps at once")
      ->capture_default_str();
  AddUserAuthFlags(cmd, f.get());
  cmd->add_option("--secret-file", f->secret_file,
                  "require clients (ClientService, AdminService) to present this file's secret");
  AddHttpFlags(cmd, f.get());
  AddHistoryFlags(cmd, f.get());
  cmd->add_option("--am-expiry-ms", f->am_expiry_ms,
                  "an ApplicationMaster silent this long fails its attempt")
      ->capture_default_str();
  cmd->add_option("--sub-cluster-id", f->sub_cluster_id,
                  "make this RM a federation sub-cluster with this id ([A-Za-z0-9._-], 1-64): "
                  "it registers and heartbeats in --federation-store and serves routers")
      ->group("Federation");
  cmd->add_option("--federation-store", f->federation_store,
                  "the federation store's URI (sqlite:/path, zk://host:port/root, "
                  "postgresql://user@host:port/db)")
      ->group("Federation");
  cmd->add_option("--federation-heartbeat-ms", f->federation_heartbeat_ms,
                  "how often the sub-cluster's load is written to the federation store")
      ->capture_default_str()
      ->group("Federation");
  cmd->add_option("--federation-commitment", f->federation_commitment,
                  "fraction of this RM's capacity committed to the federation, in (0, 1]")
      ->capture_default_str()
      ->group("Federation");
  cmd->add_flag("--federation-root-apps", f->federation_root_apps,
                "let NMs' AMRMProxies and the GPG act as root for root's apps (the RM's "
                "counterpart of the NMs' --allowed-system-users root)")
      ->group("Federation");
  // For tests (hidden): RMs "started in the same millisecond". A federation sub-cluster still
  // claims it, so colliding RMs end up with distinct timestamps.
  auto cluster_timestamp_ms = std::make_shared<int64_t>(0);
  cmd->add_option("--cluster-timestamp-ms", *cluster_timestamp_ms,
                  "the cluster timestamp in this RM's application ids, ms (0 = its start time); "
                  "a federation sub-cluster claims the first free one from it")
      ->group("");
  AddDaemonConfig(cmd);  // --config: every flag may also be set in weft.yaml's section
  cmd->callback([f, exit_code, store_opt, cluster_timestamp_ms] {
    f->state_store_given = store_opt->count() > 0;
    *exit_code = RunRm(*f, *cluster_timestamp_ms);
  });
}

}  // namespace weft::cli
