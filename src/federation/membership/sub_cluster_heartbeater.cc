// Copyright Weft authors.
#include "federation/membership/sub_cluster_heartbeater.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "rm/rm_server.h"

namespace weft::federation {
namespace {

v1::Resource Scaled(const v1::Resource& r, double fraction) {
  v1::Resource out;
  for (const auto& [name, value] : r.values())
    (*out.mutable_values())[name] = std::max<int64_t>(
        0, static_cast<int64_t>(std::floor(static_cast<double>(value) * fraction)));
  return out;
}

v1::Resource MinusFloorZero(const v1::Resource& a, const v1::Resource& b) {
  v1::Resource out = a;
  for (auto& [name, value] : *out.mutable_values()) {
    auto it = b.values().find(name);
    if (it != b.values().end()) value = std::max<int64_t>(0, value - it->second);
  }
  return out;
}

}  // namespace

absl::Status ValidateHeartbeaterOptions(const HeartbeaterOptions& o) {
  if (absl::Status s = ValidateSubClusterId(o.sub_cluster_id); !s.ok()) return s;
  if (o.rm_address.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("sub-cluster '", o.sub_cluster_id, "': no RM address to register"));
  if (o.heartbeat_interval_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("federation heartbeat interval ", o.heartbeat_interval_ms, " ms must be > 0"));
  if (o.fence_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("federation fence ", o.fence_ms, " ms must be >= 0 (0 = twice the interval)"));
  if (!(o.federation_commitment > 0 && o.federation_commitment <= 1))
    return absl::InvalidArgumentError(
        absl::StrCat("federation commitment ", o.federation_commitment, " must be in (0, 1]"));
  return absl::OkStatus();
}

int64_t FenceMs(const HeartbeaterOptions& o) {
  return o.fence_ms > 0 ? o.fence_ms : 2 * o.heartbeat_interval_ms;
}

RmSource FiguresFromRmServer(rm::RmServer* rm) {
  RmSource source;
  source.figures = [rm]() -> std::optional<v1::GetClusterMetricsResponse> {
    const rm::HaStatus ha = rm->ha_status();
    if (ha.enabled && !ha.active) return std::nullopt;  // the active heartbeats
    std::optional<v1::GetClusterMetricsResponse> out;
    // RunOnLoop skips `fn` while the RM has no ResourceManager (standby, stopping).
    rm->RunOnLoop([&out](rm::ResourceManager& r) { out = r.GetClusterMetrics(); });
    return out;
  };
  source.apps = [rm]() -> std::optional<std::vector<rm::FederationApp>> {
    std::optional<std::vector<rm::FederationApp>> out;
    rm->RunOnLoop([&out](rm::ResourceManager& r) { out = r.FederationApps(); });
    return out;
  };
  source.homes_checked = [rm](const rm::FederationHomesCheck& check) {
    rm->RunOnLoop([&check](rm::ResourceManager& r) { r.FederationHomesChecked(check); });
  };
  return source;
}

absl::StatusOr<rm::FederationHomesCheck> CheckHomes(
    const std::string& sub_cluster_id, const std::vector<rm::FederationApp>& apps,
    const std::vector<v1::ApplicationHomeSubCluster>& homes_here,
    const std::function<absl::StatusOr<v1::ApplicationHomeSubCluster>(const std::string&)>&
        lookup) {
  absl::flat_hash_set<std::string> here;
  for (const v1::ApplicationHomeSubCluster& h : homes_here) here.insert(h.application_id());
  rm::FederationHomesCheck check;
  for (const rm::FederationApp& app : apps) {
    const bool uam = !app.federation_home_sub_cluster_id.empty();
    // Where this copy may run: here, or for a federation UAM, beside its home app's home.
    const std::string& expected = uam ? app.federation_home_sub_cluster_id : sub_cluster_id;
    std::string home;
    if (here.contains(app.app_id)) {
      home = sub_cluster_id;
    } else {
      absl::StatusOr<v1::ApplicationHomeSubCluster> record = lookup(app.app_id);
      if (absl::IsNotFound(record.status())) {
        check.no_home.insert(app.app_id);  // submitted to this RM directly: not fenced
        continue;
      }
      if (!record.ok())
        return absl::Status(record.status().code(),
                            absl::StrCat("reading the home of application ", app.app_id, ": ",
                                         record.status().message()));
      home = record->home_sub_cluster_id();
    }
    if (home == expected) {
      check.homed_here.insert(app.app_id);
      continue;
    }
    check.homed_elsewhere[app.app_id] =
        uam ? absl::StrCat("application ", app.app_id, " is homed at sub-cluster ", home,
                           " now, not at ", expected,
                           " (moved while that sub-cluster was lost); its unmanaged AM in "
                           "sub-cluster ",
                           sub_cluster_id, " is killed here")
            : absl::StrCat("application ", app.app_id, " is homed at sub-cluster ", home,
                           " now (moved while this sub-cluster was lost); killed here");
  }
  return check;
}

v1::SubClusterInfo LoadRecord(const HeartbeaterOptions& options,
                              const v1::GetClusterMetricsResponse& figures, int64_t now_ms) {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id(options.sub_cluster_id);
  info.set_rm_address(options.rm_address);
  info.set_rm_http_address(options.rm_http_address);
  info.set_state(v1::SC_RUNNING);
  info.set_last_heartbeat_ms(now_ms);
  *info.mutable_capability() = Scaled(figures.total(), options.federation_commitment);
  *info.mutable_used() = figures.allocated();
  *info.mutable_available() = MinusFloorZero(info.capability(), figures.allocated());
  *info.mutable_pending() = figures.pending();
  info.set_active_nodes(figures.active_nodes());
  info.set_apps_running(figures.apps_running());
  info.set_apps_pending(figures.apps_pending());
  info.set_federation_commitment(options.federation_commitment);
  return info;
}

absl::StatusOr<std::unique_ptr<SubClusterHeartbeater>> SubClusterHeartbeater::Start(
    HeartbeaterOptions options, FederationStateStore* store, RmSource source,
    std::function<int64_t()> now_ms) {
  if (absl::Status s = ValidateHeartbeaterOptions(options); !s.ok()) return s;
  std::unique_ptr<SubClusterHeartbeater> h(
      new SubClusterHeartbeater(std::move(options), store, std::move(source), std::move(now_ms)));
  h->thread_ = std::thread([p = h.get()] { p->Run(); });
  return h;
}

SubClusterHeartbeater::SubClusterHeartbeater(HeartbeaterOptions options,
                                             FederationStateStore* store, RmSource source,
                                             std::function<int64_t()> now_ms)
    : options_(std::move(options)),
      store_(store),
      source_(std::move(source)),
      now_ms_(std::move(now_ms)) {}

SubClusterHeartbeater::~SubClusterHeartbeater() { Stop(); }

absl::Status SubClusterHeartbeater::Register(int64_t now_ms) {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id(options_.sub_cluster_id);
  info.set_rm_address(options_.rm_address);
  info.set_rm_http_address(options_.rm_http_address);
  info.set_state(v1::SC_NEW);
  info.set_last_start_ms(now_ms);
  info.set_last_heartbeat_ms(now_ms);
  info.set_federation_commitment(options_.federation_commitment);
  if (absl::Status s = store_->RegisterSubCluster(info); !s.ok()) return s;
  registered_ = true;
  log::Info("sub_cluster_registered", {{"sub_cluster", options_.sub_cluster_id},
                                       {"rm", options_.rm_address},
                                       {"store", store_->Describe()}});
  return absl::OkStatus();
}

absl::Status SubClusterHeartbeater::HeartbeatNow() {
  absl::MutexLock tick(&tick_mu_);
  std::optional<v1::GetClusterMetricsResponse> figures =
      source_.figures ? source_.figures() : std::nullopt;
  if (!figures.has_value()) return absl::OkStatus();  // a standby: the active heartbeats
  const int64_t now = now_ms_();
  absl::Status s;
  if (!registered_) s = Register(now);
  if (s.ok()) {
    s = store_->SubClusterHeartbeat(LoadRecord(options_, *figures, now));
    if (absl::IsNotFound(s)) {
      // The store lost the record (wiped, or another back-end): register again.
      s = Register(now);
      if (s.ok()) s = store_->SubClusterHeartbeat(LoadRecord(options_, *figures, now));
    }
  }
  if (!s.ok()) {
    log::Warn("federation_heartbeat_failed", {{"sub_cluster", options_.sub_cluster_id},
                                              {"store", store_->Describe()},
                                              {"error", s},
                                              {"retry_in_ms", options_.heartbeat_interval_ms}});
    return absl::Status(s.code(), absl::StrCat("heartbeat of sub-cluster '",
                                               options_.sub_cluster_id, "': ", s.message()));
  }
  {
    absl::MutexLock l(&mu_);
    ++heartbeats_;
  }
  return CheckAndFence(now);
}

absl::Status SubClusterHeartbeater::CheckAndFence(int64_t heartbeat_ms) {
  if (!source_.apps || !source_.homes_checked) return absl::OkStatus();
  std::optional<std::vector<rm::FederationApp>> apps = source_.apps();
  if (!apps.has_value()) return absl::OkStatus();  // the RM stopped serving meanwhile
  absl::StatusOr<rm::FederationHomesCheck> check;
  // Homes first, then each other app's record: an app homed here after this list is read by
  // its own record, never mistaken for one without a home.
  absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>> here =
      store_->GetApplicationsHomeSubCluster(options_.sub_cluster_id);
  if (here.ok()) {
    check = CheckHomes(options_.sub_cluster_id, *apps, *here, [this](const std::string& id) {
      return store_->GetApplicationHomeSubCluster(id);
    });
  } else {
    check = here.status();
  }
  if (!check.ok()) {
    log::Warn("federation_home_check_failed", {{"sub_cluster", options_.sub_cluster_id},
                                               {"store", store_->Describe()},
                                               {"error", check.status()},
                                               {"retry_in_ms", options_.heartbeat_interval_ms}});
    return absl::Status(check.status().code(),
                        absl::StrCat("checking the homes of sub-cluster '", options_.sub_cluster_id,
                                     "': ", check.status().message()));
  }
  check->heartbeat_ms = heartbeat_ms;
  check->fence_ms = FenceMs(options_);
  check->interval_ms = options_.heartbeat_interval_ms;
  for (const auto& [app, why] : check->homed_elsewhere)
    log::Warn("federation_app_homed_elsewhere",
              {{"sub_cluster", options_.sub_cluster_id}, {"app", app}, {"why", why}});
  source_.homes_checked(*check);
  return absl::OkStatus();
}

void SubClusterHeartbeater::Run() {
  while (true) {
    HeartbeatNow().IgnoreError();  // logged by HeartbeatNow, retried at the next tick
    absl::MutexLock l(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_),
                         absl::Milliseconds(options_.heartbeat_interval_ms));
    if (stopping_) return;
  }
}

void SubClusterHeartbeater::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock tick(&tick_mu_);
  if (!options_.deregister_on_stop || !registered_) return;
  absl::Status s = store_->DeregisterSubCluster(options_.sub_cluster_id, v1::SC_UNREGISTERED);
  if (!s.ok()) {
    log::Warn("sub_cluster_deregister_failed",
              {{"sub_cluster", options_.sub_cluster_id}, {"error", s}});
    return;
  }
  registered_ = false;
  log::Info("sub_cluster_unregistered", {{"sub_cluster", options_.sub_cluster_id}});
}

int64_t SubClusterHeartbeater::heartbeats() const {
  absl::MutexLock l(&mu_);
  return heartbeats_;
}

bool SubClusterHeartbeater::AwaitHeartbeats(int64_t n, absl::Duration timeout) const {
  absl::MutexLock l(&mu_);
  auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return heartbeats_ >= n; };
  return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
}

}  // namespace weft::federation
