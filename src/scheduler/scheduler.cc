#include "scheduler/scheduler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::scheduler {

const char* LocalityName(Locality l) {
  switch (l) {
    case Locality::kNodeLocal:
      return "node-local";
    case Locality::kRackLocal:
      return "rack-local";
    case Locality::kOffSwitch:
      return "off-switch";
  }
  return "?";
}

namespace {

bool HeapLess(const Schedulable* a, const Schedulable* b) { return a->key < b->key; }

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

bool IsRackName(absl::string_view name) { return !name.empty() && name[0] == '/'; }

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and configuration

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    const SchedulerConfig& config, SchedulerOptions options,
    std::unique_ptr<SchedulingPolicy> policy) {
  if (policy == nullptr || policy->name() != config.policy)
    return absl::InvalidArgumentError(
        absl::StrCat("the policy object does not match config policy '", config.policy, "'"));
  if (absl::Status s = policy->Validate(config.root); !s.ok()) return s;
  if (absl::Status s = policy->Configure(config); !s.ok()) return s;
  std::unique_ptr<Scheduler> s(new Scheduler(config, std::move(options), std::move(policy)));
  auto tree = s->BuildTree(config.root);
  if (!tree.ok()) return tree.status();
  s->InstallTree(std::move(*tree));
  s->ClusterChanged();
  return s;
}

Scheduler::Scheduler(const SchedulerConfig& config, SchedulerOptions options,
                     std::unique_ptr<SchedulingPolicy> policy)
    : config_(config),
      options_(std::move(options)),
      policy_(std::move(policy)),
      next_container_id_(options_.first_container_id) {}

Scheduler::~Scheduler() = default;

absl::StatusOr<std::vector<std::unique_ptr<QueueNode>>> Scheduler::BuildTree(
    const QueueConfig& root_config) const {
  if (root_config.name != "root")
    return absl::InvalidArgumentError("the top queue must be named 'root'");
  std::vector<std::unique_ptr<QueueNode>> tree;
  struct Frame {
    const QueueConfig* config;
    QueueNode* parent;
  };
  std::vector<Frame> stack = {{&root_config, nullptr}};
  while (!stack.empty()) {
    Frame f = stack.back();
    stack.pop_back();
    auto q = std::make_unique<QueueNode>();
    q->config = *f.config;
    q->config.children.clear();
    q->parent = f.parent;
    q->path = f.parent ? absl::StrCat(f.parent->path, ".", f.config->name) : f.config->name;
    q->depth = f.parent ? f.parent->depth + 1 : 0;
    q->index = static_cast<int32_t>(tree.size());
    if (!q->config.ordering) q->config.ordering = policy_->DefaultLeafOrdering();
    if (f.parent) f.parent->children.push_back(q.get());
    for (auto it = f.config->children.rbegin(); it != f.config->children.rend(); ++it) {
      stack.push_back({&*it, q.get()});
    }
    tree.push_back(std::move(q));
  }
  return tree;
}

void Scheduler::InstallTree(std::vector<std::unique_ptr<QueueNode>> tree) {
  queue_storage_ = std::move(tree);
  queue_list_.clear();
  queue_by_name_.clear();
  for (auto& q : queue_storage_) {
    queue_list_.push_back(q.get());
    queue_by_name_[q->path] = q.get();
    if (q->is_leaf()) queue_by_name_[q->config.name] = q.get();
  }
  root_ = queue_list_.front();
}

QueueNode* Scheduler::FindQueueMutable(absl::string_view name) const {
  auto it = queue_by_name_.find(name);
  if (it != queue_by_name_.end()) return it->second;
  // "prod" for "root.prod" style paths given without the root.
  it = queue_by_name_.find(absl::StrCat("root.", name));
  return it == queue_by_name_.end() ? nullptr : it->second;
}

const QueueNode* Scheduler::FindQueue(absl::string_view name) const {
  return FindQueueMutable(name);
}

absl::Status Scheduler::Reconfigure(const SchedulerConfig& config) {
  if (config.policy != config_.policy)
    return absl::FailedPreconditionError(absl::StrCat("cannot change the policy from '",
                                                      config_.policy, "' to '", config.policy,
                                                      "' while running"));
  if (absl::Status s = policy_->Validate(config.root); !s.ok()) return s;
  auto tree = BuildTree(config.root);
  if (!tree.ok()) return tree.status();
  absl::flat_hash_map<std::string, QueueNode*> leaves;
  for (auto& q : *tree) {
    if (q->is_leaf()) leaves[q->path] = q.get();
  }
  for (QueueNode* q : queue_list_) {
    if (q->is_leaf() && !q->apps.empty() && !leaves.contains(q->path))
      return absl::FailedPreconditionError(
          absl::StrCat("queue '", q->path, "' holds ", q->apps.size(),
                       " application(s) and would no longer be a leaf queue"));
  }
  if (absl::Status s = policy_->Configure(config); !s.ok()) return s;
  // Move every app to its leaf in the new tree and rebuild the aggregates from the apps.
  std::vector<QueueNode*> old_list = queue_list_;
  auto old_storage = std::move(queue_storage_);
  InstallTree(std::move(*tree));
  config_ = config;
  for (QueueNode* old : old_list) {
    if (!old->is_leaf()) continue;
    QueueNode* leaf = old->apps.empty() ? nullptr : leaves[old->path];
    for (AppState* app : old->apps) {
      app->heap_pos = -1;
      app->queue = leaf;
      leaf->apps.push_back(app);
      if (app->runnable) {
        for (QueueNode* q = leaf; q; q = q->parent) ++q->running_apps;
      }
      for (QueueNode* q = leaf; q; q = q->parent) {
        q->usage += app->usage;
        q->am_usage += app->am_usage;
        q->pending += app->pending;
      }
      app->user_usage = &leaf->user_usage[app->user];
      *app->user_usage += app->usage;
    }
    for (AppState* app : old->waiting_apps) leaf->waiting_apps.push_back(app);
  }
  for (QueueNode* q : queue_list_) {
    if (q->is_leaf()) PromoteWaiting(q);
  }
  ClusterChanged();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Keys and heaps

void Scheduler::ClusterChanged() {
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    view_.inverse_total[i] = view_.total[i] > 0 ? 1.0 / static_cast<double>(view_.total[i]) : 0;
  }
  policy_->Recompute(queue_list_, view_);
  keys_dirty_ = true;
  // Every container holds >= 1 vcore (Normalize), so live containers <= the cluster's vcores.
  // Size (and touch) the container slab and the pass result for that bound now, while nodes
  // register, so that a pass never rehashes, reallocates or page-faults fresh memory.
  const size_t bound = static_cast<size_t>(std::min<int64_t>(view_.total[kVcores], 1 << 22));
  if (bound > slab_.size()) {
    const size_t grown = std::max(bound, 2 * slab_.size());
    containers_.reserve(grown);
    const size_t old_size = slab_.size();
    slab_.resize(grown);
    for (size_t i = grown; i > old_size; --i) free_slots_.push_back(static_cast<int32_t>(i - 1));
    result_.allocations.resize(grown);
    result_.allocations.clear();
  }
}

void Scheduler::RekeyAll() {
  // Clear every heap, then re-activate bottom-up so keys reflect the new view.
  for (QueueNode* q : queue_list_) {
    q->heap.clear();
    q->heap_pos = -1;
  }
  for (auto it = queue_list_.rbegin(); it != queue_list_.rend(); ++it) {
    QueueNode* q = *it;
    if (q->is_leaf()) {
      for (AppState* app : q->apps) {
        app->heap_pos = -1;
        app->key = policy_->AppKey(*app, view_);
        if (Wants(*app)) {
          app->heap_pos = static_cast<int32_t>(q->heap.size());
          q->heap.push_back(app);
        }
      }
    } else {
      for (QueueNode* c : q->children) {
        if (!c->heap.empty()) {
          c->heap_pos = static_cast<int32_t>(q->heap.size());
          q->heap.push_back(c);
        }
      }
    }
    std::make_heap(q->heap.begin(), q->heap.end(),
                   [](const Schedulable* a, const Schedulable* b) { return HeapLess(b, a); });
    for (size_t i = 0; i < q->heap.size(); ++i) q->heap[i]->heap_pos = static_cast<int32_t>(i);
    q->key = policy_->QueueKey(*q, q->heap.empty() ? OrderKey{} : q->heap.front()->key, view_);
  }
  keys_dirty_ = false;
}

void Scheduler::HeapFix(QueueNode* q, int pos) {
  auto& h = q->heap;
  Schedulable* s = h[pos];
  // Sift up.
  while (pos > 0) {
    int parent = (pos - 1) / 2;
    if (!HeapLess(s, h[parent])) break;
    h[pos] = h[parent];
    h[pos]->heap_pos = pos;
    pos = parent;
  }
  // Sift down.
  int n = static_cast<int>(h.size());
  while (true) {
    int child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && HeapLess(h[child + 1], h[child])) ++child;
    if (!HeapLess(h[child], s)) break;
    h[pos] = h[child];
    h[pos]->heap_pos = pos;
    pos = child;
  }
  h[pos] = s;
  s->heap_pos = pos;
}

void Scheduler::HeapPush(QueueNode* q, Schedulable* s) {
  s->heap_pos = static_cast<int32_t>(q->heap.size());
  q->heap.push_back(s);
  HeapFix(q, s->heap_pos);
}

void Scheduler::HeapRemove(QueueNode* q, Schedulable* s) {
  int pos = s->heap_pos;
  Schedulable* last = q->heap.back();
  q->heap.pop_back();
  s->heap_pos = -1;
  if (last != s) {
    q->heap[pos] = last;
    last->heap_pos = pos;
    HeapFix(q, pos);
  }
}

bool Scheduler::Wants(const AppState& app) const {
  return app.runnable && app.pending_containers > 0 && !(in_pass_ && app.blocked_pass == pass_id_);
}

// Recomputes the keys of `leaf` and its ancestors after a change below them, inserting or
// removing queues from their parents' heaps as they gain or lose active children.
void Scheduler::RefreshUp(QueueNode* leaf) {
  for (QueueNode* q = leaf; q->parent; q = q->parent) {
    QueueNode* parent = q->parent;
    if (q->heap.empty()) {
      if (q->heap_pos >= 0) HeapRemove(parent, q);
      continue;
    }
    q->key = policy_->QueueKey(*q, q->heap.front()->key, view_);
    if (q->heap_pos >= 0) {
      HeapFix(parent, q->heap_pos);
    } else {
      HeapPush(parent, q);
    }
  }
}

void Scheduler::RefreshApp(AppState* app) {
  if (keys_dirty_) return;  // RekeyAll at the next pass rebuilds everything
  app->key = policy_->AppKey(*app, view_);
  bool wants = Wants(*app);
  if (wants && app->heap_pos < 0) {
    HeapPush(app->queue, app);
  } else if (!wants && app->heap_pos >= 0) {
    HeapRemove(app->queue, app);
  } else if (app->heap_pos >= 0) {
    HeapFix(app->queue, app->heap_pos);
  }
  RefreshUp(app->queue);
}

void Scheduler::Activate(AppState* app) { RefreshApp(app); }
void Scheduler::Deactivate(AppState* app) { RefreshApp(app); }

// ---------------------------------------------------------------------------------------------
// Nodes

Resource Scheduler::NodeFree(const NodeState& n) const {
  if (!n.schedulable) return FitIndex::Blocked();
  return n.capacity - n.allocated;
}

void Scheduler::UpdateNodeIndex(NodeId id) {
  const NodeState& n = nodes_[id];
  Rack& rack = racks_[n.rack];
  rack.nodes.Set(n.rack_slot, NodeFree(n));
  rack_index_.Set(n.rack, rack.nodes.Max());
}

absl::StatusOr<NodeId> Scheduler::AddNode(const NodeSpec& spec) {
  if (spec.name.empty() || spec.name == kAnyResourceName || IsRackName(spec.name))
    return absl::InvalidArgumentError(
        absl::StrCat("node name '", spec.name, "' must be non-empty and not start with '/'"));
  if (!IsRackName(spec.rack))
    return absl::InvalidArgumentError(
        absl::StrCat("node '", spec.name, "': rack '", spec.rack, "' must start with '/'"));
  if (node_by_name_.contains(spec.name))
    return absl::AlreadyExistsError(absl::StrCat("node '", spec.name, "' is already registered"));
  if (spec.capacity.AnyNegative())
    return absl::InvalidArgumentError(absl::StrCat(
        "node '", spec.name, "': capacity ", registry().Format(spec.capacity), " is negative"));
  for (int i = registry().size(); i < kMaxResourceTypes; ++i) {
    if (spec.capacity[i] != 0)
      return absl::InvalidArgumentError(
          absl::StrCat("node '", spec.name, "': capacity names unregistered type id ", i));
  }
  auto [rit, new_rack] = rack_by_name_.try_emplace(spec.rack, static_cast<int32_t>(racks_.size()));
  if (new_rack) {
    racks_.push_back(Rack{spec.rack, {}, {}});
    rack_index_.AddSlot();
  }
  NodeId id = static_cast<NodeId>(nodes_.size());
  NodeState n;
  n.name = spec.name;
  n.rack = rit->second;
  n.capacity = spec.capacity;
  Rack& rack = racks_[n.rack];
  n.rack_slot = rack.nodes.AddSlot();
  rack.slot_node.push_back(id);
  nodes_.push_back(std::move(n));
  node_by_name_[spec.name] = id;
  ++live_nodes_;
  ++topology_generation_;
  UpdateNodeIndex(id);
  view_.total += spec.capacity;
  // Blacklists may name this node before it registered.
  for (auto& [app_id, app] : apps_) {
    if (std::find(app->blacklist_names.begin(), app->blacklist_names.end(), spec.name) !=
        app->blacklist_names.end())
      app->blacklist.insert(id);
  }
  ClusterChanged();
  return id;
}

absl::StatusOr<std::vector<ContainerKill>> Scheduler::RemoveNode(absl::string_view name) {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end())
    return absl::NotFoundError(absl::StrCat("node '", name, "' is not registered"));
  NodeId id = it->second;
  NodeState& n = nodes_[id];
  std::vector<ContainerKill> lost;
  for (ContainerId c : NodeContainers(id)) {
    const ContainerState& cs = slot(c);
    lost.push_back({c, cs.app, id, cs.resource, ContainerExit::kNodeLost, cs.is_am, cs.allocated_ms});
    ReleaseContainer(c);
  }
  if (n.schedulable) view_.total -= n.capacity;
  n.schedulable = false;
  n.removed = true;
  UpdateNodeIndex(id);
  node_by_name_.erase(it);
  --live_nodes_;
  ++topology_generation_;
  for (auto& [app_id, app] : apps_) app->blacklist.erase(id);
  ClusterChanged();
  return lost;
}

absl::Status Scheduler::UpdateNode(absl::string_view name, const Resource& capacity, bool healthy) {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end())
    return absl::NotFoundError(absl::StrCat("node '", name, "' is not registered"));
  if (capacity.AnyNegative())
    return absl::InvalidArgumentError(
        absl::StrCat("node '", name, "': capacity ", registry().Format(capacity), " is negative"));
  NodeState& n = nodes_[it->second];
  if (n.schedulable) view_.total -= n.capacity;
  n.capacity = capacity;
  n.schedulable = healthy;
  if (n.schedulable) view_.total += n.capacity;
  UpdateNodeIndex(it->second);
  ClusterChanged();
  return absl::OkStatus();
}

const NodeState* Scheduler::node(NodeId id) const {
  if (id < 0 || id >= static_cast<NodeId>(nodes_.size())) return nullptr;
  return &nodes_[id];
}

NodeId Scheduler::FindNode(absl::string_view name) const {
  auto it = node_by_name_.find(name);
  return it == node_by_name_.end() ? -1 : it->second;
}

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

bool Scheduler::CanRun(const QueueNode* leaf) const {
  for (const QueueNode* q = leaf; q; q = q->parent) {
    if (q->config.max_running_apps >= 0 && q->running_apps >= q->config.max_running_apps)
      return false;
  }
  return true;
}

void Scheduler::PromoteWaiting(QueueNode* leaf) {
  while (!leaf->waiting_apps.empty() && CanRun(leaf)) {
    AppState* app = leaf->waiting_apps.front();
    leaf->waiting_apps.pop_front();
    app->runnable = true;
    for (QueueNode* q = leaf; q; q = q->parent) ++q->running_apps;
    RefreshApp(app);
  }
}

absl::Status Scheduler::AddApp(const AppSpec& spec, int64_t now_ms) {
  (void)now_ms;
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
  if (CanRun(leaf)) {
    raw->runnable = true;
    for (QueueNode* q = leaf; q; q = q->parent) ++q->running_apps;
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
  if (app->runnable) {
    for (QueueNode* q = leaf; q; q = q->parent) --q->running_apps;
  }
  bool other = false;
  for (AppState* a : leaf->apps) other |= a != app && a->user == app->user;
  if (!other) leaf->user_usage.erase(app->user);
  apps_.erase(it);
  PromoteWaiting(leaf);
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
  }
  for (ContainerId c : update.releases) {
    const ContainerState* cs = container(c);
    if (cs == nullptr || cs->app != id)
      return absl::InvalidArgumentError(absl::StrCat("application ", id,
                                                     ": cannot release container ", c,
                                                     ": not allocated to this application"));
  }
  for (const auto* list : {&update.blacklist_additions, &update.blacklist_removals}) {
    for (const std::string& name : *list) {
      if (name.empty() || name == kAnyResourceName || IsRackName(name))
        return absl::InvalidArgumentError(
            absl::StrCat("application ", id, ": blacklist entry '", name, "' is not a node name"));
    }
  }

  // Apply.
  for (ContainerId c : update.releases) ReleaseContainer(c);
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
    } else {
      bool rack = IsRackName(ask.resource_name);
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
  app->groups.erase(std::remove_if(app->groups.begin(), app->groups.end(),
                                   [](const RequestGroup& g) {
                                     return !g.is_am && g.any.count == 0 && g.live_hosts == 0 &&
                                            g.live_racks == 0;
                                   }),
                    app->groups.end());
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
    PhaseStats& st = apps_.at(c.app)->phase_stats[c.priority];
    ++st.completed;
    st.total_ms += now_ms - c.allocated_ms;
  }
  ReleaseContainer(id);
  return absl::OkStatus();
}

void Scheduler::ChargeUsage(AppState* app, const Resource& r, bool is_am, int sign) {
  Resource d = r * sign;
  app->usage += d;
  if (is_am) app->am_usage += d;
  *app->user_usage += d;
  for (QueueNode* q = app->queue; q; q = q->parent) {
    q->usage += d;
    if (is_am) q->am_usage += d;
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
  UpdateNodeIndex(c.node);
  ChargeUsage(app, c.resource, c.is_am, -1);
  RefreshApp(app);
}

// ---------------------------------------------------------------------------------------------
// Allocation

bool Scheduler::WithinLimits(const AppState& app, const Resource& r, bool is_am) const {
  for (const QueueNode* q = app.queue; q; q = q->parent) {
    if (!(q->usage + r).FitsIn(q->limit)) return false;
  }
  return policy_->CanAllocate(app, r, is_am, view_);
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

bool Scheduler::Usable(const AppState& app, NodeId id, const Resource& r) const {
  const NodeState& n = nodes_[id];
  return n.schedulable && r.FitsIn(n.capacity - n.allocated) && !app.blacklist.contains(id);
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
                       int32_t rack_row, int64_t now_ms, PassResult* out) {
  RequestGroup& g = app->groups[gi];
  const Resource r = g.capability;
  ContainerId id = next_container_id_++;
  NodeState& n = nodes_[node];
  n.allocated += r;
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
  c = ContainerState{id, app->id, node, r, g.priority, g.is_am, now_ms, -1};
  c.node_next = n.first_container;
  if (c.node_next >= 0) slab_[c.node_next].node_prev = i;
  n.first_container = i;
  c.app_next = app->first_container;
  if (c.app_next >= 0) slab_[c.app_next].app_prev = i;
  app->first_container = i;
  ++n.num_containers;
  ++app->num_containers;
  containers_.emplace(id, i);
  ChargeUsage(app, r, g.is_am, +1);
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
  out->allocations.push_back(
      {id, app->id, node, r, g.priority, g.allocation_request_id, g.is_am, locality});
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

bool Scheduler::PlaceGroup(AppState* app, size_t gi, int64_t now_ms, PassResult* out) {
  RequestGroup& g = app->groups[gi];
  const Resource& r = g.capability;
  const LocalityConfig& loc = config_.locality;
  const int probes = loc.max_locality_probes;
  bool has_hosts = g.live_hosts > 0;
  bool has_racks = g.live_racks > 0;

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

  NodeId id = FindAnywhere(*app, r);
  if (id < 0) return false;
  Commit(app, gi, id, Locality::kOffSwitch, -1, -1, now_ms, out);
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
    return s_->Usable(app, node, g.capability) && s_->LocalityAllows(g, node) &&
           s_->WithinLimits(app, g.capability, g.is_am);
  }
  bool Place(AppId id, size_t gi, NodeId node) override {
    auto it = s_->apps_.find(id);
    if (it == s_->apps_.end() || !it->second->runnable) return false;
    AppState* app = it->second.get();
    if (!CanPlace(*app, gi, node)) return false;
    RequestGroup& g = app->groups[gi];
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
  ++stats_.passes;
  ++pass_id_;
  if (keys_dirty_) RekeyAll();
  KillExpired(now_ms, &out);
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
  };
  std::vector<Candidate> candidates;
  for (QueueNode* q : queue_list_) {
    if (!q->is_leaf()) continue;
    if (view_.Share(q->usage - marked[q]) <= view_.Share(q->entitlement)) continue;
    for (AppState* app : q->apps) {
      for (int32_t i = app->first_container; i >= 0; i = slab_[i].app_next) {
        if (slab_[i].preempt_deadline_ms < 0) candidates.push_back({slab_[i].id, slab_[i].is_am});
      }
    }
  }
  // Newest first (ids grow with time), AM containers last.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    if (a.is_am != b.is_am) return !a.is_am;
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
