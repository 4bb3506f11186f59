// Copyright Weft authors. Access control lists in Apache Hadoop's string form.
#ifndef WEFT_COMMON_ACL_H_
#define WEFT_COMMON_ACL_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// Who may do something: a set of users and a set of groups, or everyone. The string form is
// Hadoop's (org.apache.hadoop.security.authorize.AccessControlList), as YARN's queue ACLs use
// it:
//
//   "alice,bob ops,admins"  users alice and bob, and members of groups ops and admins
//   "alice,bob"             users only
//   " ops"                  groups only (a leading space: the user list is empty)
//   "*"                     everyone (also "* ..." or " *": a whole part that is "*")
//   "" or " "               nobody
//
// Users are separated by commas, then a single space, then groups separated by commas.
// Names are matched exactly (case-sensitive). A value type; thread-compatible.
class AccessControlList {
 public:
  // Parses the string form. InvalidArgument naming the bad entry when a name is not a
  // plausible Unix user/group name ([A-Za-z0-9._-]+, optionally ending in '$', at most 32
  // characters), when an entry is empty ("alice,,bob", "alice, bob": a space ends the user
  // list) or when "*" is mixed with names in one list.
  static absl::StatusOr<AccessControlList> Parse(absl::string_view text);

  // "*" and " ".
  static AccessControlList Everyone();
  static AccessControlList Nobody();

  // Nobody, as " ".
  AccessControlList() = default;

  // True when the list allows everyone, names `user`, or names one of `groups` (the user's
  // groups, as the caller resolved them).
  bool IsAllowed(absl::string_view user, const std::vector<std::string>& groups) const;

  // The canonical form, which Parse accepts back: "*" for everyone, otherwise the sorted users
  // joined by ',', one space, the sorted groups joined by ',' (Hadoop's getAclString), e.g.
  // "alice,bob admins", "alice " or " " (nobody).
  std::string ToString() const;

  bool allows_everyone() const { return everyone_; }
  const std::set<std::string>& users() const { return users_; }
  const std::set<std::string>& groups() const { return groups_; }

  friend bool operator==(const AccessControlList& a, const AccessControlList& b) = default;

 private:
  bool everyone_ = false;
  std::set<std::string> users_;
  std::set<std::string> groups_;
};

}  // namespace weft

#endif  // WEFT_COMMON_ACL_H_
