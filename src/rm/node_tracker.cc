// Copyright Weft authors.
#include "rm/node_tracker.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/app_manager.h"
#include "rm/container_tracker.h"
#include "rm/history_recorder.h"
#include "rm/rm_keys.h"

namespace weft::rm {
namespace {

// The GPUs a NodeManager reported (docs/gpu.md), in its order.
std::vector<scheduler::GpuDevice> GpusOf(
    const google::protobuf::RepeatedPtrField<v1::Device>& devices) {
  std::vector<scheduler::GpuDevice> gpus;
  for (const v1::Device& d : devices) {
    if (d.type() != "gpu") continue;
    scheduler::GpuDevice g;
    g.index = d.index();
    g.model = d.model();
    g.group = d.topology_group();
    g.healthy = d.healthy();
    gpus.push_back(std::move(g));
  }
  return gpus;
}

std::vector<DeviceShare> SharesOf(
    const google::protobuf::RepeatedPtrField<v1::DeviceAssignment>& devices) {
  std::vector<DeviceShare> shares;
  for (const v1::DeviceAssignment& d : devices) shares.push_back({d.type(), d.index(), d.milli()});
  return shares;
}

std::vector<int32_t> IndicesOf(const std::vector<scheduler::GpuDevice>& gpus) {
  std::vector<int32_t> out;
  for (const scheduler::GpuDevice& g : gpus) out.push_back(g.index);
  return out;
}


// A decommission entry names a node id ("host:port") or a whole host.
bool Matches(const std::string& node_id, const std::string& name) {
  return node_id == name || node_id.substr(0, node_id.find(':')) == name;
}

}  // namespace

NodeTracker::NodeTracker(RmContext* ctx) : ctx_(ctx) {}

NodeTracker::~NodeTracker() { ctx_->loop->Cancel(expiry_timer_); }

void NodeTracker::StartExpiry() {
  expiry_timer_ = ctx_->loop->Schedule(std::max<int64_t>(1, ctx_->options->nm_expiry_ms / 4),
                                       [this] { CheckExpiry(); });
}

RmNode* NodeTracker::Lookup(absl::string_view id) const {
  return directory_->Find(id);
}

const RmNode* NodeTracker::Find(const std::string& node_id) const { return Lookup(node_id); }

void NodeTracker::AddAppCleanup(const std::string& node_id, const std::string& app_id) {
  if (RmNode* node = Lookup(node_id)) node->apps_to_cleanup.push_back(app_id);
}

void NodeTracker::AddRemoval(const std::string& node_id, const std::string& name) {
  // Not before the container's history record is durable (HistoryRecorder sends it then).
  if (!ctx_->history->MayRemove(node_id, name)) return;
  if (RmNode* node = Lookup(node_id)) node->to_remove.push_back(name);
}

void NodeTracker::AddContainerUpdate(const std::string& node_id, const std::string& name,
                                     int32_t version, const v1::Token& token) {
  if (RmNode* node = Lookup(node_id)) node->updates[name] = {version, token};
}

void NodeTracker::AddCleanup(const std::string& node_id, const std::string& name) {
  if (RmNode* node = Lookup(node_id)) node->to_cleanup.push_back(name);
}

void NodeTracker::LoseContainers(const std::string& node_id, int32_t exit_status,
                                 const std::string& diagnostics, bool clean_up_on_node) {
  if (ctx_->scheduler->FindNode(node_id) < 0) return;
  auto lost = ctx_->scheduler->RemoveNode(node_id);
  if (!lost.ok()) {
    log::Error("node_remove_failed", {{"node", node_id}, {"error", lost.status()}});
    return;
  }
  for (const scheduler::ContainerKill& k : *lost) {
    if (const RmContainer* c = ctx_->containers->Find(k.container)) {
      if (clean_up_on_node) {
        AddCleanup(node_id, c->name);  // its NM reports it once stopped
      } else {
        ctx_->history->ContainerLost(c->name, node_id, k.resource, k.allocated_ms,
                                     /*priority=*/0, exit_status, diagnostics);
      }
    }
    ctx_->containers->Ended(k, exit_status, diagnostics);
  }
}

bool NodeTracker::Transition(const std::string& id, RmNode& node, NodeEvent event) {
  absl::StatusOr<v1::NodeState> next = NextNodeState(node.state, event);
  if (!next.ok()) {
    log::Error("node_transition_refused", {{"node", id}, {"error", next.status()}});
    return false;
  }
  if (*next != node.state)
    log::Info("node_state",
              {{"node", id}, {"from", store::NodeStateName(node.state)}, {"to", store::NodeStateName(*next)}});
  --nodes_in_state_[node.state];
  ++nodes_in_state_[*next];
  node.state = *next;
  largest_stale_ = true;
  if (node.state != v1::NODE_RUNNING) SetCpuUtilization(node, std::nullopt);
  return true;
}

void NodeTracker::SetCpuUtilization(RmNode& node, std::optional<double> utilization) {
  if (node.cpu_utilization.has_value()) {
    cpu_utilization_sum_ -= *node.cpu_utilization;
    --cpu_utilization_nodes_;
  }
  node.cpu_utilization = utilization;
  if (utilization.has_value()) {
    cpu_utilization_sum_ += *utilization;
    ++cpu_utilization_nodes_;
  }
}

std::optional<double> NodeTracker::ClusterCpuUtilization() const {
  if (cpu_utilization_nodes_ <= 0) return std::nullopt;
  return std::clamp(cpu_utilization_sum_ / static_cast<double>(cpu_utilization_nodes_), 0.0, 1.0);
}

absl::StatusOr<v1::RegisterNodeManagerResponse> NodeTracker::RegisterNode(
    const v1::RegisterNodeManagerRequest& req) {
  const std::string& id = req.node_id();
  if (id.empty() || id.find(':') == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("node id '", id, "' is not host:port"));
  std::string rack = req.rack().empty() ? "/default-rack" : req.rack();
  auto cap = ctx_->FromProto(req.capability(), absl::StrCat("node ", id, ": capability"));
  if (!cap.ok()) return cap.status();
  if (cap->AnyNegative())
    return absl::InvalidArgumentError(
        absl::StrCat("node ", id, ": capability ", ctx_->registry().Format(*cap), " is negative"));
  // The NM's node label and attributes (distributed node labels / attributes), checked before
  // anything changes: a registration refused here leaves the RM as it was.
  const std::string& label = req.node_label();
  if (!label.empty() && !ctx_->scheduler->config().node_labels.contains(label))
    return absl::InvalidArgumentError(
        absl::StrCat("node ", id, ": node label '", label,
                     "' is not a cluster node label (the scheduler configuration's node-labels)"));
  std::map<std::string, std::string> reported_sorted;
  for (const auto& [k, v] : req.node_attributes()) {
    if (absl::Status s =
            scheduler::ValidateConstraint(scheduler::PlacementConstraint::AttributeIs(k, v));
        !s.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("node ", id, ": node attribute ", k, "=", v, ": ", s.message()));
    reported_sorted.emplace(k, v);
  }
  scheduler::NodeAttributes attributes(reported_sorted.begin(), reported_sorted.end());
  const std::vector<scheduler::GpuDevice> gpus = GpusOf(req.devices());
  auto existing = nodes_.find(id);
  bool decommissioned =
      decommissioned_.contains(id) || decommissioned_.contains(id.substr(0, id.find(':')));
  if (decommissioned ||
      (existing != nodes_.end() && existing->second.state == v1::NODE_DECOMMISSIONED)) {
    v1::RegisterNodeManagerResponse resp;
    resp.set_action(v1::NODE_ACTION_SHUTDOWN);
    resp.set_diagnostics("node is decommissioned");
    return resp;
  }
  // What the NM reports: running containers, and completed ones (in completed_containers, or
  // as COMPLETE statuses among running_containers).
  std::vector<const v1::ContainerStatus*> running_statuses, completed;
  for (const v1::ContainerStatus& st : req.running_containers())
    (st.state() == v1::CONTAINER_COMPLETE ? completed : running_statuses).push_back(&st);
  for (const v1::ContainerStatus& st : req.completed_containers()) completed.push_back(&st);
  absl::flat_hash_set<std::string> running;
  for (const v1::ContainerStatus* st : running_statuses) running.insert(st->container_id());
  const scheduler::NodeId known = ctx_->scheduler->FindNode(id);
  // A node that comes back with another rack or node label is taken as a new node (the
  // branch below: removed from the scheduler with what it ran, added again with the new
  // label). The scheduler cannot move a live node to another partition (it has no
  // SetNodeLabel), and the node's containers were placed and charged under the old label;
  // a relabel (an NM restarted with another --node-label) is a rare operator action, so its
  // containers are lost (their attempts told, the NM told to stop them), as for a rack change
  // or a node the RM lost. Attributes, in contrast, are updated in place.
  // Other GPUs than it had (hardware changed while it was away) make it a new node too.
  if (known >= 0 && existing != nodes_.end() && existing->second.registration.rack() == rack &&
      existing->second.registration.node_label() == label &&
      IndicesOf(GpusOf(existing->second.registration.devices())) == IndicesOf(gpus)) {
    // Registering again while the RM holds the node (a lost register reply, an NM restart):
    // what it still runs is kept, once; the rest is gone. Reported completions come first so
    // that their exit statuses are the ones told.
    if (attributes != reported_attributes_[id]) {
      if (absl::Status s =
              ctx_->scheduler->SetNodeAttributes(id, EffectiveAttributes(id, attributes));
          !s.ok())
        return s;
      reported_attributes_[id] = attributes;
    }
    if (!gpus.empty()) {
      if (absl::Status s = ctx_->scheduler->SetNodeGpus(id, gpus); !s.ok()) return s;
    }
    if (absl::Status s = ctx_->scheduler->UpdateNode(id, *cap, /*healthy=*/true); !s.ok()) return s;
    for (const v1::ContainerStatus* st : completed) {
      ctx_->history->ContainerReported(*st, id);
      ctx_->containers->Completed(st->container_id(), st->exit_status(), st->diagnostics(), id);
    }
    // An AM container whose launch is not confirmed yet may simply not have reached the NM
    // (e.g. the launch waits for this very NM to come back): it is not gone, and its launch
    // settles it.
    std::vector<std::string> gone;
    for (scheduler::ContainerId c : ctx_->scheduler->NodeContainers(known)) {
      const RmContainer* held = ctx_->containers->Find(c);
      if (held != nullptr && !running.contains(held->name) &&
          !ctx_->apps->AmLaunchPending(held->name))
        gone.push_back(held->name);
    }
    for (const std::string& name : gone)
      ctx_->containers->Completed(
          name, v1::CONTAINER_EXIT_LOST_NODE,
          absl::StrCat("Container lost: node ", id, " registered again without it"),
          /*node_id=*/"");
  } else {
    // A new node, one the RM lost, or a restarted RM's first registration of it.
    LoseContainers(id, v1::CONTAINER_EXIT_LOST_NODE, "node " + id + " re-registered",
                   /*clean_up_on_node=*/false);
    scheduler::NodeSpec spec{id, rack, *cap};
    spec.node_label = label;
    spec.attributes = EffectiveAttributes(id, attributes);
    spec.gpus = gpus;
    auto sid = ctx_->scheduler->AddNode(spec);
    if (!sid.ok()) return sid.status();
    reported_attributes_[id] = attributes;
    for (const v1::ContainerStatus* st : completed) {
      ctx_->history->ContainerReported(*st, id);
      ctx_->containers->Completed(st->container_id(), st->exit_status(), st->diagnostics(), id);
    }
  }
  auto [slot, added] = nodes_.try_emplace(id);
  if (added) {
    ++nodes_in_state_[slot->second.state];
    directory_->Add(slot->first, &slot->second);
  }
  RmNode& node = slot->second;
  node.registration = req;
  largest_stale_ = true;  // a node may register again with another capability
  node.usage_at_ms = 0;    // and its CPU utilization starts over
  SetCpuUtilization(node, std::nullopt);
  node.registration.set_rack(rack);
  node.registration.clear_running_containers();  // not kept: read once, below
  node.registration.clear_completed_containers();
  node.registration.clear_container_resources();
  node.registration.clear_container_versions();
  node.registration.clear_container_tags();
  // Decommissioned nodes were answered above: every other state takes a registration.
  Transition(id, node, NodeEvent::kRegistered);
  node.last_heartbeat_ms = ctx_->NowMs();
  node.response_id = 0;
  node.to_cleanup.clear();
  node.running.clear();
  for (const v1::ContainerStatus* st : running_statuses) node.running.push_back(*st);
  // Work-preserving restart: what the NM runs that the RM does not hold is recovered (an
  // earlier RM's containers of live attempts) or stopped (anything else: a node the RM lost,
  // containers of ended apps, or ones it cannot charge).
  int recovered = 0, refused = 0;
  for (const v1::ContainerStatus* st : running_statuses) {
    const std::string& name = st->container_id();
    if (ctx_->containers->Holds(name)) continue;  // kept (registered twice)
    auto resource = req.container_resources().find(name);
    auto version = req.container_versions().find(name);
    auto tags = req.container_tags().find(name);
    absl::Status s = ctx_->containers->Recover(
        id, name, resource == req.container_resources().end() ? nullptr : &resource->second,
        version == req.container_versions().end() ? 0 : version->second,
        tags == req.container_tags().end()
            ? std::vector<std::string>{}
            : std::vector<std::string>(tags->second.tags().begin(), tags->second.tags().end()),
        SharesOf(st->devices()));
    if (s.ok()) {
      ++recovered;
      continue;
    }
    ++refused;
    log::Warn("container_not_recovered", {{"node", id}, {"container", name}, {"why", s}});
    node.to_cleanup.push_back(name);
  }
  // Applications that have ended (or that this RM does not know) but still have containers
  // here, running or completed: the NM cleans them up (stops what runs, removes their work
  // dirs), as YARN does for the finished applications a node reports. E.g. the app ended while
  // the NM was down, or the NM died before it acted on an earlier cleanup.
  std::vector<const v1::ContainerStatus*> reported = running_statuses;
  reported.insert(reported.end(), completed.begin(), completed.end());
  for (const v1::ContainerStatus* st : reported) {
    const std::string app_id = AppOfContainer(st->container_id());
    if (app_id.empty()) continue;
    const RmApp* app = ctx_->apps->Find(app_id);
    if (app != nullptr && !IsFinal(app->state)) continue;
    if (std::find(node.apps_to_cleanup.begin(), node.apps_to_cleanup.end(), app_id) !=
        node.apps_to_cleanup.end())
      continue;
    log::Info("app_cleanup_on_registration",
              {{"node", id}, {"app", app_id}, {"known", app != nullptr}});
    node.apps_to_cleanup.push_back(app_id);
  }
  // Recovered attempts whose AM container this node held but no longer reports fail now,
  // rather than when their AM expires.
  for (const v1::ContainerStatus* st : completed) running.insert(st->container_id());
  ctx_->apps->AmContainersMissing(id, running);
  log::Info("node_registered", {{"node", id},
                                {"rack", rack},
                                {"label", label},
                                {"attributes", attributes.size()},
                                {"capability", ctx_->registry().Format(*cap)},
                                {"containers_recovered", recovered},
                                {"containers_stopped", refused}});
  v1::RegisterNodeManagerResponse resp;
  resp.set_action(v1::NODE_ACTION_NORMAL);
  resp.set_rm_epoch(ctx_->epoch);
  *resp.mutable_container_key() = RmKeys::ToProto(ctx_->keys->container().current());
  *resp.mutable_next_container_key() = RmKeys::ToProto(ctx_->keys->container().next());
  resp.set_heartbeat_interval_ms(ctx_->options->heartbeat_interval_ms);
  ctx_->request_pass();
  return resp;
}

absl::StatusOr<v1::NodeHeartbeatResponse> NodeTracker::NodeHeartbeat(
    const v1::NodeHeartbeatRequest& req, RmNode* resolved) {
  v1::NodeHeartbeatResponse resp;
  resp.set_next_heartbeat_interval_ms(ctx_->options->heartbeat_interval_ms);
  RmNode* found = resolved != nullptr ? resolved : Lookup(req.node_id());
  if (found == nullptr || found->state == v1::NODE_LOST) {
    resp.set_action(v1::NODE_ACTION_RESYNC);
    resp.set_diagnostics("unknown node: register again");
    return resp;
  }
  RmNode& node = *found;
  if (node.state == v1::NODE_DECOMMISSIONED) {
    resp.set_action(v1::NODE_ACTION_SHUTDOWN);
    return resp;
  }
  node.last_heartbeat_ms = ctx_->NowMs();
  node.health_report = req.health().report();
  if (!req.devices().empty()) {  // a GPU's health changed (docs/gpu.md)
    if (absl::Status s = ctx_->scheduler->SetNodeGpus(req.node_id(), GpusOf(req.devices()));
        s.ok()) {
      *node.registration.mutable_devices() = req.devices();
      *node.registration.mutable_capability() =
          ctx_->ToProto(ctx_->scheduler->node(ctx_->scheduler->FindNode(req.node_id()))->capacity);
      log::Info("node_devices_changed", {{"node", req.node_id()}});
    } else {
      log::Warn("node_devices_refused", {{"node", req.node_id()}, {"why", s}});
    }
  }
  bool healthy = !req.has_health() || req.health().healthy();
  if ((node.state == v1::NODE_UNHEALTHY) == healthy &&
      Transition(req.node_id(), node, healthy ? NodeEvent::kHealthy : NodeEvent::kUnhealthy)) {
    log::Info("node_health_changed", {{"node", req.node_id()}, {"healthy", healthy}});
    auto cap = ctx_->FromProto(node.registration.capability(), "capability");
    if (cap.ok()) {
      if (absl::Status s = ctx_->scheduler->UpdateNode(req.node_id(), *cap, healthy); !s.ok())
        log::Error("node_update_failed", {{"node", req.node_id()}, {"error", s}});
    }
  }
  const int64_t now_ms = ctx_->NowMs();
  if (ctx_->options->heartbeat_scaling.enabled) {
    // CPU time the node's containers used since the last heartbeat: each container reported
    // both times counts its growth, a new one all of its time (it started since). Containers
    // that ended took their time with them, so the node's total alone would go backwards.
    absl::flat_hash_map<absl::string_view, int64_t> before;
    for (const v1::ContainerStatus& st : node.running)
      before[st.container_id()] = st.usage().cpu_time_ms();
    int64_t used_ms = 0;
    for (const v1::ContainerStatus& st : req.container_statuses()) {
      if (st.state() != v1::CONTAINER_RUNNING) continue;
      auto it = before.find(st.container_id());
      used_ms += std::max<int64_t>(
          0, st.usage().cpu_time_ms() - (it == before.end() ? 0 : it->second));
    }
    const auto& values = node.registration.capability().values();
    auto vcores = values.find("vcores");
    if (node.usage_at_ms == 0 || vcores == values.end() || vcores->second <= 0) {
      node.usage_at_ms = now_ms;  // the first report: utilization from the next one
    } else if (now_ms > node.usage_at_ms) {  // two reports in one ms keep the last value
      const double utilization = std::clamp(
          static_cast<double>(used_ms) / (static_cast<double>(now_ms - node.usage_at_ms) *
                                          static_cast<double>(vcores->second)),
          0.0, 1.0);
      node.usage_at_ms = now_ms;
      if (node.state == v1::NODE_RUNNING) SetCpuUtilization(node, utilization);
    }
  }
  node.running.clear();
  node.usage = req.node_usage();
  bool freed = false;  // completed containers reported: a pass soon may place waiting demand
  for (const v1::ContainerStatus& st : req.container_statuses()) {
    if (st.state() == v1::CONTAINER_RUNNING) {
      node.running.push_back(st);
      // An earlier RM's container this RM never heard of (its AM started it after the
      // restart): nothing charges it, so it is stopped (YARN does the same).
      if (ctx_->containers->TakeUnknownPrevious(st.container_id())) {
        log::Warn("container_not_recovered",
                  {{"node", req.node_id()},
                   {"container", st.container_id()},
                   {"why", "allocated before the RM restarted, first reported in a heartbeat"}});
        node.to_cleanup.push_back(st.container_id());
      }
    }
    if (st.state() != v1::CONTAINER_COMPLETE) continue;
    freed = true;
    // Unknown names are already known complete, or were never this RM's.
    ctx_->history->ContainerReported(st, req.node_id());
    ctx_->containers->Completed(st.container_id(), st.exit_status(), st.diagnostics(),
                                req.node_id());
  }
  resp.set_response_id(++node.response_id);
  resp.set_action(v1::NODE_ACTION_NORMAL);
  resp.set_next_heartbeat_interval_ms(ScaledHeartbeatIntervalMs(
      ctx_->options->heartbeat_interval_ms, ctx_->options->heartbeat_scaling,
      node.cpu_utilization, ClusterCpuUtilization()));
  for (const std::string& c : node.to_cleanup) resp.add_containers_to_cleanup(c);
  node.to_cleanup.clear();
  for (const std::string& a : node.apps_to_cleanup) resp.add_applications_to_cleanup(a);
  node.apps_to_cleanup.clear();
  for (const std::string& c : node.to_remove) resp.add_containers_to_be_removed_from_nm(c);
  node.to_remove.clear();
  // Updates the NM has applied, or whose container no longer runs there, are done; the
  // others are sent (again: a reply may have been lost).
  if (!node.updates.empty()) {
    absl::flat_hash_set<std::string> running;
    for (const v1::ContainerStatus& st : node.running) running.insert(st.container_id());
    for (auto it = node.updates.begin(); it != node.updates.end();) {
      auto applied = req.container_versions().find(it->first);
      const bool done = !running.contains(it->first) ||
                        (applied != req.container_versions().end() &&
                         applied->second >= it->second.first);
      if (done) {
        node.updates.erase(it++);
        continue;
      }
      *resp.add_containers_to_update() = it->second.second;
      ++it;
    }
  }
  // The keys only to an NM that does not have them yet (YARN does the same): current and next
  // change together at a roll, so an NM that knows the current key knows its next too.
  if (req.last_known_container_key_id() != ctx_->keys->container().current().id) {
    *resp.mutable_container_key() = RmKeys::ToProto(ctx_->keys->container().current());
    *resp.mutable_next_container_key() = RmKeys::ToProto(ctx_->keys->container().next());
  }
  // YARN's node-update event: resources this node freed are offered again at once rather than
  // at the pass timer's next tick (RmOptions::min_pass_gap_ms bounds how often).
  if (freed) {
    ctx_->request_prompt_pass();
  } else {
    ctx_->request_pass();
  }
  return resp;
}

absl::Status NodeTracker::StoreAdmin(
    const std::set<std::string>& names, const std::set<std::string>& decommissioned,
    const std::map<std::string, std::map<std::string, std::string>>& attributes) const {
  std::vector<store::NodeAdminRecord> put;
  std::vector<std::string> remove;
  for (const std::string& name : names) {
    store::NodeAdminRecord r;
    r.node = name;
    r.decommissioned = decommissioned.contains(name);
    if (auto it = attributes.find(name); it != attributes.end()) r.attributes = it->second;
    if (!r.decommissioned && r.attributes.empty()) {
      remove.push_back(name);
    } else {
      put.push_back(std::move(r));
    }
  }
  absl::Status s = ctx_->store->UpdateNodeAdmin(put, remove);
  if (s.ok() || absl::IsInvalidArgument(s)) return s;
  return absl::Status(s.code(), absl::StrCat("nothing changed: the state store could not keep ",
                                             "the decision: ", s.message()));
}

void NodeTracker::RestoreAdmin(const std::vector<store::NodeAdminRecord>& records) {
  for (const store::NodeAdminRecord& r : records) {
    if (r.decommissioned) decommissioned_.insert(r.node);
    if (!r.attributes.empty()) admin_attributes_[r.node] = r.attributes;
  }
  if (!records.empty())
    log::Info("node_admin_recovered",
              {{"nodes", static_cast<int64_t>(records.size())},
               {"decommissioned", static_cast<int64_t>(decommissioned_.size())}});
}

absl::Status NodeTracker::RefreshNodes(const v1::RefreshNodesRequest& req) {
  std::set<std::string> names;
  for (const std::string& name : req.decommission()) {
    if (name.empty()) return absl::InvalidArgumentError("empty node name to decommission");
    names.insert(name);
  }
  for (const std::string& name : req.recommission()) {
    if (name.empty()) return absl::InvalidArgumentError("empty node name to recommission");
    names.insert(name);
  }
  // The store first: an answer of OK means an RM restart or failover keeps the decision.
  std::set<std::string> next = decommissioned_;
  for (const std::string& name : req.decommission()) next.insert(name);
  for (const std::string& name : req.recommission()) next.erase(name);
  if (absl::Status s = StoreAdmin(names, next, admin_attributes_); !s.ok()) return s;
  for (const std::string& name : req.decommission()) {
    decommissioned_.insert(name);
    for (auto& [id, node] : nodes_) {
      if (!Matches(id, name) || node.state == v1::NODE_DECOMMISSIONED) continue;
      if (!Transition(id, node, NodeEvent::kDecommissioned)) continue;
      log::Info("node_decommissioned", {{"node", id}});
      LoseContainers(id, v1::CONTAINER_EXIT_ABORTED,
                     absl::StrCat("node ", id, " was decommissioned"),
                     /*clean_up_on_node=*/true);
    }
  }
  for (const std::string& name : req.recommission()) {
    decommissioned_.erase(name);
    for (auto& [id, node] : nodes_) {
      // It holds nothing and must register again.
      if (Matches(id, name) && node.state == v1::NODE_DECOMMISSIONED)
        Transition(id, node, NodeEvent::kRecommissioned);
    }
  }
  ctx_->request_pass();
  return absl::OkStatus();
}

scheduler::NodeAttributes NodeTracker::EffectiveAttributes(
    const std::string& id, const scheduler::NodeAttributes& reported) const {
  std::map<std::string, std::string> merged(reported.begin(), reported.end());
  if (auto it = admin_attributes_.find(id); it != admin_attributes_.end()) {
    for (const auto& [k, v] : it->second) {
      if (v.empty()) {
        merged.erase(k);
      } else {
        merged[k] = v;
      }
    }
  }
  return scheduler::NodeAttributes(merged.begin(), merged.end());
}

absl::Status NodeTracker::SetNodeAttributes(const v1::NodeAttributesRequest& req) {
  // Checked whole first: nothing changes unless every mapping is good.
  std::vector<std::pair<std::string, const v1::NodeAttributesMapping*>> targets;
  for (const v1::NodeAttributesMapping& m : req.mappings()) {
    std::string found;
    for (const auto& [id, node] : nodes_) {
      if (Matches(id, m.node()) && node.state != v1::NODE_DECOMMISSIONED &&
          ctx_->scheduler->FindNode(id) >= 0)
        found = id;
    }
    if (found.empty())
      return absl::NotFoundError(absl::StrCat("node '", m.node(), "' is not running"));
    for (const auto& [k, v] : m.attributes()) {
      const std::string value =
          req.operation() == v1::NodeAttributesRequest::REMOVE ? std::string("x") : v;
      if (absl::Status s = scheduler::ValidateConstraint(
              scheduler::PlacementConstraint::AttributeIs(k, value));
          !s.ok())
        return absl::InvalidArgumentError(
            absl::StrCat("node '", m.node(), "': attribute ", k, "=", v, ": ", s.message()));
    }
    targets.emplace_back(found, &m);
  }
  // What the admin attributes become, written to the store before anything changes here.
  std::map<std::string, std::map<std::string, std::string>> next;
  std::set<std::string> ids;
  for (const auto& [id, m] : targets) {
    ids.insert(id);
    if (!next.contains(id)) {
      auto it = admin_attributes_.find(id);
      next[id] = it == admin_attributes_.end() ? std::map<std::string, std::string>{} : it->second;
    }
    std::map<std::string, std::string>& admin = next[id];
    if (req.operation() == v1::NodeAttributesRequest::REPLACE) {
      // Exactly these: every reported key not named is hidden ("" = removed).
      admin.clear();
      for (const auto& [k, v] : reported_attributes_[id]) admin[k] = "";
    }
    for (const auto& [k, v] : m->attributes())
      admin[k] = req.operation() == v1::NodeAttributesRequest::REMOVE ? "" : v;
  }
  if (absl::Status s = StoreAdmin(ids, decommissioned_, next); !s.ok()) return s;
  for (const std::string& id : ids) {
    admin_attributes_[id] = next[id];
    const scheduler::NodeAttributes effective = EffectiveAttributes(id, reported_attributes_[id]);
    if (absl::Status s = ctx_->scheduler->SetNodeAttributes(id, effective); !s.ok()) return s;
    log::Info("node_attributes_set", {{"node", id}, {"attributes", effective.size()}});
  }
  return absl::OkStatus();
}

void NodeTracker::CheckExpiry() {
  expiry_timer_ = 0;
  const int64_t now = ctx_->NowMs();
  for (auto& [id, node] : nodes_) {
    if (IsGone(node.state)) continue;
    if (now - node.last_heartbeat_ms < ctx_->options->nm_expiry_ms) continue;
    if (!Transition(id, node, NodeEvent::kExpired)) continue;
    ++lost_nodes_;
    log::Warn("node_lost", {{"node", id}, {"silent_ms", now - node.last_heartbeat_ms}});
    LoseContainers(id, v1::CONTAINER_EXIT_LOST_NODE,
                   absl::StrCat("Container lost: node ", id, " stopped heartbeating"),
                   /*clean_up_on_node=*/false);
  }
  StartExpiry();
  ctx_->request_pass();
}

v1::ListNodesResponse NodeTracker::ListNodes(const v1::ListNodesRequest& req) const {
  v1::ListNodesResponse resp;
  for (const auto& [id, node] : nodes_) {
    if (!req.states().empty() &&
        std::find(req.states().begin(), req.states().end(), node.state) == req.states().end())
      continue;
    v1::NodeReport* r = resp.add_nodes();
    r->set_node_id(id);
    r->set_rack(node.registration.rack());
    r->set_sub_cluster_id(ctx_->options->sub_cluster_id);
    r->set_state(node.state);
    r->set_http_address(node.registration.http_address());
    *r->mutable_capability() = node.registration.capability();
    r->set_health_report(node.health_report);
    r->set_last_health_update_ms(node.last_heartbeat_ms);
    for (const auto& f : node.registration.missing_features()) r->add_missing_features(f);
    r->set_network_isolation(node.registration.network_isolation());
    for (const v1::ContainerStatus& st : node.running) *r->add_containers() = st;
    *r->mutable_usage() = node.usage;
    scheduler::NodeId sid = ctx_->scheduler->FindNode(id);
    if (sid >= 0) {
      const scheduler::NodeState* n = ctx_->scheduler->node(sid);
      *r->mutable_used() = ctx_->ToProto(n->allocated);
      r->set_num_containers(n->num_containers);
      if (n->label != 0) r->set_node_label(ctx_->scheduler->Labels()[n->label].name);
      for (const auto& [k, v] : n->attributes) (*r->mutable_attributes())[k] = v;
      for (const scheduler::NodeGpu& g : n->gpus)
        (*r->mutable_device_free_milli())[g.device.index] = g.free_milli;
    }
    *r->mutable_devices() = node.registration.devices();
  }
  return resp;
}

void NodeTracker::CountNodes(v1::GetClusterMetricsResponse* m) const {
  auto count = [&](v1::NodeState state) {
    auto it = nodes_in_state_.find(state);
    return it == nodes_in_state_.end() ? int64_t{0} : it->second;
  };
  m->set_active_nodes(m->active_nodes() + count(v1::NODE_RUNNING));
  m->set_lost_nodes(m->lost_nodes() + count(v1::NODE_LOST));
  m->set_unhealthy_nodes(m->unhealthy_nodes() + count(v1::NODE_UNHEALTHY));
  m->set_decommissioned_nodes(m->decommissioned_nodes() + count(v1::NODE_DECOMMISSIONED));
}

std::optional<Resource> NodeTracker::LargestNodeCapability() const {
  if (ctx_->NowMs() - ctx_->started_ms < ctx_->options->max_allocation_wait_ms)
    return std::nullopt;
  if (!largest_stale_) return largest_;
  std::optional<Resource> largest;
  for (const auto& [id, node] : nodes_) {
    if (node.state != v1::NODE_RUNNING && node.state != v1::NODE_UNHEALTHY) continue;
    auto cap = ctx_->FromProto(node.registration.capability(), "capability");
    if (cap.ok()) largest = Max(largest.value_or(Resource()), *cap);
  }
  largest_ = largest;
  largest_stale_ = false;
  return largest;
}

}  // namespace weft::rm
