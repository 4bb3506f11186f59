// Copyright Weft authors. Unix users and their groups, as the OS knows them.
#ifndef WEFT_SECURITY_USER_IDENTITY_H_
#define WEFT_SECURITY_USER_IDENTITY_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::security {

struct UnixUser {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;                    // primary group
  std::vector<gid_t> gids;          // every group, the primary first (getgrouplist)
  std::vector<std::string> groups;  // their names, same order; unnamed gids are left out
  std::string home;
};

// The user with this uid from the passwd database (files, LDAP... through NSS), with its
// groups. NotFound when no user has it; when the lookup itself fails, the errno's error
// (common/errors.h: e.g. Unavailable for EINTR or EAGAIN).
absl::StatusOr<UnixUser> LookUpUser(uid_t uid);
// The same by name. InvalidArgument for a name that is not a plausible user name; NotFound when
// there is no such user.
absl::StatusOr<UnixUser> LookUpUser(absl::string_view name);

// The user this process runs as (its effective uid).
absl::StatusOr<UnixUser> CurrentUser();

}  // namespace weft::security

#endif  // WEFT_SECURITY_USER_IDENTITY_H_
