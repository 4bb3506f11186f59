// Copyright Weft authors. The AMRMProxy's interceptor chain (YARN's RequestInterceptor
// pipeline, seed 004 "AMRMProxy"): every AmService call of one application attempt goes
// through a configured list of interceptors; each may act on it and forwards it to the next,
// and the last one talks to the RMs (`default`: the home RM only; `federation`: the home and
// secondary sub-clusters).
#ifndef WEFT_FEDERATION_AMRMPROXY_INTERCEPTOR_H_
#define WEFT_FEDERATION_AMRMPROXY_INTERCEPTOR_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "federation/amrmproxy/sub_cluster_rpc.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::amrmproxy {

class FederationView;
class AmrmProxyStateStore;
struct AttemptState;

// One application attempt as the NM launched its AM. Immutable.
struct AttemptContext {
  std::string application_id;
  std::string attempt_id;
  // The app's user, from the AM container's verified container token.
  std::string user;
  std::string am_container_id;
  // The home RM(s) the RM gave its AM (WEFT_RM_ADDRESS), an RM address list.
  std::string home_rm_address;
  // The real AMRM token the RM issued; the AM holds a proxy token instead.
  v1::Token amrm_token;
};

// Per-app quotas of the throttle interceptor (throttle_interceptor.h); 0 = no limit.
struct ThrottleOptions {
  // Containers asked for and not yet allocated (the sum of the `*` asks' counts).
  int64_t max_outstanding_containers = 0;
  // Memory of those, MB (sum of count x memory-mb of the `*` asks).
  int64_t max_outstanding_memory_mb = 0;
  // Containers allocated to the attempt over its life.
  int64_t max_total_containers = 0;
  // Allocate calls forwarded per second (a token bucket holding at most one second's worth).
  double max_allocates_per_second = 0;
  // Consecutive Allocate calls over a quota or the rate after which the AM is told
  // AM_SHUTDOWN and its app is finished FAILED; 0 = never.
  int32_t max_violations = 0;
};

// What the chain's interceptors may use. Pointers are not owned and outlive every chain.
struct InterceptorEnvironment {
  SubClusterRpc* rpc = nullptr;  // never null
  ThrottleOptions throttle;
  // Federation (null/empty without it).
  FederationView* federation = nullptr;
  std::string home_sub_cluster_id;  // this NM's sub-cluster: the home of AMs launched here
  // Clock (ms since the Unix epoch) and waits between a UAM's report polls; tests inject
  // their own.
  std::function<int64_t()> now_ms;
  std::function<void(int64_t ms)> sleep_ms;
  uint64_t seed = 1;  // the policies' random source
  // A secondary sub-cluster whose RM has failed every heartbeat for this long is dropped from
  // the app: its containers reach the AM as completed with CONTAINER_EXIT_LOST_NODE (the AM
  // runs them again elsewhere, as after a lost node) and it gets no more asks (YARN's
  // FederationInterceptor sub-cluster timeout). ms; > 0.
  int64_t secondary_timeout_ms = 15000;
  // Where the last step keeps what it needs to serve the attempt after an NM restart
  // (amrm_proxy_state.h); null = nowhere (the attempt dies with the NM).
  AmrmProxyStateStore* state_store = nullptr;
};

// Why an attempt's chain is shut down.
enum class AttemptEnd {
  // Its AM container ended at this NM (or was not there after an NM restart) without
  // unregistering: the app may start another attempt, which reuses the UAMs (seed 004 8a).
  kAttemptEnded,
  // Its application was cleaned up on this node: it is over, and so are its UAMs.
  kApplicationEnded,
};

// One step of an attempt's pipeline. Contract: the proxy calls one attempt's chain from one
// thread at a time, Register before Allocate; errors are returned to the AM as gRPC statuses
// (the interceptor adds what it was doing). The base class forwards every call to the next
// step; the last step (next() == nullptr) must override all three calls.
class RequestInterceptor {
 public:
  virtual ~RequestInterceptor() = default;

  virtual absl::string_view name() const = 0;

  virtual absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::RegisterApplicationMasterRequest& request);
  virtual absl::StatusOr<v1::AllocateResponse> Allocate(const v1::AllocateRequest& request);
  virtual absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::FinishApplicationMasterRequest& request);
  // The attempt is over at this NM (`why`): release what it holds in the RMs (the federation
  // interceptor kills the UAMs it did not finish when the app is over, and keeps them for the
  // next attempt otherwise). Forwards to the next step.
  virtual void Shutdown(AttemptEnd why);
  // Called once, before any other call, on a chain rebuilt after an NM restart: the last step
  // takes up what it kept (`state`, as it last wrote it). The AM's next Allocate is answered
  // AM_RESYNC: it registers again and states its whole ask table. Forwards to the next step.
  virtual void Recover(const AttemptState& state);

  // Sets the step calls are forwarded to (owned). Called once, when the chain is built.
  void SetNext(std::unique_ptr<RequestInterceptor> next) { next_ = std::move(next); }
  RequestInterceptor* next() const { return next_.get(); }

 private:
  std::unique_ptr<RequestInterceptor> next_;
};

// The interceptor names (`--amrmproxy-interceptors`): "throttle", and the last steps
// "default" and "federation".
std::vector<std::string> InterceptorNames();

// Checks a configured list: non-empty, known names, no repeats, a last step (default or
// federation) last and only last; "federation" needs `federation_enabled`.
// InvalidArgument naming the bad entry otherwise.
absl::Status ValidateInterceptorList(absl::Span<const std::string> names, bool federation_enabled);

// The default list: "default" without federation, "throttle,federation" with it.
std::vector<std::string> DefaultInterceptorList(bool federation_enabled);

// Builds the chain for one attempt, first step first. The errors of ValidateInterceptorList.
absl::StatusOr<std::unique_ptr<RequestInterceptor>> BuildInterceptorChain(
    absl::Span<const std::string> names, const AttemptContext& attempt,
    const InterceptorEnvironment& env);

// YARN's ResourceRequest key: priority, resource name, allocation_request_id, capability.
std::string AskKey(const v1::ResourceRequest& ask);

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_INTERCEPTOR_H_
