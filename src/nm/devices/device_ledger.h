// Copyright Weft authors. Which container holds which share of which device on this node
// (issue 32; docs/gpu-nm.md): the NM's side of device assignment. The RM chooses the devices
// and names them in the signed container token ("gpu:<index>=<milli>"); the ledger checks a
// start against the node's devices and what running containers hold, and remembers it.
#ifndef WEFT_NM_DEVICES_DEVICE_LEDGER_H_
#define WEFT_NM_DEVICES_DEVICE_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/device_share.h"
#include "nm/devices/device_number.h"
#include "weft/v1/common.pb.h"

namespace weft::nm {

// Not thread-safe: owned by the NM's loop.
class DeviceLedger {
 public:
  // Replaces what the node has (a discovery's result, all types). A device seen before that
  // is missing now is kept, unhealthy. Returns the devices whose health (or presence) changed,
  // as they are now: what the next heartbeat reports (NodeHeartbeatRequest.devices).
  std::vector<v1::Device> SetDevices(const std::vector<v1::Device>& devices);

  // The node's devices, sorted by (type, index).
  std::vector<v1::Device> devices() const;
  // Healthy devices of `type`.
  int64_t HealthyCount(absl::string_view type) const;

  // Whether `container_id` may start holding `shares` (its token's, parsed), whose token asks
  // for `gpu_milli` of gpu-milli: every share names a known, healthy device; no device would
  // be held beyond 1000 milli with what running containers hold; and the shares' gpu total
  // equals gpu_milli. Errors (FailedPrecondition, InvalidArgument for the total) name the
  // container and the device.
  absl::Status Check(absl::string_view container_id, const std::vector<DeviceShare>& shares,
                     int64_t gpu_milli) const;
  // Check, then records the shares as held by `container_id`. A container already holding
  // shares is AlreadyExists.
  absl::Status Assign(absl::string_view container_id, const std::vector<DeviceShare>& shares,
                      int64_t gpu_milli);
  // Records shares a running container holds without checking them (NM recovery: the
  // container was started by an earlier NM and runs with them whatever the devices are now).
  // Returns the problems found, one line each (unknown device, overcommitted device), for the
  // log; the shares are recorded anyway.
  std::vector<std::string> Restore(absl::string_view container_id,
                                   const std::vector<DeviceShare>& shares);
  // Forgets what the container holds (no-op when nothing).
  void Release(absl::string_view container_id);

  // What the container holds (empty when nothing).
  std::vector<DeviceShare> Held(absl::string_view container_id) const;
  // As DeviceAssignment messages.
  std::vector<v1::DeviceAssignment> Assignments(absl::string_view container_id) const;
  // Milli held on the device by all containers.
  int32_t HeldMilli(absl::string_view type, int32_t index) const;
  // The device nodes a container holding `shares` must not open: every known device's node
  // (healthy or not, with numbers known) except the ones of its shares, sorted, distinct.
  std::vector<DeviceNumber> DeniedFor(const std::vector<DeviceShare>& shares) const;

 private:
  using Key = std::pair<std::string, int32_t>;  // (type, index)
  std::map<Key, v1::Device> devices_;
  std::map<std::string, std::vector<DeviceShare>, std::less<>> held_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_DEVICE_LEDGER_H_
