// Copyright Weft authors. The lifecycle of applications and their attempts in the RM: typed
// states, the events that move them, and the one transition table each (YARN's RMAppImpl and
// RMAppAttemptImpl state machines, reduced to what Weft's RM does).
//
// A state's name, as stores and reports spell it, is its proto enum's name without the prefix
// (weft.v1.ApplicationState APP_RUNNING -> "RUNNING", ApplicationAttemptState ATTEMPT_ALLOCATED
// -> ALLOCATED); the proto enums are the one list of names.
#ifndef WEFT_RM_APP_LIFECYCLE_H_
#define WEFT_RM_APP_LIFECYCLE_H_

#include <string>

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

}  // namespace weft::rm

#endif  // WEFT_RM_APP_LIFECYCLE_H_
