// Copyright Weft authors. Whom a container runs as (YARN's LinuxContainerExecutor rules).
#ifndef WEFT_NM_CONTAINER_USER_H_
#define WEFT_NM_CONTAINER_USER_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/user_identity.h"

namespace weft::nm {

enum class ContainerRunAs {
  // As the app's user, taken from its RM-signed container token (YARN's
  // LinuxContainerExecutor): the secure choice, and the default.
  kAppUser,
  // As the NodeManager's own user, whoever submitted (YARN's DefaultContainerExecutor): for a
  // single-user NM whose "users" are not Unix users, such as the in-process DRF demo.
  kNmUser,
};

// YARN's container-executor.cfg: banned.users, min.user.id, allowed.system.users.
struct ContainerUserPolicy {
  int64_t min_user_id = 1000;
  std::vector<std::string> banned_users = {"hdfs", "yarn", "mapred", "bin"};
  // Users below min_user_id who may run containers anyway (e.g. "root" on a dev machine).
  std::vector<std::string> allowed_system_users;
};

// The Unix user a container of app user `user` runs as on an NM whose process runs as
// `nm_uid`, or why it may not run there: FailedPrecondition for a user this node does not know;
// PermissionDenied for a banned user, a uid below min_user_id not explicitly allowed, or (an NM
// that is not root cannot switch users) a user other than the NM's own. Each message names the
// user and the rule.
absl::StatusOr<security::UnixUser> ResolveContainerUser(const ContainerUserPolicy& policy,
                                                        absl::string_view user, uid_t nm_uid);

}  // namespace weft::nm

#endif  // WEFT_NM_CONTAINER_USER_H_
