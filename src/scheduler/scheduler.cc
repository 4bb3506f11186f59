// Copyright Weft authors. The scheduler core: construction and reconfiguration, ordering keys
// and heaps, nodes. Apps and requests: scheduler_apps.cc; allocation passes:
// scheduler_allocation.cc; entitlements and preemption: scheduler_preemption.cc.
#include "scheduler/scheduler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduler_internal.h"

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

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and configuration

absl::StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    const SchedulerConfig& given, SchedulerOptions options,
    std::unique_ptr<SchedulingPolicy> policy) {
  SchedulerConfig config = given;
  if (config.policy.empty() && policy != nullptr) config.policy = std::string(policy->name());
  if (policy == nullptr || policy->name() != config.policy)
    return absl::InvalidArgumentError(
        absl::StrCat("the policy object does not match config policy '", config.policy, "'"));
  if (absl::Status s = policy->Validate(config.root); !s.ok()) return s;
  if (absl::Status s = policy->Configure(config); !s.ok()) return s;
  std::unique_ptr<Scheduler> s(new Scheduler(config, std::move(options), std::move(policy)));
  if (absl::Status st = s->InstallLabels(config); !st.ok()) return st;
  auto tree = s->BuildTree(config);
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
    const SchedulerConfig& config) const {
  const QueueConfig& root_config = config.root;
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
    if (!q->config.max_am_share) q->config.max_am_share = config.queue_max_am_share_default;
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

QueueCapacities Scheduler::Capacities(const QueueNode& queue) const {
  if (queue.parent == nullptr) return QueueCapacities();
  return policy_->Capacities(queue, Capacities(*queue.parent), view_);  // recursion: depth
}

absl::Status Scheduler::Reconfigure(const SchedulerConfig& given) {
  SchedulerConfig config = given;
  if (config.policy.empty()) config.policy = config_.policy;
  if (config.policy != config_.policy)
    return absl::FailedPreconditionError(absl::StrCat("cannot change the policy from '",
                                                      config_.policy, "' to '", config.policy,
                                                      "' while running"));
  if (absl::Status s = policy_->Validate(config.root); !s.ok()) return s;
  auto tree = BuildTree(config);
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
  if (absl::Status s = InstallLabels(config); !s.ok()) return s;
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
      for (int32_t i = app->first_container; i >= 0; i = slab_[i].app_next) {
        if (slab_[i].label == 0) continue;
        for (QueueNode* q = leaf; q; q = q->parent) q->label_usage[slab_[i].label] += slab_[i].resource;
      }
    }
    for (AppState* app : old->waiting_apps) leaf->waiting_apps.push_back(app);
  }
  ClusterChanged();
  // New limits (of queues or users) may let waiting apps run.
  std::vector<AppState*> waiting;
  CollectWaiting(root_, &waiting);
  PromoteWaiting(std::move(waiting));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Keys and heaps

void Scheduler::ClusterChanged() {
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    view_.inverse_total[i] = view_.total[i] > 0 ? 1.0 / static_cast<double>(view_.total[i]) : 0;
  }
  policy_->Recompute(queue_list_, view_);
  ResolveQueueLabels();
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
  return NodeRoom(n);
}

// A node reserved for a gang shows no room to anyone (the gang looks at its reservation
// directly); an exclusive label's node none to the default partition.
void Scheduler::UpdateNodeIndex(NodeId id) {
  const NodeState& n = nodes_[id];
  Rack& rack = racks_[n.rack];
  const Resource free = n.reserved_for != 0 ? FitIndex::Blocked() : NodeFree(n);
  const bool exclusive = n.label != 0 && labels_[n.label].exclusive;
  rack.nodes.Set(n.rack_slot, exclusive ? FitIndex::Blocked() : free);
  rack_index_.Set(n.rack, rack.nodes.Max());
  if (n.label != 0) labels_[n.label].nodes.Set(n.label_slot, free);
}

absl::StatusOr<NodeId> Scheduler::AddNode(const NodeSpec& spec) {
  if (spec.name.empty() || spec.name == kAnyResourceName || internal::IsRackName(spec.name))
    return absl::InvalidArgumentError(
        absl::StrCat("node name '", spec.name, "' must be non-empty and not start with '/'"));
  if (!internal::IsRackName(spec.rack))
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
  int32_t label = 0;
  if (!spec.node_label.empty()) {
    auto l = label_by_name_.find(spec.node_label);
    if (l == label_by_name_.end())
      return absl::InvalidArgumentError(absl::StrCat(
          "node '", spec.name, "': node label '", spec.node_label,
          "' is not a cluster node label (the scheduler configuration's node-labels)"));
    label = l->second;
  }
  NodeAttributes attributes = spec.attributes;
  std::sort(attributes.begin(), attributes.end());
  for (size_t i = 0; i < attributes.size(); ++i) {
    if (absl::Status s = ValidateConstraint(
            PlacementConstraint::AttributeIs(attributes[i].first, attributes[i].second));
        !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("node '", spec.name, "': attribute ",
                                                     attributes[i].first, "=",
                                                     attributes[i].second, ": ", s.message()));
    if (i > 0 && attributes[i - 1].first == attributes[i].first)
      return absl::InvalidArgumentError(absl::StrCat("node '", spec.name, "': attribute '",
                                                     attributes[i].first, "' is given twice"));
  }
  absl::StatusOr<std::vector<NodeGpu>> gpus = MakeNodeGpus(spec);
  if (!gpus.ok()) return gpus.status();
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
  n.label = label;
  n.attributes = std::move(attributes);
  n.gpus = *std::move(gpus);
  Rack& rack = racks_[n.rack];
  n.rack_slot = rack.nodes.AddSlot();
  rack.slot_node.push_back(id);
  if (label != 0) {
    Label& l = labels_[label];
    n.label_slot = l.nodes.AddSlot();
    l.slot_node.push_back(id);
    l.total += spec.capacity;
    ++l.live_nodes;
  }
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
    lost.push_back(
        {c, cs.app, id, cs.resource, ContainerExit::kNodeLost, cs.is_am, cs.allocated_ms});
    ReleaseContainer(c);
  }
  if (n.schedulable) view_.total -= n.capacity;
  if (n.label != 0) {
    if (n.schedulable) labels_[n.label].total -= n.capacity;
    --labels_[n.label].live_nodes;
  }
  if (n.reserved_for != 0) {
    std::erase(reservation_.nodes, id);
    n.reserved_for = 0;
  }
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
  if (n.schedulable && n.label != 0) labels_[n.label].total -= n.capacity;
  n.capacity = capacity;
  // A node's GPU capacity is its healthy GPUs', whatever it reports.
  if (!n.gpus.empty()) n.capacity[kGpuMilli] = GpuCapacity(n.gpus);
  n.schedulable = healthy;
  if (n.schedulable) view_.total += n.capacity;
  if (n.schedulable && n.label != 0) labels_[n.label].total += n.capacity;
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

}  // namespace weft::scheduler
