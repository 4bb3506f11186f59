#include "common/resource.h"

#include <iterator>

#include "absl/strings/str_cat.h"

namespace weft {

int Resource::DominantType(const Resource& total) const {
  int best = -1;
  double share = 0;
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    if (total.v_[i] <= 0) continue;
    double s = static_cast<double>(v_[i]) / static_cast<double>(total.v_[i]);
    if (s > share) {
      share = s;
      best = i;
    }
  }
  return best;
}

std::string Resource::DebugString() const {
  static constexpr const char* kNames[] = {"memory-mb", "vcores", "network-mbps", "disk-mbps",
                                           "gpu-milli"};
  static_assert(std::size(kNames) == kFirstCustomType);
  std::string out = "<";
  bool first = true;
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    if (i >= kFirstCustomType && v_[i] == 0) continue;
    if (i == kNetworkMbps || i == kDiskMbps || i == kGpuMilli) {
      if (v_[i] == 0) continue;
    }
    std::string name = i < kFirstCustomType ? kNames[i] : absl::StrCat("type-", i);
    absl::StrAppend(&out, first ? "" : ", ", name, "=", v_[i]);
    first = false;
  }
  out += ">";
  return out;
}

}  // namespace weft
