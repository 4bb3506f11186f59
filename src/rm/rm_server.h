// Copyright Weft authors. The ResourceManager daemon: its event loop, state and gRPC services.
#ifndef WEFT_RM_RM_SERVER_H_
#define WEFT_RM_RM_SERVER_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/event_loop.h"
#include "common/metrics.h"
#include "rm/amrm_verifier.h"
#include "rm/client_auth.h"
#include "rm/federation_identity.h"
#include "rm/ha_elector.h"
#include "rm/loop_work.h"
#include "rm/node_directory.h"
#include "rm/resource_manager.h"
#include "security/secret_source.h"
#include "security/tls.h"
#include "store/state_store.h"

namespace grpc {
class CallbackServerContext;
class Server;
class ServerUnaryReactor;
class Status;
}  // namespace grpc

namespace weft::v1 {
class NodeHeartbeatRequest;
class NodeHeartbeatResponse;
}  // namespace weft::v1

namespace weft::rm {

// RmServerOptions::loop_poll_us: InvalidArgument, naming the value, outside -1..1,000,000.
absl::Status ValidateLoopPoll(int64_t loop_poll_us);

struct RmServerOptions {
  RmOptions rm;
  // Threads that finish the calls the RM loop answered (the reply's encoding and socket write);
  // -1 = a quarter of the cores (1..4), 0 = the loop finishes them itself.
  int call_finishers = -1;
  // NM heartbeats reach the loop in batches: the first heartbeat of a batch schedules one loop
  // task this many ms later (0..100), the heartbeats arriving meanwhile join it, and their
  // replies go to one finisher as one task. At 10,000 heartbeats/s that is one wake-up of the
  // loop and of a finisher per ms rather than two per heartbeat; each heartbeat waits up to
  // this long (+1 ms, the loop's timer resolution) more. 0: each heartbeat is posted at once.
  int heartbeat_batch_ms = 1;
  // The RM loop's thread, out of work, polls for new work this many µs before it sleeps
  // (ThreadEventLoop::Start): 0 sleeps at once; -1 never sleeps, keeping a core for the loop
  // (on a server with cores to spare: its events then cost less, docs/performance.md); at
  // most 1,000,000.
  int64_t loop_poll_us = 0;  // ValidateLoopPoll checks it
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 0;                         // ClientService, AmService, TrackerService, AdminService
  std::string state_store_path;         // SQLite file; "" = in memory (state lost on exit)
  // How ClientService and AdminService callers are authenticated (MUNGE by default), who may
  // act as others and who is a cluster admin (client_auth.h).
  ClientAuthOptions auth;
  // The admin secret (auth.admin_secret): whoever presents it in metadata "weft-secret" is a
  // cluster admin. Empty: none is accepted.
  std::string client_secret;
  // Starts AM containers; null = the real one (ContainerService on the AM's node). Benchmarks
  // with simulated nodes inject their own.
  std::unique_ptr<AmLauncher> launcher;
  // Mutual TLS (security/tls.h; `weft rm` and `weft dev` always set it). The RM serves its
  // port with this certificate and requests clients' certificates: TrackerService calls must
  // present one naming the node they speak for (nm/<node id>), so master keys reach only
  // authenticated NMs; users and AMs authenticate otherwise. AM launches present it to the
  // NMs. Unset: plaintext, and TrackerService believes the node ids callers name - FOR
  // IN-PROCESS TESTS AND BENCHMARKS only, whose NMs are the test's own.
  std::optional<security::TlsFiles> tls;
  // High availability (docs/cluster.md): set, this RM is one of several that elect their active
  // on ZooKeeper and share a state store there (state_store_path must be empty). It starts as a
  // standby, runs for leadership once JoinElection() is called, and serves only while active;
  // as a standby it answers every call but GetServiceState with UNAVAILABLE, naming the active
  // (message, and trailing metadata "weft-active-rm" = its host:port when known).
  std::optional<HaOptions> ha;
  // Federation (docs/federation.md): this RM is a sub-cluster (rm.sub_cluster_id is set). Its
  // ClientService then also accepts routers, NMs (AMRMProxies), the GPG and other sub-clusters'
  // RMs of the federation, by their mutual-TLS certificates from the federation's CA, each
  // for what its role may do (rm/federation_identity.h; docs/security.md "Federation
  // identities"), acting for the user they name in "weft-user". Needs `tls`. It also takes
  // application ids of other sub-clusters' RMs (a router takes ids from any sub-cluster).
  bool federation_proxies = false;
  // With federation_proxies: the federation store, where this RM checks what NMs and the GPG
  // claim (an app's home record), and finds the other sub-clusters' RMs to ask where an app's
  // AM runs. Not owned; must outlive the server. Null: NMs may only list nodes and the GPG
  // only read (every claim about an app is refused, saying so).
  federation::FederationStateStore* federation_store = nullptr;
  // For tests: used instead of the directory over `federation_store`.
  std::shared_ptr<FederationDirectory> federation_directory;
};

// This RM's part in HA, for the web server and GetServiceState.
struct HaStatus {
  bool enabled = false;              // false: no HA, always active
  bool active = false;               // serving as the active now
  std::string rm_id;                 // HaOptions::rm_id
  std::optional<LeaderInfo> leader;  // the active as last seen (this RM's own when active)
};

// Owns a ThreadEventLoop (the only thread touching RM state), the state store and one gRPC
// server for all RM services. Handlers use gRPC's callback API: they post the call to the loop
// and finish it from there, so no RPC holds a lock or blocks a gRPC thread on RM state.
//
// Metadata: AmService calls carry the attempt's AMRM token, serialized, under
// "weft-amrm-token-bin"; ClientService and AdminService calls carry a MUNGE credential under
// "weft-munge-cred" (or the admin secret under "weft-secret") and, to act as another user (proxy
// users and the secret only), that user under "weft-user".
class RmServer {
 public:
  static absl::StatusOr<std::unique_ptr<RmServer>> Start(RmServerOptions options);
  ~RmServer();  // Shutdown()

  std::string address() const;  // host:port actually bound
  int port() const { return port_; }
  // Runs `fn` on the RM loop and waits for it (tests and tools only).
  void RunOnLoop(std::function<void(ResourceManager&)> fn);
  // Runs `fn` on the RM loop later (not after Shutdown). Thread-safe.
  void Post(std::function<void(ResourceManager&)> fn);
  // The RM's live metrics: scheduler pass durations and RPC latencies (filled by the server;
  // the web layer adds the cluster's figures). Thread-safe.
  metrics::Registry& metrics() { return metrics_; }
  // Where the loop's time went so far (rm/loop_work.h); waits for the loop.
  LoopStats LoopStatistics();
  // The RM loop's clock (ms since the Unix epoch). Thread-safe.
  int64_t NowMs() const { return loop_.NowMs(); }
  // When non-empty, the admin secret.
  const std::string& client_secret() const { return options_.client_secret; }
  // With HA: starts running for leadership (this RM serves from when it wins). `http_address`
  // (host:port, "" for none) goes into the leader node so that standbys can redirect web
  // clients. FailedPrecondition without HA or when called twice.
  absl::Status JoinElection(const std::string& http_address);
  // This RM's HA state. Thread-safe.
  HaStatus ha_status() const;
  // Authenticates a caller as ClientService does (for the REST API). Thread-safe.
  absl::StatusOr<Caller> Authenticate(const Presented& presented) const {
    return AuthenticateClient(options_.auth, presented);
  }
  void Shutdown();

 private:
  RmServer() = default;
  class Calls;  // rm_server_calls.h
  class Services;
  class PassMetrics;
  void RecordRpc(const char* method, std::chrono::steady_clock::time_point start,
                 absl::StatusCode code);
  // Runs `fn` on the loop and waits for it to finish (not from the loop).
  void WaitOnLoop(const std::function<void()>& fn);
  // A NodeHeartbeat call whose node was checked, waiting for the loop
  // (RmServerOptions::heartbeat_batch_ms).
  struct PendingHeartbeat {
    std::chrono::steady_clock::time_point start;  // when it arrived
    grpc::CallbackServerContext* ctx;
    grpc::ServerUnaryReactor* reactor;
    const v1::NodeHeartbeatRequest* request;
    v1::NodeHeartbeatResponse* response;
    // The node as the receiving thread found it in `directory` (null: not found, or no RM);
    // the loop uses it only while `directory` is its RM's (held here, so never a new one at
    // the same address).
    std::shared_ptr<const NodeDirectory> directory;
    RmNode* node = nullptr;
  };
  // Thread-safe: joins the batch, scheduling the batch's loop task when it is the first.
  void AddHeartbeat(PendingHeartbeat heartbeat);
  // On the loop: answers every heartbeat of the batch, then hands their replies to one
  // finisher as one task.
  void DrainHeartbeats();
  // Creates the ResourceManager over `store_` on the loop (recovering what the store holds).
  absl::Status CreateRm();
  // What AMs are told (WEFT_RM_ADDRESS): every HA RM's address, else this one's.
  std::string AmFacingAddress() const;
  // HA transitions, from the elector's thread: open the ZooKeeper store (fencing any earlier
  // active) and create the RM; destroy the RM and close the store.
  absl::Status BecomeActive();
  void BecomeStandby(const std::string& reason);
  // The standby's answer to a call (on the loop, while rm_ is null): UNAVAILABLE naming the
  // active; adds its address as trailing metadata "weft-active-rm" when known.
  grpc::Status StandbyStatus(grpc::CallbackServerContext* ctx) const;

  RmServerOptions options_;
  metrics::Registry metrics_;                  // before loop_: the loop's tasks record into it
  std::unique_ptr<PassMetrics> pass_metrics_;  // the RM's pass observer unless one was given
  LoopWork loop_work_{&metrics_};              // on the loop thread only
  // RecordRpc's series by method (a string literal, keyed by address) and status code.
  absl::Mutex rpc_series_mu_;
  absl::flat_hash_map<const char*, metrics::Histogram*> rpc_durations_
      ABSL_GUARDED_BY(rpc_series_mu_);
  absl::flat_hash_map<std::pair<const char*, absl::StatusCode>, metrics::Counter*> rpc_requests_
      ABSL_GUARDED_BY(rpc_series_mu_);
  ThreadEventLoop loop_;
  std::unique_ptr<store::StateStore> store_;
  std::unique_ptr<security::SecretSource> secrets_;
  std::unique_ptr<AmLauncher> launcher_;
  std::unique_ptr<ResourceManager> rm_;
  std::unique_ptr<Services> services_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::unique_ptr<LeaderElector> elector_;  // with HA, after JoinElection()
  // Federation claims of NMs and the GPG are judged on these threads (they read the store and
  // ask other RMs, never on the RM loop nor on gRPC's threads); null without a directory.
  std::shared_ptr<FederationDirectory> directory_;
  // Also where a sub-cluster RM reads and writes the federation store for its fencing
  // (federation_fencing.h). Empty without a directory or a sub-cluster's federation store.
  // Threads that finish calls the loop answered (RecordRpc, then the reactor's Finish: the
  // reply's encoding and socket write), so that the loop does not; round robin.
  std::vector<std::unique_ptr<ThreadEventLoop>> finishers_;
  std::atomic<uint64_t> next_finisher_{0};
  // Runs `finish` (replies' encoding and socket writes) on the next finisher, round robin, or
  // here when there are none (call_finishers = 0: the loop finishes).
  void HandToFinisher(Task finish) {
    if (finishers_.empty()) {
      std::move(finish)();
      return;
    }
    finishers_[next_finisher_.fetch_add(1, std::memory_order_relaxed) % finishers_.size()]->Post(
        std::move(finish));
  }
  std::vector<std::unique_ptr<ThreadEventLoop>> claim_checkers_;
  std::atomic<uint64_t> next_checker_{0};
  ThreadEventLoop& NextClaimChecker() {
    return *claim_checkers_[next_checker_.fetch_add(1) % claim_checkers_.size()];
  }
  // What of rm_ the threads that receive calls may use (set and cleared on the loop with it):
  // its node index for heartbeats, and its AMRM keys for AMs' tokens. Null without an RM.
  struct RmViews {
    std::shared_ptr<const NodeDirectory> nodes;
    std::shared_ptr<const AmRmVerifier> amrm;
  };
  absl::Mutex views_mu_;
  RmViews views_ ABSL_GUARDED_BY(views_mu_);
  void SetViews(RmViews views) {
    absl::MutexLock l(&views_mu_);
    views_ = std::move(views);
  }
  std::shared_ptr<const NodeDirectory> NodesView() {
    absl::MutexLock l(&views_mu_);
    return views_.nodes;
  }
  std::shared_ptr<const AmRmVerifier> AmRmView() {
    absl::MutexLock l(&views_mu_);
    return views_.amrm;
  }
  absl::Mutex heartbeats_mu_;
  std::vector<PendingHeartbeat> heartbeats_ ABSL_GUARDED_BY(heartbeats_mu_);  // the batch
  bool heartbeat_drain_scheduled_ ABSL_GUARDED_BY(heartbeats_mu_) = false;
  mutable absl::Mutex ha_mu_;
  bool active_ ABSL_GUARDED_BY(ha_mu_) = false;  // rm_ exists (set on the loop)
};

// Starts AM containers with ContainerService.StartContainers on the node (async gRPC client).
std::unique_ptr<AmLauncher> NewGrpcAmLauncher(const std::optional<security::TlsFiles>& tls);

}  // namespace weft::rm

#endif  // WEFT_RM_RM_SERVER_H_
