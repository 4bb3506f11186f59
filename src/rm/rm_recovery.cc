// Copyright Weft authors.
#include "rm/rm_recovery.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/log.h"
#include "rm/app_lifecycle.h"
#include "rm/app_manager.h"
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
    RmApp& app = ctx->apps->Restore(*std::move(parsed));
    if (IsFinal(app.state)) continue;
    log::Info("app_recovered", {{"app", rec.app_id}, {"state", rec.state}});
    if (absl::Status s = ctx->apps->RecoverAttempt(app); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace weft::rm
