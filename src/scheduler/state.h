// Copyright Weft authors. The scheduler core's state, as policies see it (read-only).
#ifndef WEFT_SCHEDULER_STATE_H_
#define WEFT_SCHEDULER_STATE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "common/resource.h"
#include "scheduler/config.h"
#include "scheduler/fit_index.h"
#include "scheduler/placement_constraint.h"
#include "scheduler/types.h"

namespace weft::scheduler {

// How policies order siblings: lexicographic (tier, value, tiebreak), smallest served first.
struct OrderKey {
  int32_t tier = 0;
  double value = 0;
  uint64_t tiebreak = 0;
  friend bool operator<(const OrderKey& a, const OrderKey& b) {
    return std::tie(a.tier, a.value, a.tiebreak) < std::tie(b.tier, b.value, b.tiebreak);
  }
  friend bool operator==(const OrderKey& a, const OrderKey& b) = default;
};

// Something that sits in a parent queue's ordering heap: a queue or an app.
struct Schedulable {
  OrderKey key;
  int32_t heap_pos = -1;  // position in the parent's heap; -1 when not active
  Resource usage;         // allocated to it now (for a queue: its whole subtree)
};

struct QueueNode;

// What a request group asks beyond YARN's ResourceRequest (ResourceRequest's allocation_tags,
// constraint, node_label and gang fields), resolved. Shared, immutable; a group without any of
// it has none (and takes the core's plain, indexed placement path).
struct GroupPlacement {
  std::vector<std::string> tags;
  int32_t tag_set = -1;  // the scheduler's interned id of `tags`; -1 when empty
  bool has_constraint = false;
  bool soft = false;
  PlacementConstraint constraint;
  std::string node_label;
  int32_t label = 0;  // index of node_label in the scheduler's label table (0: default)
  bool gang = false;
  int64_t gang_timeout_ms = 0;
  bool gpu_same_group = false;  // ResourceRequest::gpu_same_group
};

// One request group: YARN's scheduler key (priority, allocation_request_id, capability) with
// its host, rack and "*" rows. `any.count` is the number of containers still wanted.
struct RequestGroup {
  struct Row {
    int32_t count = 0;
    bool relax = true;
  };
  // A host or rack row, resolved to the node or rack index it names (-1 while unknown).
  struct LocalRow {
    std::string name;
    int32_t id = -1;
    int32_t count = 0;
    bool relax = true;
  };
  int32_t priority = 0;
  int64_t allocation_request_id = 0;
  Resource capability;
  bool is_am = false;
  Row any{0, true};
  std::vector<LocalRow> hosts;  // in the order first asked; probed round-robin
  std::vector<LocalRow> racks;
  absl::flat_hash_map<std::string, int32_t> row_index;  // host or rack name -> row
  uint64_t resolved_generation = 0;  // topology generation the row ids were resolved at
  uint32_t host_cursor = 0;
  uint32_t rack_cursor = 0;
  int32_t missed_opportunities = 0;  // passes skipped waiting for locality
  uint64_t last_missed_pass = 0;
  uint64_t last_alloc_pass = 0;  // a pass that placed one of its containers
  int32_t live_hosts = 0;        // host rows with count > 0
  int32_t live_racks = 0;        // rack rows with count > 0
  std::shared_ptr<const GroupPlacement> placement;  // null for a plain group
  int64_t waiting_since_ms = -1;  // a gang: the first pass that tried it; -1 before
  uint64_t gang_seq = 0;          // a gang: its place in the global gang order, 0 before
  uint64_t failed_pass = 0;       // with placement: the last pass that found it no node
};

// An app's task containers of one container priority (a phase of the job) that ran to
// completion, and their total run time (ContainerCompleted with a time). Recorded whatever the
// policy: goal-aware policies and reports estimate task lengths from it (seed 003's Job
// Status Updater).
struct TaskStats {
  int64_t completed = 0;
  int64_t total_ms = 0;
};

struct AppState : Schedulable {
  AppId id = 0;
  JobProfile profile;                                  // as given in AppSpec (validated)
  absl::flat_hash_map<int32_t, TaskStats> task_stats;  // by container priority
  QueueNode* queue = nullptr;                          // its leaf
  std::string user;
  int32_t priority = 0;
  uint64_t submit_seq = 0;  // order of AddApp calls
  Resource am_usage;        // part of usage held by the AM container
  Resource pending;         // sum of capability x outstanding count over groups
  int64_t pending_containers = 0;
  bool runnable = false;             // false while waiting on max-running-apps (queue or user)
  uint64_t blocked_pass = 0;         // the pass in which it found nothing to place
  std::vector<RequestGroup> groups;  // sorted by (is_am desc, priority, request id, capability)
  absl::flat_hash_set<NodeId> blacklist;
  std::vector<std::string> blacklist_names;  // as given, for nodes not registered yet
  int32_t first_container = -1;  // head of its containers' list (a slot; see ContainerState)
  int64_t num_containers = 0;
  Resource* user_usage = nullptr;  // its entry in queue->user_usage (stable address)
  // Container increases asked for and not yet granted: container -> the whole new resource.
  std::vector<std::pair<ContainerId, Resource>> increases;
};

struct QueueNode : Schedulable {
  QueueConfig config;  // children omitted; max_am_share and ordering resolved to their defaults
  std::string path;    // "root.prod.etl"
  int32_t index = 0;   // pre-order position, a stable tiebreak
  int32_t depth = 0;
  QueueNode* parent = nullptr;
  std::vector<QueueNode*> children;
  bool is_leaf() const { return children.empty(); }
  // Ordered heap of active children: queues for a parent, apps for a leaf.
  std::vector<Schedulable*> heap;
  std::vector<AppState*> apps;  // leaf: all its apps, in submission order
  // Leaf: apps held back by max-running-apps (of a queue on its path or of their user), in
  // submission order.
  std::deque<AppState*> waiting_apps;
  int64_t running_apps = 0;  // runnable apps in this subtree
  Resource am_usage;
  Resource pending;
  // Set by the policy (Policy::Recompute): the absolute limit this queue may not exceed, and
  // the inputs of the shared entitlement computation.
  Resource limit;
  double share_weight = 1.0;  // split of the parent's entitlement among active siblings
  Resource floor;             // entitlement never below min(floor, demand)
  // Set by the core from the above: what the queue should have now (its instantaneous fair
  // share or elastic guarantee, capped by its demand). Used for preemption and reports.
  Resource entitlement;
  int64_t starved_since_ms = -1;
  absl::node_hash_map<std::string, Resource> user_usage;  // leaf: per user; stable addresses
  // Node labels: which the queue's apps may ask for (resolved from the config, inherited;
  // the default partition always), their usage on each label's nodes and the most they may
  // hold there (label index -> resource; absent = no use / no limit).
  std::vector<bool> label_access;  // by label index
  absl::flat_hash_map<int32_t, Resource> label_usage;
  absl::flat_hash_map<int32_t, Resource> label_limit;
};

// One GPU of a node and its free share (docs/gpu.md).
struct NodeGpu {
  GpuDevice device;
  int32_t free_milli = 1000;  // 0..1000; counts toward the node's room only while healthy
};

struct NodeState {
  std::string name;
  int32_t rack = 0;       // index into the racks table
  int32_t rack_slot = 0;  // slot in the rack's FitIndex
  Resource capacity;
  Resource allocated;
  bool schedulable = true;  // healthy and not removed
  bool removed = false;
  int32_t first_container = -1;  // head of its containers' list (a slot)
  int32_t num_containers = 0;
  int32_t label = 0;          // its node label's index (0: the default partition)
  int32_t label_slot = -1;    // slot in its label's FitIndex (labelled nodes only)
  NodeAttributes attributes;  // sorted by key
  AppId reserved_for = 0;     // the app whose gang holds a reservation on it; 0 none
  std::vector<NodeGpu> gpus;  // by position; empty on a node without GPUs
};

struct ContainerState {
  ContainerId id = 0;
  AppId app = 0;
  NodeId node = 0;
  Resource resource;
  int32_t priority = 0;
  bool is_am = false;
  int64_t allocated_ms = 0;
  int64_t preempt_deadline_ms = -1;  // >= 0 once named in a strict contract
  int32_t tag_set = -1;              // its allocation tags (interned); -1 none
  uint64_t gang = 0;                 // the gang it started in; 0 none
  int32_t label = 0;                 // the node label its usage is charged to (its ask's)
  // Intrusive lists through the scheduler's container slab: O(1) link and unlink.
  int32_t app_prev = -1, app_next = -1;
  int32_t node_prev = -1, node_next = -1;
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_STATE_H_
