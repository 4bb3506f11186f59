// Copyright Weft authors.
#include "federation/router/router.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "federation/policies/registry.h"
#include "federation/router/merge.h"
#include "federation/router/router_internal.h"
#include "google/protobuf/util/message_differencer.h"

namespace weft::federation {
namespace {

using router_internal::Ids;
using router_internal::IsCallersFault;
using router_internal::RmDidNotAnswer;


// The fan-out's answers that came, each with the id of the sub-cluster that gave it (targets[i]
// gave answers[i]); the last failure when none came.
template <typename Response>
absl::StatusOr<std::vector<std::pair<std::string, Response>>> Answered(
    const std::vector<v1::SubClusterInfo>& targets, std::vector<absl::StatusOr<Response>> answers) {
  std::vector<std::pair<std::string, Response>> parts;
  absl::Status last;
  for (size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].ok()) {
      parts.emplace_back(targets[i].sub_cluster_id(), *std::move(answers[i]));
    } else {
      last = answers[i].status();
    }
  }
  if (parts.empty()) return last;
  return parts;
}

}  // namespace

absl::Status ValidateRouterOptions(const RouterOptions& o) {
  if (o.membership_expiry_ms <= 0)
    return absl::InvalidArgumentError(absl::StrCat("membership expiry (--membership-expiry-ms) ",
                                                   o.membership_expiry_ms, " must be > 0"));
  if (o.submit_retries < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("submit retries (--submit-retries) ", o.submit_retries, " must be >= 1"));
  if (o.cache_ttl_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("cache TTL (--cache-ttl-ms) ", o.cache_ttl_ms, " must be >= 0"));
  // A membership view believed longer than this lets a router act on what a sub-cluster said
  // more than half an expiry ago: a view read just before a sub-cluster's heartbeat is due
  // then ages past the expiry while the sub-cluster heartbeats on (the stale-cache window).
  if (o.cache_ttl_ms > o.membership_expiry_ms / 2)
    return absl::InvalidArgumentError(absl::StrCat(
        "--cache-ttl-ms ", o.cache_ttl_ms, " must be at most half of --membership-expiry-ms ",
        o.membership_expiry_ms,
        ": a membership view cached longer makes sub-clusters that heartbeat look expired "
        "(e.g. --cache-ttl-ms ",
        kDefaultRouterCacheTtlMs, " with --membership-expiry-ms ", kDefaultRouterMembershipExpiryMs,
        ")"));
  if (o.call_timeout_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("call timeout (--call-timeout-ms) ", o.call_timeout_ms, " must be > 0"));
  if (o.issued_id_ttl_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("issued id TTL ", o.issued_id_ttl_ms, " ms must be > 0"));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Router>> Router::Create(RouterOptions options,
                                                       FederationStateStore* store) {
  if (absl::Status s = ValidateRouterOptions(options); !s.ok()) return s;
  return std::unique_ptr<Router>(new Router(std::move(options), store));
}

Router::Router(RouterOptions options, FederationStateStore* store)
    : options_(std::move(options)),
      store_(store),
      clients_(options_.outbound_credentials, options_.call_timeout_ms),
      rng_(options_.seed != 0 ? options_.seed : std::random_device()()) {}

int64_t Router::NowMs() const {
  return options_.now_ms ? options_.now_ms() : absl::ToUnixMillis(absl::Now());
}

bool Router::Usable(const v1::SubClusterInfo& info) const {
  return IsSubClusterUsable(info, NowMs(), options_.membership_expiry_ms);
}

// --- Store reads, cached ----------------------------------------------------------------

absl::StatusOr<Router::MembershipView> Router::Members(bool fresh) {
  const int64_t now = NowMs();
  {
    absl::MutexLock l(&mu_);
    if (!fresh && members_read_ms_ >= 0 && now - members_read_ms_ < options_.cache_ttl_ms) {
      MembershipView cached{members_, members_read_ms_};
      // A view without a usable sub-cluster is read again (one may have come back since).
      if (!UsableMembers(cached).empty()) return cached;
    }
  }
  // The time before the read: a heartbeat the read sees is never judged against a later one.
  absl::StatusOr<std::vector<v1::SubClusterInfo>> all = store_->GetSubClusters(false);
  absl::MutexLock l(&mu_);
  if (!all.ok()) {
    if (members_read_ms_ < 0)
      return absl::Status(all.status().code(),
                          absl::StrCat("reading the federation's sub-clusters from ",
                                       store_->Describe(), ": ", all.status().message()));
    log::Warn("router_membership_stale", {{"store", store_->Describe()},
                                          {"error", all.status()},
                                          {"age_ms", now - members_read_ms_}});
    return MembershipView{members_, members_read_ms_};
  }
  if (now >= members_read_ms_) {  // a slower concurrent read does not replace a newer one
    members_ = *std::move(all);
    members_read_ms_ = now;
    return MembershipView{members_, members_read_ms_};
  }
  return MembershipView{*std::move(all), now};
}

std::vector<v1::SubClusterInfo> Router::UsableMembers(const MembershipView& view) const {
  std::vector<v1::SubClusterInfo> out;
  for (const auto& sc : view.members)
    if (IsSubClusterUsable(sc, view.read_ms, options_.membership_expiry_ms)) out.push_back(sc);
  return out;
}

std::vector<v1::SubClusterInfo> Router::LiveMembers(const MembershipView& view) const {
  std::vector<v1::SubClusterInfo> out;
  for (const auto& sc : view.members) {
    if (sc.state() == v1::SC_UNREGISTERED || sc.state() == v1::SC_DECOMMISSIONED ||
        sc.state() == v1::SC_LOST)
      continue;
    const int64_t heard = std::max(sc.last_heartbeat_ms(), sc.last_start_ms());
    if (view.read_ms - heard <= options_.membership_expiry_ms) out.push_back(sc);
  }
  return out;
}

bool Router::IsLost(const v1::SubClusterInfo& sc, int64_t at_ms) const {
  if (sc.state() == v1::SC_LOST) return true;
  if (sc.state() != v1::SC_RUNNING && sc.state() != v1::SC_NEW && sc.state() != v1::SC_UNHEALTHY)
    return false;
  return at_ms - std::max(sc.last_heartbeat_ms(), sc.last_start_ms()) >
         options_.membership_expiry_ms;
}

absl::StatusOr<v1::SubClusterInfo> Router::MemberNamed(const std::string& id, int64_t* read_ms) {
  for (bool fresh : {false, true}) {
    absl::StatusOr<MembershipView> view = Members(fresh);
    if (!view.ok()) return view.status();
    for (const auto& sc : view->members) {
      if (sc.sub_cluster_id() != id) continue;
      if (read_ms != nullptr) *read_ms = view->read_ms;
      return sc;
    }
  }
  return absl::UnavailableError(
      absl::StrCat("sub-cluster '", id, "' is not registered in the federation"));
}

absl::StatusOr<std::string> Router::HomeOf(const std::string& app_id, bool fresh) {
  const int64_t now = NowMs();
  if (!fresh) {
    absl::MutexLock l(&mu_);
    auto it = homes_.find(app_id);
    if (it != homes_.end() && now - it->second.read_ms < options_.cache_ttl_ms)
      return it->second.home;
  }
  absl::StatusOr<v1::ApplicationHomeSubCluster> home = store_->GetApplicationHomeSubCluster(app_id);
  if (!home.ok()) {
    if (absl::IsNotFound(home.status())) return home.status();
    return absl::Status(home.status().code(),
                        absl::StrCat("reading the home sub-cluster of ", app_id, " from ",
                                     store_->Describe(), ": ", home.status().message()));
  }
  CacheHome(app_id, home->home_sub_cluster_id());
  return home->home_sub_cluster_id();
}

void Router::CacheHome(const std::string& app_id, const std::string& home) {
  if (options_.cache_ttl_ms == 0) return;
  absl::MutexLock l(&mu_);
  homes_[app_id] = CachedHome{home, NowMs()};
}

void Router::ForgetHome(const std::string& app_id) {
  absl::MutexLock l(&mu_);
  homes_.erase(app_id);
}

absl::StatusOr<v1::SubClusterPolicyConfiguration> Router::PolicyConfigOf(const std::string& queue) {
  const int64_t now = NowMs();
  {
    absl::MutexLock l(&mu_);
    auto it = configs_.find(queue);
    if (it != configs_.end() && now - it->second.read_ms < options_.cache_ttl_ms)
      return it->second.config;
  }
  v1::SubClusterPolicyConfiguration config;
  absl::StatusOr<v1::SubClusterPolicyConfiguration> own = store_->GetPolicyConfiguration(queue);
  if (own.ok()) {
    config = *std::move(own);
  } else if (absl::IsNotFound(own.status())) {
    absl::StatusOr<v1::SubClusterPolicyConfiguration> any = store_->GetPolicyConfiguration("*");
    if (any.ok()) {
      config = *std::move(any);
    } else if (absl::IsNotFound(any.status())) {
      config = DefaultPolicyConfiguration();
    } else {
      own = any.status();
    }
  }
  if (!own.ok() && !absl::IsNotFound(own.status()))
    return absl::Status(own.status().code(),
                        absl::StrCat("reading the policy of queue '", queue, "' from ",
                                     store_->Describe(), ": ", own.status().message()));
  if (options_.cache_ttl_ms > 0) {
    absl::MutexLock l(&mu_);
    configs_[queue] = CachedConfig{config, now};
  }
  return config;
}

absl::StatusOr<const RouterPolicy*> Router::PolicyNamed(const std::string& name) {
  absl::MutexLock l(&mu_);
  auto it = policies_.find(name);
  if (it != policies_.end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<RouterPolicy>> policy = MakeRouterPolicy(name);
  if (!policy.ok()) return policy.status();
  const RouterPolicy* p = policy->get();
  policies_.emplace(name, *std::move(policy));
  return p;
}

// --- Outbound calls ---------------------------------------------------------------------

absl::Status Router::Forward(const v1::SubClusterInfo& sc, const std::string& user,
                             const char* method, const SubClusterRpc& rpc) {
  absl::Status s = clients_.Call(sc, user, rpc);
  metrics_
      .GetCounter("weft_router_forwards_total",
                  "Calls the router forwarded to sub-cluster RMs, by sub-cluster, method and "
                  "status code.",
                  {{"sub_cluster", sc.sub_cluster_id()},
                   {"method", method},
                   {"code", absl::StatusCodeToString(s.code())}})
      ->Increment();
  if (!s.ok() && !IsCallersFault(s.code()) && !absl::IsNotFound(s) && !absl::IsAlreadyExists(s) &&
      !absl::IsFailedPrecondition(s))
    metrics_
        .GetCounter("weft_router_sub_cluster_failures_total",
                    "Forwarded calls a sub-cluster RM did not answer (unavailable, timed out, "
                    "internal errors), by sub-cluster.",
                    {{"sub_cluster", sc.sub_cluster_id()}})
        ->Increment();
  return s;
}

template <typename Request, typename Response>
std::vector<absl::StatusOr<Response>> Router::FanOut(
    const std::vector<v1::SubClusterInfo>& targets, const std::string& user, const char* method,
    grpc::Status (v1::ClientService::Stub::*call)(grpc::ClientContext*, const Request&, Response*),
    const Request& request) {
  std::vector<absl::StatusOr<Response>> results(targets.size(), absl::UnknownError("not called"));
  std::vector<std::thread> threads;
  threads.reserve(targets.size());
  for (size_t i = 0; i < targets.size(); ++i) {
    threads.emplace_back(
        [&, i] { results[i] = ForwardCall(targets[i], user, method, call, request); });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < targets.size(); ++i) {
    if (results[i].ok()) continue;
    // NotFound is the sub-cluster's answer (it has no such app or queue), not a failure.
    log::Write(absl::IsNotFound(results[i].status()) ? log::Level::kDebug : log::Level::kWarn,
               "sub_cluster_skipped",
               {{"sub_cluster", targets[i].sub_cluster_id()},
                {"method", method},
                {"error", results[i].status()}});
  }
  return results;
}

void Router::CountSubmission(const std::string& sub_cluster, absl::StatusCode code) {
  metrics_
      .GetCounter("weft_router_submissions_total",
                  "Applications submitted through the router, by home sub-cluster (\"\" when "
                  "none was chosen) and status code.",
                  {{"sub_cluster", sub_cluster}, {"code", absl::StatusCodeToString(code)}})
      ->Increment();
}

// --- ClientService ------------------------------------------------------------------------

absl::StatusOr<v1::ApplicationReport> Router::GetApplication(const std::string& app_id,
                                                             const std::string& user) {
  // A read: nothing here writes to the store or submits anything.
  v1::GetApplicationRequest req;
  req.set_application_id(app_id);
  absl::StatusOr<std::string> home = HomeOf(app_id, false);
  if (absl::IsNotFound(home.status())) {
    // Not submitted through a router: ask every live sub-cluster.
    absl::StatusOr<MembershipView> all = Members(false);
    if (!all.ok()) return all.status();
    std::vector<v1::SubClusterInfo> live = LiveMembers(*all);
    auto answers =
        FanOut(live, user, "GetApplication", &v1::ClientService::Stub::GetApplication, req);
    for (size_t i = 0; i < answers.size(); ++i) {
      if (!answers[i].ok()) continue;
      v1::ApplicationReport r = answers[i]->report();
      if (r.sub_cluster_id().empty()) r.set_sub_cluster_id(live[i].sub_cluster_id());
      return r;
    }
    return absl::NotFoundError(absl::StrCat("application '", app_id,
                                            "' not found: no home sub-cluster in the federation "
                                            "store and no live sub-cluster (",
                                            Ids(live), ") knows it"));
  }
  if (!home.ok()) return home.status();
  int64_t read_ms = 0;
  absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(*home, &read_ms);
  if (!sc.ok()) return sc.status();
  bool lost = IsLost(*sc, read_ms);
  absl::StatusOr<v1::GetApplicationResponse> r = absl::UnknownError("not asked");
  for (int round = 0; round < 2; ++round) {
    // A lost home is asked all the same: it may answer (it was only slow to heartbeat).
    r = ForwardCall(*sc, user, "GetApplication", &v1::ClientService::Stub::GetApplication, req);
    if (r.ok() || round > 0 ||
        (!absl::IsNotFound(r.status()) && !RmDidNotAnswer(r.status().code())))
      break;
    // The cached home may be stale (the GPG moved the app): read the mapping again.
    ForgetHome(app_id);
    absl::StatusOr<std::string> moved = HomeOf(app_id, /*fresh=*/true);
    if (!moved.ok() || *moved == *home) break;
    home = moved;
    sc = MemberNamed(*home, &read_ms);
    if (!sc.ok()) return sc.status();
    lost = IsLost(*sc, read_ms);
  }
  if (!r.ok()) {
    if (lost)
      return absl::Status(
          r.status().code(),
          absl::StrCat("the home sub-cluster '", *home, "' of ", app_id, " is lost (state ",
                       v1::SubClusterState_Name(sc->state()), ", last heard ",
                       read_ms - std::max(sc->last_heartbeat_ms(), sc->last_start_ms()),
                       " ms before; the GPG resubmits the apps of a LOST sub-cluster when "
                       "their queue's policy says so): ",
                       r.status().message()));
    return r.status();
  }
  v1::ApplicationReport report = r->report();
  if (report.sub_cluster_id().empty()) report.set_sub_cluster_id(sc->sub_cluster_id());
  return report;
}

absl::StatusOr<v1::GetApplicationAttemptsResponse> Router::GetApplicationAttempts(
    const std::string& app_id, const std::string& user) {
  absl::StatusOr<v1::SubClusterInfo> sc = HomeMember(app_id, user);
  if (!sc.ok()) return sc.status();
  v1::GetApplicationAttemptsRequest req;
  req.set_application_id(app_id);
  return ForwardCall(*sc, user, "GetApplicationAttempts",
                     &v1::ClientService::Stub::GetApplicationAttempts, req);
}

absl::StatusOr<v1::KillApplicationResponse> Router::KillApplication(
    const v1::KillApplicationRequest& request, const std::string& user) {
  absl::StatusOr<v1::SubClusterInfo> sc = HomeMember(request.application_id(), user);
  if (!sc.ok()) return sc.status();
  absl::StatusOr<v1::KillApplicationResponse> killed =
      ForwardCall(*sc, user, "KillApplication", &v1::ClientService::Stub::KillApplication, request);
  if (!killed.ok()) return killed;
  // The app's unmanaged AMs in its secondary sub-clusters carry its id: they go too. A
  // sub-cluster without the app answers NotFound (FanOut logs that at debug level).
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return killed;
  std::vector<v1::SubClusterInfo> others;
  for (v1::SubClusterInfo& other : *live)
    if (other.sub_cluster_id() != sc->sub_cluster_id()) others.push_back(std::move(other));
  auto answers =
      FanOut(others, user, "KillApplication", &v1::ClientService::Stub::KillApplication, request);
  for (size_t i = 0; i < answers.size(); ++i) {
    if (answers[i].ok())
      log::Info("router_killed_secondary",
                {{"app", request.application_id()}, {"sub_cluster", others[i].sub_cluster_id()}});
  }
  return killed;
}

absl::StatusOr<v1::SubClusterInfo> Router::HomeMember(const std::string& app_id,
                                                      const std::string& user) {
  absl::StatusOr<std::string> home = HomeOf(app_id, false);
  if (absl::IsNotFound(home.status())) {
    // Not submitted through a router: the sub-cluster that knows it (GetApplication's search).
    absl::StatusOr<v1::ApplicationReport> report = GetApplication(app_id, user);
    if (!report.ok()) return report.status();
    return MemberNamed(report->sub_cluster_id());
  }
  if (!home.ok()) return home.status();
  return MemberNamed(*home);
}

absl::StatusOr<std::vector<v1::SubClusterInfo>> Router::LiveTargets() {
  absl::StatusOr<MembershipView> all = Members(false);
  if (!all.ok()) return all.status();
  std::vector<v1::SubClusterInfo> live = LiveMembers(*all);
  if (live.empty())
    return absl::UnavailableError(absl::StrCat(
        "no live sub-cluster in the federation (registered: ", Ids(all->members), ")"));
  return live;
}

absl::StatusOr<v1::ListApplicationsResponse> Router::ListApplications(
    const v1::ListApplicationsRequest& request, const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto parts = Answered(*live, FanOut(*live, user, "ListApplications",
                                      &v1::ClientService::Stub::ListApplications, request));
  if (!parts.ok()) return parts.status();
  // An app reported by several sub-clusters (its home, and secondaries running its unmanaged
  // AMs or an old copy killed after a move) is listed as its home in the store reports it.
  std::map<std::string, int> reported;
  for (const auto& [sc, part] : *parts)
    for (const v1::ApplicationReport& app : part.applications()) ++reported[app.application_id()];
  std::vector<std::pair<std::string, std::string>> homes;
  for (const auto& [app_id, count] : reported) {
    if (count < 2) continue;
    absl::StatusOr<std::string> home = HomeOf(app_id, /*fresh=*/false);
    if (home.ok()) homes.emplace_back(app_id, *home);
  }
  return MergeApplications(*parts, request.limit(), homes);
}

absl::StatusOr<v1::GetClusterMetricsResponse> Router::GetClusterMetrics(const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto parts = Answered(
      *live, FanOut(*live, user, "GetClusterMetrics", &v1::ClientService::Stub::GetClusterMetrics,
                    v1::GetClusterMetricsRequest()));
  if (!parts.ok()) return parts.status();
  std::vector<v1::GetClusterMetricsResponse> figures;
  for (auto& [id, m] : *parts) figures.push_back(std::move(m));
  return SumClusterMetrics(figures);
}

absl::StatusOr<v1::ListNodesResponse> Router::ListNodes(const v1::ListNodesRequest& request,
                                                        const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto parts = Answered(
      *live, FanOut(*live, user, "ListNodes", &v1::ClientService::Stub::ListNodes, request));
  if (!parts.ok()) return parts.status();
  return MergeNodes(*parts);
}

absl::StatusOr<v1::GetQueueResponse> Router::GetQueue(const v1::GetQueueRequest& request,
                                                      const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto answers = FanOut(*live, user, "GetQueue", &v1::ClientService::Stub::GetQueue, request);
  std::optional<v1::GetQueueResponse> merged;
  absl::Status last;
  for (auto& a : answers) {
    if (!a.ok()) {
      // A sub-cluster's NotFound is an answer: it wins over one that did not answer.
      if (last.ok() || !absl::IsNotFound(last)) last = a.status();
      continue;
    }
    if (!merged.has_value()) {
      merged = *std::move(a);
    } else {
      MergeQueue(merged->mutable_queue(), a->queue());
    }
  }
  if (!merged.has_value()) return last;
  return *merged;
}

absl::StatusOr<std::vector<v1::SubClusterInfo>> Router::SubClusters() {
  absl::StatusOr<MembershipView> view = Members(true);
  if (!view.ok()) return view.status();
  return std::move(view->members);
}

std::shared_ptr<const SubClusterResolver> Router::Resolver(const std::string& user) {
  const int64_t now = NowMs();
  {
    absl::MutexLock l(&mu_);
    if (resolver_ != nullptr && now - resolver_read_ms_ < options_.cache_ttl_ms) return resolver_;
  }
  auto resolver = std::make_shared<SubClusterResolver>();
  absl::StatusOr<v1::ListNodesResponse> nodes = ListNodes({}, user);
  if (nodes.ok()) {
    for (const v1::NodeReport& n : nodes->nodes())
      resolver->AddNode(n.node_id(), n.sub_cluster_id(),
                        n.rack().empty() ? "/default-rack" : n.rack());
  }
  absl::MutexLock l(&mu_);
  resolver_ = std::move(resolver);
  resolver_read_ms_ = now;
  return resolver_;
}

}  // namespace weft::federation
