// Copyright Weft authors. The scheduler core: entitlements and preemption.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_internal.h"

namespace weft::scheduler {

// ---------------------------------------------------------------------------------------------
// Entitlements and preemption

void Scheduler::RefreshEntitlements() {
  root_->entitlement = view_.total;
  for (QueueNode* q : queue_list_) {
    if (!q->is_leaf()) WaterFill(q);
  }
}

// Splits parent->entitlement among its children: each gets a dominant share proportional to
// its share_weight, at least min(floor, demand), at most its demand (usage + pending) capped
// by its limit; what a satisfied child leaves is shared by the others (water-filling).
void Scheduler::WaterFill(QueueNode* parent) {
  const Resource& e = parent->entitlement;
  double inv[kMaxResourceTypes];
  for (int i = 0; i < kMaxResourceTypes; ++i)
    inv[i] = e[i] > 0 ? 1.0 / static_cast<double>(e[i]) : 0;
  auto share = [&](const Resource& r) {
    double s = 0;
    for (int i = 0; i < kMaxResourceTypes; ++i) s = std::max(s, static_cast<double>(r[i]) * inv[i]);
    return s;
  };
  struct Child {
    QueueNode* q;
    Resource cap;
    double lo, hi, w;
  };
  std::vector<Child> kids;
  double total_hi = 0;
  for (QueueNode* c : parent->children) {
    Resource cap = Min(c->usage + c->pending, c->limit);
    double hi = std::min(1.0, share(cap));
    double lo = std::min(hi, share(Min(c->floor, cap)));
    c->entitlement = Resource();
    if (hi <= 0) continue;
    kids.push_back({c, cap, lo, hi, c->share_weight});
    total_hi += hi;
  }
  if (kids.empty()) return;
  auto fill = [&](double lambda) {
    double sum = 0;
    for (const Child& k : kids) sum += std::clamp(lambda * k.w, k.lo, k.hi);
    return sum;
  };
  double lambda = 0;
  if (total_hi > 1.0) {
    double lo = 0, hi = 1;
    while (fill(hi) < 1.0 && hi < 1e12) hi *= 2;
    for (int it = 0; it < 60; ++it) {
      double mid = (lo + hi) / 2;
      (fill(mid) < 1.0 ? lo : hi) = mid;
    }
    lambda = lo;
  } else {
    lambda = 1e300;  // everyone gets their demand
  }
  for (const Child& k : kids) {
    double s = std::clamp(lambda * k.w, k.lo, k.hi);
    Resource ent;
    for (int i = 0; i < kMaxResourceTypes; ++i)
      ent[i] = static_cast<int64_t>(std::floor(static_cast<double>(e[i]) * s + 1e-6));
    k.q->entitlement = Min(ent, k.cap);
  }
}

void Scheduler::KillExpired(int64_t now_ms, PassResult* out) {
  if (preempt_marked_.empty()) return;
  std::vector<ContainerId> keep;
  for (ContainerId id : preempt_marked_) {
    const ContainerState* c = container(id);
    if (c == nullptr) continue;  // released or completed in time
    if (c->preempt_deadline_ms > now_ms) {
      keep.push_back(id);
      continue;
    }
    out->kills.push_back(
        {id, c->app, c->node, c->resource, ContainerExit::kPreempted, c->is_am, c->allocated_ms});
    ++stats_.preempted;
    ReleaseContainer(id);
  }
  preempt_marked_ = std::move(keep);
}

void Scheduler::IssueContracts(int64_t now_ms, PassResult* out) {
  const PreemptionConfig& pc = config_.preemption;
  std::vector<QueueNode*> starved;
  for (QueueNode* q : queue_list_) {
    if (!q->is_leaf()) continue;
    double es = view_.Share(q->entitlement);
    bool is_starved =
        q->pending.AnyPositive() && es > 0 && view_.Share(q->usage) < pc.threshold * es;
    if (!is_starved) {
      q->starved_since_ms = -1;
      continue;
    }
    if (q->starved_since_ms < 0) q->starved_since_ms = now_ms;
    if (now_ms - q->starved_since_ms >= pc.starvation_timeout_ms) starved.push_back(q);
  }
  if (starved.empty()) return;

  // Resource already promised back by earlier contracts, per victim queue.
  absl::flat_hash_map<const QueueNode*, Resource> marked;
  for (ContainerId id : preempt_marked_) {
    const ContainerState& c = slot(id);
    marked[apps_.at(c.app)->queue] += c.resource;
  }
  struct Candidate {
    ContainerId id;
    bool is_am;
    bool in_gang;
  };
  std::vector<Candidate> candidates;
  for (QueueNode* q : queue_list_) {
    if (!q->is_leaf()) continue;
    if (view_.Share(q->usage - marked[q]) <= view_.Share(q->entitlement)) continue;
    for (AppState* app : q->apps) {
      for (int32_t i = app->first_container; i >= 0; i = slab_[i].app_next) {
        if (slab_[i].preempt_deadline_ms < 0)
          candidates.push_back({slab_[i].id, slab_[i].is_am, slab_[i].gang != 0});
      }
    }
  }
  // Newest first (ids grow with time); members of gangs after every other task container (a
  // gang that loses one member usually loses its whole job's progress); AM containers last.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.is_am != b.is_am) return !a.is_am;
    if (a.in_gang != b.in_gang) return !a.in_gang;
    return a.id > b.id;
  });
  absl::flat_hash_map<AppId, PreemptionContract> contracts;
  std::vector<AppId> contract_order;
  size_t next = 0;
  for (QueueNode* s : starved) {
    Resource need = Min(s->entitlement - s->usage, s->pending).ClampedAtZero();
    Resource freed;
    for (; next < candidates.size() && view_.Share(freed) < view_.Share(need); ++next) {
      ContainerState& c = slot(candidates[next].id);
      const QueueNode* vq = apps_.at(c.app)->queue;
      if (vq == s) continue;
      // Never push a victim queue below its own entitlement.
      if (view_.Share(vq->usage - marked[vq] - c.resource) < view_.Share(vq->entitlement)) continue;
      marked[vq] += c.resource;
      freed += c.resource;
      c.preempt_deadline_ms = now_ms + pc.grace_period_ms;
      preempt_marked_.push_back(c.id);
      auto [it, inserted] = contracts.try_emplace(c.app);
      if (inserted) {
        contract_order.push_back(c.app);
        it->second.app = c.app;
        it->second.deadline_ms = c.preempt_deadline_ms;
      }
      it->second.strict_containers.push_back(c.id);
      it->second.negotiable += c.resource;
    }
    s->starved_since_ms = now_ms;  // the next contract waits another timeout
  }
  for (AppId a : contract_order) {
    out->contracts.push_back(std::move(contracts[a]));
    ++stats_.contracts;
  }
}

}  // namespace weft::scheduler
