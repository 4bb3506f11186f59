// Copyright Weft authors.
#include "store/state_names.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace weft::store {
namespace {

// The names of an enum's values after `prefix`, skipping value 0 (UNSPECIFIED) unless
// `keep_zero`, whose name is then `zero_name`.
std::vector<std::string> Names(const google::protobuf::EnumDescriptor* d, absl::string_view prefix,
                               bool keep_zero = false, absl::string_view zero_name = "") {
  std::vector<std::string> out;
  for (int i = 0; i < d->value_count(); ++i) {
    const google::protobuf::EnumValueDescriptor* v = d->value(i);
    if (v->number() == 0) {
      if (keep_zero) out.emplace_back(zero_name);
      continue;
    }
    out.emplace_back(absl::StripPrefix(v->name(), prefix));
  }
  return out;
}

}  // namespace

std::string AppStateName(v1::ApplicationState s) {
  if (s == v1::APPLICATION_STATE_UNSPECIFIED) return "UNSPECIFIED";
  return std::string(absl::StripPrefix(v1::ApplicationState_Name(s), "APP_"));
}

std::string AttemptStateName(v1::ApplicationAttemptState s) {
  if (s == v1::ATTEMPT_STATE_UNSPECIFIED) return "UNSPECIFIED";
  return std::string(absl::StripPrefix(v1::ApplicationAttemptState_Name(s), "ATTEMPT_"));
}

std::string NodeStateName(v1::NodeState s) {
  if (s == v1::NODE_STATE_UNSPECIFIED) return "UNSPECIFIED";
  return std::string(absl::StripPrefix(v1::NodeState_Name(s), "NODE_"));
}

std::string ReportedAppState(v1::ApplicationState s) {
  return s == v1::APPLICATION_STATE_UNSPECIFIED ? "NEW" : AppStateName(s);
}

std::string ReportedNodeState(v1::NodeState s) {
  return s == v1::NODE_STATE_UNSPECIFIED ? "NEW" : NodeStateName(s);
}

std::string ReportedFinalStatus(v1::FinalApplicationStatus s) {
  return s == v1::FINAL_STATUS_UNDEFINED ? "UNDEFINED" : FinalStatusName(s);
}

std::string FinalStatusName(v1::FinalApplicationStatus s) {
  if (s == v1::FINAL_STATUS_UNDEFINED) return "";
  return std::string(absl::StripPrefix(v1::FinalApplicationStatus_Name(s), "FINAL_"));
}

absl::StatusOr<v1::ApplicationState> ParseAppState(absl::string_view name) {
  v1::ApplicationState s;
  if (!absl::StartsWith(name, "APP") &&
      v1::ApplicationState_Parse(absl::StrCat("APP_", name), &s) &&
      s != v1::APPLICATION_STATE_UNSPECIFIED)
    return s;
  return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not an application state"));
}

absl::StatusOr<v1::ApplicationAttemptState> ParseAttemptState(absl::string_view name) {
  v1::ApplicationAttemptState s;
  if (!absl::StartsWith(name, "ATTEMPT") &&
      v1::ApplicationAttemptState_Parse(absl::StrCat("ATTEMPT_", name), &s) &&
      s != v1::ATTEMPT_STATE_UNSPECIFIED)
    return s;
  return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not an attempt state"));
}

absl::StatusOr<v1::FinalApplicationStatus> ParseFinalStatus(absl::string_view name) {
  v1::FinalApplicationStatus s;
  // "Not reported yet" is "" or UNDEFINED (YARN's name).
  if (name.empty() || name == "UNDEFINED") return v1::FINAL_STATUS_UNDEFINED;
  if (!absl::StartsWith(name, "FINAL") && !absl::StartsWith(name, "STATUS") &&
      v1::FinalApplicationStatus_Parse(absl::StrCat("FINAL_", name), &s))
    return s;
  return absl::InvalidArgumentError(absl::StrCat("'", name, "' is not a final status"));
}

std::vector<std::string> AppStateNames() {
  return Names(v1::ApplicationState_descriptor(), "APP_");
}

std::vector<std::string> AttemptStateNames() {
  return Names(v1::ApplicationAttemptState_descriptor(), "ATTEMPT_");
}

std::vector<std::string> FinalStatusNames() {
  return Names(v1::FinalApplicationStatus_descriptor(), "FINAL_", true, "UNDEFINED");
}

}  // namespace weft::store
