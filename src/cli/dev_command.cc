#include "cli/dev_command.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/cli_common.h"
#include "cli/daemon_config.h"
#include "cli/dev_cluster.h"
#include "cli/dev_federation.h"
#include "cli/nm_command.h"
#include "cli/rm_command.h"
#include "common/event_loop.h"
#include "common/files.h"
#include "common/private_files.h"
#include "nm/devices/gpu_plugin.h"
#include "scheduler/config.h"

namespace weft::cli {
namespace {

// Copies the cluster CA certificate to ~/.weft/ca.pem, where clients of this user look for it
// (cli_common.h ClusterCaPath), atomically. Says where it went, or why not.
std::string CopyCaForClients(const std::string& ca_path) {
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') return "HOME is not set: clients need WEFT_TLS_CA";
  const std::filesystem::path target = std::filesystem::path(home) / kDevCaRelativeToHome;
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return absl::StrCat("not copied to ", target.string(), ": ", ec.message());
  absl::StatusOr<std::string> pem = ReadFile(ca_path);
  absl::Status written = pem.ok() ? WriteFileAtomically(target.string(), *pem, 0644) : pem.status();
  if (!written.ok())
    return absl::StrCat("not copied to ", target.string(), ": ", written.message());
  return absl::StrCat("copied to ", target.string(), " for this user's clients");
}


struct DevFlags {
  int nodes = 2;
  int subclusters = 1;  // > 1: a federation (dev_federation.h), `nodes` per sub-cluster
  int rm_port = 8032;
  std::string data_dir = "./weft-data";
  std::string node_resources = "memory-mb=4096,vcores=4";
  std::string scheduler_config;
  // --nm-labels L0,L1,...: NM i's node label ("" or a missing entry: none).
  std::string nm_labels;
  // --nm-gpus S0;S1;...: NM i's `weft nm --gpus` (none, auto or a list; missing: none); the
  // nvidia-smi and device directory `auto` uses are network's.
  std::string nm_gpus;
  bool no_cgroups = false;
  NmFlags network;  // only the network_*, container-user and nvidia-smi/device-dir fields
  std::vector<std::string> resource_limits;
  std::string secret_file;
  RmFlags user_auth;  // only proxy_users, admins, munge_socket and the history_* fields
  int http_port = 8088;
  bool http_port_given = false;  // --http-port on the command line: no fallback when taken
  bool http_enable_writes = false;
  web::HttpLimits http_limits;  // the RM's web server (with --subclusters: the RMs' and router's)
  bool http_private_view = false;  // REST reads per the view ACLs (default: all for everyone)
};

// NM i's --gpus from --nm-gpus ("none" past the end). The NMs share the host's devices, so
// no device may be given to two of them: `auto` (every GPU of the host) only to one NM and
// with no list beside it, a list's device nodes to one NM each. Errors name the flag and why.
absl::StatusOr<std::vector<std::string>> DevGpuSpecs(const DevFlags& flags) {
  std::vector<std::string> specs(static_cast<size_t>(std::max(flags.nodes, 0)), "none");
  if (flags.nm_gpus.empty()) return specs;
  if (flags.subclusters > 1)
    return absl::InvalidArgumentError("--nm-gpus is not supported with --subclusters > 1");
  std::vector<std::string> given = absl::StrSplit(flags.nm_gpus, ';');
  if (given.size() > specs.size())
    return absl::InvalidArgumentError(absl::StrCat("--nm-gpus names ", given.size(),
                                                   " NodeManagers for --nodes ", flags.nodes));
  std::map<std::string, size_t> owner;  // device node -> NM
  size_t with_gpus = 0;
  bool any_auto = false;
  for (size_t i = 0; i < given.size(); ++i) {
    const std::string spec(absl::StripAsciiWhitespace(given[i]));
    if (spec.empty() || spec == "none") continue;
    ++with_gpus;
    specs[i] = spec;
    if (spec == "auto") {
      any_auto = true;
      continue;
    }
    absl::StatusOr<std::vector<nm::GpuListEntry>> list = nm::ParseGpuList(spec);
    if (!list.ok())
      return absl::InvalidArgumentError(absl::StrCat("--nm-gpus: NodeManager ", i, " ('", spec,
                                                     "'): ", list.status().message()));
    for (const nm::GpuListEntry& entry : *list) {
      auto [it, inserted] = owner.try_emplace(entry.path, i);
      if (!inserted)
        return absl::InvalidArgumentError(
            absl::StrCat("--nm-gpus: ", entry.path, " is given to NodeManagers ", it->second,
                         " and ", i, "; each device goes to one"));
    }
  }
  if (any_auto && with_gpus > 1)
    return absl::InvalidArgumentError(
        "--nm-gpus: 'auto' gives a NodeManager every GPU of this host; no other NodeManager may "
        "have GPUs beside it (give them none, or give each a list)");
  return specs;
}

int RunDevFederation(const DevFlags& flags, const RmFlags& rm_flags, const NmFlags& nm_flags,
                     const std::filesystem::path& data_dir) {
  if (!flags.network.network_interface.empty())
    return PrintError("--network-interface shapes one NM's interface: not with --subclusters");
  if (flags.http_enable_writes)
    return PrintError("--http-enable-writes: the router's REST API is read-only");
  DevFederationOptions o;
  o.subclusters = flags.subclusters;
  o.nodes_per_subcluster = flags.nodes;
  o.node_resources = flags.node_resources;
  o.data_dir = data_dir.string();
  o.rm = rm_flags;
  o.nm = nm_flags;
  o.use_cgroups = !flags.no_cgroups;
  if (o.use_cgroups && geteuid() != 0) o.use_cgroups = false;  // DevCluster warns as well
  o.router_port = flags.rm_port;
  o.router_http_port = flags.http_port_given ? flags.http_port : 8089;
  o.http_limits = flags.http_limits;
  BlockTerminationSignals();
  auto fed = DevFederation::Start(std::move(o));
  if (!fed.ok()) return PrintError(fed.status().message());
  std::cout << "weft dev: a federation of " << flags.subclusters << " sub-clusters, "
            << flags.nodes << " NodeManager(s) each (AMRMProxy on)\n"
            << "weft dev: router listening on " << (*fed)->router().address()
            << " (clients: the default RM address; WEFT_RM=" << (*fed)->router().address()
            << ")\n"
            << "weft dev: federation web UI at " << (*fed)->router_web().url()
            << ", REST at http://" << (*fed)->router_web().address() << "/ws/v1/cluster\n"
            << "weft dev: federation store " << (*fed)->store_uri()
            << " (weft federation subclusters --federation-store " << (*fed)->store_uri()
            << ")\n"
            << "weft dev: cluster CA WEFT_TLS_CA=" << (*fed)->ca_path() << " ("
            << CopyCaForClients((*fed)->ca_path()) << ")\n";
  const auto& clusters = (*fed)->subclusters();
  for (size_t i = 0; i < clusters.size(); ++i) {
    std::cout << "weft dev: sub-cluster " << DevFederation::SubClusterId(static_cast<int>(i))
              << ": RM " << clusters[i]->rm().address() << ", web UI " << clusters[i]->web()->url();
    for (const auto& nm : clusters[i]->nodes()) std::cout << ", NM " << DescribeNode(*nm);
    std::cout << "\n";
  }
  std::cout << "weft dev: try `weft app run-shell --num-containers 8 --command hostname --wait`\n"
            << "weft dev: Ctrl-C or SIGTERM stops the federation" << std::endl;
  int sig = WaitForTerminationSignal();
  std::cerr << "weft dev: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ", stopping containers and shutting down" << std::endl;
  (*fed)->Shutdown();
  std::cerr << "weft dev: stopped" << std::endl;
  return 0;
}

int RunDev(const DevFlags& flags) {
  if (flags.nodes < 1 || flags.nodes > 100)
    return PrintError(absl::StrCat("--nodes ", flags.nodes, " must be between 1 and 100"));
  if (flags.subclusters < 1 || flags.subclusters > 20)
    return PrintError(
        absl::StrCat("--subclusters ", flags.subclusters, " must be between 1 and 20"));
  std::filesystem::path data_dir = std::filesystem::absolute(flags.data_dir).lexically_normal();

  RmFlags rm_flags;
  rm_flags.port = flags.rm_port;
  rm_flags.scheduler_config = flags.scheduler_config;
  rm_flags.resource_limits = flags.resource_limits;
  rm_flags.state_store = (data_dir / "rm-state.db").string();
  rm_flags.secret_file = flags.secret_file;
  rm_flags.proxy_users = flags.user_auth.proxy_users;
  rm_flags.admins = flags.user_auth.admins;
  rm_flags.munge_socket = flags.user_auth.munge_socket;
  rm_flags.history_sample_ms = flags.user_auth.history_sample_ms;
  rm_flags.history_retention_s = flags.user_auth.history_retention_s;
  // Application history: a SQLite store in the data dir unless told otherwise.
  rm_flags.history_store = flags.user_auth.history_store.empty()
                               ? "sqlite:" + (data_dir / "history.db").string()
                               : flags.user_auth.history_store;
  rm_flags.history_outbox = flags.user_auth.history_outbox;
  rm_flags.max_completed_apps = flags.user_auth.max_completed_apps;
  rm_flags.history_keep_days = flags.user_auth.history_keep_days;
  rm_flags.history_keep_apps = flags.user_auth.history_keep_apps;
  rm_flags.http_port = flags.http_port;
  rm_flags.http_enable_writes = flags.http_enable_writes;
  rm_flags.http_anonymous_view = !flags.http_private_view;
  rm_flags.http_limits = flags.http_limits;
  rm_flags.log_aggregation_dir = DevCluster::LogAggregationDir(data_dir.string());
  auto rm_options = MakeRmServerOptions(rm_flags);
  if (!rm_options.ok()) return PrintError(rm_options.status().message());
  // --nm-labels: NM i gets labels[i]. The RM must know them: a default configuration gets them
  // as exclusive labels; a --scheduler-config must declare them (else each such NM's
  // registration would be refused), checked here before anything starts.
  std::vector<std::string> nm_labels;
  if (!flags.nm_labels.empty()) {
    if (flags.subclusters > 1)
      return PrintError("--nm-labels is not supported with --subclusters > 1");
    nm_labels = absl::StrSplit(flags.nm_labels, ',');
    if (static_cast<int>(nm_labels.size()) > flags.nodes)
      return PrintError(absl::StrCat("--nm-labels names ", nm_labels.size(), " labels for --nodes ",
                                     flags.nodes));
    for (const std::string& label : nm_labels) {
      if (absl::Status s = nm::ValidateNodeLabel(label); !s.ok())
        return PrintError(absl::StrCat("--nm-labels: ", s.message()));
      if (label.empty()) continue;
      scheduler::SchedulerConfig& config = rm_options->rm.scheduler;
      if (flags.scheduler_config.empty()) {
        config.node_labels.try_emplace(label, scheduler::NodeLabelConfig{/*exclusive=*/true});
      } else if (!config.node_labels.contains(label)) {
        return PrintError(absl::StrCat(
            "--nm-labels: node label '", label, "' is not declared in --scheduler-config ",
            flags.scheduler_config, " (node-labels); the RM would refuse that NodeManager"));
      }
    }
  }
  absl::StatusOr<std::vector<std::string>> gpu_specs = DevGpuSpecs(flags);
  if (!gpu_specs.ok()) return PrintError(gpu_specs.status().message());
  auto web_options = MakeRmWebOptions(rm_flags);
  if (!web_options.ok()) return PrintError(web_options.status().message());
  // Validates --node-resources before anything starts.
  NmFlags nm_flags;
  nm_flags.rm_address = "127.0.0.1:0";
  nm_flags.node_resources = flags.node_resources;
  if (!flags.network.network_interface.empty() && flags.nodes != 1)
    return PrintError(absl::StrCat(
        "--network-interface shapes one interface, which one NodeManager owns: use --nodes 1 "
        "(got --nodes ", flags.nodes, ")"));
  nm_flags.network_interface = flags.network.network_interface;
  nm_flags.link_mbps = flags.network.link_mbps;
  nm_flags.network_containers_mbps = flags.network.network_containers_mbps;
  nm_flags.network_burst = flags.network.network_burst;
  nm_flags.network_classifier = flags.network.network_classifier;
  nm_flags.run_containers_as = flags.network.run_containers_as;
  nm_flags.min_user_id = flags.network.min_user_id;
  nm_flags.banned_users = flags.network.banned_users;
  nm_flags.allowed_system_users = flags.network.allowed_system_users;
  nm_flags.log_retention_s = flags.network.log_retention_s;
  nm_flags.container_pids_per_vcore = flags.network.container_pids_per_vcore;
  nm_flags.container_pids_max = flags.network.container_pids_max;
  nm_flags.container_disk_limit_mb = flags.network.container_disk_limit_mb;
  nm_flags.container_log_limit_mb = flags.network.container_log_limit_mb;
  nm_flags.container_user_namespaces = flags.network.container_user_namespaces;
  if (auto check = MakeNodeManagerOptions(nm_flags); !check.ok())
    return PrintError(check.status().message());
  // Every flag is checked: only now is anything written. The RM's state store, the CA's key and
  // the NMs' records live here: 0711 (container users traverse it to their own work dirs), and
  // one that others can read is refused.
  if (absl::Status s = EnsurePrivateDirectory(data_dir.string(), "--data-dir", 0711); !s.ok())
    return PrintError(s.message());
  if (flags.subclusters > 1) return RunDevFederation(flags, rm_flags, nm_flags, data_dir);

  BlockTerminationSignals();
  auto cluster =
      DevCluster::Start(*std::move(rm_options), !flags.no_cgroups, data_dir.string(), "weft dev");
  if (!cluster.ok()) return PrintError(cluster.status().message());
  auto web_slot = std::make_shared<std::atomic<web::RmWebServer*>>(nullptr);
  AddHistoryRoutes(rm_flags, &(*cluster)->rm(), web_slot, &*web_options);
  if (absl::Status s = (*cluster)->StartWeb(*web_options); !s.ok()) {
    // The default port being busy (another weft dev, a YARN RM) is no reason to fail: take
    // any free one, unless the user asked for this port.
    if (flags.http_port_given || s.code() != absl::StatusCode::kUnavailable)
      return PrintError(absl::StrCat("starting the web server: ", s.message()));
    std::cerr << "weft dev: HTTP port " << flags.http_port
              << " is taken; serving the web UI on a free port instead" << std::endl;
    web_options->port = 0;
    if (absl::Status again = (*cluster)->StartWeb(*web_options); !again.ok())
      return PrintError(absl::StrCat("starting the web server: ", again.message()));
  }
  web_slot->store((*cluster)->web());
  for (int i = 0; i < flags.nodes; ++i) {
    const std::string label = static_cast<size_t>(i) < nm_labels.size() ? nm_labels[i] : "";
    NmFlags per_nm = flags.network;
    per_nm.gpus = (*gpu_specs)[static_cast<size_t>(i)];
    if (auto nm = (*cluster)->AddNode(flags.node_resources, &per_nm, label); !nm.ok())
      return PrintError(absl::StrCat("NodeManager ", i, ": ", nm.status().message()));
  }
  rm::RmServer* rm = &(*cluster)->rm();
  const auto& nms = (*cluster)->nodes();
  const bool use_cgroups = (*cluster)->use_cgroups();
  const web::RmWebServer* http = (*cluster)->web();
  const std::vector<std::string> nm_web = (*cluster)->node_web_addresses();
  std::cout << "weft dev: ResourceManager listening on " << rm->address() << "\n"
            << "weft dev: web UI at " << http->url() << "\n"
            << "weft dev: REST API at http://" << http->address() << "/ws/v1/cluster (writes "
            << (web_options->writes_enabled ? "enabled, X-Weft-Secret required" : "disabled")
            << "), metrics at http://" << http->address() << "/metrics\n"
            << "weft dev: state in " << data_dir.string() << "\n"
            << "weft dev: cluster CA WEFT_TLS_CA=" << (*cluster)->ca_path() << " ("
            << CopyCaForClients((*cluster)->ca_path()) << ")\n";
  for (size_t i = 0; i < nms.size(); ++i) {
    std::cout << "weft dev: NodeManager " << i << ": " << DescribeNode(*nms[i]);
    if (i < nm_labels.size() && !nm_labels[i].empty()) std::cout << ", node label " << nm_labels[i];
    if (i < nm_web.size()) std::cout << " (metrics at http://" << nm_web[i] << "/metrics)";
    std::cout << "\n";
  }
  std::cout << "weft dev: containers " << (use_cgroups ? "in cgroups" : "without cgroups") << "\n"
            << "weft dev: try `WEFT_RM=" << rm->address()
            << " weft app submit --command 'echo hello' --wait`\n"
            << "weft dev: Ctrl-C or SIGTERM stops the cluster" << std::endl;

  int sig = WaitForTerminationSignal();
  std::cerr << "weft dev: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
            << ", stopping containers and shutting down" << std::endl;
  (*cluster)->Shutdown();
  std::cerr << "weft dev: stopped" << std::endl;
  return 0;
}

}  // namespace

void AddDevCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<DevFlags>();
  CLI::App* cmd = app.add_subcommand(
      "dev", "Run a development cluster in one process: an RM and N NodeManagers on 127.0.0.1");
  cmd->add_option("--nodes", f->nodes, "number of NodeManagers (per sub-cluster)")
      ->capture_default_str();
  cmd->add_option("--subclusters", f->subclusters,
                  "a federation of N sub-clusters (an RM and --nodes NMs each, AMRMProxy on), a "
                  "router on --rm-port and its web UI on --http-port (default 8089), a GPG, "
                  "over a SQLite federation store in --data-dir")
      ->capture_default_str();
  cmd->add_option("--rm-port", f->rm_port, "the RM's port (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--data-dir", f->data_dir,
                  "RM state (SQLite) and the nodes' container directories and logs")
      ->capture_default_str();
  cmd->add_option("--node-resources", f->node_resources, "what each node offers")
      ->capture_default_str();
  cmd->add_option("--scheduler-config", f->scheduler_config, "queues and scheduler YAML");
  cmd->add_option("--nm-labels", f->nm_labels,
                  "node labels of the NodeManagers, L0,L1,...: NM i gets Li (empty or missing "
                  "entries: no label). Without --scheduler-config they are added to the default "
                  "configuration as exclusive labels; a --scheduler-config must declare them");
  cmd->add_option("--nm-gpus", f->nm_gpus,
                  "GPUs of the NodeManagers, S0;S1;...: NM i gets `weft nm --gpus Si` (none, "
                  "auto or index:path[@group],...; missing entries: none). A device goes to one "
                  "NM; auto to one NM only (docs/gpu-nm.md)");
  cmd->add_option("--nvidia-smi", f->network.nvidia_smi, "the nvidia-smi --nm-gpus auto runs")
      ->capture_default_str();
  cmd->add_option("--gpu-device-dir", f->network.gpu_device_dir,
                  "where --nm-gpus auto finds the device node of minor N (DIR/nvidiaN)")
      ->capture_default_str();
  cmd->add_flag("--no-cgroups", f->no_cgroups,
                "run containers without cgroup resource isolation (automatic when not root)");
  AddNetworkFlags(cmd, &f->network);
  AddContainerUserFlags(cmd, &f->network);
  AddContainerLimitFlags(cmd, &f->network);
  AddResourceLimitFlag(cmd, &f->resource_limits);
  CLI::Option* http_port =
      cmd->add_option("--http-port", f->http_port,
                      "port of the web UI, REST API (/ws/v1/cluster) and /metrics (0 = any free "
                      "port; when the default is taken, a free one is used)")
          ->capture_default_str();
  AddHttpLimitFlags(cmd, &f->http_limits);
  AddUserAuthFlags(cmd, &f->user_auth);
  AddHistoryFlags(cmd, &f->user_auth);
  cmd->add_option("--secret-file", f->secret_file,
                  "require clients (ClientService, AdminService, REST writes) to present this "
                  "file's secret (clients: WEFT_SECRET_FILE)");
  cmd->add_flag("--http-enable-writes", f->http_enable_writes,
                "allow REST submissions and kills (needs --secret-file; docs/web.md)");
  cmd->add_flag("--http-private-view", f->http_private_view,
                "REST reads and the web UI show an app's details only to its owner, queue "
                "admins, cluster admins and its view ACL (default here: to everyone, as `weft "
                "rm --http-anonymous-view`)");
  AddDaemonConfig(cmd);  // --config: every flag may also be set in weft.yaml's section
  cmd->callback([f, exit_code, http_port] {
    f->http_port_given = http_port->count() > 0;
    *exit_code = RunDev(*f);
  });
}

}  // namespace weft::cli
