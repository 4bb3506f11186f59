// Copyright Weft authors. The NodeManager's devices (issue 32; docs/gpu-nm.md): discovery at
// Start, assignment and isolation at container start, recovery, health re-checks.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/device_share.h"
#include "common/log.h"
#include "nm/node_manager.h"

namespace weft::nm {

absl::Status NodeManager::StartDevices() {
  const NodeManagerOptions& opts = options_;
  // Without plugins the capability's gpu-milli is the operator's (scheduled, not isolated).
  if (opts.device_plugins.empty()) return absl::OkStatus();
  std::vector<v1::Device> found;
  for (const std::shared_ptr<DevicePlugin>& plugin : opts.device_plugins) {
    absl::StatusOr<std::vector<v1::Device>> devices = plugin->Discover();
    if (!devices.ok()) return devices.status();
    found.insert(found.end(), devices->begin(), devices->end());
  }
  device_ledger_.SetDevices(found);
  for (const v1::Device& d : found) {
    log::Info("device_found", {{"node", node_id_},
                               {"device", absl::StrCat(d.type(), ":", d.index())},
                               {"path", d.path()},
                               {"number", absl::StrCat(d.device_major(), ":", d.device_minor())},
                               {"model", d.model()},
                               {"healthy", d.healthy() ? "true" : "false"}});
  }
  const int64_t gpu_milli = device_ledger_.HealthyCount("gpu") * kWholeDeviceMilli;
  if (opts.capability[kGpuMilli] != 0 && opts.capability[kGpuMilli] != gpu_milli) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the node resources name gpu-milli=", opts.capability[kGpuMilli], " but ",
        device_ledger_.HealthyCount("gpu"), " healthy GPU(s) were found (gpu-milli=", gpu_milli,
        "); leave gpu-milli out of the node resources"));
  }
  capability_[kGpuMilli] = gpu_milli;
  if (found.empty()) return absl::OkStatus();
  if (cgroups_ == nullptr) {
    missing_features_.push_back(
        "device isolation off (use_cgroups=false): every container can open every device");
    return absl::OkStatus();
  }
  if (absl::Status s = cgroups_->EnableDeviceControl(); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("devices were found but cannot be isolated: ", s.message()));
  }
  device_isolation_ = true;
  next_device_check_ms_ = loop_->NowMs() + opts.device_health_interval_ms;
  return absl::OkStatus();
}

absl::Status NodeManager::AssignDevices(const security::ContainerTokenData& token,
                                        LaunchSpec* spec) {
  const std::string& id = token.container_id;
  // A node without device plugins has nothing to give, isolate or check: only a token that
  // names devices is refused (below: unknown device).
  if (options_.device_plugins.empty() && token.devices.empty()) return absl::OkStatus();
  absl::StatusOr<std::vector<DeviceShare>> shares = ParseDeviceShares(token.devices);
  if (!shares.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("container token for ", id, ": devices: ", shares.status().message()));
  }
  int64_t gpu_milli = 0;
  if (absl::StatusOr<v1::Resource> resource = internal::ResourceFromTokenResource(token.resource);
      resource.ok()) {
    auto it = resource->values().find("gpu-milli");
    if (it != resource->values().end()) gpu_milli = it->second;
  }
  if (absl::Status s = device_ledger_.Assign(id, *shares, gpu_milli); !s.ok()) {
    log::Warn("container_refused", {{"container", id}, {"reason", s.message()}});
    return s;
  }
  if (device_isolation_) spec->limits.denied_devices = device_ledger_.DeniedFor(*shares);
  for (const std::shared_ptr<DevicePlugin>& plugin : options_.device_plugins) {
    std::vector<DeviceShare> mine;
    for (const DeviceShare& share : *shares) {
      if (share.type == plugin->type()) mine.push_back(share);
    }
    for (auto& [name, value] : plugin->ContainerEnv(mine, device_isolation_)) {
      spec->env[name] = value;
    }
  }
  return absl::OkStatus();
}

void NodeManager::RestoreDevices(const NmContainerRecord& stored) {
  if (stored.devices.empty()) return;
  absl::StatusOr<std::vector<DeviceShare>> shares = ParseDeviceShares(stored.devices);
  if (!shares.ok()) {
    log::Error("container_devices_unreadable", {{"node", node_id_},
                                                 {"container", stored.container_id},
                                                 {"error", shares.status()}});
    return;
  }
  for (const std::string& problem : device_ledger_.Restore(stored.container_id, *shares)) {
    log::Warn("container_devices_restored_anyway",
              {{"node", node_id_}, {"container", stored.container_id}, {"problem", problem}});
  }
  log::Info("container_devices_restored",
            {{"node", node_id_},
             {"container", stored.container_id},
             {"devices", absl::StrJoin(stored.devices, ",")}});
}

void NodeManager::MaybeRecheckDevices() {
  if (options_.device_plugins.empty() || options_.device_health_interval_ms <= 0) return;
  if (device_check_running_ || shutting_down_) return;
  const int64_t now = loop_->NowMs();
  if (now < next_device_check_ms_) return;
  next_device_check_ms_ = now + options_.device_health_interval_ms;
  JoinDeviceChecker();  // the previous one has posted its result already: it is ending
  device_check_running_ = true;
  // The plugins are shared: they outlive the thread. One discovery at a time (the flag above),
  // so a plugin's Discover is never called twice at once (DevicePlugin's contract).
  device_checker_ = std::thread([this, plugins = options_.device_plugins] {
    std::vector<absl::StatusOr<std::vector<v1::Device>>> results;
    results.reserve(plugins.size());
    for (const std::shared_ptr<DevicePlugin>& plugin : plugins) {
      results.push_back(plugin->Discover());
    }
    // Runs before shutdown completes: FinishShutdownOnLoop joins this thread before it posts
    // its last task.
    loop_->Post([this, results = std::move(results)]() mutable {
      ApplyDeviceCheck(std::move(results));
    });
  });
}

void NodeManager::ApplyDeviceCheck(
    std::vector<absl::StatusOr<std::vector<v1::Device>>> results) {
  device_check_running_ = false;
  if (shutting_down_) return;
  std::vector<v1::Device> found;
  for (absl::StatusOr<std::vector<v1::Device>>& devices : results) {
    if (!devices.ok()) {
      // Nothing seen: every device of the plugin is unusable until it is seen again (the
      // ledger keeps a device it saw before, as unhealthy).
      log::Warn("device_discovery_failed", {{"node", node_id_}, {"error", devices.status()}});
      continue;
    }
    found.insert(found.end(), devices->begin(), devices->end());
  }
  for (const v1::Device& changed : device_ledger_.SetDevices(found)) {
    log::Warn("device_health_changed", {{"node", node_id_},
                                        {"device", absl::StrCat(changed.type(), ":", changed.index())},
                                        {"healthy", changed.healthy() ? "true" : "false"}});
    device_changes_[{changed.type(), changed.index()}] = changed;
  }
}

void NodeManager::JoinDeviceChecker() {
  if (device_checker_.joinable()) device_checker_.join();
}

}  // namespace weft::nm
