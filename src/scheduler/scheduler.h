// Copyright Weft authors. The pure scheduling core: events in, decisions out.
#ifndef WEFT_SCHEDULER_SCHEDULER_H_
#define WEFT_SCHEDULER_SCHEDULER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "common/resource_types.h"
#include "scheduler/config.h"
#include "scheduler/gpu/fragmentation.h"
#include "scheduler/gpu/gpu_placement.h"
#include "scheduler/fit_index.h"
#include "scheduler/policy.h"
#include "scheduler/state.h"
#include "scheduler/types.h"

namespace weft::scheduler {

// A std::allocator that writes one byte of every page it hands out, so that the memory's first
// use later does not page-fault (the kernel maps and zeroes each page on its first touch).
template <typename T>
struct PrefaultAllocator {
  using value_type = T;
  PrefaultAllocator() = default;
  template <typename U>
  PrefaultAllocator(const PrefaultAllocator<U>&) {}  // NOLINT: converting, as allocators are
  T* allocate(size_t n) {
    T* p = std::allocator<T>().allocate(n);
    volatile char* bytes = reinterpret_cast<volatile char*>(p);
    for (size_t i = 0; i < n * sizeof(T); i += 4096) bytes[i] = 0;
    return p;
  }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  friend bool operator==(const PrefaultAllocator&, const PrefaultAllocator&) { return true; }
};

// A hash for ids given out in sequence (container ids), for an absl table: consecutive ids go
// to consecutive slots. absl takes a slot's position from the hash's bits above the low 7 and
// matches the low 7 (H2) within a group of 16 slots, so the id is shifted above them and its
// own low 7 bits tell neighbours apart. With absl::Hash, each id landed on a random line of a
// table sized for the cluster (32 MB at 50,000 NMs): every insert and lookup a cache miss.
// Erased ids leave tombstones among full neighbours; absl clears them by rehashing in place
// when the table's growth allowance is used up (once per ~7/8 of its capacity in inserts).
struct SequentialIdHash {
  size_t operator()(uint64_t id) const { return static_cast<size_t>((id << 7) | (id & 0x7f)); }
};

struct SchedulerOptions {
  ResourceTypeRegistry registry;  // normalises and validates every ask
  ContainerId first_container_id = 1;
};

// Counters since creation.
// Counts of one queue's subtree for reports (the RM's web UI and REST API read these, not the
// queue tree).
struct QueueSummary {
  std::string path;                // "root.prod.etl"
  int64_t containers = 0;          // running containers of its apps
  int64_t pending_containers = 0;  // containers its apps still ask for
  int64_t active_apps = 0;         // runnable apps
  int64_t pending_apps = 0;        // apps held back by max-running-apps
};

struct SchedulerStats {
  int64_t passes = 0;
  int64_t allocations = 0;
  int64_t node_local = 0;
  int64_t rack_local = 0;
  int64_t off_switch = 0;
  int64_t contracts = 0;
  int64_t preempted = 0;  // containers killed after their grace period
  int64_t recovered = 0;  // running containers handed back with RecoverContainer
  int64_t soft_violations = 0;  // containers placed against their soft constraint
  int64_t gangs_placed = 0;     // gangs started (all of their containers in one pass)
  int64_t gangs_rejected = 0;   // gangs given up after their timeout
  int64_t gang_reservations = 0;  // reservations made for a waiting gang
  int64_t increases = 0;        // container increases granted
  int64_t decreases = 0;        // container decreases applied
};

// The scheduling core. It holds the cluster's nodes, the apps with their request tables and
// containers, and the queue tree, and decides allocations in global passes over the cluster.
//
// Pure: no I/O, no threads, no clock reads (time is an argument, in ms on the caller's clock).
// Deterministic: the same calls in the same order give the same results.
// Every method that takes outside input validates it fully first: on error it returns a
// Status naming what was wrong and leaves the state unchanged.
// Thread-compatible: the RM's event loop or the simulator owns it.
class Scheduler {
 public:
  // `policy` must be the one `config.policy` names (see registry.h's CreateScheduler).
  static absl::StatusOr<std::unique_ptr<Scheduler>> Create(
      const SchedulerConfig& config, SchedulerOptions options,
      std::unique_ptr<SchedulingPolicy> policy);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Replaces the queue configuration (YARN's refreshQueues). The policy cannot change. Fails
  // when the policy rejects the tree or when a queue that holds apps would disappear.
  absl::Status Reconfigure(const SchedulerConfig& config);

  // Nodes. Names are unique among live nodes; a removed node's name may register again.
  absl::StatusOr<NodeId> AddNode(const NodeSpec& spec);
  // The node's containers are lost: they are released and returned (reason kNodeLost).
  absl::StatusOr<std::vector<ContainerKill>> RemoveNode(absl::string_view name);
  // New capacity and health. An unhealthy node keeps its containers but gets no new ones.
  absl::Status UpdateNode(absl::string_view name, const Resource& capacity, bool healthy);
  // Replaces the node's attributes (YARN's node attributes, set by the NM or an admin).
  // Containers already placed stay where they are.
  absl::Status SetNodeAttributes(absl::string_view name, const NodeAttributes& attributes);
  // Replaces the node's GPUs' descriptions (health, model, group) with `gpus`, the same GPUs
  // by index in the order it registered them; its gpu-milli capacity becomes 1000 x the healthy
  // ones. Containers keep the shares they hold (of an unhealthy GPU too).
  absl::Status SetNodeGpus(absl::string_view name, const std::vector<GpuDevice>& gpus);
  // The GPU shares a live container holds (empty for none or an unknown container).
  std::vector<DeviceShare> ContainerDevices(ContainerId id) const;

  // Apps. Fails on a duplicate id, an unknown queue or a parent queue, a STOPPED queue, or an
  // invalid AM resource.
  absl::Status AddApp(const AppSpec& spec, int64_t now_ms);
  // Releases every container the app holds and returns them (reason kAppRemoved).
  absl::StatusOr<std::vector<ContainerKill>> RemoveApp(AppId app);
  // Applies an Allocate call's asks, releases and blacklist changes, all or nothing.
  absl::Status UpdateRequests(AppId app, const RequestUpdate& update);
  // A container finished (or was released through its NM). Unknown ids are NotFound.
  absl::Status ContainerCompleted(ContainerId container);
  // The same, for a task container that ran to completion at `now_ms`: its run time (from its
  // allocation) is added to its app's AppState::task_stats, from which goal-aware policies
  // estimate task lengths. AM containers and times before the allocation are not recorded.
  absl::Status ContainerCompleted(ContainerId container, int64_t now_ms);

  // Work-preserving recovery: puts back a container that runs already (an RM restarted and an
  // NM reported it) and charges its node, its app, the app's user and queues as an allocation
  // would, but without an allocation in any PassResult. Queue and policy limits are not
  // checked: running work is kept even above a limit the configuration sets now. An AM
  // container satisfies the app's AM ask if one is still pending. Refused, with nothing
  // changed: NotFound for an unknown app or a node that is not live; AlreadyExists for an id
  // that is live; InvalidArgument for id 0, an id at or above the next one this scheduler
  // assigns, or a negative or empty resource; FailedPrecondition when the resource does not
  // fit in the node's free capacity or the app already holds an AM container.
  absl::Status RecoverContainer(const RecoveredContainer& container);

  // One global scheduling pass at time `now_ms`: kills containers whose preemption grace has
  // expired, issues new preemption contracts, then allocates until nothing more fits.
  // The result lives in a buffer the scheduler reuses: it is valid until the next call to
  // Schedule() (reusing it keeps a busy pass from touching fresh memory every time).
  const PassResult& Schedule(int64_t now_ms);

  // The policy's report on `app` at `now_ms`; nullopt when the policy makes none or the app is
  // unknown.
  std::optional<AppPolicyReport> PolicyReport(AppId app, int64_t now_ms) const {
    return policy_->Report(*this, app, now_ms);
  }

  // Recomputes every queue's entitlement (fair share / elastic guarantee capped by demand).
  // Schedule() does it when preemption is on; reports call it when they need the figures.
  void RefreshEntitlements();

  // Whether a container of `app` with `group`'s placement could go on `node` now (capacity,
  // label, reservation, blacklist and constraint; not queue limits). For reports and tests.
  bool PlacementAllows(AppId app, const GroupPlacement& group, const Resource& r,
                       NodeId node) const;
  // A container's allocation tags ({} for none or an unknown id).
  std::vector<std::string> ContainerTags(ContainerId id) const;
  // The node labels, by index (0 is the default partition, named ""), with whether each is
  // exclusive, and what its schedulable nodes hold.
  struct LabelSummary {
    std::string name;
    bool exclusive = true;
    int32_t nodes = 0;
    Resource total;
  };
  std::vector<LabelSummary> Labels() const;
  // The app whose waiting gang holds nodes reserved now (0 when none), and those nodes.
  AppId reservation_app() const { return reservation_.app; }
  const std::vector<NodeId>& reserved_nodes() const { return reservation_.nodes; }

  // Read access.
  const ResourceTypeRegistry& registry() const { return options_.registry; }
  const SchedulingPolicy& policy() const { return *policy_; }
  const SchedulerConfig& config() const { return config_; }
  const SchedulerStats& stats() const { return stats_; }
  const Resource& cluster_total() const { return view_.total; }
  const ClusterView& view() const { return view_; }
  Resource cluster_allocated() const { return root_->usage; }
  // Whether demand waits for capacity: containers asked for and not placed, or container
  // increases not granted yet. Freed capacity is worth an early pass only then.
  bool DemandWaits() const {
    return root_->pending.AnyPositive() || !apps_with_increases_.empty();
  }
  int num_nodes() const { return live_nodes_; }
  const NodeState* node(NodeId id) const;
  NodeId FindNode(absl::string_view name) const;  // -1 when not live
  const std::string& rack_name(int32_t rack) const { return racks_[rack].name; }
  const AppState* app(AppId id) const;
  const ContainerState* container(ContainerId id) const;
  // The live containers of an app or a node, in allocation order (ascending ids).
  std::vector<ContainerId> AppContainers(AppId id) const;
  std::vector<ContainerId> NodeContainers(NodeId id) const;
  // Queues in pre-order (root first); leaves have no children.
  const std::vector<QueueNode*>& queues() const { return queue_list_; }
  // By leaf name, or by path for any queue; nullptr when unknown.
  const QueueNode* FindQueue(absl::string_view name) const;
  // The most the AM containers of leaf `leaf` may hold together now, as the policy computes it
  // (SchedulingPolicy::AmLimit); nullopt = no limit. AdaptCont's queue AM limit input.
  std::optional<Resource> AmLimit(const QueueNode& leaf) const {
    return policy_->AmLimit(leaf, view_);
  }
  // The queue's capacities for reports, as the policy computes them (SchedulingPolicy::
  // Capacities) down the path from root, whose are all 100.
  QueueCapacities Capacities(const QueueNode& queue) const;
  // Every queue's subtree counts, in pre-order (root first).
  std::vector<QueueSummary> QueueSummaries() const;
  // The user's runnable apps, across all queues (what the user's max-running-apps counts).
  int64_t UserRunningApps(absl::string_view user) const;

 private:
  class Placement;  // the PlacementContext given to policies that place containers themselves

  struct Rack {
    std::string name;
    FitIndex nodes;
    std::vector<NodeId> slot_node;
  };
  struct Label {
    std::string name;
    bool exclusive = true;
    FitIndex nodes;  // its nodes' free resource (label 0, the default partition: unused)
    std::vector<NodeId> slot_node;
    Resource total;  // capacity of its schedulable nodes
    int32_t live_nodes = 0;
  };
  // Live tagged containers counted by (interned tag, node or rack), all apps and per app:
  // flat maps of integer keys, so counting a container is a few probes and no allocation.
  struct TagCounts {
    absl::flat_hash_map<uint64_t, int32_t> total;                                 // (tag, scope)
    absl::flat_hash_map<std::tuple<int32_t, int32_t, AppId>, int32_t> by_app;    // (tag, scope, app)
    void Add(int32_t tag, int32_t scope, AppId app, int sign);
    int32_t Total(int32_t tag, int32_t scope) const;
    int32_t Of(int32_t tag, int32_t scope, AppId app) const;
  };
  // The one reservation of nodes for the oldest waiting gang.
  struct Reservation {
    AppId app = 0;
    uint64_t gang_seq = 0;
    std::vector<NodeId> nodes;
  };

  Scheduler(const SchedulerConfig& config, SchedulerOptions options,
            std::unique_ptr<SchedulingPolicy> policy);

  absl::StatusOr<std::vector<std::unique_ptr<QueueNode>>> BuildTree(
      const SchedulerConfig& config) const;
  void InstallTree(std::vector<std::unique_ptr<QueueNode>> tree);
  QueueNode* FindQueueMutable(absl::string_view name) const;

  void ClusterChanged();
  void RekeyAll();
  void UpdateNodeIndex(NodeId id);
  Resource NodeFree(const NodeState& n) const;
  // GPUs (scheduler_gpu.cc).
  absl::StatusOr<std::vector<NodeGpu>> MakeNodeGpus(const NodeSpec& spec) const;
  static int64_t GpuRoom(const NodeState& n);
  // 1000 x the healthy GPUs: a node's gpu-milli capacity.
  static int64_t GpuCapacity(const std::vector<NodeGpu>& gpus);
  // capacity - allocated, with gpu-milli as GpuRoom() (exact for any valid ask).
  static Resource NodeRoom(const NodeState& n);
  static bool GpuFits(const NodeState& n, int64_t milli, bool same_group);
  // The node as GPU placement sees it (an unhealthy GPU has no room; hosted counts left 0).
  static gpu::GpuNode GpuView(const NodeState& n);
  std::vector<DeviceShare> ChooseGpus(const NodeState& n, int64_t milli, bool same_group) const;
  // Takes (sign +1) or gives back (-1) shares; false when one names no GPU or over-/under-runs.
  static bool ChargeGpus(NodeState& n, const std::vector<DeviceShare>& shares, int sign);
  absl::Status CheckGpuShares(const NodeState& n, const Resource& r,
                              const std::vector<DeviceShare>& shares) const;
  // With a gpu-placement policy (not first-fit): the best of up to gpu_placement_candidates
  // usable nodes for a GPU ask, and in `gpus` the GPUs it takes there; -1 when none fits.
  NodeId FindGpuNode(const AppState& app, const Resource& r, std::vector<DeviceShare>* gpus);
  // Remembers GPU asks for fgd's target workload (the last kGpuAskMemory of them).
  void NoteGpuAsk(const Resource& r, int32_t count);
  void CountHosted(NodeId node, const Resource& r, int sign);

  // Ordering heaps.
  void HeapPush(QueueNode* q, Schedulable* s);
  void HeapRemove(QueueNode* q, Schedulable* s);
  void HeapFix(QueueNode* q, int pos);
  bool Wants(const AppState& app) const;
  void Activate(AppState* app);
  void Deactivate(AppState* app);
  void RefreshUp(QueueNode* leaf);
  void RefreshApp(AppState* app);

  // Allocation.
  bool WithinLimits(const AppState& app, const Resource& r, bool is_am) const;
  bool AmAllowed(const QueueNode& leaf, const Resource& r) const;
  bool TryAllocate(AppState* app, int64_t now_ms, PassResult* out);
  bool PlaceGroup(AppState* app, size_t group, int64_t now_ms, PassResult* out);
  NodeId FindInRack(const AppState& app, int32_t rack, const Resource& r) const;
  NodeId FindAnywhere(const AppState& app, const Resource& r) const;
  // The node can take one container of `app` of `r` now: schedulable, in `label`'s partition
  // (0: the default one, and non-exclusive labels), not reserved for another app's gang, room
  // for `r`, not blacklisted by the app. Constraints and limits are not checked here.
  bool Usable(const AppState& app, NodeId id, const Resource& r, int32_t label = 0,
              bool gpu_same_group = false) const;
  bool LocalityAllows(const RequestGroup& g, NodeId id) const;
  // `gpus`: the GPUs a GPU ask takes on `node` as FindGpuNode chose them; empty: ChooseGpus.
  void Commit(AppState* app, size_t group, NodeId node, Locality locality, int32_t host_row,
              int32_t rack_row, int64_t now_ms, PassResult* out,
              std::vector<DeviceShare> gpus = {});
  void ResolveRows(RequestGroup* g) const;

  // Labels, tags, constraints, gangs and resizing (scheduler_placement.cc, scheduler_gang.cc).
  absl::Status InstallLabels(const SchedulerConfig& config);
  void ResolveQueueLabels();
  absl::StatusOr<std::shared_ptr<const GroupPlacement>> MakePlacement(const AppState& app,
                                                                     const ResourceRequest& ask,
                                                                     size_t index);
  int32_t InternTags(const std::vector<std::string>& tags);
  void CountTags(const ContainerState& c, int sign);
  int32_t TagId(const std::string& tag) const;  // -1 when no container ever carried it
  int32_t CountTag(const std::string& tag, const PlacementConstraint& c, AppId app,
                   NodeId node) const;
  bool Satisfies(const PlacementConstraint& c, AppId app, NodeId node) const;
  bool LabelAllows(int32_t label, const NodeState& n) const;
  bool LabelLimitAllows(const AppState& app, int32_t label, const Resource& r) const;
  bool NodeOk(const AppState& app, const GroupPlacement& p, const Resource& r, NodeId id,
              bool with_constraint) const;
  template <typename Pred>
  NodeId WalkIndex(const FitIndex& index, const std::vector<NodeId>& slot_node, const Resource& r,
                   int* budget, Pred ok) const;
  NodeId FindPlaced(const AppState& app, const GroupPlacement& p, const Resource& r,
                    bool with_constraint) const;
  bool PlacePlaced(AppState* app, size_t group, int64_t now_ms, PassResult* out);
  bool PlaceGang(AppState* app, size_t group, int64_t now_ms, PassResult* out);
  void ReserveForGang(AppState* app, const RequestGroup& g);
  void ReleaseReservation();
  void ExpireGangs(int64_t now_ms, PassResult* out);
  void DropGang(RequestGroup& g);
  absl::Status ValidateUpdates(const AppState& app, const std::vector<ContainerUpdate>& updates,
                               std::vector<Resource>* targets) const;
  void ApplyUpdates(AppState* app, const std::vector<ContainerUpdate>& updates,
                    const std::vector<Resource>& targets);
  void GrantIncreases(PassResult* out);
  // Links a new live container into the slab, its node's and its app's lists, and charges it
  // (node, app, user, queues). The caller checked that it fits and its id is free.
  void AddContainer(AppState* app, ContainerId id, NodeId node, const Resource& r, int32_t priority,
                    bool is_am, int64_t now_ms, int32_t tag_set = -1, uint64_t gang = 0,
                    int32_t label = 0, std::vector<DeviceShare> devices = {});
  void ChargeUsage(AppState* app, const Resource& r, bool is_am, int sign, int32_t label = 0);
  void ReleaseContainer(ContainerId id);
  ContainerState& slot(ContainerId id) { return slab_[containers_.at(id)]; }
  const ContainerState& slot(ContainerId id) const { return slab_[containers_.at(id)]; }
  template <typename Next>
  std::vector<ContainerId> ListContainers(int32_t head, Next next) const;
  // Max-running-apps: whether an app of `user` may run in `leaf` now (its queues' and its
  // user's limits); making an app runnable; and, after limits were freed, making runnable in
  // submission order the `candidates` (waiting apps) the limits now allow.
  bool CanRun(const QueueNode* leaf, const std::string& user) const;
  int64_t UserMaxApps(const std::string& user) const;
  void MakeRunnable(AppState* app);
  void PromoteWaiting(std::vector<AppState*> candidates);
  void CollectWaiting(const QueueNode* q, std::vector<AppState*>* out) const;
  void RecomputePending(AppState* app);

  // Preemption.
  void KillExpired(int64_t now_ms, PassResult* out);
  void IssueContracts(int64_t now_ms, PassResult* out);
  void WaterFill(QueueNode* parent);

  SchedulerConfig config_;
  SchedulerOptions options_;
  std::unique_ptr<SchedulingPolicy> policy_;
  ClusterView view_{};
  bool keys_dirty_ = true;
  bool in_pass_ = false;
  uint64_t pass_id_ = 0;

  std::vector<std::unique_ptr<QueueNode>> queue_storage_;
  std::vector<QueueNode*> queue_list_;
  QueueNode* root_ = nullptr;
  absl::flat_hash_map<std::string, QueueNode*> queue_by_name_;  // leaf names and paths

  std::vector<NodeState> nodes_;
  absl::flat_hash_map<std::string, NodeId> node_by_name_;
  int live_nodes_ = 0;
  std::vector<Rack> racks_;
  absl::flat_hash_map<std::string, int32_t> rack_by_name_;
  FitIndex rack_index_;  // one slot per rack: the max free of its nodes
  int32_t rack_cursor_ = 0;
  uint64_t topology_generation_ = 1;  // bumped when a node joins or leaves

  absl::flat_hash_map<AppId, std::unique_ptr<AppState>> apps_;
  uint64_t next_submit_seq_ = 0;
  absl::flat_hash_map<std::string, int64_t> user_running_apps_;  // runnable apps per user
  // Live containers: a slab with a free list, and their ids' slots. Slots are reused. The id
  // table is reserved for the cluster's bound (ClusterChanged) and its memory touched when it
  // is allocated (PrefaultAllocator): without that each insert into a page not used before
  // took a page fault in a pass (13% of a pass's time at 50,000 NMs, whose table is 32 MB).
  // Ids are hashed by SequentialIdHash, so that the live containers (ids given out in order)
  // sit in a run of neighbouring slots, not all over the 32 MB.
  std::vector<ContainerState> slab_;
  std::vector<int32_t> free_slots_;
  absl::flat_hash_map<ContainerId, int32_t, SequentialIdHash, std::equal_to<ContainerId>,
                      PrefaultAllocator<std::pair<const ContainerId, int32_t>>>
      containers_;
  ContainerId next_container_id_;
  std::vector<ContainerId> preempt_marked_;
  std::vector<AppState*> blocked_;
  PassResult result_;  // what Schedule() returns
  SchedulerStats stats_;

  std::vector<Label> labels_;  // [0]: the default partition
  absl::flat_hash_map<std::string, int32_t> label_by_name_;
  std::vector<std::vector<std::string>> tag_sets_;
  absl::flat_hash_map<std::string, int32_t> tag_set_ids_;  // tags joined by ',' -> id
  absl::flat_hash_map<std::string, int32_t> tag_ids_;  // tag -> id (never reused)
  std::vector<std::vector<int32_t>> tag_set_ids_list_;  // tag set -> its tags' ids
  // Per tag id: the nodes with live containers carrying it, and how many (affinity candidates
  // and attribute scopes walk these).
  std::vector<absl::flat_hash_map<NodeId, int32_t>> tag_nodes_;
  TagCounts node_tags_;
  TagCounts rack_tags_;
  Reservation reservation_;
  uint64_t next_gang_seq_ = 1;
  uint64_t next_gang_id_ = 1;
  std::map<uint64_t, AppId> waiting_gangs_;  // gang_seq -> app, of gangs that wait
  // Waiting gangs the nodes cannot hold even empty: gang_seq -> the topology generation that
  // was found at (they do not block younger gangs from reserving until nodes change).
  std::map<uint64_t, uint64_t> too_big_;
  std::vector<AppId> apps_with_increases_;
  std::vector<ContainerResized> pending_resized_;  // decreases to report in the next pass
  absl::flat_hash_map<ContainerId, std::vector<DeviceShare>> gpu_shares_;  // GPU containers
  // GPU placement (scheduler_gpu.cc): the policy (made on first use for config_.gpu_placement),
  // fgd's target workload from the GPU asks seen last, and each node's hosted GPU tasks by
  // class (gpu-clustering).
  std::unique_ptr<gpu::GpuPlacement> gpu_policy_;
  std::string gpu_policy_name_;
  std::unique_ptr<gpu::TargetWorkload> gpu_workload_;
  std::vector<gpu::GpuAsk> gpu_asks_;  // a ring of the last kGpuAskMemory GPU asks
  size_t gpu_ask_next_ = 0;
  bool gpu_workload_dirty_ = false;
  absl::flat_hash_map<NodeId, gpu::HostedTaskCounts> gpu_hosted_;
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_SCHEDULER_H_
