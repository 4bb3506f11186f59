// Copyright Weft authors.
#include "nm/node_manager.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
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
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "security/tokens.h"

namespace weft::nm {
namespace {

constexpr int64_t kReapIntervalMs = 100;
constexpr int64_t kRegisterRetryMs = 1000;
constexpr int64_t kDefaultHeartbeatIntervalMs = 1000;
constexpr int64_t kRmCallTimeoutMs = 10'000;
constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

// One call to the RM and what it needs to stay alive until its callback has run.
template <typename Request, typename Response>
struct RmCall {
  grpc::ClientContext context;
  Request request;
  Response response;
};

// The limits a container token grants, from its formatted resource: "memory-mb=1024,vcores=1",
// optionally in ResourceTypeRegistry::Format's "<memory-mb=1024, vcores=1>" form. network-mbps
// goes to `*network_mbps` (0 when absent); other types are accepted and not enforced here.
absl::StatusOr<CgroupLimits> LimitsFromTokenResource(absl::string_view text,
                                                     int64_t* network_mbps) {
  absl::string_view body = absl::StripAsciiWhitespace(text);
  if (absl::ConsumePrefix(&body, "<") && !absl::ConsumeSuffix(&body, ">")) {
    return absl::InvalidArgumentError(absl::StrCat("resource '", text, "': missing '>'"));
  }
  int64_t memory_mb = -1;
  int64_t vcores = -1;
  int64_t network = -1;
  for (absl::string_view item : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
    item = absl::StripAsciiWhitespace(item);
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(item, '=');
    int64_t value = 0;
    if (!absl::StrContains(item, '=') ||
        !absl::SimpleAtoi(absl::StripAsciiWhitespace(kv.second), &value) || value < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("resource '", text, "': bad item '", item, "'"));
    }
    absl::string_view name = absl::StripAsciiWhitespace(kv.first);
    int64_t* slot = name == "memory-mb"      ? &memory_mb
                    : name == "vcores"       ? &vcores
                    : name == "network-mbps" ? &network
                                             : nullptr;
    if (slot == nullptr) continue;
    if (*slot >= 0) {
      return absl::InvalidArgumentError(absl::StrCat("resource '", text, "': repeated ", name));
    }
    *slot = value;
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

void ToProto(const Resource& r, v1::Resource* out) {
  auto& values = *out->mutable_values();
  values["memory-mb"] = r[kMemoryMb];
  values["vcores"] = r[kVcores];
  if (r[kNetworkMbps] != 0) values["network-mbps"] = r[kNetworkMbps];
  if (r[kDiskMbps] != 0) values["disk-mbps"] = r[kDiskMbps];
}

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

bool IsWildcardHost(absl::string_view host) {
  return host == "0.0.0.0" || host == "::" || host == "[::]";
}

std::string HostPort(absl::string_view host, int port) {
  if (absl::StrContains(host, ':') && !absl::StartsWith(host, "[")) {
    return absl::StrCat("[", host, "]:", port);
  }
  return absl::StrCat(host, ":", port);
}

v1::ContainerStatus CompletedStatus(const std::string& id, int exit_status,
                                    const std::string& diagnostics) {
  v1::ContainerStatus status;
  status.set_container_id(id);
  status.set_state(v1::CONTAINER_COMPLETE);
  status.set_exit_status(exit_status);
  status.set_diagnostics(diagnostics);
  return status;
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

absl::StatusOr<std::unique_ptr<NodeManager>> NodeManager::Start(NodeManagerOptions options,
                                                                EventLoop* loop) {
  if (loop == nullptr) return absl::InvalidArgumentError("starting NodeManager: no event loop");
  if (options.rm_tracker_address.empty()) {
    return absl::InvalidArgumentError("starting NodeManager: rm_tracker_address is empty");
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
      nm->Log(absl::StrCat("net_cls not mounted: ", mounted.status().ToString()));
    } else if (*mounted) {
      nm->Log(absl::StrCat("mounted the net_cls controller at ", kCgroupRoot, "/net_cls"));
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
  } else {
    nm->missing_features_.push_back(
        "cgroups disabled by configuration (use_cgroups=false): containers run without "
        "resource isolation");
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
    nm->Log(absl::StrCat("network bandwidth isolation: ", nm->network_isolation_));
  } else if (opts.capability[kNetworkMbps] > 0) {
    nm->missing_features_.push_back(
        "network bandwidth isolation disabled (no network interface configured): network-mbps "
        "is scheduled but not enforced");
  }
  for (const std::string& feature : nm->missing_features_) {
    nm->Log(absl::StrCat("missing feature: ", feature));
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

  if (absl::Status s = env->CreateDirs(absl::StrCat(opts.work_root, "/logs")); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("starting NodeManager: creating work_root: ", s.ToString()));
  }
  nm->executor_ = std::make_unique<ContainerExecutor>(nm->cgroups_.get(), env);

  // ContainerService.
  nm->service_ = std::make_unique<Service>(nm.get());
  grpc::ServerBuilder builder;
  int selected_port = 0;
  const std::string address = HostPort(opts.bind_host, opts.port);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &selected_port);
  builder.RegisterService(nm->service_.get());
  nm->server_ = builder.BuildAndStart();
  if (nm->server_ == nullptr || selected_port == 0) {
    return absl::UnavailableError(
        absl::StrCat("starting NodeManager: cannot serve ContainerService on ", address));
  }
  nm->port_ = selected_port;
  std::string host = opts.bind_host;
  if (IsWildcardHost(host)) {
    char name[256] = {};
    host = gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
  }
  nm->node_id_ = HostPort(host, selected_port);

  nm->tracker_ = v1::TrackerService::NewStub(
      grpc::CreateChannel(opts.rm_tracker_address, grpc::InsecureChannelCredentials()));
  nm->started_ = true;
  nm->serving_.store(true, std::memory_order_release);
  NodeManager* raw = nm.get();
  loop->Post([raw] {
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
  server_.reset();
  executor_.reset();
  traffic_.reset();  // tears the tree down
  if (cgroups_ != nullptr) (void)cgroups_->RemoveHierarchy();
}

void NodeManager::Shutdown() {
  if (shutdown_called_.exchange(true)) {
    shutdown_done_.WaitForNotification();
    return;
  }
  serving_.store(false, std::memory_order_release);
  // Waits for the handlers' reactors, which the (still running) loop finishes.
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
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
  if (reap_timer_.has_value()) loop_->Cancel(*reap_timer_);
  reap_timer_.reset();
  executor_.reset();
  if (traffic_ != nullptr) {
    if (absl::Status s = traffic_->Teardown(); !s.ok()) {
      Log(absl::StrCat("removing the HTB tree and rules: ", s.ToString()));
    }
    traffic_.reset();
  }
  if (cgroups_ != nullptr) {
    if (absl::Status s = cgroups_->RemoveHierarchy(); !s.ok()) {
      Log(absl::StrCat("removing cgroup hierarchy: ", s.ToString()));
    }
  }
  shutdown_done_.Notify();
}

void NodeManager::Log(absl::string_view message) const {
  std::string line =
      absl::StrCat("weft nm ", node_id_.empty() ? "(starting)" : node_id_, ": ", message, "\n");
  std::fwrite(line.data(), 1, line.size(), stderr);
}

// ---- ContainerService.

void NodeManager::DoStartContainers(const v1::StartContainersRequest& request,
                                    v1::StartContainersResponse* response) {
  for (const v1::StartContainerRequest& one : request.requests()) {
    std::string container_id;
    absl::Status status = StartOne(one, &container_id);
    CountLaunch(status.ok());
    if (status.ok()) {
      response->add_succeeded(container_id);
    } else {
      v1::ContainerFailure* failure = response->add_failed();
      failure->set_container_id(container_id);
      failure->set_message(status.ToString());
    }
  }
}

absl::Status NodeManager::StartOne(const v1::StartContainerRequest& request,
                                   std::string* container_id) {
  if (shutting_down_) return absl::UnavailableError("the NodeManager is shutting down");
  if (rm_shutdown_) {
    return absl::FailedPreconditionError("this node was shut down by the ResourceManager");
  }
  if (!request.has_container_token() || request.container_token().identifier().empty()) {
    return absl::InvalidArgumentError("missing container token");
  }
  // Only to name the container in a failure; nothing is trusted before VerifyStart.
  if (absl::StatusOr<security::ContainerTokenData> unverified =
          security::DecodeContainerToken(request.container_token().identifier());
      unverified.ok()) {
    *container_id = unverified->container_id;
  }
  const auto& command = request.launch_context().command();
  if (command.empty() || absl::StripAsciiWhitespace(command[0]).empty()) {
    return absl::InvalidArgumentError("empty command in the launch context");
  }

  absl::StatusOr<security::ContainerTokenData> token = verifier_.VerifyStart(
      security::Token{request.container_token().identifier(), request.container_token().password()},
      node_id_, loop_->NowMs());
  if (!token.ok()) return token.status();
  *container_id = token->container_id;
  const std::string& id = token->container_id;
  if (absl::Status s = ValidateContainerId(id); !s.ok()) return s;
  if (token->app_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, " names no application"));
  }
  if (absl::Status s = ValidateContainerId(token->app_id); !s.ok() || token->app_id == "logs") {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": bad application id '", token->app_id, "'"));
  }
  if (containers_.contains(id)) {
    return absl::AlreadyExistsError(absl::StrCat("container ", id, " was already started here"));
  }
  if (finished_apps_.contains(token->app_id) || cleaning_apps_.contains(token->app_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("application ", token->app_id, " has finished on this node"));
  }
  int64_t network_mbps = 0;
  absl::StatusOr<CgroupLimits> limits = LimitsFromTokenResource(token->resource, &network_mbps);
  if (!limits.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": ", limits.status().message()));
  }

  LaunchSpec spec;
  spec.container_id = id;
  if (command.size() == 1) {
    spec.argv = ShellCommand(command[0]);
  } else {
    spec.argv.assign(command.begin(), command.end());
  }
  for (const auto& [name, value] : request.launch_context().environment()) {
    spec.env[name] = value;
  }
  spec.work_dir = absl::StrCat(options_.work_root, "/", token->app_id, "/", id);
  spec.log_dir = absl::StrCat(options_.work_root, "/logs/", id);
  spec.limits = *limits;
  spec.user = token->user;
  if (traffic_ != nullptr) {
    // Shaped from its first packet: the class and rule exist before the process does. A
    // failure fails the start rather than running the container unshaped.
    std::string cgroup2_path;
    if (cgroups_->version() == "v2") {
      cgroup2_path = cgroups_->Path("memory", id).substr(std::strlen(kCgroupRoot));
    }
    absl::StatusOr<uint32_t> classid = traffic_->AddContainer(id, network_mbps, cgroup2_path);
    if (!classid.ok()) return classid.status();
    spec.limits.net_cls_classid = *classid;
  }
  absl::StatusOr<pid_t> pid = executor_->Launch(spec);
  if (!pid.ok()) {
    if (traffic_ != nullptr) (void)traffic_->RemoveContainer(id);
    return pid.status();
  }
  ContainerRecord record;
  record.app_id = token->app_id;
  containers_.emplace(id, std::move(record));
  return absl::OkStatus();
}

void NodeManager::DoStopContainers(const v1::StopContainersRequest& request,
                                   v1::StopContainersResponse* response) {
  for (const std::string& id : request.container_ids()) {
    auto add_failure = [&](absl::Status status) {
      v1::ContainerFailure* failure = response->add_failed();
      failure->set_container_id(id);
      failure->set_message(status.ToString());
    };
    if (id.empty()) {
      add_failure(absl::InvalidArgumentError("empty container id"));
      continue;
    }
    auto it = containers_.find(id);
    if (it == containers_.end()) {
      add_failure(absl::NotFoundError(absl::StrCat("container ", id, " is not known here")));
      continue;
    }
    if (it->second.running) {
      StopContainer(id, v1::CONTAINER_EXIT_KILLED_BY_AM,
                    "Container stopped by a StopContainers request");
    }
    response->add_succeeded(id);  // stopping an already completed container is a no-op
  }
}

void NodeManager::DoGetContainerStatuses(const v1::GetContainerStatusesRequest& request,
                                         v1::GetContainerStatusesResponse* response) {
  for (const std::string& id : request.container_ids()) {
    auto it = containers_.find(id);
    if (it != containers_.end()) {
      *response->add_statuses() = StatusOf(id, it->second);
      continue;
    }
    if (auto unacked = unacked_completed_.find(id); unacked != unacked_completed_.end()) {
      *response->add_statuses() = unacked->second;
      continue;
    }
    v1::ContainerFailure* failure = response->add_failed();
    failure->set_container_id(id);
    failure->set_message(
        (id.empty() ? absl::InvalidArgumentError("empty container id")
                    : absl::NotFoundError(absl::StrCat("container ", id, " is not known here")))
            .ToString());
  }
}

// ---- Containers.

v1::ContainerStatus NodeManager::StatusOf(const std::string& container_id,
                                          const ContainerRecord& record) {
  if (!record.running) {
    return CompletedStatus(container_id, record.exit_status, record.diagnostics);
  }
  v1::ContainerStatus status;
  status.set_container_id(container_id);
  status.set_state(v1::CONTAINER_RUNNING);
  status.set_exit_status(v1::CONTAINER_EXIT_INVALID);
  if (cgroups_ != nullptr) {
    absl::StatusOr<CgroupUsage> usage = cgroups_->Usage(container_id);
    if (usage.ok()) {
      if (usage->rss_bytes.has_value()) {
        status.mutable_usage()->set_memory_rss_bytes(*usage->rss_bytes);
      }
      if (usage->cpu_ns.has_value()) {
        status.mutable_usage()->set_cpu_time_ms(*usage->cpu_ns / 1'000'000);
      }
    }
  }
  if (auto net = net_stats_.find(container_id); net != net_stats_.end()) {
    status.mutable_usage()->set_network_tx_bytes(net->second.tx_bytes);
    status.mutable_usage()->set_network_tx_rate_mbps(
        static_cast<int64_t>(std::llround(net->second.tx_rate_mbps)));
  }
  return status;
}

void NodeManager::RefreshNetworkStats() {
  if (traffic_ == nullptr) return;
  absl::StatusOr<std::map<std::string, ContainerNetStats>> stats =
      traffic_->ReadStats(OsEnv::Default()->NowMs());
  if (!stats.ok()) {
    Log(absl::StrCat("reading per-container network statistics: ", stats.status().ToString()));
    return;
  }
  net_stats_ = *std::move(stats);
  if (options_.metrics == nullptr) return;
  for (const auto& [id, net] : net_stats_) {
    options_.metrics
        ->GetCounter("weft_nm_container_network_transmit_bytes_total",
                     "Bytes a running container sent (its HTB class counter).", {{"container", id}})
        ->IncrementTo(static_cast<double>(net.tx_bytes));
    options_.metrics
        ->GetGauge("weft_nm_container_network_transmit_rate_mbit",
                   "A running container's send rate between the last two readings, Mbit/s.",
                   {{"container", id}})
        ->Set(net.tx_rate_mbps);
  }
}

void NodeManager::CountLaunch(bool ok) {
  if (options_.metrics == nullptr) return;
  if (ok) {
    options_.metrics->GetCounter("weft_nm_container_launches_total", "Containers started.")
        ->Increment();
  } else {
    options_.metrics
        ->GetCounter("weft_nm_container_launch_failures_total",
                     "Container starts refused or failed (bad token, replay, launch error).")
        ->Increment();
  }
  UpdateRunningGauge();
}

void NodeManager::CountExit(const std::string& container_id, int exit_status) {
  if (options_.metrics == nullptr) return;
  const char* outcome = exit_status == 0 ? "succeeded" : exit_status > 0 ? "failed" : "killed";
  options_.metrics
      ->GetCounter("weft_nm_containers_completed_total",
                   "Containers that ended: succeeded (exit 0), failed (non-zero exit) or killed "
                   "(stopped, over their memory limit, or their app ended).",
                   {{"outcome", outcome}})
      ->Increment();
  options_.metrics->Remove("weft_nm_container_network_transmit_bytes_total",
                           {{"container", container_id}});
  options_.metrics->Remove("weft_nm_container_network_transmit_rate_mbit",
                           {{"container", container_id}});
  UpdateRunningGauge();
}

void NodeManager::CountHeartbeat(bool ok) {
  if (options_.metrics == nullptr) return;
  options_.metrics
      ->GetCounter("weft_nm_heartbeats_total", "Heartbeats to the RM by result.",
                   {{"result", ok ? "ok" : "error"}})
      ->Increment();
}

void NodeManager::UpdateRunningGauge() {
  int64_t running = 0;
  for (const auto& [id, record] : containers_) running += record.running ? 1 : 0;
  options_.metrics->GetGauge("weft_nm_containers_running", "Containers running on this node.")
      ->Set(static_cast<double>(running));
}

void NodeManager::StopContainer(const std::string& container_id, int exit_status,
                                absl::string_view reason) {
  auto it = containers_.find(container_id);
  if (it == containers_.end() || !it->second.running) return;
  if (!it->second.stop_exit_status.has_value()) {
    it->second.stop_exit_status = exit_status;
    it->second.stop_reason = std::string(reason);
  }
  executor_->Stop(container_id, options_.stop_grace_ms);
  // Reap soon enough to send the SIGKILL on time when the grace is shorter than a tick.
  if (options_.stop_grace_ms < kReapIntervalMs) {
    if (reap_timer_.has_value()) loop_->Cancel(*reap_timer_);
    reap_timer_ = loop_->Schedule(options_.stop_grace_ms, [this] { ReapTick(); });
  }
}

void NodeManager::StopAllContainers(int exit_status, absl::string_view reason) {
  std::vector<std::string> running;
  for (const auto& [id, record] : containers_) {
    if (record.running) running.push_back(id);
  }
  for (const std::string& id : running) StopContainer(id, exit_status, reason);
}

void NodeManager::ReapTick() {
  reap_timer_.reset();
  if (executor_ == nullptr) return;
  for (const ContainerExit& exit : executor_->Reap()) OnContainerExit(exit);
  if (shutting_down_ && std::none_of(containers_.begin(), containers_.end(),
                                     [](const auto& e) { return e.second.running; })) {
    FinishShutdownOnLoop();
    return;
  }
  int64_t delay_ms = kReapIntervalMs;
  if (int64_t deadline = executor_->NextDeadlineMs(); deadline >= 0) {
    delay_ms = std::clamp<int64_t>(deadline - OsEnv::Default()->NowMs(), 0, kReapIntervalMs);
  }
  reap_timer_ = loop_->Schedule(delay_ms, [this] { ReapTick(); });
}

void NodeManager::OnContainerExit(const ContainerExit& exit) {
  auto it = containers_.find(exit.container_id);
  if (it == containers_.end()) {
    Log(absl::StrCat("reaped unknown container ", exit.container_id));
    return;
  }
  ContainerRecord& record = it->second;
  record.running = false;
  if (record.stop_exit_status.has_value()) {
    record.exit_status = *record.stop_exit_status;
    record.diagnostics = record.stop_reason;
    if (!exit.diagnostics.empty()) absl::StrAppend(&record.diagnostics, "; ", exit.diagnostics);
  } else if (exit.oom_killed) {
    record.exit_status = v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM;
    record.diagnostics = exit.diagnostics;
  } else {
    record.exit_status = exit.exit_code;
    record.diagnostics = exit.diagnostics;
  }
  unacked_completed_[exit.container_id] =
      CompletedStatus(exit.container_id, record.exit_status, record.diagnostics);
  CountExit(exit.container_id, record.exit_status);
  if (traffic_ != nullptr) {
    if (absl::Status s = traffic_->RemoveContainer(exit.container_id); !s.ok()) {
      Log(s.ToString());
    }
  }
  net_stats_.erase(exit.container_id);
  if (cleaning_apps_.contains(record.app_id)) MaybeFinishAppCleanup(record.app_id);
}

void NodeManager::CleanupApplication(const std::string& app_id) {
  if (app_id.empty() || finished_apps_.contains(app_id)) return;
  cleaning_apps_.insert(app_id);
  for (const auto& [id, record] : containers_) {
    if (record.app_id == app_id && record.running) {
      StopContainer(id, v1::CONTAINER_EXIT_KILLED_AFTER_APP_COMPLETION,
                    "Container killed: its application finished");
    }
  }
  MaybeFinishAppCleanup(app_id);
}

void NodeManager::MaybeFinishAppCleanup(std::string app_id) {
  for (const auto& [id, record] : containers_) {
    if (record.app_id == app_id && record.running) return;
  }
  for (auto it = containers_.begin(); it != containers_.end();) {
    if (it->second.app_id != app_id) {
      ++it;
      continue;
    }
    if (absl::Status s = executor_->Cleanup(it->first); !s.ok()) {
      Log(absl::StrCat("cleaning up container ", it->first, ": ", s.ToString()));
    }
    it = containers_.erase(it);
  }
  // Only a validated id (ValidateContainerId, not "logs") ever names an app directory.
  if (ValidateContainerId(app_id).ok() && app_id != "logs") {
    const std::string dir = absl::StrCat(options_.work_root, "/", app_id);
    if (absl::Status s = OsEnv::Default()->RemoveTree(dir); !s.ok()) {
      Log(absl::StrCat("removing work dir of application ", app_id, ": ", s.ToString()));
    }
  }
  cleaning_apps_.erase(app_id);
  finished_apps_.insert(app_id);
}

// ---- RM protocol.

bool NodeManager::BeginRmCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&rm_mu_);
  if (rm_closed_) return false;
  rm_calls_.insert(context);
  return true;
}

bool NodeManager::RmCallsClosed() {
  absl::MutexLock lock(&rm_mu_);
  return rm_closed_;
}

void NodeManager::EndRmCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&rm_mu_);
  rm_calls_.erase(context);
}

void NodeManager::ScheduleRm(int64_t delay_ms, bool register_again) {
  if (rm_timer_.has_value()) loop_->Cancel(*rm_timer_);
  rm_timer_ = loop_->Schedule(delay_ms, [this, register_again] {
    rm_timer_.reset();
    if (rm_call_in_flight_ || shutting_down_ || rm_shutdown_) return;
    if (register_again) {
      SendRegister();
    } else {
      SendHeartbeat();
    }
  });
}

void NodeManager::UpdateKeys(bool has_current, const v1::MasterKey& current, bool has_next,
                             const v1::MasterKey& next) {
  if (!has_current && !has_next) return;
  auto convert = [](const v1::MasterKey& key) {
    security::MasterKey out;
    out.id = key.key_id();
    out.secret = key.secret();
    out.expires_ms = key.expires_ms();
    return out;
  };
  security::MasterKey cur = convert(has_current ? current : next);
  security::MasterKey nxt = convert(has_next ? next : current);
  verifier_.UpdateKeys(cur, nxt);
  last_key_id_ = cur.id;
}

void NodeManager::SendRegister() {
  using Call = RmCall<v1::RegisterNodeManagerRequest, v1::RegisterNodeManagerResponse>;
  auto call = std::make_shared<Call>();
  v1::RegisterNodeManagerRequest& request = call->request;
  request.set_node_id(node_id_);
  request.set_rack(options_.rack);
  ToProto(capability_, request.mutable_capability());
  for (const auto& [id, record] : containers_) {
    if (record.running) *request.add_running_containers() = StatusOf(id, record);
  }
  for (const std::string& feature : missing_features_) request.add_missing_features(feature);
  request.set_network_isolation(network_isolation_);
  request.set_http_address(options_.http_address);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::milliseconds(kRmCallTimeoutMs));
  if (!BeginRmCall(&call->context)) return;
  rm_call_in_flight_ = true;
  tracker_->async()->RegisterNodeManager(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        loop_->Post([this, call, status] { OnRegisterReply(status, call->response); });
        EndRmCall(&call->context);
      });
}

void NodeManager::OnRegisterReply(const grpc::Status& status,
                                  const v1::RegisterNodeManagerResponse& reply) {
  rm_call_in_flight_ = false;
  if (shutting_down_) return;
  if (!status.ok()) {
    if (RmCallsClosed()) return;  // cancelled by Shutdown()
    Log(absl::StrCat("registering with the RM at ", options_.rm_tracker_address, " failed: ",
                     status.error_message(), "; retrying in ", kRegisterRetryMs, " ms"));
    ScheduleRm(kRegisterRetryMs, /*register_again=*/true);
    return;
  }
  if (reply.action() == v1::NODE_ACTION_SHUTDOWN) {
    Log(absl::StrCat("the RM refused registration and shut this node down: ", reply.diagnostics()));
    rm_shutdown_ = true;
    StopAllContainers(v1::CONTAINER_EXIT_KILLED_BY_RM,
                      "Container killed: the ResourceManager shut this node down");
    return;
  }
  if (reply.action() == v1::NODE_ACTION_RESYNC) {
    Log(absl::StrCat("the RM asked to register again: ", reply.diagnostics()));
    ScheduleRm(kRegisterRetryMs, /*register_again=*/true);
    return;
  }
  UpdateKeys(reply.has_container_key(), reply.container_key(), reply.has_next_container_key(),
             reply.next_container_key());
  rm_epoch_ = reply.rm_epoch();
  Log(absl::StrCat("registered with the RM at ", options_.rm_tracker_address, " (epoch ", rm_epoch_,
                   ")"));
  last_response_id_ = 0;
  heartbeat_interval_ms_ = reply.heartbeat_interval_ms() > 0 ? reply.heartbeat_interval_ms()
                                                             : kDefaultHeartbeatIntervalMs;
  ScheduleRm(0, /*register_again=*/false);
}

void NodeManager::SendHeartbeat() {
  using Call = RmCall<v1::NodeHeartbeatRequest, v1::NodeHeartbeatResponse>;
  auto call = std::make_shared<Call>();
  v1::NodeHeartbeatRequest& request = call->request;
  request.set_node_id(node_id_);
  request.set_response_id(last_response_id_);
  v1::ResourceUsage* node_usage = request.mutable_node_usage();
  RefreshNetworkStats();
  for (const auto& [id, record] : containers_) {
    if (!record.running) continue;
    v1::ContainerStatus* status = request.add_container_statuses();
    *status = StatusOf(id, record);
    node_usage->set_memory_rss_bytes(node_usage->memory_rss_bytes() +
                                     status->usage().memory_rss_bytes());
    node_usage->set_cpu_time_ms(node_usage->cpu_time_ms() + status->usage().cpu_time_ms());
    node_usage->set_network_tx_bytes(node_usage->network_tx_bytes() +
                                     status->usage().network_tx_bytes());
    node_usage->set_network_tx_rate_mbps(node_usage->network_tx_rate_mbps() +
                                         status->usage().network_tx_rate_mbps());
  }
  for (const auto& [id, status] : unacked_completed_) *request.add_container_statuses() = status;
  request.mutable_health()->set_healthy(true);
  request.set_last_known_container_key_id(last_key_id_);
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::milliseconds(kRmCallTimeoutMs));
  if (!BeginRmCall(&call->context)) return;
  rm_call_in_flight_ = true;
  tracker_->async()->NodeHeartbeat(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        loop_->Post(
            [this, call, status] { OnHeartbeatReply(status, call->request, call->response); });
        EndRmCall(&call->context);
      });
}

void NodeManager::OnHeartbeatReply(const grpc::Status& status,
                                   const v1::NodeHeartbeatRequest& request,
                                   const v1::NodeHeartbeatResponse& reply) {
  rm_call_in_flight_ = false;
  if (shutting_down_ || rm_shutdown_) return;
  CountHeartbeat(status.ok());
  if (!status.ok()) {
    // Nothing is lost: unacknowledged completed statuses go out again with the next one.
    if (RmCallsClosed()) return;  // cancelled by Shutdown()
    Log(absl::StrCat("heartbeat to the RM at ", options_.rm_tracker_address, " failed: ",
                     status.error_message(), "; retrying in ", heartbeat_interval_ms_, " ms"));
    ScheduleRm(heartbeat_interval_ms_, /*register_again=*/false);
    return;
  }
  if (reply.response_id() == request.response_id() + 1) {
    for (const v1::ContainerStatus& sent : request.container_statuses()) {
      if (sent.state() == v1::CONTAINER_COMPLETE) unacked_completed_.erase(sent.container_id());
    }
  }
  last_response_id_ = reply.response_id();
  UpdateKeys(reply.has_container_key(), reply.container_key(), reply.has_next_container_key(),
             reply.next_container_key());
  if (reply.next_heartbeat_interval_ms() > 0) {
    heartbeat_interval_ms_ = reply.next_heartbeat_interval_ms();
  }
  switch (reply.action()) {
    case v1::NODE_ACTION_RESYNC:
      Log(absl::StrCat("the RM asked to resync: registering again. ", reply.diagnostics()));
      ScheduleRm(0, /*register_again=*/true);
      return;
    case v1::NODE_ACTION_SHUTDOWN:
      Log(absl::StrCat("the RM shut this node down: ", reply.diagnostics()));
      rm_shutdown_ = true;
      StopAllContainers(v1::CONTAINER_EXIT_KILLED_BY_RM,
                        "Container killed: the ResourceManager shut this node down");
      return;
    default:
      break;
  }
  for (const std::string& id : reply.containers_to_cleanup()) {
    StopContainer(id, v1::CONTAINER_EXIT_KILLED_BY_RM, "Container killed by the ResourceManager");
  }
  for (const std::string& app_id : reply.applications_to_cleanup()) CleanupApplication(app_id);
  ScheduleRm(heartbeat_interval_ms_, /*register_again=*/false);
}

}  // namespace weft::nm
