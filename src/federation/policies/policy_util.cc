// Copyright Weft authors.
#include "federation/policies/policy_util.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace weft::federation::internal {

double WeightOf(const google::protobuf::Map<std::string, double>& weights, absl::string_view id) {
  if (weights.empty()) return 1.0;
  auto it = weights.find(std::string(id));
  if (it == weights.end() || !(it->second > 0) || !std::isfinite(it->second)) return 0.0;
  return it->second;
}

double RouterWeight(const PolicyContext& ctx, absl::string_view id) {
  return ctx.config == nullptr ? 1.0 : WeightOf(ctx.config->router_weights(), id);
}

double AmrmWeight(const PolicyContext& ctx, absl::string_view id) {
  return ctx.config == nullptr ? 1.0 : WeightOf(ctx.config->amrm_weights(), id);
}

std::vector<const v1::SubClusterInfo*> RouterCandidates(const PolicyContext& ctx,
                                                        absl::Span<const std::string> exclude) {
  std::vector<const v1::SubClusterInfo*> out;
  for (const v1::SubClusterInfo& info : ctx.active) {
    if (std::find(exclude.begin(), exclude.end(), info.sub_cluster_id()) != exclude.end()) {
      continue;
    }
    if (RouterWeight(ctx, info.sub_cluster_id()) <= 0) continue;
    out.push_back(&info);
  }
  std::sort(out.begin(), out.end(), [](const v1::SubClusterInfo* a, const v1::SubClusterInfo* b) {
    return a->sub_cluster_id() < b->sub_cluster_id();
  });
  return out;
}

double Uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

absl::StatusOr<std::string> PickWeighted(const PolicyContext& ctx,
                                         absl::Span<const v1::SubClusterInfo* const> candidates,
                                         absl::string_view queue) {
  double total = 0;
  for (const v1::SubClusterInfo* c : candidates) total += RouterWeight(ctx, c->sub_cluster_id());
  if (candidates.empty() || total <= 0) {
    return NothingToChoose(queue, "no active, non-excluded sub-cluster has router weight > 0");
  }
  double x = Uniform01(*ctx.rng) * total;
  for (const v1::SubClusterInfo* c : candidates) {
    double w = RouterWeight(ctx, c->sub_cluster_id());
    if (w <= 0) continue;
    if (x < w) return c->sub_cluster_id();
    x -= w;
  }
  // Rounding left x at the very top: the last candidate with weight > 0.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it) {
    if (RouterWeight(ctx, (*it)->sub_cluster_id()) > 0) return (*it)->sub_cluster_id();
  }
  return NothingToChoose(queue, "no sub-cluster has router weight > 0");
}

absl::Status NothingToChoose(absl::string_view queue, absl::string_view why) {
  return absl::UnavailableError(
      absl::StrCat("no home sub-cluster for an app of queue '", queue, "': ", why));
}

int64_t MemoryMb(const v1::Resource& r) {
  auto it = r.values().find("memory-mb");
  return it == r.values().end() ? 0 : it->second;
}

int64_t InFlightMemoryMb(const PolicyContext& ctx, const v1::SubClusterInfo& info) {
  if (ctx.in_flight == nullptr) return 0;
  auto it = ctx.in_flight->find(info.sub_cluster_id());
  if (it == ctx.in_flight->end() || it->second.apps <= 0) return 0;
  const int64_t apps = static_cast<int64_t>(info.apps_running()) + info.apps_pending();
  const int64_t mean = apps > 0 ? std::max<int64_t>(0, MemoryMb(info.used())) / apps : 0;
  return std::max(std::max<int64_t>(0, it->second.memory_mb), it->second.apps * mean);
}

uint64_t StableHash(absl::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<int64_t> LargestRemainderSplit(int64_t total, absl::Span<const double> shares) {
  std::vector<int64_t> parts(shares.size(), 0);
  if (shares.empty()) return parts;
  if (total <= 0) {  // nothing to split (a cancelled ask), or a bad count kept as is
    parts[0] = total;
    return parts;
  }
  double sum = 0;
  for (double s : shares) sum += std::max(0.0, s);
  if (!(sum > 0)) {
    parts[0] = total;
    return parts;
  }
  std::vector<double> remainder(shares.size());
  int64_t given = 0;
  for (size_t i = 0; i < shares.size(); ++i) {
    double exact = static_cast<double>(total) * std::max(0.0, shares[i]) / sum;
    parts[i] = static_cast<int64_t>(std::floor(exact));
    remainder[i] = exact - static_cast<double>(parts[i]);
    given += parts[i];
  }
  std::vector<size_t> order(shares.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  // Floating point may leave given a little off either way; correct it in remainder order.
  for (size_t k = 0; given < total; k = (k + 1) % order.size()) {
    if (shares[order[k]] <= 0) continue;
    ++parts[order[k]];
    ++given;
  }
  for (size_t k = order.size(); given > total;) {
    k = (k == 0 ? order.size() : k) - 1;
    if (parts[order[k]] == 0) continue;
    --parts[order[k]];
    --given;
  }
  return parts;
}

}  // namespace weft::federation::internal
