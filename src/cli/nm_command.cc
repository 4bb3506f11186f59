#include "cli/nm_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "cli/cli_common.h"
#include "cli/daemon_config.h"
#include "common/event_loop.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/reachable_host.h"
#include "common/resource_types.h"
#include "federation/amrmproxy/amrm_proxy_service.h"
#include "federation/policies/policy.h"
#include "federation/store/federation_store.h"
#include "nm/devices/gpu_plugin.h"
#include "nm/log_aggregator.h"
#include "security/munge.h"
#include "web/nm_web_server.h"

namespace weft::cli {
namespace {

// The AMRMProxy's options from the flags; nullopt without --amrmproxy.
absl::StatusOr<std::optional<amrmproxy::AmrmProxyOptions>> MakeAmrmProxyOptions(
    const NmFlags& flags) {
  const bool federation_flags = !flags.federation_store.empty() ||
                                !flags.sub_cluster_id.empty() ||
                                !flags.federation_machine_list.empty();
  const bool proxy_flags = !flags.amrmproxy_interceptors.empty() ||
                           flags.amrmproxy_max_outstanding_containers != 0 ||
                           flags.amrmproxy_max_outstanding_memory_mb != 0 ||
                           flags.amrmproxy_max_total_containers != 0 ||
                           flags.amrmproxy_max_allocates_per_second != 0 ||
                           flags.amrmproxy_max_violations != 0;
  if (!flags.amrmproxy) {
    if (federation_flags || proxy_flags) {
      return absl::InvalidArgumentError(
          "--federation-store, --sub-cluster-id, --federation-machine-list and the "
          "--amrmproxy-* flags need --amrmproxy");
    }
    return std::nullopt;
  }
  amrmproxy::AmrmProxyOptions options;
  options.interceptors = flags.amrmproxy_interceptors;
  options.sub_cluster_id = flags.sub_cluster_id;
  options.throttle.max_outstanding_containers = flags.amrmproxy_max_outstanding_containers;
  options.throttle.max_outstanding_memory_mb = flags.amrmproxy_max_outstanding_memory_mb;
  options.throttle.max_total_containers = flags.amrmproxy_max_total_containers;
  options.throttle.max_allocates_per_second = flags.amrmproxy_max_allocates_per_second;
  options.throttle.max_violations = flags.amrmproxy_max_violations;
  if (flags.federation_store.empty() != flags.sub_cluster_id.empty()) {
    return absl::InvalidArgumentError(
        "--federation-store and --sub-cluster-id go together: the NM's AMRMProxy needs both to "
        "span sub-clusters");
  }
  if (!flags.federation_machine_list.empty() && flags.federation_store.empty()) {
    return absl::InvalidArgumentError("--federation-machine-list needs --federation-store");
  }
  if (!flags.sub_cluster_id.empty()) {
    if (absl::Status s = federation::ValidateSubClusterId(flags.sub_cluster_id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--sub-cluster-id: ", s.message()));
    }
  }
  if (!options.interceptors.empty()) {
    if (absl::Status s = amrmproxy::ValidateInterceptorList(options.interceptors,
                                                            !flags.federation_store.empty());
        !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--amrmproxy-interceptors '", absl::StrJoin(options.interceptors, ","),
                       "': ", s.message()));
    }
  }
  if (!flags.federation_machine_list.empty()) {
    absl::StatusOr<std::string> text = ReadFile(flags.federation_machine_list);
    if (!text.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--federation-machine-list: ", text.status().message()));
    }
    absl::StatusOr<federation::SubClusterResolver> resolver =
        federation::SubClusterResolver::FromMachineList(*text);
    if (!resolver.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--federation-machine-list '",
                                                     flags.federation_machine_list, "': ",
                                                     resolver.status().message()));
    }
    options.machine_list = *std::move(resolver);
  }
  // Checked before the store is opened: a bad flag is reported without touching it.
  if (absl::Status s = amrmproxy::ValidateAmrmProxyOptions([&] {
        amrmproxy::AmrmProxyOptions check = options;
        check.sub_cluster_id.clear();  // checked above, with the store not yet open
        check.interceptors.clear();
        return check;
      }());
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--amrmproxy-*: ", s.message()));
  }
  if (!flags.federation_store.empty()) {
    absl::StatusOr<std::unique_ptr<federation::FederationStateStore>> store =
        federation::OpenFederationStore(flags.federation_store);
    if (!store.ok()) {
      return absl::Status(store.status().code(),
                          absl::StrCat("--federation-store '", flags.federation_store, "': ",
                                       store.status().message()));
    }
    options.federation_store = std::shared_ptr<federation::FederationStateStore>(
        std::move(*store));
  }
  return options;
}

}  // namespace

absl::StatusOr<nm::NodeManagerOptions> MakeNodeManagerOptions(const NmFlags& flags) {
  nm::NodeManagerOptions options;
  if (flags.rm_address.empty()) return absl::InvalidArgumentError("--rm HOST:PORT is required");
  if (flags.port < 0 || flags.port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("--port ", flags.port, " is not a port"));
  options.rm_tracker_address = flags.rm_address;
  options.bind_host = flags.bind_host;
  options.port = flags.port;
  options.rack = flags.rack;
  if (absl::Status s = nm::ValidateNodeLabel(flags.node_label); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("--node-label: ", s.message()));
  options.node_label = flags.node_label;
  for (const std::string& text : flags.node_attributes) {
    absl::StatusOr<std::pair<std::string, std::string>> kv = nm::ParseNodeAttribute(text);
    if (!kv.ok())
      return absl::InvalidArgumentError(absl::StrCat("--node-attribute: ", kv.status().message()));
    if (!options.node_attributes.emplace(kv->first, kv->second).second)
      return absl::InvalidArgumentError(
          absl::StrCat("--node-attribute: key '", kv->first, "' given more than once"));
  }
  options.cgroup_hierarchy = flags.cgroup_hierarchy;
  options.stop_grace_ms = flags.stop_grace_ms;
  options.use_cgroups = !flags.no_cgroups;
  if (flags.container_pids_per_vcore < 0 || flags.container_pids_max < 0 ||
      flags.container_disk_limit_mb < 0 || flags.container_log_limit_mb < 0) {
    return absl::InvalidArgumentError(
        "--container-pids-per-vcore, --container-pids-max, --container-disk-limit-mb and "
        "--container-log-limit-mb must be >= 0 (0 = no limit)");
  }
  options.container_pids_per_vcore = flags.container_pids_per_vcore;
  options.container_pids_max = flags.container_pids_max;
  options.container_disk_limit_mb = flags.container_disk_limit_mb;
  options.container_log_limit_mb = flags.container_log_limit_mb;
  options.container_user_namespaces = flags.container_user_namespaces;
  if (!flags.node_resources.empty()) {
    ResourceTypeRegistry registry;
    auto capability = registry.Parse(flags.node_resources);
    if (!capability.ok())
      return absl::InvalidArgumentError(absl::StrCat("--node-resources '", flags.node_resources,
                                                     "': ", capability.status().message()));
    if (absl::Status s = registry.Validate(*capability); !s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("--node-resources '", flags.node_resources, "': ", s.message()));
    options.capability = *capability;
  }
  options.network_interface = flags.network_interface;
  options.link_mbps = flags.link_mbps;
  options.network_containers_mbps = flags.network_containers_mbps;
  options.network_classifier = flags.network_classifier;
  if (flags.link_mbps < 0 || flags.network_containers_mbps < 0)
    return absl::InvalidArgumentError("--link-mbps and --network-containers-mbps must be >= 0");
  auto burst = nm::ParseBurstLimit(flags.network_burst);
  if (!burst.ok())
    return absl::InvalidArgumentError(absl::StrCat("--network-burst: ", burst.status().message()));
  options.network_burst = *burst;
  if (flags.network_interface.empty() &&
      (flags.link_mbps != 0 || flags.network_containers_mbps != 0))
    return absl::InvalidArgumentError(
        "--link-mbps and --network-containers-mbps need --network-interface");
  if (!flags.gpus_allowed.empty() && flags.gpus != "auto")
    return absl::InvalidArgumentError(
        absl::StrCat("--gpus-allowed needs --gpus auto (got --gpus '", flags.gpus,
                     "'; a list names the node's GPUs itself)"));
  if (flags.gpus != "none") {
    nm::GpuPluginOptions gpu;
    if (flags.gpus == "auto") {
      gpu.nvidia_smi = flags.nvidia_smi;
      gpu.device_dir = flags.gpu_device_dir;
      if (!flags.gpus_allowed.empty()) {
        absl::StatusOr<std::set<int32_t>> allowed = nm::ParseGpuIndexes(flags.gpus_allowed);
        if (!allowed.ok())
          return absl::InvalidArgumentError(absl::StrCat(
              "--gpus-allowed '", flags.gpus_allowed, "': ", allowed.status().message()));
        gpu.allowed = *std::move(allowed);
      }
    } else {
      absl::StatusOr<std::vector<nm::GpuListEntry>> list = nm::ParseGpuList(flags.gpus);
      if (!list.ok())
        return absl::InvalidArgumentError(absl::StrCat(
            "--gpus '", flags.gpus, "' (none, auto or index:path,...): ", list.status().message()));
      gpu.mode = nm::GpuPluginOptions::Mode::kList;
      gpu.list = *std::move(list);
    }
    options.device_plugins.push_back(std::make_shared<nm::GpuPlugin>(std::move(gpu)));
  }
  if (flags.gpu_health_interval_s < 0)
    return absl::InvalidArgumentError(absl::StrCat("--gpu-health-interval-s ",
                                                   flags.gpu_health_interval_s, " must be >= 0"));
  options.device_health_interval_ms = flags.gpu_health_interval_s * 1000;
  if (flags.run_containers_as == "app-user") {
    options.run_as = nm::ContainerRunAs::kAppUser;
  } else if (flags.run_containers_as == "nm-user") {
    options.run_as = nm::ContainerRunAs::kNmUser;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(
        "--run-containers-as '", flags.run_containers_as, "': expected app-user or nm-user"));
  }
  if (flags.min_user_id < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--min-user-id ", flags.min_user_id, " must be >= 0"));
  options.user_policy.min_user_id = flags.min_user_id;
  options.user_policy.banned_users = flags.banned_users;
  options.user_policy.allowed_system_users = flags.allowed_system_users;
  if (flags.log_retention_s < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--log-retention-s ", flags.log_retention_s, " must be >= 0"));
  options.log_retention_ms = flags.log_retention_s * 1000;
  options.out_of_band_heartbeat_gap_ms = flags.out_of_band_heartbeat_gap_ms;
  options.recover = !flags.no_recovery;
  if (!flags.log_aggregation_dir.empty())
    options.log_aggregation_dir =
        std::filesystem::absolute(flags.log_aggregation_dir).lexically_normal().string();
  if (flags.work_root.empty()) return absl::InvalidArgumentError("--work-root is empty");
  absl::StatusOr<std::optional<amrmproxy::AmrmProxyOptions>> proxy = MakeAmrmProxyOptions(flags);
  if (!proxy.ok()) return proxy.status();
  options.amrmproxy = *std::move(proxy);
  options.work_root = std::filesystem::absolute(flags.work_root).lexically_normal().string();
  return options;
}

web::NmWebOptions MakeNmWebOptions(const nm::NodeManagerOptions& options,
                                   std::vector<std::string> admins) {
  web::NmWebOptions web;
  web.work_root = options.work_root;
  web.munge_socket = security::MungeSocketFromEnvironment();
  web.admins = std::move(admins);
  const std::string root = options.work_root;
  web.app_owner = [root](const std::string& app) -> absl::StatusOr<web::LogOwner> {
    absl::StatusOr<nm::AppLogOwner> owner = nm::LogAggregator::ReadAppOwner(root, app);
    if (!owner.ok()) return owner.status();
    return web::LogOwner{owner->user, owner->view_acl};
  };
  web.container_running = [root](const std::string& id) {
    return nm::LogAggregator::ContainerRunning(root, id);
  };
  return web;
}

void AddContainerLimitFlags(CLI::App* cmd, NmFlags* f) {
  cmd->add_flag("--container-user-namespaces", f->container_user_namespaces,
                "let containers create user namespaces (unshare -U); by default a seccomp "
                "filter refuses them");
  cmd->add_option("--container-pids-per-vcore", f->container_pids_per_vcore,
                  "processes and threads a container may hold, per vcore it was given (pids "
                  "cgroup; 0 = no limit unless --container-pids-max)")
      ->capture_default_str();
  cmd->add_option("--container-pids-max", f->container_pids_max,
                  "a fixed pids limit for every container instead (0 = per vcore)")
      ->capture_default_str();
  cmd->add_option("--container-disk-limit-mb", f->container_disk_limit_mb,
                  "disk a container's work dir may use; above it the container is killed "
                  "(checked every second; 0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--container-log-limit-mb", f->container_log_limit_mb,
                  "stdout and stderr kept per container, each; older output is dropped "
                  "(0 = no limit)")
      ->capture_default_str();
}

void AddContainerUserFlags(CLI::App* cmd, NmFlags* f) {
  cmd->add_option("--run-containers-as", f->run_containers_as,
                  "app-user: each container runs as its app's (authenticated) user, as YARN's "
                  "LinuxContainerExecutor; nm-user: as this NodeManager's user, whoever "
                  "submitted (single-user clusters only)")
      ->capture_default_str();
  cmd->add_option("--min-user-id", f->min_user_id,
                  "containers of users with a lower uid are refused (YARN's min.user.id)")
      ->capture_default_str();
  cmd->add_option("--banned-users", f->banned_users,
                  "users whose containers are refused, comma-separated (YARN's banned.users)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--allowed-system-users", f->allowed_system_users,
                  "users below --min-user-id allowed anyway, comma-separated (e.g. root on a "
                  "development machine)")
      ->delimiter(',');
  cmd->add_option("--log-retention-s", f->log_retention_s,
                  "how long a finished application's container logs stay on the node after its "
                  "work dirs are removed (YARN's log.retain-seconds)")
      ->capture_default_str();
}

void AddNetworkFlags(CLI::App* cmd, NmFlags* f) {
  cmd->add_option("--network-interface", f->network_interface,
                  "shape containers' egress on this interface with HTB (needs root and cgroups; "
                  "default: bandwidth is not enforced)");
  cmd->add_option("--link-mbps", f->link_mbps,
                  "the interface's rate, Mbit/s (0 = its speed from sysfs)")
      ->capture_default_str();
  cmd->add_option("--network-containers-mbps", f->network_containers_mbps,
                  "the share of the link for containers, Mbit/s: the node's network-mbps "
                  "capability (0 = 90% of the link)")
      ->capture_default_str();
  cmd->add_option("--network-burst", f->network_burst,
                  "what a container may use above its rate: containers (their total), link, "
                  "strict (nothing)")
      ->capture_default_str();
  cmd->add_option("--network-classifier", f->network_classifier,
                  "auto, tc-cgroup, iptables-net_cls or iptables-cgroup2")
      ->capture_default_str();
}

void AddGpuFlags(CLI::App* cmd, NmFlags* f) {
  cmd->add_option("--gpus", f->gpus,
                  "the node's GPUs (docs/gpu-nm.md): none, auto (nvidia-smi -q -x) or a list "
                  "index:path[@group],... e.g. 0:/dev/nvidia0,1:/dev/nvidia1")
      ->capture_default_str();
  cmd->add_option("--nvidia-smi", f->nvidia_smi,
                  "the nvidia-smi program --gpus auto runs (a path, or a name on PATH)")
      ->capture_default_str();
  cmd->add_option("--gpu-device-dir", f->gpu_device_dir,
                  "where --gpus auto finds the device node of minor N (DIR/nvidiaN)")
      ->capture_default_str();
  cmd->add_option("--gpus-allowed", f->gpus_allowed,
                  "with --gpus auto: only these GPUs (indexes, e.g. 0,2) are the NodeManager's; "
                  "one nvidia-smi does not report stays unhealthy (default: all)");
  cmd->add_option("--gpu-health-interval-s", f->gpu_health_interval_s,
                  "how often the GPUs are discovered again for their health, s (0 = only at "
                  "start)")
      ->capture_default_str();
}

void AddAmrmProxyFlags(CLI::App* cmd, NmFlags* f) {
  cmd->add_flag("--amrmproxy", f->amrmproxy,
                "serve the AMRMProxy on this NM's port: the AMs launched here talk to it, not "
                "to the RM (seed 004; YARN's yarn.nodemanager.amrmproxy.enabled)");
  cmd->add_option("--amrmproxy-interceptors", f->amrmproxy_interceptors,
                  "the AMRMProxy's interceptor chain, comma-separated, last step last: "
                  "throttle, default | federation (default: default, or throttle,federation "
                  "with --federation-store)")
      ->delimiter(',');
  cmd->add_option("--federation-store", f->federation_store,
                  "the federation state store: memory:, sqlite:/path, "
                  "zk://host:port/root?auth-file=FILE or postgresql://user@host:port/db (needs "
                  "--sub-cluster-id)");
  cmd->add_option("--sub-cluster-id", f->sub_cluster_id,
                  "this NM's sub-cluster: the home of the AMs launched here");
  cmd->add_option("--federation-machine-list", f->federation_machine_list,
                  "a file of 'node,sub-cluster,rack' lines for the locality policies (default: "
                  "the sub-clusters' node lists)");
  cmd->add_option("--amrmproxy-max-outstanding-containers",
                  f->amrmproxy_max_outstanding_containers,
                  "per app: containers asked for and not yet allocated (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--amrmproxy-max-outstanding-memory-mb", f->amrmproxy_max_outstanding_memory_mb,
                  "per app: memory of those, MB (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--amrmproxy-max-total-containers", f->amrmproxy_max_total_containers,
                  "per app attempt: containers allocated over its life (0 = no limit)")
      ->capture_default_str();
  cmd->add_option("--amrmproxy-max-allocates-per-second", f->amrmproxy_max_allocates_per_second,
                  "per app: Allocate calls forwarded per second; faster ones are held (0 = no "
                  "limit)")
      ->capture_default_str();
  cmd->add_option("--amrmproxy-max-violations", f->amrmproxy_max_violations,
                  "consecutive Allocate calls over a quota or the rate after which the AM is "
                  "shut down and its app finished FAILED (0 = never)")
      ->capture_default_str();
}

std::string DescribeNode(const nm::NodeManager& nm) {
  std::string text =
      absl::StrCat(nm.node_id(), " ", ResourceTypeRegistry().Format(nm.capability()));
  if (!nm.network_isolation().empty())
    absl::StrAppend(&text, " (network: ", nm.network_isolation(), ")");
  if (!nm.missing_features().empty())
    absl::StrAppend(&text, " (missing: ", absl::StrJoin(nm.missing_features(), ", "), ")");
  return text;
}

namespace {

// `federation_fence_ms`: --federation-fence-ms (kept beside NmFlags: `weft nm` only).
int RunNm(const NmFlags& flags, int64_t federation_fence_ms) {
  auto options = MakeNodeManagerOptions(flags);
  if (!options.ok()) return PrintError(options.status().message());
  if (federation_fence_ms < 0)
    return PrintError(
        absl::StrCat("--federation-fence-ms ", federation_fence_ms, " must be >= 0 (0 = off)"));
  options->federation_fence_ms = federation_fence_ms;
  absl::StatusOr<security::TlsFiles> tls = LoadTlsFlags(flags.tls, "nm");
  if (!tls.ok()) return PrintError(tls.status().message());
  options->tls = *std::move(tls);
  if (flags.port == 0 && !flags.no_recovery)
    log::Warn("recovery_needs_fixed_port",
              {{"effect", "with --port 0 the node id changes at every start, so containers an "
                          "earlier NM left here are killed, not re-attached"}});
  if (flags.http_port < 0 || flags.http_port > 65535)
    return PrintError(absl::StrCat("--http-port ", flags.http_port, " is not a port"));
  // The web server first, so the NM registers with its address.
  metrics::Registry registry;
  web::NmWebOptions web_options = MakeNmWebOptions(*options, flags.admins);
  web_options.bind_host = flags.bind_host;
  web_options.port = flags.http_port;
  web_options.limits = flags.http_limits;
  auto http = web::NmWebServer::Start(web_options, &registry);
  if (!http.ok())
    return PrintError(absl::StrCat("starting the web server: ", http.status().message()));
  // Reported to the RM (the web UI's and REST's nodeHTTPAddress): where others reach it.
  const std::string http_address =
      absl::StrCat(ReachableHost(flags.bind_host), ":", (*http)->port());
  options->http_address = http_address;
  options->metrics = &registry;
  BlockTerminationSignals();
  // A decommissioned node's NM exits, as YARN's does: the RM's SHUTDOWN answer ends the wait
  // below like a SIGTERM (sent to the process, so the waiting thread receives it).
  static std::atomic<bool> shut_down_by_rm{false};
  options->on_rm_shutdown = [](const std::string&) {
    shut_down_by_rm.store(true);
    ::kill(::getpid(), SIGTERM);
  };
  ThreadEventLoop loop;
  loop.Start();
  auto nm = nm::NodeManager::Start(*options, &loop);
  if (!nm.ok()) {
    loop.Stop();
    std::string hint = nm.status().code() == absl::StatusCode::kFailedPrecondition
                           ? " (--no-cgroups sets use_cgroups=false)"
                           : "";
    return PrintError(absl::StrCat(nm.status().message(), hint));
  }
  std::cout << "weft nm: NodeManager " << DescribeNode(**nm) << " on rack " << options->rack
            << (options->node_label.empty() ? std::string()
                                            : absl::StrCat(", node label ", options->node_label))
            << ", reporting to " << options->rm_tracker_address << "\n";
  std::cout << "weft nm: metrics at http://" << http_address
            << "/metrics, container logs under http://" << http_address
            << "/node/containerlogs/\n";
  if (options->amrmproxy.has_value()) {
    std::cout << "weft nm: AMRMProxy at " << (*nm)->node_id()
              << (options->amrmproxy->sub_cluster_id.empty()
                      ? std::string()
                      : absl::StrCat(", home sub-cluster ", options->amrmproxy->sub_cluster_id))
              << "\n";
  }
  std::cout << "weft nm: work root " << options->work_root << "; Ctrl-C or SIGTERM stops it"
            << std::endl;
  int sig = WaitForTerminationSignal();
  log::Info("shutting_down",
            {{"signal", shut_down_by_rm.load() ? "the ResourceManager (NODE_ACTION_SHUTDOWN)"
                        : sig == SIGINT        ? "SIGINT"
                                               : "SIGTERM"},
             {"containers", "stopping"}});
  (*nm)->Shutdown();
  nm->reset();
  loop.Stop();
  (*http)->Stop();
  return 0;
}

}  // namespace

void AddNmCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<NmFlags>();
  CLI::App* cmd = app.add_subcommand("nm", "Run a NodeManager that runs containers for an RM");
  cmd->add_option("--rm", f->rm_address,
                  "the ResourceManager, HOST:PORT, or an HA cluster's RMs, "
                  "HOST:PORT,HOST:PORT,... (the NM follows the active one)")
      ->required()
      ->check(RmAddressListValidator());
  cmd->add_option("--port", f->port, "ContainerService port (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--bind", f->bind_host, "address to listen on")->capture_default_str();
  cmd->add_flag("--no-recovery", f->no_recovery,
                "kill, rather than re-attach to, the containers an earlier NM on this work root "
                "left (re-attaching needs the same --port: the node id is HOST:PORT)");
  AddTlsFlags(cmd, &f->tls);
  cmd->add_option("--node-resources", f->node_resources,
                  "what the node offers, e.g. memory-mb=8192,vcores=4 (default: detected)");
  cmd->add_option("--work-root", f->work_root, "container working directories and logs")
      ->capture_default_str();
  cmd->add_option("--rack", f->rack, "the node's rack")->capture_default_str();
  cmd->add_option("--node-label", f->node_label,
                  "the node's label (its partition; must be one of the RM's scheduler "
                  "node-labels, or the RM refuses the node). Default: none");
  cmd->add_option("--node-attribute", f->node_attributes,
                  "a node attribute KEY=VALUE for placement constraints (repeatable; keys "
                  "[A-Za-z0-9_./-]+, values [A-Za-z0-9_.-]+)");
  cmd->add_option("--cgroup-hierarchy", f->cgroup_hierarchy,
                  "parent cgroup of the containers (one per NM on a machine)")
      ->capture_default_str();
  cmd->add_option("--stop-grace-ms", f->stop_grace_ms, "between SIGTERM and SIGKILL")
      ->capture_default_str();
  cmd->add_option("--out-of-band-heartbeat-gap-ms", f->out_of_band_heartbeat_gap_ms,
                  "report a container's end at once in an out-of-band heartbeat, at most one "
                  "per this many ms (negative = only at the RM's heartbeat interval)")
      ->capture_default_str();
  cmd->add_flag("--no-cgroups", f->no_cgroups,
                "run containers without cgroup resource isolation (no root needed)");
  AddContainerLimitFlags(cmd, f.get());
  cmd->add_option("--http-port", f->http_port,
                  "port of /metrics and container logs (0 = any free port)")
      ->capture_default_str();
  AddHttpLimitFlags(cmd, &f->http_limits);
  cmd->add_option("--log-aggregation-dir", f->log_aggregation_dir,
                  "copy a finished application's container logs to "
                  "DIR/<user>/logs/<app>/<node>/<container>/ before they are deleted here (the "
                  "RM's --log-aggregation-dir, a shared mount on a cluster; default: off)");
  cmd->add_option("--admins", f->admins,
                  "users who may read every app's container logs here, besides the NM's own "
                  "user, comma-separated (the RM's --admins)")
      ->delimiter(',');
  AddNetworkFlags(cmd, f.get());
  AddGpuFlags(cmd, f.get());
  AddContainerUserFlags(cmd, f.get());
  AddAmrmProxyFlags(cmd, f.get());
  auto fence_ms = std::make_shared<int64_t>(0);
  cmd->add_option("--federation-fence-ms", *fence_ms,
                  "federation: with no answer from the RM for this long, or none since the RM "
                  "last renewed its lease in the federation store, kill every container here "
                  "(reported when the RM answers again), so that the containers of a silent RM, "
                  "or of one cut off from the store, are gone before the GPG resubmits their "
                  "apps elsewhere. 0 = off. With `weft gpg` resubmitting on loss it must hold: "
                  "the RM's --federation-heartbeat-ms < this, and this + the NM heartbeat "
                  "interval (the RM's) < the GPG's --membership-expiry-ms - the RM's "
                  "--federation-heartbeat-ms (e.g. 30000 - 5000: 5000 < N < 24000 with 1 s "
                  "heartbeats)")
      ->capture_default_str();
  AddDaemonConfig(cmd);  // --config: every flag may also be set in weft.yaml's section
  cmd->callback([f, fence_ms, exit_code] { *exit_code = RunNm(*f, *fence_ms); });
}

}  // namespace weft::cli
