// Copyright Weft authors. A container's share of one device (issue 32, docs/gpu.md), and its
// text form in container tokens: "gpu:<index>=<milli>", e.g. "gpu:0=500".
#ifndef WEFT_COMMON_DEVICE_SHARE_H_
#define WEFT_COMMON_DEVICE_SHARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// Thousandths of a device in a whole device.
inline constexpr int32_t kWholeDeviceMilli = 1000;

struct DeviceShare {
  std::string type;   // "gpu": [a-z0-9-]+
  int32_t index = 0;  // the device's index on its node (nvidia-smi's minor number), >= 0
  int32_t milli = 0;  // 1..1000
  friend bool operator==(const DeviceShare&, const DeviceShare&) = default;
};

// "gpu:0=500".
std::string FormatDeviceShare(const DeviceShare& share);
// The inverse; errors name the text and what is wrong with it (type, index or milli).
absl::StatusOr<DeviceShare> ParseDeviceShare(absl::string_view text);
// Each of `texts`, parsed; then checked as one container's grant: no device named twice, every
// share of a grant of several devices whole. The error names the offending item.
absl::StatusOr<std::vector<DeviceShare>> ParseDeviceShares(const std::vector<std::string>& texts);
// The sum of shares of `type`, milli.
int64_t TotalMilli(const std::vector<DeviceShare>& shares, absl::string_view type);

}  // namespace weft

#endif  // WEFT_COMMON_DEVICE_SHARE_H_
