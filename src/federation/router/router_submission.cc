// Copyright Weft authors. Router's submissions (router.h): ids issued by the federation
// (NewApplication), the home chosen and stored before the RM hears of the app, idempotent
// retries, and the issued-id records that keep callers from choosing ids.
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "federation/router/router.h"
#include "federation/router/router_internal.h"

namespace weft::federation {

using router_internal::Ids;
using router_internal::IsCallersFault;
using router_internal::kNewApplicationAsks;
using router_internal::RmDidNotAnswer;
using router_internal::SameSubmission;
using router_internal::WithoutTokens;

absl::StatusOr<v1::NewApplicationResponse> Router::NewApplication(const std::string& user) {
  absl::StatusOr<MembershipView> view = Members(false);
  if (!view.ok()) return view.status();
  std::vector<v1::SubClusterInfo> usable = UsableMembers(*view);
  {
    absl::MutexLock l(&mu_);
    std::shuffle(usable.begin(), usable.end(), rng_);
  }
  absl::Status last = absl::UnavailableError(absl::StrCat(
      "no usable sub-cluster in the federation (", view->members.size(),
      " registered, none running and heard from within ", options_.membership_expiry_ms, " ms)"));
  for (const v1::SubClusterInfo& sc : usable) {
    // An RM hands out the next id on each ask: one that is taken already is skipped.
    for (int ask = 0; ask < kNewApplicationAsks; ++ask) {
      absl::StatusOr<v1::NewApplicationResponse> r =
          ForwardCall(sc, user, "NewApplication", &v1::ClientService::Stub::NewApplication,
                      v1::NewApplicationRequest());
      if (!r.ok()) {
        last = r.status();
        break;
      }
      const std::string& id = r->application_id();
      absl::Status issued = RecordIssued(id, user, sc.sub_cluster_id());
      if (issued.ok()) return r;
      if (!absl::IsAlreadyExists(issued)) return issued;  // the store failed: nothing issued
      last = issued;
      log::Warn("router_application_id_taken",
                {{"app", id}, {"sub_cluster", sc.sub_cluster_id()}, {"error", last}});
    }
    if (IsCallersFault(last.code())) break;
  }
  return last;
}

absl::Status Router::ForwardSubmission(const v1::SubClusterInfo& home,
                                       const v1::ApplicationSubmissionContext& context,
                                       const std::string& user, bool retry) {
  v1::SubmitApplicationRequest req;
  *req.mutable_context() = context;
  absl::StatusOr<v1::SubmitApplicationResponse> r = ForwardCall(
      home, user, "SubmitApplication", &v1::ClientService::Stub::SubmitApplication, req);
  if (r.ok() || (retry && absl::IsAlreadyExists(r.status()))) return absl::OkStatus();
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
                                    const std::string& user, std::vector<std::string> exclude) {
  const std::string& app_id = context.application_id();
  const std::string queue = context.queue().empty() ? "default" : context.queue();
  absl::StatusOr<v1::SubClusterPolicyConfiguration> config = PolicyConfigOf(queue);
  if (!config.ok()) return config.status();
  absl::StatusOr<const RouterPolicy*> policy = PolicyNamed(config->router_policy());
  if (!policy.ok())
    return absl::FailedPreconditionError(
        absl::StrCat("queue '", queue, "': ", policy.status().message()));
  bool first = true;       // no mapping written yet
  bool adopted = false;    // the mapping is a concurrent identical submission's
  int64_t generation = 0;  // of the mapping as this submission last wrote or read it
  uint64_t nonce = 0;      // this submission's, in the mapping it writes
  {
    absl::MutexLock l(&mu_);
    nonce = rng_();
  }
  absl::Status last;
  for (int attempt = 0; attempt < options_.submit_retries; ++attempt) {
    absl::StatusOr<MembershipView> all = Members(attempt > 0);
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
          "no usable sub-cluster for ", app_id, " (registered: ", Ids(all->members),
          "; none running and heard from within ", options_.membership_expiry_ms, " ms)"));
      break;
    }
    absl::StatusOr<std::string> chosen;
    {
      absl::MutexLock l(&mu_);
      ctx.rng = &rng_;
      // What this router homed since the snapshots it reads (load-based counts it as load).
      ctx.in_flight = &in_flight_.Outstanding(ctx.active);
      chosen = (*policy)->ChooseHome(context, ctx, exclude);
      if (chosen.ok()) {
        auto memory = context.am_resource().values().find("memory-mb");
        in_flight_.Placed(*chosen,
                          memory == context.am_resource().values().end() ? 0 : memory->second,
                          NowMs());
      }
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
    // What the GPG needs to resubmit the app if this home is lost, and what tells a retried
    // submission from a different one (no credentials: the RM drops AM tokens from a
    // submission anyway).
    *home.mutable_submission_context() = WithoutTokens(context);
    home.set_submission_nonce(nonce);
    if (first) {
      absl::StatusOr<std::string> stored = store_->AddApplicationHomeSubCluster(home);
      if (!stored.ok())
        return absl::Status(stored.status().code(),
                            absl::StrCat("recording the home of ", app_id, " in ",
                                         store_->Describe(), ": ", stored.status().message()));
      // A concurrent submission of the same id may have won: go on only with the same one.
      absl::StatusOr<v1::ApplicationHomeSubCluster> winner =
          store_->GetApplicationHomeSubCluster(app_id);
      if (!winner.ok())
        return absl::Status(winner.status().code(),
                            absl::StrCat("reading back the home of ", app_id, " from ",
                                         store_->Describe(), ": ", winner.status().message()));
      if (!SameSubmission(*winner, home)) {
        log::Warn("router_submission_collided", {{"app", app_id}, {"home", *stored}});
        return absl::AlreadyExistsError(absl::StrCat("application ", app_id,
                                                     " was submitted concurrently by another "
                                                     "submission (home '",
                                                     *stored,
                                                     "'); ask NewApplication for a new id"));
      }
      if (winner->submission_nonce() != home.submission_nonce()) {
        // The same submission, by the same user, through another router: it goes to that one's
        // home, where the RM may have it already.
        adopted = true;
        log::Info("router_home_race_lost",
                  {{"app", app_id}, {"chosen", *chosen}, {"stored", *stored}});
      }
      chosen = *stored;
      generation = winner->generation();
      first = false;
      // The home guards the id from now on: its issued record goes (a concurrent identical
      // submission may have deleted it first).
      if (absl::Status s = store_->DeleteIssuedApplicationId(app_id);
          !s.ok() && !absl::IsNotFound(s))
        log::Warn("router_issued_id_not_deleted", {{"app", app_id}, {"error", s}});
    } else {
      // Moved only from the generation this submission holds (compare-and-set): if another
      // writer (the GPG, another router retrying the same submission) moved it meanwhile, that
      // one's home stands and this submission goes no further.
      home.set_generation(generation);
      if (absl::Status s = store_->UpdateApplicationHomeSubCluster(home); !s.ok())
        return absl::Status(s.code(), absl::StrCat("moving the home of ", app_id, " to ", *chosen,
                                                   " in ", store_->Describe(), ": ", s.message()));
      ++generation;
    }
    CacheHome(app_id, *chosen);
    absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(*chosen);
    absl::Status s =
        sc.ok() ? ForwardSubmission(*sc, context, user, /*retry=*/adopted) : sc.status();
    CountSubmission(*chosen, s.code());
    if (s.ok()) {
      log::Info("app_submitted_via_router", {{"app", app_id},
                                             {"home", *chosen},
                                             {"queue", queue},
                                             {"user", user},
                                             {"attempt", attempt + 1}});
      return absl::OkStatus();
    }
    log::Warn("router_submit_failed",
              {{"app", app_id}, {"sub_cluster", *chosen}, {"attempt", attempt + 1}, {"error", s}});
    // The router whose mapping this is places the app elsewhere if it must; a retry of this
    // submission finds the home it chose.
    if (adopted)
      return absl::Status(s.code(), absl::StrCat("sub-cluster '", *chosen, "' did not take ",
                                                 app_id, ": ", s.message()));
    if (!RmDidNotAnswer(s.code())) {
      // The home moved while this submission was on its way (the GPG moved it from a lost
      // sub-cluster, whose RM refuses it now): it goes to where the app is homed now.
      absl::StatusOr<v1::ApplicationHomeSubCluster> now =
          store_->GetApplicationHomeSubCluster(app_id);
      if (now.ok() && now->home_sub_cluster_id() != *chosen) {
        log::Warn("router_home_moved_in_flight",
                  {{"app", app_id}, {"from", *chosen}, {"to", now->home_sub_cluster_id()}});
        return SubmitAgain(*now, context, user);
      }
      // The RM refused this id or this submission: it is not offered to another sub-cluster,
      // and no mapping is left to an app that does not exist.
      log::WarnIfError(store_->DeleteApplicationHomeSubCluster(app_id),
                       "router_home_not_deleted", {{"app", app_id}});
      ForgetHome(app_id);
      return absl::Status(s.code(), absl::StrCat("sub-cluster '", *chosen, "' refused ", app_id,
                                                 ": ", s.message()));
    }
    last = s;
    exclude.push_back(*chosen);
  }
  if (last.ok()) last = absl::UnavailableError(absl::StrCat("no sub-cluster took ", app_id));
  if (first) CountSubmission("", last.code());
  return last;
}

absl::Status Router::SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                       const std::string& user) {
  const std::string& app_id = context.application_id();
  if (app_id.empty())
    return absl::InvalidArgumentError("the submission has no application id (NewApplication)");
  absl::Status refused;
  // Twice at most: an issued record is deleted when the app's home is written, so a concurrent
  // identical submission may home the id between this one's two reads.
  for (int round = 0; round < 2; ++round) {
    absl::StatusOr<v1::ApplicationHomeSubCluster> existing =
        store_->GetApplicationHomeSubCluster(app_id);
    if (existing.ok()) return SubmitAgain(*existing, context, user);
    if (!absl::IsNotFound(existing.status()))
      return absl::Status(existing.status().code(),
                          absl::StrCat("reading the home of ", app_id, " from ", store_->Describe(),
                                       ": ", existing.status().message()));
    refused = CheckIssued(app_id, user);
    if (refused.ok()) return PlaceAndSubmit(context, user, {});
    if (!absl::IsInvalidArgument(refused)) break;
  }
  log::Warn("router_submission_refused", {{"app", app_id}, {"user", user}, {"error", refused}});
  CountSubmission("", refused.code());
  return refused;
}

absl::Status Router::SubmitAgain(const v1::ApplicationHomeSubCluster& existing,
                                 const v1::ApplicationSubmissionContext& context,
                                 const std::string& user) {
  const std::string& app_id = context.application_id();
  // A retried submission goes to its home again; a different one under the same id is an
  // error, never a success.
  v1::ApplicationHomeSubCluster mine;
  mine.set_user(user);
  *mine.mutable_submission_context() = WithoutTokens(context);
  if (!SameSubmission(existing, mine)) {
    CountSubmission("", absl::StatusCode::kAlreadyExists);
    return absl::AlreadyExistsError(absl::StrCat(
        "application ", app_id, " was already submitted (home '", existing.home_sub_cluster_id(),
        "') and this is a different submission; ask NewApplication for a new id"));
  }
  CacheHome(app_id, existing.home_sub_cluster_id());
  absl::StatusOr<v1::SubClusterInfo> sc = MemberNamed(existing.home_sub_cluster_id());
  if (!sc.ok()) return sc.status();
  return ForwardSubmission(*sc, context, user, /*retry=*/true);
}

absl::Status Router::RecordIssued(const std::string& app_id, const std::string& user,
                                  const std::string& sub_cluster_id) {
  v1::IssuedApplicationId issued;
  issued.set_application_id(app_id);
  issued.set_user(user);
  issued.set_issued_ms(NowMs());
  issued.set_router_id(options_.router_id);
  issued.set_sub_cluster_id(sub_cluster_id);
  absl::Status s = store_->AddIssuedApplicationId(issued);
  if (absl::IsAlreadyExists(s))
    return absl::AlreadyExistsError(
        absl::StrCat("sub-cluster '", sub_cluster_id, "' handed out application id ", app_id,
                     ", which the federation has issued already: ", s.message()));
  if (!s.ok())
    return absl::Status(s.code(),
                        absl::StrCat("recording application id ", app_id, " as issued in ",
                                     store_->Describe(), ": ", s.message()));
  // Checked after the issue is recorded: a home is written before the issued record is
  // deleted, so an id submitted before is seen here one way or the other.
  absl::StatusOr<v1::ApplicationHomeSubCluster> home = store_->GetApplicationHomeSubCluster(app_id);
  if (absl::IsNotFound(home.status())) return absl::OkStatus();
  if (absl::Status d = store_->DeleteIssuedApplicationId(app_id); !d.ok())
    log::Warn("router_issued_id_not_deleted", {{"app", app_id}, {"error", d}});
  if (!home.ok())
    return absl::Status(home.status().code(),
                        absl::StrCat("reading the home of ", app_id, " from ", store_->Describe(),
                                     ": ", home.status().message()));
  return absl::AlreadyExistsError(
      absl::StrCat("sub-cluster '", sub_cluster_id, "' handed out application id ", app_id,
                   ", which the federation has issued already (homed in '",
                   home->home_sub_cluster_id(), "'): its RM reuses a cluster timestamp"));
}

absl::Status Router::CheckIssued(const std::string& app_id, const std::string& user) {
  const std::string ask =
      absl::StrCat(": ask a router for one with NewApplication and submit within ",
                   options_.issued_id_ttl_ms / 1000,
                   " s (application ids are issued by the federation, never chosen by the caller)");
  absl::StatusOr<v1::IssuedApplicationId> issued = store_->GetIssuedApplicationId(app_id);
  if (absl::IsNotFound(issued.status()))
    return absl::InvalidArgumentError(
        absl::StrCat("application id '", app_id, "' was not issued by the federation", ask));
  if (absl::IsInvalidArgument(issued.status()))
    return absl::InvalidArgumentError(
        absl::StrCat("application id '", app_id, "': ", issued.status().message()));
  if (!issued.ok())
    return absl::Status(
        issued.status().code(),
        absl::StrCat("reading whether application id '", app_id, "' was issued from ",
                     store_->Describe(), ": ", issued.status().message()));
  const int64_t age_ms = NowMs() - issued->issued_ms();
  if (age_ms > options_.issued_id_ttl_ms)
    return absl::InvalidArgumentError(absl::StrCat("application id '", app_id, "' was issued ",
                                                   age_ms / 1000, " s ago, and has expired", ask));
  if (issued->user() != user)
    return absl::PermissionDeniedError(
        absl::StrCat("application id '", app_id, "' was issued to another user, not '", user, "'"));
  return absl::OkStatus();
}

}  // namespace weft::federation
