// Copyright Weft authors. The simulator's sub-clusters (federation_model.h): what the policies
// know and when (heartbeat snapshots, caches, deferred submissions and UAM launches), apps per
// RM, and the federation figures of the report.
#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "sim/federation_model.h"

namespace weft::sim::internal {

using scheduler::AppId;

namespace {

// Population coefficient of variation (stddev / mean); 0 for an empty set or a zero mean.
template <typename T>
double Cv(const std::vector<T>& v) {
  if (v.empty()) return 0;
  double mean = 0;
  for (T x : v) mean += static_cast<double>(x);
  mean /= static_cast<double>(v.size());
  if (mean <= 0) return 0;
  double var = 0;
  for (T x : v) var += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  return std::sqrt(var / static_cast<double>(v.size())) / mean;
}

}  // namespace

void SubClusters::AdvanceTo(int64_t now_ms) {
  if (now_ms <= clock_ms_) return;
  while (!activations_.empty() && activations_.top().ready_ms <= now_ms) {
    Activation a = activations_.top();
    activations_.pop();
    Advance(a.ready_ms);
    Activate(a);
  }
  Advance(now_ms);
}

int64_t SubClusters::NextActivationMs() const {
  return activations_.empty() ? -1 : activations_.top().ready_ms;
}

std::vector<std::pair<AppId, absl::Status>> SubClusters::TakeFailedActivations() {
  return std::exchange(failed_activations_, {});
}

void SubClusters::Advance(int64_t to_ms) {
  if (to_ms <= clock_ms_) return;
  const double dt = static_cast<double>(to_ms - clock_ms_);
  int64_t held = 0;
  for (size_t s = 0; s < subs_.size(); ++s) {
    apps_integral_[s] += dt * static_cast<double>(apps_live_[s]);
    held += apps_live_[s];
  }
  if (federated() && held > 0) {
    apps_cv_integral_ += dt * Cv(apps_live_);
    homed_cv_integral_ += dt * Cv(homed_live_);
    cv_time_ms_ += dt;
  }
  // Heartbeats in (clock, to]: the state has not changed since `clock` (events change it at
  // their own time, after AdvanceTo), so each publishes the current load, stamped with the
  // latest heartbeat time of its sub-cluster.
  const int64_t hb = o_.federation.heartbeat_ms;
  if (federated() && hb > 0) {
    const int n = size();
    for (int s = 0; s < n; ++s) {
      const int64_t offset = static_cast<int64_t>(s) * hb / n;
      if (to_ms < offset) continue;
      const int64_t last = offset + (to_ms - offset) / hb * hb;
      if (last > clock_ms_) store_[static_cast<size_t>(s)] = LiveInfo(s, last);
    }
  }
  clock_ms_ = to_ms;
}

const std::vector<v1::SubClusterInfo>& SubClusters::Read(CachedView& view) {
  const int64_t ttl = o_.federation.cache_ttl_ms;
  if (ttl > 0 && view.loaded_ms >= 0 && clock_ms_ < view.loaded_ms + ttl) return view.infos;
  // (Re)load from the store: the last heartbeats, or the live load when heartbeats are off.
  if (o_.federation.heartbeat_ms > 0) {
    view.infos = store_;
  } else {
    view.infos.clear();
    for (int s = 0; s < size(); ++s) view.infos.push_back(LiveInfo(s, clock_ms_));
  }
  view.loaded_ms = clock_ms_;
  return view.infos;
}

void SubClusters::Activate(const Activation& a) {
  auto it = apps_.find(a.app);
  if (it == apps_.end() || it->second.epoch != a.epoch) return;  // removed, or resubmitted
  AppFed& fed = it->second;
  const int s = a.sub;
  if (fed.ready_ms[s] != a.ready_ms) return;
  if (s == fed.home && !fed.added[s]) {
    // The submission reaches the home RM.
    absl::Status st = TimedOn(s, [&] { return subs_[s]->AddApp(fed.spec, a.ready_ms); });
    if (!st.ok()) {
      failed_activations_.emplace_back(
          a.app, absl::Status(st.code(), absl::StrCat("home ", SubId(s), ": ", st.message())));
      apps_.erase(it);
      return;
    }
    fed.added[s] = 1;
    AppJoined(s, /*homed=*/true);
  }
  scheduler::RequestUpdate part;
  for (auto& [key, rr] : fed.held[s]) part.asks.push_back(std::move(rr));
  fed.held[s].clear();
  if (part.asks.empty()) return;
  absl::Status st = TimedOn(s, [&] { return subs_[s]->UpdateRequests(a.app, part); });
  if (!st.ok()) {
    failed_activations_.emplace_back(
        a.app, absl::Status(st.code(), absl::StrCat(SubId(s), ": ", st.message())));
  }
}

absl::Status SubClusters::SendOrHold(AppFed& fed, AppId app, int sub,
                                     scheduler::RequestUpdate part) {
  if (fed.added[sub] && fed.ready_ms[sub] <= clock_ms_) {
    return TimedOn(sub, [&] { return subs_[sub]->UpdateRequests(app, part); });
  }
  // Absolute counts: the latest ask per row replaces what is held for it.
  for (scheduler::ResourceRequest& rr : part.asks) {
    AskKey key{rr.allocation_request_id, rr.priority, rr.resource_name};
    fed.held[sub][key] = std::move(rr);
  }
  return absl::OkStatus();
}

void SubClusters::AppJoined(int sub, bool homed) {
  auto s = static_cast<size_t>(sub);
  ++apps_live_[s];
  if (homed) ++homed_live_[s];
  apps_peak_[s] = std::max(apps_peak_[s], apps_live_[s]);
}

void SubClusters::AppLeft(int sub, bool homed) {
  auto s = static_cast<size_t>(sub);
  apps_live_[s] = std::max<int64_t>(0, apps_live_[s] - 1);
  if (homed) homed_live_[s] = std::max<int64_t>(0, homed_live_[s] - 1);
}

void SubClusters::Account(int64_t dt_ms, const std::vector<int>& types) {
  for (size_t s = 0; s < subs_.size(); ++s) {
    util_[s].resize(types.size(), 0);
    const Resource used = subs_[s]->cluster_allocated();
    const Resource& total = subs_[s]->cluster_total();
    for (size_t i = 0; i < types.size(); ++i) {
      int t = types[i];
      if (total[t] > 0) {
        util_[s][i] += static_cast<double>(dt_ms) * static_cast<double>(used[t]) /
                       static_cast<double>(total[t]);
      }
    }
  }
}

void SubClusters::FillReport(double span_ms, double monolithic_wall_s, SimReport* r) const {
  if (federated()) {
    r->router_policy = std::string(router_->name());
    r->amrm_policy = std::string(amrm_->name());
  }
  r->sub_clusters.clear();
  r->scheduler_wall_sum_s = r->scheduler_wall_max_s = 0;
  for (size_t s = 0; s < subs_.size(); ++s) {
    SubClusterResult sc;
    sc.id = sub_ids_[s];
    sc.nodes = sub_nodes_[s];
    for (double x : util_[s]) sc.utilization_mean.push_back(x / span_ms);
    sc.utilization_mean.resize(r->utilization_types.size(), 0);
    sc.scheduler_wall_s = federated() ? wall_s_[s] : monolithic_wall_s;
    sc.allocations = subs_[s]->stats().allocations;
    sc.apps_homed = homes_[s];
    sc.uams = uams_[s];
    sc.apps_peak = apps_peak_[s];
    sc.apps_mean = span_ms > 0 ? apps_integral_[s] / span_ms : 0;
    r->scheduler_wall_sum_s += sc.scheduler_wall_s;
    r->scheduler_wall_max_s = std::max(r->scheduler_wall_max_s, sc.scheduler_wall_s);
    r->sub_clusters.push_back(std::move(sc));
  }
  if (federated()) {
    r->federation_wall_s = std::max(0.0, monolithic_wall_s - r->scheduler_wall_sum_s);
    r->scheduler_wall_s = r->scheduler_wall_sum_s;
  }
  r->federation = o_.federation;
  r->apps_cv_over_time = cv_time_ms_ > 0 ? apps_cv_integral_ / cv_time_ms_ : 0;
  r->homed_apps_cv_over_time = cv_time_ms_ > 0 ? homed_cv_integral_ / cv_time_ms_ : 0;
  r->jobs_spanning = 0;
  for (const auto& [app, fp] : footprint_) r->jobs_spanning += fp.second ? 1 : 0;
}

}  // namespace weft::sim::internal
