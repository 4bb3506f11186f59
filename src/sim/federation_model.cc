// Copyright Weft authors. The simulator's sub-clusters (federation_model.h).
#include "sim/federation_model.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "federation/policies/registry.h"
#include "scheduler/registry.h"

namespace weft::sim::internal {

using scheduler::AppId;
using scheduler::ContainerId;
using scheduler::ContainerKill;
using scheduler::NodeId;
using scheduler::ResourceRequest;

namespace {

v1::Resource ToProto(const Resource& r, const ResourceTypeRegistry& reg) {
  v1::Resource out;
  for (int t = 0; t < reg.size(); ++t) {
    if (r[t] != 0) (*out.mutable_values())[reg.info(t).name] = r[t];
  }
  return out;
}

double DominantShare(const Resource& used, const Resource& total, int types) {
  double share = 0;
  for (int t = 0; t < types; ++t) {
    if (total[t] > 0) {
      share = std::max(share, static_cast<double>(used[t]) / static_cast<double>(total[t]));
    }
  }
  return share;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SubClusters>> SubClusters::Create(const SimOptions& o) {
  const FederationOptions& f = o.federation;
  if (f.sub_clusters < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-clusters ", f.sub_clusters, " must be >= 1"));
  }
  if (!(f.headroom_alpha >= 0 && f.headroom_alpha <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("headroom alpha ", f.headroom_alpha, " must be in [0, 1]"));
  }
  auto router = federation::MakeRouterPolicy(f.router_policy);
  if (!router.ok()) return router.status();
  auto amrm = federation::MakeAmrmPolicy(f.amrm_policy);
  if (!amrm.ok()) return amrm.status();
  for (auto [what, ms] : {std::pair{"sub-cluster heartbeat", f.heartbeat_ms},
                          std::pair{"cache TTL", f.cache_ttl_ms},
                          std::pair{"store latency", f.store_latency_ms},
                          std::pair{"UAM launch time", f.uam_launch_ms}}) {
    if (ms < 0 || ms > kMaxFederationDelayMs) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " ", ms, " ms must be in 0..", kMaxFederationDelayMs, " ms"));
    }
  }
  if (f.sub_clusters > 1 && o.am_master.has_value()) {
    return absl::InvalidArgumentError(
        "AdaptCont AM sizing (am master) runs on a monolithic cluster only: use 1 sub-cluster");
  }
  std::unique_ptr<SubClusters> c(new SubClusters(o));
  for (int i = 0; i < f.sub_clusters; ++i) {
    auto sched = scheduler::CreateScheduler(o.scheduler, {o.registry, 1});
    if (!sched.ok()) return sched.status();
    c->subs_.push_back(std::move(*sched));
    int width = f.sub_clusters >= 100 ? 3 : 2;
    c->sub_ids_.push_back(absl::StrFormat("sc%0*d", width, i + 1));
  }
  c->router_ = std::move(*router);
  c->amrm_ = std::move(*amrm);
  c->config_.set_queue("*");
  c->config_.set_router_policy(f.router_policy);
  c->config_.set_amrm_policy(f.amrm_policy);
  c->config_.set_headroom_alpha(f.headroom_alpha);
  c->wall_s_.assign(c->subs_.size(), 0);
  c->sub_nodes_.assign(c->subs_.size(), 0);
  c->homes_.assign(c->subs_.size(), 0);
  c->rep_node_.assign(c->subs_.size(), "");
  c->util_.assign(c->subs_.size(), {});
  for (auto* v : {&c->apps_live_, &c->homed_live_, &c->apps_peak_, &c->uams_})
    v->assign(c->subs_.size(), 0);
  c->apps_integral_.assign(c->subs_.size(), 0);
  return c;
}

absl::StatusOr<std::vector<NodeId>> SubClusters::AddNodes(
    const std::vector<scheduler::NodeSpec>& nodes) {
  const int n = size();
  std::vector<NodeId> ids;
  if (n == 1) {
    for (const scheduler::NodeSpec& spec : nodes) {
      auto id = subs_[0]->AddNode(spec);
      if (!id.ok()) return id.status();
      ids.push_back(*id);
      ++sub_nodes_[0];
    }
    return ids;
  }
  if (static_cast<int64_t>(nodes.size()) < n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sub-clusters ", n, " must not exceed the number of nodes (", nodes.size(), ")"));
  }
  std::vector<size_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(nodes[a].rack, nodes[a].name) < std::tie(nodes[b].rack, nodes[b].name);
  });
  std::vector<int> sub_of(nodes.size());
  for (size_t k = 0; k < order.size(); ++k) {
    sub_of[order[k]] = static_cast<int>(k * static_cast<size_t>(n) / order.size());
  }
  absl::flat_hash_map<std::string, int32_t> rack_ids;
  for (size_t i = 0; i < nodes.size(); ++i) {
    int sub = sub_of[i];
    auto local = subs_[sub]->AddNode(nodes[i]);
    if (!local.ok()) return local.status();
    NodeId global = *local * n + sub;
    ids.push_back(global);
    const scheduler::NodeState* ns = subs_[sub]->node(*local);
    const std::string& rack = subs_[sub]->rack_name(ns->rack);
    auto [it, added] = rack_ids.try_emplace(rack, static_cast<int32_t>(racks_.size()));
    if (added) racks_.push_back(rack);
    node_rack_[global] = it->second;
    node_sub_[ns->name] = sub;
    if (rep_node_[sub].empty()) rep_node_[sub] = ns->name;
    resolver_.AddNode(ns->name, SubId(sub), rack);
    ++sub_nodes_[sub];
  }
  // Every RM registered with the state store at time 0.
  store_.clear();
  for (int s = 0; s < n; ++s) store_.push_back(LiveInfo(s, 0));
  return ids;
}

const scheduler::NodeState* SubClusters::node(NodeId id) const {
  const int n = size();
  return subs_[id % n]->node(id / n);
}

int32_t SubClusters::RackOf(NodeId id) const {
  if (!federated()) return subs_[0]->node(id)->rack;
  return node_rack_.at(id);
}

const std::string& SubClusters::rack_name(int32_t rack) const {
  if (!federated()) return subs_[0]->rack_name(rack);
  return racks_[static_cast<size_t>(rack)];
}

int SubClusters::SubOfNodeName(absl::string_view name) const {
  auto it = node_sub_.find(name);
  return it == node_sub_.end() ? -1 : it->second;
}

ContainerKill SubClusters::Globalize(int sub, ContainerKill k) const {
  const int n = size();
  k.container = k.container * static_cast<ContainerId>(n) + static_cast<ContainerId>(sub);
  k.node = k.node * n + sub;
  return k;
}

absl::StatusOr<std::vector<ContainerKill>> SubClusters::RemoveNode(absl::string_view name) {
  if (!federated()) return subs_[0]->RemoveNode(name);
  int sub = SubOfNodeName(name);
  if (sub < 0) return absl::NotFoundError(absl::StrCat("node '", name, "' is not known"));
  auto kills = TimedOn(sub, [&] { return subs_[sub]->RemoveNode(name); });
  if (!kills.ok()) return kills.status();
  for (ContainerKill& k : *kills) k = Globalize(sub, k);
  return kills;
}

v1::SubClusterInfo SubClusters::LiveInfo(int s, int64_t heartbeat_ms) const {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id(SubId(s));
  info.set_state(v1::SC_RUNNING);
  info.set_last_heartbeat_ms(heartbeat_ms);
  const Resource& total = subs_[s]->cluster_total();
  Resource used = subs_[s]->cluster_allocated();
  *info.mutable_capability() = ToProto(total, o_.registry);
  *info.mutable_used() = ToProto(used, o_.registry);
  *info.mutable_available() = ToProto(total - used, o_.registry);
  info.set_active_nodes(subs_[s]->num_nodes());
  info.set_apps_running(static_cast<int32_t>(apps_live_[static_cast<size_t>(s)]));
  return info;
}

federation::PolicyContext SubClusters::Context(const std::vector<v1::SubClusterInfo>& view) const {
  federation::PolicyContext ctx;
  ctx.config = &config_;
  ctx.resolver = &resolver_;
  ctx.rng = &rng_;
  ctx.active = view;
  return ctx;
}

absl::Status SubClusters::AddApp(const scheduler::AppSpec& spec, int64_t now_ms,
                                 const std::vector<std::string>& preferred_nodes) {
  if (!federated()) {
    ++homes_[0];
    absl::Status st = subs_[0]->AddApp(spec, now_ms);
    if (st.ok()) AppJoined(0, /*homed=*/true);
    return st;
  }
  v1::ApplicationSubmissionContext app;
  app.set_application_id(absl::StrCat(spec.id));
  app.set_queue(spec.queue);
  for (const std::string& p : preferred_nodes) app.add_preferred_nodes(p);
  AdvanceTo(now_ms);
  federation::PolicyContext ctx = Context(Read(router_view_));
  if (o_.federation.in_flight_accounting) ctx.in_flight = &ledger_.Outstanding(ctx.active);
  absl::StatusOr<std::string> home = router_->ChooseHome(app, ctx, {});
  if (!home.ok()) {
    return absl::Status(home.status().code(), absl::StrCat("router policy ", router_->name(), ": ",
                                                           home.status().message()));
  }
  int sub = static_cast<int>(std::find(sub_ids_.begin(), sub_ids_.end(), *home) - sub_ids_.begin());
  const int64_t arrives = now_ms + 2 * o_.federation.store_latency_ms;
  if (arrives == now_ms) {
    absl::Status st = TimedOn(sub, [&] { return subs_[sub]->AddApp(spec, now_ms); });
    if (!st.ok()) return st;
  }
  ++homes_[sub];
  ledger_.Placed(*home, spec.am_resource[kMemoryMb], now_ms);
  AppFed& fed = apps_[spec.id];
  fed = AppFed{};
  fed.home = sub;
  fed.epoch = next_epoch_++;
  fed.spec = spec;
  fed.added.assign(subs_.size(), 0);
  fed.any_sent.resize(subs_.size());
  fed.ready_ms.assign(subs_.size(), 0);
  fed.held.resize(subs_.size());
  fed.ready_ms[sub] = arrives;
  if (arrives == now_ms) {
    fed.added[sub] = 1;
    AppJoined(sub, /*homed=*/true);
  } else {
    activations_.push(Activation{arrives, spec.id, sub, fed.epoch});
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<ContainerKill>> SubClusters::RemoveApp(AppId app) {
  if (!federated()) {
    auto kills = subs_[0]->RemoveApp(app);
    if (kills.ok()) AppLeft(0, /*homed=*/true);
    return kills;
  }
  auto it = apps_.find(app);
  if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("app ", app, " is not known"));
  std::vector<ContainerKill> all;
  absl::Status first_error;
  for (int s = 0; s < size(); ++s) {
    if (!it->second.added[s]) continue;
    auto kills = TimedOn(s, [&] { return subs_[s]->RemoveApp(app); });
    AppLeft(s, /*homed=*/s == it->second.home);
    if (!kills.ok()) {
      first_error.Update(kills.status());
      continue;
    }
    for (const ContainerKill& k : *kills) all.push_back(Globalize(s, k));
  }
  apps_.erase(it);
  if (!first_error.ok()) return first_error;
  return all;
}

absl::Status SubClusters::UpdateRequests(AppId app, const scheduler::RequestUpdate& update) {
  if (!federated()) return subs_[0]->UpdateRequests(app, update);
  auto it = apps_.find(app);
  if (it == apps_.end()) return absl::NotFoundError(absl::StrCat("app ", app, " is not known"));
  AppFed& fed = it->second;
  const int n = size();
  using Group = std::pair<int64_t, int32_t>;

  // 1. Merge into the table (absolute counts), keeping each group's node-level sums per
  //    sub-cluster; note the groups and rows this update changes.
  std::set<Group> groups;
  std::set<std::tuple<int64_t, int32_t, std::string>> changed;
  for (const ResourceRequest& rr : update.asks) {
    Group g{rr.allocation_request_id, rr.priority};
    groups.insert(g);
    auto key = std::make_tuple(rr.allocation_request_id, rr.priority, rr.resource_name);
    changed.insert(key);
    int64_t old = 0;
    if (auto t = fed.table.find(key); t != fed.table.end()) old = t->second.num_containers;
    fed.table[key] = rr;
    if (rr.resource_name != scheduler::kAnyResourceName && rr.resource_name[0] != '/') {
      int sub = SubOfNodeName(rr.resource_name);
      auto& sums = fed.node_sums[g];
      sums.resize(static_cast<size_t>(n), 0);
      sums[static_cast<size_t>(sub < 0 ? fed.home : sub)] += rr.num_containers - old;
    }
  }

  // 2. The policy's input: per changed group its `*` row, its changed node and rack rows, and
  //    one summary row per sub-cluster for its other node rows ("<node>:0": a node of that
  //    sub-cluster, the port marks it as a summary). Same split, far fewer rows than the
  //    whole table of a job with thousands of preferred hosts.
  std::vector<v1::ResourceRequest> asks;
  for (const Group& g : groups) {
    std::vector<int64_t> rest(static_cast<size_t>(n), 0);
    if (auto s = fed.node_sums.find(g); s != fed.node_sums.end()) rest = s->second;
    auto lo = fed.table.lower_bound(std::make_tuple(g.first, g.second, std::string()));
    for (auto t = lo; t != fed.table.end() && std::get<0>(t->first) == g.first &&
                      std::get<1>(t->first) == g.second;
         ++t) {
      const ResourceRequest& rr = t->second;
      bool is_any = rr.resource_name == scheduler::kAnyResourceName;
      if (!is_any && !changed.contains(t->first)) continue;
      if (!is_any && rr.resource_name[0] != '/') {
        int sub = SubOfNodeName(rr.resource_name);
        rest[static_cast<size_t>(sub < 0 ? fed.home : sub)] -= rr.num_containers;
      }
      v1::ResourceRequest& a = asks.emplace_back();
      a.set_priority(rr.priority);
      a.set_resource_name(rr.resource_name);
      *a.mutable_capability() = ToProto(rr.capability, o_.registry);
      a.set_num_containers(rr.num_containers);
      a.set_relax_locality(rr.relax_locality);
      a.set_allocation_request_id(rr.allocation_request_id);
    }
    const ResourceRequest* any = [&]() -> const ResourceRequest* {
      auto t = fed.table.find(std::make_tuple(g.first, g.second, std::string("*")));
      return t == fed.table.end() ? nullptr : &t->second;
    }();
    for (int s = 0; s < n; ++s) {
      if (rest[static_cast<size_t>(s)] <= 0 || any == nullptr) continue;
      v1::ResourceRequest& a = asks.emplace_back();
      a.set_priority(g.second);
      a.set_resource_name(rep_node_[static_cast<size_t>(s)] + ":0");
      *a.mutable_capability() = ToProto(any->capability, o_.registry);
      a.set_num_containers(static_cast<int32_t>(rest[static_cast<size_t>(s)]));
      a.set_relax_locality(true);
      a.set_allocation_request_id(g.first);
    }
  }

  // 3. Split, with each sub-cluster's unallocated resources as its headroom (as of the
  //    AMRMProxy's view of the heartbeats).
  federation::PolicyContext ctx = Context(Read(amrm_view_));
  std::map<std::string, v1::Resource> headroom;
  for (const v1::SubClusterInfo& info : ctx.active)
    headroom[info.sub_cluster_id()] = info.available();
  auto split = amrm_->SplitResourceRequests(asks, SubId(fed.home), headroom, ctx);
  if (!split.ok()) {
    return absl::Status(split.status().code(), absl::StrCat("AMRMProxy policy ", amrm_->name(),
                                                            ": ", split.status().message()));
  }

  // 4. Each sub-cluster's part: its rows of the changed asks and its `*` counts; groups whose
  //    `*` it held and no longer gets are cancelled.
  absl::Status result;
  for (int s = 0; s < n; ++s) {
    scheduler::RequestUpdate part;
    std::set<Group> got_any;
    if (auto p = split->find(SubId(s)); p != split->end()) {
      for (const v1::ResourceRequest& a : p->second) {
        Group g{a.allocation_request_id(), a.priority()};
        auto key = std::make_tuple(g.first, g.second, a.resource_name());
        bool is_any = a.resource_name() == scheduler::kAnyResourceName;
        if (!is_any && !changed.contains(key)) continue;  // a summary row
        ResourceRequest rr = fed.table.at(key);
        rr.num_containers = a.num_containers();
        if (is_any) {
          got_any.insert(g);
          if (rr.num_containers > 0) {
            fed.any_sent[s].insert(g);
          } else if (!fed.any_sent[s].erase(g)) {
            continue;  // 0 where it never had any: nothing to cancel
          }
        }
        part.asks.push_back(std::move(rr));
      }
    }
    for (const Group& g : groups) {
      if (got_any.contains(g) || !fed.any_sent[s].erase(g)) continue;
      ResourceRequest rr = fed.table.at(std::make_tuple(g.first, g.second, std::string("*")));
      rr.num_containers = 0;
      part.asks.push_back(std::move(rr));
    }
    if (part.asks.empty()) continue;
    if (!fed.added[s] && s != fed.home) {
      bool positive = std::any_of(part.asks.begin(), part.asks.end(),
                                  [](const ResourceRequest& r) { return r.num_containers > 0; });
      if (!positive) continue;
      scheduler::AppSpec uam = fed.spec;
      uam.am_resource = Resource();  // an unmanaged AM: the AMRMProxy in the home
      absl::Status st = TimedOn(s, [&] { return subs_[s]->AddApp(uam, 0); });
      if (!st.ok()) {
        result.Update(absl::Status(st.code(),
                                   absl::StrCat("unmanaged AM in ", SubId(s), ": ", st.message())));
        continue;
      }
      fed.added[s] = 1;
      AppJoined(s, /*homed=*/false);
      ++uams_[static_cast<size_t>(s)];
      fed.ready_ms[s] = clock_ms_ + o_.federation.uam_launch_ms;
      if (fed.ready_ms[s] > clock_ms_) {
        activations_.push(Activation{fed.ready_ms[s], app, s, fed.epoch});
      }
    }
    absl::Status st = SendOrHold(fed, app, s, std::move(part));
    if (!st.ok())
      result.Update(absl::Status(st.code(), absl::StrCat(SubId(s), ": ", st.message())));
  }
  // Rows at 0 are spent: the table keeps what is outstanding (and every `*`).
  for (const auto& key : changed) {
    auto t = fed.table.find(key);
    if (t != fed.table.end() && t->second.num_containers == 0 &&
        t->second.resource_name != scheduler::kAnyResourceName) {
      fed.table.erase(t);
    }
  }
  return result;
}

absl::Status SubClusters::ContainerCompleted(ContainerId container) {
  if (!federated()) return subs_[0]->ContainerCompleted(container);
  const auto n = static_cast<ContainerId>(size());
  int sub = static_cast<int>(container % n);
  return TimedOn(sub, [&] { return subs_[sub]->ContainerCompleted(container / n); });
}

absl::Status SubClusters::ContainerCompleted(ContainerId container, int64_t now_ms) {
  if (!federated()) return subs_[0]->ContainerCompleted(container, now_ms);
  const auto n = static_cast<ContainerId>(size());
  int sub = static_cast<int>(container % n);
  return TimedOn(sub, [&] { return subs_[sub]->ContainerCompleted(container / n, now_ms); });
}

void SubClusters::NoteAllocation(AppId app, int sub) {
  auto [it, added] = footprint_.try_emplace(app, sub, false);
  if (!added && it->second.first != sub) it->second.second = true;
}

const scheduler::PassResult& SubClusters::Schedule(int64_t now_ms) {
  if (!federated()) {
    const scheduler::PassResult& pr = subs_[0]->Schedule(now_ms);
    for (const scheduler::Allocation& a : pr.allocations) NoteAllocation(a.app, 0);
    return pr;
  }
  pass_ = scheduler::PassResult{};
  const int n = size();
  for (int s = 0; s < n; ++s) {
    const scheduler::PassResult& pr =
        TimedOn(s, [&]() -> const scheduler::PassResult& { return subs_[s]->Schedule(now_ms); });
    for (scheduler::Allocation a : pr.allocations) {
      a.container = a.container * static_cast<ContainerId>(n) + static_cast<ContainerId>(s);
      a.node = a.node * n + s;
      NoteAllocation(a.app, s);
      pass_.allocations.push_back(std::move(a));
    }
    for (const ContainerKill& k : pr.kills) pass_.kills.push_back(Globalize(s, k));
    pass_.rejected.insert(pass_.rejected.end(), pr.rejected.begin(), pr.rejected.end());
  }
  return pass_;
}

bool SubClusters::AnyPending() const {
  return std::any_of(subs_.begin(), subs_.end(),
                     [](const auto& s) { return s->FindQueue("root")->pending.AnyPositive(); });
}

Resource SubClusters::cluster_allocated() const {
  if (!federated()) return subs_[0]->cluster_allocated();
  Resource sum;
  for (const auto& s : subs_) sum += s->cluster_allocated();
  return sum;
}

const Resource& SubClusters::cluster_total() const {
  if (!federated()) return subs_[0]->cluster_total();
  total_ = Resource();
  for (const auto& s : subs_) total_ += s->cluster_total();
  return total_;
}

scheduler::SchedulerStats SubClusters::stats() const {
  if (!federated()) return subs_[0]->stats();
  scheduler::SchedulerStats sum;
  for (const auto& s : subs_) {
    const scheduler::SchedulerStats& st = s->stats();
    sum.passes = std::max(sum.passes, st.passes);  // passes run in lock-step
    sum.allocations += st.allocations;
    sum.node_local += st.node_local;
    sum.rack_local += st.rack_local;
    sum.off_switch += st.off_switch;
    sum.contracts += st.contracts;
    sum.preempted += st.preempted;
    sum.recovered += st.recovered;
    sum.soft_violations += st.soft_violations;
    sum.gangs_placed += st.gangs_placed;
    sum.gangs_rejected += st.gangs_rejected;
    sum.gang_reservations += st.gang_reservations;
  }
  return sum;
}

std::pair<int64_t, int64_t> SubClusters::QueueLoad(const std::string& leaf) const {
  int64_t running = 0, pending = 0;
  for (const auto& s : subs_) {
    for (const scheduler::AppState* a : s->FindQueue(leaf)->apps) {
      running += a->num_containers;
      pending += a->pending_containers;
    }
  }
  return {running, pending};
}

double SubClusters::Share(const Resource& r) const {
  if (!federated()) return subs_[0]->view().Share(r);
  return DominantShare(r, cluster_total(), o_.registry.size());
}

std::vector<double> SubClusters::WantingShares(const std::string& leaf) const {
  std::vector<double> shares;
  if (!federated()) {
    for (const scheduler::AppState* a : subs_[0]->FindQueue(leaf)->apps) {
      // Apps that hold task containers and still want more: the ones a fair policy equalises.
      if (!a->runnable || a->pending_containers == 0 || !(a->usage - a->am_usage).AnyPositive())
        continue;
      shares.push_back(subs_[0]->view().Share(a->usage));
    }
    return shares;
  }
  struct Sum {
    Resource usage, am_usage;
    int64_t pending = 0;
    bool runnable = false;
  };
  std::map<AppId, Sum> apps;
  for (const auto& s : subs_) {
    for (const scheduler::AppState* a : s->FindQueue(leaf)->apps) {
      Sum& sum = apps[a->id];
      sum.usage += a->usage;
      sum.am_usage += a->am_usage;
      sum.pending += a->pending_containers;
      sum.runnable |= a->runnable;
    }
  }
  for (const auto& [id, a] : apps) {
    if (!a.runnable || a.pending == 0 || !(a.usage - a.am_usage).AnyPositive()) continue;
    shares.push_back(Share(a.usage));
  }
  return shares;
}

const scheduler::Scheduler& SubClusters::HomeOf(AppId app) const {
  auto it = apps_.find(app);
  return *subs_[it == apps_.end() ? 0 : static_cast<size_t>(it->second.home)];
}

}  // namespace weft::sim::internal
