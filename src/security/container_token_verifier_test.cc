// Copyright Weft authors.
#include "security/container_token_verifier.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace weft::security {
namespace {

constexpr int64_t kVerifierRollMs = 1000;
constexpr int64_t kVerifierLifetimeMs = 10000;
constexpr char kNode[] = "node7.example.com:8041";

class ContainerTokenVerifierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(rm_keys_.Start(0).ok());
    Heartbeat();
  }

  // What an NM heartbeat reply delivers.
  void Heartbeat() { nm_.UpdateKeys(rm_keys_.current(), rm_keys_.next()); }

  Token Issue(const std::string& container_id, int64_t expiry_ms, const std::string& node = kNode) {
    ContainerTokenData d;
    d.container_id = container_id;
    d.node_id = node;
    d.user = "alice";
    d.resource = "memory-mb=1024,vcores=1";
    d.expiry_ms = expiry_ms;
    d.rm_epoch = 2;
    d.app_id = "application_1700000000000_0001";
    return IssueContainerToken(d, rm_keys_.current());
  }

  static void ExpectDenied(const absl::StatusOr<ContainerTokenData>& r, absl::string_view message) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
    EXPECT_EQ(r.status().message(), message);
  }

  FakeSecretSource secrets_;
  MasterKeyManager rm_keys_{"container", kVerifierRollMs, kVerifierLifetimeMs, &secrets_};
  ContainerTokenVerifier nm_;
};

TEST_F(ContainerTokenVerifierTest, AcceptsAValidStart) {
  const Token t = Issue("container_1", 5000);
  absl::StatusOr<ContainerTokenData> r = nm_.VerifyStart(t, kNode, 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->container_id, "container_1");
  EXPECT_EQ(r->node_id, kNode);
  EXPECT_EQ(r->user, "alice");
  EXPECT_EQ(r->resource, "memory-mb=1024,vcores=1");
  EXPECT_EQ(r->expiry_ms, 5000);
  EXPECT_EQ(r->master_key_id, 1);
  EXPECT_EQ(r->rm_epoch, 2);
  EXPECT_EQ(r->app_id, "application_1700000000000_0001");
  EXPECT_EQ(nm_.started_count(), 1u);
}

TEST_F(ContainerTokenVerifierTest, ControlCallsNeedASignedTokenForThisNodeButNotAFreshOne) {
  const Token t = Issue("container_1", 5000);
  ASSERT_TRUE(nm_.VerifyStart(t, kNode, 100).ok());
  // The start spent it for starting, not for stopping or asking: repeatable, after its expiry.
  ASSERT_TRUE(nm_.VerifyControl(t, kNode, 200).ok());
  absl::StatusOr<ContainerTokenData> late = nm_.VerifyControl(t, kNode, 6000);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->container_id, "container_1");
  EXPECT_EQ(nm_.started_count(), 1u);  // nothing remembered
  Token forged = t;
  forged.password[0] ^= 0x01;
  ExpectDenied(nm_.VerifyControl(forged, kNode, 200),
               "container token for container_1: bad signature");
  ExpectDenied(nm_.VerifyControl(Issue("container_2", 5000, "other:1"), kNode, 200),
               "container token for container_2: issued for node other:1, this is node "
               "node7.example.com:8041");
}

TEST_F(ContainerTokenVerifierTest, UpdatesNeedAFreshSignedTokenForThisNodeAndAreNotReplays) {
  const Token start = Issue("container_1", 5000);
  ASSERT_TRUE(nm_.VerifyStart(start, kNode, 100).ok());
  // An update names a started container: no replay memory, repeatable (the NM refuses stale
  // versions itself), but fresh and signed like a start.
  absl::StatusOr<ContainerTokenData> update = nm_.VerifyUpdate(start, kNode, 200);
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_TRUE(nm_.VerifyUpdate(start, kNode, 300).ok());
  EXPECT_EQ(nm_.started_count(), 1u);
  ExpectDenied(nm_.VerifyUpdate(start, kNode, 5000),
               "container token for container_1: expired at 5000 (now 5000)");
  Token forged = Issue("container_1", 9000);
  forged.password[0] ^= 0x01;
  ExpectDenied(nm_.VerifyUpdate(forged, kNode, 200),
               "container token for container_1: bad signature");
  ExpectDenied(nm_.VerifyUpdate(Issue("container_1", 9000, "other:1"), kNode, 200),
               "container token for container_1: issued for node other:1, this is node "
               "node7.example.com:8041");
}

TEST_F(ContainerTokenVerifierTest, RefusesForgeriesWithDistinctMessages) {
  const Token t = Issue("container_1", 5000);
  Token bad_password = t;
  bad_password.password[31] ^= 0x01;
  ExpectDenied(nm_.VerifyStart(bad_password, kNode, 100),
               "container token for container_1: bad signature");

  // Change the expiry inside the identifier but keep the old password.
  ContainerTokenData longer = *DecodeContainerToken(t.identifier);
  longer.expiry_ms = 9'000'000;
  Token extended{EncodeContainerTokenIdentifier(longer), t.password};
  ExpectDenied(nm_.VerifyStart(extended, kNode, 100),
               "container token for container_1: bad signature");

  // Every single-bit flip of the identifier is refused.
  for (size_t byte = 0; byte < t.identifier.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Token forged = t;
      forged.identifier[byte] ^= static_cast<char>(1 << bit);
      EXPECT_FALSE(nm_.VerifyStart(forged, kNode, 100).ok()) << byte << ":" << bit;
    }
  }
  // None of the refusals consumed the container id: the genuine token still works.
  EXPECT_EQ(nm_.started_count(), 0u);
  EXPECT_TRUE(nm_.VerifyStart(t, kNode, 100).ok());
}

TEST_F(ContainerTokenVerifierTest, RefusesUnknownMasterKey) {
  FakeSecretSource other_secrets(3);
  MasterKeyManager other("container", kVerifierRollMs, kVerifierLifetimeMs, &other_secrets);
  ASSERT_TRUE(other.Start(0).ok());
  for (int64_t t = 1000; t <= 3000; t += 1000) ASSERT_TRUE(*other.Roll(t));
  ContainerTokenData d;
  d.container_id = "container_9";
  d.node_id = kNode;
  d.expiry_ms = 5000;
  const Token t = IssueContainerToken(d, other.next());  // key 5: never sent to this NM
  ExpectDenied(
      nm_.VerifyStart(t, kNode, 100),
      absl::StrCat("container token for container_9: unknown master key ", other.next().id));
}

// HoldsKey: the current and next keys a heartbeat brought, until each one's expiry; no other.
TEST_F(ContainerTokenVerifierTest, HoldsTheKeysItWasGivenUntilTheyExpire) {
  const MasterKey current = rm_keys_.current(), next = rm_keys_.next();
  EXPECT_TRUE(nm_.HoldsKey(current.id, 0));
  EXPECT_TRUE(nm_.HoldsKey(next.id, 0));
  EXPECT_FALSE(nm_.HoldsKey(next.id + 1, 0));
  EXPECT_TRUE(nm_.HoldsKey(current.id, current.expires_ms - 1));
  EXPECT_FALSE(nm_.HoldsKey(current.id, current.expires_ms));
}

TEST_F(ContainerTokenVerifierTest, RefusesExpiredToken) {
  EXPECT_TRUE(nm_.VerifyStart(Issue("container_2", 5000), kNode, 4999).ok());
  const Token t = Issue("container_1", 5000);
  ExpectDenied(nm_.VerifyStart(t, kNode, 5000),
               "container token for container_1: expired at 5000 (now 5000)");
}

TEST_F(ContainerTokenVerifierTest, RefusesWrongNode) {
  const Token t = Issue("container_1", 5000, "node8.example.com:8041");
  ExpectDenied(nm_.VerifyStart(t, kNode, 100),
               "container token for container_1: issued for node node8.example.com:8041, "
               "this is node node7.example.com:8041");
}

TEST_F(ContainerTokenVerifierTest, RefusesReplayUntilTheTokenExpiresThenForgets) {
  const Token t = Issue("container_1", 5000);
  ASSERT_TRUE(nm_.VerifyStart(t, kNode, 100).ok());
  ExpectDenied(nm_.VerifyStart(t, kNode, 200),
               "container token for container_1: already used (replay)");
  // A fresh token for the same container id is a replay too: the id is what was spent.
  ExpectDenied(nm_.VerifyStart(Issue("container_1", 8000), kNode, 4999),
               "container token for container_1: already used (replay)");
  EXPECT_EQ(nm_.started_count(), 1u);

  // At expiry the id is forgotten (memory is bounded), and the token is refused as expired.
  ExpectDenied(nm_.VerifyStart(t, kNode, 5000),
               "container token for container_1: expired at 5000 (now 5000)");
  EXPECT_EQ(nm_.started_count(), 0u);
  // A clock step back does not make the forgotten token usable again.
  ExpectDenied(nm_.VerifyStart(t, kNode, 4000),
               "container token for container_1: expired at 5000 (now 5000)");
}

TEST_F(ContainerTokenVerifierTest, ReplayMemoryStaysBounded) {
  for (int i = 0; i < 1000; ++i) {
    const int64_t now = i;
    ASSERT_TRUE(nm_.VerifyStart(Issue(absl::StrCat("container_", i), now + 50), kNode, now).ok());
    EXPECT_LE(nm_.started_count(), 51u);
  }
}

TEST_F(ContainerTokenVerifierTest, RecordStartedRestoresReplayProtection) {
  const Token t = Issue("container_1", 5000);
  ContainerTokenVerifier restarted_nm;
  restarted_nm.UpdateKeys(rm_keys_.current(), rm_keys_.next());
  restarted_nm.RecordStarted("container_1", 5000);
  ExpectDenied(restarted_nm.VerifyStart(t, kNode, 100),
               "container token for container_1: already used (replay)");
  // An earlier expiry does not shorten what is remembered.
  restarted_nm.RecordStarted("container_1", 10);
  ExpectDenied(restarted_nm.VerifyStart(t, kNode, 200),
               "container token for container_1: already used (replay)");
}

TEST_F(ContainerTokenVerifierTest, TokenUnderPreviousKeyVerifiesUntilThatKeyExpires) {
  // Issued under key 1 just before the roll; the token itself lives long.
  const Token before_roll = Issue("container_old", 1'000'000);
  ASSERT_TRUE(*rm_keys_.Roll(1000));
  Heartbeat();  // NM now gets keys 2 (current) and 3 (next); it still remembers key 1
  const Token after_roll = Issue("container_new", 1'000'000);
  EXPECT_EQ(DecodeContainerToken(after_roll.identifier)->master_key_id, 2);
  ASSERT_TRUE(nm_.VerifyStart(after_roll, kNode, 1500).ok());

  Token t = before_roll;
  ASSERT_TRUE(nm_.VerifyStart(t, kNode, 9999).ok());
  // Key 1 expires at 10000; a token under it for another container is refused from then on.
  ContainerTokenData d = *DecodeContainerToken(before_roll.identifier);
  d.container_id = "container_late";
  Token late = IssueContainerToken(d, *rm_keys_.Find(1));
  ExpectDenied(nm_.VerifyStart(late, kNode, 10000),
               "container token for container_late: master key 1 expired at 10000 (now 10000)");
  // Once pruned, the NM no longer knows the key at all.
  ExpectDenied(nm_.VerifyStart(late, kNode, 10001),
               "container token for container_late: unknown master key 1");
  EXPECT_EQ(nm_.key_count(), 1u);  // keys 1 and 2 expired at 10000; key 3 remains
}

TEST_F(ContainerTokenVerifierTest, NextKeyIsKnownBeforeItSigns) {
  // The NM learnt the next key in the last heartbeat, so tokens signed right after the roll
  // verify even though no heartbeat has arrived since.
  ASSERT_TRUE(*rm_keys_.Roll(1000));
  EXPECT_TRUE(nm_.VerifyStart(Issue("container_1", 5000), kNode, 1001).ok());
}

TEST_F(ContainerTokenVerifierTest, UpdateKeysReplacesAKeyWithTheSameId) {
  // After an RM crash that lost key 2 before persisting it, the RM remakes id 2 differently.
  FakeSecretSource other_secrets(5);
  MasterKeyManager remade("container", kVerifierRollMs, kVerifierLifetimeMs, &other_secrets);
  ASSERT_TRUE(remade.Start(0).ok());
  ASSERT_EQ(remade.next().id, rm_keys_.next().id);
  nm_.UpdateKeys(remade.current(), remade.next());
  ASSERT_TRUE(*remade.Roll(1000));
  ContainerTokenData d;
  d.container_id = "container_1";
  d.node_id = kNode;
  d.expiry_ms = 5000;
  EXPECT_TRUE(nm_.VerifyStart(IssueContainerToken(d, remade.current()), kNode, 1001).ok());
}

TEST_F(ContainerTokenVerifierTest, MalformedIdentifierIsPermissionDenied) {
  absl::StatusOr<ContainerTokenData> r =
      nm_.VerifyStart(Token{"\x01\x43\x00", std::string(32, 'p')}, kNode, 100);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(r.status().message().find("malformed container token identifier"),
            absl::string_view::npos)
      << r.status();
}

}  // namespace
}  // namespace weft::security
