// Copyright Weft authors. Sub-cluster membership (seed 004, "Sub-cluster Membership"): an RM
// that is a federation sub-cluster registers itself in the federation state store and then
// heartbeats its load there, so that routers, AMRMProxies and the GPG see which sub-clusters
// are alive and how loaded they are (YARN's FederationStateStoreService heartbeat).
#ifndef WEFT_FEDERATION_MEMBERSHIP_SUB_CLUSTER_HEARTBEATER_H_
#define WEFT_FEDERATION_MEMBERSHIP_SUB_CLUSTER_HEARTBEATER_H_

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
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "federation/store/federation_store.h"
#include "rm/app_lifecycle.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::rm {
class RmServer;
}

namespace weft::federation {

// YARN's yarn.federation.state-store.heartbeat-interval-secs default is 60 s; Weft heartbeats
// more often so that a router notices a dead sub-cluster within its membership expiry (30 s).
inline constexpr int64_t kDefaultHeartbeatIntervalMs = 5000;

struct HeartbeaterOptions {
  std::string sub_cluster_id;  // ValidateSubClusterId()
  // Where clients reach the sub-cluster's RM: "host:port", or every HA RM's, comma-separated.
  std::string rm_address;
  std::string rm_http_address;  // host:port of its web server; "" = none
  int64_t heartbeat_interval_ms = kDefaultHeartbeatIntervalMs;  // > 0
  // The fraction of the RM's capacity it commits to the federation, in (0, 1]: capability and
  // available are scaled by it (seed 004: "partial commitment").
  double federation_commitment = 1.0;
  // Deregister (SC_UNREGISTERED) on a clean stop. Off for an HA RM: its standby takes over and
  // the sub-cluster lives on.
  bool deregister_on_stop = true;
  // The RM's federation lease (issue 27, fenced homes; rm::FederationLease), ms: a federated
  // app whose attempt fails more than this long after the last tick that checked the RM's
  // homes waits for the next such tick before a new attempt starts. 0 = twice
  // heartbeat_interval_ms.
  int64_t fence_ms = 0;
};

// The lease a tick gives the RM: options.fence_ms, or twice the heartbeat interval.
int64_t FenceMs(const HeartbeaterOptions& options);

// Checks the options; InvalidArgument naming the field otherwise.
absl::Status ValidateHeartbeaterOptions(const HeartbeaterOptions& options);

// What the heartbeater needs of its RM. Each is called from the heartbeater's thread.
struct RmSource {
  // What the RM says about itself at one heartbeat: nullopt when it is not serving (an HA
  // standby, or stopping) and must not heartbeat.
  std::function<std::optional<v1::GetClusterMetricsResponse>()> figures;
  // Fenced homes (issue 27). The RM's apps not in a final state; nullopt when it is not
  // serving. Unset (with homes_checked): the heartbeater checks no homes.
  std::function<std::optional<std::vector<rm::FederationApp>>()> apps;
  // Hands the RM what a tick's check found: it kills the apps homed elsewhere (with the
  // check's diagnostics), renews its federation lease and releases held attempts.
  std::function<void(const rm::FederationHomesCheck&)> homes_checked;

  RmSource() = default;
  // Figures only: no homes are checked (tests; an RM outside the fencing).
  explicit RmSource(std::function<std::optional<v1::GetClusterMetricsResponse>()> f)
      : figures(std::move(f)) {}
};
// The source of an RmServer, each call run on its loop (RmServer::RunOnLoop, which skips it -
// nullopt, nothing done - while the RM is an HA standby or stopping). `rm` must outlive the
// source's use.
RmSource FiguresFromRmServer(rm::RmServer* rm);

// What one tick's check decides (pure): `apps` are the RM's unfinished apps, `homes_here` the
// home records naming `sub_cluster_id`, and `lookup` reads the home record of an app not among
// them (NotFound when it has none; any other error fails the check, nothing decided). An app
// is killed when its home record names another sub-cluster than the one it may run in: this
// one, or for a federation UAM its federation home. An app without a home record is left
// alone. heartbeat_ms and fence_ms are the caller's to fill.
absl::StatusOr<rm::FederationHomesCheck> CheckHomes(
    const std::string& sub_cluster_id, const std::vector<rm::FederationApp>& apps,
    const std::vector<v1::ApplicationHomeSubCluster>& homes_here,
    const std::function<absl::StatusOr<v1::ApplicationHomeSubCluster>(const std::string&)>& lookup);

// The load record a heartbeat writes (pure): capability and available are the RM's total and
// total minus allocated, each scaled by `commitment` (rounded down, never below 0).
v1::SubClusterInfo LoadRecord(const HeartbeaterOptions& options,
                              const v1::GetClusterMetricsResponse& figures, int64_t now_ms);

// Registers the sub-cluster (SC_NEW) and heartbeats (SC_RUNNING) every heartbeat_interval_ms on
// its own thread. After each successful heartbeat it checks the homes of the RM's unfinished
// apps (when the source can list them): it lists the homes at this sub-cluster and reads the
// home record of each other app, and the RM kills the apps whose record names another
// sub-cluster - moved by the GPG while this sub-cluster was LOST - and renews its federation
// lease (FenceMs). Store errors are logged and retried at the next tick, never fatal: a
// sub-cluster keeps scheduling when the federation store is down, it only drops out of the
// routers' view once its heartbeats are older than their expiry. A store that lost the record
// (NotFound on heartbeat) gets it registered again. Thread-safe.
class SubClusterHeartbeater {
 public:
  // `store` is not owned and must outlive the heartbeater. `now_ms`: ms since the Unix epoch
  // (the RM's loop clock). Tries to register at once; fails only for bad options.
  static absl::StatusOr<std::unique_ptr<SubClusterHeartbeater>> Start(
      HeartbeaterOptions options, FederationStateStore* store, RmSource source,
      std::function<int64_t()> now_ms);
  ~SubClusterHeartbeater();  // Stop()

  // One tick now, on the caller's thread (tests; also what the thread runs): registers when
  // not registered yet, heartbeats, then checks homes. OK when the heartbeat was written and
  // homes checked, or skipped because the RM is not serving (a standby); the store's error
  // otherwise (a failed check does not renew the RM's lease).
  absl::Status HeartbeatNow();
  // Stops the thread and, when the options say so and it had registered, deregisters with
  // SC_UNREGISTERED (an error is logged). Idempotent.
  void Stop();

  // Heartbeats written so far; waits (bounded by `timeout`) until at least `n` were (tests).
  int64_t heartbeats() const;
  bool AwaitHeartbeats(int64_t n, absl::Duration timeout) const;

 private:
  SubClusterHeartbeater(HeartbeaterOptions options, FederationStateStore* store, RmSource source,
                        std::function<int64_t()> now_ms);
  void Run();
  absl::Status Register(int64_t now_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(tick_mu_);
  // The check after a heartbeat taken at `heartbeat_ms`; the store's error otherwise.
  absl::Status CheckAndFence(int64_t heartbeat_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(tick_mu_);

  const HeartbeaterOptions options_;
  FederationStateStore* const store_;
  const RmSource source_;
  const std::function<int64_t()> now_ms_;

  absl::Mutex tick_mu_;  // one tick at a time (the thread's and HeartbeatNow's)
  bool registered_ ABSL_GUARDED_BY(tick_mu_) = false;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  int64_t heartbeats_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_MEMBERSHIP_SUB_CLUSTER_HEARTBEATER_H_
