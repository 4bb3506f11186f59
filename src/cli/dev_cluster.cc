#include "cli/dev_cluster.h"

#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "cli/nm_command.h"
#include "common/free_port.h"
#include "common/log.h"

namespace weft::cli {

absl::StatusOr<std::unique_ptr<DevCluster>> DevCluster::Start(rm::RmServerOptions rm_options,
                                                              bool use_cgroups,
                                                              std::string data_dir,
                                                              std::string who,
                                                              std::string tls_dir) {
  std::unique_ptr<DevCluster> c(new DevCluster());
  c->data_dir_ = std::move(data_dir);
  c->who_ = std::move(who);
  c->use_cgroups_ = use_cgroups;
  if (c->use_cgroups_ && geteuid() != 0) {
    log::Warn("cgroups_unusable",
              {{"reason", "not running as root"},
               {"effect", "containers run WITHOUT resource isolation (as with --no-cgroups)"}});
    c->use_cgroups_ = false;
  }
  c->tls_dir_ = tls_dir.empty() ? (std::filesystem::path(c->data_dir_) / "tls").string()
                                : std::move(tls_dir);
  absl::StatusOr<security::DevTlsLayout> tls = security::EnsureDevTls(c->tls_dir_, {});
  if (!tls.ok())
    return absl::Status(tls.status().code(), absl::StrCat("making the cluster's certificates in ",
                                                          c->tls_dir_, ": ", tls.status().message()));
  c->tls_ = *std::move(tls);
  if (!rm_options.tls.has_value()) {
    absl::StatusOr<security::TlsFiles> files = security::LoadTlsFiles(c->tls_.rm);
    if (!files.ok()) return files.status();
    rm_options.tls = *std::move(files);
  }
  c->ca_pem_ = rm_options.tls->ca_pem;
  auto rm = rm::RmServer::Start(std::move(rm_options));
  if (!rm.ok())
    return absl::Status(rm.status().code(),
                        absl::StrCat("starting the ResourceManager: ", rm.status().message()));
  c->rm_ = *std::move(rm);
  return c;
}

DevCluster::~DevCluster() { Shutdown(); }

absl::StatusOr<nm::NodeManager*> DevCluster::AddNode(const std::string& node_resources,
                                                     const NmFlags* network,
                                                     const std::string& node_label) {
  const size_t i = nms_.size();
  NmFlags f;
  f.rm_address = rm_->address();
  f.node_resources = node_resources;
  f.work_root = (std::filesystem::path(data_dir_) / absl::StrCat("nm", i)).string();
  f.cgroup_hierarchy = absl::StrCat("weft-dev-", rm_->port(), "-nm", i);
  f.no_cgroups = !use_cgroups_;
  f.node_label = node_label;
  if (network != nullptr) {
    f.network_interface = network->network_interface;
    f.link_mbps = network->link_mbps;
    f.network_containers_mbps = network->network_containers_mbps;
    f.network_burst = network->network_burst;
    f.network_classifier = network->network_classifier;
    f.run_containers_as = network->run_containers_as;
    f.min_user_id = network->min_user_id;
    f.banned_users = network->banned_users;
    f.allowed_system_users = network->allowed_system_users;
    f.log_retention_s = network->log_retention_s;
    f.container_pids_per_vcore = network->container_pids_per_vcore;
    f.container_pids_max = network->container_pids_max;
    f.container_disk_limit_mb = network->container_disk_limit_mb;
    f.container_log_limit_mb = network->container_log_limit_mb;
    f.container_user_namespaces = network->container_user_namespaces;
    f.log_aggregation_dir = network->log_aggregation_dir;
    f.amrmproxy = network->amrmproxy;
    f.amrmproxy_interceptors = network->amrmproxy_interceptors;
    f.federation_store = network->federation_store;
    f.sub_cluster_id = network->sub_cluster_id;
    f.gpus = network->gpus;
    f.nvidia_smi = network->nvidia_smi;
    f.gpu_device_dir = network->gpu_device_dir;
    f.gpu_health_interval_s = network->gpu_health_interval_s;
  }
  // The RM's --log-aggregation-dir in `weft dev` (DevCluster::LogAggregationDir).
  if (f.log_aggregation_dir.empty()) f.log_aggregation_dir = LogAggregationDir(data_dir_);
  auto options = MakeNodeManagerOptions(f);
  if (!options.ok()) return options.status();
  // Its certificate names its node id, 127.0.0.1:<port>: the RM believes nothing else.
  absl::StatusOr<int> port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  options->bind_host = "127.0.0.1";
  options->port = *port;
  const std::string node_id = absl::StrCat("127.0.0.1:", *port);
  absl::StatusOr<security::CertKeyPaths> cert =
      security::IssueCertificate(tls_dir_, tls_dir_, security::DaemonRole::kNodeManager, node_id,
                                 {}, security::kDefaultCertDays, /*overwrite=*/true);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<security::TlsFiles> files =
      security::LoadTlsFiles(tls_.ca_path, cert->cert_path, cert->key_path);
  if (!files.ok()) return files.status();
  options->tls = *std::move(files);
  // Its web server first, so the NM registers with its address.
  auto registry = std::make_unique<metrics::Registry>();
  web::NmWebOptions web_options = MakeNmWebOptions(*options, {});
  web_options.port = 0;
  web_options.node_id = node_id;
  auto nm_web = web::NmWebServer::Start(web_options, registry.get());
  if (!nm_web.ok())
    return absl::Status(
        nm_web.status().code(),
        absl::StrCat("starting NodeManager ", i, "'s web server: ", nm_web.status().message()));
  options->http_address = (*nm_web)->address();
  options->metrics = registry.get();
  nm_metrics_.push_back(std::move(registry));
  nm_webs_.push_back(*std::move(nm_web));
  loops_.push_back(std::make_unique<ThreadEventLoop>());
  loops_.back()->Start();
  auto nm = nm::NodeManager::Start(*options, loops_.back().get());
  if (!nm.ok() && use_cgroups_ && f.network_interface.empty() &&
      nm.status().code() == absl::StatusCode::kFailedPrecondition) {
    log::Warn("cgroups_unusable",
              {{"reason", nm.status().message()},
               {"effect", "containers run WITHOUT resource isolation (as with --no-cgroups)"}});
    use_cgroups_ = false;
    options->use_cgroups = false;
    nm = nm::NodeManager::Start(*options, loops_.back().get());
  }
  if (!nm.ok()) {
    nm_webs_.back()->Stop();
    nm_webs_.pop_back();
    nm_metrics_.pop_back();
    return absl::Status(nm.status().code(),
                        absl::StrCat("starting NodeManager ", i, ": ", nm.status().message()));
  }
  nms_.push_back(*std::move(nm));
  return nms_.back().get();
}

absl::Status DevCluster::StartWeb(web::RmWebOptions options) {
  if (web_) return absl::FailedPreconditionError("the web server already runs");
  auto web = web::RmWebServer::Start(rm_.get(), std::move(options));
  if (!web.ok()) return web.status();
  web_ = *std::move(web);
  return absl::OkStatus();
}

std::shared_ptr<grpc::ChannelCredentials> DevCluster::ClientCredentials() const {
  return security::TlsChannelCredentials(ca_pem_);
}

std::string DevCluster::LogAggregationDir(const std::string& data_dir) {
  return (std::filesystem::path(data_dir) / "aggregated-logs").string();
}

std::vector<std::string> DevCluster::node_web_addresses() const {
  std::vector<std::string> out;
  for (const auto& w : nm_webs_) out.push_back(w->address());
  return out;
}

void DevCluster::Shutdown() {
  for (auto& nm : nms_) nm->Shutdown();
  nms_.clear();
  for (auto& w : nm_webs_) w->Stop();
  nm_webs_.clear();
  for (auto& loop : loops_) loop->Stop();
  loops_.clear();
  nm_metrics_.clear();
  if (web_) web_->Stop();
  web_.reset();
  if (rm_) rm_->Shutdown();
}

}  // namespace weft::cli
