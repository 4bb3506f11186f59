// Copyright Weft authors. Federation policies (seed 004): where the router homes an app, and
// how the AMRMProxy splits an AM's asks across sub-clusters. Pure: no clock, no I/O, no
// threads; randomness comes from the caller's generator so that runs replay. Named plug-ins
// (policies/registry.h), each with its own tests and the shared conformance suite, like the
// scheduler's policies.
#ifndef WEFT_FEDERATION_POLICIES_POLICY_H_
#define WEFT_FEDERATION_POLICIES_POLICY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "weft/v1/common.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

// Which sub-cluster a node belongs to, and which sub-clusters a rack spans (YARN's
// SubClusterResolver). Built from a machine list or from the sub-clusters' node lists.
class SubClusterResolver {
 public:
  // Parses YARN's machine list: one "node,sub-cluster,rack" per line (spaces around fields
  // ignored, rack names case-insensitive, blank lines and '#' comments skipped).
  // InvalidArgument naming the line number for a malformed line or a node listed twice.
  static absl::StatusOr<SubClusterResolver> FromMachineList(absl::string_view text);

  // Adds or moves a node (a host name; a ":port" suffix is dropped). Not validated: callers
  // that take the list from outside use FromMachineList.
  void AddNode(absl::string_view node, absl::string_view sub_cluster_id, absl::string_view rack);
  // The sub-cluster of `node` (a host name; "host:port" is looked up by its host), or nullopt.
  std::optional<std::string> SubClusterForNode(absl::string_view node) const;
  // The sub-clusters that have nodes in `rack` ("/rack1" or "rack1"), ordered by id.
  std::vector<std::string> SubClustersForRack(absl::string_view rack) const;
  size_t num_nodes() const { return node_to_sub_cluster_.size(); }

 private:
  std::map<std::string, std::string, std::less<>> node_to_sub_cluster_;  // host -> id
  std::map<std::string, std::string, std::less<>> node_to_rack_;         // host -> rack key
  // Rack key (lower case, no leading '/') -> sub-cluster id -> its nodes in that rack.
  std::map<std::string, std::map<std::string, int>, std::less<>> rack_to_sub_clusters_;
};

// Load that a caller (one router) placed on a sub-cluster and that the sub-cluster's snapshot
// in PolicyContext::active does not show yet: homes it chose after that snapshot's heartbeat
// (in-flight placements; InFlightLedger in policies/in_flight_ledger.h keeps them).
struct InFlightLoad {
  int64_t apps = 0;       // apps homed there since the snapshot
  int64_t memory_mb = 0;  // the memory-mb of their AM containers, summed
};
// Sub-cluster id -> its in-flight load. Ids absent: nothing in flight there.
using InFlightLoads = std::map<std::string, InFlightLoad, std::less<>>;

// What a policy decides over. `active` holds the sub-clusters that may be chosen: RUNNING,
// heard from within the membership expiry, not excluded; ordered by id. Never empty when a
// policy is called (callers answer "no active sub-cluster" themselves). Each entry is a
// snapshot: the sub-cluster's load as of its last heartbeat (last_heartbeat_ms), possibly
// older still when the caller caches the membership.
struct PolicyContext {
  const v1::SubClusterPolicyConfiguration* config = nullptr;  // the queue's (or "*")
  std::vector<v1::SubClusterInfo> active;
  const SubClusterResolver* resolver = nullptr;  // may be null: no locality information
  std::mt19937_64* rng = nullptr;                // never null
  // Optional: what this caller placed since the snapshots in `active` were taken. Load-aware
  // policies (load-based) count it as load the snapshots do not show, so that a burst of
  // submissions read against one stale snapshot does not all go to the same sub-cluster
  // (herding). Null: the caller tracks nothing; the snapshots are taken as they are.
  const InFlightLoads* in_flight = nullptr;
};

// Chooses an application's home sub-cluster (YARN's FederationRouterPolicy).
class RouterPolicy {
 public:
  virtual ~RouterPolicy() = default;
  virtual absl::string_view name() const = 0;
  // The home for `app` among `ctx.active`. Errors: PermissionDenied for `reject` (naming the
  // queue), Unavailable when every active sub-cluster has weight 0 or none can hold the AM.
  // `exclude`: sub-clusters not to choose (e.g. the lost home of a resubmitted app).
  virtual absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                                 const PolicyContext& ctx,
                                                 absl::Span<const std::string> exclude) const = 0;
};

// How the AMRMProxy splits an AM's asks (YARN's FederationAMRMProxyPolicy).
class AmrmPolicy {
 public:
  virtual ~AmrmPolicy() = default;
  virtual absl::string_view name() const = 0;
  // Splits the AM's outstanding asks (YARN's absolute counts; the asks of this Allocate,
  // after the interceptor merged them into its table) into asks per sub-cluster id.
  // `home`: the app's home sub-cluster (always in the result's key set, possibly with no asks).
  // `headroom`: each sub-cluster's latest headroom as its RM reported it to this app (absent:
  // not heard yet). A sub-cluster absent from the result gets no asks; the caller cancels what
  // it asked there before. The counts of an ask split over sub-clusters sum to its own.
  virtual absl::StatusOr<std::map<std::string, std::vector<v1::ResourceRequest>>>
  SplitResourceRequests(absl::Span<const v1::ResourceRequest> asks, absl::string_view home,
                        const std::map<std::string, v1::Resource>& headroom,
                        const PolicyContext& ctx) const = 0;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_POLICIES_POLICY_H_
