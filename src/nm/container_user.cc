// Copyright Weft authors.
#include "nm/container_user.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace weft::nm {

absl::StatusOr<security::UnixUser> ResolveContainerUser(const ContainerUserPolicy& policy,
                                                        absl::string_view user, uid_t nm_uid) {
  const auto listed = [](const std::vector<std::string>& list, absl::string_view name) {
    return std::find(list.begin(), list.end(), name) != list.end();
  };
  if (listed(policy.banned_users, user))
    return absl::PermissionDeniedError(
        absl::StrCat("user '", user, "' is banned from running containers (banned users)"));
  absl::StatusOr<security::UnixUser> u = security::LookUpUser(user);
  if (!u.ok())
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot run a container as '", user, "' on this node: ", u.status().message()));
  if (static_cast<int64_t>(u->uid) < policy.min_user_id &&
      !listed(policy.allowed_system_users, u->name))
    return absl::PermissionDeniedError(absl::StrCat(
        "user '", u->name, "' (uid ", u->uid, ") is below the minimum user id ",
        policy.min_user_id, " for containers and not an allowed system user",
        u->uid == 0 ? " (to run containers as root on purpose: --allowed-system-users root)"
                    : ""));
  if (nm_uid != 0 && u->uid != nm_uid)
    return absl::PermissionDeniedError(absl::StrCat(
        "this NodeManager runs as uid ", nm_uid, ", not root, so it runs containers only for its "
        "own user, not for '", u->name, "' (uid ", u->uid, ")"));
  return u;
}

}  // namespace weft::nm
