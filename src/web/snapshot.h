// Copyright Weft authors. An immutable copy of what the web UI, the REST API and /metrics show,
// built on the RM loop and read by HTTP threads without touching RM state.
#ifndef WEFT_WEB_SNAPSHOT_H_
#define WEFT_WEB_SNAPSHOT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rm/cluster_history.h"
#include "rm/history_publisher.h"
#include "rm/resource_manager.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::web {

// Per-queue figures the QueueInfo proto does not carry (by queue path).
struct QueueCounts {
  int64_t containers = 0;          // running containers of its apps (subtree)
  int64_t pending_containers = 0;  // containers its apps still ask for (subtree)
  int64_t active_apps = 0;         // runnable apps (subtree)
  int64_t pending_apps = 0;        // apps held back by max-running-apps (subtree)
};

struct ClusterSnapshot {
  int64_t taken_ms = 0;    // loop clock, ms since the Unix epoch
  // 1 for an RM's first snapshot, one more for each after it: a client that read generation g
  // knows the first snapshot above g was taken after its read (tests wait on it, not on time).
  int64_t generation = 1;
  int64_t cluster_id = 0;  // the cluster timestamp in application ids (YARN's cluster id)
  int64_t started_ms = 0;  // when this RM started
  std::string policy;      // the scheduler policy's name ("fair", "capacity", ...)
  // Resource type names in registry order, with their units ("MB", "vcores", "Mbit/s").
  std::vector<std::pair<std::string, std::string>> resource_types;
  v1::GetClusterMetricsResponse metrics;
  v1::QueueInfo root_queue;  // the whole tree
  std::map<std::string, QueueCounts> queue_counts;
  std::vector<v1::ApplicationReport> apps;  // by application id, ascending
  // Who may see each app's details (rm/app_acls.h): its view ACL by application id, and the
  // queue tree with its ACLs.
  std::map<std::string, std::string> view_acls;
  scheduler::SchedulerConfig queue_config;
  // Attempts of every app in `apps`, by application id, oldest first.
  std::map<std::string, std::vector<v1::ApplicationAttemptReport>> attempts;
  // By node id; shared with the snapshots that reused it (see BuildSnapshot), never null in a
  // built snapshot. Read through nodes().
  std::shared_ptr<const std::vector<v1::NodeReport>> node_reports;
  int64_t nodes_taken_ms = 0;  // when node_reports was built (loop clock)
  // Counters since the RM started.
  int64_t scheduler_passes = 0;
  int64_t containers_allocated = 0;
  int64_t containers_completed = 0;
  int64_t containers_preempted = 0;
  int64_t containers_running = 0;
  int64_t containers_pending = 0;
  // Application history (rm/history_recorder.h; zeros when off) and the finished apps held.
  rm::HistoryPublisherStats app_history;
  int64_t finished_apps_held = 0;
  int64_t finished_apps_forgotten = 0;
  // Allocations per second between the previous snapshot and this one (0 for the first).
  double allocations_per_second = 0;
  // For /ws/v1/cluster/info: YARN's haZooKeeperConnectionState and rmStateStoreName.
  std::string ha_description = "ResourceManager HA is not enabled.";
  std::string store_name = "weft-sqlite-or-memory";
  // The RM's utilisation history: shared, not copied (it is thread-safe and read in place).
  std::shared_ptr<const rm::ClusterHistory> history;

  const std::vector<v1::NodeReport>& nodes() const;
  const v1::ApplicationReport* FindApp(const std::string& id) const;
  const v1::NodeReport* FindNode(const std::string& id) const;
};

// What a rebuild does with the node reports: build them again (their cost grows with the
// cluster: every node and its running containers), or share the previous snapshot's (after a
// REST write, which changes apps, not nodes).
enum class SnapshotNodes { kFresh, kReuse };

// Builds a snapshot from the RM's state at loop time `now_ms`. Must run on the RM loop.
// `previous` (may be null) is the last published snapshot, for rates and for kReuse (without
// it the nodes are built fresh).
std::shared_ptr<ClusterSnapshot> BuildSnapshot(rm::ResourceManager& rm, int64_t now_ms,
                                               const ClusterSnapshot* previous,
                                               SnapshotNodes nodes = SnapshotNodes::kFresh);

// The latest snapshot, swapped in whole. Thread-safe; readers keep the snapshot they got alive
// for as long as they hold it.
class SnapshotHolder {
 public:
  std::shared_ptr<const ClusterSnapshot> Get() const;
  void Set(std::shared_ptr<const ClusterSnapshot> snapshot);

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const ClusterSnapshot> snapshot_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::web

#endif  // WEFT_WEB_SNAPSHOT_H_
