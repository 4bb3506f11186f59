// Copyright Weft authors. The AMRMProxy (seed 004, "AMRMProxy"; YARN's AMRMProxyService): an
// AmService in every NM, on the NM's own gRPC port. An AM launched on this NM talks only to it:
// the NM swaps the AM's AMRM token for a proxy token valid here only and points
// WEFT_RM_ADDRESS here (seed step 6). Each attempt's calls go through its interceptor chain
// (interceptor.h), whose last step talks to the RMs.
#ifndef WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_SERVICE_H_
#define WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_SERVICE_H_

#include <grpcpp/security/credentials.h>

#include <cstdint>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "federation/amrmproxy/amrm_proxy_state.h"
#include "federation/amrmproxy/federation_view.h"
#include "federation/amrmproxy/interceptor.h"
#include "federation/amrmproxy/proxy_token.h"
#include "federation/amrmproxy/sub_cluster_rpc.h"
#include "federation/policies/policy.h"
#include "federation/store/federation_store.h"
#include "weft/v1/am.grpc.pb.h"

namespace weft::amrmproxy {

struct AmrmProxyOptions {
  // The interceptor chain (ValidateInterceptorList); empty = DefaultInterceptorList().
  std::vector<std::string> interceptors;
  ThrottleOptions throttle;

  // Federation: this NM's sub-cluster (the home of the AMs launched here) and the federation
  // state store, both or neither. Without them the proxy only fronts the home RM.
  std::string sub_cluster_id;
  std::shared_ptr<federation::FederationStateStore> federation_store;
  // YARN's machine list (node, sub-cluster, rack); unset: the sub-clusters' node lists.
  std::optional<federation::SubClusterResolver> machine_list;
  int64_t federation_cache_ttl_ms = 10'000;
  int64_t membership_expiry_ms = 30000;  // as the routers' (ms): not usable when silent longer
  // InterceptorEnvironment::secondary_timeout_ms: a secondary failing this long is dropped.
  int64_t secondary_timeout_ms = 15000;

  // Threads running the AMs' calls (each blocks while its call is at the RMs). An AM's long poll
  // (AllocateRequest.wait_ms) goes to its home RM while fewer than worker_threads - 1 are held
  // there, so that one worker stays free for the other AMs' calls; past that it is answered at
  // once (back-pressure, as the RM's max_parked_allocates). A long poll reaches a home RM only
  // while the app has no secondary sub-cluster (their replies would wait for it).
  int worker_threads = 4;
  int64_t rm_call_timeout_ms = 10'000;
  // Talks to the RMs; null = gRPC with the credentials given to Create(). Tests inject fakes.
  std::shared_ptr<SubClusterRpc> rpc;
  // Clock and waits; null = the system's.
  std::function<int64_t()> now_ms;
  std::function<void(int64_t)> sleep_ms;

  // AMRMProxy recovery (YARN-6127): where the proxy keeps its token key and each attempt's
  // state (the NM's state store), so that a restarted NM goes on serving the AMs it re-attaches
  // to (Recover). Not owned; outlives the proxy; thread-safe. Null: all of it lives in memory
  // (an AM cannot call a restarted NM's proxy).
  AmrmProxyStateStore* state_store = nullptr;
};

// Checks options as Create() does (for the CLI). InvalidArgument naming the field.
absl::Status ValidateAmrmProxyOptions(const AmrmProxyOptions& options);

// Threading: gRPC's callback handlers authenticate the call (under mu_) and hand it to the
// proxy's worker threads, which finish it. One attempt's calls run one at a time (its entry's
// call_mu); different attempts' calls run in parallel. The NM's loop calls AddAttempt and the
// Remove functions, which never block on an RM: an attempt's Shutdown runs on a worker.
class AmrmProxyService {
 public:
  // `rm_credentials`: for calls to the RMs (TLS presenting the NM's certificate, the
  // federation-proxy identity; or plaintext in tests). InvalidArgument for bad options;
  // Internal when no random key can be drawn.
  static absl::StatusOr<std::unique_ptr<AmrmProxyService>> Create(
      AmrmProxyOptions options, std::shared_ptr<grpc::ChannelCredentials> rm_credentials);
  ~AmrmProxyService();  // Shutdown()

  // The AmService to register on the NM's server before it starts.
  grpc::Service* service();

  // Once the NM knows its node id ("host:port"): the proxy's address and what its tokens name.
  // Calls before are refused Unavailable.
  void Start(const std::string& node_id);
  const std::string& address() const { return address_; }

  // The launch of an AM container (its launch context carries the RM's AMRM token): the proxy
  // takes the attempt (context checked: the token is an AMRM token naming `attempt_id`, which
  // belongs to `application_id`) and returns the token the AM gets instead. AlreadyExists when
  // the attempt is served here already; InvalidArgument for a token or ids that do not fit;
  // FailedPrecondition before Start() or after Shutdown().
  absl::StatusOr<v1::Token> AddAttempt(const AttemptContext& attempt);
  // The AM container ended / the application was cleaned up on this node: its attempts'
  // chains are shut down (on a worker; AttemptEnd::kAttemptEnded / kApplicationEnded) and their
  // tokens refused from now on. An attempt that ended with UAMs kept for the app's next attempt
  // is remembered (and recorded) until its application is cleaned up here, which kills them.
  void RemoveAttemptOfContainer(const std::string& container_id);
  void RemoveApplication(const std::string& application_id);
  size_t num_attempts() const;
  // Attempts that ended here whose UAMs wait for the app's next attempt or its end.
  size_t num_ended_attempts() const;

  // After an NM restart, before the NM serves: takes up every attempt in the state store.
  // Those whose AM container runs (`am_running(container_id)`) are served again: the AM's
  // proxy token still verifies (the key is the stored one), its next Allocate is answered
  // AM_RESYNC and its registration re-attaches to the home and the UAMs. An attempt whose AM
  // container does not run is ended as RemoveAttemptOfContainer does. Errors: the store's
  // (nothing is taken up then); a record that cannot be served is logged and dropped.
  absl::Status Recover(const std::function<bool(const std::string&)>& am_running);

  // Runs what is queued, stops the workers. Attempts still served are dropped without
  // touching the RMs (their AMs die with the NM; a secondary RM expires a silent UAM).
  // Call after the gRPC server has shut down. Idempotent.
  void Shutdown();

 private:
  class Service;
  struct Entry {
    AttemptContext attempt;
    absl::Mutex call_mu;
    std::unique_ptr<RequestInterceptor> chain ABSL_GUARDED_BY(call_mu);
    bool ended ABSL_GUARDED_BY(call_mu) = false;
  };

  AmrmProxyService() = default;
  // The attempt's entry for a call presenting `token` (ProxyTokenSecretManager::Verify's
  // errors; PermissionDenied for an attempt not served here).
  absl::StatusOr<std::shared_ptr<Entry>> Authenticate(const v1::Token& token);
  // Queues `task` for a worker; false after Shutdown().
  bool Run(std::function<void()> task);
  // Takes one of the worker_threads - 1 long-poll slots; false when all are held.
  bool TakeLongPollSlot();
  void ReturnLongPollSlot() { long_polls_.fetch_sub(1); }
  void WorkerLoop();
  void Remove(std::vector<std::shared_ptr<Entry>> entries, AttemptEnd end, const std::string& why);
  // A chain for `attempt` (with a fresh seed).
  absl::StatusOr<std::unique_ptr<RequestInterceptor>> BuildChain(const AttemptContext& attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  AmrmProxyOptions options_;
  std::vector<std::string> interceptors_;
  std::shared_ptr<SubClusterRpc> rpc_;
  std::unique_ptr<FederationView> federation_;
  InterceptorEnvironment env_;
  std::string key_;
  std::unique_ptr<Service> service_;
  std::string address_;
  std::unique_ptr<ProxyTokenSecretManager> tokens_;  // set by Start()

  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_seed_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<Entry>> attempts_ ABSL_GUARDED_BY(mu_);  // by attempt
  // Ended attempts whose chains may still hold UAMs, by application id.
  std::multimap<std::string, std::shared_ptr<Entry>> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
  std::atomic<int> long_polls_{0};  // AM calls held at an RM now (TakeLongPollSlot)
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_SERVICE_H_
