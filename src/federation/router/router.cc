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

namespace weft::federation {
namespace {

// The user's own mistake: trying another sub-cluster would not help.
bool IsCallersFault(absl::StatusCode code) {
  return code == absl::StatusCode::kInvalidArgument ||
         code == absl::StatusCode::kPermissionDenied || code == absl::StatusCode::kUnauthenticated;
}

std::string Ids(const std::vector<v1::SubClusterInfo>& scs) {
  std::vector<std::string> ids;
  for (const auto& sc : scs) ids.push_back(sc.sub_cluster_id());
  return ids.empty() ? "none" : absl::StrJoin(ids, ",");
}

// The fan-out's answers that came, each with the id of the sub-cluster that gave it (targets[i]
// gave answers[i]); the last failure when none came.
template <typename Response>
absl::StatusOr<std::vector<std::pair<std::string, Response>>> Answered(
    const std::vector<v1::SubClusterInfo>& targets,
    std::vector<absl::StatusOr<Response>> answers) {
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
    return absl::InvalidArgumentError(
        absl::StrCat("membership expiry ", o.membership_expiry_ms, " ms must be > 0"));
  if (o.submit_retries < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("submit retries ", o.submit_retries, " must be >= 1"));
  if (o.cache_ttl_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("cache TTL ", o.cache_ttl_ms, " ms must be >= 0"));
  if (o.call_timeout_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("call timeout ", o.call_timeout_ms, " ms must be > 0"));
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

absl::StatusOr<std::vector<v1::SubClusterInfo>> Router::Members(bool fresh) {
  const int64_t now = NowMs();
  {
    absl::MutexLock l(&mu_);
    if (!fresh && members_read_ms_ >= 0 && now - members_read_ms_ < options_.cache_ttl_ms)
      return members_;
  }
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
    return members_;
  }
  members_ = *std::move(all);
  members_read_ms_ = now;
  return members_;
}

std::vector<v1::SubClusterInfo> Router::UsableMembers(
    const std::vector<v1::SubClusterInfo>& all) const {
  std::vector<v1::SubClusterInfo> out;
  for (const auto& sc : all)
    if (Usable(sc)) out.push_back(sc);
  return out;
}

std::vector<v1::SubClusterInfo> Router::LiveMembers(
    const std::vector<v1::SubClusterInfo>& all) const {
  const int64_t now = NowMs();
  std::vector<v1::SubClusterInfo> out;
  for (const auto& sc : all) {
    if (sc.state() == v1::SC_UNREGISTERED || sc.state() == v1::SC_DECOMMISSIONED ||
        sc.state() == v1::SC_LOST)
      continue;
    const int64_t heard = std::max(sc.last_heartbeat_ms(), sc.last_start_ms());
    if (now - heard <= options_.membership_expiry_ms) out.push_back(sc);
  }
  return out;
}

bool Router::IsLost(const v1::SubClusterInfo& sc) const {
  if (sc.state() == v1::SC_LOST) return true;
  if (sc.state() != v1::SC_RUNNING && sc.state() != v1::SC_NEW && sc.state() != v1::SC_UNHEALTHY)
    return false;
  return NowMs() - std::max(sc.last_heartbeat_ms(), sc.last_start_ms()) >
         options_.membership_expiry_ms;
}

absl::StatusOr<v1::SubClusterInfo> Router::MemberNamed(const std::string& id) {
  for (bool fresh : {false, true}) {
    absl::StatusOr<std::vector<v1::SubClusterInfo>> all = Members(fresh);
    if (!all.ok()) return all.status();
    for (const auto& sc : *all)
      if (sc.sub_cluster_id() == id) return sc;
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
absl::StatusOr<Response> Router::ForwardCall(
    const v1::SubClusterInfo& sc, const std::string& user, const char* method,
    grpc::Status (v1::ClientService::Stub::*call)(grpc::ClientContext*, const Request&, Response*),
    const Request& request) {
  Response response;
  absl::Status s =
      Forward(sc, user, method, [&](v1::ClientService::Stub& stub, grpc::ClientContext* ctx) {
        response.Clear();
        return (stub.*call)(ctx, request, &response);
      });
  if (!s.ok()) return s;
  return response;
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

absl::StatusOr<v1::NewApplicationResponse> Router::NewApplication(const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> all = Members(false);
  if (!all.ok()) return all.status();
  std::vector<v1::SubClusterInfo> usable = UsableMembers(*all);
  {
    absl::MutexLock l(&mu_);
    std::shuffle(usable.begin(), usable.end(), rng_);
  }
  absl::Status last = absl::UnavailableError(absl::StrCat(
      "no usable sub-cluster in the federation (", all->size(),
      " registered, none running and heard from within ", options_.membership_expiry_ms, " ms)"));
  for (const v1::SubClusterInfo& sc : usable) {
    absl::StatusOr<v1::NewApplicationResponse> r =
        ForwardCall(sc, user, "NewApplication", &v1::ClientService::Stub::NewApplication,
                    v1::NewApplicationRequest());
    if (r.ok()) return r;
    last = r.status();
    if (IsCallersFault(last.code())) break;
  }
  return last;
}

absl::Status Router::ForwardSubmission(const v1::SubClusterInfo& home,
                                       const v1::ApplicationSubmissionContext& context,
                                       const std::string& user) {
  v1::SubmitApplicationRequest req;
  *req.mutable_context() = context;
  absl::StatusOr<v1::SubmitApplicationResponse> r = ForwardCall(
      home, user, "SubmitApplication", &v1::ClientService::Stub::SubmitApplication, req);
  if (r.ok() || absl::IsAlreadyExists(r.status())) return absl::OkStatus();
  if (absl::IsDeadlineExceeded(r.status())) {
    // The RM may have applied it and only its answer was lost.
    v1::GetApplicationRequest get;
    get.set_application_id(context.application_id());
    if (ForwardCall(home, user, "GetApplication", &v1::ClientService::Stub::GetApplication, get)
            .ok())
      return absl::OkStatus();
  }
  return r.status();
}

absl::Status Router::PlaceAndSubmit(const v1::ApplicationSubmissionContext& context,
                                    const std::string& user, std::vector<std::string> exclude,
                                    bool first) {
  const std::string& app_id = context.application_id();
  const std::string queue = context.queue().empty() ? "default" : context.queue();
  absl::StatusOr<v1::SubClusterPolicyConfiguration> config = PolicyConfigOf(queue);
  if (!config.ok()) return config.status();
  absl::StatusOr<const RouterPolicy*> policy = PolicyNamed(config->router_policy());
  if (!policy.ok())
    return absl::FailedPreconditionError(
        absl::StrCat("queue '", queue, "': ", policy.status().message()));
  absl::Status last;
  for (int attempt = 0; attempt < options_.submit_retries; ++attempt) {
    absl::StatusOr<std::vector<v1::SubClusterInfo>> all = Members(attempt > 0);
    if (!all.ok()) return all.status();
    PolicyContext ctx;
    ctx.config = &*config;
    ctx.active = UsableMembers(*all);
    std::shared_ptr<const SubClusterResolver> resolver;
    if (config->router_policy() == "locality" && context.preferred_nodes_size() > 0) {
      resolver = Resolver(user);
      ctx.resolver = resolver.get();
    }
    if (ctx.active.empty()) {
      last = absl::UnavailableError(absl::StrCat(
          "no usable sub-cluster for ", app_id, " (registered: ", Ids(*all),
          "; none running and heard from within ", options_.membership_expiry_ms, " ms)"));
      break;
    }
    absl::StatusOr<std::string> chosen;
    {
      absl::MutexLock l(&mu_);
      ctx.rng = &rng_;
      chosen = (*policy)->ChooseHome(context, ctx, exclude);
    }
    if (!chosen.ok()) {
      // Nothing left to try (every usable one excluded), or the policy refuses the queue.
      if (last.ok() || absl::IsPermissionDenied(chosen.status()))
        last = absl::Status(
            chosen.status().code(),
            absl::StrCat("choosing the home of ", app_id, " (queue '", queue, "', policy ",
                         (*policy)->name(), "): ", chosen.status().message()));
      break;
    }
    // Persist the home before the RM hears of the app: any router can then find it.
    v1::ApplicationHomeSubCluster home;
    home.set_application_id(app_id);
    home.set_home_sub_cluster_id(*chosen);
    home.set_create_time_ms(NowMs());
    home.set_queue(queue);
    home.set_user(user);
    // What any router needs to resubmit the app if this home is lost (no credentials: the RM
    // drops AM tokens from a submission anyway).
    *home.mutable_submission_context() = context;
    home.mutable_submission_context()->mutable_am_container_spec()->clear_tokens();
    if (first) {
      absl::StatusOr<std::string> stored = store_->AddApplicationHomeSubCluster(home);
      if (!stored.ok())
        return absl::Status(stored.status().code(),
                            absl::StrCat("recording the home of ", app_id, " in ",
                                         store_->Describe(), ": ", stored.status().message()));
      if (*stored != *chosen)
        log::Info("router_home_race_lost",
                  {{"app", app_id}, {"chosen", *chosen}, {"stored", *stored}});
      chosen = *stored;
      first = false;
    } else {
      if (absl::Status s = store_->UpdateApplicationHomeSubCluster(home); !s.ok())
        return absl::Status(s.code(), absl::StrCat("moving the home of ", app_id, " to ", *chosen,
                                                   " in ", store_->Describe(), ": ", s.message()));
    }
    CacheHome(app_id, *chosen);
    absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(*chosen);
    absl::Status s = sc.ok() ? ForwardSubmission(*sc, context, user) : sc.status();
    CountSubmission(*chosen, s.code());
    if (s.ok()) {
      log::Info("app_submitted_via_router", {{"app", app_id},
                                             {"home", *chosen},
                                             {"queue", queue},
                                             {"user", user},
                                             {"attempt", attempt + 1}});
      KeepSubmission(context);
      return absl::OkStatus();
    }
    last = s;
    log::Warn("router_submit_failed",
              {{"app", app_id}, {"sub_cluster", *chosen}, {"attempt", attempt + 1}, {"error", s}});
    if (IsCallersFault(s.code())) {
      // It would fail anywhere: leave no mapping to an app that does not exist.
      (void)store_->DeleteApplicationHomeSubCluster(app_id);
      ForgetHome(app_id);
      return s;
    }
    exclude.push_back(*chosen);
  }
  if (last.ok()) last = absl::UnavailableError(absl::StrCat("no sub-cluster took ", app_id));
  if (first) CountSubmission("", last.code());
  return last;
}

absl::Status Router::SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                       const std::string& user) {
  if (context.application_id().empty())
    return absl::InvalidArgumentError("the submission has no application id (NewApplication)");
  // A retried submission of an app that has a home already goes there again.
  absl::StatusOr<std::string> existing = HomeOf(context.application_id(), /*fresh=*/true);
  if (existing.ok()) {
    absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(*existing);
    if (!sc.ok()) return sc.status();
    absl::Status s = ForwardSubmission(*sc, context, user);
    if (s.ok()) KeepSubmission(context);
    return s;
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  return PlaceAndSubmit(context, user, {}, /*first=*/true);
}

void Router::KeepSubmission(const v1::ApplicationSubmissionContext& context) {
  if (options_.max_kept_submissions == 0) return;
  absl::MutexLock l(&mu_);
  if (kept_.insert_or_assign(context.application_id(), context).second)
    kept_order_.push_back(context.application_id());
  while (kept_order_.size() > options_.max_kept_submissions) {
    kept_.erase(kept_order_.front());
    kept_order_.pop_front();
  }
}

std::optional<v1::ApplicationSubmissionContext> Router::KeptSubmission(const std::string& id) {
  absl::MutexLock l(&mu_);
  auto it = kept_.find(id);
  if (it == kept_.end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<std::string> Router::ResubmitLost(const std::string& app_id,
                                                 const std::string& lost) {
  absl::StatusOr<v1::ApplicationHomeSubCluster> home = store_->GetApplicationHomeSubCluster(app_id);
  if (!home.ok()) return home.status();
  if (home->home_sub_cluster_id() != lost) return home->home_sub_cluster_id();  // moved already
  // The submission the mapping keeps (any router's), else the one this router forwarded.
  std::optional<v1::ApplicationSubmissionContext> context;
  if (home->has_submission_context() && !home->submission_context().application_id().empty()) {
    context = home->submission_context();
  } else {
    context = KeptSubmission(app_id);
  }
  if (!context.has_value())
    return absl::UnavailableError(
        absl::StrCat("the home sub-cluster '", lost, "' of ", app_id,
                     " is lost and its mapping keeps no submission to resubmit"));
  log::Warn("router_resubmitting_lost_app", {{"app", app_id}, {"lost_home", lost}});
  if (absl::Status s = PlaceAndSubmit(*context, home->user(), {lost}, /*first=*/false); !s.ok())
    return s;
  return HomeOf(app_id, /*fresh=*/true);
}

absl::StatusOr<v1::ApplicationReport> Router::GetApplication(const std::string& app_id,
                                                             const std::string& user) {
  v1::GetApplicationRequest req;
  req.set_application_id(app_id);
  absl::StatusOr<std::string> home = HomeOf(app_id, false);
  if (absl::IsNotFound(home.status())) {
    // Not submitted through a router: ask every live sub-cluster.
    absl::StatusOr<std::vector<v1::SubClusterInfo>> all = Members(false);
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
  absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(*home);
  if (!sc.ok()) return sc.status();
  if (IsLost(*sc)) {
    // The home is gone: resubmit when the app's queue's policy asks for it.
    absl::StatusOr<v1::ApplicationHomeSubCluster> record =
        store_->GetApplicationHomeSubCluster(app_id);
    absl::StatusOr<v1::SubClusterPolicyConfiguration> config =
        record.ok() ? PolicyConfigOf(record->queue().empty() ? "default" : record->queue())
                    : absl::StatusOr<v1::SubClusterPolicyConfiguration>(record.status());
    if (config.ok() && config->resubmit_on_sub_cluster_loss()) {
      absl::StatusOr<std::string> moved = ResubmitLost(app_id, *home);
      if (!moved.ok()) return moved.status();
      sc = MemberNamed(*moved);
      if (!sc.ok()) return sc.status();
    }
  }
  absl::StatusOr<v1::GetApplicationResponse> r =
      ForwardCall(*sc, user, "GetApplication", &v1::ClientService::Stub::GetApplication, req);
  if (!r.ok()) {
    // A cached home may be stale (another router resubmitted the app): read the store again.
    if (absl::IsNotFound(r.status())) ForgetHome(app_id);
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
  return ForwardCall(*sc, user, "KillApplication", &v1::ClientService::Stub::KillApplication,
                     request);
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
  absl::StatusOr<std::vector<v1::SubClusterInfo>> all = Members(false);
  if (!all.ok()) return all.status();
  std::vector<v1::SubClusterInfo> live = LiveMembers(*all);
  if (live.empty())
    return absl::UnavailableError(
        absl::StrCat("no live sub-cluster in the federation (registered: ", Ids(*all), ")"));
  return live;
}

absl::StatusOr<v1::ListApplicationsResponse> Router::ListApplications(
    const v1::ListApplicationsRequest& request, const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto parts = Answered(*live, FanOut(*live, user, "ListApplications",
                                      &v1::ClientService::Stub::ListApplications, request));
  if (!parts.ok()) return parts.status();
  return MergeApplications(*parts, request.limit());
}

absl::StatusOr<v1::GetClusterMetricsResponse> Router::GetClusterMetrics(const std::string& user) {
  absl::StatusOr<std::vector<v1::SubClusterInfo>> live = LiveTargets();
  if (!live.ok()) return live.status();
  auto parts = Answered(*live, FanOut(*live, user, "GetClusterMetrics",
                                      &v1::ClientService::Stub::GetClusterMetrics,
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

absl::StatusOr<std::vector<v1::SubClusterInfo>> Router::SubClusters() { return Members(true); }

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
