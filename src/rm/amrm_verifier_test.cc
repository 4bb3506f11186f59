// Copyright Weft authors. AmRmVerifier: what it accepts is what the keys it was given accept.
#include "rm/amrm_verifier.h"

#include "gtest/gtest.h"
#include "security/secret_source.h"

namespace weft::rm {
namespace {

constexpr char kAttempt[] = "appattempt_1700000000000_0001_000001";

security::Token TokenUnder(const security::MasterKey& key, int64_t expiry_ms) {
  security::AmRmTokenData d;
  d.app_attempt_id = kAttempt;
  d.expiry_ms = expiry_ms;
  return security::IssueAmRmToken(d, key);
}

TEST(AmRmVerifierTest, AcceptsWhatThePublishedKeysAcceptAndNothingBeforeThem) {
  security::FakeSecretSource secrets;
  security::MasterKeyManager keys("amrm", 1000, 10000, &secrets);
  ASSERT_TRUE(keys.Start(0).ok());
  const security::Token t = TokenUnder(keys.current(), 5000);
  AmRmVerifier verifier;
  EXPECT_EQ(verifier.Verify(t, 100).status().code(), absl::StatusCode::kFailedPrecondition);

  verifier.Publish(keys.Keys());
  absl::StatusOr<std::string> attempt = verifier.Verify(t, 100);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_EQ(*attempt, kAttempt);
  EXPECT_EQ(verifier.Verify(t, 5000).status().code(), absl::StatusCode::kPermissionDenied);
  security::Token forged = t;
  forged.password[3] ^= 1;
  EXPECT_EQ(verifier.Verify(forged, 100).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(verifier.Verify({"\x01garbage", std::string(32, 'x')}, 100).status().code(),
            absl::StatusCode::kPermissionDenied);

  // Keys published later replace the earlier ones: a key no longer held verifies nothing.
  security::FakeSecretSource other_secrets(42);
  security::MasterKeyManager other("amrm", 1000, 10000, &other_secrets);
  ASSERT_TRUE(other.Start(0).ok());
  verifier.Publish(other.Keys());
  EXPECT_FALSE(verifier.Verify(t, 100).ok());
}

}  // namespace
}  // namespace weft::rm
