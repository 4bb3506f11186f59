// Copyright Weft authors. The ResourceManager's state machine: nodes, applications, attempts
// and containers around the scheduling core. The gRPC services are a thin layer over it.
#ifndef WEFT_RM_RESOURCE_MANAGER_H_
#define WEFT_RM_RESOURCE_MANAGER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adaptcont/adaptcont.h"
#include "adaptcont/config.h"
#include "common/event_loop.h"
#include "common/resource_types.h"
#include "scheduler/registry.h"
#include "security/master_key.h"
#include "security/secret_source.h"
#include "security/tokens.h"
#include "store/state_store.h"
#include "weft/v1/admin.pb.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/container.pb.h"
#include "weft/v1/tracker.pb.h"

namespace weft::rm {

struct RmOptions {
  scheduler::SchedulerConfig scheduler = scheduler::DefaultSchedulerConfig();
  ResourceTypeRegistry registry;
  int64_t cluster_timestamp_ms = 0;      // part of every application id; 0 = start time
  int64_t heartbeat_interval_ms = 1000;  // told to NMs
  int64_t nm_expiry_ms = 600000;         // a node silent this long is LOST (YARN: 10 min)
  int64_t am_expiry_ms = 600000;         // an AM silent this long fails its attempt
  int64_t pass_interval_ms = 100;        // between scheduling passes
  int32_t max_app_attempts = 2;          // default and cap of an app's max attempts
  int64_t container_token_lifetime_ms = 600000;
  int64_t key_roll_interval_ms = 24LL * 3600 * 1000;
  int64_t max_submission_bytes = 1 << 20;  // an application's submission context, serialized
  std::string scheduler_config_path;       // what RefreshQueues re-reads ("" = none)
  // Asks above the largest running node's capability are refused (YARN caps its maximum
  // allocation by the largest node), but only this long after the RM started, so that nodes
  // re-registering after a restart are not mistaken for a smaller cluster (YARN's
  // scheduling-wait-ms after recovery).
  int64_t max_allocation_wait_ms = 5000;
  // How the RM sizes AM containers of apps that ask it to (seed 002, AdaptCont).
  adaptcont::AdaptContConfig adaptcont = adaptcont::DefaultAdaptContConfig();
  // Called on the loop after every scheduling pass with its wall-clock duration (seconds) and
  // the containers it allocated (metrics); null = none.
  std::function<void(double seconds, int64_t allocations)> pass_observer;
};

// Starts AM containers on NodeManagers (YARN's AM launcher). `done` may run on any thread.
class AmLauncher {
 public:
  virtual ~AmLauncher() = default;
  virtual void Launch(const std::string& node_id, const v1::StartContainerRequest& request,
                      std::function<void(absl::Status)> done) = 0;
};

// The RM's state. Every method must be called on `loop`'s thread (the gRPC layer posts to it).
// Errors are statuses whose codes map to gRPC's: InvalidArgument, NotFound, FailedPrecondition,
// PermissionDenied, AlreadyExists; a failed call changes nothing.
class ResourceManager {
 public:
  // Bumps the store's epoch (container ids carry it), starts master keys and the timers.
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
  v1::ListNodesResponse ListNodes(const v1::ListNodesRequest& req) const;
  v1::GetClusterMetricsResponse GetClusterMetrics() const;
  absl::StatusOr<v1::GetQueueResponse> GetQueue(const v1::GetQueueRequest& req);
  // The application's attempts, oldest first. NotFound for an unknown application.
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id) const;

  // AdminService. RefreshQueues re-reads RmOptions::scheduler_config_path; an invalid file is
  // refused with the reason and the configuration in force stays. Decommissioned nodes lose
  // their containers at once and are told to shut down; recommissioned ones may register.
  absl::Status RefreshQueues();
  absl::Status RefreshNodes(const v1::RefreshNodesRequest& req);

  // TrackerService.
  absl::StatusOr<v1::RegisterNodeManagerResponse> RegisterNode(
      const v1::RegisterNodeManagerRequest& req);
  absl::StatusOr<v1::NodeHeartbeatResponse> NodeHeartbeat(const v1::NodeHeartbeatRequest& req);

  // AmService; `token` is the caller's AMRM token, checked for `attempt_id`.
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::Token& token, const v1::RegisterApplicationMasterRequest& req);
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::Token& token,
                                                const v1::AllocateRequest& req);
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::Token& token, const v1::FinishApplicationMasterRequest& req);

  // The address AMs reach AmService at (host:port), given to every AM in WEFT_RM_ADDRESS.
  void set_rm_address(std::string address) { rm_address_ = std::move(address); }

  int64_t epoch() const { return epoch_; }
  // The timestamp in this RM's application ids (YARN's cluster id), ms since the Unix epoch.
  int64_t cluster_timestamp_ms() const { return options_.cluster_timestamp_ms; }
  int64_t started_ms() const { return started_ms_; }  // when Create ran, loop clock
  // Containers that ended since the RM started (completed, released, lost, preempted, or
  // removed with their application).
  int64_t containers_completed() const { return containers_completed_; }
  const scheduler::Scheduler& scheduler() const { return *scheduler_; }
  const security::MasterKeyManager& container_keys() const { return container_keys_; }

 private:
  struct Attempt {
    int32_t id = 1;
    std::string attempt_id;           // appattempt_<ts>_<seq>_<attempt>
    std::string state = "SUBMITTED";  // store::kAttemptStates
    scheduler::AppId sched_app = 0;
    std::string am_container_id, am_node;
    int64_t start_ms = 0, last_heard_ms = 0;
    bool registered = false;
    v1::Token amrm_token;
    int32_t amrm_key_id = 0;  // master key that signed amrm_token
    int32_t last_response_id = 0;
    v1::AllocateResponse last_response;
    std::vector<v1::Container> new_containers;       // not yet handed to the AM
    std::vector<v1::ContainerStatus> new_completed;  // not yet handed to the AM
    std::string final_status, diagnostics;
    int64_t finish_ms = 0;  // when it ended (0 while it runs)
    // Its AM container was killed for exceeding its memory limit (AdaptCont's feedback).
    bool am_memory_failure = false;
    Resource am_resource;  // the AM container it asked for
  };
  struct App {
    store::ApplicationRecord record;
    v1::ApplicationSubmissionContext context;
    int64_t cluster_ts = 0;  // of the RM start that created it (part of its ids)
    int32_t seq = 0;
    std::vector<Attempt> attempts;
    // AdaptCont's decisions, one per attempt sized by the RM (inputs and reasons).
    std::vector<std::string> am_sizing_decisions;
    int64_t lost_nodes_at_last_sizing = 0;  // lost_nodes_ when the last decision was made
    // Sum over its ended containers of resource x ms held (YARN's memorySeconds and
    // vcoreSeconds, in ms); running ones are added in reports.
    Resource usage_ms;
    Attempt& current() { return attempts.back(); }
  };
  struct Node {
    v1::RegisterNodeManagerRequest registration;
    v1::NodeState state = v1::NODE_RUNNING;
    int64_t last_heartbeat_ms = 0;
    int32_t response_id = 0;
    std::vector<std::string> to_cleanup;
    std::string health_report;
    // From the last heartbeat: running containers' statuses (with usage) and the node's total.
    std::vector<v1::ContainerStatus> running;
    v1::ResourceUsage usage;
  };
  struct Container {
    std::string id;
    std::string app_id;
    int32_t attempt = 0;
    std::string node_id;
    Resource resource;
    bool is_am = false;
    int64_t start_ms = 0;  // allocation time, loop clock
  };

  ResourceManager(RmOptions options, EventLoop* loop, store::StateStore* store,
                  AmLauncher* launcher, security::SecretSource* secrets);

  absl::Status Persist(const App& app);
  absl::Status Recover(const store::RmState& state);
  absl::Status PersistKeys(const security::MasterKeyManager& keys);
  void RollKeys();
  void SchedulePass();
  // AdaptCont: decides the AM container of `app`'s next attempt into its context's
  // am_resource and records the decision. Errors: the decision's (e.g. no AM fits the limits).
  absl::Status SizeAm(App& app);
  // The worker container of an AM sizing request, normalised; <1024 MB, 1 vcore> when empty.
  // InvalidArgument for an unknown type or a value the registry refuses.
  absl::StatusOr<Resource> SizingWorker(const v1::AmSizingRequest& req) const;
  // The per-type maximum of the running and unhealthy nodes' capabilities; nullopt when there
  // are none or the RM started less than max_allocation_wait_ms ago.
  std::optional<Resource> LargestNodeCapability() const;
  void RunPass();
  void CheckExpiry();
  void HandleAllocation(const scheduler::Allocation& a);
  void ContainerFinished(scheduler::ContainerId id, int32_t exit_status,
                         const std::string& diagnostics);
  void AttemptFailed(App& app, const std::string& diagnostics);
  void FinishApp(App& app, const std::string& state, const std::string& final_status,
                 const std::string& diagnostics);
  absl::Status StartAttempt(App& app);
  void ReleaseAppContainers(App& app);
  // A container ended at loop time now: its resource x time goes to its app's usage_ms.
  void ChargeContainerUsage(const Container& c);
  absl::StatusOr<std::pair<App*, Attempt*>> Authenticate(const v1::Token& token);
  std::string ContainerIdString(const App& app, int32_t attempt, scheduler::ContainerId id) const;
  v1::ApplicationReport Report(const App& app) const;
  v1::Resource ToProto(const Resource& r) const;
  absl::StatusOr<Resource> FromProto(const v1::Resource& r, absl::string_view what) const;

  RmOptions options_;
  EventLoop* loop_;
  int64_t lost_nodes_ = 0;  // nodes that went LOST since this RM started (AdaptCont's input)
  int64_t started_ms_ = 0;  // loop time of Create
  int64_t containers_completed_ = 0;
  store::StateStore* store_;
  AmLauncher* launcher_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  security::MasterKeyManager container_keys_;
  security::MasterKeyManager amrm_keys_;
  int64_t epoch_ = 0;
  int32_t next_app_seq_ = 1;
  scheduler::AppId next_sched_app_ = 1;
  std::map<std::string, App> apps_;              // by application id
  std::map<std::string, int32_t> reserved_ids_;  // NewApplication, not yet submitted
  absl::flat_hash_map<scheduler::AppId, std::string> sched_to_app_;
  std::map<std::string, Node> nodes_;  // by node id (host:port)
  absl::flat_hash_map<scheduler::ContainerId, Container> containers_;
  absl::flat_hash_map<std::string, scheduler::ContainerId> container_by_name_;
  TimerId pass_timer_ = 0, expiry_timer_ = 0, roll_timer_ = 0;
  std::map<std::string, std::set<int32_t>> stored_keys_;  // by purpose
  bool shutting_down_ = false;
  std::string rm_address_;
  std::set<std::string> decommissioned_;  // node ids or host names
};

}  // namespace weft::rm

#endif  // WEFT_RM_RESOURCE_MANAGER_H_
