// Copyright Weft authors. A multi-dimensional resource vector.
#ifndef WEFT_COMMON_RESOURCE_H_
#define WEFT_COMMON_RESOURCE_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <ostream>
#include <string>

namespace weft {

// Maximum number of resource types a cluster can declare (5 built in + custom).
inline constexpr int kMaxResourceTypes = 8;

// Built-in resource type ids. Custom types get ids kFirstCustomType and up.
enum ResourceTypeId : int {
  kMemoryMb = 0,     // memory-mb: mebibytes
  kVcores = 1,       // vcores: virtual cores
  kNetworkMbps = 2,  // network-mbps: egress megabits per second (sustained)
  kDiskMbps = 3,     // disk-mbps: disk megabytes per second
  // gpu-milli: thousandths of a GPU (docs/gpu.md). A node has 1000 per healthy GPU; a container
  // asks 1..999 (a share of one GPU) or k x 1000 (k whole GPUs).
  kGpuMilli = 4,
  kFirstCustomType = 5,
};

// A vector of int64 amounts indexed by resource type id. Fixed capacity, stored inline:
// copying, arithmetic and comparisons never allocate. Types that a cluster does not use are 0.
//
// Thread-compatible value type.
class Resource {
 public:
  constexpr Resource() : v_{} {}

  // Convenience constructor for the three most used types.
  static constexpr Resource Of(int64_t memory_mb, int64_t vcores, int64_t network_mbps = 0) {
    Resource r;
    r.v_[kMemoryMb] = memory_mb;
    r.v_[kVcores] = vcores;
    r.v_[kNetworkMbps] = network_mbps;
    return r;
  }

  constexpr int64_t operator[](int type) const { return v_[type]; }
  constexpr int64_t& operator[](int type) { return v_[type]; }
  constexpr int64_t Get(int type) const { return v_[type]; }
  constexpr void Set(int type, int64_t value) { v_[type] = value; }

  constexpr Resource& operator+=(const Resource& o) {
    for (int i = 0; i < kMaxResourceTypes; ++i) v_[i] += o.v_[i];
    return *this;
  }
  constexpr Resource& operator-=(const Resource& o) {
    for (int i = 0; i < kMaxResourceTypes; ++i) v_[i] -= o.v_[i];
    return *this;
  }
  friend constexpr Resource operator+(Resource a, const Resource& b) { return a += b; }
  friend constexpr Resource operator-(Resource a, const Resource& b) { return a -= b; }
  friend constexpr Resource operator*(Resource a, int64_t k) {
    for (int i = 0; i < kMaxResourceTypes; ++i) a.v_[i] *= k;
    return a;
  }
  friend constexpr bool operator==(const Resource& a, const Resource& b) = default;

  // True when every component of *this is <= the same component of `capacity`.
  constexpr bool FitsIn(const Resource& capacity) const {
    bool fits = true;
    for (int i = 0; i < kMaxResourceTypes; ++i) fits &= v_[i] <= capacity.v_[i];
    return fits;
  }

  constexpr bool IsZero() const {
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      if (v_[i] != 0) return false;
    }
    return true;
  }
  constexpr bool AnyNegative() const {
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      if (v_[i] < 0) return true;
    }
    return false;
  }
  // True when some component is > 0.
  constexpr bool AnyPositive() const {
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      if (v_[i] > 0) return true;
    }
    return false;
  }

  // The largest ratio this[i] / total[i] over types with total[i] > 0 (DRF's dominant share).
  // Returns 0 for the zero vector. Types absent from `total` (0) are ignored.
  double DominantShare(const Resource& total) const {
    double share = 0;
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      if (total.v_[i] > 0) {
        share = std::max(share, static_cast<double>(v_[i]) / static_cast<double>(total.v_[i]));
      }
    }
    return share;
  }
  // The type id that realises DominantShare(total); -1 when every share is 0.
  int DominantType(const Resource& total) const;

  friend constexpr Resource Min(const Resource& a, const Resource& b) {
    Resource r;
    for (int i = 0; i < kMaxResourceTypes; ++i) r.v_[i] = std::min(a.v_[i], b.v_[i]);
    return r;
  }
  friend constexpr Resource Max(const Resource& a, const Resource& b) {
    Resource r;
    for (int i = 0; i < kMaxResourceTypes; ++i) r.v_[i] = std::max(a.v_[i], b.v_[i]);
    return r;
  }
  // Componentwise max(this, 0).
  constexpr Resource ClampedAtZero() const { return Max(*this, Resource()); }

  // `<memory-mb=2048, vcores=1, network-mbps=20>` using the built-in names and `type-N` for
  // custom ids; zero custom components are omitted. Use ResourceTypeRegistry::Format for
  // configured names.
  std::string DebugString() const;

 private:
  std::array<int64_t, kMaxResourceTypes> v_;
};

inline std::ostream& operator<<(std::ostream& os, const Resource& r) {
  return os << r.DebugString();
}

// Namespace-scope declarations so that weft::Min / weft::Max also work by qualified name.
constexpr Resource Min(const Resource& a, const Resource& b);
constexpr Resource Max(const Resource& a, const Resource& b);

}  // namespace weft

#endif  // WEFT_COMMON_RESOURCE_H_
