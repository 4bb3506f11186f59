// Copyright Weft authors. Internal to the NodeManager's files (node_manager.cc, the facade;
// container_manager.cc, YARN's ContainerManagerImpl; node_status_updater.cc, YARN's
// NodeStatusUpdater): constants and helpers they share. Not for other modules.
#ifndef WEFT_NM_NODE_MANAGER_INTERNAL_H_
#define WEFT_NM_NODE_MANAGER_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/cgroups.h"
#include "weft/v1/container.pb.h"

namespace weft::nm::internal {

inline constexpr int64_t kReapIntervalMs = 100;
inline constexpr int64_t kRegisterRetryMs = 1000;
inline constexpr int64_t kDefaultHeartbeatIntervalMs = 1000;
inline constexpr int64_t kRmCallTimeoutMs = 10'000;
inline constexpr char kCgroupRoot[] = "/sys/fs/cgroup";

// The limits a container token grants, from its formatted resource: "memory-mb=1024,vcores=1",
// optionally in ResourceTypeRegistry::Format's "<memory-mb=1024, vcores=1>" form. network-mbps
// goes to `*network_mbps` (0 when absent); other types are accepted and not enforced here.
absl::StatusOr<CgroupLimits> LimitsFromTokenResource(absl::string_view text,
                                                     int64_t* network_mbps);

// A COMPLETE status for `id`.
v1::ContainerStatus CompletedStatus(const std::string& id, int exit_status,
                                    const std::string& diagnostics);

}  // namespace weft::nm::internal

#endif  // WEFT_NM_NODE_MANAGER_INTERNAL_H_
