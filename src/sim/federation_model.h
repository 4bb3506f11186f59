// Copyright Weft authors. The simulator's sub-clusters (seed 004): the cluster's nodes split
// into N sub-clusters, each scheduled by its own instance of the real scheduling core, with the
// federation router policy choosing each app's home and the AMRMProxy policy splitting its asks
// across sub-clusters (an app gets an unmanaged AM in every secondary sub-cluster it asks in).
// The simulator talks to one SubClusters object as it would to one Scheduler; with one
// sub-cluster every call is passed to the single scheduler unchanged (the monolithic run).
//
// What the policies know (FederationOptions): each sub-cluster publishes its load at its
// membership heartbeats; the router and the AMRMProxy read those snapshots through caches with a
// TTL; a submission reaches its home RM after the state-store calls on its path; asks to a
// secondary sub-cluster wait for its unmanaged AM to launch. The router may count its own
// in-flight placements (federation/policies/in_flight_ledger.h). With every delay 0 the policies
// read live load, as before these options existed.
//
// Ids: the simulator sees global node and container ids, local * N + sub-cluster index (the
// identity when N = 1), and global rack ids (the single scheduler's own when N = 1). App ids are
// the same in every sub-cluster. Not thread-safe; owned by one Sim.
#ifndef WEFT_SIM_FEDERATION_MODEL_H_
#define WEFT_SIM_FEDERATION_MODEL_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "federation/policies/in_flight_ledger.h"
#include "federation/policies/policy.h"
#include "scheduler/scheduler.h"
#include "sim/simulator.h"

namespace weft::sim::internal {

class SubClusters {
 public:
  // Checks `o.federation` (InvalidArgument naming the flag's field: sub-cluster count, policy
  // names, headroom alpha, AdaptCont with more than one sub-cluster) and creates the
  // schedulers from `o.scheduler`. Nodes are added with AddNodes.
  static absl::StatusOr<std::unique_ptr<SubClusters>> Create(const SimOptions& o);

  // Adds the nodes: with N > 1 they are ordered by (rack, name) and cut into N contiguous
  // blocks of equal size (a sub-cluster is a set of racks, give or take the racks at the
  // cuts). Returns their global ids in the order of `nodes`. InvalidArgument when there are
  // fewer nodes than sub-clusters; the scheduler's error for a bad node.
  absl::StatusOr<std::vector<scheduler::NodeId>> AddNodes(
      const std::vector<scheduler::NodeSpec>& nodes);

  // Brings the federation to `now_ms` (not earlier than any previous call's; an earlier time is
  // ignored): in time order, due activations reach their RMs (submissions through the store,
  // asks held for a launching unmanaged AM) and the sub-clusters' heartbeats publish their
  // load; apps per RM are integrated. The simulator calls it before each event, so that a
  // heartbeat at t shows what happened before t.
  void AdvanceTo(int64_t now_ms);
  // When the earliest pending activation is due; -1: none. The simulator runs a pass then.
  int64_t NextActivationMs() const;
  // Apps whose home RM refused them when their submission arrived (deferred by the store
  // latency), with the RM's error; each returned once. They are forgotten here.
  std::vector<std::pair<scheduler::AppId, absl::Status>> TakeFailedActivations();

  int size() const { return static_cast<int>(subs_.size()); }
  bool federated() const { return subs_.size() > 1; }

  // --- The Scheduler calls the simulator makes, on global ids ---------------------------
  const scheduler::NodeState* node(scheduler::NodeId id) const;  // its `rack` is not global
  int32_t RackOf(scheduler::NodeId id) const;                    // global rack id
  const std::string& rack_name(int32_t rack) const;
  absl::StatusOr<std::vector<scheduler::ContainerKill>> RemoveNode(absl::string_view name);
  // The router policy chooses the app's home from the router's view (its error, e.g.
  // PermissionDenied for `reject`, is returned); the app is added there with `spec`, at once
  // or, with a store latency, when its submission arrives (AdvanceTo). `preferred_nodes`: the hosts its data is
  // on (the locality router policy's input).
  absl::Status AddApp(const scheduler::AppSpec& spec, int64_t now_ms,
                      const std::vector<std::string>& preferred_nodes);
  // Removes the app from every sub-cluster it is in; the kills of all of them.
  absl::StatusOr<std::vector<scheduler::ContainerKill>> RemoveApp(scheduler::AppId app);
  // The AMRMProxy: merges `update` into the app's ask table, splits the changed groups with
  // the AMRMProxy policy and sends each sub-cluster its part (adding the app there, unmanaged,
  // the first time it gets a positive count; its asks wait for the UAM's launch).
  absl::Status UpdateRequests(scheduler::AppId app, const scheduler::RequestUpdate& update);
  absl::Status ContainerCompleted(scheduler::ContainerId container);
  absl::Status ContainerCompleted(scheduler::ContainerId container, int64_t now_ms);
  // A pass of every sub-cluster's core, in sub-cluster order; allocations and kills on global
  // ids. Valid until the next call.
  const scheduler::PassResult& Schedule(int64_t now_ms);
  bool AnyPending() const;
  Resource cluster_allocated() const;
  const Resource& cluster_total() const;
  scheduler::SchedulerStats stats() const;

  // Queue figures summed over sub-clusters: running and pending containers of `leaf`'s apps.
  std::pair<int64_t, int64_t> QueueLoad(const std::string& leaf) const;
  // The dominant share of `r` in the whole cluster (the single scheduler's view when N = 1).
  double Share(const Resource& r) const;
  // Dominant shares of `leaf`'s apps that hold task containers and want more (summed over
  // sub-clusters), for the fairness index.
  std::vector<double> WantingShares(const std::string& leaf) const;
  // The scheduler of the app's home (the single one when N = 1; sub-cluster 0 when unknown).
  const scheduler::Scheduler& HomeOf(scheduler::AppId app) const;
  scheduler::Scheduler& first() { return *subs_[0]; }

  // Integrates each sub-cluster's utilisation of `types` over `dt_ms`.
  void Account(int64_t dt_ms, const std::vector<int>& types);
  // Fills the federation figures of the report (per sub-cluster utilisation over `span_ms`,
  // spanning jobs, scheduler wall times). `monolithic_wall_s`: the simulator's time in calls to
  // this object; with N > 1 the part outside the cores becomes SimReport::federation_wall_s
  // and SimReport::scheduler_wall_s the cores' sum.
  void FillReport(double span_ms, double monolithic_wall_s, SimReport* r) const;

 private:
  using AskKey = std::tuple<int64_t, int32_t, std::string>;  // allocation id, priority, name
  // The AMRMProxy's view of one app.
  struct AppFed {
    int home = 0;
    uint64_t epoch = 0;  // tells this submission's activations from an earlier attempt's
    scheduler::AppSpec spec;  // for the unmanaged AMs of secondaries
    std::vector<uint8_t> added;
    // (allocation id, priority, resource name) -> the latest ask.
    std::map<std::tuple<int64_t, int32_t, std::string>, scheduler::ResourceRequest> table;
    // (allocation id, priority) -> sub-cluster -> summed node-level counts.
    std::map<std::pair<int64_t, int32_t>, std::vector<int64_t>> node_sums;
    // Per sub-cluster: the groups whose `*` it holds a positive count of.
    std::vector<std::set<std::pair<int64_t, int32_t>>> any_sent;
    // Per sub-cluster: when it can take this app's asks (its submission arrived, its UAM
    // launched); until then they are held here, the latest per row.
    std::vector<int64_t> ready_ms;
    std::vector<std::map<AskKey, scheduler::ResourceRequest>> held;
  };
  // A deferred step of one app in one sub-cluster: its home submission arrives or its UAM is
  // registered, and the held asks are sent.
  struct Activation {
    int64_t ready_ms = 0;
    scheduler::AppId app = 0;
    int sub = 0;
    uint64_t epoch = 0;
    bool operator>(const Activation& o) const {
      return std::tie(ready_ms, app, sub) > std::tie(o.ready_ms, o.app, o.sub);
    }
  };
  // A policy's view of the membership through a cache (FederationOptions::cache_ttl_ms).
  struct CachedView {
    int64_t loaded_ms = -1;  // -1: never loaded
    std::vector<v1::SubClusterInfo> infos;
  };

  // The ledger forgets a placement once a heartbeat after its arrival at the RM shows it.
  explicit SubClusters(const SimOptions& o)
      : o_(o),
        rng_(o.seed ^ 0x9e3779b97f4a7c15ull),
        ledger_(2 * o.federation.store_latency_ms + 1) {}
  template <typename F>
  auto TimedOn(int sub, F f) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    wall_s_[static_cast<size_t>(sub)] +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  int SubOfNodeName(absl::string_view name) const;  // -1: unknown
  scheduler::ContainerKill Globalize(int sub, scheduler::ContainerKill k) const;
  federation::PolicyContext Context(const std::vector<v1::SubClusterInfo>& view) const;
  std::string SubId(int sub) const { return sub_ids_[static_cast<size_t>(sub)]; }
  void NoteAllocation(scheduler::AppId app, int sub);
  // federation_state.cc: snapshots, views, activations, apps per RM.
  v1::SubClusterInfo LiveInfo(int sub, int64_t heartbeat_ms) const;
  // The membership as `view` shows it now (reloaded from the store when its TTL is out).
  const std::vector<v1::SubClusterInfo>& Read(CachedView& view);
  void Advance(int64_t to_ms);  // integrates apps per RM and publishes heartbeats in (clock, to]
  void Activate(const Activation& a);
  // Sends `part` to sub-cluster `sub` now, or holds it there until the app is ready there.
  absl::Status SendOrHold(AppFed& fed, scheduler::AppId app, int sub,
                          scheduler::RequestUpdate part);
  void AppJoined(int sub, bool homed);  // an app (homed here, or a UAM) reached sub's RM
  void AppLeft(int sub, bool homed);

  const SimOptions& o_;
  std::vector<std::unique_ptr<scheduler::Scheduler>> subs_;
  std::vector<std::string> sub_ids_;
  std::vector<int> sub_nodes_;
  std::vector<double> wall_s_;
  std::unique_ptr<federation::RouterPolicy> router_;
  std::unique_ptr<federation::AmrmPolicy> amrm_;
  v1::SubClusterPolicyConfiguration config_;
  federation::SubClusterResolver resolver_;
  mutable std::mt19937_64 rng_;
  absl::flat_hash_map<std::string, int> node_sub_;             // node name -> sub-cluster
  std::vector<std::string> rep_node_;                          // a node name of each sub-cluster
  std::vector<std::string> racks_;                             // global rack id -> name
  absl::flat_hash_map<scheduler::NodeId, int32_t> node_rack_;  // global node -> global rack
  absl::flat_hash_map<scheduler::AppId, AppFed> apps_;
  // Every app that got a container: the first sub-cluster it got one in, and whether it got
  // one elsewhere too.
  absl::flat_hash_map<scheduler::AppId, std::pair<int, bool>> footprint_;
  std::vector<int64_t> homes_;             // apps homed per sub-cluster (router decisions)
  std::vector<std::vector<double>> util_;  // per sub-cluster, per accounted type: integral
  scheduler::PassResult pass_;
  mutable Resource total_;

  // Staleness (federation_state.cc).
  int64_t clock_ms_ = 0;                     // the time AdvanceTo brought the model to
  std::vector<v1::SubClusterInfo> store_;    // per sub-cluster: its last heartbeat's snapshot
  CachedView router_view_, amrm_view_;
  federation::InFlightLedger ledger_;        // the router's placements (in-flight accounting)
  std::priority_queue<Activation, std::vector<Activation>, std::greater<>> activations_;
  std::vector<std::pair<scheduler::AppId, absl::Status>> failed_activations_;
  uint64_t next_epoch_ = 1;
  // Apps per RM: held now (all; homed only), the most at once, UAMs launched, integrals.
  std::vector<int64_t> apps_live_, homed_live_, apps_peak_, uams_;
  std::vector<double> apps_integral_;  // app-ms
  double apps_cv_integral_ = 0, homed_cv_integral_ = 0, cv_time_ms_ = 0;
};

}  // namespace weft::sim::internal

#endif  // WEFT_SIM_FEDERATION_MODEL_H_
