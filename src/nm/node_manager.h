// Copyright Weft authors. The NodeManager daemon: serves ContainerService, registers with the
// RM's TrackerService and heartbeats, and runs containers through the ContainerExecutor.
#ifndef WEFT_NM_NODE_MANAGER_H_
#define WEFT_NM_NODE_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/event_loop.h"
#include "common/metrics.h"
#include "common/resource.h"
#include "common/rm_failover.h"
#include "federation/amrmproxy/amrm_proxy_service.h"
#include "nm/cgroups.h"
#include "nm/container_executor.h"
#include "nm/container_user.h"
#include "nm/devices/device_ledger.h"
#include "nm/devices/device_plugin.h"
#include "nm/exit_watcher.h"
#include "nm/log_aggregator.h"
#include "nm/nm_state_store.h"
#include "nm/node_manager_internal.h"
#include "nm/traffic_controller.h"
#include "security/container_token_verifier.h"
#include "security/tls.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace weft::nm {

struct NodeManagerOptions {
  // The RM's TrackerService, "host:port"; or the RMs of an HA cluster, "host:port,host:port,..."
  // (common/rm_failover.h): the NM talks to one and, when it cannot serve (a standby, a
  // stopped or unreachable RM), moves to the active a standby names or to the next of the list.
  std::string rm_tracker_address;
  // Where ContainerService listens. port 0 picks a free port (see NodeManager::port()).
  std::string bind_host = "127.0.0.1";
  int port = 0;
  std::string rack = "/default-rack";
  // The node's label (its partition; YARN's distributed node-label provider), "" for the
  // default partition, and its node attributes (YARN's distributed node attributes), key ->
  // value: sent in every registration (RegisterNodeManagerRequest.node_label,
  // node_attributes). The RM refuses the registration when the label is not one of its
  // scheduler's node-labels (the NM logs it and retries). Start checks them
  // (ValidateNodeLabel, ValidateNodeAttribute).
  std::string node_label;
  std::map<std::string, std::string> node_attributes;
  // What the node offers. A zero memory-mb / vcores is detected (MemTotal of /proc/meminfo,
  // online processors). Only the built-in types are reported to the RM.
  Resource capability;
  // Absolute. Containers work in <work_root>/<app_id>/<container_id>; their stdout and stderr
  // go to <work_root>/logs/<container_id>/{stdout,stderr}.
  std::string work_root;
  // Between StopContainers' SIGTERM and the SIGKILL that follows, ms.
  int64_t stop_grace_ms = 2000;
  // How long the logs of a finished application's containers are kept on the node after its
  // work dirs are removed, ms (YARN's yarn.nodemanager.log.retain-seconds: 3 h). Logs still
  // pending deletion when the NM stops stay on disk.
  int64_t log_retention_ms = 3 * 3600 * 1000;
  // Out-of-band heartbeats (YARN's NodeStatusUpdater.sendOutofBandHeartBeat): a container's end
  // is reported at once, in a heartbeat of its own, at most one per this many ms and never two
  // in flight (completions meanwhile ride together in the next one); < 0 = only the periodic
  // heartbeats. Heartbeats without completions stay at the RM's interval.
  int64_t out_of_band_heartbeat_gap_ms = 10;
  // The parent cgroup (relative to /sys/fs/cgroup/<controller> on v1, /sys/fs/cgroup on v2).
  std::string cgroup_hierarchy = "weft";
  // false: run containers without resource isolation (reported as a missing feature). true:
  // Start fails when cgroups are unusable (e.g. not root).
  bool use_cgroups = true;
  // Container limits (docs/operations.md, "Container limits"). MB = 2^20 bytes.
  // Processes (and threads) a container may hold at once, through the pids cgroup (v1 and v2):
  // container_pids_per_vcore times its vcores (at least one), or container_pids_max when that
  // is > 0. 0 and 0: no limit. Without a pids controller (or cgroups) it is not enforced, and
  // the node's missing features say so.
  int64_t container_pids_per_vcore = 512;
  int64_t container_pids_max = 0;
  // Disk a container's work dir may use, MB; measured every second (allocated blocks), the
  // container is killed above it. 0 = no limit.
  int64_t container_disk_limit_mb = 10240;
  // Bytes of stdout and of stderr each kept per container, MB: past it the oldest output is
  // dropped (a note at the top of the file says how much). 0 = no limit.
  int64_t container_log_limit_mb = 100;
  // Whether containers may create user namespaces (`unshare -Ur`). false (the default): a
  // seccomp filter refuses them, as Docker's default profile does; they are a large kernel
  // attack surface that a batch container rarely needs.
  bool container_user_namespaces = false;
  // Whom containers run as, and who may (nm/container_user.h). As the app's user, an NM
  // running as root switches to that user; one that is not root runs only its own user's.
  ContainerRunAs run_as = ContainerRunAs::kAppUser;
  ContainerUserPolicy user_policy;

  // Network bandwidth isolation (nm/traffic_controller.h). Empty: off, and a network-mbps
  // capability is scheduled but not enforced (reported as a missing feature). Set: Start
  // mounts net_cls if needed and builds the HTB tree on this interface, or fails saying why;
  // the capability's network-mbps becomes the containers' total.
  std::string network_interface;
  int64_t link_mbps = 0;                // 0: the interface's speed from sysfs
  int64_t network_containers_mbps = 0;  // 0: 90% of the link
  BurstLimit network_burst = BurstLimit::kContainersTotal;
  std::string network_classifier = "auto";

  // Mutual TLS (security/tls.h; `weft nm` and `weft dev` always set it): ContainerService is
  // served with this certificate (AMs, which present none, are authenticated by their tokens),
  // and the NM presents it to the RM, whose TrackerService accepts it only for the node it
  // names: Start fails unless the certificate names nm/<node_id()>. Containers find the CA
  // certificate, to verify the RM and NMs, at $WEFT_TLS_CA_FILE. Unset: plaintext (in-process
  // tests).
  std::optional<security::TlsFiles> tls;

  // NodeManager restart (docs/nm-recovery.md). Whatever this is, the NM records its containers
  // in <work_root>/nm-state.db (SQLite, locked: one NM per work root) before StartContainers
  // answers, and runs each under a monitor process, in the container's cgroups, that outlives
  // the NM and writes the container's exit status to <work_root>/nm-state/<container_id>/.
  // At Start, true: re-attach to the containers an earlier NM on this work root (and node id)
  // left running, report those that ended meanwhile with their exit codes (or
  // CONTAINER_EXIT_LOST_NODE when nobody recorded it) in the registration and heartbeats, and
  // kill every other process in the cgroup hierarchy. false: kill everything an earlier NM left
  // (recorded, or in the hierarchy) and forget it. Start fails when the record is unreadable
  // and this is true (with false it is replaced).
  bool recover = true;

  // Log aggregation (nm/log_aggregator.h; YARN's remote-app-log-dir): when an application is
  // cleaned up here, its containers' logs are copied to
  // <dir>/<user>/logs/<app_id>/<node_id>/<container_id>/ before log_retention_ms deletes them;
  // an aggregation a crash interrupted is re-done at the next Start. "" = off. Whatever this
  // is, each app's owner and view ACL (from its container tokens) are kept beside its logs for
  // the web server's access checks.
  std::string log_aggregation_dir;

  // The node's web address (host:port of its HTTP server, /metrics and container logs), sent
  // in registration; "" = none.
  std::string http_address;
  // Where the NM counts container launches, failures, completions, heartbeats and
  // per-container network bytes; not owned, must outlive the NM. Null = no metrics.
  metrics::Registry* metrics = nullptr;

  // The federation fence (issue 27), ms: when the NM has had no successful answer from its RM
  // for this long, it kills all its containers (logging why) and reports them when the RM
  // answers again. 0 = off. In a federation whose GPG resubmits the apps of a LOST sub-cluster,
  // it must hold that fence + the NM heartbeat interval < the GPG's membership expiry - the
  // RM's federation heartbeat interval, so that a silent RM's containers are gone before their
  // apps run elsewhere.
  int64_t federation_fence_ms = 0;

  // The AMRMProxy (seed 004; federation/amrmproxy/amrm_proxy_service.h). Set: the NM serves
  // AmService on its own port, and every AM container it launches (one whose launch context
  // carries the RM's AMRM token, tokens["amrm"], for the WEFT_APP_ATTEMPT_ID of its own app)
  // talks to it instead of the RM: the NM keeps the real token and WEFT_RM_ADDRESS for the
  // proxy, gives the AM a token valid at this NM's proxy only and sets WEFT_RM_ADDRESS to this
  // node's id. The attempt is dropped from the proxy when its AM container ends or its app is
  // cleaned up here (an attempt that ended while its app runs keeps its UAMs for the next
  // attempt until then). The proxy's token key and each attempt's state (home token,
  // registration, UAMs and their tokens) are kept in the NM's state store (its state_store
  // option is set by the NM): an NM restarted with recover=true on the same work root and node
  // id serves the AMs it re-attaches to again (YARN-6127); they resync with the proxy, no new
  // attempt. Unset: AMs talk to the RM directly.
  std::optional<amrmproxy::AmrmProxyOptions> amrmproxy;
  // Device plugins (issue 32; docs/gpu-nm.md), e.g. a GpuPlugin (nm/devices/gpu_plugin.h).
  // Start discovers their devices (a discovery error fails Start), registers them with the RM
  // and sets the capability's gpu-milli to 1000 x the healthy GPUs (Start fails when
  // `capability` names another non-zero gpu-milli). A container gets exactly the devices its
  // token grants ("gpu:<index>=<milli>"): its cgroup denies every other device node of the
  // plugins' (cgroup v1 devices.deny, cgroup v2 a device BPF program; with use_cgroups=false
  // that is a missing feature), and the plugin's environment (CUDA_VISIBLE_DEVICES, ...). A
  // start whose token names an unknown or unhealthy device, would hold a device beyond 1000
  // milli with the running containers, or whose gpu-milli differs from its devices' total is
  // refused. Empty: the node has no devices.
  std::vector<std::shared_ptr<DevicePlugin>> device_plugins;
  // How often the plugins discover again, for health, ms (started with a heartbeat, run off
  // the loop, one at a time). A device whose health changed goes to the RM in the heartbeat
  // after that discovery ends (NodeHeartbeatRequest.devices). 0 = only at Start.
  int64_t device_health_interval_ms = 30000;
  // Called on the loop, once, when the RM answers NODE_ACTION_SHUTDOWN (a decommissioned
  // node), after the containers were told to stop; the argument is the RM's diagnostics. `weft
  // nm` exits then, as YARN's NodeManager does. Null: the NM stays up, idle (`weft dev`).
  std::function<void(const std::string& diagnostics)> on_rm_shutdown;
};

// A node label: "" (none) or 1-255 characters of [A-Za-z0-9_.-]. InvalidArgument naming it.
absl::Status ValidateNodeLabel(absl::string_view label);
// A node attribute: key 1-255 characters of [A-Za-z0-9_./-], value 1-255 of [A-Za-z0-9_.-].
// InvalidArgument naming the bad key or value.
absl::Status ValidateNodeAttribute(absl::string_view key, absl::string_view value);
// "key=value" (a --node-attribute flag) -> {key, value}, checked as above.
absl::StatusOr<std::pair<std::string, std::string>> ParseNodeAttribute(absl::string_view text);

// One NodeManager: a gRPC ContainerService and the client of the RM's TrackerService.
//
// Threading: every piece of mutable state belongs to `loop`. gRPC handlers (callback API) post
// their work to the loop and finish their RPC from it; calls to the RM use gRPC's callback
// client API and post their results to the loop, so the loop never blocks on the network.
// The loop must accept Post() from any thread and keep running tasks until Shutdown() has
// returned (a started ThreadEventLoop; ManualEventLoop is not thread-safe and does not fit).
//
// The RM protocol: RegisterNodeManager, then NodeHeartbeat every interval the RM returns, one
// call in flight at a time. A completed container's status is sent in every heartbeat until a
// reply acknowledges that heartbeat (its response_id is the request's + 1), so a lost
// heartbeat loses nothing. A registration lists the running containers with the container
// token each was started with, and the completed ones not yet acknowledged. RESYNC makes the
// NM register again, containers kept: the RM decides what lives. It stops, through
// containers_to_cleanup in the next heartbeat reply, every reported container it does not
// hold or recover (e.g. those of a node it had declared LOST: fencing). SHUTDOWN stops every
// container and the heartbeats. Master keys of every reply go to the ContainerTokenVerifier.
// Failed RM calls are logged to stderr and retried. With several RMs (RM HA), a call that
// fails with UNAVAILABLE or DEADLINE_EXCEEDED moves the NM to the active the standby named, or
// to the next RM of the list, and the call is retried there; the new active, which does not
// know this node yet, answers RESYNC and the NM registers with it (its containers kept).
//
// NM restart: see NodeManagerOptions::recover. A killed NM (even kill -9) leaves its containers
// running in their cgroups under their monitors; the next NM on the work root re-attaches or
// kills them before it registers.
//
// Container resource updates (YARN's container increase/decrease; proto/weft/v1/container.proto,
// UpdateContainersRequest): the RM resizes a running container by issuing a new container
// token for it with a higher version and the new resource. The AM brings increases through
// ContainerService.UpdateContainers; the RM pushes decreases in NodeHeartbeatResponse
// .containers_to_update. Both take one path (UpdateOne): the token is verified as a start token
// is (ContainerTokenVerifier::VerifyUpdate), must name a container running here (NotFound
// otherwise) for its app and user (PermissionDenied), with a version above the container's
// (FailedPrecondition: replays and stale updates change nothing); then the new limits are
// applied live (ContainerExecutor::UpdateLimits: cgroup memory, CPU weight, pids;
// TrafficController::ChangeRate: the HTB rate), and the resource and version are recorded in
// the state store (a restarted NM keeps them) and reported to the RM (registration's
// container_resources and container_versions, every heartbeat's container_versions). A memory
// decrease the kernel cannot apply because the container uses more (cgroup v1's EBUSY) kills
// the container, CONTAINER_EXIT_KILLED_EXCEEDED_PMEM with a diagnostic saying so, and the
// update fails with ResourceExhausted; on cgroup v2 the kernel itself reclaims or OOM-kills
// (reported as any OOM kill, against the new limit).
class NodeManager {
 public:
  // Detects cgroups and capability, starts ContainerService on bind_host:port and begins
  // registering with the RM (asynchronously: Start does not wait for the RM). `loop` is not
  // owned and must outlive the NodeManager; call Start off the loop's thread.
  // Errors: InvalidArgument for bad options; FailedPrecondition when use_cgroups and cgroups
  // are unusable (the message says why); Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<NodeManager>> Start(NodeManagerOptions options,
                                                            EventLoop* loop);

  // Shuts down if Shutdown() has not been called. Must not run on the loop's thread.
  ~NodeManager();

  NodeManager(const NodeManager&) = delete;
  NodeManager& operator=(const NodeManager&) = delete;

  // "host:port" of ContainerService: what the RM and container tokens call this node.
  // Immutable after Start; thread-safe.
  const std::string& node_id() const { return node_id_; }
  int port() const { return port_; }
  // The kernel features this node lacks, as sent in its registration. Thread-safe.
  const std::vector<std::string>& missing_features() const { return missing_features_; }
  // The capability sent in registration (after detection). Thread-safe.
  const Resource& capability() const { return capability_; }
  // How bandwidth is enforced (TrafficController::Describe()), or "" when it is not.
  // Thread-safe.
  const std::string& network_isolation() const { return network_isolation_; }

  // Stops the server (in-flight RPCs get up to 1 s), cancels RM calls, stops every container
  // (SIGTERM, SIGKILL after stop_grace_ms), waits for them to end, destroys their cgroups and
  // the hierarchy. Work directories and logs stay, and so does the record (the next NM
  // reports these containers as completed). Idempotent. Blocks; must not be called from the
  // loop's thread.
  void Shutdown();

 private:
  class Service;
  // What the NM remembers of a container it launched, from launch until its application is
  // cleaned up.
  struct ContainerRecord {
    std::string app_id;
    bool running = true;
    int exit_status = 0;  // when !running: exit code or a v1::ContainerExitStatus
    std::string diagnostics;
    // Set when the NM asked it to stop: the v1::ContainerExitStatus it completes with, and why.
    std::optional<int> stop_exit_status;
    std::string stop_reason;
    // What the state store holds of it (Persist() brings the fields above into it), its
    // accounting included (launch and end times, memory MB x s, lifetime totals).
    NmContainerRecord stored;
    // Re-attached by this NM after a restart (its end may predate this NM's noticing it).
    bool adopted = false;
    // Loop clock, ms: when SampleUsage next samples it, and next writes its accounting.
    int64_t next_usage_sample_ms = 0;
    int64_t next_usage_persist_ms = 0;
    // Bytes it sent before this NM's HTB class for it existed (an earlier NM's classes, from
    // the record): its total is this plus its class's counter.
    int64_t network_tx_base = 0;
  };

  NodeManager(NodeManagerOptions options, EventLoop* loop);

  // ---- ContainerService, on the loop.
  void DoStartContainers(const v1::StartContainersRequest& request,
                         v1::StartContainersResponse* response);
  // Starts one container; the error message is the failure reported for it.
  absl::Status StartOne(const v1::StartContainerRequest& request, std::string* container_id);
  // With the AMRMProxy: when `spec` launches an AM (its tokens hold the RM's AMRM token for an
  // attempt of `token`'s app), hands the attempt to the proxy and rewrites the AM's token and
  // WEFT_RM_ADDRESS. Other containers are left alone. The proxy's refusal fails the start.
  absl::Status InterceptAmLaunch(const security::ContainerTokenData& token, LaunchSpec* spec);
  // The distinct directories of the container's cgroups (none without cgroups).
  std::vector<std::string> CgroupDirsOf(const std::string& container_id) const;
  // Stop and status calls: each container id needs a valid token for this node
  // (ContainerTokenVerifier::VerifyControl). The verdict per container id named by a token;
  // then, for one id, OK or why not (InvalidArgument, PermissionDenied, NotFound).
  absl::flat_hash_map<std::string, absl::Status> AuthorizeControl(
      const google::protobuf::RepeatedPtrField<v1::Token>& tokens);
  absl::Status Authorized(const absl::flat_hash_map<std::string, absl::Status>& verdicts,
                          const std::string& id);
  void DoStopContainers(const v1::StopContainersRequest& request,
                        v1::StopContainersResponse* response);
  void DoGetContainerStatuses(const v1::GetContainerStatusesRequest& request,
                              v1::GetContainerStatusesResponse* response);
  void DoUpdateContainers(const v1::UpdateContainersRequest& request,
                          v1::UpdateContainersResponse* response);
  // Verifies and applies one container resource update (the class comment), from `source`
  // ("UpdateContainers" or "heartbeat", for the logs). `*container_id` names the container
  // when the token says which, verified or not. Errors: Unavailable (shutting down, or no
  // master keys yet), FailedPrecondition (node shut down by the RM, container stopping, stale
  // version), InvalidArgument (missing token, bad resource or rate), PermissionDenied (token
  // refused, or another app's or user's), NotFound (not running here), ResourceExhausted (a
  // memory decrease below its usage: the container is being killed), or the kernel's error
  // (then its limits are as before).
  absl::Status UpdateOne(const v1::Token& token, absl::string_view source,
                         std::string* container_id);

  // ---- Containers, on the loop.
  // Asks a running container to stop; it completes with `exit_status` and `reason` once reaped.
  void StopContainer(const std::string& container_id, int exit_status, absl::string_view reason);
  // Reaps exits, reschedules itself (every 100 ms and by the executor's next deadline); the
  // exit watcher runs it at once when a container ends.
  void ReapTick();
  // Has the exit watcher wake the reap when the container's process (its monitor) ends.
  void WatchExit(const std::string& container_id);
  void OnContainerExit(const ContainerExit& exit);
  // Samples the memory (rss) of every running container that is due (kUsageSampleIntervalMs)
  // into its MB x seconds, writing its accounting to the state store when that is due
  // (kUsagePersistIntervalMs). No-op without a memory cgroup: then nothing is measured.
  void SampleUsage();
  // Stops the app's containers; once none runs, removes them and its work directory.
  void CleanupApplication(const std::string& app_id);
  // By value: it erases the records that may hold the caller's string.
  void MaybeFinishAppCleanup(std::string app_id);
  v1::ContainerStatus StatusOf(const std::string& container_id, const ContainerRecord& record);

  // ---- RM protocol, on the loop.
  void SendRegister();
  // `active_hint`: the active RM a standby named in the reply's trailing metadata, or "".
  void OnRegisterReply(const grpc::Status& status, const std::string& active_hint,
                       const v1::RegisterNodeManagerResponse& reply);
  void SendHeartbeat();
  // The RM answered the call in flight (sent at rm_call_sent_ms_), with `lease` when it is a
  // federation sub-cluster's RM: the federation fence restarts from that answer or lease, and
  // fires at once when the lease is older than the fence (its containers are killed).
  void FenceOnRmAnswer(std::optional<internal::RmAnswerFence::Lease> lease);
  void OnHeartbeatReply(const grpc::Status& status, const std::string& active_hint,
                        const v1::NodeHeartbeatRequest& request,
                        const v1::NodeHeartbeatResponse& reply);
  void ScheduleRm(int64_t delay_ms, bool register_again);
  // A heartbeat soon (NodeManagerOptions::out_of_band_heartbeat_gap_ms): containers ended.
  void RequestOutOfBandHeartbeat();
  // After a failed RM call: logs `event` with the RM that failed, and moves to another RM when
  // the failure says that one cannot serve (RmFailover::OnFailure with the call's
  // `active_hint`), connecting the tracker stub to it and logging the move. Returns how soon
  // to retry the call, ms: `usual_ms` when it did not move.
  int64_t FailOver(absl::string_view event, const grpc::Status& status,
                   const std::string& active_hint, int64_t usual_ms);
  // A tracker stub for rm_failover_->current().
  void ConnectTracker();
  // Learns the container master keys an RM reply carries, and keeps them in the state store
  // when they changed (a restarted NM verifies with them before it registers again).
  void UpdateKeys(bool has_current, const v1::MasterKey& current, bool has_next,
                  const v1::MasterKey& next);
  // At recovery: the keys the state store kept, if any (not heard from an RM: keys_heard_
  // stays false). A kept key that does not parse is logged and skipped.
  void RestoreKeys();
  // Before keys_heard_, a token under a key this NM does not hold unexpired may be under one
  // rolled while it was down: Unavailable (asked again later) rather than refused for good.
  // OK otherwise (VerifyStart and VerifyUpdate then judge the token).
  absl::Status CheckKeysFor(const v1::Token& token);
  void StopAllContainers(int exit_status, absl::string_view reason);
  // Reads the containers' class counters into net_stats_, and each running container's total
  // into its record (no-op without traffic control).
  void RefreshNetworkStats();
  // Metrics (no-ops without options_.metrics).
  void CountLaunch(bool ok);
  void CountExit(const std::string& container_id, int exit_status);
  void CountHeartbeat(bool ok);
  void UpdateRunningGauge();

  // ---- Devices (node_manager_devices.cc; docs/gpu-nm.md).
  // In Start, after cgroups: discovers the plugins' devices into device_ledger_, enables the
  // cgroup device isolation when there are devices, and sets capability_'s gpu-milli.
  absl::Status StartDevices();
  // For a start: the token's device shares, checked (DeviceLedger::Check) and recorded as the
  // container's (device_ledger_.Release undoes it); `spec` gets the denied device nodes and
  // the plugins' environment. Errors name the container and the device; nothing is recorded.
  absl::Status AssignDevices(const security::ContainerTokenData& token, LaunchSpec* spec);
  // NM recovery: a re-attached container's recorded shares go back into the ledger.
  void RestoreDevices(const NmContainerRecord& stored);
  // Starts a discovery when device_health_interval_ms has passed and none is running. It runs
  // on device_checker_, off the loop (nvidia-smi may take up to its 10 s timeout, and the
  // loop must keep heartbeating meanwhile); ApplyDeviceCheck takes its result on the loop.
  void MaybeRecheckDevices();
  // On the loop: one discovery's results, one per plugin (in options_.device_plugins' order).
  // Health changes are queued for the next heartbeat (device_changes_); a failed discovery
  // is logged and changes nothing.
  void ApplyDeviceCheck(std::vector<absl::StatusOr<std::vector<v1::Device>>> results);
  // Waits for a running discovery (FinishShutdownOnLoop, the destructor after a failed Start).
  void JoinDeviceChecker();
  // ---- NodeManager restart (nm_recovery.cc).
  // In Start, before serving and registering: loads the state store, re-attaches to or kills
  // what an earlier NM left, kills orphans in the cgroup hierarchy. Errors only when the store
  // cannot be read (nothing has been touched then).
  absl::Status RecoverContainers();
  // Kills what remains of a recorded container that is not re-attached (its monitor and
  // process group when they are still the recorded processes, its recorded cgroups) and
  // removes its state directory.
  void KillRecorded(const NmContainerRecord& record);
  // StopContainer for Start's thread (schedules nothing on the loop).
  void ResumeStop(const std::string& container_id, int exit_status, absl::string_view reason);
  // Kills every process of this NM's groups in the cgroup hierarchy (recorded, or with a state
  // directory in this work root) that belongs to no running container here. Groups of other
  // NMs sharing the hierarchy are left alone (logged as foreign_cgroup_left).
  void KillOrphans();
  // Writes the container's record to the state store (errors are logged).
  void Persist(const std::string& container_id, ContainerRecord& record);

  // ---- Shutdown, on the loop.
  void BeginShutdownOnLoop();
  void FinishShutdownOnLoop();

  // Registers an RM call about to start; false once RM calls are closed (shutting down).
  bool BeginRmCall(grpc::ClientContext* context);
  void EndRmCall(grpc::ClientContext* context);
  // True once Shutdown() has closed (and cancelled) RM calls.
  bool RmCallsClosed();

  const NodeManagerOptions options_;
  EventLoop* const loop_;  // not owned
  // The federation fence (options_.federation_fence_ms): when the RM last answered. Used on
  // the loop only. federation_fence() is null when the fence is off.
  internal::RmAnswerFence federation_fence_{options_.federation_fence_ms};
  internal::RmAnswerFence* federation_fence() {
    return federation_fence_.enabled() ? &federation_fence_ : nullptr;
  }

  // Immutable after Start().
  std::string node_id_;
  int port_ = 0;
  Resource capability_;
  std::vector<std::string> missing_features_;
  std::unique_ptr<CgroupsHandler> cgroups_;     // null without cgroups
  std::unique_ptr<TrafficController> traffic_;  // null without bandwidth isolation
  // Whether containers' cgroups deny the devices they were not given (device plugins with
  // cgroups whose device control is enabled).
  bool device_isolation_ = false;
  std::string network_isolation_;
  std::shared_ptr<grpc::ChannelCredentials> tracker_credentials_;
  // The cluster CA certificate containers read ($WEFT_TLS_CA_FILE); "" without TLS.
  std::string ca_file_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<amrmproxy::AmrmProxyService> amrm_proxy_;  // null without the AMRMProxy
  std::unique_ptr<grpc::Server> server_;
  bool started_ = false;  // Start() succeeded: the destructor must Shutdown()
  // Set (release) once Start has finished initialising; handlers refuse calls before.
  std::atomic<bool> serving_{false};
  std::atomic<bool> shutdown_called_{false};
  absl::Notification shutdown_done_;

  // RM calls in flight, so Shutdown can cancel them and wait for their callbacks.
  absl::Mutex rm_mu_;
  std::set<grpc::ClientContext*> rm_calls_ ABSL_GUARDED_BY(rm_mu_);
  bool rm_closed_ ABSL_GUARDED_BY(rm_mu_) = false;

  // ---- Owned by the loop.
  std::unique_ptr<ContainerExecutor> executor_;
  // Wakes the reap at each container's end (null without pidfd_open: reap ticks only).
  std::unique_ptr<ExitWatcher> exit_watcher_;
  security::ContainerTokenVerifier verifier_;
  std::map<std::string, ContainerRecord> containers_;
  // The node's devices and which container holds which share (filled by Start).
  DeviceLedger device_ledger_;
  // Devices whose health changed since the last heartbeat that carried them, by (type, index).
  std::map<std::pair<std::string, int32_t>, v1::Device> device_changes_;
  int64_t next_device_check_ms_ = 0;  // loop clock
  // The discovery running off the loop (MaybeRecheckDevices); device_check_running_ until its
  // result is applied. Started and joined on the loop only.
  std::thread device_checker_;
  bool device_check_running_ = false;
  // Network counters of running containers as of the last heartbeat.
  std::map<std::string, ContainerNetStats> net_stats_;
  // Completed statuses not yet acknowledged by an RM heartbeat reply, by container id.
  std::map<std::string, v1::ContainerStatus> unacked_completed_;
  // Completed statuses a heartbeat reply acknowledged that the RM has not yet released
  // (containers_to_be_removed_from_nm): reported again when this NM registers (YARN-1372).
  std::map<std::string, v1::ContainerStatus> unreleased_completed_;
  std::set<std::string> cleaning_apps_;            // stopping their containers before removal
  std::set<std::string> finished_apps_;            // cleaned up: refuse new containers of them
  std::unique_ptr<NmStateStore> state_;            // <work_root>/nm-state.db
  std::unique_ptr<LogAggregator> log_aggregator_;  // created in Start
  // The RM addresses and the one the NM talks to (HA), and the TrackerService stub for it.
  std::optional<RmFailover> rm_failover_;
  std::unique_ptr<v1::TrackerService::Stub> tracker_;
  // What the last failed RM call did (kNone after a success): a hint is followed at once only
  // when the previous failure did not follow one already (two RMs naming each other wait).
  RmFailoverAction last_failover_ = RmFailoverAction::kNone;
  bool rm_call_in_flight_ = false;
  bool registered_ = false;             // heartbeating (not registering)
  int64_t rm_timer_due_ms_ = 0;         // when rm_timer_ fires, loop clock
  int64_t last_heartbeat_sent_ms_ = 0;  // loop clock
  int64_t rm_call_sent_ms_ = 0;         // the RM call in flight (register or heartbeat) was sent
  bool rm_shutdown_ = false;            // the RM said NODE_ACTION_SHUTDOWN
  bool shutting_down_ = false;
  int32_t last_response_id_ = 0;
  int32_t last_key_id_ = 0;
  // An RM reply has brought keys since this NM started (only restored ones until then).
  bool keys_heard_ = false;
  // The current and next keys the state store holds (ids 0: none).
  std::pair<security::MasterKey, security::MasterKey> stored_keys_;
  int64_t rm_epoch_ = 0;  // from the last registration
  int64_t heartbeat_interval_ms_ = 1000;
  std::optional<TimerId> rm_timer_;
  std::optional<TimerId> reap_timer_;
  // Timers deleting finished applications' container logs (log_retention_ms), by app.
  std::map<std::string, TimerId> log_deletions_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_NODE_MANAGER_H_
