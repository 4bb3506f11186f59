#include "cli/dev_command.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <iostream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/cli_common.h"
#include "cli/dev_cluster.h"
#include "cli/nm_command.h"
#include "cli/rm_command.h"
#include "common/event_loop.h"

namespace weft::cli {
namespace {

struct DevFlags {
  int nodes = 2;
  int rm_port = 8032;
  std::string data_dir = "./weft-data";
  std::string node_resources = "memory-mb=4096,vcores=4";
  std::string scheduler_config;
  bool no_cgroups = false;
  NmFlags network;  // only the network_* fields
  std::vector<std::string> resource_limits;
};

int RunDev(const DevFlags& flags) {
  if (flags.nodes < 1 || flags.nodes > 100)
    return PrintError(absl::StrCat("--nodes ", flags.nodes, " must be between 1 and 100"));
  std::filesystem::path data_dir = std::filesystem::absolute(flags.data_dir).lexically_normal();

  RmFlags rm_flags;
  rm_flags.port = flags.rm_port;
  rm_flags.scheduler_config = flags.scheduler_config;
  rm_flags.resource_limits = flags.resource_limits;
  rm_flags.state_store = (data_dir / "rm-state.db").string();
  auto rm_options = MakeRmServerOptions(rm_flags);
  if (!rm_options.ok()) return PrintError(rm_options.status().message());
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
  if (auto check = MakeNodeManagerOptions(nm_flags); !check.ok())
    return PrintError(check.status().message());

  BlockTerminationSignals();
  auto cluster =
      DevCluster::Start(*std::move(rm_options), !flags.no_cgroups, data_dir.string(), "weft dev");
  if (!cluster.ok()) return PrintError(cluster.status().message());
  for (int i = 0; i < flags.nodes; ++i) {
    if (auto nm = (*cluster)->AddNode(flags.node_resources, &flags.network); !nm.ok())
      return PrintError(nm.status().message());
  }
  rm::RmServer* rm = &(*cluster)->rm();
  const auto& nms = (*cluster)->nodes();
  const bool use_cgroups = (*cluster)->use_cgroups();
  std::cout << "weft dev: ResourceManager listening on " << rm->address() << "\n"
            << "weft dev: state in " << data_dir.string() << "\n";
  for (size_t i = 0; i < nms.size(); ++i)
    std::cout << "weft dev: NodeManager " << i << ": " << DescribeNode(*nms[i]) << "\n";
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
  cmd->add_option("--nodes", f->nodes, "number of NodeManagers")->capture_default_str();
  cmd->add_option("--rm-port", f->rm_port, "the RM's port (0 = any free port)")
      ->capture_default_str();
  cmd->add_option("--data-dir", f->data_dir,
                  "RM state (SQLite) and the nodes' container directories and logs")
      ->capture_default_str();
  cmd->add_option("--node-resources", f->node_resources, "what each node offers")
      ->capture_default_str();
  cmd->add_option("--scheduler-config", f->scheduler_config, "queues and scheduler YAML");
  cmd->add_flag("--no-cgroups", f->no_cgroups,
                "run containers without cgroup resource isolation (automatic when not root)");
  AddNetworkFlags(cmd, &f->network);
  AddResourceLimitFlag(cmd, &f->resource_limits);
  cmd->callback([f, exit_code] { *exit_code = RunDev(*f); });
}

}  // namespace weft::cli
