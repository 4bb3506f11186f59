// Copyright Weft authors. cgroup v2 device isolation: a BPF_PROG_TYPE_CGROUP_DEVICE program,
// built and attached through the bpf() syscall (no libbpf), that refuses a list of character
// devices and lets everything else through (docs/gpu-nm.md).
#ifndef WEFT_NM_DEVICES_DEVICE_BPF_H_
#define WEFT_NM_DEVICES_DEVICE_BPF_H_

#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "nm/devices/device_number.h"

namespace weft::nm {

// The program's instructions for `denied`: for a character
// device whose major:minor is listed it returns 0 (the kernel answers EPERM to the open or
// mknod), for anything else 1. Exposed for tests.
std::vector<bpf_insn> DeviceDenyProgram(const std::vector<DeviceNumber>& denied);

// Loads the program for `denied` and attaches it to the cgroup v2 directory `cgroup_dir` with
// BPF_F_ALLOW_MULTI (programs of ancestor groups, e.g. systemd's, still apply: access needs
// every one's consent). The attachment lives as long as the group, across NM restarts.
// Errors name the directory and the syscall that failed (with the kernel verifier's log for a
// refused program); PermissionDenied without CAP_BPF/CAP_SYS_ADMIN.
absl::Status AttachDeviceDenyProgram(const std::string& cgroup_dir,
                                     const std::vector<DeviceNumber>& denied);

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_DEVICE_BPF_H_
