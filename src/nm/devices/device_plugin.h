// Copyright Weft authors. The NodeManager's device plugins (issue 32; docs/gpu-nm.md): one per
// device type ("gpu" first), each discovering the node's devices of its type and saying what
// a container holding some of them gets in its environment. Assignment (which container holds
// which share of which device) is the DeviceLedger's (nm/devices/device_ledger.h); isolation
// is the cgroup layer's (CgroupLimits::denied_devices in nm/cgroups.h).
#ifndef WEFT_NM_DEVICES_DEVICE_PLUGIN_H_
#define WEFT_NM_DEVICES_DEVICE_PLUGIN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/device_share.h"
#include "weft/v1/common.pb.h"

namespace weft::nm {

// Discovers and describes one type of device. The NM calls Discover at Start, then for health
// from a thread of its own (never two calls at once), while its loop may call ContainerEnv:
// ContainerEnv must not touch what Discover changes.
class DevicePlugin {
 public:
  virtual ~DevicePlugin() = default;

  // The device type it handles, e.g. "gpu" (DeviceShare::type, v1::Device::type).
  virtual std::string type() const = 0;

  // The node's devices of this type now, sorted by index, each with its device node's major
  // and minor numbers and its health (v1::Device::healthy). Called at Start and at each
  // health check. A device whose node is gone is left out (the DeviceLedger keeps a device
  // it saw before, as unhealthy). Errors: discovery itself failed (e.g. nvidia-smi missing or
  // its output unreadable), with what was run and why.
  virtual absl::StatusOr<std::vector<v1::Device>> Discover() = 0;

  // The environment variables a container holding `shares` (all of this type, sorted by
  // index) gets; empty `shares`: what a container holding none of these devices gets.
  // `isolated`: the container can open only its own devices (its cgroup denies the others),
  // so what enumerates the devices it can open (CUDA) sees only those, numbered from 0.
  virtual std::map<std::string, std::string> ContainerEnv(const std::vector<DeviceShare>& shares,
                                                          bool isolated) const = 0;
};

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_DEVICE_PLUGIN_H_
