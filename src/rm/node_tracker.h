// Copyright Weft authors. The RM's view of its NodeManagers (YARN's ResourceTrackerService,
// NMLivelinessMonitor and NodesListManager): registration, heartbeats, expiry of silent nodes,
// decommissioning, and node reports.
#ifndef WEFT_RM_NODE_TRACKER_H_
#define WEFT_RM_NODE_TRACKER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "rm/node_directory.h"
#include "rm/node_lifecycle.h"
#include "rm/rm_context.h"
#include "store/state_store.h"
#include "weft/v1/admin.pb.h"
#include "absl/container/flat_hash_map.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/tracker.pb.h"

namespace weft::rm {

// One NodeManager as the RM knows it.
struct RmNode {
  v1::RegisterNodeManagerRequest registration;
  // Moved only by NodeTracker::Transition (node_lifecycle.h's table).
  v1::NodeState state = v1::NODE_NEW;
  int64_t last_heartbeat_ms = 0;  // loop clock
  int32_t response_id = 0;
  std::vector<std::string> to_cleanup;  // container names the NM must stop, next heartbeat
  std::vector<std::string> apps_to_cleanup;  // ended apps whose work dirs it must delete
  std::vector<std::string> to_remove;        // completed containers it may forget, next heartbeat
  // Resource updates the RM sends the NM itself (decreases), by container name: the version
  // and its token. Sent in every heartbeat reply until the NM reports that version applied
  // (NodeHeartbeatRequest.container_versions) or stops running the container.
  absl::flat_hash_map<std::string, std::pair<int32_t, v1::Token>> updates;
  std::string health_report;
  // From the last heartbeat: running containers' statuses (with usage) and the node's total.
  std::vector<v1::ContainerStatus> running;
  v1::ResourceUsage usage;
  // CPU utilization in [0, 1] from the CPU time the last two heartbeats reported (nullopt
  // before two), and the heartbeat that reported usage last (loop clock, ms).
  std::optional<double> cpu_utilization;
  int64_t usage_at_ms = 0;
};

// Hints the processor to fetch what a heartbeat writes of `node` (all but its registration), so
// that the loop finds it in a cache. Reads nothing: safe from any thread (RmServer's gRPC
// threads call it as a heartbeat arrives).
inline void PrefetchForHeartbeat(const RmNode* node) {
  const char* end = reinterpret_cast<const char*>(node + 1);
  for (const char* p = reinterpret_cast<const char*>(&node->state); p < end; p += 64)
    __builtin_prefetch(p, /*rw=*/1);
}

// Thread-compatible: the RM loop only. Node ids are "host:port" of the NM's ContainerService.
class NodeTracker {
 public:
  explicit NodeTracker(RmContext* ctx);
  ~NodeTracker();
  NodeTracker(const NodeTracker&) = delete;  // by_id_ points into nodes_
  NodeTracker& operator=(const NodeTracker&) = delete;

  // TrackerService. A node registering while the RM holds it (a lost reply, an NM restart)
  // keeps the containers it reports running and loses the others, except an AM container
  // whose launch is still under way (AppManager::AmLaunchPending). Every application with a
  // reported container (running or completed) that has ended, or that the RM does not know,
  // is sent to the node in applications_to_cleanup. Work-preserving restart:
  // every running container the RM does not hold is recovered if it is an earlier RM's
  // container of a live attempt (ContainerTracker::Recover), else stopped (in the next
  // heartbeat reply); reported completions reach their attempts once; a recovered attempt
  // whose AM container this node held and no longer reports fails. A decommissioned node is
  // told to shut down. Errors: InvalidArgument for a bad id or capability (nothing changes).
  absl::StatusOr<v1::RegisterNodeManagerResponse> RegisterNode(
      const v1::RegisterNodeManagerRequest& req);
  // Unknown or LOST nodes are told to register again (RESYNC). A running container of an
  // earlier RM epoch that the RM never heard of is stopped. `resolved`, when not null, is what
  // directory()->Find(req.node_id()) returned (on another thread): the loop skips the lookup.
  absl::StatusOr<v1::NodeHeartbeatResponse> NodeHeartbeat(const v1::NodeHeartbeatRequest& req,
                                                          RmNode* resolved = nullptr);
  // The index of this tracker's nodes by id, for the threads that receive heartbeats. It
  // outlives the tracker when held, but its records do not: a caller hands a record it found
  // back only to the tracker whose directory() is the same object.
  std::shared_ptr<const NodeDirectory> directory() const { return directory_; }

  // AdminService: decommissioned nodes lose their containers at once and are told to shut
  // down; recommissioned ones may register again. The decision is written to the state store
  // first (store::NodeAdminRecord), so an RM restart or failover keeps it. InvalidArgument for
  // an empty name, the store's error when it cannot be written (nothing changes either way).
  absl::Status RefreshNodes(const v1::RefreshNodesRequest& req);
  // AdminService/NodeAttributes: the centrally set attributes of running nodes, all mappings
  // or none. They are written to the state store first, and win over what the node's NM
  // reports (also after an RM restart, once the node registers again).
  absl::Status SetNodeAttributes(const v1::NodeAttributesRequest& req);
  // Recovery: the admin decisions a state store kept (before any node registers).
  void RestoreAdmin(const std::vector<store::NodeAdminRecord>& records);

  // Starts the liveness timer: nodes silent for nm_expiry_ms become LOST.
  void StartExpiry();

  // The NM of `node_id` must stop container `name` (sent with its next heartbeat reply).
  void AddCleanup(const std::string& node_id, const std::string& name);
  // Tells the node, in its next heartbeat reply, that `app_id` ended (YARN's
  // applications_to_cleanup). Nothing for an unknown node.
  void AddAppCleanup(const std::string& node_id, const std::string& app_id);
  // Tells the node, in its next heartbeat reply, that it may forget the completed container
  // `name` (containers_to_be_removed_from_nm). Nothing for an unknown node.
  void AddRemoval(const std::string& node_id, const std::string& name);
  // Sends the node container `name`'s update to `version` (its token), from the next
  // heartbeat reply until the NM has applied it. Nothing for an unknown node.
  void AddContainerUpdate(const std::string& node_id, const std::string& name, int32_t version,
                          const v1::Token& token);

  v1::ListNodesResponse ListNodes(const v1::ListNodesRequest& req) const;
  // Adds the node counts (active, lost, unhealthy, decommissioned) to `m`; O(1).
  void CountNodes(v1::GetClusterMetricsResponse* m) const;
  const RmNode* Find(const std::string& node_id) const;
  // The per-type maximum of the running and unhealthy nodes' capabilities; nullopt when there
  // are none or the RM started less than max_allocation_wait_ms ago. Computed again only
  // after a node registered or changed state (every Allocate with asks reads it).
  std::optional<Resource> LargestNodeCapability() const;
  // Nodes that went LOST since this RM started (AdaptCont's input).
  int64_t lost_nodes() const { return lost_nodes_; }
  // What the scheduler is given for node `id`: what its NM reported, with the admin's set
  // over it (sorted by key).
  scheduler::NodeAttributes EffectiveAttributes(const std::string& id,
                                                const scheduler::NodeAttributes& reported) const;
  // The mean CPU utilization of the running nodes that reported one, in [0, 1]; nullopt when
  // none has. Kept as a running sum: O(1).
  std::optional<double> ClusterCpuUtilization() const;

 private:
  // Moves node `id` by `event` through node_lifecycle.h's table, logging a change of state;
  // a refused event is logged as an error and false returned (the caller stops there).
  bool Transition(const std::string& id, RmNode& node, NodeEvent event);
  // Node `id`'s record; nullptr when it never registered.
  RmNode* Lookup(absl::string_view id) const;
  // Replaces `node`'s contribution to the cluster's CPU utilization (nullopt: none, as for a
  // node that is not running).
  void SetCpuUtilization(RmNode& node, std::optional<double> utilization);
  void CheckExpiry();
  // Writes, in one transaction, the admin record of each of `names` as `decommissioned` and
  // `attributes` hold it (a name with neither has its record removed).
  absl::Status StoreAdmin(
      const std::set<std::string>& names, const std::set<std::string>& decommissioned,
      const std::map<std::string, std::map<std::string, std::string>>& attributes) const;
  // Removes `node_id` from the scheduler; its containers end with `exit_status`.
  void LoseContainers(const std::string& node_id, int32_t exit_status,
                      const std::string& diagnostics, bool clean_up_on_node);

  RmContext* ctx_;
  std::map<std::string, RmNode> nodes_;   // by node id, in order (reports list them so)
  // The same nodes for lookups by id, which every heartbeat and completion makes: a std::map of
  // 50,000 ids is 16 levels of cold tree nodes and string compares deep. Its records never
  // move (a node is never erased: one that left keeps its record).
  std::shared_ptr<NodeDirectory> directory_ = std::make_shared<NodeDirectory>();
  std::set<std::string> decommissioned_;  // node ids or host names
  // Attributes an admin set (AdminService/NodeAttributes), by node id; "" values removed.
  std::map<std::string, std::map<std::string, std::string>> admin_attributes_;
  // What each node's NM reported at registration.
  std::map<std::string, scheduler::NodeAttributes> reported_attributes_;
  int64_t lost_nodes_ = 0;
  TimerId expiry_timer_ = 0;
  // LargestNodeCapability's value, valid while !largest_stale_ (set by registrations and by
  // every state change, which all go through Transition).
  mutable std::optional<Resource> largest_;
  mutable bool largest_stale_ = true;
  // How many nodes are in each state (CountNodes without a scan; kept by Transition).
  std::map<v1::NodeState, int64_t> nodes_in_state_;
  // Sum and count of the running nodes' cpu_utilization (ClusterCpuUtilization).
  double cpu_utilization_sum_ = 0;
  int64_t cpu_utilization_nodes_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_NODE_TRACKER_H_
