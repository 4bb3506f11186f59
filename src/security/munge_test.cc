// Copyright Weft authors.
#include "security/munge.h"

#include <unistd.h>

#include "gtest/gtest.h"
#include "security/test_munged.h"

namespace weft::security {
namespace {

TEST(MungeTest, ACredentialCarriesTheCallersUidAndDecodesOnce) {
  absl::StatusOr<std::unique_ptr<TestMunged>> munged = TestMunged::Start();
  ASSERT_TRUE(munged.ok()) << munged.status();
  absl::StatusOr<std::string> cred = MungeEncode((*munged)->socket(), "weft-client");
  ASSERT_TRUE(cred.ok()) << cred.status();
  absl::StatusOr<MungeCredential> d = MungeDecode((*munged)->socket(), *cred);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->uid, geteuid());
  EXPECT_EQ(d->gid, getegid());
  EXPECT_EQ(d->payload, "weft-client");
  // munged remembers it: a second decode is a replay.
  absl::StatusOr<MungeCredential> again = MungeDecode((*munged)->socket(), *cred);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_NE(again.status().message().find("Replayed"), std::string::npos) << again.status();
}

TEST(MungeTest, ForgedOrForeignCredentialsAreRefused) {
  absl::StatusOr<std::unique_ptr<TestMunged>> a = TestMunged::Start();
  absl::StatusOr<std::unique_ptr<TestMunged>> b = TestMunged::Start();
  ASSERT_TRUE(a.ok() && b.ok());
  absl::StatusOr<std::string> cred = MungeEncode((*a)->socket(), "");
  ASSERT_TRUE(cred.ok());
  // Sealed under another key.
  EXPECT_EQ(MungeDecode((*b)->socket(), *cred).status().code(),
            absl::StatusCode::kUnauthenticated);
  // Tampered with: one character of the body changed.
  std::string forged = *cred;
  forged[forged.size() / 2] = forged[forged.size() / 2] == 'A' ? 'B' : 'A';
  EXPECT_EQ(MungeDecode((*a)->socket(), forged).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(MungeDecode((*a)->socket(), "").status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(MungeDecode((*a)->socket(), "MUNGE:garbage:").status().code(),
            absl::StatusCode::kUnauthenticated);
}

TEST(MungeTest, NoMungedIsUnavailableNamingTheSocket) {
  absl::StatusOr<std::string> cred = MungeEncode("/nonexistent/munge.socket", "");
  ASSERT_EQ(cred.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(cred.status().message().find("/nonexistent/munge.socket"), std::string::npos);
}

}  // namespace
}  // namespace weft::security
