// Copyright Weft authors. The NM's device assignment ledger.
#include "nm/devices/device_ledger.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft::nm {

std::vector<v1::Device> DeviceLedger::SetDevices(const std::vector<v1::Device>& devices) {
  std::map<Key, v1::Device> next;
  for (const v1::Device& device : devices) next[{device.type(), device.index()}] = device;
  for (const auto& [key, before] : devices_) {
    if (next.count(key) == 0) {
      v1::Device gone = before;
      gone.set_healthy(false);
      next[key] = gone;
    }
  }
  std::vector<v1::Device> changed;
  for (const auto& [key, now] : next) {
    auto before = devices_.find(key);
    if (before == devices_.end() || before->second.healthy() != now.healthy()) {
      changed.push_back(now);
    }
  }
  devices_ = std::move(next);
  return changed;
}

std::vector<v1::Device> DeviceLedger::devices() const {
  std::vector<v1::Device> out;
  for (const auto& [key, device] : devices_) out.push_back(device);
  return out;
}

int64_t DeviceLedger::HealthyCount(absl::string_view type) const {
  int64_t n = 0;
  for (const auto& [key, device] : devices_) n += key.first == type && device.healthy() ? 1 : 0;
  return n;
}

int32_t DeviceLedger::HeldMilli(absl::string_view type, int32_t index) const {
  int32_t milli = 0;
  for (const auto& [container, shares] : held_) {
    for (const DeviceShare& share : shares) {
      if (share.type == type && share.index == index) milli += share.milli;
    }
  }
  return milli;
}

absl::Status DeviceLedger::Check(absl::string_view container_id,
                                 const std::vector<DeviceShare>& shares, int64_t gpu_milli) const {
  const int64_t total = TotalMilli(shares, "gpu");
  if (total != gpu_milli) {
    return absl::InvalidArgumentError(absl::StrCat(
        "container ", container_id, ": its token asks for gpu-milli=", gpu_milli,
        " but grants devices totalling ", total, " milli"));
  }
  for (const DeviceShare& share : shares) {
    const std::string name = absl::StrCat(share.type, ":", share.index);
    auto it = devices_.find({share.type, share.index});
    if (it == devices_.end()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "container ", container_id, ": its token grants device ", name,
          ", which this node does not have"));
    }
    if (!it->second.healthy()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "container ", container_id, ": its token grants device ", name, " (",
          it->second.path(), "), which is unhealthy"));
    }
    const int32_t held = HeldMilli(share.type, share.index);
    if (held + share.milli > kWholeDeviceMilli) {
      return absl::FailedPreconditionError(absl::StrCat(
          "container ", container_id, ": its token grants ", share.milli, " milli of device ",
          name, ", of which running containers hold ", held, " (of ", kWholeDeviceMilli, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status DeviceLedger::Assign(absl::string_view container_id,
                                  const std::vector<DeviceShare>& shares, int64_t gpu_milli) {
  if (held_.find(container_id) != held_.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("container ", container_id, " already holds devices"));
  }
  if (absl::Status s = Check(container_id, shares, gpu_milli); !s.ok()) return s;
  if (!shares.empty()) held_.emplace(std::string(container_id), shares);
  return absl::OkStatus();
}

std::vector<std::string> DeviceLedger::Restore(absl::string_view container_id,
                                               const std::vector<DeviceShare>& shares) {
  std::vector<std::string> problems;
  for (const DeviceShare& share : shares) {
    const std::string name = absl::StrCat(share.type, ":", share.index);
    if (devices_.count({share.type, share.index}) == 0) {
      problems.push_back(absl::StrCat("container ", container_id, " holds device ", name,
                                      ", which this node no longer has"));
    }
    const int32_t held = HeldMilli(share.type, share.index);
    if (held + share.milli > kWholeDeviceMilli) {
      problems.push_back(absl::StrCat("container ", container_id, " holds ", share.milli,
                                      " milli of device ", name, " beside ", held,
                                      " milli held by others"));
    }
  }
  if (!shares.empty()) held_[std::string(container_id)] = shares;
  return problems;
}

void DeviceLedger::Release(absl::string_view container_id) {
  auto it = held_.find(container_id);
  if (it != held_.end()) held_.erase(it);
}

std::vector<DeviceShare> DeviceLedger::Held(absl::string_view container_id) const {
  auto it = held_.find(container_id);
  return it == held_.end() ? std::vector<DeviceShare>() : it->second;
}

std::vector<v1::DeviceAssignment> DeviceLedger::Assignments(
    absl::string_view container_id) const {
  std::vector<v1::DeviceAssignment> out;
  for (const DeviceShare& share : Held(container_id)) {
    v1::DeviceAssignment a;
    a.set_type(share.type);
    a.set_index(share.index);
    a.set_milli(share.milli);
    out.push_back(std::move(a));
  }
  return out;
}

std::vector<DeviceNumber> DeviceLedger::DeniedFor(const std::vector<DeviceShare>& shares) const {
  std::vector<DeviceNumber> allowed;
  for (const DeviceShare& share : shares) {
    auto it = devices_.find({share.type, share.index});
    if (it != devices_.end()) allowed.push_back({it->second.device_major(), it->second.device_minor()});
  }
  std::vector<DeviceNumber> denied;
  for (const auto& [key, device] : devices_) {
    if (device.device_major() == 0 && device.device_minor() == 0) continue;  // its node was never found
    DeviceNumber number{device.device_major(), device.device_minor()};
    if (std::find(allowed.begin(), allowed.end(), number) != allowed.end()) continue;
    if (std::find(denied.begin(), denied.end(), number) == denied.end()) denied.push_back(number);
  }
  std::sort(denied.begin(), denied.end(), [](const DeviceNumber& a, const DeviceNumber& b) {
    return std::pair(a.major, a.minor) < std::pair(b.major, b.minor);
  });
  return denied;
}

}  // namespace weft::nm
