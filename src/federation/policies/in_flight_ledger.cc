// Copyright Weft authors.
#include "federation/policies/in_flight_ledger.h"

#include <algorithm>

namespace weft::federation {

void InFlightLedger::Placed(absl::string_view sub_cluster_id, int64_t am_memory_mb,
                            int64_t placed_ms) {
  auto it = placed_.find(sub_cluster_id);
  if (it == placed_.end()) it = placed_.emplace(std::string(sub_cluster_id), 0).first;
  it->second.push_back(Placement{placed_ms, std::max<int64_t>(0, am_memory_mb)});
}

const InFlightLoads& InFlightLedger::Outstanding(absl::Span<const v1::SubClusterInfo> active) {
  loads_.clear();
  for (auto it = placed_.begin(); it != placed_.end();) {
    const v1::SubClusterInfo* info = nullptr;
    for (const v1::SubClusterInfo& a : active) {
      if (a.sub_cluster_id() == it->first) info = &a;
    }
    if (info == nullptr) {
      it = placed_.erase(it);
      continue;
    }
    const int64_t heartbeat = info->last_heartbeat_ms();
    std::vector<Placement>& v = it->second;
    // Placements may arrive out of order by a few ms (the caller's clock): test each one.
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const Placement& p) { return p.placed_ms + settle_ms_ <= heartbeat; }),
            v.end());
    if (v.empty()) {
      it = placed_.erase(it);
      continue;
    }
    InFlightLoad& load = loads_[it->first];
    for (const Placement& p : v) {
      ++load.apps;
      load.memory_mb += p.am_memory_mb;
    }
    ++it;
  }
  return loads_;
}

size_t InFlightLedger::size() const {
  size_t n = 0;
  for (const auto& [id, v] : placed_) n += v.size();
  return n;
}

}  // namespace weft::federation
