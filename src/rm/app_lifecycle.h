// Copyright Weft authors. The lifecycle of applications and their attempts in the RM: typed
// states, the events that move them, and the one transition table each (YARN's RMAppImpl and
// RMAppAttemptImpl state machines, reduced to what Weft's RM does).
//
// A state's name, as stores and reports spell it, is its proto enum's name without the prefix
// (weft.v1.ApplicationState APP_RUNNING -> "RUNNING", ApplicationAttemptState ATTEMPT_ALLOCATED
// -> ALLOCATED); the proto enums are the one list of names.
#ifndef WEFT_RM_APP_LIFECYCLE_H_
#define WEFT_RM_APP_LIFECYCLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_names.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

using AppState = v1::ApplicationState;
using AttemptState = v1::ApplicationAttemptState;
using FinalStatus = v1::FinalApplicationStatus;

// What happens to an application.
enum class AppEvent {
  kAccepted,           // stored and admitted by the scheduler (or a new attempt started)
  kAttemptRegistered,  // its current attempt's AM registered
  kFinished,           // its AM unregistered with SUCCEEDED
  kFailed,             // its AM unregistered with FAILED, or its last attempt failed
  kKilled,             // a client killed it, or its AM unregistered with KILLED
};

// What happens to an attempt.
enum class AttemptEvent {
  kScheduled,     // its AM container is asked for
  kAmAllocated,   // the scheduler allocated its AM container
  kAmLaunched,    // its AM container started on its node
  kRegistered,    // its AM called RegisterApplicationMaster
  kUnregistered,  // its AM called FinishApplicationMaster
  kFinished,      // its application ended as FINISHED
  kFailed,        // its AM container failed, its AM expired, or the RM restarted
  kKilled,        // its application was killed
};

const char* AppEventName(AppEvent e);
const char* AttemptEventName(AttemptEvent e);

// The state `event` leads to from `from`; FailedPrecondition naming the state and event when
// the table has no such transition (the caller's bug or a late event: state stays).
absl::StatusOr<AppState> NextAppState(AppState from, AppEvent event);
absl::StatusOr<AttemptState> NextAttemptState(AttemptState from, AttemptEvent event);

bool IsFinal(AppState s);
bool IsFinal(AttemptState s);

// Names without the proto prefix, and back: the stores' spelling (store/state_names.h).
using store::AppStateName;
using store::AttemptStateName;
using store::FinalStatusName;
using store::ParseAppState;
using store::ParseAttemptState;
using store::ParseFinalStatus;

// The application state an AM's final status leads to (YARN: SUCCEEDED -> FINISHED), and the
// event that takes it there.
AppEvent AppEventFor(FinalStatus final_status);

// ---- Federation homes (issue 27, "fenced homes").
//
// In a federation an app's home record in the federation state store says which sub-cluster
// runs it; the GPG may move it elsewhere while this RM is silent (LOST). The RM's
// sub-cluster heartbeater (federation/membership/sub_cluster_heartbeater.h) checks, after each
// successful heartbeat, the homes of the RM's unfinished apps, has the RM kill those homed
// elsewhere, and so renews the RM's federation lease.

// An unfinished app of this RM, as the heartbeater checks it.
struct FederationApp {
  std::string app_id;
  // ApplicationSubmissionContext.federation_home_sub_cluster_id: non-empty for a federation
  // UAM (a secondary's unmanaged AM under its home app's id), "" otherwise.
  std::string federation_home_sub_cluster_id;
};

// What one heartbeater tick found, for the RM's apps it listed.
struct FederationHomesCheck {
  // When the tick's heartbeat was taken (RM loop clock, ms): the lease runs from here.
  int64_t heartbeat_ms = 0;
  // How long the lease lasts, ms (> 0): past heartbeat_ms + fence_ms without a new check, new
  // attempts of federated apps wait (FederationLease).
  int64_t fence_ms = 0;
  // How often the heartbeater checks, ms (its interval); 0 = not said.
  int64_t interval_ms = 0;
  std::set<std::string> homed_here;  // home record found, naming where this copy may run
  std::set<std::string> no_home;     // no home record (submitted to the RM directly)
  // Apps whose home record names another sub-cluster: app id -> the diagnostics they are
  // killed with.
  std::map<std::string, std::string> homed_elsewhere;
};

// The RM's side of the lease: which apps are federated as of the last check, and the apps whose
// next attempt waits for a check. Pure (time is an argument); thread-compatible.
//
// A federated app (a home record, or a federation UAM) whose attempt fails while the lease is
// stale - no check for longer than the fence, or none yet once the fence is known - must not
// start a new attempt: its home may have moved while this RM was silent, and a second copy
// would run. It is held until a check has seen it: then it is killed if homed elsewhere, else
// its attempt starts. The same holds for an AM launch (AppManager): an AM container allocated,
// or an unmanaged AM's attempt started, while the lease is stale - a first attempt included,
// e.g. a submission queued while a stopped RM was LOST - is not launched (no AMRM token) until
// a check has seen the app. Only a federation sub-cluster's RM holds. An app no check has seen
// yet counts as federated (a router writes the home before it submits); one the last check
// found without a home record does not.
class FederationLease {
 public:
  // `fence_ms`: the lease's length until a check says otherwise; 0 = unknown until the first
  // check (nothing is held before it).
  explicit FederationLease(int64_t fence_ms = 0) : fence_ms_(fence_ms) {}

  // Whether the lease is stale at `now_ms` (never while the fence is unknown).
  bool Stale(int64_t now_ms) const;
  // Whether a new attempt of the app must wait for the next check.
  bool MustHold(const std::string& app_id, bool federation_uam, int64_t now_ms) const;
  // Whether the last check found the app without a home record (submitted to this RM
  // directly): not federated. An app no check has seen yet counts as federated.
  bool WithoutHome(const std::string& app_id) const { return no_home_.contains(app_id); }
  void Hold(const std::string& app_id) { held_.insert(app_id); }
  // The app ended (or is gone): not held any more.
  void Forget(const std::string& app_id) { held_.erase(app_id); }
  // Applies a check: renews the lease (to heartbeat_ms, if later than the last), keeps its
  // verdicts, and returns the held apps it saw (no longer held: the caller kills those homed
  // elsewhere and starts the others' attempts). Held apps it did not see stay held.
  std::vector<std::string> Checked(const FederationHomesCheck& check);

  int64_t fence_ms() const { return fence_ms_; }
  int64_t renewed_ms() const { return renewed_ms_; }  // -1 before the first check
  // How often checks come, as the last one said, ms; 0 = not said.
  int64_t interval_ms() const { return interval_ms_; }
  const std::set<std::string>& held() const { return held_; }

 private:
  int64_t fence_ms_;
  int64_t renewed_ms_ = -1;
  int64_t interval_ms_ = 0;
  std::set<std::string> no_home_;  // as of the last check
  std::set<std::string> held_;
};

// The ends of this sub-cluster's federated apps that wait to be written into their home
// records (YARN's FINAL_SAVING, with the federation store as the store): an app killed or
// failed here stays in its last live state, and is reported so, until its home record says it
// ended. The GPG resubmits only apps whose record does not say so, so without this an app that
// a client saw end, and whose sub-cluster was lost before the GPG's next sweep, would run again
// elsewhere. (An AM's unregistration is written before the RM takes it: federation_fencing.h.)
// The first end wins; a second (a kill of a failing app) changes nothing. Pure;
// thread-compatible.
class FederationEnds {
 public:
  struct End {
    AppEvent event = AppEvent::kKilled;
    FinalStatus final_status = v1::FINAL_KILLED;
    std::string diagnostics;
    int64_t ended_ms = 0;  // when the RM ended it (loop clock), written as finished_ms
  };

  // Adds the end of `app_id`, to be written; false (nothing changes) when one waits already.
  bool Add(const std::string& app_id, End end);
  // The end waiting for `app_id`, or nullptr.
  const End* Find(const std::string& app_id) const;
  // The ends to write now, (app id, ended_ms), each handed out once until Retry.
  std::vector<std::pair<std::string, int64_t>> TakeToWrite();
  // The write of `app_id`'s end failed for a reason that passes: handed out again.
  void Retry(const std::string& app_id);
  // Whether an end waits to be written (or rewritten): someone must call TakeToWrite.
  bool HasToWrite() const { return !to_write_.empty(); }
  // Removes the end of `app_id` (it was written, or the app ended otherwise) and returns it.
  std::optional<End> Take(const std::string& app_id);

 private:
  std::map<std::string, End> pending_;
  std::set<std::string> to_write_;
};

}  // namespace weft::rm

#endif  // WEFT_RM_APP_LIFECYCLE_H_
