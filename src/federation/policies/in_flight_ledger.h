// Copyright Weft authors. In-flight placements: the homes a router chose that the sub-clusters'
// snapshots do not show yet (PolicyContext::in_flight). Without them, every submission that
// reads the same stale snapshot sees the same "least loaded" sub-cluster and goes there
// (herding). Pure: no clock, no I/O; times are the caller's arguments.
#ifndef WEFT_FEDERATION_POLICIES_IN_FLIGHT_LEDGER_H_
#define WEFT_FEDERATION_POLICIES_IN_FLIGHT_LEDGER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "federation/policies/policy.h"

namespace weft::federation {

// One caller's (one router's) placements since the snapshots it reads. A placement is shown by
// a sub-cluster's snapshot once that snapshot's heartbeat (SubClusterInfo::last_heartbeat_ms)
// is at least `settle_ms` after the placement: the submission has reached the RM by then (the
// store writes on the submission path, the forward) and the RM counts the app. Times are ms on
// one time line: the caller's clock for placements, the RMs' for heartbeats (skew between them
// is absorbed by `settle_ms`). Other routers' placements are not known here. Not thread-safe:
// the caller serialises Placed and Outstanding (a router calls both under its own lock).
class InFlightLedger {
 public:
  // `settle_ms` >= 0 (a negative value counts as 0).
  explicit InFlightLedger(int64_t settle_ms = 0) : settle_ms_(settle_ms < 0 ? 0 : settle_ms) {}

  // Records that an app whose AM container asks `am_memory_mb` (< 0 counts as 0) was homed in
  // `sub_cluster_id` at `placed_ms`.
  void Placed(absl::string_view sub_cluster_id, int64_t am_memory_mb, int64_t placed_ms);

  // Forgets the placements that `active`'s snapshots show (placed_ms + settle_ms <=
  // last_heartbeat_ms) and those in sub-clusters absent from `active` (a sub-cluster that
  // comes back brings a newer snapshot); returns the rest per sub-cluster id, for
  // PolicyContext::in_flight. Valid until the next call on this ledger.
  const InFlightLoads& Outstanding(absl::Span<const v1::SubClusterInfo> active);

  // Placements not yet forgotten, over all sub-clusters.
  size_t size() const;

 private:
  struct Placement {
    int64_t placed_ms = 0;
    int64_t am_memory_mb = 0;
  };
  int64_t settle_ms_;
  std::map<std::string, std::vector<Placement>, std::less<>> placed_;  // id -> in order placed
  InFlightLoads loads_;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_POLICIES_IN_FLIGHT_LEDGER_H_
