// Copyright Weft authors. `weft rm`: runs the ResourceManager daemon until SIGINT or SIGTERM.
#ifndef WEFT_CLI_RM_COMMAND_H_
#define WEFT_CLI_RM_COMMAND_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/cli_common.h"
#include "common/resource_types.h"
#include "rm/rm_server.h"
#include "web/rm_web_server.h"

namespace weft::cli {

// The RM's command-line settings (shared with `weft dev`).
struct RmFlags {
  std::string bind_host = "127.0.0.1";
  int port = 8032;
  std::string scheduler_config;  // YAML file; "" = one queue, "default", under fair
  std::string state_store = "./weft-data/rm-state.db";  // "" = in memory
  int64_t nm_expiry_ms = 600000;
  int64_t am_expiry_ms = 600000;
  // The interval NMs heartbeat at, and its scaling by CPU utilization (YARN-10475;
  // rm/heartbeat_interval.h): off, with YARN's defaults.
  int64_t nm_heartbeat_ms = 1000;
  bool nm_heartbeat_scaling = false;
  int64_t nm_heartbeat_min_ms = 1000;
  int64_t nm_heartbeat_max_ms = 1000;
  double nm_heartbeat_speedup = 1.0;
  double nm_heartbeat_slowdown = 1.0;
  // rm::RmServerOptions::loop_poll_us: the loop, out of work, polls this long before sleeping.
  int64_t loop_poll_us = 0;
  // A file whose contents (trailing whitespace dropped) clients must present; "" = none.
  std::string secret_file;
  // Per-container allocation limits, "NAME:MIN:MAX[:INCREMENT]" each, e.g. the seed's
  // "network-mbps:1:200" (YARN's yarn.resource-types.<name>.minimum/maximum-allocation).
  std::vector<std::string> resource_limits;
  // The web UI, REST API and /metrics (web/rm_web_server.h); 0 = a free port.
  int http_port = 8088;
  // REST writes (submit, kill): off unless asked for, and then only with a secret_file.
  bool http_enable_writes = false;
  // REST reads: every app's details for everyone (true), or per the view ACLs (rest_api.h).
  bool http_anonymous_view = false;
  web::HttpLimits http_limits;  // --http-max-connections, ... (AddHttpLimitFlags)
  std::string log_aggregation_dir;  // aggregated container logs served over REST; "" = off
  // Users who may act as others (--user), cluster admins besides the RM's own user, and the
  // munged socket ("" = $WEFT_MUNGE_SOCKET, else libmunge's default).
  TlsFlags tls;  // `weft rm` only: `weft dev` makes its own
  std::vector<std::string> proxy_users;
  std::vector<std::string> admins;
  std::string munge_socket;
  // HA (`weft rm` only; docs/cluster.md): with an --ha-id the RM elects its active on
  // ZooKeeper and keeps its state there instead of in state_store.
  std::string ha_id;
  std::string ha_zk;                         // ZooKeeper connect string
  std::string ha_zk_root = "/weft";          // the cluster's node in ZooKeeper
  std::string ha_zk_auth_file;               // 0600 file: ZooKeeper digest user:password
  std::vector<std::string> ha_rm_addresses;  // every RM's host:port (given to AMs)
  int ha_session_timeout_ms = 1500;
  bool state_store_given = false;  // --state-store was on the command line
  // Federation (`weft rm` only; seed 004): this RM is sub-cluster `sub_cluster_id` of the
  // federation whose store is `federation_store`. It stamps its app and node reports with the
  // id, accepts routers and AMRMProxies (by their certificates) acting for users, and
  // heartbeats its load into the store every federation_heartbeat_ms, committing
  // federation_commitment of its capacity. "" = not in a federation.
  std::string sub_cluster_id;
  std::string federation_store;
  int64_t federation_heartbeat_ms = 5000;
  double federation_commitment = 1.0;
  // NMs' AMRMProxies and the GPG may act for root's apps (ClientAuthOptions::federation_root_apps;
  // the RM's counterpart of the NMs' --allowed-system-users root).
  bool federation_root_apps = false;
  // The utilisation history the web UI draws (rm/cluster_history.h): a sample every
  // history_sample_ms, kept for history_retention_s.
  int64_t history_sample_ms = 10'000;
  int64_t history_retention_s = 86'400;
  // Application history (issue 31; rm/history_recorder.h): the history store's URL ("" = off),
  // the outbox file ("" = history-outbox.db beside the state store), and how many finished
  // apps the RM keeps (YARN's max-completed-applications).
  std::string history_store;
  std::string history_outbox;
  int64_t max_completed_apps = 1000;
  double history_keep_days = 0;   // retention of the history store; 0 = unbounded
  int64_t history_keep_apps = 0;
};

// Checks --sub-cluster-id, --federation-store, --federation-heartbeat-ms and
// --federation-commitment: both or neither of the first two, a valid id, an interval > 0, a
// commitment in (0, 1]. InvalidArgument naming the flag otherwise.
absl::Status ValidateFederationFlags(const RmFlags& flags);

// --proxy-users, --admins and --munge-socket into `flags` (for `weft rm` and `weft dev`).
void AddUserAuthFlags(CLI::App* cmd, RmFlags* flags);

// Applies --resource-limit values to `registry`; errors name the value.
absl::Status ApplyResourceLimits(const std::vector<std::string>& limits,
                                 ResourceTypeRegistry* registry);

// Adds --resource-limit (repeatable) to `cmd`.
void AddResourceLimitFlag(CLI::App* cmd, std::vector<std::string>* limits);

// Builds the daemon's options: loads the scheduler configuration (errors name the file),
// creates the state store's directory, and with a --sub-cluster-id makes the RM a federation
// sub-cluster (RmOptions::sub_cluster_id, RmServerOptions::federation_proxies).
absl::StatusOr<rm::RmServerOptions> MakeRmServerOptions(const RmFlags& flags);

// --history-sample-ms and --history-retention-s (the UI's utilisation samples), and
// --history-store, --history-outbox and --max-completed-apps (application history) into
// `flags` (for `weft rm` and `weft dev`).
void AddHistoryFlags(CLI::App* cmd, RmFlags* flags);

// --http-port and --http-enable-writes into `flags` (for `weft rm` and `weft dev`).
void AddHttpFlags(CLI::App* cmd, RmFlags* flags);

// The RM web server's options from the flags (bind address: the RM's). Errors: a bad port,
// writes enabled without --secret-file.
absl::StatusOr<web::RmWebOptions> MakeRmWebOptions(const RmFlags& flags);

// When the RM writes application history (--history-store), its web server also serves YARN's
// Application History REST API (/ws/v1/applicationhistory, web/history_api.h) over that store
// (opened on first use: the RM starts while PostgreSQL is down): sets `options->more_routes`.
// Readers authenticate as the RM's REST readers (`rm`); queue administrators come from
// `*web`'s latest snapshot once the caller stores the started server there. Nothing without
// a history store.
void AddHistoryRoutes(const RmFlags& flags, rm::RmServer* rm,
                      std::shared_ptr<std::atomic<web::RmWebServer*>> web,
                      web::RmWebOptions* options);

// Adds the `rm` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddRmCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_RM_COMMAND_H_
