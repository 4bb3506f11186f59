// Copyright Weft authors. RM high availability: the leader election of active and standby
// ResourceManagers on ZooKeeper (YARN's ActiveStandbyElector).
#ifndef WEFT_RM_HA_ELECTOR_H_
#define WEFT_RM_HA_ELECTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft::store::zk {
class ZkClient;
}

namespace weft::rm {

// How an RM takes part in HA (`weft rm --ha-id ...`).
struct HaOptions {
  // This RM's id, unique among the RMs of the cluster: letters, digits, '.', '_', '-'.
  std::string rm_id;
  // The ZooKeeper ensemble, "host:port[,host:port...]" (the C client's connect string).
  std::string zk_connect;
  // The cluster's node in ZooKeeper: the election at <zk_root>/leader, the state store at
  // <zk_root>/rm-state. Absolute, no trailing '/'.
  std::string zk_root = "/weft";
  // The ZooKeeper digest credential "user:password" shared by the cluster's RMs (from
  // --ha-zk-auth-file): the election and state nodes carry the creator-only ACL, so the
  // master keys and submissions in ZooKeeper are readable with it only. Required.
  std::string zk_auth;
  // Every RM's gRPC address, host:port, this one's included: what AMs are told
  // (WEFT_RM_ADDRESS) so that they follow the active. Empty: this RM's address alone.
  std::vector<std::string> rm_addresses;
  // The session timeout asked of ZooKeeper (ms), which the server clamps to its
  // [2, 20] x tickTime. A killed active is replaced about this long after it died: the
  // failover time. A live active that cannot reach ZooKeeper for 2/3 of it steps down.
  int session_timeout_ms = 1500;
  // How often the elector looks at the leader node and its session (ms).
  int64_t poll_interval_ms = 100;
};

// Checks the options (names the bad one): InvalidArgument.
absl::Status ValidateHaOptions(const HaOptions& options);

// What the leader node holds: who the active is and where to reach it.
struct LeaderInfo {
  std::string rm_id;
  std::string address;       // gRPC, host:port
  std::string http_address;  // web UI and REST, host:port; "" if it serves none
  friend bool operator==(const LeaderInfo&, const LeaderInfo&) = default;
};
// "weft-rm-leader 1\nid=...\naddress=...\nhttp=...\n".
std::string EncodeLeaderInfo(const LeaderInfo& info);
// InvalidArgument (naming the problem) for anything EncodeLeaderInfo() did not write.
absl::StatusOr<LeaderInfo> DecodeLeaderInfo(absl::string_view data);

// Runs for leadership on its own thread and tells the owner when this RM becomes active and
// when it must stop being active.
//
// The leader is whoever holds the ephemeral node <zk_root>/leader, created with this RM's
// LeaderInfo. ZooKeeper deletes it when the holder's session ends: at once when the holder
// closes it, `session_timeout_ms` after a holder was killed or cut off. Standbys look every
// `poll_interval_ms` and the first to create it wins. The elector makes this RM stop being
// active (become_standby) when its session expires or is replaced, when the node is gone or
// held by another session, when it cannot reach ZooKeeper for 2/3 of the session timeout (by
// then the server may expire the session and elect another), and on StepDown(). It does not
// fence: the state store does (store/zk_store.h), so a deposed active that has not noticed
// yet cannot write. A leader node that names this RM's own id but another session is left
// by an earlier run of this RM (killed, then restarted): the elector deletes it at once
// rather than wait for that session to expire (rm_id must be unique among live RMs), and
// leaves the next poll intervals to a waiting standby.
class LeaderElector {
 public:
  struct Callbacks {
    // This RM won the election: make it serve as the active. Runs on the elector's thread;
    // an error makes the elector give the leadership up (delete the node) and wait 2 s
    // before running again.
    std::function<absl::Status()> become_active;
    // This RM must no longer act as the active (the reason is for logs). Runs on the
    // elector's thread; returns once it no longer does.
    std::function<void(const std::string& reason)> become_standby;
  };

  // Starts the elector's thread. InvalidArgument for bad options; the ZooKeeper session is
  // made in the background (an unreachable ZooKeeper is retried, and logged, not an error).
  static absl::StatusOr<std::unique_ptr<LeaderElector>> Start(HaOptions options, LeaderInfo self,
                                                              Callbacks callbacks);
  // Stops the thread; an active first becomes standby and gives up the node.
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Whether this RM is the active now (become_active succeeded, become_standby not yet run).
  bool active() const;
  // The active as last read from ZooKeeper (this RM's own info when it is the active);
  // nullopt when no leader node was seen at the last look.
  std::optional<LeaderInfo> leader() const;
  // Manual failover: this RM stops being active, gives up the node, and does not run for
  // `hold` so that another RM takes over. FailedPrecondition if it is not active. Returns
  // once this RM is standby.
  absl::Status StepDown(absl::Duration hold);

 private:
  LeaderElector(HaOptions options, LeaderInfo self, Callbacks callbacks);
  void Run();
  // One look at ZooKeeper and the node; may call the callbacks.
  void Tick();
  void LoseLeadership(const std::string& reason);
  void TryToLead(int64_t session);
  void DeleteOwnNode(int64_t session);

  const HaOptions options_;
  const LeaderInfo self_;
  const Callbacks callbacks_;
  const std::string root_;
  const std::string leader_path_;
  std::unique_ptr<store::zk::ZkClient> zk_;  // the elector thread's only

  // Elector-thread state.
  int64_t active_session_ = 0;  // the session that holds the node while active
  absl::Time last_contact_;  // of the last answer from ZooKeeper
  absl::Time hold_until_ = absl::InfinitePast();
  bool root_created_ = false;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool active_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<LeaderInfo> leader_ ABSL_GUARDED_BY(mu_);
  // A StepDown() waiting for the thread: its hold, and whether it was done.
  std::optional<absl::Duration> step_down_ ABSL_GUARDED_BY(mu_);
  int64_t step_downs_done_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace weft::rm

#endif  // WEFT_RM_HA_ELECTOR_H_
