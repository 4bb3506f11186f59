// Copyright Weft authors.
#include "rm/am_service.h"

#include <algorithm>
#include <iterator>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/am_asks.h"
#include "rm/container_tracker.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "security/tokens.h"

namespace weft::rm {

AmService::AmService(RmContext* ctx) : ctx_(ctx) {}

AmService::~AmService() {
  ctx_->loop->Cancel(expiry_timer_);
  StopHolding();
}

void AmService::StopHolding() {
  holding_ = false;
  // The held calls end with the RM (a standby now, or shutting down): their AMs try again,
  // and find the active. Unavailable takes nothing from their attempts.
  absl::flat_hash_map<std::string, Parked> parked = std::move(parked_);
  parked_.clear();
  for (auto& [id, p] : parked) {
    ctx_->loop->Cancel(p.timer);
    p.reply(absl::UnavailableError("the ResourceManager is going away; call again"));
  }
}

void AmService::StartExpiry() {
  expiry_timer_ = ctx_->loop->Schedule(std::max<int64_t>(1, ctx_->options->am_expiry_ms / 4),
                                       [this] { CheckExpiry(); });
}

void AmService::CheckExpiry() {
  expiry_timer_ = 0;
  const int64_t now = ctx_->NowMs();
  // Collected first: failing an attempt changes the app table's index.
  std::vector<std::string> expired;
  for (const auto& [id, app] : ctx_->apps->apps()) {
    if (IsFinal(app.state) || app.attempts.empty()) continue;
    const RmAttempt& at = app.current();
    if ((at.state == v1::ATTEMPT_LAUNCHED || at.state == v1::ATTEMPT_RUNNING) &&
        now - at.last_heard_ms >= ctx_->options->am_expiry_ms)
      expired.push_back(id);
  }
  for (const std::string& id : expired) {
    const RmApp* app = ctx_->apps->Find(id);
    const RmAttempt& at = app->current();
    ctx_->apps->AttemptFailed(*app,
                              absl::StrCat("AM of ", at.attempt_id, " did not call Allocate for ",
                                           (now - at.last_heard_ms) / 1000, " s"));
  }
  StartExpiry();
  ctx_->request_pass();
}

absl::StatusOr<const RmApp*> AmService::Authenticate(const v1::Token& token,
                                                     const std::string& verified_attempt) {
  std::string attempt_id = verified_attempt;
  if (attempt_id.empty()) {
    auto data = security::DecodeAmRmToken(token.identifier());
    if (!data.ok())
      return absl::PermissionDeniedError(
          absl::StrCat("bad AMRM token: ", data.status().message()));
    security::Token t{token.identifier(), token.password()};
    auto verified =
        security::VerifyAmRmToken(t, ctx_->keys->amrm(), data->app_attempt_id, ctx_->NowMs());
    if (!verified.ok()) return verified.status();
    attempt_id = std::move(data->app_attempt_id);
  }
  const RmApp* app = ctx_->apps->FindByAttempt(attempt_id);
  if (app == nullptr || app->current().attempt_id != attempt_id)
    return absl::PermissionDeniedError(
        absl::StrCat("AMRM token for unknown or old attempt ", attempt_id));
  if (IsFinal(app->state) || app->current().state == v1::ATTEMPT_FAILED)
    return absl::FailedPreconditionError(absl::StrCat(attempt_id, " is no longer running"));
  return app;
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> AmService::RegisterApplicationMaster(
    const v1::Token& token, const v1::RegisterApplicationMasterRequest&) {
  auto who = Authenticate(token);
  if (!who.ok()) return who.status();
  const RmApp& app = **who;
  const RmAttempt& at = app.current();
  const bool again = at.registered || at.recovered;
  // A held Allocate of this attempt is from before this registration: it ends unanswered.
  DropParked(at.attempt_id, "the AM registered again; this Allocate is void");
  if (at.registered) {
    ctx_->apps->AmHeard(app);
  } else if (absl::Status s = ctx_->apps->AttemptRegistered(app); !s.ok()) {
    return s;  // registered; the write is retried (a retried call registers again)
  }
  v1::RegisterApplicationMasterResponse resp;
  *resp.mutable_maximum_capability() = ctx_->ToProto(ctx_->MaximumAllocation());
  resp.set_queue(app.record.queue);
  // Registering again (after an RM restart, a lost reply or a resync): every live container
  // of the attempt, which the AM must not ask for again (YARN's containersFromPreviousAttempts);
  // containers recovered later come with Allocate.
  for (scheduler::ContainerId id : ctx_->scheduler->AppContainers(at.sched_app)) {
    const scheduler::ContainerState* cs = ctx_->scheduler->container(id);
    if (cs == nullptr || cs->is_am) continue;
    if (std::optional<v1::Container> c = ctx_->containers->Describe(id))
      *resp.add_containers_from_previous_attempts() = *std::move(c);
  }
  // Containers listed above wait no more; the AM may have missed the last reply, so its
  // completed statuses come again; a new response_id sequence starts from 0.
  ctx_->apps->mailbox(app).Registered();
  if (again)
    log::Info("am_registered_again",
              {{"attempt", at.attempt_id},
               {"containers", resp.containers_from_previous_attempts_size()}});
  return resp;
}

absl::StatusOr<v1::AllocateResponse> AmService::Allocate(const v1::Token& token,
                                                         const v1::AllocateRequest& req) {
  v1::AllocateRequest now = req;
  now.set_wait_ms(0);
  absl::StatusOr<v1::AllocateResponse> result = absl::InternalError("no reply");
  Allocate(token, now, [&result](absl::StatusOr<v1::AllocateResponse> r) { result = std::move(r); });
  return result;
}

void AmService::Allocate(const v1::Token& token, const v1::AllocateRequest& req,
                         AllocateReply reply, const std::string& verified_attempt) {
  auto who = Authenticate(token, verified_attempt);
  if (!who.ok()) return reply(who.status());
  const RmApp& app = **who;
  const RmAttempt& at = app.current();
  if (!at.registered) {
    if (at.recovered) {
      // The RM restarted under this attempt (YARN's ApplicationMasterNotRegistered resync):
      // its AM registers again, then sends its whole ask table again.
      v1::AllocateResponse resync;
      resync.set_am_command(v1::AM_RESYNC);
      resync.add_diagnostics(
          "the ResourceManager restarted: register again, then send every outstanding ask");
      return reply(resync);
    }
    return reply(absl::FailedPreconditionError(
        absl::StrCat(at.attempt_id, ": Allocate before RegisterApplicationMaster")));
  }
  ctx_->apps->AmHeard(app);
  // A call held for this attempt: its AM gave up on it (a retry after its deadline, or a new
  // call). It ends before its reply took anything from the attempt, so nothing is lost.
  DropParked(at.attempt_id, "a newer Allocate call replaced this one");
  // YARN's response_id protocol: the AM sends the id of the last reply it received.
  switch (at.mailbox.Classify(req.response_id())) {
    case AmMailbox::Call::kRetry:
      return reply(at.mailbox.last_response());
    case AmMailbox::Call::kOutOfOrder: {
      v1::AllocateResponse resync;
      resync.set_am_command(v1::AM_RESYNC);
      resync.set_response_id(at.mailbox.last_response_id());
      return reply(resync);
    }
    case AmMailbox::Call::kNext:
      break;
  }
  const ResourceTypeRegistry& registry = ctx_->registry();
  // Validate and convert everything before changing anything.
  scheduler::RequestUpdate update;
  // The largest running node's capability; nullopt when none runs (nothing to compare with).
  const std::optional<Resource> largest =
      req.asks_size() > 0 ? ctx_->nodes->LargestNodeCapability() : std::nullopt;
  for (int i = 0; i < req.asks_size(); ++i) {
    const v1::ResourceRequest& ask = req.asks(i);
    auto cap = ctx_->FromProto(ask.capability(), absl::StrCat("ask #", i));
    if (!cap.ok()) return reply(cap.status());
    // As YARN caps the maximum allocation by the largest node: an ask no node could ever hold
    // is refused now rather than left pending forever.
    if (ask.num_containers() > 0 && largest.has_value()) {
      for (int t = 0; t < registry.size(); ++t) {
        if ((*cap)[t] > (*largest)[t]) {
          return reply(absl::InvalidArgumentError(absl::StrCat(
              "ask #", i, ": ", registry.info(t).name, "=", (*cap)[t],
              " is above the largest node's ", (*largest)[t],
              t == kNetworkMbps ? " (a node offers its containers' share of its link, or 0 "
                                  "when it does not enforce bandwidth)"
                                : "")));
        }
      }
    }
    auto converted = ToSchedulerAsk(ask, *cap, i, [this](const std::string& name) {
      const RmApp* other = ctx_->apps->Find(name);
      std::optional<scheduler::AppId> id;
      if (other != nullptr && !other->attempts.empty() && !IsFinal(other->state))
        id = other->current().sched_app;
      return id;
    });
    if (!converted.ok()) return reply(converted.status());
    update.asks.push_back(*std::move(converted));
  }
  // Resource updates of running containers (YARN's UpdateContainerRequest).
  for (int i = 0; i < req.update_requests_size(); ++i) {
    const v1::UpdateContainerRequest& u = req.update_requests(i);
    auto id = ctx_->containers->FindOwned(u.container_id(), app.record.app_id);
    if (!id.ok())
      return reply(absl::InvalidArgumentError(absl::StrCat(
          "update #", i, ": container '", u.container_id(), "' is not a running container of ",
          app.record.app_id)));
    const int32_t version = ctx_->containers->Version(*id);
    if (u.container_version() != version)
      return reply(absl::FailedPreconditionError(absl::StrCat(
          "update #", i, ": container '", u.container_id(), "' is at version ", version,
          ", not ", u.container_version(), " (an update of it was granted since)")));
    auto target = ctx_->FromProto(u.capability(), absl::StrCat("update #", i));
    if (!target.ok()) return reply(target.status());
    update.updates.push_back({*id, *target});
  }
  // What the scheduler holds of each released container, taken before it releases them.
  struct Released {
    scheduler::ContainerId id;
    Resource resource;
    int64_t allocated_ms;
    std::string node;
  };
  std::vector<Released> released;
  std::vector<std::string> ignored;
  absl::flat_hash_set<scheduler::ContainerId> named;
  for (const std::string& r : req.releases()) {
    auto id = ctx_->containers->FindOwned(r, app.record.app_id);
    // Another app's container, or a name that is no container id: refused.
    if (!id.ok() && AppOfContainer(r) != app.record.app_id) return reply(id.status());
    const scheduler::ContainerState* cs = id.ok() ? ctx_->scheduler->container(*id) : nullptr;
    if (cs == nullptr) {
      // One of this app's containers that the RM no longer holds: it completed, or was lost
      // with its node, before the AM heard. YARN ignores such releases; so do we.
      ignored.push_back(r);
      continue;
    }
    if (cs->is_am)
      return reply(
          absl::InvalidArgumentError(absl::StrCat("cannot release the AM container '", r, "'")));
    if (!named.insert(*id).second) continue;  // named twice in one request
    update.releases.push_back(*id);
    released.push_back(
        {*id, cs->resource, cs->allocated_ms, ctx_->scheduler->node(cs->node)->name});
  }
  for (const auto& b : req.blacklist_additions()) update.blacklist_additions.push_back(b);
  for (const auto& b : req.blacklist_removals()) update.blacklist_removals.push_back(b);
  if (absl::Status s = ctx_->scheduler->UpdateRequests(at.sched_app, update); !s.ok())
    return reply(s);
  for (const Released& r : released)
    ctx_->containers->Forget(r.id, r.resource, r.allocated_ms, r.node);
  // Told to the AM in the reply's diagnostics, and logged.
  std::vector<std::string> diagnostics;
  for (const std::string& r : ignored) {
    log::Info("release_ignored", {{"attempt", at.attempt_id},
                                  {"container", r},
                                  {"reason", "not held by the RM (completed or lost already)"}});
    diagnostics.push_back(absl::StrCat("release of ", r,
                                       " ignored: the RM no longer holds it (completed or lost)"));
  }
  // New demand or freed containers: a pass soon, not at the timer's next tick.
  if (req.asks_size() > 0 || !released.empty() || req.update_requests_size() > 0) {
    ctx_->request_prompt_pass();
  } else {
    ctx_->request_pass();
  }
  const int64_t wait_ms = std::min(req.wait_ms(), ctx_->options->max_allocate_wait_ms);
  if (holding_ && wait_ms > 0 && diagnostics.empty() && !HasNews(at) &&
      parked_.size() < static_cast<size_t>(ctx_->options->max_parked_allocates)) {
    const std::string attempt_id = at.attempt_id;
    Parked& p = parked_[attempt_id];
    p.token = token;
    p.reply = std::move(reply);
    p.timer = ctx_->loop->Schedule(wait_ms, [this, attempt_id] { AnswerParked(attempt_id); });
    return;
  }
  reply(BuildReply(app, std::move(diagnostics)));
}

void AmService::DropParked(const std::string& attempt_id, absl::string_view why) {
  auto held = parked_.find(attempt_id);
  if (held == parked_.end()) return;
  Parked p = std::move(held->second);
  parked_.erase(held);
  ctx_->loop->Cancel(p.timer);
  p.reply(absl::AbortedError(absl::StrCat(attempt_id, ": ", why)));
}

bool AmService::HasNews(const RmAttempt& at) const {
  return at.mailbox.HasNews() || at.amrm_key_id != ctx_->keys->amrm().current().id;
}

void AmService::NotifyNews(const std::string& app_id) {
  if (parked_.empty()) return;
  const RmApp* app = ctx_->apps->Find(app_id);
  if (app == nullptr || app->attempts.empty()) return;
  const std::string& attempt_id = app->current().attempt_id;
  if (!parked_.contains(attempt_id)) return;
  woken_.insert(attempt_id);
  if (answer_posted_) return;
  answer_posted_ = true;
  ctx_->loop->Post([this] { AnswerWoken(); });
}

void AmService::AnswerWoken() {
  answer_posted_ = false;
  absl::flat_hash_set<std::string> woken = std::move(woken_);
  woken_.clear();
  for (const std::string& id : woken) AnswerParked(id);
}

void AmService::AnswerParked(const std::string& attempt_id) {
  auto it = parked_.find(attempt_id);
  if (it == parked_.end()) return;
  Parked p = std::move(it->second);
  parked_.erase(it);
  ctx_->loop->Cancel(p.timer);
  // Checked again: the attempt may have ended, or its key rolled, while the call was held.
  absl::StatusOr<const RmApp*> who = Authenticate(p.token);
  if (!who.ok()) return p.reply(who.status());
  ctx_->apps->AmHeard(**who);  // its AM was waiting on the call all along
  p.reply(BuildReply(**who, {}));
}

v1::AllocateResponse AmService::BuildReply(const RmApp& app,
                                          std::vector<std::string> diagnostics) {
  AmMailbox& mailbox = ctx_->apps->mailbox(app);
  v1::AllocateResponse resp;
  for (std::string& d : diagnostics) resp.add_diagnostics(std::move(d));
  // A call with the last reply's id: the AM has that reply, and the completed statuses in it
  // (their NMs may forget them, YARN-1372).
  ctx_->containers->Acknowledged(mailbox.Fill(&resp));
  const scheduler::Scheduler& sched = *ctx_->scheduler;
  *resp.mutable_available_resources() =
      ctx_->ToProto((sched.cluster_total() - sched.cluster_allocated()).ClampedAtZero());
  resp.set_num_cluster_nodes(sched.num_nodes());
  // The AMRM master key rolled since this attempt's token was issued: hand the AM a token under
  // the current key (YARN's rolled AMRM token), before the old key expires.
  if (std::optional<v1::Token> rolled = ctx_->apps->RollAmRmToken(app))
    *resp.mutable_amrm_token() = *std::move(rolled);
  mailbox.Remember(resp);
  return resp;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> AmService::FinishApplicationMaster(
    const v1::Token& token, const v1::FinishApplicationMasterRequest& req) {
  auto who = Authenticate(token);
  if (!who.ok()) return who.status();
  FinalStatus final_status = req.final_status();
  if (final_status != v1::FINAL_SUCCEEDED && final_status != v1::FINAL_KILLED)
    final_status = v1::FINAL_FAILED;
  if (absl::Status s = ctx_->apps->AttemptUnregistered(**who, final_status, req.diagnostics());
      !s.ok())
    return s;
  v1::FinishApplicationMasterResponse resp;
  resp.set_is_unregistered(true);
  return resp;
}

}  // namespace weft::rm
