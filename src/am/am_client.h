// Copyright Weft authors. A small synchronous C++ API for ApplicationMasters: AmRmClient
// speaks AmService to the RM, NmClient ContainerService to NodeManagers.
#ifndef WEFT_AM_AM_CLIENT_H_
#define WEFT_AM_AM_CLIENT_H_

#include <grpcpp/security/credentials.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/rm_failover.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"

namespace weft::am {

// What an AM container finds in its environment (set by the RM's AM launcher).
struct AmEnvironment {
  // WEFT_RM_ADDRESS: the RM's AmService, "host:port", or the RMs of an HA cluster,
  // "host:port,host:port,..." (common/rm_failover.h).
  std::string rm_address;
  std::string application_id;  // WEFT_APPLICATION_ID
  std::string attempt_id;      // WEFT_APP_ATTEMPT_ID
  v1::Token amrm_token;        // the file WEFT_TOKEN_FILE_AMRM names (the serialized token)
  // The cluster CA certificate (PEM) from the file WEFT_TLS_CA_FILE names: the AM then speaks
  // TLS to the RM and the NMs and verifies them. "" when the variable is unset (a cluster
  // without TLS): plaintext.
  std::string tls_ca_pem;
};
// Channel credentials for `env`: TLS verified against env.tls_ca_pem, or plaintext without it.
std::shared_ptr<grpc::ChannelCredentials> AmChannelCredentials(const AmEnvironment& env);
// Reads the variables above; the error names the missing or malformed one.
absl::StatusOr<AmEnvironment> ReadAmEnvironment();

// How an AmRmClient rides out an RM that cannot be reached (down, restarting, or failing
// over): a call that fails with UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED (the client
// cancels nothing: a server shutting down did) is tried again, on a new channel, after a wait
// that doubles from retry_initial_ms up to retry_max_ms, until the waits of one outage add up
// to max_outage_ms; then the call returns its last error. Times are ms. With several RMs
// (WEFT_RM_ADDRESS a list), an UNAVAILABLE or DEADLINE_EXCEEDED moves the client to the active
// a standby named in its reply, tried at once without a wait (unless the previous try did that
// already), or else to the next RM of the list, tried after the wait. The default outage
// bound is the RM's default AM expiry (RmOptions::am_expiry_ms): an AM silent for longer has
// lost its attempt anyway.
struct AmRmClientOptions {
  int64_t call_timeout_ms = 30000;  // deadline of one try
  int64_t retry_initial_ms = 100;
  // 0.5 s: an RM failover or restart takes 1-3 s, and two tries a second per AM is no load.
  int64_t retry_max_ms = 500;
  int64_t max_outage_ms = 600000;
  // Waits between tries; null = sleeps the calling thread. Tests inject their own.
  std::function<void(int64_t ms)> sleep_ms;
};

// Synchronous AmService client for one attempt. Not thread-safe: one AM thread uses it.
// Allocate() follows YARN's response_id protocol, retrying a lost reply with the same id.
// Every call rides out an unreachable RM (AmRmClientOptions). When a restarted RM answers
// Allocate with AM_RESYNC, the client registers again and sends its whole ask table (the
// latest count of every ask ever made) with the queued releases, as YARN's AMRMClient does;
// the containers the RM recovered come back in the reply's containers_from_previous_attempts.
class AmRmClient {
 public:
  // Errors: InvalidArgument when env.rm_address is not an RM address list (naming the bad
  // entry). Connecting itself waits for nothing: the first call reaches the RM.
  static absl::StatusOr<std::unique_ptr<AmRmClient>> Connect(const AmEnvironment& env,
                                                             AmRmClientOptions options = {});

  // The RM the client talks to now, "host:port".
  const std::string& rm_address() const { return failover_->current(); }

  // Registers the AM (`host` is also used when it registers again after a resync). Errors:
  // the RM's, or the last transport error once the outage bound is spent.
  absl::StatusOr<v1::RegisterApplicationMasterResponse> Register(const std::string& host);
  // Sends the asks/releases/blacklist changes queued since the last call, and progress.
  // Aborted when the RM tells the AM to shut down (or keeps asking it to resync). `wait_ms` > 0
  // makes it a long poll (AllocateRequest.wait_ms): the RM may hold a call with nothing new for
  // up to that long (capped at half the call deadline), answering as soon as it has news.
  absl::StatusOr<v1::AllocateResponse> Allocate(float progress, int64_t wait_ms = 0);
  absl::Status Finish(v1::FinalApplicationStatus status, const std::string& diagnostics);

  // Queues an ask (absolute count, as YARN's ResourceRequest) for the next Allocate, and
  // records it in the ask table under its key (priority, resource name, capability,
  // allocation_request_id).
  void Ask(const v1::ResourceRequest& request);
  void Release(const std::string& container_id) { releases_.push_back(container_id); }
  // Queues a resource update of a running container for the next Allocate (not kept across a
  // resync: the restarted RM's versions may differ). Granted updates come back in
  // AllocateResponse.updated_containers; an increase must then be taken to the NM
  // (NmClient::Update).
  void UpdateContainer(const v1::UpdateContainerRequest& update) { updates_.push_back(update); }

  // Times the RM asked this client to resync (it restarted) and the client registered again.
  int32_t resyncs() const { return resyncs_; }

 private:
  AmRmClient() = default;
  // One try with the call deadline and the AMRM token. On failure, `*active_hint` is the
  // active RM a standby named in its reply ("" when none).
  grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc,
                    std::string* active_hint);
  // Tries until success, an error that is not the RM's absence, or the outage bound.
  grpc::Status CallWithRetry(const char* what,
                             const std::function<grpc::Status(grpc::ClientContext*)>& rpc);
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterOnce();
  // A new channel and stub to the RM (failover_->current()).
  void Reconnect();

  AmEnvironment env_;
  AmRmClientOptions options_;
  std::optional<RmFailover> failover_;  // the RMs of WEFT_RM_ADDRESS; set by Connect
  std::unique_ptr<v1::AmService::Stub> stub_;
  std::string host_;
  int32_t response_id_ = 0;
  int32_t resyncs_ = 0;
  std::vector<v1::ResourceRequest> asks_;
  std::map<std::string, v1::ResourceRequest> ask_table_;  // by ask key
  std::vector<std::string> releases_;
  std::vector<v1::UpdateContainerRequest> updates_;
};

// Synchronous ContainerService client; one channel per node, created on first use.
class NmClient {
 public:
  // `credentials`: for every NM's ContainerService (AmChannelCredentials()).
  explicit NmClient(std::shared_ptr<grpc::ChannelCredentials> credentials)
      : credentials_(std::move(credentials)) {}
  // Starts `container` (with its token) running `command` (one shell string) and `env`.
  absl::Status Start(const v1::Container& container, const std::string& command,
                     const std::map<std::string, std::string>& env);
  absl::Status Stop(const v1::Container& container);
  // Applies a granted update on the container's NM (`container` as in UpdatedContainer: its
  // token carries the new resource and version).
  absl::Status Update(const v1::Container& container);
  absl::StatusOr<v1::ContainerStatus> Status(const v1::Container& container);

 private:
  v1::ContainerService::Stub* StubFor(const std::string& node_id);
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::map<std::string, std::unique_ptr<v1::ContainerService::Stub>> stubs_;
};

// The distributed shell (YARN's example AM): runs `num_containers` containers of `command`,
// each with `resource`, retrying a failed container up to `max_retries` times; finishes
// SUCCEEDED only when every container exited 0. A container the framework ended (released,
// preempted, killed by the RM, lost with its node) runs again without counting as a failure.
// It rides out an RM restart: each container runs once - those it started keep running, and
// a recovered container it does not know is released.
struct ShellAmOptions {
  int32_t num_containers = 1;
  std::string command;
  int64_t memory_mb = 256;
  int32_t vcores = 1;
  int64_t network_mbps = 0;
  // GPU of each container, thousandths (docs/gpu.md): 1-999 a share of one GPU, k x 1000 k
  // whole GPUs; 0 none.
  int64_t gpu_milli = 0;
  // With gpu_milli = k x 1000, k > 1: all of a container's GPUs from one topology group.
  bool gpu_same_group = false;
  int32_t max_retries = 3;
  // Seed 001's extensions (docs/scheduler.md). A placement spec in the distributed shell's
  // syntax ("zk=3,NOTIN,NODE,zk:web=2,IN,NODE,all/zk"): each part is a group of containers with
  // its tag and constraint, and the parts' counts replace num_containers.
  std::string placement_spec;
  std::string node_label;      // every container's node label ("" = default partition)
  int32_t gang = 0;            // > 0: containers are asked for in gangs of this many
  int64_t gang_timeout_ms = 0;
  // Dynamic negotiation (seed 001): once every container runs, their memory is changed to
  // each of these sizes (MiB) in turn, one step every resize_interval_ms (increases are taken
  // to the NM by the AM, decreases by the RM). Empty = never.
  std::vector<int64_t> resize_mb;
  int64_t resize_interval_ms = 5000;
  // The longest the RM holds one Allocate with nothing new (a long poll); the wait between
  // calls only when the RM answers empty at once.
  int64_t poll_interval_ms = 1000;
  int64_t timeout_ms = 0;          // 0 = none; then the AM finishes FAILED
  // How long an unreachable RM is waited for (AmRmClientOptions::max_outage_ms).
  int64_t rm_max_outage_ms = 600000;
};
// Runs the AM in this process using ReadAmEnvironment(); returns the process exit code
// (0 when the application SUCCEEDED). Progress and errors go to stderr.
int RunShellAm(const ShellAmOptions& options);

}  // namespace weft::am

#endif  // WEFT_AM_AM_CLIENT_H_
