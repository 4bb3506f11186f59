// Copyright Weft authors. The federation policies by name (docs/federation.md#policies).
#ifndef WEFT_FEDERATION_POLICIES_REGISTRY_H_
#define WEFT_FEDERATION_POLICIES_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "federation/policies/policy.h"

namespace weft::federation {

// "uniform", "hashing", "weighted-random", "priority", "locality", "load-based",
// "power-of-two", "reject".
std::vector<std::string> RouterPolicyNames();
// "home-only", "broadcast", "locality-multicast".
std::vector<std::string> AmrmPolicyNames();

// InvalidArgument naming `name` and the known names when it is not one.
absl::StatusOr<std::unique_ptr<RouterPolicy>> MakeRouterPolicy(absl::string_view name);
absl::StatusOr<std::unique_ptr<AmrmPolicy>> MakeAmrmPolicy(absl::string_view name);

// (A configuration is checked by ValidatePolicyConfiguration() in store/federation_store.h,
// against kRouterPolicyNames and kAmrmPolicyNames there; registry_test checks that the two
// lists name exactly the policies registered here.)

// The configuration used when the store has none for a queue nor "*": uniform router policy,
// home-only AMRMProxy policy, no weights (every active sub-cluster weighs 1).
v1::SubClusterPolicyConfiguration DefaultPolicyConfiguration();

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_POLICIES_REGISTRY_H_
