// Copyright Weft authors. The scheduler core: allocation passes and placement.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_internal.h"

namespace weft::scheduler {

// ---------------------------------------------------------------------------------------------
// Allocation

bool Scheduler::WithinLimits(const AppState& app, const Resource& r, bool is_am) const {
  for (const QueueNode* q = app.queue; q; q = q->parent) {
    if (!(q->usage + r).FitsIn(q->limit)) return false;
  }
  if (!policy_->CanAllocate(app, r, is_am, view_)) return false;
  return !is_am || AmAllowed(*app.queue, r);
}

// The AM limit (SchedulingPolicy::AmLimit), the same for every policy: within the leaf's limit;
// or the leaf's first AM, while AMs hold at most the cluster default share of the cluster.
bool Scheduler::AmAllowed(const QueueNode& leaf, const Resource& r) const {
  const std::optional<Resource> limit = policy_->AmLimit(leaf, view_);
  if (!limit.has_value() || (leaf.am_usage + r).FitsIn(*limit)) return true;
  if (leaf.am_usage.AnyPositive()) return false;
  // Every queue may run one AM, however small its limit (YARN), but those first AMs must not
  // fill the cluster either: with one queue per vcore they would, and their apps would wait
  // for task containers forever.
  const double cluster_share = config_.queue_max_am_share_default;
  if (cluster_share < 0 || !root_->am_usage.AnyPositive()) return true;
  Resource cluster_limit;
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    cluster_limit[i] =
        static_cast<int64_t>(std::floor(static_cast<double>(view_.total[i]) * cluster_share));
  }
  return (root_->am_usage + r).FitsIn(cluster_limit);
}

bool Scheduler::LocalityAllows(const RequestGroup& g, NodeId id) const {
  if (g.any.relax || (g.live_hosts == 0 && g.live_racks == 0)) return true;
  const NodeState& n = nodes_[id];
  if (auto it = g.row_index.find(n.name); it != g.row_index.end()) {
    if (g.hosts[it->second].count > 0) return true;
  }
  if (auto it = g.row_index.find(racks_[n.rack].name); it != g.row_index.end()) {
    const RequestGroup::LocalRow& row = g.racks[it->second];
    if (row.count > 0 && row.relax) return true;
  }
  return false;
}

bool Scheduler::Usable(const AppState& app, NodeId id, const Resource& r, int32_t label,
                       bool gpu_same_group) const {
  const NodeState& n = nodes_[id];
  if (n.reserved_for != 0 && n.reserved_for != app.id) return false;
  if (!LabelAllows(label, n)) return false;
  return n.schedulable && r.FitsIn(NodeRoom(n)) &&
         (!gpu_same_group || GpuFits(n, r[kGpuMilli], true)) && !app.blacklist.contains(id);
}

NodeId Scheduler::FindInRack(const AppState& app, int32_t rack, const Resource& r) const {
  const Rack& rk = racks_[rack];
  int from = 0;
  for (int probes = 0; probes < 64; ++probes) {
    int slot = rk.nodes.FindFrom(r, from);
    if (slot < 0 || (probes > 0 && slot < from)) return -1;  // wrapped: none left
    NodeId id = rk.slot_node[slot];
    if (!app.blacklist.contains(id)) return id;
    from = slot + 1;
    if (from >= rk.nodes.size()) return -1;
  }
  return -1;
}

NodeId Scheduler::FindAnywhere(const AppState& app, const Resource& r) const {
  int start = rack_cursor_ < rack_index_.size() ? rack_cursor_ : 0;
  int from = start;
  for (int visited = 0; visited < rack_index_.size(); ++visited) {
    int rack = rack_index_.FindFrom(r, from);
    if (rack < 0) return -1;
    NodeId id = FindInRack(app, rack, r);
    if (id >= 0) return id;
    // Only blacklisted nodes fit in this rack: go on with the next one.
    from = rack + 1 < rack_index_.size() ? rack + 1 : 0;
    if (from == start) return -1;
  }
  return -1;
}

void Scheduler::Commit(AppState* app, size_t gi, NodeId node, Locality locality, int32_t host_row,
                       int32_t rack_row, int64_t now_ms, PassResult* out,
                       std::vector<DeviceShare> gpus) {
  RequestGroup& g = app->groups[gi];
  const Resource r = g.capability;
  ContainerId id = next_container_id_++;
  const NodeState& n = nodes_[node];
  const GroupPlacement* p = g.placement.get();
  const uint64_t gang = p != nullptr && p->gang && config_.gang_mode != "hold-and-wait"
                            ? next_gang_id_
                            : 0;
  std::vector<DeviceShare> devices = std::move(gpus);
  if (r[kGpuMilli] > 0 && devices.empty())
    devices = ChooseGpus(n, r[kGpuMilli], p != nullptr && p->gpu_same_group);
  AddContainer(app, id, node, r, g.priority, g.is_am, now_ms, p ? p->tag_set : -1, gang,
               p ? p->label : 0, devices);
  // YARN's bookkeeping: node-local takes from the host, its rack and "*"; rack-local from the
  // rack and "*"; off-switch from "*" only.
  auto take = [](int32_t& count, int32_t& live) {
    if (count > 0 && --count == 0) --live;
  };
  if (locality == Locality::kNodeLocal) {
    take(g.hosts[host_row].count, g.live_hosts);
    g.missed_opportunities = 0;
    for (size_t i = 0; i < g.racks.size(); ++i) {
      if (g.racks[i].id == n.rack) rack_row = static_cast<int32_t>(i);
    }
  }
  if (locality != Locality::kOffSwitch && rack_row >= 0)
    take(g.racks[rack_row].count, g.live_racks);
  --g.any.count;
  g.last_alloc_pass = pass_id_;
  for (QueueNode* q = app->queue; q; q = q->parent) q->pending -= r;
  app->pending -= r;
  --app->pending_containers;
  Allocation& a = out->allocations.emplace_back();
  a.container = id;
  a.app = app->id;
  a.node = node;
  a.resource = r;
  a.priority = g.priority;
  a.allocation_request_id = g.allocation_request_id;
  a.is_am = g.is_am;
  a.locality = locality;
  if (p != nullptr) {
    out->allocations.back().tags = p->tags;
    out->allocations.back().gang = gang;
  }
  out->allocations.back().devices = std::move(devices);
  ++stats_.allocations;
  switch (locality) {
    case Locality::kNodeLocal:
      ++stats_.node_local;
      break;
    case Locality::kRackLocal:
      ++stats_.rack_local;
      break;
    case Locality::kOffSwitch:
      ++stats_.off_switch;
      break;
  }
  if (g.is_am && g.any.count == 0) app->groups.erase(app->groups.begin() + gi);
  rack_cursor_ = n.rack + 1;
  RefreshApp(app);
}

void Scheduler::AddContainer(AppState* app, ContainerId id, NodeId node, const Resource& r,
                             int32_t priority, bool is_am, int64_t now_ms, int32_t tag_set,
                             uint64_t gang, int32_t label, std::vector<DeviceShare> devices) {
  NodeState& n = nodes_[node];
  n.allocated += r;
  if (!devices.empty()) {
    ChargeGpus(n, devices, +1);
    gpu_shares_[id] = std::move(devices);
    CountHosted(node, r, +1);
  }
  UpdateNodeIndex(node);
  int32_t i;
  if (free_slots_.empty()) {  // more containers than vcores: possible only with 0-vcore types
    i = static_cast<int32_t>(slab_.size());
    slab_.emplace_back();
  } else {
    i = free_slots_.back();
    free_slots_.pop_back();
  }
  ContainerState& c = slab_[i];
  c = ContainerState{id, app->id, node, r, priority, is_am, now_ms, -1};
  c.tag_set = tag_set;
  c.gang = gang;
  c.label = label;
  c.node_next = n.first_container;
  if (c.node_next >= 0) slab_[c.node_next].node_prev = i;
  n.first_container = i;
  c.app_next = app->first_container;
  if (c.app_next >= 0) slab_[c.app_next].app_prev = i;
  app->first_container = i;
  ++n.num_containers;
  ++app->num_containers;
  containers_.emplace(id, i);
  ChargeUsage(app, r, is_am, +1, label);
  if (tag_set >= 0) CountTags(c, +1);
}

bool Scheduler::PlaceGroup(AppState* app, size_t gi, int64_t now_ms, PassResult* out) {
  RequestGroup& g = app->groups[gi];
  const Resource& r = g.capability;
  const LocalityConfig& loc = config_.locality;
  const int probes = loc.max_locality_probes;
  bool has_hosts = g.live_hosts > 0;
  bool has_racks = g.live_racks > 0;

  if (g.placement != nullptr) return PlacePlaced(app, gi, now_ms, out);
  if (g.resolved_generation != topology_generation_) ResolveRows(&g);
  if (has_hosts) {
    const uint32_t n = static_cast<uint32_t>(g.hosts.size());
    for (int p = 0; p < probes && p < static_cast<int>(n); ++p) {
      uint32_t i = (g.host_cursor + static_cast<uint32_t>(p)) % n;
      const RequestGroup::LocalRow& row = g.hosts[i];
      if (row.count <= 0 || row.id < 0 || !Usable(*app, row.id, r)) continue;
      g.host_cursor = i;
      Commit(app, gi, row.id, Locality::kNodeLocal, static_cast<int32_t>(i), -1, now_ms, out);
      return true;
    }
    g.host_cursor = (g.host_cursor + static_cast<uint32_t>(probes)) % n;
  }
  // A pass counts as missed only when it placed nothing of the group.
  auto miss = [&] {
    if (g.last_missed_pass != pass_id_ && g.last_alloc_pass != pass_id_) {
      g.last_missed_pass = pass_id_;
      ++g.missed_opportunities;
    }
    return false;
  };
  if (has_hosts && g.missed_opportunities < loc.node_locality_delay) return miss();

  // Rack level: racks named by the ask itself, and (YARN) the racks of the asked hosts.
  if (has_racks) {
    const uint32_t n = static_cast<uint32_t>(g.racks.size());
    for (int p = 0; p < probes && p < static_cast<int>(n); ++p) {
      uint32_t i = (g.rack_cursor + static_cast<uint32_t>(p)) % n;
      const RequestGroup::LocalRow& row = g.racks[i];
      if (row.count <= 0 || !row.relax || row.id < 0) continue;
      NodeId id = FindInRack(*app, row.id, r);
      if (id >= 0) {
        g.rack_cursor = i;
        Commit(app, gi, id, Locality::kRackLocal, -1, static_cast<int32_t>(i), now_ms, out);
        return true;
      }
    }
    g.rack_cursor = (g.rack_cursor + static_cast<uint32_t>(probes)) % n;
  }
  if ((has_hosts || has_racks) &&
      g.missed_opportunities < loc.node_locality_delay + loc.rack_locality_delay)
    return miss();
  if (!g.any.relax && (has_hosts || has_racks)) return false;

  std::vector<DeviceShare> gpus;
  NodeId id = r[kGpuMilli] > 0 && config_.gpu_placement != "first-fit"
                  ? FindGpuNode(*app, r, &gpus)
                  : FindAnywhere(*app, r);
  if (id < 0) return false;
  Commit(app, gi, id, Locality::kOffSwitch, -1, -1, now_ms, out, std::move(gpus));
  return true;
}

void Scheduler::ResolveRows(RequestGroup* g) const {
  for (RequestGroup::LocalRow& row : g->hosts) row.id = FindNode(row.name);
  for (RequestGroup::LocalRow& row : g->racks) {
    auto it = rack_by_name_.find(row.name);
    row.id = it == rack_by_name_.end() ? -1 : it->second;
  }
  g->resolved_generation = topology_generation_;
}

bool Scheduler::TryAllocate(AppState* app, int64_t now_ms, PassResult* out) {
  for (size_t gi = 0; gi < app->groups.size(); ++gi) {
    const RequestGroup& g = app->groups[gi];
    if (g.any.count <= 0) continue;
    if (!WithinLimits(*app, g.capability, g.is_am)) {
      if (g.is_am) return false;
      continue;
    }
    if (PlaceGroup(app, gi, now_ms, out)) return true;
    if (g.is_am) return false;  // nothing else runs before the AM
  }
  return false;
}

// The PlacementContext the core gives a policy that places containers itself.
class Scheduler::Placement final : public PlacementContext {
 public:
  Placement(Scheduler* s, int64_t now_ms, PassResult* out) : s_(s), now_(now_ms), out_(out) {
    for (const QueueNode* q : s_->queue_list_) {
      for (const AppState* a : q->apps) {
        if (a->runnable) apps_.push_back(a);
      }
    }
    std::sort(apps_.begin(), apps_.end(),
              [](const AppState* a, const AppState* b) { return a->submit_seq < b->submit_seq; });
  }

  int64_t now_ms() const override { return now_; }
  const ClusterView& view() const override { return s_->view_; }
  const std::vector<const AppState*>& apps() const override { return apps_; }
  NodeId node_limit() const override { return static_cast<NodeId>(s_->nodes_.size()); }
  const NodeState& node(NodeId id) const override { return s_->nodes_.at(id); }
  void ForEachContainer(NodeId id,
                        const std::function<void(const ContainerState&)>& f) const override {
    for (int32_t i = s_->nodes_.at(id).first_container; i >= 0; i = s_->slab_[i].node_next)
      f(s_->slab_[i]);
  }
  bool CanPlace(const AppState& app, size_t gi, NodeId node) const override {
    if (gi >= app.groups.size() || node < 0 || node >= node_limit()) return false;
    const RequestGroup& g = app.groups[gi];
    if (g.any.count <= 0) return false;
    if (!g.is_am && app.groups[0].is_am) return false;  // nothing else runs before the AM
    if (g.placement != nullptr) {
      return s_->NodeOk(app, *g.placement, g.capability, node, !g.placement->soft) &&
             s_->WithinLimits(app, g.capability, g.is_am);
    }
    return s_->Usable(app, node, g.capability) && s_->LocalityAllows(g, node) &&
           s_->WithinLimits(app, g.capability, g.is_am);
  }
  bool Place(AppId id, size_t gi, NodeId node) override {
    auto it = s_->apps_.find(id);
    if (it == s_->apps_.end() || !it->second->runnable) return false;
    AppState* app = it->second.get();
    if (!CanPlace(*app, gi, node)) return false;
    RequestGroup& g = app->groups[gi];
    // A gang is placed whole by the core, wherever it fits (or not at all).
    if (g.placement != nullptr && g.placement->gang) return s_->PlaceGroup(app, gi, now_, out_);
    const NodeState& n = s_->nodes_[node];
    int32_t host_row = -1, rack_row = -1;
    Locality locality = Locality::kOffSwitch;
    if (auto h = g.row_index.find(n.name); h != g.row_index.end() && g.hosts[h->second].count > 0) {
      host_row = h->second;
      locality = Locality::kNodeLocal;
    } else if (auto r = g.row_index.find(s_->racks_[n.rack].name);
               r != g.row_index.end() && g.racks[r->second].count > 0) {
      rack_row = r->second;
      locality = Locality::kRackLocal;
    }
    if (g.resolved_generation != s_->topology_generation_) s_->ResolveRows(&g);
    s_->Commit(app, gi, node, locality, host_row, rack_row, now_, out_);
    return true;
  }
  bool PlaceAnywhere(AppId id, size_t gi) override {
    auto it = s_->apps_.find(id);
    if (it == s_->apps_.end() || !it->second->runnable) return false;
    AppState* app = it->second.get();
    if (gi >= app->groups.size() || app->groups[gi].any.count <= 0) return false;
    const RequestGroup& g = app->groups[gi];
    if (!g.is_am && app->groups[0].is_am) return false;  // nothing else runs before the AM
    if (!s_->WithinLimits(*app, g.capability, g.is_am)) return false;
    return s_->PlaceGroup(app, gi, now_, out_);
  }

 private:
  Scheduler* s_;
  int64_t now_;
  PassResult* out_;
  std::vector<const AppState*> apps_;
};

const PassResult& Scheduler::Schedule(int64_t now_ms) {
  PassResult& out = result_;
  out.allocations.clear();
  out.contracts.clear();
  out.kills.clear();
  out.resized.clear();
  out.rejected.clear();
  ++stats_.passes;
  ++pass_id_;
  if (keys_dirty_) RekeyAll();
  KillExpired(now_ms, &out);
  if (!pending_resized_.empty()) {
    out.resized.swap(pending_resized_);
    pending_resized_.clear();
  }
  if (!apps_with_increases_.empty()) GrantIncreases(&out);
  if (!waiting_gangs_.empty()) ExpireGangs(now_ms, &out);
  if (config_.preemption.enabled && policy_->SupportsPreemption()) {
    RefreshEntitlements();
    IssueContracts(now_ms, &out);
  }
  if (policy_->DecidesPlacement()) {
    Placement ctx(this, now_ms, &out);
    policy_->Place(ctx);
    return out;
  }
  in_pass_ = true;
  blocked_.clear();
  // At most one container per free vcore can be placed (Normalize gives each >= 1 vcore).
  out.allocations.reserve(static_cast<size_t>(std::clamp<int64_t>(
      std::min(view_.total[kVcores] - root_->usage[kVcores], root_->pending[kVcores]), 0,
      1 << 22)));
  while (!root_->heap.empty()) {
    Schedulable* s = root_->heap.front();
    QueueNode* q = root_;
    while (!q->is_leaf()) {
      q = static_cast<QueueNode*>(s);
      if (q->is_leaf()) break;
      s = q->heap.front();
    }
    AppState* app = static_cast<AppState*>(q->heap.front());
    if (!TryAllocate(app, now_ms, &out)) {
      app->blocked_pass = pass_id_;
      blocked_.push_back(app);
      RefreshApp(app);  // leaves the heap for the rest of this pass
    }
  }
  in_pass_ = false;
  for (AppState* app : blocked_) {
    if (apps_.contains(app->id)) RefreshApp(app);
  }
  blocked_.clear();
  return out;
}

}  // namespace weft::scheduler
