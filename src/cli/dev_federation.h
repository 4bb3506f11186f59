// Copyright Weft authors. `weft dev --subclusters N`: a federation in one process (seed 004):
// N sub-clusters (an RM with its NMs each, the NMs with the AMRMProxy), a router, its web UI
// and a GPG, all on 127.0.0.1 over one embedded SQLite federation store and one CA.
#ifndef WEFT_CLI_DEV_FEDERATION_H_
#define WEFT_CLI_DEV_FEDERATION_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "cli/dev_cluster.h"
#include "cli/nm_command.h"
#include "cli/rm_command.h"
#include "federation/gpg/global_policy_generator.h"
#include "federation/gpg/rm_clients.h"
#include "federation/membership/sub_cluster_heartbeater.h"
#include "federation/router/router_server.h"
#include "federation/router/router_web_server.h"
#include "federation/store/federation_store.h"

namespace weft::cli {

struct DevFederationOptions {
  int subclusters = 3;             // >= 2
  int nodes_per_subcluster = 1;    // >= 1
  std::string node_resources;      // each node's, as --node-resources
  std::string data_dir;            // absolute; sc<i>/ per sub-cluster, federation.db, tls/
  RmFlags rm;                      // scheduler config, auth and limits of every RM
  NmFlags nm;                      // container-user fields of every NM
  bool use_cgroups = true;
  int router_port = 8032;          // the CLI's default RM address: clients reach the router
  int router_http_port = 8089;     // YARN's router web port; 0 = any
  web::HttpLimits http_limits;     // the router's and the RMs' web servers
  int64_t heartbeat_ms = 1000;     // sub-cluster membership heartbeats
  int64_t membership_expiry_ms = 10000;
  int64_t gpg_interval_ms = 5000;
  // What every RM wants as its cluster timestamp (ms; 0 = the federation's start time): each
  // claims the first free one from it in the store, so they all differ.
  int64_t cluster_timestamp_ms = 0;
};

class DevFederation {
 public:
  // Starts everything; on error what started is stopped again.
  static absl::StatusOr<std::unique_ptr<DevFederation>> Start(DevFederationOptions options);
  ~DevFederation();  // Shutdown()

  const std::vector<std::unique_ptr<DevCluster>>& subclusters() const { return clusters_; }
  federation::RouterServer& router() { return *router_; }
  federation::RouterWebServer& router_web() { return *router_web_; }
  federation::FederationStateStore& store() { return *store_; }
  const std::string& store_uri() const { return store_uri_; }
  const std::string& ca_path() const { return ca_path_; }
  static std::string SubClusterId(int i) { return "sc" + std::to_string(i + 1); }

  // Stops the GPG, the router and its web server, the heartbeaters (deregistering), then every
  // sub-cluster. Idempotent.
  void Shutdown();

 private:
  DevFederation() = default;

  DevFederationOptions options_;
  std::string store_uri_;
  std::string ca_path_;
  std::unique_ptr<federation::FederationStateStore> store_;
  std::vector<std::unique_ptr<DevCluster>> clusters_;
  std::vector<std::unique_ptr<federation::SubClusterHeartbeater>> heartbeaters_;
  std::unique_ptr<federation::RouterServer> router_;
  std::unique_ptr<federation::RouterWebServer> router_web_;
  std::unique_ptr<federation::GrpcSubClusterRms> gpg_rms_;
  std::unique_ptr<federation::GlobalPolicyGenerator> gpg_;
  absl::Notification gpg_stop_;
  std::thread gpg_thread_;
};

}  // namespace weft::cli

#endif  // WEFT_CLI_DEV_FEDERATION_H_
