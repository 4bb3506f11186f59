// Copyright Weft authors. The interface every scheduling policy implements.
#ifndef WEFT_SCHEDULER_POLICY_H_
#define WEFT_SCHEDULER_POLICY_H_

#include <memory>
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

  // Whether the core should run preemption for this policy (when the config enables it).
  virtual bool SupportsPreemption() const = 0;
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICY_H_
