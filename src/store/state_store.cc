// Copyright Weft authors.
#include "store/state_store.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "store/state_names.h"

namespace weft::store {
namespace {

template <size_t N>
bool OneOf(absl::string_view value, const absl::string_view (&allowed)[N]) {
  return std::find(std::begin(allowed), std::end(allowed), value) != std::end(allowed);
}

template <size_t N>
std::string NotOneOf(absl::string_view field, absl::string_view value,
                     const absl::string_view (&allowed)[N]) {
  return absl::StrCat(field, " '", value, "' is not one of ", absl::StrJoin(allowed, ", "));
}

std::string NotOneOf(absl::string_view field, absl::string_view value,
                     const std::vector<std::string>& allowed) {
  return absl::StrCat(field, " '", value, "' is not one of ", absl::StrJoin(allowed, ", "));
}

}  // namespace

absl::Status ValidateApplicationRecord(const ApplicationRecord& app) {
  if (app.app_id.empty()) {
    return absl::InvalidArgumentError("application record: app_id is empty");
  }
  const std::string where = absl::StrCat("application '", app.app_id, "': ");
  if (!ParseAppState(app.state).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, NotOneOf("state", app.state, AppStateNames())));
  }
  if (!ParseFinalStatus(app.final_status).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, NotOneOf("final_status", app.final_status, FinalStatusNames()), " (or empty)"));
  }
  if (app.max_attempts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "max_attempts ", app.max_attempts, " is less than 1"));
  }
  return absl::OkStatus();
}

absl::Status ValidateAttemptRecord(const AttemptRecord& attempt) {
  if (attempt.app_id.empty()) {
    return absl::InvalidArgumentError("attempt record: app_id is empty");
  }
  const std::string where =
      absl::StrCat("attempt ", attempt.attempt_id, " of application '", attempt.app_id, "': ");
  if (attempt.attempt_id < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, "attempt_id ", attempt.attempt_id, " is less than 1"));
  }
  if (!ParseAttemptState(attempt.state).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, NotOneOf("state", attempt.state, AttemptStateNames())));
  }
  return absl::OkStatus();
}

absl::Status ValidateApplicationAndAttempt(const ApplicationRecord& app,
                                           const AttemptRecord& attempt) {
  if (absl::Status s = ValidateApplicationRecord(app); !s.ok()) return s;
  if (absl::Status s = ValidateAttemptRecord(attempt); !s.ok()) return s;
  if (attempt.app_id != app.app_id) {
    return absl::InvalidArgumentError(
        absl::StrCat("attempt ", attempt.attempt_id, " of application '", attempt.app_id,
                     "': app_id does not match application '", app.app_id, "' stored with it"));
  }
  return absl::OkStatus();
}

absl::Status ValidateMasterKeyPurpose(absl::string_view purpose) {
  if (!OneOf(purpose, kMasterKeyPurposes)) {
    return absl::InvalidArgumentError(
        absl::StrCat("master key: ", NotOneOf("purpose", purpose, kMasterKeyPurposes)));
  }
  return absl::OkStatus();
}

absl::Status ValidateNodeAdminRecord(const NodeAdminRecord& node) {
  if (node.node.empty()) return absl::InvalidArgumentError("node admin record: node is empty");
  if (node.node.size() > 255 || node.node.find('/') != std::string::npos ||
      node.node.find('\0') != std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat(
        "node admin record: node '", node.node.substr(0, 64),
        "' is not a node id or host name (at most 255 bytes, no '/' or NUL)"));
  for (const auto& [key, value] : node.attributes) {
    if (key.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("node admin record of '", node.node, "': an attribute name is empty"));
  }
  return absl::OkStatus();
}

absl::Status ValidateMasterKeyRecord(const MasterKeyRecord& key) {
  if (absl::Status s = ValidateMasterKeyPurpose(key.purpose); !s.ok()) return s;
  if (key.secret.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("master key ", key.purpose, "/", key.key_id, ": secret is empty"));
  }
  return absl::OkStatus();
}

}  // namespace weft::store
