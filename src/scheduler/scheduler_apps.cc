// Copyright Weft authors. The scheduler core: apps, their requests and containers.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_internal.h"

namespace weft::scheduler {
namespace {

// Group order: the AM first, then YARN priority (lower first), request id, capability.
bool GroupBefore(const RequestGroup& a, const RequestGroup& b) {
  if (a.is_am != b.is_am) return a.is_am;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.allocation_request_id != b.allocation_request_id)
    return a.allocation_request_id < b.allocation_request_id;
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    if (a.capability[i] != b.capability[i]) return a.capability[i] < b.capability[i];
  }
  return false;
}

bool SamePlacement(const GroupPlacement* a, const GroupPlacement* b) {
  if (a == nullptr || b == nullptr) return a == b;
  return a->tags == b->tags && a->has_constraint == b->has_constraint && a->soft == b->soft &&
         a->constraint == b->constraint && a->label == b->label && a->gang == b->gang &&
         a->gang_timeout_ms == b->gang_timeout_ms;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Apps and requests

const AppState* Scheduler::app(AppId id) const {
  auto it = apps_.find(id);
  return it == apps_.end() ? nullptr : it->second.get();
}

const ContainerState* Scheduler::container(ContainerId id) const {
  auto it = containers_.find(id);
  return it == containers_.end() ? nullptr : &slab_[it->second];
}

template <typename Next>
std::vector<ContainerId> Scheduler::ListContainers(int32_t head, Next next) const {
  std::vector<ContainerId> ids;
  for (int32_t i = head; i >= 0; i = next(slab_[i])) ids.push_back(slab_[i].id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<ContainerId> Scheduler::AppContainers(AppId id) const {
  const AppState* a = app(id);
  if (a == nullptr) return {};
  return ListContainers(a->first_container, [](const ContainerState& c) { return c.app_next; });
}

std::vector<ContainerId> Scheduler::NodeContainers(NodeId id) const {
  const NodeState* n = node(id);
  if (n == nullptr) return {};
  return ListContainers(n->first_container, [](const ContainerState& c) { return c.node_next; });
}

int64_t Scheduler::UserMaxApps(const std::string& user) const {
  auto it = config_.users.find(user);
  if (it != config_.users.end() && it->second.max_running_apps.has_value())
    return *it->second.max_running_apps;
  return config_.user_max_apps_default;
}

int64_t Scheduler::UserRunningApps(absl::string_view user) const {
  auto it = user_running_apps_.find(user);
  return it == user_running_apps_.end() ? 0 : it->second;
}

bool Scheduler::CanRun(const QueueNode* leaf, const std::string& user) const {
  for (const QueueNode* q = leaf; q; q = q->parent) {
    if (q->config.max_running_apps >= 0 && q->running_apps >= q->config.max_running_apps)
      return false;
  }
  const int64_t user_max = UserMaxApps(user);
  return user_max < 0 || UserRunningApps(user) < user_max;
}

void Scheduler::MakeRunnable(AppState* app) {
  app->runnable = true;
  for (QueueNode* q = app->queue; q; q = q->parent) ++q->running_apps;
  ++user_running_apps_[app->user];
}

void Scheduler::CollectWaiting(const QueueNode* q, std::vector<AppState*>* out) const {
  out->insert(out->end(), q->waiting_apps.begin(), q->waiting_apps.end());
  for (const QueueNode* c : q->children) CollectWaiting(c, out);
}

void Scheduler::PromoteWaiting(std::vector<AppState*> candidates) {
  std::sort(candidates.begin(), candidates.end(),
            [](const AppState* a, const AppState* b) { return a->submit_seq < b->submit_seq; });
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  for (AppState* app : candidates) {
    if (!CanRun(app->queue, app->user)) continue;
    auto& waiting = app->queue->waiting_apps;
    waiting.erase(std::find(waiting.begin(), waiting.end(), app));
    MakeRunnable(app);
    RefreshApp(app);
  }
}

absl::Status Scheduler::AddApp(const AppSpec& spec, int64_t /*now_ms*/) {
  if (apps_.contains(spec.id))
    return absl::AlreadyExistsError(absl::StrCat("application ", spec.id, " already exists"));
  QueueNode* leaf = FindQueueMutable(spec.queue);
  if (leaf == nullptr)
    return absl::NotFoundError(
        absl::StrCat("application ", spec.id, ": unknown queue '", spec.queue, "'"));
  if (!leaf->is_leaf())
    return absl::InvalidArgumentError(absl::StrCat("application ", spec.id, ": queue '", leaf->path,
                                                   "' is a parent queue, not a leaf"));
  for (const QueueNode* q = leaf; q; q = q->parent) {
    if (q->config.state == QueueState::kStopped)
      return absl::FailedPreconditionError(
          absl::StrCat("application ", spec.id, ": queue '", q->path, "' is STOPPED"));
  }
  if (spec.user.empty())
    return absl::InvalidArgumentError(absl::StrCat("application ", spec.id, ": empty user"));
  if (spec.profile.goal_ms < -1)
    return absl::InvalidArgumentError(absl::StrCat("application ", spec.id,
                                                   ": completion-time goal ", spec.profile.goal_ms,
                                                   " ms is negative (-1 means none)"));
  for (size_t i = 0; i < spec.profile.phases.size(); ++i) {
    const PhaseProfile& p = spec.profile.phases[i];
    auto where = [&] {
      return absl::StrCat("application ", spec.id, ": phase #", i, " ('", p.name, "', priority ",
                          p.priority, ")");
    };
    for (size_t k = 0; k < i; ++k) {
      if (spec.profile.phases[k].priority == p.priority)
        return absl::InvalidArgumentError(
            absl::StrCat(where(), ": priority already used by phase #", k));
    }
    if (p.expected_task_ms == 0 || p.expected_task_ms < -1)
      return absl::InvalidArgumentError(absl::StrCat(where(), ": expected task length ",
                                                     p.expected_task_ms,
                                                     " ms is not positive (-1 means unknown)"));
    if (!p.has_usage) continue;
    for (auto [name, v] : {std::pair{"cpu", p.usage.cpu}, std::pair{"io", p.usage.io},
                           std::pair{"memory", p.usage.memory}}) {
      if (!(v >= 0 && v <= 1))
        return absl::InvalidArgumentError(
            absl::StrCat(where(), ": usage ", name, "=", v, " is not a share of a node in [0, 1]"));
    }
  }
  Resource am;
  if (!spec.am_resource.IsZero()) {
    auto n = registry().Normalize(spec.am_resource);
    if (!n.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("application ", spec.id, ": AM resource: ", n.status().message()));
    am = *n;
  }
  auto app = std::make_unique<AppState>();
  app->id = spec.id;
  app->profile = spec.profile;
  app->queue = leaf;
  app->user = spec.user;
  app->priority = spec.priority;
  app->submit_seq = next_submit_seq_++;
  if (!am.IsZero()) {
    RequestGroup g;
    g.is_am = true;
    g.priority = -1;
    g.capability = am;
    g.any.count = 1;
    app->groups.push_back(std::move(g));
    app->pending = am;
    app->pending_containers = 1;
    for (QueueNode* q = leaf; q; q = q->parent) q->pending += am;
  }
  app->user_usage = &leaf->user_usage[spec.user];
  AppState* raw = app.get();
  apps_[spec.id] = std::move(app);
  leaf->apps.push_back(raw);
  if (CanRun(leaf, raw->user)) {
    MakeRunnable(raw);
  } else {
    leaf->waiting_apps.push_back(raw);
  }
  RefreshApp(raw);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ContainerKill>> Scheduler::RemoveApp(AppId id) {
  auto it = apps_.find(id);
  if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("application ", id, " not found"));
  AppState* app = it->second.get();
  std::vector<ContainerKill> released;
  for (ContainerId c : AppContainers(id)) {
    const ContainerState& cs = slot(c);
    released.push_back(
        {c, id, cs.node, cs.resource, ContainerExit::kAppRemoved, cs.is_am, cs.allocated_ms});
    ReleaseContainer(c);
  }
  // Drop its pending demand, then the app itself.
  for (RequestGroup& g : app->groups) DropGang(g);
  app->increases.clear();
  for (QueueNode* q = app->queue; q; q = q->parent) q->pending -= app->pending;
  app->pending = Resource();
  app->pending_containers = 0;
  app->groups.clear();
  QueueNode* leaf = app->queue;
  if (app->heap_pos >= 0) HeapRemove(leaf, app);
  if (!keys_dirty_) RefreshUp(leaf);
  leaf->apps.erase(std::find(leaf->apps.begin(), leaf->apps.end(), app));
  auto w = std::find(leaf->waiting_apps.begin(), leaf->waiting_apps.end(), app);
  if (w != leaf->waiting_apps.end()) leaf->waiting_apps.erase(w);
  // The limits its end frees: those of the highest queue on its path that was full, and its
  // user's if they were full. Only apps waiting under that queue, or of that user, can run now.
  const QueueNode* freed_queue = nullptr;
  bool freed_user = false;
  if (app->runnable) {
    for (QueueNode* q = leaf; q; q = q->parent) {
      if (q->config.max_running_apps >= 0 && q->running_apps >= q->config.max_running_apps)
        freed_queue = q;
      --q->running_apps;
    }
    const int64_t user_max = UserMaxApps(app->user);
    auto u = user_running_apps_.find(app->user);
    freed_user = user_max >= 0 && u->second >= user_max;
    if (--u->second == 0) user_running_apps_.erase(u);
  }
  const std::string user = app->user;
  bool other = false;
  for (AppState* a : leaf->apps) other |= a != app && a->user == user;
  if (!other) leaf->user_usage.erase(user);
  apps_.erase(it);
  std::vector<AppState*> candidates;
  if (freed_queue != nullptr) CollectWaiting(freed_queue, &candidates);
  if (freed_user) {
    std::vector<AppState*> all;
    CollectWaiting(root_, &all);
    for (AppState* a : all) {
      if (a->user == user) candidates.push_back(a);
    }
  }
  if (!candidates.empty()) PromoteWaiting(std::move(candidates));
  return released;
}

void Scheduler::RecomputePending(AppState* app) {
  Resource pending;
  int64_t count = 0;
  for (const RequestGroup& g : app->groups) {
    pending += g.capability * g.any.count;
    count += g.any.count;
  }
  for (QueueNode* q = app->queue; q; q = q->parent) {
    q->pending -= app->pending;
    q->pending += pending;
  }
  app->pending = pending;
  app->pending_containers = count;
}

absl::Status Scheduler::UpdateRequests(AppId id, const RequestUpdate& update) {
  auto it = apps_.find(id);
  if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("application ", id, " not found"));
  AppState* app = it->second.get();
  // Validate everything first; nothing changes unless all of it is acceptable.
  std::vector<Resource> normalized;
  normalized.reserve(update.asks.size());
  std::vector<std::shared_ptr<const GroupPlacement>> placements(update.asks.size());
  for (size_t i = 0; i < update.asks.size(); ++i) {
    const ResourceRequest& ask = update.asks[i];
    auto where = [&] {
      return absl::StrCat("application ", id, ": ask #", i, " (priority ", ask.priority, ", '",
                          ask.resource_name, "')");
    };
    if (ask.num_containers < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": num_containers ", ask.num_containers, " is negative"));
    if (ask.priority < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": priority ", ask.priority, " is negative"));
    if (ask.resource_name.empty())
      return absl::InvalidArgumentError(absl::StrCat(where(), ": empty resource name"));
    auto n = registry().Normalize(ask.capability);
    if (!n.ok())
      return absl::InvalidArgumentError(absl::StrCat(where(), ": ", n.status().message()));
    normalized.push_back(*n);
    auto placement = MakePlacement(*app, ask, i);
    if (!placement.ok()) return placement.status();
    placements[i] = *std::move(placement);
  }
  // A group with placement takes only a "*" row, and a group has locality rows or placement.
  for (size_t i = 0; i < update.asks.size(); ++i) {
    const ResourceRequest& ask = update.asks[i];
    const bool local = ask.resource_name != kAnyResourceName;
    for (size_t k = 0; k < update.asks.size(); ++k) {
      const ResourceRequest& other = update.asks[k];
      if (k == i || placements[k] == nullptr || !local) continue;
      if (other.priority == ask.priority &&
          other.allocation_request_id == ask.allocation_request_id &&
          normalized[k] == normalized[i])
        return absl::InvalidArgumentError(absl::StrCat(
            "application ", id, ": ask #", i, " ('", ask.resource_name,
            "'): a request with allocation tags, a constraint, a node label or a gang (ask #", k,
            ") takes no host or rack rows"));
    }
    RequestGroup probe;
    probe.priority = ask.priority;
    probe.allocation_request_id = ask.allocation_request_id;
    probe.capability = normalized[i];
    auto pos = std::lower_bound(app->groups.begin(), app->groups.end(), probe, GroupBefore);
    if (pos == app->groups.end() || GroupBefore(probe, *pos)) continue;
    if (local && pos->placement != nullptr)
      return absl::InvalidArgumentError(absl::StrCat(
          "application ", id, ": ask #", i, " ('", ask.resource_name,
          "'): its group has allocation tags, a constraint, a node label or a gang, and takes "
          "no host or rack rows"));
    if (!local && placements[i] != nullptr && (pos->live_hosts > 0 || pos->live_racks > 0))
      return absl::InvalidArgumentError(absl::StrCat(
          "application ", id, ": ask #", i,
          ": allocation tags, a constraint, a node label or a gang on a group that has host or "
          "rack rows"));
  }
  std::vector<Resource> targets;
  if (absl::Status s = ValidateUpdates(*app, update.updates, &targets); !s.ok()) return s;
  for (ContainerId c : update.releases) {
    const ContainerState* cs = container(c);
    if (cs == nullptr || cs->app != id)
      return absl::InvalidArgumentError(absl::StrCat("application ", id,
                                                     ": cannot release container ", c,
                                                     ": not allocated to this application"));
  }
  for (const auto* list : {&update.blacklist_additions, &update.blacklist_removals}) {
    for (const std::string& name : *list) {
      if (name.empty() || name == kAnyResourceName || internal::IsRackName(name))
        return absl::InvalidArgumentError(
            absl::StrCat("application ", id, ": blacklist entry '", name, "' is not a node name"));
    }
  }

  // Apply. A container named twice is released once.
  for (size_t i = 0; i < update.asks.size(); ++i) {
    if (normalized[i][kGpuMilli] > 0 && update.asks[i].resource_name == kAnyResourceName)
      NoteGpuAsk(normalized[i], update.asks[i].num_containers);
  }
  for (ContainerId c : update.releases) {
    if (containers_.contains(c)) ReleaseContainer(c);
  }
  for (const std::string& name : update.blacklist_additions) {
    if (std::find(app->blacklist_names.begin(), app->blacklist_names.end(), name) ==
        app->blacklist_names.end())
      app->blacklist_names.push_back(name);
    NodeId n = FindNode(name);
    if (n >= 0) app->blacklist.insert(n);
  }
  for (const std::string& name : update.blacklist_removals) {
    app->blacklist_names.erase(
        std::remove(app->blacklist_names.begin(), app->blacklist_names.end(), name),
        app->blacklist_names.end());
    NodeId n = FindNode(name);
    if (n >= 0) app->blacklist.erase(n);
  }
  for (size_t i = 0; i < update.asks.size(); ++i) {
    const ResourceRequest& ask = update.asks[i];
    RequestGroup probe;
    probe.priority = ask.priority;
    probe.allocation_request_id = ask.allocation_request_id;
    probe.capability = normalized[i];
    auto pos = std::lower_bound(app->groups.begin(), app->groups.end(), probe, GroupBefore);
    if (pos == app->groups.end() || GroupBefore(probe, *pos)) {
      if (ask.num_containers == 0 && ask.resource_name == kAnyResourceName) continue;
      pos = app->groups.insert(pos, std::move(probe));
    }
    RequestGroup& g = *pos;
    if (ask.resource_name == kAnyResourceName) {
      g.any = {ask.num_containers, ask.relax_locality};
      if (!SamePlacement(g.placement.get(), placements[i].get()))
        DropGang(g);  // a changed gang waits afresh
      g.placement = std::move(placements[i]);
    } else {
      bool rack = internal::IsRackName(ask.resource_name);
      auto& rows = rack ? g.racks : g.hosts;
      int32_t& live = rack ? g.live_racks : g.live_hosts;
      auto [idx, inserted] = g.row_index.try_emplace(ask.resource_name, 0);
      if (inserted) {
        idx->second = static_cast<int32_t>(rows.size());
        rows.push_back({ask.resource_name, -1, 0, true});
        g.resolved_generation = 0;  // resolve the new row before the next probe
      }
      RequestGroup::LocalRow& row = rows[idx->second];
      live += (ask.num_containers > 0) - (row.count > 0);
      row.count = ask.num_containers;
      row.relax = ask.relax_locality;
    }
  }
  // Drop groups with nothing outstanding at any level.
  auto empty = [](const RequestGroup& g) {
    return !g.is_am && g.any.count == 0 && g.live_hosts == 0 && g.live_racks == 0;
  };
  for (RequestGroup& g : app->groups) {
    if (empty(g)) DropGang(g);
  }
  app->groups.erase(std::remove_if(app->groups.begin(), app->groups.end(), empty),
                    app->groups.end());
  ApplyUpdates(app, update.updates, targets);
  RecomputePending(app);
  RefreshApp(app);
  return absl::OkStatus();
}

absl::Status Scheduler::ContainerCompleted(ContainerId id) {
  if (!containers_.contains(id))
    return absl::NotFoundError(absl::StrCat("container ", id, " is not allocated"));
  ReleaseContainer(id);
  return absl::OkStatus();
}

absl::Status Scheduler::ContainerCompleted(ContainerId id, int64_t now_ms) {
  if (!containers_.contains(id))
    return absl::NotFoundError(absl::StrCat("container ", id, " is not allocated"));
  const ContainerState& c = slot(id);
  if (!c.is_am && now_ms >= c.allocated_ms) {
    TaskStats& st = apps_.at(c.app)->task_stats[c.priority];
    ++st.completed;
    st.total_ms += now_ms - c.allocated_ms;
  }
  ReleaseContainer(id);
  return absl::OkStatus();
}

absl::Status Scheduler::RecoverContainer(const RecoveredContainer& rc) {
  auto where = [&] { return absl::StrCat("recovering container ", rc.container); };
  auto it = apps_.find(rc.app);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat(where(), ": application ", rc.app, " not found"));
  AppState* app = it->second.get();
  const NodeState* n = node(rc.node);
  if (n == nullptr || n->removed)
    return absl::NotFoundError(absl::StrCat(where(), ": node ", rc.node, " is not live"));
  if (rc.container == 0 || rc.container >= next_container_id_)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": ids from ", next_container_id_,
                     " on are this scheduler's to assign (and 0 is none)"));
  if (containers_.contains(rc.container))
    return absl::AlreadyExistsError(absl::StrCat(where(), ": it is live already"));
  if (rc.resource.AnyNegative() || rc.resource.IsZero())
    return absl::InvalidArgumentError(absl::StrCat(
        where(), ": resource ", registry().Format(rc.resource), " is negative or empty"));
  if (!rc.resource.FitsIn(NodeRoom(*n)))
    return absl::FailedPreconditionError(absl::StrCat(
        where(), ": ", registry().Format(rc.resource), " does not fit on node '", n->name,
        "', which has ", registry().Format((n->capacity - n->allocated).ClampedAtZero()), " free"));
  if (rc.is_am && app->am_usage.AnyPositive())
    return absl::FailedPreconditionError(
        absl::StrCat(where(), ": application ", rc.app, " already holds an AM container"));
  for (const std::string& t : rc.tags) {
    if (!ValidAllocationTag(t))
      return absl::InvalidArgumentError(absl::StrCat(where(), ": allocation tag '", t, "' is invalid"));
  }
  std::vector<DeviceShare> devices = rc.devices;
  if (rc.resource[kGpuMilli] > 0 && devices.empty())
    devices = ChooseGpus(*n, rc.resource[kGpuMilli], false);
  if (rc.resource[kGpuMilli] > 0 || !devices.empty()) {
    if (absl::Status s = CheckGpuShares(*n, rc.resource, devices); !s.ok())
      return absl::Status(s.code(), absl::StrCat(where(), ": ", s.message()));
  }
  const int32_t label = n->label != 0 && labels_[n->label].exclusive ? n->label : 0;
  AddContainer(app, rc.container, rc.node, rc.resource, rc.priority, rc.is_am, rc.allocated_ms,
               rc.tags.empty() ? -1 : InternTags(rc.tags), 0, label, std::move(devices));
  // The AM runs: its ask, if still pending, is satisfied.
  if (rc.is_am && !app->groups.empty() && app->groups.front().is_am) {
    app->groups.erase(app->groups.begin());
    RecomputePending(app);
  }
  ++stats_.recovered;
  RefreshApp(app);
  return absl::OkStatus();
}

void Scheduler::ChargeUsage(AppState* app, const Resource& r, bool is_am, int sign,
                            int32_t label) {
  Resource d = r * sign;
  app->usage += d;
  if (is_am) app->am_usage += d;
  *app->user_usage += d;
  for (QueueNode* q = app->queue; q; q = q->parent) {
    q->usage += d;
    if (is_am) q->am_usage += d;
    if (label != 0) q->label_usage[label] += d;
  }
}

void Scheduler::ReleaseContainer(ContainerId id) {
  auto it = containers_.find(id);
  const int32_t i = it->second;
  containers_.erase(it);
  const ContainerState c = slab_[i];
  NodeState& n = nodes_[c.node];
  AppState* app = apps_.at(c.app).get();
  // Unlink from the node's and the app's lists.
  (c.node_prev >= 0 ? slab_[c.node_prev].node_next : n.first_container) = c.node_next;
  if (c.node_next >= 0) slab_[c.node_next].node_prev = c.node_prev;
  (c.app_prev >= 0 ? slab_[c.app_prev].app_next : app->first_container) = c.app_next;
  if (c.app_next >= 0) slab_[c.app_next].app_prev = c.app_prev;
  --n.num_containers;
  --app->num_containers;
  free_slots_.push_back(i);
  n.allocated -= c.resource;
  if (auto g = gpu_shares_.find(c.id); g != gpu_shares_.end()) {
    ChargeGpus(n, g->second, -1);
    gpu_shares_.erase(g);
    CountHosted(c.node, c.resource, -1);
  }
  UpdateNodeIndex(c.node);
  ChargeUsage(app, c.resource, c.is_am, -1, c.label);
  if (c.tag_set >= 0) CountTags(c, -1);
  if (!app->increases.empty()) {
    std::erase_if(app->increases, [&](const auto& inc) { return inc.first == c.id; });
  }
  RefreshApp(app);
}

std::vector<QueueSummary> Scheduler::QueueSummaries() const {
  std::vector<QueueSummary> out(queue_list_.size());
  absl::flat_hash_map<const QueueNode*, size_t> index;
  for (size_t i = 0; i < queue_list_.size(); ++i) index[queue_list_[i]] = i;
  // Pre-order walked backwards visits children before their parents.
  for (size_t i = queue_list_.size(); i-- > 0;) {
    const QueueNode* q = queue_list_[i];
    QueueSummary& c = out[i];
    c.path = q->path;
    for (const AppState* app : q->apps) {
      c.containers += app->num_containers;
      c.pending_containers += app->pending_containers;
      c.active_apps += app->runnable ? 1 : 0;
    }
    c.pending_apps += static_cast<int64_t>(q->waiting_apps.size());
    if (q->parent != nullptr) {
      QueueSummary& p = out[index.at(q->parent)];
      p.containers += c.containers;
      p.pending_containers += c.pending_containers;
      p.active_apps += c.active_apps;
      p.pending_apps += c.pending_apps;
    }
  }
  return out;
}

}  // namespace weft::scheduler
