// Copyright Weft authors.
#include "security/user_identity.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace weft::security {
namespace {

TEST(UserIdentityTest, RootIsFoundByUidAndName) {
  absl::StatusOr<UnixUser> by_uid = LookUpUser(static_cast<uid_t>(0));
  ASSERT_TRUE(by_uid.ok()) << by_uid.status();
  EXPECT_EQ(by_uid->name, "root");
  ASSERT_FALSE(by_uid->gids.empty());
  EXPECT_EQ(by_uid->gids.front(), by_uid->gid);
  absl::StatusOr<UnixUser> by_name = LookUpUser("root");
  ASSERT_TRUE(by_name.ok());
  EXPECT_EQ(by_name->uid, 0u);
  EXPECT_EQ(by_name->groups.front(), "root");
}

TEST(UserIdentityTest, CurrentUserIsTheEffectiveUid) {
  absl::StatusOr<UnixUser> me = CurrentUser();
  ASSERT_TRUE(me.ok());
  EXPECT_EQ(me->uid, geteuid());
}

TEST(UserIdentityTest, UnknownAndMalformedNames) {
  EXPECT_EQ(LookUpUser("no-such-user-weft").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(LookUpUser("bad\nname").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LookUpUser("-rf").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(LookUpUser(static_cast<uid_t>(4000000000u)).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::security
