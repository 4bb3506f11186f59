// Copyright Weft authors.
#include "rm/app_lifecycle.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace weft::rm {
namespace {

struct AppTransition {
  AppState from;
  AppEvent event;
  AppState to;
};
struct AttemptTransition {
  AttemptState from;
  AttemptEvent event;
  AttemptState to;
};

// The application state machine. An app is ACCEPTED while an attempt waits for or runs its AM
// before registration, RUNNING once that AM registered; a failed attempt with attempts left
// takes it back to ACCEPTED.
constexpr AppTransition kAppTable[] = {
    {v1::APP_NEW, AppEvent::kAccepted, v1::APP_ACCEPTED},
    {v1::APP_SUBMITTED, AppEvent::kAccepted, v1::APP_ACCEPTED},
    {v1::APP_ACCEPTED, AppEvent::kAccepted, v1::APP_ACCEPTED},
    {v1::APP_RUNNING, AppEvent::kAccepted, v1::APP_ACCEPTED},
    {v1::APP_ACCEPTED, AppEvent::kAttemptRegistered, v1::APP_RUNNING},
    {v1::APP_RUNNING, AppEvent::kAttemptRegistered, v1::APP_RUNNING},
    {v1::APP_NEW, AppEvent::kFailed, v1::APP_FAILED},
    {v1::APP_SUBMITTED, AppEvent::kFailed, v1::APP_FAILED},
    {v1::APP_ACCEPTED, AppEvent::kFinished, v1::APP_FINISHED},
    {v1::APP_ACCEPTED, AppEvent::kFailed, v1::APP_FAILED},
    {v1::APP_ACCEPTED, AppEvent::kKilled, v1::APP_KILLED},
    {v1::APP_RUNNING, AppEvent::kFinished, v1::APP_FINISHED},
    {v1::APP_RUNNING, AppEvent::kFailed, v1::APP_FAILED},
    {v1::APP_RUNNING, AppEvent::kKilled, v1::APP_KILLED},
    {v1::APP_NEW, AppEvent::kKilled, v1::APP_KILLED},
    {v1::APP_SUBMITTED, AppEvent::kKilled, v1::APP_KILLED},
};

// The attempt state machine. An AM may register before the NM's launch reply reaches the RM
// (ALLOCATED -> RUNNING), and may unregister before it registered (YARN allows both).
constexpr AttemptTransition kAttemptTable[] = {
    {v1::ATTEMPT_NEW, AttemptEvent::kScheduled, v1::ATTEMPT_SCHEDULED},
    {v1::ATTEMPT_SUBMITTED, AttemptEvent::kScheduled, v1::ATTEMPT_SCHEDULED},
    {v1::ATTEMPT_SCHEDULED, AttemptEvent::kAmAllocated, v1::ATTEMPT_ALLOCATED},
    // After an RM restart, its AM container turned out never to have started (its node does
    // not have it) before its AM registered: it is asked for again, in the same attempt.
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kScheduled, v1::ATTEMPT_SCHEDULED},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kScheduled, v1::ATTEMPT_SCHEDULED},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kAmLaunched, v1::ATTEMPT_LAUNCHED},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kRegistered, v1::ATTEMPT_RUNNING},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kRegistered, v1::ATTEMPT_RUNNING},
    // Its AM registers again after an RM restart (AM_RESYNC).
    {v1::ATTEMPT_RUNNING, AttemptEvent::kRegistered, v1::ATTEMPT_RUNNING},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kUnregistered, v1::ATTEMPT_FINISHING},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kUnregistered, v1::ATTEMPT_FINISHING},
    {v1::ATTEMPT_RUNNING, AttemptEvent::kUnregistered, v1::ATTEMPT_FINISHING},
    {v1::ATTEMPT_FINISHING, AttemptEvent::kUnregistered, v1::ATTEMPT_FINISHING},
    // The app's end reaches every attempt that has not ended on its own.
    {v1::ATTEMPT_NEW, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_SUBMITTED, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_SCHEDULED, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_RUNNING, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_FINISHING, AttemptEvent::kFinished, v1::ATTEMPT_FINISHED},
    {v1::ATTEMPT_NEW, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_SUBMITTED, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_SCHEDULED, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_RUNNING, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_FINISHING, AttemptEvent::kFailed, v1::ATTEMPT_FAILED},
    {v1::ATTEMPT_NEW, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_SUBMITTED, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_SCHEDULED, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_ALLOCATED, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_LAUNCHED, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_RUNNING, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
    {v1::ATTEMPT_FINISHING, AttemptEvent::kKilled, v1::ATTEMPT_KILLED},
};

}  // namespace

const char* AppEventName(AppEvent e) {
  switch (e) {
    case AppEvent::kAccepted:
      return "accepted";
    case AppEvent::kAttemptRegistered:
      return "attempt-registered";
    case AppEvent::kFinished:
      return "finished";
    case AppEvent::kFailed:
      return "failed";
    case AppEvent::kKilled:
      return "killed";
  }
  return "?";
}

const char* AttemptEventName(AttemptEvent e) {
  switch (e) {
    case AttemptEvent::kScheduled:
      return "scheduled";
    case AttemptEvent::kAmAllocated:
      return "am-allocated";
    case AttemptEvent::kAmLaunched:
      return "am-launched";
    case AttemptEvent::kRegistered:
      return "registered";
    case AttemptEvent::kUnregistered:
      return "unregistered";
    case AttemptEvent::kFinished:
      return "finished";
    case AttemptEvent::kFailed:
      return "failed";
    case AttemptEvent::kKilled:
      return "killed";
  }
  return "?";
}

absl::StatusOr<AppState> NextAppState(AppState from, AppEvent event) {
  for (const AppTransition& t : kAppTable) {
    if (t.from == from && t.event == event) return t.to;
  }
  return absl::FailedPreconditionError(absl::StrCat("application in state ", AppStateName(from),
                                                    " cannot take event '", AppEventName(event),
                                                    "'"));
}

absl::StatusOr<AttemptState> NextAttemptState(AttemptState from, AttemptEvent event) {
  for (const AttemptTransition& t : kAttemptTable) {
    if (t.from == from && t.event == event) return t.to;
  }
  return absl::FailedPreconditionError(absl::StrCat("attempt in state ", AttemptStateName(from),
                                                    " cannot take event '", AttemptEventName(event),
                                                    "'"));
}

bool IsFinal(AppState s) {
  return s == v1::APP_FINISHED || s == v1::APP_FAILED || s == v1::APP_KILLED;
}

bool IsFinal(AttemptState s) {
  return s == v1::ATTEMPT_FINISHED || s == v1::ATTEMPT_FAILED || s == v1::ATTEMPT_KILLED;
}

AppEvent AppEventFor(FinalStatus final_status) {
  if (final_status == v1::FINAL_SUCCEEDED) return AppEvent::kFinished;
  if (final_status == v1::FINAL_KILLED) return AppEvent::kKilled;
  return AppEvent::kFailed;
}

bool FederationLease::Stale(int64_t now_ms) const {
  if (fence_ms_ <= 0) return false;
  return renewed_ms_ < 0 || now_ms - renewed_ms_ > fence_ms_;
}

bool FederationLease::MustHold(const std::string& app_id, bool federation_uam,
                               int64_t now_ms) const {
  if (!Stale(now_ms)) return false;
  return federation_uam || !no_home_.contains(app_id);
}

std::vector<std::string> FederationLease::Checked(const FederationHomesCheck& check) {
  if (check.fence_ms > 0) fence_ms_ = check.fence_ms;
  if (check.interval_ms > 0) interval_ms_ = check.interval_ms;
  renewed_ms_ = std::max(renewed_ms_, check.heartbeat_ms);
  no_home_ = check.no_home;
  std::vector<std::string> seen;
  for (auto it = held_.begin(); it != held_.end();) {
    if (check.homed_here.contains(*it) || check.no_home.contains(*it) ||
        check.homed_elsewhere.contains(*it)) {
      seen.push_back(*it);
      it = held_.erase(it);
    } else {
      ++it;
    }
  }
  return seen;
}

bool FederationEnds::Add(const std::string& app_id, End end) {
  if (!pending_.try_emplace(app_id, std::move(end)).second) return false;
  to_write_.insert(app_id);
  return true;
}

const FederationEnds::End* FederationEnds::Find(const std::string& app_id) const {
  auto it = pending_.find(app_id);
  return it == pending_.end() ? nullptr : &it->second;
}

std::vector<std::pair<std::string, int64_t>> FederationEnds::TakeToWrite() {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::string& id : to_write_) {
    auto it = pending_.find(id);
    if (it != pending_.end()) out.emplace_back(id, it->second.ended_ms);
  }
  to_write_.clear();
  return out;
}

void FederationEnds::Retry(const std::string& app_id) {
  if (pending_.contains(app_id)) to_write_.insert(app_id);
}

std::optional<FederationEnds::End> FederationEnds::Take(const std::string& app_id) {
  to_write_.erase(app_id);
  auto node = pending_.extract(app_id);
  if (node.empty()) return std::nullopt;
  return std::move(node.mapped());
}

}  // namespace weft::rm
