// Copyright Weft authors. The RM's applications and their attempts (YARN's RMAppManager with
// the RMApp and RMAppAttempt state machines): submission, attempts and their AM containers,
// the end of an app, reports, and what the state store keeps of them.
#ifndef WEFT_RM_APP_MANAGER_H_
#define WEFT_RM_APP_MANAGER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/status/statusor.h"
#include "common/dense_id_set.h"
#include "common/resource.h"
#include "rm/am_mailbox.h"
#include "rm/app_lifecycle.h"
#include "rm/rm_context.h"
#include "scheduler/types.h"
#include "store/state_store.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/client.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

struct RmAttempt {
  int32_t id = 1;
  std::string attempt_id;  // appattempt_<ts>_<seq>_<attempt>
  AttemptState state = v1::ATTEMPT_NEW;
  scheduler::AppId sched_app = 0;  // its number in the scheduling core
  std::string am_container_id, am_node;
  int64_t start_ms = 0, last_heard_ms = 0;  // loop clock
  bool registered = false;
  v1::Token amrm_token;
  int32_t amrm_key_id = 0;  // master key that signed amrm_token
  // What waits for its AM, and the response ids of its Allocate calls.
  AmMailbox mailbox;
  FinalStatus final_status = v1::FINAL_STATUS_UNDEFINED;  // what its AM unregistered with
  std::string diagnostics;
  int64_t finish_ms = 0;  // when it ended (0 while it runs)
  // Its AM container was killed for exceeding its memory limit (AdaptCont's feedback).
  bool am_memory_failure = false;
  // How its AM container ended (a process exit code or a v1::ContainerExitStatus; 0 while it
  // runs or when it ended without one): stored, and what CountsTowardMaxAttempts reads.
  int32_t am_exit_status = 0;
  Resource am_resource;  // the AM container it asked for
  // Work-preserving RM restart: restored from the store with its AM container allocated, it
  // carries on. Its AM must register again (AmService answers Allocate with AM_RESYNC until it
  // does); `am_recovered` once its node reported the AM container running.
  bool recovered = false;
  bool am_recovered = false;
};

struct RmApp {
  // The stored fields. Its `state` and `final_status` strings are written from the typed
  // fields below when the app is persisted: read those instead.
  store::ApplicationRecord record;
  AppState state = v1::APP_NEW;
  FinalStatus final_status = v1::FINAL_STATUS_UNDEFINED;
  v1::ApplicationSubmissionContext context;
  int64_t cluster_ts = 0;  // of the RM start that created it (part of its ids)
  int32_t seq = 0;
  std::vector<RmAttempt> attempts;
  // AdaptCont's decisions, one per attempt sized by the RM (inputs and reasons).
  std::vector<std::string> am_sizing_decisions;
  int64_t lost_nodes_at_last_sizing = 0;  // NodeTracker::lost_nodes() at the last decision
  // Sum over its ended containers of resource x ms held (YARN's memorySeconds and
  // vcoreSeconds, in ms); running ones are added in reports.
  Resource usage_ms;
  int64_t completed_containers = 0;  // its containers that ended since this RM started
  // Nodes that were given one of its containers (YARN's ranNodes): told to clean the app up
  // (its work dirs) when it ends. Not stored: an app that ended before an RM restart is not
  // cleaned up by the new RM. By the scheduler's node id (never reused: a node that left keeps
  // its id and name), not by name: at 50,000 NMs an app's containers land mostly on nodes it
  // has not used, and a name set allocated a string on each. A bitmap, not a hash set: an
  // app's set there grows toward every node, and the hash set's inserts and rehashes cost an
  // allocation more the larger the cluster.
  DenseIdSet ran_nodes;
  RmAttempt& current() { return attempts.back(); }
  const RmAttempt& current() const { return attempts.back(); }
};

// YARN's rule (YARN-614): an attempt whose AM container ended for a cause outside the app -
// aborted (e.g. stopped by its NM's federation fence), preempted, its disks failed, killed by
// the RM, its node lost - does not count toward the app's max attempts; any other end does
// (an attempt still running counts too).
bool CountsTowardMaxAttempts(const RmAttempt& at);
// How many of the app's attempts count toward its max attempts.
int32_t CountedAttempts(const RmApp& app);

// Thread-compatible: the RM loop only.
//
// Store errors: every change that a caller is told succeeded is stored first (submission), or
// the caller gets the store's error (UNAVAILABLE, the change made in memory, its write retried
// every store_retry_ms until it succeeds). Changes with no caller (an attempt failing, an AM
// container allocated) log the error and are retried the same way.
class AppManager {
 public:
  explicit AppManager(RmContext* ctx);
  ~AppManager();

  // ClientService.
  absl::StatusOr<v1::NewApplicationResponse> NewApplication();
  // Validates everything first (nothing changes on error), admits the first attempt into the
  // scheduler, and stores the app before returning OK.
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const std::string& user);
  // Idempotent for ended apps. NotFound for unknown ids. A federated app's kill waits for its
  // home record first (FederationEnds): OK, and the app is not final yet (EndPending).
  absl::Status KillApplication(const std::string& app_id, const std::string& diagnostics);
  // Whether the app's kill or failure waits to be written into its home record
  // (FederationEnds); the app ends once it is.
  bool EndPending(const std::string& app_id) const { return ends_.Find(app_id) != nullptr; }
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id) const;
  // The AMRM token of an unmanaged app's live attempt, for its submitter; nullopt for other
  // apps and ended ones. The caller checks who may have it.
  std::optional<v1::Token> UnmanagedAmToken(const std::string& app_id) const;
  v1::ListApplicationsResponse ListApplications(const v1::ListApplicationsRequest& req) const;
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id) const;
  // Adds the app counts (submitted, running, pending, completed, failed, killed) to `m`.
  void CountApps(v1::GetClusterMetricsResponse* m) const;

  // Recovery (rm_recovery.h): puts back an app read from the store (its attempts indexed),
  // and gives ids of this cluster timestamp a sequence number after `seq`.
  const RmApp& Restore(RmApp app);
  // The RM restarted under a restored unfinished app (work-preserving, YARN-556): its current
  // attempt carries on as it was and no attempt is used up. It is admitted to the scheduler
  // again (its queue, user and priority); its AM container is asked for again only if none was
  // allocated; otherwise it waits for its NM to report the AM container and for its AM to
  // register again, with a full am_expiry_ms from now. An app whose last attempt had ended
  // gets a new one if attempts remain (the old RM died in between), else fails; an app the
  // scheduler no longer admits (its queue is gone) fails. Errors: the store's.
  absl::Status RecoverAttempt(const RmApp& app);
  // Node `node_id` registered after a restart reporting `reported` (running and completed
  // container names). A recovered attempt whose AM container was allocated there, is not among
  // them and was not recovered is not there: if its AM never registered (the old RM died
  // before the container started), the AM container is asked for again in the same attempt -
  // the restart uses up no attempt; if its AM had registered, the node lost it and the attempt
  // fails.
  void AmContainersMissing(const std::string& node_id,
                           const absl::flat_hash_set<std::string>& reported);

  // True while `container` is the AM container of its app's live attempt and its launch has
  // not been confirmed (the attempt is ALLOCATED): it may not have reached its NM yet, e.g.
  // while that NM restarts, so an NM that does not report it has not lost it.
  bool AmLaunchPending(const std::string& container);

  // Events from the other services; `app` is a view from Find*().
  void AmContainerEnded(const RmApp& app, const std::string& container, int32_t exit_status,
                        const std::string& diagnostics);
  // Its AM registered / unregistered. Errors: the store's (the change stays, retried).
  absl::Status AttemptRegistered(const RmApp& app);
  absl::Status AttemptUnregistered(const RmApp& app, FinalStatus final_status,
                                   const std::string& diagnostics);
  // The current attempt failed: a new one starts if attempts remain, else the app fails.
  void AttemptFailed(const RmApp& app, const std::string& diagnostics);
  // Federation homes (app_lifecycle.h, FederationLease): the unfinished apps, for the
  // sub-cluster heartbeater's check; and what a check found: apps homed elsewhere are killed
  // with its diagnostics (logged), the lease is renewed, and held apps the check saw start
  // their next attempt.
  std::vector<FederationApp> FederationApps() const;
  void FederationHomesChecked(const FederationHomesCheck& check);
  const FederationLease& federation_lease() const { return federation_; }
  // One of the app's containers ended, having held `resource_ms` (resource x ms).
  void ChargeUsage(const std::string& app_id, const Resource& resource_ms);

  // From the container tracker. Container `container` of the app's current attempt was
  // allocated on `node`: an AM container goes to AmContainerAllocated, any other waits for the
  // AM's next Allocate.
  void ContainerAllocated(const RmApp& app, scheduler::NodeId node, v1::Container container,
                          bool is_am);
  // A resource update of one of its containers was granted (ContainerTracker::Resized): its
  // AM gets it in its next Allocate reply.
  void ContainerUpdated(const RmApp& app, v1::UpdatedContainer updated);
  // The scheduler gave up on an ask of the app with scheduler id `sched_app` (a gang past its
  // timeout): its AM hears it in its next Allocate reply. Nothing for an unknown app.
  void RequestRejected(scheduler::AppId sched_app, v1::RejectedSchedulingRequest rejected);
  // Its container on `node` was recovered after an RM restart (`container` describes it): the
  // AM container marks the attempt's AM recovered; another is handed to an AM that registered
  // again already (containers_from_previous_attempts).
  void ContainerRecovered(const RmApp& app, scheduler::NodeId node, v1::Container container,
                          bool is_am);
  // A container of its current attempt completed: its status waits for the AM.
  void ContainerCompleted(const RmApp& app, RmCompletion done);
  // From the AM service. Its AM called (the attempt is alive: am_expiry_ms from now).
  void AmHeard(const RmApp& app);
  // The AMRM master key rolled since the current attempt's token was issued: a token under the
  // current key, now the attempt's (YARN's rolled AMRM token); nullopt when it has not rolled.
  std::optional<v1::Token> RollAmRmToken(const RmApp& app);
  // What waits for the current attempt's AM (the AM service answers Allocate from it).
  AmMailbox& mailbox(const RmApp& app);

  // Forgets the oldest finished apps beyond RmOptions::max_completed_apps (YARN's
  // max-completed-applications), in memory and in the state store, each once its history is
  // durable (HistoryRecorder::AppDurable) and its final state stored. Called when an app ends,
  // after recovery, and when history becomes durable.
  void EvictFinished();
  // Finished apps held.
  int64_t finished_count() const { return static_cast<int64_t>(finished_.size()); }
  // Finished apps forgotten since the RM started.
  int64_t evicted() const { return evicted_; }

  // Read-only views for the other services: they change an app only through the methods
  // above, which take such a view as the handle of the app. nullptr when unknown.
  const RmApp* Find(const std::string& app_id) const;
  const RmApp* FindBySchedulerId(scheduler::AppId id) const;
  // The app of any of its attempts, current or old, by attempt id (AmService's index: O(1)).
  const RmApp* FindByAttempt(const std::string& attempt_id) const;
  const std::map<std::string, RmApp>& apps() const { return apps_; }

 private:
  // The app behind a view handed out by Find*() or Restore(): every RmApp is this object's.
  RmApp& Own(const RmApp& app) { return const_cast<RmApp&>(app); }
  RmApp* FindMutable(const std::string& app_id);
  // See ContainerAllocated: the attempt is stored and the container launched on its node. A
  // launch its NM cannot take now (Unavailable: the NM is down or restarting) is tried again,
  // backing off, while the attempt still waits for that container and the RM still holds it,
  // for at most nm_expiry_ms; any other failure fails the attempt.
  void AmContainerAllocated(RmApp& app, const v1::Container& container);
  // One try (number `tries`, from 0) of launching `container` on `node` for attempt `attempt`
  // of `app_id`; see AmContainerAllocated. Its answer is handled on the loop.
  void LaunchAm(const std::string& app_id, int32_t attempt, const std::string& container,
                const std::string& node, std::shared_ptr<const v1::StartContainerRequest> start,
                int32_t tries, int64_t first_try_ms);
  bool AmLaunchPending(const RmApp& app, const std::string& container) const;
  // Adds a new attempt of `app` to the scheduler, asking for its AM container (an unmanaged
  // app's attempt is launched at once instead, LaunchUnmanaged).
  absl::Status StartAttempt(RmApp& app);
  // An unmanaged app's attempt: LAUNCHED with its AMRM token issued, waiting for its AM.
  // Errors: a refused transition (nothing issued).
  absl::Status LaunchUnmanaged(RmApp& app, RmAttempt& at);
  // RecoverAttempt() of an unmanaged app's live attempt: admitted again, a fresh token in its
  // report, a full am_expiry_ms for its AM to register again.
  absl::Status RecoverUnmanagedAttempt(RmApp& app, RmAttempt& at);
  // Admits attempt `at` of `app` to the scheduler under a new scheduler id and indexes it; with
  // `ask_for_am`, the AM container of the app's AM resource is asked for. Errors: the
  // scheduler's, naming the app.
  absl::Status AdmitAttempt(RmApp& app, RmAttempt& at, bool ask_for_am);
  // AdaptCont: decides the AM container of `app`'s next attempt into its context's
  // am_resource and records the decision. Errors: the decision's (e.g. no AM fits).
  absl::Status SizeAm(RmApp& app);
  // The worker container of an AM sizing request, normalised; <1024 MB, 1 vcore> when empty.
  absl::StatusOr<Resource> SizingWorker(const v1::AmSizingRequest& req) const;
  // After a failed attempt with attempts left: starts the next one, or fails the app when it
  // cannot start.
  void StartNextAttempt(RmApp& app);
  // When the app's counted attempts (CountedAttempts) reached its max attempts: fails it,
  // naming `last` (the last attempt's diagnostics), and returns true.
  bool FailIfAttemptsUsedUp(RmApp& app, absl::string_view last);
  // Whether an AM of `app` (a new attempt, an AM launch, an unmanaged AM's token) must wait
  // for the next federation homes check: this RM is a sub-cluster, its lease is stale, and the
  // app counts as federated (FederationLease::MustHold).
  bool MustHoldForLease(const RmApp& app) const;
  // A check saw held `app` homed here (or without a home): its next attempt starts, or its
  // held AM is launched (an AM container's launch; an unmanaged AM's token).
  void ReleaseHeld(RmApp& app);
  // Ends the app as FinishApp does, unless this RM writes federated apps' ends into their home
  // records (RmOptions::record_end_at_home) and the app counts as federated: then its end
  // waits in ends_, its write is started (WriteEnds), and the app ends when it succeeds
  // (EndWritten). For a kill or failure decided here; an AM's unregistration (written before
  // the RM takes it) and the kill of a copy homed elsewhere call FinishApp.
  void EndApp(RmApp& app, AppEvent event, FinalStatus final_status,
              const std::string& diagnostics);
  // Hands every end waiting in ends_ to RmOptions::record_end_at_home.
  void WriteEnds();
  // The write of `app_id`'s end answered `written`: the app ends (OK), is killed as a copy
  // whose app moved (FailedPrecondition), or its write is retried after store_retry_ms.
  void EndWritten(const std::string& app_id, const absl::Status& written);
  // Ends the app in `event`'s state and releases its containers.
  void FinishApp(RmApp& app, AppEvent event, FinalStatus final_status,
                 const std::string& diagnostics);
  void ReleaseContainers(RmApp& app);
  // The attempt's completed statuses no AM will read: their NMs may forget them.
  void DropCompletions(RmAttempt& at);
  // Moves the app (the attempt) by `event` through app_lifecycle.h's table, logging a change of
  // state. FailedPrecondition naming the app (attempt), its state and the event when the table
  // refuses the event: nothing changes, and the caller must not act as if it had.
  [[nodiscard]] absl::Status Transition(RmApp& app, AppEvent event);
  [[nodiscard]] absl::Status Transition(RmAttempt& attempt, AttemptEvent event);
  // Transition() for callers with no one to answer (events from NMs, timers): a refusal is
  // logged as an error, with `during`, and false returned; the caller stops there.
  bool TransitionOrLog(RmApp& app, AppEvent event, absl::string_view during);
  bool TransitionOrLog(RmAttempt& attempt, AttemptEvent event, absl::string_view during);
  // Takes a just-admitted attempt back out of the scheduler and the indexes (AdmitAttempt
  // undone), e.g. when the submission that admitted it could not be stored.
  void Unadmit(const RmAttempt& at);
  // Writes the app and its current attempt; the store's error as it is.
  absl::Status Write(RmApp& app);
  // Write, and on error: logs it, keeps the app for a retry, and returns Unavailable.
  absl::Status Persist(RmApp& app);
  void RetryPersist();
  v1::ApplicationReport Report(const RmApp& app) const;

  RmContext* ctx_;
  int32_t next_app_seq_ = 1;
  scheduler::AppId next_sched_app_ = 1;
  std::map<std::string, RmApp> apps_;            // by application id
  std::map<std::string, int32_t> reserved_ids_;  // NewApplication, not yet submitted
  absl::flat_hash_map<scheduler::AppId, std::string> by_sched_app_;
  absl::flat_hash_map<std::string, std::string> by_attempt_;  // every attempt id -> app id
  std::set<std::string> unpersisted_;                         // apps whose last write failed
  // The finished apps, oldest first: (finish time, app id).
  std::set<std::pair<int64_t, std::string>> finished_;
  int64_t evicted_ = 0;
  // Apps whose recovered attempt has not had its AM container reported yet (a superset: an
  // entry is dropped when AmContainersMissing finds it settled).
  absl::flat_hash_set<std::string> awaiting_am_;
  FederationLease federation_;
  // AM launches held while the lease was stale (AmContainerAllocated), by app id: released or
  // dropped at the next check that sees the app, dropped when the app ends.
  struct HeldLaunch {
    int32_t attempt = 0;
    std::string container;
    std::string node;
    std::shared_ptr<const v1::StartContainerRequest> start;
  };
  std::map<std::string, HeldLaunch> held_launches_;
  TimerId retry_timer_ = 0;
  FederationEnds ends_;         // kills and failures waiting for their home records
  TimerId end_retry_timer_ = 0;  // the next WriteEnds after a failed write
  // Expires with this object: callbacks from other threads (AM launches) that post back to the
  // loop hold a weak_ptr to it and do nothing once the RM is gone (an HA RM that stepped down
  // destroys its ResourceManager while launches may still answer).
  std::shared_ptr<int> alive_ = std::make_shared<int>(0);
};

}  // namespace weft::rm

#endif  // WEFT_RM_APP_MANAGER_H_
