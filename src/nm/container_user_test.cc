// Copyright Weft authors.
#include "nm/container_user.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

using ::testing::HasSubstr;

TEST(ContainerUserTest, RootIsRefusedUnlessAllowedExplicitly) {
  ContainerUserPolicy policy;
  absl::StatusOr<security::UnixUser> u = ResolveContainerUser(policy, "root", 0);
  ASSERT_EQ(u.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(u.status().message()), HasSubstr("below the minimum user id 1000"));
  EXPECT_THAT(std::string(u.status().message()), HasSubstr("--allowed-system-users root"));
  policy.allowed_system_users = {"root"};
  u = ResolveContainerUser(policy, "root", 0);
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->uid, 0u);
}

TEST(ContainerUserTest, SystemUsersBannedUsersAndUnknownUsers) {
  ContainerUserPolicy policy;
  // daemon (uid 1 on Debian) is a system user.
  EXPECT_EQ(ResolveContainerUser(policy, "daemon", 0).status().code(),
            absl::StatusCode::kPermissionDenied);
  // nobody (65534) is above the minimum...
  absl::StatusOr<security::UnixUser> nobody = ResolveContainerUser(policy, "nobody", 0);
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  EXPECT_EQ(nobody->uid, 65534u);
  // ... unless banned; a ban wins over an allowance.
  policy.banned_users.push_back("nobody");
  policy.allowed_system_users.push_back("nobody");
  absl::StatusOr<security::UnixUser> banned = ResolveContainerUser(policy, "nobody", 0);
  EXPECT_EQ(banned.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(banned.status().message()), HasSubstr("banned"));
  EXPECT_EQ(ResolveContainerUser(policy, "no-such-user-weft", 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ResolveContainerUser(policy, "../etc", 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ContainerUserTest, AnNmThatIsNotRootRunsOnlyItsOwnUsersContainers) {
  ContainerUserPolicy policy;
  policy.min_user_id = 0;
  absl::StatusOr<security::UnixUser> other = ResolveContainerUser(policy, "nobody", 1000);
  ASSERT_EQ(other.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(other.status().message()), HasSubstr("not root"));
  EXPECT_TRUE(ResolveContainerUser(policy, "nobody", 65534).ok());
}

}  // namespace
}  // namespace weft::nm
