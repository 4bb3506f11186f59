#include "common/acl.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

const std::vector<std::string> kNoGroups;

AccessControlList MustParse(absl::string_view text) {
  auto acl = AccessControlList::Parse(text);
  EXPECT_TRUE(acl.ok()) << text << ": " << acl.status();
  return acl.ok() ? *acl : AccessControlList::Nobody();
}

std::string ParseError(absl::string_view text) {
  auto acl = AccessControlList::Parse(text);
  EXPECT_FALSE(acl.ok()) << "'" << text << "' was accepted as " << acl->ToString();
  EXPECT_EQ(acl.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(acl.status().message());
}

TEST(AccessControlListTest, UsersAndGroups) {
  AccessControlList acl = MustParse("alice,bob ops,admins");
  EXPECT_THAT(acl.users(), ElementsAre("alice", "bob"));
  EXPECT_THAT(acl.groups(), ElementsAre("admins", "ops"));
  EXPECT_TRUE(acl.IsAllowed("alice", kNoGroups));
  EXPECT_TRUE(acl.IsAllowed("bob", {"staff"}));
  EXPECT_TRUE(acl.IsAllowed("carol", {"staff", "ops"}));
  EXPECT_FALSE(acl.IsAllowed("carol", {"staff"}));
  EXPECT_FALSE(acl.IsAllowed("Alice", kNoGroups));  // case-sensitive
  EXPECT_FALSE(acl.IsAllowed("ops", kNoGroups));    // a group name is not a user name
  EXPECT_FALSE(acl.IsAllowed("", kNoGroups));
}

TEST(AccessControlListTest, UsersOnlyAndGroupsOnly) {
  AccessControlList users = MustParse("alice");
  EXPECT_THAT(users.groups(), IsEmpty());
  EXPECT_TRUE(users.IsAllowed("alice", kNoGroups));
  EXPECT_FALSE(users.IsAllowed("bob", {"alice"}));

  AccessControlList groups = MustParse(" admins");  // leading space: groups only
  EXPECT_THAT(groups.users(), IsEmpty());
  EXPECT_THAT(groups.groups(), ElementsAre("admins"));
  EXPECT_FALSE(groups.IsAllowed("admins", kNoGroups));
  EXPECT_TRUE(groups.IsAllowed("dave", {"admins"}));

  EXPECT_EQ(MustParse("alice "), users);  // trailing space: no groups
}

TEST(AccessControlListTest, EveryoneAndNobody) {
  for (const char* text : {"*", " *", "alice *", "* ops"}) {  // Hadoop: a part that is "*"
    AccessControlList acl = MustParse(text);
    EXPECT_TRUE(acl.allows_everyone()) << text;
    EXPECT_TRUE(acl.IsAllowed("anyone", kNoGroups)) << text;
    EXPECT_EQ(acl, AccessControlList::Everyone()) << text;
  }
  for (const char* text : {"", " "}) {
    AccessControlList acl = MustParse(text);
    EXPECT_FALSE(acl.allows_everyone()) << text;
    EXPECT_FALSE(acl.IsAllowed("alice", {"admins"})) << text;
    EXPECT_EQ(acl, AccessControlList::Nobody()) << text;
  }
  EXPECT_FALSE(AccessControlList().IsAllowed("root", {"root"}));
}

TEST(AccessControlListTest, ToStringIsCanonicalAndRoundTrips) {
  EXPECT_EQ(AccessControlList::Everyone().ToString(), "*");
  EXPECT_EQ(AccessControlList::Nobody().ToString(), " ");
  EXPECT_EQ(MustParse("bob,alice,bob ops,admins").ToString(), "alice,bob admins,ops");
  EXPECT_EQ(MustParse("alice").ToString(), "alice ");
  EXPECT_EQ(MustParse(" admins").ToString(), " admins");
  for (const char* text : {"*", " ", "alice,bob admins,ops", "alice ", " admins", "svc$ a.b_c-d"}) {
    EXPECT_EQ(MustParse(MustParse(text).ToString()), MustParse(text)) << text;
    EXPECT_EQ(MustParse(text).ToString(), text);
  }
}

TEST(AccessControlListTest, PlausibleNames) {
  EXPECT_TRUE(MustParse("host01$").IsAllowed("host01$", kNoGroups));  // machine account
  EXPECT_TRUE(MustParse("a.b_c-d").IsAllowed("a.b_c-d", kNoGroups));
  EXPECT_TRUE(AccessControlList::Parse(std::string(32, 'u')).ok());
  EXPECT_TRUE(AccessControlList::Parse(std::string(31, 'u') + "$").ok());
}

TEST(AccessControlListTest, RefusesImplausibleNamesNamingTheEntry) {
  EXPECT_THAT(ParseError("alice,b@d"), HasSubstr("user entry 'b@d' is not a valid name"));
  EXPECT_THAT(ParseError("alice ops,wh33l!"), HasSubstr("group entry 'wh33l!'"));
  EXPECT_THAT(ParseError(std::string(33, 'u')), HasSubstr("at most 32 characters"));
  EXPECT_THAT(ParseError("a$b"), HasSubstr("'a$b'"));  // '$' only at the end
  EXPECT_THAT(ParseError("$"), HasSubstr("'$'"));
  EXPECT_THAT(ParseError("alice,,bob"), HasSubstr("empty user entry"));
  // A space after a comma ends the user list: "bob" would silently become a group in Hadoop.
  EXPECT_THAT(ParseError("alice, bob"), HasSubstr("empty user entry"));
  EXPECT_THAT(ParseError("alice ops, admins"), HasSubstr("group entry ' admins'"));
  EXPECT_THAT(ParseError("alice ops admins"), HasSubstr("one space separates users from groups"));
  EXPECT_THAT(ParseError("  ops"), HasSubstr("group entry ' ops'"));
  EXPECT_THAT(ParseError("alice,*"), HasSubstr("'*' must stand alone"));
  EXPECT_THAT(ParseError("* ops,*"), HasSubstr("'*' must stand alone"));
  EXPECT_THAT(ParseError("alice\tops"), HasSubstr("'alice\tops'"));
  EXPECT_THAT(ParseError("al\nice"), HasSubstr("not a valid name"));
}

}  // namespace
}  // namespace weft
