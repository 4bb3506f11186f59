// Copyright Weft authors. The federation router's logic (seed 004 "Router"; YARN's
// FederationClientInterceptor): ClientService over many sub-clusters. An app's home is chosen
// by its queue's router policy among the usable sub-clusters, persisted in the federation
// store before the submission is forwarded, and read back from the store to serve the app, so
// the router is soft state: any router over the same store serves every app.
#ifndef WEFT_FEDERATION_ROUTER_ROUTER_H_
#define WEFT_FEDERATION_ROUTER_ROUTER_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "federation/policies/in_flight_ledger.h"
#include "federation/policies/policy.h"
#include "federation/router/sub_cluster_client.h"
#include "federation/store/federation_store.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

// The router's defaults. A cached membership view is believed for kDefaultRouterCacheTtlMs,
// well under the membership expiry, so that a sub-cluster heartbeating every
// kDefaultHeartbeatIntervalMs (5 s) never looks expired to a router (see ValidateRouterOptions).
inline constexpr int64_t kDefaultRouterMembershipExpiryMs = 30000;
inline constexpr int64_t kDefaultRouterCacheTtlMs = 5000;
// How long an issued application id may be submitted under (YARN has no limit; an hour lets a
// client that crashed between GetNewApplication and the submission retry).
inline constexpr int64_t kDefaultIssuedIdTtlMs = 3600 * 1000;

struct RouterOptions {
  std::string router_id = "router";  // names it in logs, metrics and as "router/<id>"
  // A sub-cluster whose last heartbeat is older than this is not chosen and not asked (YARN's
  // membership expiry), ms.
  int64_t membership_expiry_ms = kDefaultRouterMembershipExpiryMs;
  // Sub-clusters a submission is tried on before it fails (YARN's yarn.router.submit.retry).
  // Only a sub-cluster that did not answer is followed by another: an RM's refusal of the
  // submission is final.
  int submit_retries = 3;
  // How long the router believes what it read from the store (app homes, membership, queue
  // policies), ms; 0 = reads the store every time (YARN's yarn.federation.cache-ttl.secs). At
  // most half of membership_expiry_ms. A cached membership view is judged at the time it was
  // read, and read again when it has no usable sub-cluster, so a cache never makes sub-clusters
  // that heartbeat look expired.
  int64_t cache_ttl_ms = kDefaultRouterCacheTtlMs;
  // Deadline of one call to a sub-cluster RM, ms; fan-outs wait at most this for the slowest.
  int64_t call_timeout_ms = 10000;
  // The router's mutual-TLS credentials for calls to the RMs (its router certificate); null =
  // plaintext (in-process tests only).
  std::shared_ptr<grpc::ChannelCredentials> outbound_credentials;
  // How long an application id the federation issued (NewApplication, through any router) may
  // be submitted under, ms. Issued ids are recorded in the store; the GPG deletes those older
  // than this (DeleteIssuedApplicationIdsBefore), so every router and the GPG use one value.
  int64_t issued_id_ttl_ms = kDefaultIssuedIdTtlMs;
  // ms since the Unix epoch; null = the wall clock.
  std::function<int64_t()> now_ms;
  uint64_t seed = 0;  // the policies' random source; 0 = from std::random_device
};

// InvalidArgument naming the option (by its `weft router` flag) otherwise; a cache TTL longer
// than half the membership expiry is refused naming both.
absl::Status ValidateRouterOptions(const RouterOptions& options);

// Thread-safe: every gRPC and HTTP thread calls it. Calls block on the store and the RMs
// (bounded by call_timeout_ms per RM call). `user` is the caller the router authenticated; the
// RMs are called as that user and apply their own ACLs.
class Router {
 public:
  // `store` is not owned and must outlive the router.
  static absl::StatusOr<std::unique_ptr<Router>> Create(RouterOptions options,
                                                        FederationStateStore* store);

  // An application id from a usable sub-cluster chosen at random (another one when it does
  // not answer), recorded in the store as issued to `user` (AddIssuedApplicationId): any router
  // over the same store then takes a submission under it from `user`. An id the federation
  // issued before, or that has a home already (an RM that reuses a cluster timestamp), is not
  // handed out: another one is asked for. Unavailable when no sub-cluster is usable or none
  // answers; the store's error when the issue cannot be recorded.
  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const std::string& user);
  // Submits an app whose id the federation issued to `user` (NewApplication through any router
  // over the same store, within issued_id_ttl_ms): InvalidArgument naming the id when it was
  // never issued (a caller-chosen id) or the issue expired, PermissionDenied when it was issued
  // to another user. The queue's policy (store: the queue's configuration, else "*",
  // else DefaultPolicyConfiguration()) chooses the home among the usable sub-clusters; the
  // mapping, with the submission, is written to the store (AddApplicationHomeSubCluster), the
  // issued record deleted (the home now guards the id), and then the submission is forwarded. A
  // forward that the RM did not answer (unavailable, timed out, internal error) is tried on another
  // sub-cluster (the mapping updated) up to submit_retries times; an RM's refusal (any other error,
  // AlreadyExists included) is returned with context and removes the mapping: a refused id is never
  // offered to another sub-cluster. A retried submission - the same user and the same submission as
  // the mapping keeps, through any router - goes to its home again and succeeds when the home has
  // it (idempotent); a different submission under an id that has a home is AlreadyExists.
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const std::string& user);
  // The app's report from its home (store, cached cache_ttl_ms). An app without a mapping
  // (submitted to a sub-cluster directly) is looked for on every live sub-cluster. A read
  // only: it writes nothing to the store and never resubmits. When the home is lost (SC_LOST,
  // or silent beyond the membership expiry) the home is still asked (it may answer); when it
  // does not, the error says the home is lost (the GPG resubmits the apps of a LOST
  // sub-cluster when their queue's policy says so).
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id,
                                                       const std::string& user);
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id, const std::string& user);
  // Kills the app at its home, then, when the home answered OK, on every other live
  // sub-cluster that has an app with its id (its unmanaged AMs in secondary sub-clusters, which
  // carry the home app's id), best-effort: those answers are logged, not returned. The reply
  // is the home's.
  absl::StatusOr<v1::KillApplicationResponse> KillApplication(
      const v1::KillApplicationRequest& request, const std::string& user);
  // Fan-outs to every live sub-cluster (not SC_UNREGISTERED, SC_DECOMMISSIONED or SC_LOST,
  // heard from within the expiry). A sub-cluster that does not answer is logged and skipped;
  // Unavailable only when none answers.
  absl::StatusOr<v1::ListApplicationsResponse> ListApplications(
      const v1::ListApplicationsRequest& request, const std::string& user);
  absl::StatusOr<v1::GetClusterMetricsResponse> GetClusterMetrics(const std::string& user);
  absl::StatusOr<v1::ListNodesResponse> ListNodes(const v1::ListNodesRequest& request,
                                                  const std::string& user);
  // The queue merged over the sub-clusters that have it; NotFound when none has.
  absl::StatusOr<v1::GetQueueResponse> GetQueue(const v1::GetQueueRequest& request,
                                                const std::string& user);

  // Every sub-cluster's membership record, fresh from the store (the web UI).
  absl::StatusOr<std::vector<v1::SubClusterInfo>> SubClusters();
  // Whether `info` may be chosen now (IsSubClusterUsable with this router's expiry).
  bool Usable(const v1::SubClusterInfo& info) const;

  const RouterOptions& options() const { return options_; }
  std::string store_description() const { return store_->Describe(); }
  int64_t NowMs() const;
  // weft_router_* counters: submissions, forwards and failures per sub-cluster. Thread-safe.
  metrics::Registry& metrics() { return metrics_; }

 private:
  Router(RouterOptions options, FederationStateStore* store);

  // The membership records and when they were read from the store (ms): usability is judged
  // against that time, never against a later one, so a cached view cannot show a sub-cluster
  // that heartbeats as expired.
  struct MembershipView {
    std::vector<v1::SubClusterInfo> members;
    int64_t read_ms = 0;
  };
  // Membership, cached cache_ttl_ms; `fresh` bypasses the cache, and a cached view without a
  // usable sub-cluster is read again. A store error with a cached view returns the cached view
  // (logged).
  absl::StatusOr<MembershipView> Members(bool fresh);
  std::vector<v1::SubClusterInfo> UsableMembers(const MembershipView& view) const;
  std::vector<v1::SubClusterInfo> LiveMembers(const MembershipView& view) const;
  // The app's home sub-cluster id from the cache or the store; NotFound without a mapping.
  absl::StatusOr<std::string> HomeOf(const std::string& app_id, bool fresh);
  void CacheHome(const std::string& app_id, const std::string& home);
  void ForgetHome(const std::string& app_id);
  // The queue's policy configuration: its own, else "*", else the default.
  absl::StatusOr<v1::SubClusterPolicyConfiguration> PolicyConfigOf(const std::string& queue);
  absl::StatusOr<const RouterPolicy*> PolicyNamed(const std::string& name);
  // Whether the sub-cluster is gone at `at_ms` (a view's read time): SC_LOST, or running and
  // silent beyond the expiry.
  bool IsLost(const v1::SubClusterInfo& sc, int64_t at_ms) const;
  // The live sub-clusters a fan-out asks; Unavailable naming the registered ones when none is.
  absl::StatusOr<std::vector<v1::SubClusterInfo>> LiveTargets();
  // The member record of the app's home (the store, else the sub-cluster that knows it).
  absl::StatusOr<v1::SubClusterInfo> HomeMember(const std::string& app_id, const std::string& user);
  // The member record of `sub_cluster_id`; Unavailable naming it when it is not registered.
  // `read_ms`, when given, receives the time of the view it came from.
  absl::StatusOr<v1::SubClusterInfo> MemberNamed(const std::string& sub_cluster_id,
                                                 int64_t* read_ms = nullptr);

  // One call on `sc`, counted in the forward metrics under `method`.
  absl::Status Forward(const v1::SubClusterInfo& sc, const std::string& user, const char* method,
                       const SubClusterRpc& rpc);
  template <typename Request, typename Response>
  absl::StatusOr<Response> ForwardCall(const v1::SubClusterInfo& sc, const std::string& user,
                                       const char* method,
                                       grpc::Status (v1::ClientService::Stub::*call)(
                                           grpc::ClientContext*, const Request&, Response*),
                                       const Request& request);
  // The same call on every sub-cluster of `targets` at once; each one's answer in order.
  template <typename Request, typename Response>
  std::vector<absl::StatusOr<Response>> FanOut(const std::vector<v1::SubClusterInfo>& targets,
                                               const std::string& user, const char* method,
                                               grpc::Status (v1::ClientService::Stub::*call)(
                                                   grpc::ClientContext*, const Request&, Response*),
                                               const Request& request);

  // Forwards a submission to `home` and interprets the answer (a DEADLINE_EXCEEDED is checked
  // with GetApplication there: the RM may have applied it). AlreadyExists is success only for
  // a `retry` of a submission the store already holds.
  absl::Status ForwardSubmission(const v1::SubClusterInfo& home,
                                 const v1::ApplicationSubmissionContext& context,
                                 const std::string& user, bool retry);
  // Chooses a home outside `exclude` and submits there, up to submit_retries times (the app
  // has no mapping yet).
  absl::Status PlaceAndSubmit(const v1::ApplicationSubmissionContext& context,
                              const std::string& user, std::vector<std::string> exclude);
  // Records `app_id`, which `sub_cluster_id`'s RM handed out, in the store as issued to
  // `user`. AlreadyExists when the federation issued it before or it has a home; the store's
  // error otherwise.
  absl::Status RecordIssued(const std::string& app_id, const std::string& user,
                            const std::string& sub_cluster_id);
  // OK when the store holds `app_id` as issued to `user` within issued_id_ttl_ms; the refusal
  // naming the id otherwise (InvalidArgument, PermissionDenied, or the store's error).
  absl::Status CheckIssued(const std::string& app_id, const std::string& user);
  // A submission under an id that has a home: forwarded there again when it is the same
  // submission by the same user (idempotent), AlreadyExists otherwise.
  absl::Status SubmitAgain(const v1::ApplicationHomeSubCluster& existing,
                           const v1::ApplicationSubmissionContext& context,
                           const std::string& user);

  void CountSubmission(const std::string& sub_cluster, absl::StatusCode code);
  // Which sub-cluster each node and rack belongs to, for the locality policy: built from the
  // live sub-clusters' node lists (asked as `user`), cached cache_ttl_ms.
  std::shared_ptr<const SubClusterResolver> Resolver(const std::string& user);

  const RouterOptions options_;
  FederationStateStore* const store_;
  SubClusterClients clients_;
  metrics::Registry metrics_;

  absl::Mutex mu_;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  // Homes this router chose that the sub-clusters' heartbeats do not show yet; a heartbeat 1 s
  // after a placement shows it (the store writes and the forward are done by then).
  InFlightLedger in_flight_ ABSL_GUARDED_BY(mu_){1000};
  std::vector<v1::SubClusterInfo> members_ ABSL_GUARDED_BY(mu_);
  int64_t members_read_ms_ ABSL_GUARDED_BY(mu_) = -1;  // -1: never read
  struct CachedHome {
    std::string home;
    int64_t read_ms = 0;
  };
  std::map<std::string, CachedHome> homes_ ABSL_GUARDED_BY(mu_);
  struct CachedConfig {
    v1::SubClusterPolicyConfiguration config;
    int64_t read_ms = 0;
  };
  std::map<std::string, CachedConfig> configs_ ABSL_GUARDED_BY(mu_);  // by queue
  std::shared_ptr<const SubClusterResolver> resolver_ ABSL_GUARDED_BY(mu_);
  int64_t resolver_read_ms_ ABSL_GUARDED_BY(mu_) = -1;
  std::map<std::string, std::unique_ptr<RouterPolicy>, std::less<>> policies_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_ROUTER_H_
