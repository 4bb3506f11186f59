#include "cli/dev_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/nm_command.h"

namespace weft::cli {

absl::StatusOr<std::unique_ptr<DevCluster>> DevCluster::Start(rm::RmServerOptions rm_options,
                                                              bool use_cgroups,
                                                              std::string data_dir,
                                                              std::string who) {
  std::unique_ptr<DevCluster> c(new DevCluster());
  c->data_dir_ = std::move(data_dir);
  c->who_ = std::move(who);
  c->use_cgroups_ = use_cgroups;
  if (c->use_cgroups_ && geteuid() != 0) {
    std::cerr << c->who_
              << ": warning: not running as root, so cgroups are unusable; containers "
                 "run WITHOUT resource isolation (as with --no-cgroups)"
              << std::endl;
    c->use_cgroups_ = false;
  }
  auto rm = rm::RmServer::Start(std::move(rm_options));
  if (!rm.ok())
    return absl::Status(rm.status().code(),
                        absl::StrCat("starting the ResourceManager: ", rm.status().message()));
  c->rm_ = *std::move(rm);
  return c;
}

DevCluster::~DevCluster() { Shutdown(); }

absl::StatusOr<nm::NodeManager*> DevCluster::AddNode(const std::string& node_resources,
                                                     const NmFlags* network) {
  const size_t i = nms_.size();
  NmFlags f;
  f.rm_address = rm_->address();
  f.node_resources = node_resources;
  f.work_root = (std::filesystem::path(data_dir_) / absl::StrCat("nm", i)).string();
  f.cgroup_hierarchy = absl::StrCat("weft-dev-", rm_->port(), "-nm", i);
  f.no_cgroups = !use_cgroups_;
  if (network != nullptr) {
    f.network_interface = network->network_interface;
    f.link_mbps = network->link_mbps;
    f.network_containers_mbps = network->network_containers_mbps;
    f.network_burst = network->network_burst;
    f.network_classifier = network->network_classifier;
  }
  auto options = MakeNodeManagerOptions(f);
  if (!options.ok()) return options.status();
  loops_.push_back(std::make_unique<ThreadEventLoop>());
  loops_.back()->Start();
  auto nm = nm::NodeManager::Start(*options, loops_.back().get());
  if (!nm.ok() && use_cgroups_ && f.network_interface.empty() &&
      nm.status().code() == absl::StatusCode::kFailedPrecondition) {
    std::cerr << who_ << ": warning: cgroups are unusable (" << nm.status().message()
              << "); containers run WITHOUT resource isolation (as with --no-cgroups)" << std::endl;
    use_cgroups_ = false;
    options->use_cgroups = false;
    nm = nm::NodeManager::Start(*options, loops_.back().get());
  }
  if (!nm.ok())
    return absl::Status(nm.status().code(),
                        absl::StrCat("starting NodeManager ", i, ": ", nm.status().message()));
  nms_.push_back(*std::move(nm));
  return nms_.back().get();
}

void DevCluster::Shutdown() {
  for (auto& nm : nms_) nm->Shutdown();
  nms_.clear();
  for (auto& loop : loops_) loop->Stop();
  loops_.clear();
  if (rm_) rm_->Shutdown();
}

}  // namespace weft::cli
