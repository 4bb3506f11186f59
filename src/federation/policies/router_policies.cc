// Copyright Weft authors. The router policies (YARN's FederationRouterPolicy implementations).
// Every policy chooses among RouterCandidates(): active, not excluded, router weight > 0.
#include <string>

#include "absl/strings/str_cat.h"
#include "federation/policies/policy_util.h"

namespace weft::federation::internal {
namespace {

using Candidates = std::vector<const v1::SubClusterInfo*>;

// YARN's UniformRandomRouterPolicy: every candidate equally likely (weights only exclude).
class UniformRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "uniform"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    if (c.empty()) return NothingToChoose(app.queue(), "no eligible sub-cluster");
    size_t i = static_cast<size_t>(Uniform01(*ctx.rng) * static_cast<double>(c.size()));
    return c[std::min(i, c.size() - 1)]->sub_cluster_id();
  }
};

// YARN's HashBasedRouterPolicy: a stable hash of the queue over the candidates ordered by id,
// so a queue keeps its home while the membership is unchanged.
class HashingRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "hashing"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    if (c.empty()) return NothingToChoose(app.queue(), "no eligible sub-cluster");
    return c[StableHash(app.queue()) % c.size()]->sub_cluster_id();
  }
};

// YARN's WeightedRandomRouterPolicy: probability proportional to router weight.
class WeightedRandomRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "weighted-random"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    return PickWeighted(ctx, RouterCandidates(ctx, exclude), app.queue());
  }
};

// YARN's PriorityRouterPolicy: the highest router weight; ties to the lowest id.
class PriorityRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "priority"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    if (c.empty()) return NothingToChoose(app.queue(), "no eligible sub-cluster");
    const v1::SubClusterInfo* best = c.front();  // c is ordered by id: '>' keeps the lowest
    for (const v1::SubClusterInfo* info : c) {
      if (RouterWeight(ctx, info->sub_cluster_id()) > RouterWeight(ctx, best->sub_cluster_id())) {
        best = info;
      }
    }
    return best->sub_cluster_id();
  }
};

// YARN's LocalityRouterPolicy: the candidate owning the first of app.preferred_nodes() the
// resolver knows (a host's sub-cluster, or for a rack a weighted draw among the candidates
// with nodes in it); entries that resolve to no candidate are skipped. Falls back to
// weighted-random.
class LocalityRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "locality"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    auto candidate = [&](absl::string_view id) -> const v1::SubClusterInfo* {
      for (const v1::SubClusterInfo* info : c) {
        if (info->sub_cluster_id() == id) return info;
      }
      return nullptr;
    };
    if (ctx.resolver != nullptr) {
      for (const std::string& where : app.preferred_nodes()) {
        if (std::optional<std::string> sc = ctx.resolver->SubClusterForNode(where)) {
          if (candidate(*sc) != nullptr) return *sc;
          continue;
        }
        Candidates in_rack;
        for (const std::string& id : ctx.resolver->SubClustersForRack(where)) {
          if (const v1::SubClusterInfo* info = candidate(id)) in_rack.push_back(info);
        }
        if (!in_rack.empty()) return PickWeighted(ctx, in_rack, app.queue());
      }
    }
    return PickWeighted(ctx, c, app.queue());
  }
};

// YARN's LoadBasedRouterPolicy: the candidate with the most available memory-mb as of its
// last heartbeat, less what this caller placed there since (ctx.in_flight, when the caller
// tracks it: InFlightMemoryMb); ties to the lowest id. Without in-flight accounting every
// submission read against the same snapshot goes to the same sub-cluster.
class LoadBasedRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "load-based"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    if (c.empty()) return NothingToChoose(app.queue(), "no eligible sub-cluster");
    auto free_mb = [&](const v1::SubClusterInfo* info) {
      return MemoryMb(info->available()) - InFlightMemoryMb(ctx, *info);
    };
    const v1::SubClusterInfo* best = c.front();
    int64_t best_free = free_mb(best);
    for (const v1::SubClusterInfo* info : c) {
      int64_t f = free_mb(info);
      if (f > best_free) {
        best = info;
        best_free = f;
      }
    }
    return best->sub_cluster_id();
  }
};

// The power of two choices (Mitzenmacher; Sparrow's probes): two distinct candidates drawn by
// router weight, and the home the one with more available memory-mb (less in-flight
// placements, as load-based); a tie goes to the first drawn. Not in YARN. Several routers
// whose load snapshots are equally stale, each knowing only its own in-flight placements, do
// not all choose the one sub-cluster that looks least loaded (load-based's herd): the most
// loaded of the candidates is never chosen, and the others in proportion to how often they
// win a pair.
class PowerOfTwoRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "power-of-two"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext& ctx,
                                         absl::Span<const std::string> exclude) const override {
    Candidates c = RouterCandidates(ctx, exclude);
    if (c.empty()) return NothingToChoose(app.queue(), "no eligible sub-cluster");
    absl::StatusOr<std::string> first = PickWeighted(ctx, c, app.queue());
    if (!first.ok() || c.size() == 1) return first;
    Candidates rest;
    const v1::SubClusterInfo* one = nullptr;
    for (const v1::SubClusterInfo* info : c) {
      if (info->sub_cluster_id() == *first) {
        one = info;
      } else {
        rest.push_back(info);
      }
    }
    absl::StatusOr<std::string> second = PickWeighted(ctx, rest, app.queue());
    if (!second.ok() || one == nullptr) return first;
    const v1::SubClusterInfo* two = nullptr;
    for (const v1::SubClusterInfo* info : rest)
      if (info->sub_cluster_id() == *second) two = info;
    if (two == nullptr) return first;
    auto free_mb = [&](const v1::SubClusterInfo* info) {
      return MemoryMb(info->available()) - InFlightMemoryMb(ctx, *info);
    };
    return free_mb(two) > free_mb(one) ? *second : *first;
  }
};

// YARN's RejectRouterPolicy: refuses every submission to the queue.
class RejectRouterPolicy final : public RouterPolicy {
 public:
  absl::string_view name() const override { return "reject"; }
  absl::StatusOr<std::string> ChooseHome(const v1::ApplicationSubmissionContext& app,
                                         const PolicyContext&,
                                         absl::Span<const std::string>) const override {
    return absl::PermissionDeniedError(absl::StrCat(
        "queue '", app.queue(), "' does not accept applications: its router policy is reject"));
  }
};

}  // namespace

std::unique_ptr<RouterPolicy> NewUniformRouterPolicy() {
  return std::make_unique<UniformRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewHashingRouterPolicy() {
  return std::make_unique<HashingRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewWeightedRandomRouterPolicy() {
  return std::make_unique<WeightedRandomRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewPriorityRouterPolicy() {
  return std::make_unique<PriorityRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewLocalityRouterPolicy() {
  return std::make_unique<LocalityRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewLoadBasedRouterPolicy() {
  return std::make_unique<LoadBasedRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewPowerOfTwoRouterPolicy() {
  return std::make_unique<PowerOfTwoRouterPolicy>();
}
std::unique_ptr<RouterPolicy> NewRejectRouterPolicy() {
  return std::make_unique<RejectRouterPolicy>();
}

}  // namespace weft::federation::internal
