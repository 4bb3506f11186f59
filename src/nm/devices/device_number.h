// Copyright Weft authors. A character device node's numbers, for cgroup device rules.
#ifndef WEFT_NM_DEVICES_DEVICE_NUMBER_H_
#define WEFT_NM_DEVICES_DEVICE_NUMBER_H_

#include <cstdint>

namespace weft::nm {

// major:minor of a character device node (e.g. 195:0 for /dev/nvidia0).
struct DeviceNumber {
  int32_t major = 0;
  int32_t minor = 0;
  friend bool operator==(const DeviceNumber&, const DeviceNumber&) = default;
};

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_DEVICE_NUMBER_H_
