// Copyright Weft authors. The ResourceManager's settings and the AM launcher it is given.
#ifndef WEFT_RM_RM_OPTIONS_H_
#define WEFT_RM_RM_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adaptcont/config.h"
#include "common/resource_types.h"
#include "history/history_store.h"
#include "rm/heartbeat_interval.h"
#include "scheduler/registry.h"
#include "weft/v1/container.pb.h"

namespace weft::rm {

// Told about every scheduling pass, on the RM loop. The observer measures the pass itself (the
// RM reads no clock but its loop's): BeforePass, the pass and the RM's handling of what it
// decided (containers recorded, preempted ones ended), then AfterPass with the number of
// containers it allocated.
class PassObserver {
 public:
  virtual ~PassObserver() = default;
  virtual void BeforePass() = 0;
  virtual void AfterPass(int64_t allocations) = 0;
};

struct RmOptions {
  scheduler::SchedulerConfig scheduler = scheduler::DefaultSchedulerConfig();
  ResourceTypeRegistry registry;
  int64_t cluster_timestamp_ms = 0;      // part of every application id; 0 = start time
  // Federation (seed 004): this RM's sub-cluster id, stamped on its application and node
  // reports; "" outside a federation.
  std::string sub_cluster_id;
  // Federation (issue 27, fenced homes; rm/app_lifecycle.h FederationLease): a federated app's
  // attempt that fails more than this long after the federation heartbeater last checked the
  // RM's homes waits for its next check before a new attempt starts, ms. 0 = learned from the
  // heartbeater's first check (twice its interval by default); nothing is held before it.
  int64_t federation_fence_ms = 0;
  // Federation: the container epoch of this RM start, from its own next epoch (at least that,
  // above every epoch of the federation: FederationStateStore::ClaimContainerEpoch), so that
  // the containers of an app's home and of its unmanaged AMs in other sub-clusters (one
  // application id) never share an id. Null: the RM's own epoch (one cluster).
  std::function<absl::StatusOr<int64_t>(int64_t own_epoch)> federation_epoch;
  // Federation: writes that app `app_id` ended at `ended_ms` (ms since the Unix epoch) into
  // its home record (rm/federation_fencing.h RecordEndAtHome), off the loop, and calls `done`
  // with the result from any thread. A federated app killed or failed here is reported in its
  // last live state until that write succeeds (app_lifecycle.h FederationEnds). Null: ends
  // are not written (one cluster, or a sub-cluster without a federation store).
  std::function<void(const std::string& app_id, int64_t ended_ms,
                     std::function<void(absl::Status)> done)>
      record_end_at_home;
  int64_t heartbeat_interval_ms = 1000;  // told to NMs
  // Each NM's interval scaled by its CPU utilization against the cluster's (YARN-10475); the
  // RM tells every NM its next interval in each heartbeat reply.
  HeartbeatScaling heartbeat_scaling;
  int64_t nm_expiry_ms = 600000;         // a node silent this long is LOST (YARN: 10 min)
  int64_t am_expiry_ms = 600000;         // an AM silent this long fails its attempt
  int64_t pass_interval_ms = 100;        // between scheduling passes while demand is pending
  // Event-driven scheduling: a heartbeat that frees resources (completed containers) or an
  // Allocate that adds demand runs a pass this soon after the previous one ended, ms, instead of
  // waiting for the pass timer, if some demand waits unplaced then (with none, the early pass
  // would place nothing). Bounds the passes events can cause to 1000/min_pass_gap_ms a
  // second, however many NMs heartbeat.
  int64_t min_pass_gap_ms = 5;
  // Long-poll Allocate (AllocateRequest.wait_ms): the longest the RM holds one call, ms, and
  // how many calls it holds at once; beyond that it answers at once (back-pressure).
  int64_t max_allocate_wait_ms = 10000;
  int32_t max_parked_allocates = 10000;
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
  // Retry interval of state-store writes that failed (the app stays in memory meanwhile).
  int64_t store_retry_ms = 1000;
  // Application history (issue 31; rm/history_recorder.h). The history store's URL
  // (history::OpenHistoryStore: "sqlite:/path", "postgresql://..."); "" = history off.
  std::string history_store;
  // The durable outbox the records wait in (a private SQLite file); required with
  // history_store.
  std::string history_outbox;
  // Finished apps the RM keeps in memory and in its state store, newest first (YARN's
  // yarn.resourcemanager.max-completed-applications); older ones are forgotten once their
  // history is durable. >= 0.
  int64_t max_completed_apps = 1000;
  // The history's retention (HistoryPublisherOptions::keep_days, keep_apps; 0 = unbounded).
  double history_keep_days = 0;
  int64_t history_keep_apps = 0;
  // Tests: opens the history store instead of history_store's URL (which must be set too).
  std::function<absl::StatusOr<std::unique_ptr<history::HistoryStore>>()> open_history_store;
  // How the RM sizes AM containers of apps that ask it to (seed 002, AdaptCont).
  adaptcont::AdaptContConfig adaptcont = adaptcont::DefaultAdaptContConfig();
  // Told about every scheduling pass (metrics); null = none. Not owned; must outlive the RM.
  PassObserver* pass_observer = nullptr;
  // The utilisation history (rm/cluster_history.h): a sample every history_sample_ms, kept for
  // history_retention_s (ValidateHistoryOptions bounds them).
  int64_t history_sample_ms = 10'000;
  int64_t history_retention_s = 86'400;
};

// Starts AM containers on NodeManagers (YARN's AM launcher). `done` may run on any thread.
class AmLauncher {
 public:
  virtual ~AmLauncher() = default;
  virtual void Launch(const std::string& node_id, const v1::StartContainerRequest& request,
                      std::function<void(absl::Status)> done) = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_RM_OPTIONS_H_
