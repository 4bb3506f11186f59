// Copyright Weft authors. The scheduler core: node labels, allocation tags, placement
// constraints and container resizing. Gangs: scheduler_gang.cc.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_internal.h"

namespace weft::scheduler {
namespace {

// Nodes a constrained search looks at before it gives up for this pass (the next pass goes
// on from where the index's order puts it).
constexpr int kConstraintProbes = 512;

bool ValidLabelName(absl::string_view s) { return ValidAllocationTag(s); }

const std::string* AttributeOf(const NodeState& n, absl::string_view key) {
  auto it = std::lower_bound(n.attributes.begin(), n.attributes.end(), key,
                             [](const auto& kv, absl::string_view k) { return kv.first < k; });
  if (it == n.attributes.end() || it->first != key) return nullptr;
  return &it->second;
}

// The first kTags child with min >= 1 and node or rack scope: its target's nodes are where
// the constraint can hold at all (affinity), so they are the candidates to try.
const PlacementConstraint* AffinityOf(const PlacementConstraint& c) {
  using K = PlacementConstraint::Kind;
  if (c.kind == K::kTags && c.min >= 1 && c.scope != ConstraintScope::kAttribute &&
      c.tags.size() == 1)
    return &c;
  if (c.kind == K::kAnd) {
    for (const PlacementConstraint& child : c.children) {
      if (const PlacementConstraint* a = AffinityOf(child)) return a;
    }
  }
  return nullptr;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Node labels

absl::Status Scheduler::InstallLabels(const SchedulerConfig& config) {
  for (const auto& [name, label] : config.node_labels) {
    if (!ValidLabelName(name))
      return absl::InvalidArgumentError(
          absl::StrCat("node label '", name, "' is not 1-255 characters of [A-Za-z0-9_.-]"));
  }
  std::vector<const QueueConfig*> stack = {&config.root};
  while (!stack.empty()) {
    const QueueConfig* q = stack.back();
    stack.pop_back();
    for (const QueueConfig& c : q->children) stack.push_back(&c);
    for (const std::string& l : q->accessible_node_labels.value_or(std::vector<std::string>{})) {
      if (l != "*" && !config.node_labels.contains(l))
        return absl::InvalidArgumentError(absl::StrCat(
            "queue '", q->name, "': accessible node label '", l, "' is not a cluster node label"));
    }
    for (const auto& [l, pct] : q->node_label_maximum_capacity) {
      if (!config.node_labels.contains(l))
        return absl::InvalidArgumentError(absl::StrCat(
            "queue '", q->name, "': node label '", l, "' is not a cluster node label"));
      if (!(pct >= 0 && pct <= 100))
        return absl::InvalidArgumentError(absl::StrCat("queue '", q->name, "': maximum capacity ",
                                                       pct, " on node label '", l,
                                                       "' is not a percentage in [0, 100]"));
    }
  }
  // Labels are never renumbered: one a live node carries may not go.
  for (size_t i = 1; i < labels_.size(); ++i) {
    if (labels_[i].live_nodes > 0 && !config.node_labels.contains(labels_[i].name))
      return absl::FailedPreconditionError(absl::StrCat("node label '", labels_[i].name, "' is on ",
                                                        labels_[i].live_nodes,
                                                        " node(s) and cannot be removed"));
  }
  if (labels_.empty()) labels_.push_back(Label{"", false, {}, {}, {}, 0});
  for (const auto& [name, label] : config.node_labels) {
    auto [it, inserted] = label_by_name_.try_emplace(name, static_cast<int32_t>(labels_.size()));
    if (inserted) labels_.push_back(Label{name, label.exclusive, {}, {}, {}, 0});
    labels_[it->second].exclusive = label.exclusive;
  }
  // Exclusivity may have changed: the default partition's index must follow.
  for (NodeId id = 0; id < static_cast<NodeId>(nodes_.size()); ++id) {
    if (!nodes_[id].removed && nodes_[id].label != 0) UpdateNodeIndex(id);
  }
  return absl::OkStatus();
}

void Scheduler::ResolveQueueLabels() {
  const size_t n = labels_.size();
  for (QueueNode* q : queue_list_) {  // pre-order: parents first
    q->label_access.assign(n, false);
    q->label_access[0] = true;
    const std::optional<std::vector<std::string>>& given = q->config.accessible_node_labels;
    if (!given.has_value()) {
      if (q->parent == nullptr) {
        q->label_access.assign(n, true);
      } else {
        q->label_access = q->parent->label_access;
      }
    } else {
      for (const std::string& name : *given) {
        if (name == "*") q->label_access.assign(n, true);
        auto it = label_by_name_.find(name);
        if (it != label_by_name_.end()) q->label_access[it->second] = true;
      }
    }
    // Absolute maximum on each label: the product of the percentages down the path.
    q->label_limit.clear();
    for (size_t l = 1; l < n; ++l) {
      double fraction = 1.0;
      for (const QueueNode* a = q; a != nullptr; a = a->parent) {
        auto it = a->config.node_label_maximum_capacity.find(labels_[l].name);
        if (it != a->config.node_label_maximum_capacity.end()) fraction *= it->second / 100.0;
      }
      if (fraction >= 1.0) continue;
      Resource limit;
      for (int i = 0; i < kMaxResourceTypes; ++i) {
        limit[i] = static_cast<int64_t>(
            std::floor(static_cast<double>(labels_[l].total[i]) * fraction + 1e-9));
      }
      q->label_limit[static_cast<int32_t>(l)] = limit;
    }
  }
}

bool Scheduler::LabelLimitAllows(const AppState& app, int32_t label, const Resource& r) const {
  if (label == 0) return true;
  for (const QueueNode* q = app.queue; q; q = q->parent) {
    auto l = q->label_limit.find(label);
    if (l == q->label_limit.end()) continue;
    auto u = q->label_usage.find(label);
    const Resource used = u == q->label_usage.end() ? Resource() : u->second;
    if (!(used + r).FitsIn(l->second)) return false;
  }
  return true;
}

bool Scheduler::LabelAllows(int32_t label, const NodeState& n) const {
  if (label != 0) return n.label == label;
  return n.label == 0 || !labels_[n.label].exclusive;
}

std::vector<Scheduler::LabelSummary> Scheduler::Labels() const {
  std::vector<LabelSummary> out;
  for (const Label& l : labels_) out.push_back({l.name, l.exclusive, l.live_nodes, l.total});
  if (!out.empty()) {  // the default partition: what no label holds
    out[0].total = view_.total;
    out[0].nodes = live_nodes_;
    for (size_t i = 1; i < labels_.size(); ++i) {
      out[0].total -= labels_[i].total;
      out[0].nodes -= labels_[i].live_nodes;
    }
  }
  return out;
}

absl::Status Scheduler::SetNodeAttributes(absl::string_view name, const NodeAttributes& given) {
  auto it = node_by_name_.find(name);
  if (it == node_by_name_.end())
    return absl::NotFoundError(absl::StrCat("node '", name, "' is not registered"));
  NodeAttributes attributes = given;
  std::sort(attributes.begin(), attributes.end());
  for (size_t i = 0; i < attributes.size(); ++i) {
    const auto& [key, value] = attributes[i];
    PlacementConstraint probe = PlacementConstraint::AttributeIs(key, value);
    if (absl::Status s = ValidateConstraint(probe); !s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("node '", name, "': attribute ", key, "=", value, ": ", s.message()));
    if (i > 0 && attributes[i - 1].first == key)
      return absl::InvalidArgumentError(
          absl::StrCat("node '", name, "': attribute '", key, "' is given twice"));
  }
  nodes_[it->second].attributes = std::move(attributes);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Allocation tags

int32_t Scheduler::InternTags(const std::vector<std::string>& tags) {
  std::vector<std::string> sorted = tags;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  auto [it, inserted] =
      tag_set_ids_.try_emplace(absl::StrJoin(sorted, ","), static_cast<int32_t>(tag_sets_.size()));
  if (inserted) {
    std::vector<int32_t> ids;
    for (const std::string& t : sorted) {
      auto [tid, fresh] = tag_ids_.try_emplace(t, static_cast<int32_t>(tag_nodes_.size()));
      if (fresh) tag_nodes_.emplace_back();
      ids.push_back(tid->second);
    }
    tag_sets_.push_back(std::move(sorted));
    tag_set_ids_list_.push_back(std::move(ids));
  }
  return it->second;
}

int32_t Scheduler::TagId(const std::string& tag) const {
  auto it = tag_ids_.find(tag);
  return it == tag_ids_.end() ? -1 : it->second;
}

void Scheduler::TagCounts::Add(int32_t tag, int32_t scope, AppId app, int sign) {
  const uint64_t key = (static_cast<uint64_t>(tag) << 32) | static_cast<uint32_t>(scope);
  if ((total[key] += sign) == 0) total.erase(key);
  const auto app_key = std::make_tuple(tag, scope, app);
  if ((by_app[app_key] += sign) == 0) by_app.erase(app_key);
}

int32_t Scheduler::TagCounts::Total(int32_t tag, int32_t scope) const {
  auto it = total.find((static_cast<uint64_t>(tag) << 32) | static_cast<uint32_t>(scope));
  return it == total.end() ? 0 : it->second;
}

int32_t Scheduler::TagCounts::Of(int32_t tag, int32_t scope, AppId app) const {
  auto it = by_app.find(std::make_tuple(tag, scope, app));
  return it == by_app.end() ? 0 : it->second;
}

void Scheduler::CountTags(const ContainerState& c, int sign) {
  const int32_t rack = nodes_[c.node].rack;
  for (int32_t tag : tag_set_ids_list_[c.tag_set]) {
    node_tags_.Add(tag, c.node, c.app, sign);
    rack_tags_.Add(tag, rack, c.app, sign);
    auto& nodes = tag_nodes_[tag];
    if ((nodes[c.node] += sign) == 0) nodes.erase(c.node);
  }
}

std::vector<std::string> Scheduler::ContainerTags(ContainerId id) const {
  const ContainerState* c = container(id);
  if (c == nullptr || c->tag_set < 0) return {};
  return tag_sets_[c->tag_set];
}

// ---------------------------------------------------------------------------------------------
// Constraints

int32_t Scheduler::CountTag(const std::string& tag, const PlacementConstraint& c, AppId app,
                            NodeId node) const {
  const int32_t tag_id = TagId(tag);
  if (tag_id < 0) return 0;
  auto pick = [&](const TagCounts& counts, int32_t scope) -> int32_t {
    switch (c.ns) {
      case TagNamespace::kSelf:
        return counts.Of(tag_id, scope, app);
      case TagNamespace::kNotSelf:
        return counts.Total(tag_id, scope) - counts.Of(tag_id, scope, app);
      case TagNamespace::kAll:
        return counts.Total(tag_id, scope);
      case TagNamespace::kAppId:
        return counts.Of(tag_id, scope, c.ns_app);
    }
    return 0;
  };
  switch (c.scope) {
    case ConstraintScope::kNode:
      return pick(node_tags_, node);
    case ConstraintScope::kRack:
      return pick(rack_tags_, nodes_[node].rack);
    case ConstraintScope::kAttribute: {
      const std::string* value = AttributeOf(nodes_[node], c.scope_attribute);
      if (value == nullptr) return 0;
      int32_t sum = 0;
      for (const auto& [other, n] : tag_nodes_[tag_id]) {
        const std::string* v = AttributeOf(nodes_[other], c.scope_attribute);
        if (v != nullptr && *v == *value) sum += pick(node_tags_, other);
      }
      return sum;
    }
  }
  return 0;
}

bool Scheduler::Satisfies(const PlacementConstraint& c, AppId app, NodeId node) const {
  using K = PlacementConstraint::Kind;
  switch (c.kind) {
    case K::kTags: {
      int32_t least = INT32_MAX, most = 0;
      for (const std::string& tag : c.tags) {
        const int32_t n = CountTag(tag, c, app, node);
        least = std::min(least, n);
        most = std::max(most, n);
      }
      return least >= c.min && most <= c.max;
    }
    case K::kAttribute: {
      const std::string* value = AttributeOf(nodes_[node], c.attribute);
      const bool listed =
          value != nullptr && std::find(c.values.begin(), c.values.end(), *value) != c.values.end();
      return c.equal ? listed : !listed;
    }
    case K::kAnd:
      for (const PlacementConstraint& child : c.children) {
        if (!Satisfies(child, app, node)) return false;
      }
      return true;
    case K::kOr:
      for (const PlacementConstraint& child : c.children) {
        if (Satisfies(child, app, node)) return true;
      }
      return false;
  }
  return false;
}

bool Scheduler::NodeOk(const AppState& app, const GroupPlacement& p, const Resource& r, NodeId id,
                       bool with_constraint) const {
  return Usable(app, id, r, p.label, p.gpu_same_group) &&
         (!with_constraint || !p.has_constraint || Satisfies(p.constraint, app.id, id));
}

bool Scheduler::PlacementAllows(AppId app_id, const GroupPlacement& p, const Resource& r,
                                NodeId node) const {
  const AppState* a = app(app_id);
  const NodeState* n = this->node(node);
  if (a == nullptr || n == nullptr || n->removed) return false;
  return NodeOk(*a, p, r, node, /*with_constraint=*/true);
}

template <typename Pred>
NodeId Scheduler::WalkIndex(const FitIndex& index, const std::vector<NodeId>& slot_node,
                            const Resource& r, int* budget, Pred ok) const {
  if (index.size() == 0) return -1;
  const int first = index.FindFrom(r, 0);
  int slot = first;
  while (slot >= 0 && *budget > 0) {
    --*budget;
    if (ok(slot_node[slot])) return slot_node[slot];
    const int from = slot + 1 < index.size() ? slot + 1 : 0;
    slot = index.FindFrom(r, from);
    if (slot == first) break;
  }
  return -1;
}

NodeId Scheduler::FindPlaced(const AppState& app, const GroupPlacement& p, const Resource& r,
                             bool with_constraint) const {
  auto ok = [&](NodeId id) { return NodeOk(app, p, r, id, with_constraint); };
  // The gang's own reservation first.
  if (reservation_.app == app.id) {
    for (NodeId id : reservation_.nodes) {
      if (ok(id)) return id;
    }
  }
  int budget = kConstraintProbes;
  // Affinity: only nodes (or racks) where the target tag is can satisfy it.
  if (with_constraint && p.has_constraint) {
    if (const PlacementConstraint* a = AffinityOf(p.constraint)) {
      const int32_t tag_id = TagId(a->tags[0]);
      if (tag_id < 0 || tag_nodes_[tag_id].empty()) return -1;
      const absl::flat_hash_map<NodeId, int32_t>& tagged = tag_nodes_[tag_id];
      if (a->scope == ConstraintScope::kNode) {
        // The lowest fitting id (deterministic), among at most the probe budget of them.
        NodeId best = -1;
        for (const auto& [id, count] : tagged) {
          if (best >= 0 && id > best) continue;
          if (--budget < 0) break;
          if (ok(id)) best = id;
        }
        return best;
      }
      std::vector<int32_t> racks;
      for (const auto& [id, count] : tagged) racks.push_back(nodes_[id].rack);
      std::sort(racks.begin(), racks.end());
      racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
      for (int32_t rack : racks) {
        const Rack& rk = racks_[rack];
        if (p.label == 0) {
          NodeId id = WalkIndex(rk.nodes, rk.slot_node, r, &budget, ok);
          if (id >= 0) return id;
        } else {
          for (NodeId id : rk.slot_node) {
            if (ok(id)) return id;
          }
        }
      }
      return -1;
    }
  }
  if (p.label != 0) {
    const Label& l = labels_[p.label];
    return WalkIndex(l.nodes, l.slot_node, r, &budget, ok);
  }
  // The default partition: rack by rack through the index, from the rotating cursor.
  if (rack_index_.size() == 0) return -1;
  const int start = rack_cursor_ < rack_index_.size() ? rack_cursor_ : 0;
  int rack = rack_index_.FindFrom(r, start);
  const int first = rack;
  while (rack >= 0 && budget > 0) {
    NodeId id = WalkIndex(racks_[rack].nodes, racks_[rack].slot_node, r, &budget, ok);
    if (id >= 0) return id;
    rack = rack_index_.FindFrom(r, rack + 1 < rack_index_.size() ? rack + 1 : 0);
    if (rack == first) break;
  }
  return -1;
}

absl::StatusOr<std::shared_ptr<const GroupPlacement>> Scheduler::MakePlacement(
    const AppState& app, const ResourceRequest& ask, size_t index) {
  const bool any_placement = !ask.allocation_tags.empty() || ask.has_constraint ||
                             !ask.node_label.empty() || ask.gang || ask.gpu_same_group;
  if (!any_placement) return std::shared_ptr<const GroupPlacement>();
  auto where = [&] {
    return absl::StrCat("application ", app.id, ": ask #", index, " (priority ", ask.priority,
                        ", '", ask.resource_name, "')");
  };
  if (ask.resource_name != kAnyResourceName)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": allocation tags, a constraint, a node label or a gang go on "
                              "the \"*\" row only"));
  auto p = std::make_shared<GroupPlacement>();
  for (const std::string& t : ask.allocation_tags) {
    if (!ValidAllocationTag(t))
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": allocation tag '", t, "' is not 1-255 characters of [A-Za-z0-9_.-]"));
  }
  if (ask.has_constraint) {
    if (absl::Status s = ValidateConstraint(ask.constraint); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(where(), ": ", s.message()));
  }
  if (!ask.node_label.empty()) {
    auto it = label_by_name_.find(ask.node_label);
    if (it == label_by_name_.end())
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": node label '", ask.node_label, "' is not a cluster node label"));
    if (!app.queue->label_access[it->second])
      return absl::PermissionDeniedError(absl::StrCat(where(), ": queue '", app.queue->path,
                                                      "' may not use node label '",
                                                      ask.node_label, "'"));
    p->label = it->second;
    p->node_label = ask.node_label;
  }
  if (ask.gang_timeout_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": gang timeout ", ask.gang_timeout_ms, " ms is negative"));
  if (ask.gang && ask.has_constraint && ask.constraint_soft)
    return absl::InvalidArgumentError(
        absl::StrCat(where(), ": a gang's constraint must be hard (all or nothing)"));
  p->tags = ask.allocation_tags;
  std::sort(p->tags.begin(), p->tags.end());
  p->tags.erase(std::unique(p->tags.begin(), p->tags.end()), p->tags.end());
  if (!p->tags.empty()) p->tag_set = InternTags(p->tags);
  p->has_constraint = ask.has_constraint;
  p->soft = ask.has_constraint && ask.constraint_soft;
  if (ask.has_constraint) p->constraint = ask.constraint;
  p->gang = ask.gang;
  p->gang_timeout_ms = ask.gang_timeout_ms;
  p->gpu_same_group = ask.gpu_same_group;
  return std::shared_ptr<const GroupPlacement>(std::move(p));
}

bool Scheduler::PlacePlaced(AppState* app, size_t gi, int64_t now_ms, PassResult* out) {
  RequestGroup& g = app->groups[gi];
  const GroupPlacement& p = *g.placement;
  if (p.gang && config_.gang_mode != "hold-and-wait") return PlaceGang(app, gi, now_ms, out);
  // Within a pass nodes only fill up and tags only accumulate: a group that found no node
  // is not searched again until the next pass (affinity to tags placed later in this pass
  // waits one pass).
  if (g.failed_pass == pass_id_) return false;
  if (!LabelLimitAllows(*app, p.label, g.capability)) return false;
  NodeId id = FindPlaced(*app, p, g.capability, /*with_constraint=*/true);
  if (id < 0 && p.soft) {
    id = FindPlaced(*app, p, g.capability, /*with_constraint=*/false);
    if (id >= 0) ++stats_.soft_violations;
  }
  if (id < 0) {
    g.failed_pass = pass_id_;
    return false;
  }
  Commit(app, gi, id, Locality::kOffSwitch, -1, -1, now_ms, out);
  return true;
}

// ---------------------------------------------------------------------------------------------
// Container resizing

absl::Status Scheduler::ValidateUpdates(const AppState& app,
                                        const std::vector<ContainerUpdate>& updates,
                                        std::vector<Resource>* targets) const {
  for (size_t i = 0; i < updates.size(); ++i) {
    const ContainerUpdate& u = updates[i];
    auto where = [&] {
      return absl::StrCat("application ", app.id, ": update of container ", u.container);
    };
    const ContainerState* c = container(u.container);
    if (c == nullptr || c->app != app.id)
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": not a running container of this application"));
    for (size_t k = 0; k < i; ++k) {
      if (updates[k].container == u.container)
        return absl::InvalidArgumentError(absl::StrCat(where(), ": asked twice in one call"));
    }
    auto n = registry().Normalize(u.target);
    if (!n.ok()) return absl::InvalidArgumentError(absl::StrCat(where(), ": ", n.status().message()));
    if ((*n)[kGpuMilli] != c->resource[kGpuMilli])
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": gpu-milli ", c->resource[kGpuMilli], " -> ", (*n)[kGpuMilli],
          ": a container's GPUs are fixed at allocation; release it and ask for a new one"));
    const bool up = c->resource.FitsIn(*n);
    const bool down = n->FitsIn(c->resource);
    if (!up && !down)
      return absl::InvalidArgumentError(absl::StrCat(
          where(), ": ", registry().Format(c->resource), " -> ", registry().Format(*n),
          " both grows and shrinks; ask for an increase and a decrease separately"));
    if (up && !n->FitsIn(nodes_[c->node].capacity))
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": ", registry().Format(*n), " exceeds its node '",
                       nodes_[c->node].name, "' (", registry().Format(nodes_[c->node].capacity),
                       ")"));
    targets->push_back(*n);
  }
  return absl::OkStatus();
}

void Scheduler::ApplyUpdates(AppState* app, const std::vector<ContainerUpdate>& updates,
                             const std::vector<Resource>& targets) {
  for (size_t i = 0; i < updates.size(); ++i) {
    const ContainerId id = updates[i].container;
    const Resource& target = targets[i];
    ContainerState& c = slot(id);
    // A new ask replaces an ungranted one.
    std::erase_if(app->increases, [&](const auto& inc) { return inc.first == id; });
    if (target == c.resource) continue;
    if (target.FitsIn(c.resource)) {  // a decrease: at once, never refused
      const Resource freed = c.resource - target;
      NodeState& n = nodes_[c.node];
      n.allocated -= freed;
      ChargeUsage(app, freed, c.is_am, -1, c.label);
      c.resource = target;
      UpdateNodeIndex(c.node);
      pending_resized_.push_back({id, app->id, c.node, target, false});
      ++stats_.decreases;
      continue;
    }
    if (app->increases.empty()) apps_with_increases_.push_back(app->id);
    app->increases.emplace_back(id, target);
  }
  RefreshApp(app);
}

// Increases in the order asked, app by app: each is granted when its node has the room and
// the app's queue and policy limits allow the difference; the others wait for a later pass.
void Scheduler::GrantIncreases(PassResult* out) {
  std::sort(apps_with_increases_.begin(), apps_with_increases_.end());
  apps_with_increases_.erase(std::unique(apps_with_increases_.begin(), apps_with_increases_.end()),
                             apps_with_increases_.end());
  std::vector<AppId> still;
  for (AppId a : apps_with_increases_) {
    auto it = apps_.find(a);
    if (it == apps_.end()) continue;
    AppState* app = it->second.get();
    std::vector<std::pair<ContainerId, Resource>> waiting;
    for (const auto& [id, target] : app->increases) {
      ContainerState& c = slot(id);
      NodeState& n = nodes_[c.node];
      const Resource diff = target - c.resource;
      const bool node_ok = n.schedulable && (n.reserved_for == 0 || n.reserved_for == a) &&
                           diff.FitsIn(NodeRoom(n));
      if (!node_ok || !WithinLimits(*app, diff, c.is_am)) {
        waiting.emplace_back(id, target);
        continue;
      }
      n.allocated += diff;
      ChargeUsage(app, diff, c.is_am, +1, c.label);
      c.resource = target;
      UpdateNodeIndex(c.node);
      out->resized.push_back({id, a, c.node, target, true});
      ++stats_.increases;
    }
    app->increases = std::move(waiting);
    if (!app->increases.empty()) still.push_back(a);
    RefreshApp(app);
  }
  apps_with_increases_ = std::move(still);
}

}  // namespace weft::scheduler
