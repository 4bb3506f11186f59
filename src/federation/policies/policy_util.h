// Copyright Weft authors. Helpers shared by the federation policies (internal to this folder).
#ifndef WEFT_FEDERATION_POLICIES_POLICY_UTIL_H_
#define WEFT_FEDERATION_POLICIES_POLICY_UTIL_H_

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "federation/policies/policy.h"

namespace weft::federation::internal {

// The weight of `id` in `weights` as SubClusterPolicyConfiguration defines it: an empty map
// weighs everyone 1, an id absent from a non-empty map weighs 0. Negative or NaN weights
// (refused by the store's validation) count as 0.
double WeightOf(const google::protobuf::Map<std::string, double>& weights, absl::string_view id);
double RouterWeight(const PolicyContext& ctx, absl::string_view id);
double AmrmWeight(const PolicyContext& ctx, absl::string_view id);

// The active sub-clusters of `ctx` that are not in `exclude` and have router weight > 0,
// ordered by id.
std::vector<const v1::SubClusterInfo*> RouterCandidates(const PolicyContext& ctx,
                                                        absl::Span<const std::string> exclude);

// A uniform draw in [0, 1) from `rng`, the same on every platform (std's distributions are not).
double Uniform01(std::mt19937_64& rng);

// Picks one of `candidates` with probability proportional to its router weight. Unavailable
// naming the queue when the weights sum to 0 (or there are no candidates).
absl::StatusOr<std::string> PickWeighted(const PolicyContext& ctx,
                                         absl::Span<const v1::SubClusterInfo* const> candidates,
                                         absl::string_view queue);

// Unavailable naming the queue and why nothing could be chosen.
absl::Status NothingToChoose(absl::string_view queue, absl::string_view why);

// memory-mb of `r` (0 when absent).
int64_t MemoryMb(const v1::Resource& r);

// The memory-mb placed on `info`'s sub-cluster that its snapshot does not show yet
// (ctx.in_flight; 0 when the caller tracks none): each in-flight app counts at least its AM
// container and at least the snapshot's mean memory-mb per app (used / (apps_running +
// apps_pending)), since an app grows past its AM once it runs. The sum of the two bounds'
// larger one: max(AM memory summed, apps x mean).
int64_t InFlightMemoryMb(const PolicyContext& ctx, const v1::SubClusterInfo& info);

// A stable 64-bit FNV-1a hash (not std::hash: the same on every build).
uint64_t StableHash(absl::string_view s);

// Splits `total` into integer parts proportional to `shares` (>= 0, not all 0) that sum to
// `total` exactly: floors first, then the largest remainders get one more each, ties to the
// lower index. All 0 shares, or total <= 0: everything to index 0.
std::vector<int64_t> LargestRemainderSplit(int64_t total, absl::Span<const double> shares);

// The policies, registered by name in registry.cc.
std::unique_ptr<RouterPolicy> NewUniformRouterPolicy();
std::unique_ptr<RouterPolicy> NewHashingRouterPolicy();
std::unique_ptr<RouterPolicy> NewWeightedRandomRouterPolicy();
std::unique_ptr<RouterPolicy> NewPriorityRouterPolicy();
std::unique_ptr<RouterPolicy> NewLocalityRouterPolicy();
std::unique_ptr<RouterPolicy> NewLoadBasedRouterPolicy();
std::unique_ptr<RouterPolicy> NewPowerOfTwoRouterPolicy();
std::unique_ptr<RouterPolicy> NewRejectRouterPolicy();
std::unique_ptr<AmrmPolicy> NewHomeOnlyAmrmPolicy();
std::unique_ptr<AmrmPolicy> NewBroadcastAmrmPolicy();
std::unique_ptr<AmrmPolicy> NewLocalityMulticastAmrmPolicy();

}  // namespace weft::federation::internal

#endif  // WEFT_FEDERATION_POLICIES_POLICY_UTIL_H_
