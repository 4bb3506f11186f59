// Copyright Weft authors. `weft nm`: runs one NodeManager until SIGINT or SIGTERM.
#ifndef WEFT_CLI_NM_COMMAND_H_
#define WEFT_CLI_NM_COMMAND_H_

#include <cstdint>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/cli_common.h"
#include "absl/status/statusor.h"
#include "nm/node_manager.h"
#include "web/nm_web_server.h"

namespace weft::cli {

// The NM's command-line settings (shared with `weft dev`).
struct NmFlags {
  std::string rm_address;  // the RM's TrackerService, HOST:PORT
  TlsFlags tls;            // `weft nm` only: `weft dev` makes its own
  std::string bind_host = "127.0.0.1";
  int port = 0;
  std::string node_resources;  // "memory-mb=..,vcores=.."; "" = detected from /proc
  std::string work_root = "./weft-data/nm";
  std::string rack = "/default-rack";
  // The node's label ("" = the default partition) and attributes, KEY=VALUE each
  // (nm::NodeManagerOptions::node_label, node_attributes; YARN's distributed providers).
  std::string node_label;
  std::vector<std::string> node_attributes;
  std::string cgroup_hierarchy = "weft";
  int64_t stop_grace_ms = 2000;
  bool no_cgroups = false;
  // Container limits (nm::NodeManagerOptions::container_*; the same defaults).
  int64_t container_pids_per_vcore = 512;
  int64_t container_pids_max = 0;
  int64_t container_disk_limit_mb = 10240;
  int64_t container_log_limit_mb = 100;
  bool container_user_namespaces = false;
  // Network bandwidth isolation (nm::NodeManagerOptions); "" interface = off.
  std::string network_interface;
  int64_t link_mbps = 0;
  int64_t network_containers_mbps = 0;
  std::string network_burst = "containers";
  std::string network_classifier = "auto";
  // GPUs (nm::GpuPlugin; docs/gpu-nm.md): "none", "auto" (nvidia-smi -q -x) or a list
  // "index:path[@group],..."; the nvidia-smi program; where auto finds nvidia<minor>; how often
  // the GPUs are checked again, s (0 = only at start).
  std::string gpus = "none";
  std::string nvidia_smi = "nvidia-smi";
  std::string gpu_device_dir = "/dev";
  std::string gpus_allowed;  // --gpus auto: only these indexes, "0,2" ("" = all)
  int64_t gpu_health_interval_s = 30;
  // The NM's web server (/metrics, container logs; YARN's 8042); 0 = a free port. `weft nm`
  // only: `weft dev` gives each NM a free port.
  int http_port = 8042;
  web::HttpLimits http_limits;  // `weft nm` only, like http_port
  // Whom containers run as (nm/container_user.h): "app-user" or "nm-user"; and who may.
  std::string run_containers_as = "app-user";
  int64_t min_user_id = 1000;
  std::vector<std::string> banned_users = {"hdfs", "yarn", "mapred", "bin"};
  std::vector<std::string> allowed_system_users;
  int64_t log_retention_s = 3 * 3600;  // finished apps' container logs, then deleted
  // NodeManagerOptions::out_of_band_heartbeat_gap_ms (< 0 = off).
  int64_t out_of_band_heartbeat_gap_ms = 10;
  // Where finished apps' container logs are aggregated (nm::NodeManagerOptions); "" = off.
  std::string log_aggregation_dir;
  // Cluster admins who may read every app's container logs here, besides the NM's user.
  std::vector<std::string> admins;
  // Kill, rather than re-attach to, the containers an earlier NM on this work root left
  // (NodeManagerOptions::recover; docs/nm-recovery.md).
  bool no_recovery = false;

  // The AMRMProxy (seed 004; nm::NodeManagerOptions::amrmproxy). `weft nm` only.
  bool amrmproxy = false;
  std::vector<std::string> amrmproxy_interceptors;  // empty: the default list
  std::string federation_store;                     // URI (OpenFederationStore); "" = none
  std::string sub_cluster_id;                       // this NM's sub-cluster
  std::string federation_machine_list;              // file: node,sub-cluster,rack lines
  int64_t amrmproxy_max_outstanding_containers = 0;
  int64_t amrmproxy_max_outstanding_memory_mb = 0;
  int64_t amrmproxy_max_total_containers = 0;
  double amrmproxy_max_allocates_per_second = 0;
  int32_t amrmproxy_max_violations = 0;
};

// --amrmproxy and the federation and quota flags into `f`.
void AddAmrmProxyFlags(CLI::App* cmd, NmFlags* f);

// --container-pids-per-vcore, --container-pids-max, --container-disk-limit-mb,
// --container-log-limit-mb into `f`.
void AddContainerLimitFlags(CLI::App* cmd, NmFlags* f);

// --run-containers-as, --min-user-id, --banned-users, --allowed-system-users into `f`.
void AddContainerUserFlags(CLI::App* cmd, NmFlags* f);

// --network-interface, --link-mbps, --network-containers-mbps, --network-burst,
// --network-classifier into `f`.
void AddNetworkFlags(CLI::App* cmd, NmFlags* f);

// Builds the daemon's options: parses the node resources (the error names the bad item) and
// makes the work root absolute. With --amrmproxy: checks its flags, reads the machine list and
// opens the federation store (errors name the flag).
absl::StatusOr<nm::NodeManagerOptions> MakeNodeManagerOptions(const NmFlags& flags);

// The web server's options for an NM with `options` (its work root, how it learns an app's log
// owner and view ACL and whether a container runs: nm/log_aggregator.h), authenticating
// readers with MUNGE ($WEFT_MUNGE_SOCKET); port and bind host are left to the caller.
web::NmWebOptions MakeNmWebOptions(const nm::NodeManagerOptions& options,
                                   std::vector<std::string> admins);

// "host:port <memory-mb=.., vcores=..> (missing: ...)": a started NM in one line.
std::string DescribeNode(const nm::NodeManager& nm);

// Adds the `nm` subcommand to `app`; when it runs, its exit code is stored in *exit_code.
void AddNmCommand(CLI::App& app, int* exit_code);

}  // namespace weft::cli

#endif  // WEFT_CLI_NM_COMMAND_H_
