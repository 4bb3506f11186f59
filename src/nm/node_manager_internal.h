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
// NodeManager restart (docs/nm-recovery.md): the state store and the monitors' directories,
// in the work root.
inline constexpr char kStateDbFile[] = "nm-state.db";
inline constexpr char kStateDir[] = "nm-state";
inline constexpr char kNodeIdKey[] = "node_id";
// How long a cleaned-up application stays refused after an NM restart: longer than any
// container token lives.
inline constexpr int64_t kFinishedAppRetentionMs = 24 * 3600 * 1000;

// <work_root>/nm-state/<container_id>: where the container's monitor writes its pid and exit
// status (os_env.h). `container_id` must be valid (ValidateContainerId).
std::string ContainerStateDir(absl::string_view work_root, absl::string_view container_id);

// The limits a container token grants, from its formatted resource: "memory-mb=1024,vcores=1",
// optionally in ResourceTypeRegistry::Format's "<memory-mb=1024, vcores=1>" form. network-mbps
// goes to `*network_mbps` (0 when absent); other types are accepted and not enforced here.
absl::StatusOr<CgroupLimits> LimitsFromTokenResource(absl::string_view text,
                                                     int64_t* network_mbps);

// A container's pids limit (CgroupLimits::pids_max; NodeManagerOptions): `pids_max` when > 0,
// else `pids_per_vcore` times max(vcores, 1), capped at the kernel's 2^22; 0 = no limit.
int64_t PidsLimitFor(int64_t vcores, int64_t pids_per_vcore, int64_t pids_max);

// Every amount a container token's resource names, by type name (built-in and custom), as the
// RM's protocol carries resources; same spellings and errors as LimitsFromTokenResource.
absl::StatusOr<v1::Resource> ResourceFromTokenResource(absl::string_view text);

// A COMPLETE status for `id`.
v1::ContainerStatus CompletedStatus(const std::string& id, int exit_status,
                                    const std::string& diagnostics);

}  // namespace weft::nm::internal

#endif  // WEFT_NM_NODE_MANAGER_INTERNAL_H_
