// Copyright Weft authors. The scheduler core: gangs (seed 001's "explicit tracking of
// gang-scheduling needs").
//
// A gang is a request group whose outstanding containers are placed in one pass, all of them,
// or none. Nothing is held while a gang waits, so competing gangs cannot deadlock the way
// gangs that take containers as they come and hold them do (SchedulerConfig::gang_mode
// "hold-and-wait", kept as the baseline). What all-or-nothing alone risks is starvation: small
// asks keep taking the room a large gang waits for. So gangs are ordered by when they first
// waited, and the oldest waiting gang reserves nodes: the fewest nodes, most free first, whose
// capacity can hold it. Reserved nodes take no new containers of other apps; as their
// containers end, the room gathers for the gang. One reservation at a time, always the oldest
// gang's: no hold-and-wait between gangs, no hoarding by a partial one.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "scheduler/scheduler.h"

namespace weft::scheduler {

bool Scheduler::PlaceGang(AppState* app, size_t gi, int64_t now_ms, PassResult* out) {
  RequestGroup& g = app->groups[gi];
  const std::shared_ptr<const GroupPlacement> p = g.placement;
  if (g.gang_seq == 0) {
    g.gang_seq = next_gang_seq_++;
    g.waiting_since_ms = now_ms;
    waiting_gangs_[g.gang_seq] = app->id;
  }
  const int32_t n = g.any.count;
  const Resource total = g.capability * n;
  // Cheap necessary conditions before a trial placement of n containers (which costs n
  // searches and, failing, n releases): tried once a pass, and only when the cluster's free
  // resource (or its label's) could hold the whole gang.
  Resource free = (view_.total - root_->usage).ClampedAtZero();
  if (p->label != 0) {
    auto used = root_->label_usage.find(p->label);
    free = (labels_[p->label].total - (used == root_->label_usage.end() ? Resource() : used->second))
               .ClampedAtZero();
  }
  const bool worth_trying = g.failed_pass != pass_id_ && total.FitsIn(free);
  g.failed_pass = pass_id_;
  if (worth_trying && WithinLimits(*app, total, /*is_am=*/false) &&
      LabelLimitAllows(*app, p->label, total)) {
    const size_t mark = out->allocations.size();
    const ContainerId id_mark = next_container_id_;
    const SchedulerStats stats_mark = stats_;
    int32_t placed = 0;
    while (placed < n) {
      const NodeId id = FindPlaced(*app, *p, g.capability, /*with_constraint=*/true);
      if (id < 0) break;
      Commit(app, gi, id, Locality::kOffSwitch, -1, -1, now_ms, out);
      ++placed;
    }
    if (placed == n) {
      ++next_gang_id_;
      stats_.gangs_placed = stats_mark.gangs_placed + 1;
      DropGang(app->groups[gi]);
      return true;
    }
    // Not all: take back what this attempt placed, as if it never happened.
    for (size_t i = mark; i < out->allocations.size(); ++i)
      ReleaseContainer(out->allocations[i].container);
    out->allocations.resize(mark);
    next_container_id_ = id_mark;
    stats_ = stats_mark;
    app->groups[gi].any.count = n;
    RecomputePending(app);
    RefreshApp(app);
  }
  // The oldest waiting gang that the cluster's nodes could hold at all reserves (a gang larger
  // than the cluster must not keep the others from reserving).
  if (reservation_.app == 0) {
    for (const auto& [seq, owner] : waiting_gangs_) {
      auto big = too_big_.find(seq);
      if (big != too_big_.end() && big->second == topology_generation_) continue;
      if (seq == app->groups[gi].gang_seq) ReserveForGang(app, app->groups[gi]);
      break;
    }
  }
  return false;
}

void Scheduler::ReserveForGang(AppState* app, const RequestGroup& g) {
  const GroupPlacement& p = *g.placement;
  const Resource& r = g.capability;
  // At most this many of the gang's containers on one node: 1 + max when it keeps its own
  // tag apart per node (NOTIN/CARDINALITY on itself), else as many as fit.
  int64_t per_node_cap = INT64_MAX;
  if (p.has_constraint && p.constraint.kind == PlacementConstraint::Kind::kTags &&
      p.constraint.scope == ConstraintScope::kNode && p.constraint.ns == TagNamespace::kSelf &&
      p.constraint.tags.size() == 1 &&
      std::find(p.tags.begin(), p.tags.end(), p.constraint.tags[0]) != p.tags.end())
    per_node_cap = static_cast<int64_t>(p.constraint.max) + 1;
  auto fits = [&](const Resource& room) {
    int64_t k = INT64_MAX;
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      if (r[i] > 0) k = std::min(k, std::max<int64_t>(room[i], 0) / r[i]);
    }
    return std::min(k, per_node_cap);
  };
  struct Candidate {
    NodeId id;
    int64_t now;       // containers that fit in its free room now
    int64_t eventual;  // ... in its capacity
  };
  std::vector<Candidate> candidates;
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
    const NodeState& node = nodes_[id];
    if (!node.schedulable || node.reserved_for != 0 || !LabelAllows(p.label, node) ||
        app->blacklist.contains(id))
      continue;
    const int64_t eventual = fits(node.capacity);
    if (eventual > 0) candidates.push_back({id, fits(NodeRoom(node)), eventual});
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.now != b.now) return a.now > b.now;
    if (a.eventual != b.eventual) return a.eventual > b.eventual;
    return a.id < b.id;
  });
  int64_t room = 0;
  size_t take = 0;
  while (take < candidates.size() && room < g.any.count) room += candidates[take++].eventual;
  if (room < g.any.count) {  // the nodes cannot hold it (until nodes change): nothing to reserve
    too_big_[g.gang_seq] = topology_generation_;
    return;
  }
  reservation_ = {app->id, g.gang_seq, {}};
  for (size_t i = 0; i < take; ++i) {
    nodes_[candidates[i].id].reserved_for = app->id;
    reservation_.nodes.push_back(candidates[i].id);
    UpdateNodeIndex(candidates[i].id);
  }
  ++stats_.gang_reservations;
}

void Scheduler::ReleaseReservation() {
  const std::vector<NodeId> nodes = std::move(reservation_.nodes);
  reservation_ = {};
  for (NodeId id : nodes) {
    nodes_[id].reserved_for = 0;
    UpdateNodeIndex(id);
  }
}

void Scheduler::DropGang(RequestGroup& g) {
  if (g.gang_seq == 0) return;
  waiting_gangs_.erase(g.gang_seq);
  too_big_.erase(g.gang_seq);
  if (reservation_.gang_seq == g.gang_seq) ReleaseReservation();
  g.gang_seq = 0;
  g.waiting_since_ms = -1;
}

void Scheduler::ExpireGangs(int64_t now_ms, PassResult* out) {
  std::vector<std::pair<uint64_t, AppId>> gangs(waiting_gangs_.begin(), waiting_gangs_.end());
  for (const auto& [seq, app_id] : gangs) {
    auto it = apps_.find(app_id);
    AppState* app = it == apps_.end() ? nullptr : it->second.get();
    RequestGroup* g = nullptr;
    if (app != nullptr) {
      for (RequestGroup& group : app->groups) {
        if (group.gang_seq == seq) g = &group;
      }
    }
    if (g == nullptr) {  // its group is gone: forget it
      waiting_gangs_.erase(seq);
      too_big_.erase(seq);
      if (reservation_.gang_seq == seq) ReleaseReservation();
      continue;
    }
    const int64_t timeout = g->placement->gang_timeout_ms;
    if (timeout <= 0 || now_ms - g->waiting_since_ms < timeout) continue;
    out->rejected.push_back(
        {app_id, g->priority, g->allocation_request_id, g->capability, g->any.count,
         absl::StrCat("gang of ", g->any.count, " container(s) not placed within ", timeout,
                      " ms")});
    ++stats_.gangs_rejected;
    DropGang(*g);
    g->any.count = 0;
    app->groups.erase(std::remove_if(app->groups.begin(), app->groups.end(),
                                     [](const RequestGroup& x) {
                                       return !x.is_am && x.any.count == 0 && x.live_hosts == 0 &&
                                              x.live_racks == 0;
                                     }),
                      app->groups.end());
    RecomputePending(app);
    RefreshApp(app);
  }
}

}  // namespace weft::scheduler
