// Copyright Weft authors. The AMRMProxy policies (YARN's FederationAMRMProxyPolicy
// implementations): home-only, broadcast and locality-multicast.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "federation/policies/policy_util.h"

namespace weft::federation::internal {
namespace {

using Split = std::map<std::string, std::vector<v1::ResourceRequest>>;

bool IsActive(const PolicyContext& ctx, absl::string_view id) {
  return std::any_of(ctx.active.begin(), ctx.active.end(),
                     [&](const v1::SubClusterInfo& i) { return i.sub_cluster_id() == id; });
}

// YARN's HomeAMRMProxyPolicy: every ask to the home. Unavailable when the home is not active.
class HomeOnlyAmrmPolicy final : public AmrmPolicy {
 public:
  absl::string_view name() const override { return "home-only"; }
  absl::StatusOr<Split> SplitResourceRequests(absl::Span<const v1::ResourceRequest> asks,
                                              absl::string_view home,
                                              const std::map<std::string, v1::Resource>&,
                                              const PolicyContext& ctx) const override {
    if (!IsActive(ctx, home)) {
      return absl::UnavailableError(
          absl::StrCat("home-only: the home sub-cluster '", home, "' is not active"));
    }
    Split out;
    out[std::string(home)].assign(asks.begin(), asks.end());
    return out;
  }
};

// YARN's BroadcastAMRMProxyPolicy: every ask, whole, to every active sub-cluster (and to the
// home). The only policy whose parts do not sum to the ask: the app may be offered up to
// (number of sub-clusters) times what it asked for and releases the excess.
class BroadcastAmrmPolicy final : public AmrmPolicy {
 public:
  absl::string_view name() const override { return "broadcast"; }
  absl::StatusOr<Split> SplitResourceRequests(absl::Span<const v1::ResourceRequest> asks,
                                              absl::string_view home,
                                              const std::map<std::string, v1::Resource>&,
                                              const PolicyContext& ctx) const override {
    Split out;
    out[std::string(home)].assign(asks.begin(), asks.end());
    for (const v1::SubClusterInfo& info : ctx.active) {
      out[info.sub_cluster_id()].assign(asks.begin(), asks.end());
    }
    return out;
  }
};

// The asks YARN keeps one absolute count for, without the resource name.
struct GroupKey {
  int32_t priority;
  int64_t allocation_request_id;
  std::vector<std::pair<std::string, int64_t>> capability;  // sorted by name
  auto operator<=>(const GroupKey&) const = default;
};

GroupKey KeyOf(const v1::ResourceRequest& rr) {
  GroupKey key{rr.priority(), rr.allocation_request_id(), {}};
  for (const auto& [name, value] : rr.capability().values())
    key.capability.emplace_back(name, value);
  std::sort(key.capability.begin(), key.capability.end());
  return key;
}

// YARN's LocalityMulticastAMRMProxyPolicy (see SplitResourceRequests below).
class LocalityMulticastAmrmPolicy final : public AmrmPolicy {
 public:
  absl::string_view name() const override { return "locality-multicast"; }

  // - A node ask goes, whole, to the active sub-cluster owning the node; an unknown node, or
  //   one of an inactive sub-cluster, to the home.
  // - A rack ask goes, whole, to every active sub-cluster with nodes in the rack (YARN: racks
  //   may be striped over sub-clusters; each one's `*` share bounds what it allocates); an
  //   unknown rack to the home.
  // - A `*` ask is split so that its parts sum exactly to it (largest remainder), every part
  //   (0 included) sent so that earlier absolute counts elsewhere are replaced:
  //   * with node asks in its group (same priority, allocation id and capability; rack asks
  //     when there are none) it follows them, in proportion to their counts (YARN's
  //     locality-aware split). With relax_locality it follows only sub-clusters of amrm weight
  //     > 0 (none left: as below); without, it follows them whatever their weight;
  //   * otherwise over the active sub-clusters of amrm weight > 0 in proportion to
  //     alpha * headroom share + (1 - alpha) * weight share, alpha = headroom_alpha, headroom
  //     in memory-mb from `headroom`, else the sub-cluster's reported `available`, else the
  //     mean of the known ones; ties to the home, then by id. No such sub-cluster: the home.
  absl::StatusOr<Split> SplitResourceRequests(absl::Span<const v1::ResourceRequest> asks,
                                              absl::string_view home_view,
                                              const std::map<std::string, v1::Resource>& headroom,
                                              const PolicyContext& ctx) const override {
    const std::string home(home_view);
    Split out;
    out[home];
    // Per group: node-level and rack-level counts per target sub-cluster.
    std::map<GroupKey, std::map<std::string, double>> node_counts;
    std::map<GroupKey, std::map<std::string, double>> rack_counts;
    std::vector<const v1::ResourceRequest*> any_asks;
    for (const v1::ResourceRequest& rr : asks) {
      const std::string& where = rr.resource_name();
      if (where == "*") {
        any_asks.push_back(&rr);
        continue;
      }
      GroupKey key = KeyOf(rr);
      std::optional<std::string> owner =
          ctx.resolver == nullptr ? std::nullopt : ctx.resolver->SubClusterForNode(where);
      if (owner.has_value()) {
        std::string target = IsActive(ctx, *owner) ? *owner : home;
        out[target].push_back(rr);
        node_counts[key][target] += rr.num_containers();
        continue;
      }
      std::vector<std::string> owners;
      if (ctx.resolver != nullptr) {
        for (std::string& id : ctx.resolver->SubClustersForRack(where)) {
          if (IsActive(ctx, id)) owners.push_back(std::move(id));
        }
      }
      if (owners.empty()) {
        out[home].push_back(rr);
        // Unknown: a rack when it looks like one ("/rack"), else a node.
        (absl::StartsWith(where, "/") ? rack_counts : node_counts)[key][home] +=
            rr.num_containers();
        continue;
      }
      for (const std::string& id : owners) {
        out[id].push_back(rr);
        rack_counts[key][id] += static_cast<double>(rr.num_containers()) / owners.size();
      }
    }

    const std::vector<std::pair<std::string, double>> blend = BlendShares(home, headroom, ctx);
    for (const v1::ResourceRequest* rr : any_asks) {
      GroupKey key = KeyOf(*rr);
      const std::map<std::string, double>* local = nullptr;
      if (auto it = node_counts.find(key); it != node_counts.end()) {
        local = &it->second;
      } else if (auto it2 = rack_counts.find(key); it2 != rack_counts.end()) {
        local = &it2->second;
      }
      std::vector<std::pair<std::string, double>> shares;
      if (local != nullptr) {
        for (const auto& [id, count] : *local) {
          if (!rr->relax_locality() || AmrmWeight(ctx, id) > 0) shares.emplace_back(id, count);
        }
        OrderHomeFirst(home, shares);
      }
      if (shares.empty()) shares = blend;
      if (shares.empty()) shares.emplace_back(home, 1.0);

      std::vector<double> weights;
      for (const auto& [id, share] : shares) weights.push_back(share);
      std::vector<int64_t> parts = LargestRemainderSplit(rr->num_containers(), weights);
      // Every sub-cluster that may hold an earlier count of this ask gets its new one.
      std::map<std::string, int64_t> count_of;
      for (size_t i = 0; i < shares.size(); ++i) count_of[shares[i].first] += parts[i];
      for (const auto& [id, share] : blend) count_of.try_emplace(id, 0);
      for (const auto& [id, unused] : out) count_of.try_emplace(id, 0);
      for (const auto& [id, count] : count_of) {
        v1::ResourceRequest part = *rr;
        part.set_num_containers(static_cast<int32_t>(count));
        out[id].push_back(std::move(part));
      }
    }
    return out;
  }

 private:
  static void OrderHomeFirst(const std::string& home,
                             std::vector<std::pair<std::string, double>>& shares) {
    std::stable_sort(shares.begin(), shares.end(), [&](const auto& a, const auto& b) {
      return (a.first == home) > (b.first == home);
    });
  }

  // The blended shares of the active sub-clusters with amrm weight > 0, home first, then by
  // id; empty when there are none.
  static std::vector<std::pair<std::string, double>> BlendShares(
      const std::string& home, const std::map<std::string, v1::Resource>& headroom,
      const PolicyContext& ctx) {
    std::vector<std::pair<std::string, double>> shares;
    std::vector<double> room;  // memory-mb; < 0: unknown
    double weight_sum = 0;
    for (const v1::SubClusterInfo& info : ctx.active) {
      double w = AmrmWeight(ctx, info.sub_cluster_id());
      if (w <= 0) continue;
      shares.emplace_back(info.sub_cluster_id(), w);
      weight_sum += w;
      if (auto it = headroom.find(info.sub_cluster_id()); it != headroom.end()) {
        room.push_back(static_cast<double>(std::max<int64_t>(0, MemoryMb(it->second))));
      } else if (info.has_available()) {
        room.push_back(static_cast<double>(std::max<int64_t>(0, MemoryMb(info.available()))));
      } else {
        room.push_back(-1);
      }
    }
    if (shares.empty()) return shares;
    double known_sum = 0;
    int known = 0;
    for (double r : room) {
      if (r >= 0) {
        known_sum += r;
        ++known;
      }
    }
    for (double& r : room) {
      if (r < 0) r = known > 0 ? known_sum / known : 1.0;
    }
    double room_sum = 0;
    for (double r : room) room_sum += r;
    double alpha = ctx.config == nullptr ? 0.0 : std::clamp(ctx.config->headroom_alpha(), 0.0, 1.0);
    for (size_t i = 0; i < shares.size(); ++i) {
      double room_share = room_sum > 0 ? room[i] / room_sum : 1.0 / shares.size();
      shares[i].second = alpha * room_share + (1 - alpha) * shares[i].second / weight_sum;
    }
    OrderHomeFirst(home, shares);
    return shares;
  }
};

}  // namespace

std::unique_ptr<AmrmPolicy> NewHomeOnlyAmrmPolicy() {
  return std::make_unique<HomeOnlyAmrmPolicy>();
}
std::unique_ptr<AmrmPolicy> NewBroadcastAmrmPolicy() {
  return std::make_unique<BroadcastAmrmPolicy>();
}
std::unique_ptr<AmrmPolicy> NewLocalityMulticastAmrmPolicy() {
  return std::make_unique<LocalityMulticastAmrmPolicy>();
}

}  // namespace weft::federation::internal
