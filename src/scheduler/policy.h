// Copyright Weft authors. The interface every scheduling policy implements.
#ifndef WEFT_SCHEDULER_POLICY_H_
#define WEFT_SCHEDULER_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "scheduler/state.h"

namespace weft::scheduler {

// What a policy may read of the cluster when it computes keys and limits.
struct ClusterView {
  Resource total;                           // capacity of schedulable nodes
  double inverse_total[kMaxResourceTypes];  // 1/total per type, 0 where total is 0
  // DRF's dominant share of `r` against the cluster, as used for every key.
  double Share(const Resource& r) const {
    double s = 0;
    for (int i = 0; i < kMaxResourceTypes; ++i) {
      double x = static_cast<double>(r[i]) * inverse_total[i];
      s = x > s ? x : s;
    }
    return s;
  }
};

// The core's side of a policy that places containers itself (SchedulingPolicy::Place).
// The core stays the only writer of state: the policy reads, then asks the core to
// allocate; every allocation the core makes through it keeps all of the core's invariants
// (node capacity, queue limits, blacklists, locality rows, accounting). Valid only during the
// Place() call it is passed to.
class PlacementContext {
 public:
  virtual ~PlacementContext() = default;

  // The pass's time, in ms on the caller's clock.
  virtual int64_t now_ms() const = 0;
  virtual const ClusterView& view() const = 0;
  // Runnable apps (not held back by max-running-apps), in submission order.
  virtual const std::vector<const AppState*>& apps() const = 0;
  // Node ids are dense in [0, node_limit()); removed or unhealthy nodes have !schedulable.
  virtual NodeId node_limit() const = 0;
  virtual const NodeState& node(NodeId id) const = 0;
  // Calls `f` for every live container on the node (AM containers included).
  virtual void ForEachContainer(NodeId id,
                                const std::function<void(const ContainerState&)>& f) const = 0;
  // Whether one container of `app`'s request group `group` (an index into app.groups) may be
  // allocated on `node` now: the node is schedulable, not blacklisted, the request fits its
  // free capacity, the group's locality rows allow the node, and queue and policy limits hold.
  virtual bool CanPlace(const AppState& app, size_t group, NodeId node) const = 0;
  // Allocates one container of the group on the node; false (and no change) when !CanPlace.
  // Group indexes of the app may change after a successful call (a satisfied AM group is
  // dropped): look them up again.
  virtual bool Place(AppId app, size_t group, NodeId node) = 0;
  // The core's own placement for the group (locality levels with delay scheduling, indexed
  // node search). False when nothing was placed.
  virtual bool PlaceAnywhere(AppId app, size_t group) = 0;
};

class Scheduler;

// The queue's instantaneous fair share (YARN's): the cluster split at every level of the tree
// among the queue and those of its siblings that have runnable apps, in proportion to
// `share_weight`, never below `floor` and never above `limit` (both capped by the cluster).
// Reads only the queue tree as Recompute left it and the apps' counts.
Resource InstantaneousShare(const QueueNode& queue, const ClusterView& view);

// A queue's capacities as YARN's CapacityScheduler reports them (the REST API's scheduler
// info), in percent. Root's are all 100.
struct QueueCapacities {
  double capacity = 100;                   // guaranteed, of the parent
  double maximum_capacity = 100;           // elastic maximum, of the parent
  double absolute_capacity = 100;          // guaranteed, of the cluster
  double absolute_maximum_capacity = 100;  // elastic maximum, of the cluster
};

// What a policy tells about one app at a moment (simulator samples, reports).
struct AppPolicyReport {
  double utility = 0;            // the policy's utility of the app's running tasks now
  int32_t running_map_like = 0;  // the app's running task containers, by phase kind
  int32_t running_reduce_like = 0;
};

// A scheduling policy decides *who* is served next and *how much* each queue may hold; the
// core (Scheduler) decides *where*: locality, node choice, bookkeeping and the preemption
// protocol. Policies are pure functions of the state they are shown: no clocks, no I/O.
//
// Keys: siblings are served smallest OrderKey first. The core recomputes an entity's key after
// every change of its usage, and every key when the cluster's total changes.
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;

  virtual absl::string_view name() const = 0;

  // Checks the policy's own rules on a parsed queue tree (e.g. capacities summing to 100).
  // The error names the queue. Called before a configuration is applied; on error the old
  // configuration stays.
  virtual absl::Status Validate(const QueueConfig& root) const = 0;

  // The leaf ordering used when a leaf does not set `ordering`.
  virtual LeafOrdering DefaultLeafOrdering() const = 0;

  // Key of an app within its leaf.
  virtual OrderKey AppKey(const AppState& app, const ClusterView& view) const = 0;
  // Key of a queue within its parent; `best_child` is the key of its first active child.
  virtual OrderKey QueueKey(const QueueNode& queue, const OrderKey& best_child,
                            const ClusterView& view) const = 0;

  // Fills limit, share_weight and floor of every queue for the current cluster. Called when
  // the configuration or the cluster's total changes.
  virtual void Recompute(const std::vector<QueueNode*>& queues, const ClusterView& view) const = 0;

  // Policy limits beyond the queues' `limit` (which the core checks on every ancestor):
  // e.g. user limits and the AM resource limit. True when `app` may receive `r` now.
  virtual bool CanAllocate(const AppState& app, const Resource& r, bool is_am,
                           const ClusterView& view) const = 0;

  // The most the AM containers of the leaf `leaf` may hold together now; nullopt = no limit.
  // The core checks it before every AM allocation, after the queue limits and CanAllocate:
  // an AM starts only if the leaf's AM usage with it fits in the limit (every resource type),
  // except that a leaf running no AM may always start one, as long as all AMs in the cluster
  // then hold at most SchedulerConfig::queue_max_am_share_default of it (or it is the only
  // one). So AMs can never take a cluster whose apps then wait for task containers forever.
  // Apps whose AM cannot start yet stay waiting (the RM's ACCEPTED) and take nothing.
  // The default is YARN's FairScheduler maxAMShare: `max_am_share` (the leaf's, else the
  // cluster default) x the leaf's InstantaneousShare, rounded down; none for -1.
  virtual std::optional<Resource> AmLimit(const QueueNode& leaf, const ClusterView& view) const;

  // The capacities of `queue` (never root) for reports, given its parent's; see
  // Scheduler::Capacities. Reads the queue tree as Recompute left it. The default, for policies
  // that split by weight: the queue's capacity is its weight over the sum of its siblings'
  // (positive) weights; its maximum capacity its `limit`, capped by the cluster, as a dominant
  // share of the cluster over the parent's absolute maximum capacity (at most 100; 100 when the
  // parent's is 0). Absolute figures are the parent's times the queue's.
  virtual QueueCapacities Capacities(const QueueNode& queue, const QueueCapacities& parent,
                                     const ClusterView& view) const;

  // Whether the core should run preemption for this policy (when the config enables it).
  virtual bool SupportsPreemption() const = 0;

  // Settings beyond the queue tree: the policy's own section of the configuration, if any
  // (SchedulerConfig::policy_sections). Called when the scheduler is created and on every
  // Reconfigure, before the configuration is applied; an error refuses it.
  virtual absl::Status Configure(const SchedulerConfig&) { return absl::OkStatus(); }

  // The per-app hook: the policy's report on `app` at `now_ms` (Scheduler::PolicyReport, and
  // the registry's PolicyReportAs for a policy used as a yardstick while another schedules);
  // nullopt when it makes none, or for an unknown app. Must read only the scheduler's state.
  virtual std::optional<AppPolicyReport> Report(const Scheduler&, AppId, int64_t /*now_ms*/) const {
    return std::nullopt;
  }

  // Policies that decide *where* as well return true: the core then calls Place() in
  // every pass, after preemption and instead of its own ordering loop. Such a policy may keep
  // state between passes (its current placement plan); it must still be deterministic.
  virtual bool DecidesPlacement() const { return false; }
  virtual void Place(PlacementContext&) {}
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICY_H_
