// Copyright Weft authors. How stores, logs and reports spell the RM's typed states: the proto
// enum value's name without its prefix (ALLOCATED for ATTEMPT_ALLOCATED). The enums in
// proto/weft/v1/common.proto are the one list; nothing here repeats it, and nothing else in
// Weft maps these enums to names (the CLI, the REST API and the logs all come here).
#ifndef WEFT_STORE_STATE_NAMES_H_
#define WEFT_STORE_STATE_NAMES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "weft/v1/common.pb.h"

namespace weft::store {

// The stored spelling. A value 0 (unset) is "UNSPECIFIED", which no store takes (the record
// validators refuse it).
std::string AppStateName(v1::ApplicationState s);
std::string AttemptStateName(v1::ApplicationAttemptState s);
std::string NodeStateName(v1::NodeState s);
// "" for FINAL_STATUS_UNDEFINED (nothing reported yet), else "SUCCEEDED", "FAILED", "KILLED".
std::string FinalStatusName(v1::FinalApplicationStatus s);

// What users read (the CLI, the REST API, the web UI): YARN's names, in which an unset state
// reads NEW (YARN has no unset state) and an unset final status UNDEFINED.
std::string ReportedAppState(v1::ApplicationState s);
std::string ReportedNodeState(v1::NodeState s);
std::string ReportedFinalStatus(v1::FinalApplicationStatus s);

// Parsing refuses unknown names, prefixed names and the UNSPECIFIED values with
// InvalidArgument naming the text. A final status may also be "" or "UNDEFINED".
absl::StatusOr<v1::ApplicationState> ParseAppState(absl::string_view name);
absl::StatusOr<v1::ApplicationAttemptState> ParseAttemptState(absl::string_view name);
absl::StatusOr<v1::FinalApplicationStatus> ParseFinalStatus(absl::string_view name);

// Every valid name, in the enum's (lifecycle) order: for error messages and docs.
std::vector<std::string> AppStateNames();
std::vector<std::string> AttemptStateNames();
std::vector<std::string> FinalStatusNames();  // without "" (UNDEFINED first)

}  // namespace weft::store

#endif  // WEFT_STORE_STATE_NAMES_H_
