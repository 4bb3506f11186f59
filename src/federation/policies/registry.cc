// Copyright Weft authors. The one place that knows every federation policy.
#include "federation/policies/registry.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "federation/policies/policy_util.h"

namespace weft::federation {
namespace {

template <typename P>
using Factories = std::vector<std::pair<const char*, std::unique_ptr<P> (*)()>>;

const Factories<RouterPolicy>& RouterFactories() {
  static const auto* factories = new Factories<RouterPolicy>{
      {"uniform", internal::NewUniformRouterPolicy},
      {"hashing", internal::NewHashingRouterPolicy},
      {"weighted-random", internal::NewWeightedRandomRouterPolicy},
      {"priority", internal::NewPriorityRouterPolicy},
      {"locality", internal::NewLocalityRouterPolicy},
      {"load-based", internal::NewLoadBasedRouterPolicy},
      {"power-of-two", internal::NewPowerOfTwoRouterPolicy},
      {"reject", internal::NewRejectRouterPolicy},
  };
  return *factories;
}

const Factories<AmrmPolicy>& AmrmFactories() {
  static const auto* factories = new Factories<AmrmPolicy>{
      {"home-only", internal::NewHomeOnlyAmrmPolicy},
      {"broadcast", internal::NewBroadcastAmrmPolicy},
      {"locality-multicast", internal::NewLocalityMulticastAmrmPolicy},
  };
  return *factories;
}

template <typename P>
std::vector<std::string> NamesOf(const Factories<P>& factories) {
  std::vector<std::string> names;
  for (const auto& [name, make] : factories) names.emplace_back(name);
  return names;
}

template <typename P>
absl::StatusOr<std::unique_ptr<P>> Make(const Factories<P>& factories, absl::string_view kind,
                                        absl::string_view name) {
  for (const auto& [known, make] : factories) {
    if (name == known) return make();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown ", kind, " policy '", name, "'; known: ", absl::StrJoin(NamesOf(factories), ", ")));
}

}  // namespace

std::vector<std::string> RouterPolicyNames() { return NamesOf(RouterFactories()); }
std::vector<std::string> AmrmPolicyNames() { return NamesOf(AmrmFactories()); }

absl::StatusOr<std::unique_ptr<RouterPolicy>> MakeRouterPolicy(absl::string_view name) {
  return Make(RouterFactories(), "router", name);
}

absl::StatusOr<std::unique_ptr<AmrmPolicy>> MakeAmrmPolicy(absl::string_view name) {
  return Make(AmrmFactories(), "AMRMProxy", name);
}

v1::SubClusterPolicyConfiguration DefaultPolicyConfiguration() {
  v1::SubClusterPolicyConfiguration config;
  config.set_queue("*");
  config.set_router_policy("uniform");
  config.set_amrm_policy("home-only");
  return config;
}

}  // namespace weft::federation
