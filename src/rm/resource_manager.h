// Copyright Weft authors. The ResourceManager: its services around the scheduling core, and
// the scheduling passes that drive it. The gRPC services (rm_server.h) are a thin layer over it.
//
// Where things live (YARN's names in brackets):
//   app_manager.h        applications and attempts, submission, reports [RMAppManager]
//   app_lifecycle.h      typed app/attempt states and their transition tables [RMAppImpl]
//   am_service.h         AM register/allocate/finish, AM liveness [ApplicationMasterService]
//   node_tracker.h       NM registration, heartbeats, expiry, decommission
//                        [ResourceTrackerService, NMLivelinessMonitor, NodesListManager]
//   container_tracker.h  container names, tokens and ends [RMContainer]
//   rm_keys.h            container and AMRM master keys [*TokenSecretManager]
//   rm_recovery.h        restoring state from the store after a restart [RMStateStore load]
#ifndef WEFT_RM_RESOURCE_MANAGER_H_
#define WEFT_RM_RESOURCE_MANAGER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/event_loop.h"
#include "rm/amrm_verifier.h"
#include "rm/app_lifecycle.h"
#include "rm/client_auth.h"
#include "rm/history_publisher.h"
#include "rm/node_directory.h"
#include "rm/rm_context.h"
#include "rm/rm_options.h"
#include "scheduler/registry.h"
#include "security/master_key.h"
#include "security/secret_source.h"
#include "store/state_store.h"
#include "weft/v1/admin.pb.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/container.pb.h"
#include "weft/v1/tracker.pb.h"

namespace weft::rm {

class AmService;
class AppManager;
class ClusterHistory;
class HistorySampler;
class ContainerTracker;
class NodeTracker;
struct RmNode;
class RmKeys;

// The RM's state. Every method must be called on `loop`'s thread (the gRPC layer posts to it).
// Errors are statuses whose codes map to gRPC's: InvalidArgument, NotFound, FailedPrecondition,
// PermissionDenied, AlreadyExists, Unavailable (the state store refused a write); a failed
// call changes nothing, except where Unavailable says the change was made and its write is
// being retried.
class ResourceManager {
 public:
  // Bumps the store's epoch (container ids carry it), recovers the stored state, and starts
  // the master keys and the timers. InvalidArgument, before anything else, for history options
  // ValidateHistoryOptions refuses.
  static absl::StatusOr<std::unique_ptr<ResourceManager>> Create(RmOptions options, EventLoop* loop,
                                                                 store::StateStore* store,
                                                                 AmLauncher* launcher,
                                                                 security::SecretSource* secrets);
  ~ResourceManager();

  // ClientService.
  absl::StatusOr<v1::NewApplicationResponse> NewApplication();
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const std::string& user);
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id) const;
  v1::ListApplicationsResponse ListApplications(const v1::ListApplicationsRequest& req) const;
  absl::Status KillApplication(const std::string& app_id, const std::string& diagnostics);
  // The same for an authenticated caller (the gRPC and REST services): it submits as
  // caller.user; it kills only as the app's owner, an admin of its queue or a cluster admin
  // (PermissionDenied otherwise, nothing changed).
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const Caller& caller);
  absl::Status KillApplication(const std::string& app_id, const std::string& diagnostics,
                               const Caller& caller);
  // Whether the app's kill or failure waits to be written into its home record in the
  // federation store (app_lifecycle.h FederationEnds): it is not final yet.
  bool AppEndPending(const std::string& app_id) const;
  // OK when `caller` may modify (kill, move, reprioritise) the app; NotFound, PermissionDenied.
  absl::Status CheckModifyAccess(const std::string& app_id, const Caller& caller) const;
  // Reads as `caller` sees them (rm/app_acls.h): the details of an app it may not view are
  // redacted, and its attempts are PermissionDenied.
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id,
                                                       const Caller& caller) const;
  v1::ListApplicationsResponse ListApplications(const v1::ListApplicationsRequest& req,
                                                const Caller& caller) const;
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id, const Caller& caller) const;
  // The app's view ACL as submitted ("" for none or an unknown app).
  std::string ViewAclOf(const std::string& app_id) const;
  // Whether `caller` may view the app's details; NotFound for an unknown app.
  absl::StatusOr<bool> MayView(const std::string& app_id, const Caller& caller) const;
  v1::ListNodesResponse ListNodes(const v1::ListNodesRequest& req) const;
  v1::GetClusterMetricsResponse GetClusterMetrics() const;
  absl::StatusOr<v1::GetQueueResponse> GetQueue(const v1::GetQueueRequest& req);
  // The application's attempts, oldest first. NotFound for an unknown application.
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id) const;

  // Federation homes (issue 27; rm/app_lifecycle.h): the unfinished apps the sub-cluster
  // heartbeater checks, and what its check found (apps homed elsewhere killed with the check's
  // diagnostics, the federation lease renewed, held attempts released).
  std::vector<FederationApp> FederationApps() const;
  void FederationHomesChecked(const FederationHomesCheck& check);
  // The running app an AM's `token` authenticates for, as FederationApps lists it (RmServer asks
  // before it records an unregistering AM's end in the federation store); AmService's error for
  // a token that does not verify or names an attempt that no longer runs.
  absl::StatusOr<FederationApp> FederationAppOfAmToken(const v1::Token& token);
  const FederationLease& federation_lease() const;
  // A federation sub-cluster's RM (its lease's fence known): how long ago, ms, it last renewed
  // its federation lease (its start before the first check), told to its NMs for their
  // federation fence (tracker.proto NodeHeartbeatResponse.federation_lease_age_ms); nullopt
  // outside a federation.
  std::optional<int64_t> FederationLeaseAgeMs() const;

  // AdminService. RefreshQueues re-reads RmOptions::scheduler_config_path; an invalid file is
  // refused with the reason and the configuration in force stays. Decommissioned nodes lose
  // their containers at once and are told to shut down; recommissioned ones may register.
  absl::Status RefreshQueues();
  absl::Status RefreshNodes(const v1::RefreshNodesRequest& req);
  // AdminService/NodeAttributes: all mappings or none; InvalidArgument naming the bad node,
  // key or value, NotFound for a node not running.
  absl::Status SetNodeAttributes(const v1::NodeAttributesRequest& req);

  // TrackerService.
  absl::StatusOr<v1::RegisterNodeManagerResponse> RegisterNode(
      const v1::RegisterNodeManagerRequest& req);
  // `resolved`: as in NodeTracker::NodeHeartbeat, found in this RM's node_directory().
  absl::StatusOr<v1::NodeHeartbeatResponse> NodeHeartbeat(const v1::NodeHeartbeatRequest& req,
                                                          RmNode* resolved = nullptr);
  // The node index that heartbeats are resolved in before they reach the loop (any thread).
  std::shared_ptr<const NodeDirectory> node_directory() const;

  // AmService; `token` is the caller's AMRM token, checked for `attempt_id`.
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::Token& token, const v1::RegisterApplicationMasterRequest& req);
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::Token& token,
                                                const v1::AllocateRequest& req);
  // The long poll (AmService::Allocate with a reply callback); `verified_attempt` as there,
  // found by this RM's amrm_verifier().
  void Allocate(const v1::Token& token, const v1::AllocateRequest& req,
                std::function<void(absl::StatusOr<v1::AllocateResponse>)> reply,
                const std::string& verified_attempt = "");
  // The AMRM keys for the threads that receive AMs' calls (any thread).
  std::shared_ptr<const AmRmVerifier> amrm_verifier() const;
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::Token& token, const v1::FinishApplicationMasterRequest& req);

  // Ends held long-poll Allocate calls and holds no more (before the gRPC server shuts down,
  // which waits for every call to end).
  void StopHoldingCalls();
  size_t parked_allocates() const;  // long-poll Allocate calls held now

  // The address AMs reach AmService at (host:port), given to every AM in WEFT_RM_ADDRESS.
  void set_rm_address(std::string address) { ctx_.rm_address = std::move(address); }

  int64_t epoch() const { return ctx_.epoch; }
  // The timestamp in this RM's application ids (YARN's cluster id), ms since the Unix epoch.
  int64_t cluster_timestamp_ms() const { return options_.cluster_timestamp_ms; }
  int64_t started_ms() const { return ctx_.started_ms; }  // when Create ran, loop clock
  int64_t NowMs() const { return ctx_.NowMs(); }          // the loop's clock
  // Containers that ended since the RM started (completed, released, lost, preempted, or
  // removed with their application).
  int64_t containers_completed() const;
  // Work-preserving restart: containers of earlier RM starts that NMs reported running since
  // this RM started, recovered into the scheduler or refused (their NMs told to stop them);
  // among the refused, task containers whose NM did not report their resource.
  struct RecoveryCounts {
    int64_t recovered = 0;
    int64_t refused = 0;
    int64_t refused_without_resource = 0;
  };
  RecoveryCounts recovery_counts() const;
  const scheduler::Scheduler& scheduler() const { return *scheduler_; }
  const security::MasterKeyManager& container_keys() const;
  // The utilisation history (rm/cluster_history.h); its readers may use it from any thread and
  // keep it after the RM is gone.
  std::shared_ptr<const ClusterHistory> history() const;
  // Application history's figures (HistoryRecorder::stats; zero when it is off), the finished
  // apps held and those forgotten (AppManager::EvictFinished).
  HistoryPublisherStats AppHistoryStats() const;
  int64_t FinishedAppsHeld() const;
  int64_t FinishedAppsForgotten() const;

 private:
  ResourceManager(RmOptions options, EventLoop* loop, store::StateStore* store,
                  AmLauncher* launcher, security::SecretSource* secrets);

  // Asks for a pass pass_interval_ms from now, or (`prompt`, while Scheduler::DemandWaits)
  // min_pass_gap_ms after the last pass ended, unless one is due sooner already.
  void SchedulePass(bool prompt = false);
  void RunPass();
  // Creates the history and its sampler (Create validated their options).
  void StartHistory();
  // A NodeManager's reply `r` with the RM's federation lease (FederationLeaseAgeMs and its
  // renewal interval) when this RM is a federation sub-cluster's.
  template <typename Reply>
  absl::StatusOr<Reply> WithFederationLease(absl::StatusOr<Reply> r) const;

  RmOptions options_;
  RmContext ctx_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  std::unique_ptr<RmKeys> keys_;
  std::unique_ptr<ContainerTracker> containers_;
  std::unique_ptr<NodeTracker> nodes_;
  std::unique_ptr<AppManager> apps_;
  std::unique_ptr<AmService> am_service_;
  // Application history (issue 31): records of finished apps, attempts and containers.
  std::unique_ptr<HistoryRecorder> app_history_;
  std::shared_ptr<ClusterHistory> history_;
  std::unique_ptr<HistorySampler> history_sampler_;
  TimerId pass_timer_ = 0;
  int64_t pass_due_ms_ = 0;   // when pass_timer_ fires, loop clock
  int64_t last_pass_ms_ = 0;  // when the last pass ended, loop clock
  // A pass's decisions, copied out of the scheduler's reused result into buffers reused from
  // pass to pass (a fresh vector each pass was a large allocation each time, and glibc then
  // consolidates its free lists: a cost that grew with the heap, not with the pass's work).
  std::vector<scheduler::Allocation> pass_allocations_;
  std::vector<scheduler::ContainerKill> pass_kills_;
  bool shutting_down_ = false;
};

}  // namespace weft::rm

#endif  // WEFT_RM_RESOURCE_MANAGER_H_
