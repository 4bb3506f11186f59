// Copyright Weft authors. The registry of resource types a cluster schedules.
#ifndef WEFT_COMMON_RESOURCE_TYPES_H_
#define WEFT_COMMON_RESOURCE_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"

namespace weft {

// What the scheduler knows of one resource type. All amounts are in `unit`.
struct ResourceTypeInfo {
  std::string name;       // e.g. "memory-mb"; [a-z0-9-]+, unique in a registry
  std::string unit;       // e.g. "MiB", "cores", "Mbit/s"
  int64_t minimum = 0;    // smallest allocation; a non-zero request is raised to it
  int64_t maximum = 0;    // largest allocation of one container; larger requests are rejected
  int64_t increment = 1;  // requests are rounded up to a multiple of it (>= 1)
};

// The set of resource types of a cluster, by id. The five built-in types always exist with
// ids kMemoryMb, kVcores, kNetworkMbps, kDiskMbps and kGpuMilli; custom countable types (e.g. "gpu") are
// added after them, up to kMaxResourceTypes in all.
//
// Thread-compatible; build it once at start-up and share it read-only.
class ResourceTypeRegistry {
 public:
  // The built-in types with YARN-like defaults: memory-mb min 1024 max 8192 incr 1024 is
  // YARN's; Weft defaults to min 128, max 1 TiB, incr 128 so that simulations of small tasks
  // are exact. vcores 1..1024 by 1; network-mbps 0..100000 by 1 (seed 000 uses 1..200);
  // disk-mbps 0..100000 by 1; gpu-milli 0..64000 by 1 (64 GPUs).
  ResourceTypeRegistry();

  // Adds a custom countable type. Fails (and leaves the registry unchanged) on a duplicate or
  // malformed name, a bad range, or when all kMaxResourceTypes ids are taken.
  absl::StatusOr<int> AddType(ResourceTypeInfo info);

  // Replaces the limits of an existing type (built-in or custom). Fails on unknown name or a
  // bad range (minimum < 0, maximum < minimum, increment < 1).
  absl::Status SetLimits(absl::string_view name, int64_t minimum, int64_t maximum,
                         int64_t increment);

  int size() const { return static_cast<int>(types_.size()); }
  const ResourceTypeInfo& info(int id) const { return types_[id]; }
  // -1 when no type has that name.
  int Find(absl::string_view name) const;

  // Parses `memory-mb=2048,vcores=1[,network-mbps=20]`. Whitespace around items is allowed;
  // types not named are 0. Errors name the offending item: unknown type, missing '=', a value
  // that is not an integer, a repeated type. Units are never implied: `2g` is an error.
  absl::StatusOr<Resource> Parse(absl::string_view text) const;

  // `<memory-mb=2048, vcores=1, network-mbps=20>`: every registered type up to vcores, then
  // the others only when non-zero.
  std::string Format(const Resource& r) const;

  // Checks a per-container request: no negative component, no component above its type's
  // maximum, nothing set on ids beyond size(). The error names the type and the value, e.g.
  // "memory-mb=-1 is negative". gpu-milli must be a share of one GPU (1-1000) or whole GPUs
  // (a multiple of 1000).
  absl::Status Validate(const Resource& r) const;

  // Validate(), then round every non-zero component up to its increment and raise it to its
  // minimum; memory-mb and vcores are raised to their minimum even when 0 (every container
  // has some memory and a core, as in YARN). Rounding up that would pass the maximum is an
  // error too.
  absl::StatusOr<Resource> Normalize(const Resource& r) const;

 private:
  std::vector<ResourceTypeInfo> types_;
};

}  // namespace weft

#endif  // WEFT_COMMON_RESOURCE_TYPES_H_
