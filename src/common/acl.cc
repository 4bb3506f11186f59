#include "common/acl.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft {
namespace {

constexpr size_t kMaxNameLength = 32;

bool ValidAclName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  if (name.back() == '$') name.remove_suffix(1);  // Unix machine accounts ("host$")
  if (name.empty()) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-') return false;
  }
  return true;
}

// Reads one comma-separated list ("users" or "groups") into `out`.
absl::Status ParseNames(absl::string_view list, absl::string_view what,
                        std::set<std::string>* out) {
  if (list.empty()) return absl::OkStatus();
  for (absl::string_view name : absl::StrSplit(list, ',')) {
    if (name.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("empty ", what, " entry in '", list,
                       "' (no spaces after commas: ", "one space separates users from groups)"));
    if (name == "*")
      return absl::InvalidArgumentError(absl::StrCat(
          "'*' must stand alone for everyone, not in the ", what, " list '", list, "'"));
    if (!ValidAclName(name)) {
      std::string hint;
      if (absl::StrContains(name, ' '))
        hint = " (one space separates users from groups; names have no spaces)";
      return absl::InvalidArgumentError(
          absl::StrCat(what, " entry '", name, "' is not a valid name: [A-Za-z0-9._-]+, ",
                       "optionally ending in '$', at most ", kMaxNameLength, " characters", hint));
    }
    out->insert(std::string(name));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<AccessControlList> AccessControlList::Parse(absl::string_view text) {
  absl::string_view users = text;
  absl::string_view groups;
  if (size_t space = text.find(' '); space != absl::string_view::npos) {
    users = text.substr(0, space);
    // Hadoop trims entries; trailing blanks after the groups are harmless, so allow them.
    groups = absl::StripTrailingAsciiWhitespace(text.substr(space + 1));
  }
  AccessControlList acl;
  if (users != "*") {
    if (absl::Status s = ParseNames(users, "user", &acl.users_); !s.ok()) return s;
  }
  if (groups != "*") {
    if (absl::Status s = ParseNames(groups, "group", &acl.groups_); !s.ok()) return s;
  }
  // Hadoop: a part that is "*" allows everyone, whatever the other part says.
  if (users == "*" || groups == "*") return Everyone();
  return acl;
}

AccessControlList AccessControlList::Everyone() {
  AccessControlList acl;
  acl.everyone_ = true;
  return acl;
}

AccessControlList AccessControlList::Nobody() { return AccessControlList(); }

bool AccessControlList::IsAllowed(absl::string_view user,
                                  const std::vector<std::string>& groups) const {
  if (everyone_) return true;
  if (!user.empty() && users_.count(std::string(user)) > 0) return true;
  for (const std::string& group : groups) {
    if (groups_.count(group) > 0) return true;
  }
  return false;
}

std::string AccessControlList::ToString() const {
  if (everyone_) return "*";
  return absl::StrCat(absl::StrJoin(users_, ","), " ", absl::StrJoin(groups_, ","));
}

}  // namespace weft
