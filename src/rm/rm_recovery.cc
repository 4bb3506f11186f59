// Copyright Weft authors.
#include "rm/rm_recovery.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "rm/app_lifecycle.h"
#include "rm/app_manager.h"
#include "rm/history_recorder.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"

namespace weft::rm {
namespace {

// The app as it was stored, with its attempts (oldest first).
absl::StatusOr<RmApp> ParseApp(const store::ApplicationRecord& rec,
                               const std::vector<store::AttemptRecord>& attempts) {
  RmApp app;
  app.record = rec;
  auto bad = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat("application ", rec.app_id, ": ", what));
  };
  if (!app.context.ParseFromString(rec.submission)) return bad("stored submission does not parse");
  int64_t ts = 0;
  int seq = 0;
  char extra = 0;
  if (std::sscanf(rec.app_id.c_str(), "application_%ld_%d%c", &ts, &seq, &extra) != 2)
    return absl::DataLossError(
        absl::StrCat("stored application id '", rec.app_id, "' is malformed"));
  app.cluster_ts = ts;
  app.seq = seq;
  absl::StatusOr<AppState> state = ParseAppState(rec.state);
  if (!state.ok()) return bad(state.status().message());
  app.state = *state;
  absl::StatusOr<FinalStatus> final_status = ParseFinalStatus(rec.final_status);
  if (!final_status.ok()) return bad(final_status.status().message());
  app.final_status = *final_status;
  for (const store::AttemptRecord& a : attempts) {
    RmAttempt at;
    at.id = a.attempt_id;
    at.attempt_id = absl::StrFormat("appattempt_%d_%04d_%06d", ts, seq, a.attempt_id);
    absl::StatusOr<AttemptState> st = ParseAttemptState(a.state);
    if (!st.ok()) return bad(absl::StrCat("attempt ", a.attempt_id, ": ", st.status().message()));
    at.state = *st;
    at.am_container_id = a.am_container_id;
    at.am_node = a.node;
    at.diagnostics = a.diagnostics;
    at.am_exit_status = a.exit_status;
    at.start_ms = a.start_ms;
    at.finish_ms = a.finish_ms;
    app.attempts.push_back(std::move(at));
  }
  return app;
}

}  // namespace

absl::Status RecoverRmState(const store::RmState& state, RmContext* ctx) {
  if (absl::Status s = ctx->keys->Recover(state.keys); !s.ok()) return s;
  ctx->nodes->RestoreAdmin(state.node_admin);  // before any node registers
  // RmState sorts attempts by (app_id, attempt_id) and apps by app_id: one merge pass.
  size_t next_attempt = 0;
  for (const store::ApplicationRecord& rec : state.apps) {
    std::vector<store::AttemptRecord> attempts;
    while (next_attempt < state.attempts.size() && state.attempts[next_attempt].app_id < rec.app_id)
      ++next_attempt;
    while (next_attempt < state.attempts.size() &&
           state.attempts[next_attempt].app_id == rec.app_id)
      attempts.push_back(state.attempts[next_attempt++]);
    absl::StatusOr<RmApp> parsed = ParseApp(rec, attempts);
    if (!parsed.ok()) return parsed.status();
    const RmApp& app = ctx->apps->Restore(*std::move(parsed));
    if (IsFinal(app.state)) continue;
    log::Info("app_recovered", {{"app", rec.app_id}, {"state", rec.state}});
    if (absl::Status s = ctx->apps->RecoverAttempt(app); !s.ok()) return s;
  }
  // Application history: the finished apps' records again, unless delivered before (a crash
  // may have cut them off), then the RM keeps only its newest max_completed_apps.
  std::vector<const RmApp*> finished;
  for (const auto& [id, app] : ctx->apps->apps())
    if (IsFinal(app.state)) finished.push_back(&app);
  ctx->history->RecoverFinished(finished);
  ctx->apps->EvictFinished();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Recovery of the apps' attempts (AppManager's side of RecoverRmState)

const RmApp& AppManager::Restore(RmApp app) {
  if (app.cluster_ts == ctx_->options->cluster_timestamp_ms)
    next_app_seq_ = std::max(next_app_seq_, app.seq + 1);
  std::string id = app.record.app_id;
  // Tokens of old attempts must name a known attempt to be told they are old.
  for (const RmAttempt& at : app.attempts) by_attempt_[at.attempt_id] = id;
  auto [it, inserted] = apps_.insert_or_assign(id, std::move(app));
  if (IsFinal(it->second.state)) finished_.emplace(it->second.record.finish_ms, id);
  return it->second;
}

absl::Status AppManager::RecoverAttempt(const RmApp& handle) {
  RmApp& app = Own(handle);
  if (app.attempts.empty() || IsFinal(app.current().state)) {
    // The old RM ended an attempt (or stored none) and died before it stored the next one.
    if (FailIfAttemptsUsedUp(app, app.attempts.empty() ? "none" : app.current().diagnostics))
      return absl::OkStatus();
    if (absl::Status s = StartAttempt(app); !s.ok()) {
      EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
                absl::StrCat("The ResourceManager restarted; a new attempt could not start: ",
                             s.message()));
      return absl::OkStatus();
    }
    if (absl::Status s = Transition(app, AppEvent::kAccepted); !s.ok()) return s;
    return Persist(app);
  }
  RmAttempt& at = app.current();
  if (app.context.unmanaged_am()) return RecoverUnmanagedAttempt(app, at);
  const bool has_am = !at.am_container_id.empty();
  absl::Status admitted;
  if (!has_am && app.context.am_sizing().enabled()) {
    // Sized again, as for a new attempt: the decision is not stored.
    RmAttempt self = std::move(app.attempts.back());
    app.attempts.pop_back();
    admitted = SizeAm(app);
    app.attempts.push_back(std::move(self));
  }
  if (admitted.ok()) admitted = AdmitAttempt(app, app.current(), /*ask_for_am=*/!has_am);
  if (!admitted.ok()) {
    EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
              absl::StrCat("The ResourceManager restarted and could not admit ",
                           app.current().attempt_id, " again: ", admitted.message()));
    return absl::OkStatus();
  }
  RmAttempt& live = app.current();
  if (has_am) {
    live.recovered = true;
    live.registered = false;
    awaiting_am_.insert(app.record.app_id);
    // Its launch's reply died with the old RM; the AM runs unless its node says otherwise.
    if (live.state == v1::ATTEMPT_ALLOCATED &&
        !TransitionOrLog(live, AttemptEvent::kAmLaunched, "recover_attempt"))
      return absl::InternalError(absl::StrCat(live.attempt_id, ": could not be marked launched"));
    live.last_heard_ms = ctx_->NowMs();  // a full am_expiry_ms from the restart
  } else if (live.state != v1::ATTEMPT_SCHEDULED) {
    absl::StatusOr<AttemptState> next = NextAttemptState(live.state, AttemptEvent::kScheduled);
    if (!next.ok()) {
      // Stored past SCHEDULED without an AM container: it waits for one like a new attempt.
      log::Warn("attempt_state_repaired", {{"attempt", live.attempt_id},
                                           {"stored", AttemptStateName(live.state)},
                                           {"now", "SCHEDULED"}});
    }
    live.state = next.ok() ? *next : v1::ATTEMPT_SCHEDULED;
  }
  log::Info("attempt_recovered", {{"attempt", live.attempt_id},
                                  {"state", AttemptStateName(live.state)},
                                  {"am_container", live.am_container_id}});
  return absl::OkStatus();
}

absl::Status AppManager::RecoverUnmanagedAttempt(RmApp& app, RmAttempt& at) {
  if (absl::Status s = AdmitAttempt(app, at, /*ask_for_am=*/false); !s.ok()) {
    EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
              absl::StrCat("The ResourceManager restarted and could not admit ", at.attempt_id,
                           " again: ", s.message()));
    return absl::OkStatus();
  }
  // Its AM keeps the token it has (the keys are recovered); the report carries a fresh one.
  at.amrm_token = ctx_->keys->IssueAmRmToken(at.attempt_id, &at.amrm_key_id);
  at.recovered = true;
  at.registered = false;
  if (at.state == v1::ATTEMPT_SCHEDULED)
    if (absl::Status s = Transition(at, AttemptEvent::kAmAllocated); !s.ok()) return s;
  if (at.state == v1::ATTEMPT_ALLOCATED)
    if (absl::Status s = Transition(at, AttemptEvent::kAmLaunched); !s.ok()) return s;
  at.last_heard_ms = ctx_->NowMs();  // a full am_expiry_ms from the restart
  log::Info("attempt_recovered", {{"attempt", at.attempt_id},
                                  {"state", AttemptStateName(at.state)},
                                  {"unmanaged", "true"}});
  return absl::OkStatus();
}

void AppManager::AmContainersMissing(const std::string& node_id,
                                     const absl::flat_hash_set<std::string>& reported) {
  std::vector<std::string> missing;  // collected first: failing an attempt changes the apps
  for (auto it = awaiting_am_.begin(); it != awaiting_am_.end();) {
    const RmApp* app = Find(*it);
    if (app == nullptr || IsFinal(app->state) || app->attempts.empty() ||
        !app->current().recovered || app->current().am_recovered || IsFinal(app->current().state)) {
      awaiting_am_.erase(it++);  // settled
      continue;
    }
    const RmAttempt& at = app->current();
    if (at.am_node == node_id && !reported.contains(at.am_container_id)) missing.push_back(*it);
    ++it;
  }
  for (const std::string& id : missing) {
    RmApp& app = apps_.at(id);
    RmAttempt& at = app.current();
    const std::string why = absl::StrCat("AM container ", at.am_container_id, " is not on node ",
                                         node_id, " after the ResourceManager restarted");
    if (at.state == v1::ATTEMPT_RUNNING) {
      at.am_exit_status = v1::CONTAINER_EXIT_LOST_NODE;
      AttemptFailed(app, why);  // its AM ran: the node lost it
      continue;
    }
    // It never started: the same attempt asks for an AM container again.
    log::Warn("am_container_asked_again", {{"attempt", at.attempt_id}, {"why", why}});
    if (!TransitionOrLog(at, AttemptEvent::kScheduled, "am_container_missing")) continue;
    Unadmit(at);  // it holds nothing: its AM never ran
    at.am_container_id.clear();
    at.am_node.clear();
    at.recovered = false;
    if (absl::Status s = AdmitAttempt(app, at, /*ask_for_am=*/true); !s.ok()) {
      EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
                absl::StrCat(why, "; asking for it again failed: ", s.message()));
      continue;
    }
    Persist(app).IgnoreError();  // logged, retried
    ctx_->request_pass();
  }
}

}  // namespace weft::rm
