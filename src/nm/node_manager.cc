// Copyright Weft authors.
#include "nm/node_manager.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/errors.h"
#include "common/log.h"
#include "common/reachable_host.h"
#include "nm/node_manager_internal.h"
#include "nm/spawn_child.h"
#include "security/grpc_server.h"
#include "security/tokens.h"


namespace weft::nm {

using internal::kCgroupRoot;

namespace internal {

namespace {

// The "name=value" items of a token's resource, in order; every name at most once.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseTokenResource(
    absl::string_view text) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (absl::ConsumePrefix(&body, "<") && !absl::ConsumeSuffix(&body, ">")) {
    return absl::InvalidArgumentError(absl::StrCat("resource '", text, "': missing '>'"));
  }
  std::vector<std::pair<std::string, int64_t>> items;
  for (absl::string_view item : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    int64_t value = 0;
    if (!absl::StrContains(item, '=') ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource '", text, "': bad item '", item, "'"));
    }
    std::string name(absl::StripAsciiWhitespace(kv.first));
    for (const auto& [seen, unused] : items) {
      if (seen == name) {
        return absl::InvalidArgumentError(absl::StrCat("resource '", text, "': repeated ", name));
      }
    }
    items.emplace_back(std::move(name), value);
  }
  return items;
}

}  // namespace

absl::StatusOr<v1::Resource> ResourceFromTokenResource(absl::string_view text) {
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> items = ParseTokenResource(text);
  if (!items.ok()) return items.status();
  v1::Resource resource;
  for (const auto& [name, value] : *items) (*resource.mutable_values())[name] = value;
  return resource;
}

absl::StatusOr<CgroupLimits> LimitsFromTokenResource(absl::string_view text,
                                                     int64_t* network_mbps) {
  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> items = ParseTokenResource(text);
  if (!items.ok()) return items.status();
  int64_t memory_mb = -1;
  int64_t vcores = -1;
  int64_t network = -1;
  for (const auto& [name, value] : *items) {
    if (name == "memory-mb") memory_mb = value;
    if (name == "vcores") vcores = value;
    if (name == "network-mbps") network = value;
  }
  constexpr int64_t kBytesPerMb = int64_t{1} << 20;
  if (memory_mb > std::numeric_limits<int64_t>::max() / kBytesPerMb ||
      vcores > std::numeric_limits<int64_t>::max() / kCpuSharesPerVcore) {
    return absl::InvalidArgumentError(absl::StrCat("resource '", text, "': out of range"));
  }
  CgroupLimits limits;
  limits.memory_bytes = std::max<int64_t>(memory_mb, 0) * kBytesPerMb;
  limits.cpu_weight = std::max<int64_t>(vcores, 0) * kCpuSharesPerVcore;
  *network_mbps = std::max<int64_t>(network, 0);
  return limits;
}

int64_t PidsLimitFor(int64_t vcores, int64_t pids_per_vcore, int64_t pids_max) {
  if (pids_max > 0) return pids_max;
  if (pids_per_vcore <= 0) return 0;
  const int64_t cores = std::max<int64_t>(vcores, 1);
  // pids.max is at most 2^22 (PID_MAX_LIMIT): more means "no limit" in all but name.
  constexpr int64_t kPidMaxLimit = int64_t{1} << 22;
  return cores > kPidMaxLimit / pids_per_vcore ? kPidMaxLimit : cores * pids_per_vcore;
}

std::string ContainerStateDir(absl::string_view work_root, absl::string_view container_id) {
  return absl::StrCat(work_root, "/", kStateDir, "/", container_id);
}

v1::ContainerStatus CompletedStatus(const std::string& id, int exit_status,
                                    const std::string& diagnostics,
                                    const NmContainerRecord& accounting) {
  v1::ContainerStatus status;
  status.set_container_id(id);
  status.set_state(v1::CONTAINER_COMPLETE);
  status.set_exit_status(exit_status);
  status.set_diagnostics(diagnostics);
  status.set_start_time_ms(accounting.launched_ms);
  status.set_finish_time_ms(accounting.finished_ms);
  absl::StatusOr<v1::Resource> allocated = ResourceFromTokenResource(accounting.resource);
  if (!accounting.resource.empty() && allocated.ok())
    *status.mutable_allocated() = *std::move(allocated);
  v1::ResourceUsage* usage = status.mutable_usage();
  usage->set_cpu_time_ms(accounting.cpu_time_ms);
  usage->set_network_tx_bytes(accounting.network_tx_bytes);
  usage->set_peak_memory_bytes(accounting.peak_memory_bytes);
  usage->set_memory_mb_seconds(ReportedMbSeconds(accounting.memory_mb_seconds));
  return status;
}

int64_t ReportedMbSeconds(double memory_mb_seconds) {
  const int64_t mb_ms = std::llround(memory_mb_seconds * 1000);
  return (mb_ms + 500) / 1000;
}

void AddMemorySample(NmContainerRecord* record, int64_t now_ms, int64_t rss_bytes) {
  if (record->usage_sample_ms > 0 && now_ms > record->usage_sample_ms) {
    constexpr double kBytesPerMb = 1 << 20;
    record->memory_mb_seconds += static_cast<double>(std::max<int64_t>(rss_bytes, 0)) /
                                 kBytesPerMb *
                                 static_cast<double>(now_ms - record->usage_sample_ms) / 1000;
  }
  record->usage_sample_ms = std::max(record->usage_sample_ms, now_ms);
  record->usage_sample_rss_bytes = rss_bytes;
}


}  // namespace internal

namespace {

// MemTotal of /proc/meminfo in MiB.
absl::StatusOr<int64_t> DetectMemoryMb(OsEnv* env) {
  absl::StatusOr<std::string> meminfo = env->ReadFile("/proc/meminfo");
  if (!meminfo.ok()) return meminfo.status();
  for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
    line = absl::StripAsciiWhitespace(line);
    int64_t kb = 0;
    if (absl::ConsumeSuffix(&line, "kB") &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kb) && kb > 0) {
      return kb / 1024;
    }
    break;
  }
  return absl::InternalError("no parsable MemTotal line in /proc/meminfo");
}

}  // namespace

// ContainerService on the callback API: each handler posts its work to the loop, which
// fills the response and finishes the RPC. Nothing here touches NodeManager state directly.
class NodeManager::Service final : public v1::ContainerService::CallbackService {
 public:
  explicit Service(NodeManager* nm) : nm_(nm) {}

  grpc::ServerUnaryReactor* StartContainers(grpc::CallbackServerContext* context,
                                            const v1::StartContainersRequest* request,
                                            v1::StartContainersResponse* response) override {
    return Handle(context,
                  [nm = nm_, request, response] { nm->DoStartContainers(*request, response); });
  }
  grpc::ServerUnaryReactor* StopContainers(grpc::CallbackServerContext* context,
                                           const v1::StopContainersRequest* request,
                                           v1::StopContainersResponse* response) override {
    return Handle(context,
                  [nm = nm_, request, response] { nm->DoStopContainers(*request, response); });
  }
  grpc::ServerUnaryReactor* GetContainerStatuses(
      grpc::CallbackServerContext* context, const v1::GetContainerStatusesRequest* request,
      v1::GetContainerStatusesResponse* response) override {
    return Handle(
        context, [nm = nm_, request, response] { nm->DoGetContainerStatuses(*request, response); });
  }
  grpc::ServerUnaryReactor* UpdateContainers(grpc::CallbackServerContext* context,
                                             const v1::UpdateContainersRequest* request,
                                             v1::UpdateContainersResponse* response) override {
    return Handle(context,
                  [nm = nm_, request, response] { nm->DoUpdateContainers(*request, response); });
  }

 private:
  template <typename Work>
  grpc::ServerUnaryReactor* Handle(grpc::CallbackServerContext* context, Work work) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (!nm_->serving_.load(std::memory_order_acquire)) {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                                   "the NodeManager is starting or shutting down"));
      return reactor;
    }
    nm_->loop_->Post([work = std::move(work), reactor]() mutable {
      work();
      reactor->Finish(grpc::Status::OK);
    });
    return reactor;
  }

  NodeManager* const nm_;
};

NodeManager::NodeManager(NodeManagerOptions options, EventLoop* loop)
    : options_(std::move(options)), loop_(loop) {
  if (options_.metrics == nullptr) return;
  // The counters exist from the start (at 0), so a scrape sees every family.
  options_.metrics->GetCounter("weft_nm_container_launches_total", "Containers started.");
  options_.metrics->GetCounter(
      "weft_nm_container_launch_failures_total",
      "Container starts refused or failed (bad token, replay, launch error).");
  options_.metrics->GetGauge("weft_nm_containers_running", "Containers running on this node.");
}

namespace {

bool NodeNameChars(absl::string_view s, bool slash) {
  if (s.empty() || s.size() > 255) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' &&
        !(slash && c == '/'))
      return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateNodeLabel(absl::string_view label) {
  if (label.empty() || NodeNameChars(label, /*slash=*/false)) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("node label '", label, "' is not 1-255 characters of [A-Za-z0-9_.-]"));
}

absl::Status ValidateNodeAttribute(absl::string_view key, absl::string_view value) {
  if (!NodeNameChars(key, /*slash=*/true))
    return absl::InvalidArgumentError(
        absl::StrCat("node attribute key '", key, "' is not 1-255 characters of [A-Za-z0-9_./-]"));
  if (!NodeNameChars(value, /*slash=*/false))
    return absl::InvalidArgumentError(absl::StrCat("node attribute ", key, ": value '", value,
                                                   "' is not 1-255 characters of [A-Za-z0-9_.-]"));
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, std::string>> ParseNodeAttribute(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("node attribute '", text, "' is not key=value"));
  std::pair<std::string, std::string> kv{std::string(text.substr(0, eq)),
                                         std::string(text.substr(eq + 1))};
  if (absl::Status s = ValidateNodeAttribute(kv.first, kv.second); !s.ok()) return s;
  return kv;
}

absl::StatusOr<std::unique_ptr<NodeManager>> NodeManager::Start(NodeManagerOptions options,
                                                                EventLoop* loop) {
  if (absl::Status s = ValidateNodeLabel(options.node_label); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("starting NodeManager: ", s.message()));
  for (const auto& [k, v] : options.node_attributes) {
    if (absl::Status s = ValidateNodeAttribute(k, v); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("starting NodeManager: ", s.message()));
  }
  if (loop == nullptr) return absl::InvalidArgumentError("starting NodeManager: no event loop");
  if (options.rm_tracker_address.empty()) {
    return absl::InvalidArgumentError("starting NodeManager: rm_tracker_address is empty");
  }
  absl::StatusOr<RmFailover> rm_failover = RmFailover::Create(options.rm_tracker_address);
  if (!rm_failover.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("starting NodeManager: rm_tracker_address: ", rm_failover.status().message()));
  }
  if (options.bind_host.empty() || options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("starting NodeManager: bad bind address '",
                                                   options.bind_host, ":", options.port, "'"));
  }
  if (options.work_root.empty() || options.work_root.front() != '/') {
    return absl::InvalidArgumentError(absl::StrCat("starting NodeManager: work_root '",
                                                   options.work_root, "' is not an absolute path"));
  }
  if (options.stop_grace_ms < 0) {
    return absl::InvalidArgumentError("starting NodeManager: stop_grace_ms is negative");
  }
  constexpr int64_t kMaxMb = std::numeric_limits<int64_t>::max() >> 21;
  if (options.container_pids_per_vcore < 0 || options.container_pids_max < 0 ||
      options.container_disk_limit_mb < 0 || options.container_disk_limit_mb > kMaxMb ||
      options.container_log_limit_mb < 0 || options.container_log_limit_mb > kMaxMb ||
      options.container_pids_per_vcore > (int64_t{1} << 22)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "starting NodeManager: container limits out of range (pids per vcore ",
        options.container_pids_per_vcore, ", pids max ", options.container_pids_max,
        ", disk ", options.container_disk_limit_mb, " MB, logs ", options.container_log_limit_mb,
        " MB)"));
  }
  if (options.capability.AnyNegative()) {
    return absl::InvalidArgumentError(absl::StrCat("starting NodeManager: capability ",
                                                   options.capability.DebugString(),
                                                   " has a negative component"));
  }

  auto nm = absl::WrapUnique(new NodeManager(std::move(options), loop));
  const NodeManagerOptions& opts = nm->options_;
  OsEnv* env = OsEnv::Default();

  // Isolation. Every missing feature is logged and sent to the RM.
  const bool shape_network = !opts.network_interface.empty();
  if (shape_network && !opts.use_cgroups) {
    return absl::InvalidArgumentError(
        "starting NodeManager: network bandwidth isolation (network_interface) needs cgroups "
        "(use_cgroups=true)");
  }
  if (shape_network) {
    absl::StatusOr<bool> mounted = MountNetClsIfMissing(kCgroupRoot);
    if (!mounted.ok()) {
      log::Warn("net_cls_not_mounted", {{"error", mounted.status()}});
    } else if (*mounted) {
      log::Info("net_cls_mounted", {{"path", absl::StrCat(kCgroupRoot, "/net_cls")}});
    }
  }
  if (opts.use_cgroups) {
    absl::StatusOr<std::unique_ptr<CgroupsHandler>> cgroups =
        DetectCgroups(kCgroupRoot, opts.cgroup_hierarchy);
    if (!cgroups.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "starting NodeManager: cgroups are unusable (", cgroups.status().ToString(),
          "); run as root, or set use_cgroups=false to run containers without isolation"));
    }
    nm->cgroups_ = *std::move(cgroups);
    nm->missing_features_ = nm->cgroups_->missing_features();
    if ((opts.container_pids_per_vcore > 0 || opts.container_pids_max > 0) &&
        !nm->cgroups_->HasController("pids")) {
      nm->missing_features_.push_back(
          "container pids limit (container_pids_per_vcore, container_pids_max) not enforced: no "
          "usable pids cgroup controller");
    }
  } else {
    nm->missing_features_.push_back(
        "cgroups disabled by configuration (use_cgroups=false): containers run without "
        "resource isolation");
  }
  if (!opts.container_user_namespaces && !spawn_internal::kUserNamespaceFilterSupported) {
    nm->missing_features_.push_back(
        "containers may create user namespaces (container_user_namespaces=false is not "
        "enforced: this build has no seccomp filter for this architecture)");
  }
  if (shape_network) {
    TrafficControlOptions traffic;
    traffic.interface = opts.network_interface;
    traffic.link_mbps = opts.link_mbps;
    traffic.containers_total_mbps = opts.network_containers_mbps;
    traffic.burst = opts.network_burst;
    traffic.classifier = opts.network_classifier;
    traffic.net_cls_available = nm->cgroups_->HasController("net_cls");
    traffic.cgroup_v2 = nm->cgroups_->version() == "v2";
    absl::StatusOr<std::unique_ptr<TrafficController>> controller =
        TrafficController::Create(std::move(traffic));
    if (!controller.ok()) {
      return absl::Status(controller.status().code(),
                          absl::StrCat("starting NodeManager: ", controller.status().message()));
    }
    nm->traffic_ = *std::move(controller);
    nm->network_isolation_ = nm->traffic_->Describe();
    log::Info("network_isolation", {{"mode", nm->network_isolation_}});
  } else if (opts.capability[kNetworkMbps] > 0) {
    nm->missing_features_.push_back(
        "network bandwidth isolation disabled (no network interface configured): network-mbps "
        "is scheduled but not enforced");
  }
  for (const std::string& feature : nm->missing_features_) {
    log::Warn("missing_feature", {{"feature", feature}});
  }

  // Capability.
  nm->capability_ = opts.capability;
  if (nm->capability_[kMemoryMb] == 0) {
    absl::StatusOr<int64_t> memory_mb = DetectMemoryMb(env);
    if (!memory_mb.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("starting NodeManager: detecting memory: ", memory_mb.status().ToString()));
    }
    nm->capability_[kMemoryMb] = *memory_mb;
  }
  if (nm->capability_[kVcores] == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    nm->capability_[kVcores] = cpus > 0 ? cpus : 1;
  }
  if (nm->traffic_ != nullptr) {
    // What containers may be given is the containers' share of the link, not the link.
    nm->capability_[kNetworkMbps] = nm->traffic_->containers_total_mbps();
  }
  // Devices (issue 32): discovered, registered, isolated; gpu-milli from the healthy GPUs.
  if (absl::Status s = nm->StartDevices(); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("starting NodeManager: ", s.message()));
  }

  if (absl::Status s = env->CreateDirs(absl::StrCat(opts.work_root, "/logs")); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("starting NodeManager: creating work_root: ", s.ToString()));
  }
  // Users reach their own directories through these but cannot list them (containers'
  // directories are theirs, mode 0700).
  for (const std::string& dir : {opts.work_root, absl::StrCat(opts.work_root, "/logs")}) {
    if (absl::Status s = env->SetOwner(dir, geteuid(), getegid(), 0711); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("starting NodeManager: ", s.ToString()));
  }
  nm->executor_ = std::make_unique<ContainerExecutor>(nm->cgroups_.get(), env);

  // The durable record of containers (docs/nm-recovery.md); read by RecoverContainers below.
  {
    const std::string state_dir = absl::StrCat(opts.work_root, "/", internal::kStateDir);
    if (absl::Status s = env->CreateDirs(state_dir); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("starting NodeManager: ", s.ToString()));
    if (absl::Status s = env->SetOwner(state_dir, geteuid(), getegid(), 0700); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("starting NodeManager: ", s.ToString()));
    const std::string db = absl::StrCat(opts.work_root, "/", internal::kStateDbFile);
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(db);
    if (!store.ok() && !opts.recover && !absl::IsFailedPrecondition(store.status())) {
      // Not recovering: an unreadable record is replaced (a locked one is another NM's).
      log::Warn("nm_state_replaced", {{"path", db}, {"error", store.status()}});
      for (const std::string& path : {db, db + "-wal", db + "-shm", db + "-journal"}) {
        // A missing file (no WAL, no journal) is what is wanted; anything else would make
        // the Open below fail and say why.
        if (std::remove(path.c_str()) != 0 && errno != ENOENT)
          log::Warn("nm_state_file_not_removed", {{"path", path}, {"error", ErrnoMessage(errno, "remove")}});
      }
      store = NmStateStore::Open(db);
    }
    if (!store.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "starting NodeManager: ", store.status().ToString(),
          opts.recover ? " (recover=false replaces it, killing what it recorded)" : ""));
    }
    nm->state_ = *std::move(store);
  }

  // ContainerService, and the AMRMProxy's AmService on the same port.
  nm->service_ = std::make_unique<Service>(nm.get());
  if (opts.amrmproxy.has_value()) {
    // Its token key and attempts live in the NM's state store (AMRMProxy recovery).
    amrmproxy::AmrmProxyOptions proxy_options = *opts.amrmproxy;
    proxy_options.state_store = nm->state_.get();
    absl::StatusOr<std::unique_ptr<amrmproxy::AmrmProxyService>> proxy =
        amrmproxy::AmrmProxyService::Create(
            std::move(proxy_options), opts.tls.has_value()
                                          ? security::TlsChannelCredentials(*opts.tls)
                                          : grpc::InsecureChannelCredentials());
    if (!proxy.ok()) {
      return absl::Status(proxy.status().code(),
                          absl::StrCat("starting NodeManager: ", proxy.status().message()));
    }
    nm->amrm_proxy_ = *std::move(proxy);
  }
  // The AMRMProxy's AmService shares the port when enabled (a null service is skipped).
  absl::StatusOr<security::StartedGrpcServer> started = security::StartGrpcServer(
      "starting NodeManager: ContainerService", opts.bind_host, opts.port, opts.tls,
      {nm->service_.get(), nm->amrm_proxy_ != nullptr ? nm->amrm_proxy_->service() : nullptr});
  if (!started.ok()) return started.status();
  nm->server_ = std::move(started->server);
  const int selected_port = started->port;
  nm->port_ = selected_port;
  const std::string host = ReachableHost(opts.bind_host);
  nm->node_id_ = HostPort(host, selected_port);
  nm->log_aggregator_ =
      std::make_unique<LogAggregator>(opts.work_root, opts.log_aggregation_dir, nm->node_id_);

  if (opts.tls.has_value()) {
    // The RM believes this node's heartbeats only under a certificate naming it.
    absl::StatusOr<security::CertificateInfo> cert =
        security::DescribeCertificate(opts.tls->cert_pem);
    if (!cert.ok()) return cert.status();
    const security::DaemonIdentity want{security::DaemonRole::kNodeManager, nm->node_id_};
    if (cert->identity != want)
      return absl::FailedPreconditionError(absl::StrCat(
          "starting NodeManager: its certificate names ",
          cert->identity.has_value() ? cert->identity->ToString() : cert->subject,
          " but this node is ", want.ToString(), " (weft certs issue --role nm --name ",
          nm->node_id_, ")"));
    // The RM and AMs dial this node at its node id: a certificate not valid for its host would
    // let it register and then fail every container launch, so it is refused here.
    // (InvalidArgument, not FailedPrecondition: that one gets `weft nm`'s cgroups hint.)
    if (!security::CertificateNamesHost(*cert, host)) {
      std::vector<std::string> names = cert->dns_names;
      names.insert(names.end(), cert->ip_addresses.begin(), cert->ip_addresses.end());
      return absl::InvalidArgumentError(absl::StrCat(
          "starting NodeManager: its certificate is not valid for host ", host,
          ", where the RM and AMs reach node ", nm->node_id_, " (it names ",
          absl::StrJoin(names, ", "), "; weft certs issue --role nm --name ", nm->node_id_,
          " issues one that is)"));
    }
    nm->ca_file_ = absl::StrCat(opts.work_root, "/ca.pem");
    if (absl::Status s = env->WriteFile(nm->ca_file_, opts.tls->ca_pem); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("starting NodeManager: ", s.ToString()));
    if (absl::Status s = env->SetOwner(nm->ca_file_, geteuid(), getegid(), 0644); !s.ok())
      return absl::FailedPreconditionError(absl::StrCat("starting NodeManager: ", s.ToString()));
  }
  nm->tracker_credentials_ = opts.tls.has_value() ? security::TlsChannelCredentials(*opts.tls)
                                                  : grpc::InsecureChannelCredentials();
  nm->rm_failover_.emplace(*std::move(rm_failover));
  nm->ConnectTracker();
  // Last, as nothing may fail after it: from here on the NM owns what an earlier one left.
  if (absl::Status s = nm->RecoverContainers(); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("starting NodeManager: recovering containers: ", s.ToString(),
                     " (recover=false starts afresh, killing what it recorded)"));
  }
  // The AMRMProxy's attempts whose AMs were re-attached above are served again (YARN-6127);
  // the others end (their UAMs are kept for the app's next attempt or killed with the app).
  if (nm->amrm_proxy_ != nullptr) {
    NodeManager* self = nm.get();
    absl::Status s = nm->amrm_proxy_->Recover([self](const std::string& container_id) {
      auto it = self->containers_.find(container_id);
      return it != self->containers_.end() && it->second.running;
    });
    if (!s.ok()) {
      log::Error("amrmproxy_recovery_failed", {{"node", nm->node_id_}, {"error", s}});
    }
  }
  // Before any cleanup can delete logs an earlier NM had begun to aggregate.
  if (absl::Status s = nm->log_aggregator_->ResumePending(); !s.ok())
    log::Error("log_aggregation_failed", {{"node", nm->node_id_}, {"error", s}});
  if (nm->amrm_proxy_ != nullptr) nm->amrm_proxy_->Start(nm->node_id_);
  nm->started_ = true;
  nm->serving_.store(true, std::memory_order_release);
  NodeManager* raw = nm.get();
  // The reap wakes when a container ends (ReapTick's timer stays, for deadlines and as the
  // fallback). Posted from the watcher's thread; the watcher is gone before shutdown ends.
  if (absl::StatusOr<std::unique_ptr<ExitWatcher>> watcher =
          ExitWatcher::Start([raw] { raw->loop_->Post([raw] { raw->ReapTick(); }); });
      watcher.ok()) {
    nm->exit_watcher_ = *std::move(watcher);
  } else {
    log::Warn("exit_watcher_unavailable",
              {{"error", watcher.status()}, {"fallback", "reaping every 100 ms"}});
  }
  loop->Post([raw] {
    for (const auto& [id, record] : raw->containers_)
      if (record.running) raw->WatchExit(id);
    raw->SendRegister();
    raw->ReapTick();
  });
  return nm;
}

NodeManager::~NodeManager() {
  if (started_) {
    Shutdown();
    return;
  }
  // Start failed: nothing ran on the loop; release what was set up.
  JoinDeviceChecker();
  exit_watcher_.reset();
  server_.reset();
  amrm_proxy_.reset();
  executor_.reset();
  traffic_.reset();  // tears the tree down
  if (cgroups_ != nullptr)
    log::WarnIfError(cgroups_->RemoveHierarchy(), "cgroup_hierarchy_not_removed",
                     {{"node", node_id_}});
}

void NodeManager::Shutdown() {
  if (shutdown_called_.exchange(true)) {
    shutdown_done_.WaitForNotification();
    return;
  }
  serving_.store(false, std::memory_order_release);
  // Waits for the handlers' reactors, which the (still running) loop finishes.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  // Its workers finished every AmService call the server had.
  if (amrm_proxy_ != nullptr) amrm_proxy_->Shutdown();
  {
    absl::MutexLock lock(&rm_mu_);
    rm_closed_ = true;
    for (grpc::ClientContext* context : rm_calls_) context->TryCancel();
    auto no_calls = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(rm_mu_) { return rm_calls_.empty(); };
    rm_mu_.Await(absl::Condition(&no_calls));
  }
  // Every task that refers to this object has now been posted before this one.
  loop_->Post([this] { BeginShutdownOnLoop(); });
  shutdown_done_.WaitForNotification();
}

void NodeManager::BeginShutdownOnLoop() {
  shutting_down_ = true;
  if (rm_timer_.has_value()) loop_->Cancel(*rm_timer_);
  rm_timer_.reset();
  StopAllContainers(v1::CONTAINER_EXIT_ABORTED, "Container stopped: the NodeManager shut down");
  bool any_running = std::any_of(containers_.begin(), containers_.end(),
                                 [](const auto& entry) { return entry.second.running; });
  if (!any_running) FinishShutdownOnLoop();
  // Otherwise ReapTick finishes once the last container has been reaped.
}

void NodeManager::FinishShutdownOnLoop() {
  // No wake-up is posted after this; those posted before run before the Notify below. A
  // device discovery still running posts its (ignored) result before it is joined.
  JoinDeviceChecker();
  exit_watcher_.reset();
  if (reap_timer_.has_value()) loop_->Cancel(*reap_timer_);
  reap_timer_.reset();
  for (const auto& [app, timer] : log_deletions_) loop_->Cancel(timer);
  log_deletions_.clear();
  executor_.reset();
  if (traffic_ != nullptr) {
    if (absl::Status s = traffic_->Teardown(); !s.ok()) {
      log::Warn("htb_removal_failed", {{"node", node_id_}, {"error", s}});
    }
    traffic_.reset();
  }
  if (cgroups_ != nullptr) {
    if (absl::Status s = cgroups_->RemoveHierarchy(); !s.ok()) {
      log::Warn("cgroup_removal_failed", {{"node", node_id_}, {"error", s}});
    }
  }
  state_.reset();  // releases the work root to the next NM
  // Posted: the loop runs tasks in order, so every wake-up the exit watcher posted (a ReapTick,
  // a no-op now that the executor is gone) runs before Shutdown() returns.
  loop_->Post([this] { shutdown_done_.Notify(); });
}


}  // namespace weft::nm
