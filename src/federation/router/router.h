// Copyright Weft authors. The federation router's logic (seed 004 "Router"; YARN's
// FederationClientInterceptor): ClientService over many sub-clusters. An app's home is chosen
// by its queue's router policy among the usable sub-clusters, persisted in the federation
// store before the submission is forwarded, and read back from the store to serve the app, so
// the router is soft state: any router over the same store serves every app.
#ifndef WEFT_FEDERATION_ROUTER_ROUTER_H_
#define WEFT_FEDERATION_ROUTER_ROUTER_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics.h"
#include "federation/policies/policy.h"
#include "federation/router/sub_cluster_client.h"
#include "federation/store/federation_store.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

struct RouterOptions {
  std::string router_id = "router";  // names it in logs, metrics and as "router/<id>"
  // A sub-cluster whose last heartbeat is older than this is not chosen and not asked (YARN's
  // membership expiry), ms.
  int64_t membership_expiry_ms = 30000;
  // Sub-clusters a submission is tried on before it fails (YARN's yarn.router.submit.retry).
  int submit_retries = 3;
  // How long the router believes what it read from the store (app homes, membership, queue
  // policies), ms; 0 = reads the store every time (YARN's yarn.federation.cache-ttl.secs).
  int64_t cache_ttl_ms = 60000;
  // Deadline of one call to a sub-cluster RM, ms; fan-outs wait at most this for the slowest.
  int64_t call_timeout_ms = 10000;
  // The router's mutual-TLS credentials for calls to the RMs (its router certificate); null =
  // plaintext (in-process tests only).
  std::shared_ptr<grpc::ChannelCredentials> outbound_credentials;
  // Submission contexts kept in memory to resubmit apps whose home is lost (see
  // GetApplication); 0 = none kept.
  size_t max_kept_submissions = 10000;
  // ms since the Unix epoch; null = the wall clock.
  std::function<int64_t()> now_ms;
  uint64_t seed = 0;  // the policies' random source; 0 = from std::random_device
};

// InvalidArgument naming the option otherwise.
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
  // not answer). Unavailable when no sub-cluster is usable or none answers.
  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const std::string& user);
  // The queue's policy (store: the queue's configuration, else "*", else
  // DefaultPolicyConfiguration()) chooses the home among the usable sub-clusters; the mapping
  // is written to the store (AddApplicationHomeSubCluster: a router that lost a race uses the
  // winner's home) and then the submission is forwarded. A forward that fails is tried on
  // another sub-cluster (the mapping updated) up to submit_retries times, unless the RM's
  // answer is the caller's fault (InvalidArgument, PermissionDenied, Unauthenticated), which
  // is returned as is and removes the mapping. AlreadyExists from the home is success.
  absl::Status SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                 const std::string& user);
  // The app's report from its home (store, cached cache_ttl_ms). An app without a mapping
  // (submitted to a sub-cluster directly) is looked for on every live sub-cluster. When the
  // home is lost (SC_LOST, or silent beyond the membership expiry), the queue's policy says
  // resubmit_on_sub_cluster_loss, the app is resubmitted to another sub-cluster from the
  // submission its mapping keeps (else the one this router forwarded, kept in memory), and its
  // new home answers.
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id,
                                                       const std::string& user);
  absl::StatusOr<v1::GetApplicationAttemptsResponse> GetApplicationAttempts(
      const std::string& app_id, const std::string& user);
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

  // Membership, cached cache_ttl_ms; `fresh` bypasses the cache. A store error with a cached
  // view returns the cached view (logged).
  absl::StatusOr<std::vector<v1::SubClusterInfo>> Members(bool fresh);
  std::vector<v1::SubClusterInfo> UsableMembers(const std::vector<v1::SubClusterInfo>& all) const;
  std::vector<v1::SubClusterInfo> LiveMembers(const std::vector<v1::SubClusterInfo>& all) const;
  // The app's home sub-cluster id from the cache or the store; NotFound without a mapping.
  absl::StatusOr<std::string> HomeOf(const std::string& app_id, bool fresh);
  void CacheHome(const std::string& app_id, const std::string& home);
  void ForgetHome(const std::string& app_id);
  // The queue's policy configuration: its own, else "*", else the default.
  absl::StatusOr<v1::SubClusterPolicyConfiguration> PolicyConfigOf(const std::string& queue);
  absl::StatusOr<const RouterPolicy*> PolicyNamed(const std::string& name);
  // Whether the sub-cluster is gone: SC_LOST, or running and silent beyond the expiry.
  bool IsLost(const v1::SubClusterInfo& sc) const;
  // The live sub-clusters a fan-out asks; Unavailable naming the registered ones when none is.
  absl::StatusOr<std::vector<v1::SubClusterInfo>> LiveTargets();
  // The member record of the app's home (the store, else the sub-cluster that knows it).
  absl::StatusOr<v1::SubClusterInfo> HomeMember(const std::string& app_id, const std::string& user);
  // The member record of `sub_cluster_id`; Unavailable naming it when it is not registered.
  absl::StatusOr<v1::SubClusterInfo> MemberNamed(const std::string& sub_cluster_id);

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

  // Forwards a submission to `home` and interprets the answer (AlreadyExists is success; a
  // DEADLINE_EXCEEDED is checked with GetApplication there: the RM may have applied it).
  absl::Status ForwardSubmission(const v1::SubClusterInfo& home,
                                 const v1::ApplicationSubmissionContext& context,
                                 const std::string& user);
  // Chooses a home outside `exclude` and submits there, up to submit_retries times; `first`:
  // the app has no mapping yet (Add), else the mapping is updated.
  absl::Status PlaceAndSubmit(const v1::ApplicationSubmissionContext& context,
                              const std::string& user, std::vector<std::string> exclude,
                              bool first);
  void KeepSubmission(const v1::ApplicationSubmissionContext& context);
  std::optional<v1::ApplicationSubmissionContext> KeptSubmission(const std::string& app_id);
  // Resubmits an app whose home `lost` is gone (GetApplication); its new home, or an error.
  absl::StatusOr<std::string> ResubmitLost(const std::string& app_id, const std::string& lost);

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
  // Submission contexts forwarded by this router, oldest first (max_kept_submissions).
  std::map<std::string, v1::ApplicationSubmissionContext> kept_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> kept_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_ROUTER_H_
