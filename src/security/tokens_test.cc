// Copyright Weft authors.
#include "security/tokens.h"

#include <random>
#include <string>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "security/test_util.h"

namespace weft::security {
namespace {

constexpr int64_t kTokenRollMs = 1000;
constexpr int64_t kTokenLifetimeMs = 10000;

AmRmTokenData SampleAmRm(int64_t expiry_ms) {
  AmRmTokenData d;
  d.app_attempt_id = "appattempt_1700000000000_0001_000001";
  d.expiry_ms = expiry_ms;
  return d;
}

// RFC 4231, test case 2: a key shorter than the block size.
TEST(HmacSha256Test, MatchesRfc4231TestCase2) {
  EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

// RFC 4231, test case 1: 20 bytes of 0x0b, "Hi There".
TEST(HmacSha256Test, MatchesRfc4231TestCase1) {
  EXPECT_EQ(absl::BytesToHexString(HmacSha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

// The context keeps the key it was last given and only restarts for the same key: one key
// for several messages in a row, then keys that differ from it only in the last byte or in
// length, then the first key again, each give the MAC of their own key (Python's hmac module).
TEST(HmacSha256Test, ARepeatedKeyAndKeysNearItEachGiveTheirOwnMac) {
  const std::string nothing = "what do ya want for nothing?";
  const std::string jefe = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", nothing)), jefe);
    EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", "Hi There")),
              "6bfb115ca30df3be0dfdffe79a51cbee88186db55acc287af148d7ff6220f92e");
  }
  EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefd", nothing)),
            "f8d53118ce0680a281eda49c53a20bf1332f9440d35b08e3545dfb8877dde5a6");
  EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jef", nothing)),
            "89630a7f7bb95aced9efa60255f18a10e7d378665751be11dd40bb9594158c29");
  EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", nothing)), jefe);
}

// Each thread reuses one HMAC context, setting the key per call: keys that alternate on one
// thread, another thread, and an empty key (the one-shot path) each give their own MAC.
TEST(HmacSha256Test, KeysAlternatingOnOneThreadAndOthersEachGiveTheirOwnMac) {
  const std::string jefe = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  const std::string hi = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(absl::BytesToHexString(HmacSha256("Jefe", "what do ya want for nothing?")), jefe);
    EXPECT_EQ(absl::BytesToHexString(HmacSha256(std::string(20, '\x0b'), "Hi There")), hi);
    EXPECT_EQ(absl::BytesToHexString(HmacSha256("", "")),
              "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
  }
  std::string other;
  std::thread t(
      [&] { other = absl::BytesToHexString(HmacSha256("Jefe", "what do ya want for nothing?")); });
  t.join();
  EXPECT_EQ(other, jefe);
}

TEST(TokenCodecTest, ContainerIdentifierRoundTripsExactly) {
  const ContainerTokenData d = SampleContainer();
  const std::string id = EncodeContainerTokenIdentifier(d);
  EXPECT_EQ(static_cast<uint8_t>(id[0]), kTokenFormatVersion);
  absl::StatusOr<ContainerTokenData> decoded = DecodeContainerToken(id);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, d);

  ContainerTokenData extremes;  // empty strings, negative and extreme integers, NUL bytes
  extremes.user = std::string("a\0b", 3);
  extremes.expiry_ms = INT64_MIN;
  extremes.master_key_id = -1;
  extremes.rm_epoch = INT64_MAX;
  EXPECT_EQ(*DecodeContainerToken(EncodeContainerTokenIdentifier(extremes)), extremes);
}

TEST(TokenCodecTest, ContainerVersionRoundTripsAndVersionZeroIsNotEncoded) {
  ContainerTokenData d = SampleContainer();
  const std::string unversioned = EncodeContainerTokenIdentifier(d);
  d.version = 3;
  const std::string versioned = EncodeContainerTokenIdentifier(d);
  EXPECT_NE(versioned, unversioned);
  EXPECT_EQ(DecodeContainerToken(versioned)->version, 3);
  // Version 0 (every token issued before resource updates existed) is the same bytes as
  // before: proto3 leaves the default out.
  d.version = 0;
  EXPECT_EQ(EncodeContainerTokenIdentifier(d), unversioned);
  EXPECT_EQ(DecodeContainerToken(unversioned)->version, 0);
}

TEST(TokenCodecTest, AllocationTagsRoundTripInOrderAndNoneIsNotEncoded) {
  ContainerTokenData d = SampleContainer();
  const std::string untagged = EncodeContainerTokenIdentifier(d);
  d.allocation_tags = {"hbase-rs", "spark", std::string("a\0b", 3), ""};
  const std::string tagged = EncodeContainerTokenIdentifier(d);
  EXPECT_NE(tagged, untagged);
  absl::StatusOr<ContainerTokenData> decoded = DecodeContainerToken(tagged);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, d);
  EXPECT_EQ(decoded->allocation_tags, d.allocation_tags);
  // No tags (every token issued before tags were carried) is the same bytes as before.
  d.allocation_tags.clear();
  EXPECT_EQ(EncodeContainerTokenIdentifier(d), untagged);
  EXPECT_TRUE(DecodeContainerToken(untagged)->allocation_tags.empty());
}

TEST(TokenCodecTest, DeviceSharesRoundTripAndNoneIsNotEncoded) {
  ContainerTokenData d = SampleContainer();
  const std::string plain = EncodeContainerTokenIdentifier(d);
  d.devices = {"gpu:0=500", "gpu:3=1000"};
  const std::string with_devices = EncodeContainerTokenIdentifier(d);
  EXPECT_NE(with_devices, plain);
  absl::StatusOr<ContainerTokenData> decoded = DecodeContainerToken(with_devices);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->devices, d.devices);
  d.devices.clear();
  EXPECT_EQ(EncodeContainerTokenIdentifier(d), plain);
  EXPECT_TRUE(DecodeContainerToken(plain)->devices.empty());
}

TEST(TokenCodecTest, FieldBoundariesAreUnambiguous) {
  // Concatenation-based encodings would confuse these two; length prefixes must not.
  ContainerTokenData a = SampleContainer(), b = SampleContainer();
  a.container_id = "container_1";
  a.node_id = "2host:1";
  b.container_id = "container_12";
  b.node_id = "host:1";
  EXPECT_NE(EncodeContainerTokenIdentifier(a), EncodeContainerTokenIdentifier(b));
}

TEST(TokenCodecTest, AmRmIdentifierRoundTripsAndKindsDoNotMix) {
  const AmRmTokenData d = SampleAmRm(12345);
  const std::string id = EncodeAmRmTokenIdentifier(d);
  ASSERT_TRUE(DecodeAmRmToken(id).ok());
  EXPECT_EQ(*DecodeAmRmToken(id), d);
  EXPECT_EQ(DecodeContainerToken(id).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeAmRmToken(EncodeContainerTokenIdentifier(SampleContainer())).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TokenCodecTest, RejectsBadVersionTruncationAndTrailingBytes) {
  const std::string id = EncodeContainerTokenIdentifier(SampleContainer());
  std::string bad_version = id;
  bad_version[0] = 1;  // the retired hand-made format
  absl::Status s = DecodeContainerToken(bad_version).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("version 1"), absl::string_view::npos) << s;

  // A prefix cut inside a field does not parse; one cut between fields is a well-formed
  // identifier with fewer fields (protobuf's messages are not self-delimiting, as YARN's
  // identifiers), never the original grant, and its password no longer matches.
  const ContainerTokenData original = SampleContainer();
  for (size_t len = 0; len < id.size(); ++len) {
    absl::StatusOr<ContainerTokenData> prefix =
        DecodeContainerToken(absl::string_view(id).substr(0, len));
    if (prefix.ok()) {
      EXPECT_NE(*prefix, original) << "prefix of " << len << " bytes";
    } else {
      EXPECT_EQ(prefix.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
  s = DecodeContainerToken(id + "x").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("trailing"), absl::string_view::npos) << s;

  // A length prefix pointing far past the end must not be followed: field 1 (container_id,
  // length-delimited) claiming ~4 GiB.
  std::string huge_length = id.substr(0, 2) + std::string("\x0a\xf0\xff\xff\xff\x0f", 6) + "abc";
  s = DecodeContainerToken(huge_length).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("malformed container token identifier"), absl::string_view::npos)
      << s;
}

TEST(TokenCodecTest, OnlyTheCanonicalEncodingIsAccepted) {
  // The same values spelled differently (a field repeated: protobuf keeps the last) must not
  // decode: two identifiers for one grant would let a signed token be re-spelled.
  const std::string id = EncodeAmRmTokenIdentifier(SampleAmRm(7));
  const std::string repeated = id + std::string("\x10\x01", 2);  // master_key_id again
  absl::Status s = DecodeAmRmToken(repeated).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("canonical"), absl::string_view::npos) << s;
  // An unknown field is refused too.
  s = DecodeAmRmToken(id + std::string("\x78\x01", 2)).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
}

TEST(TokenCodecTest, HostileBytesNeverCrashAndDecodedValuesAreCanonical) {
  std::mt19937_64 rng(20240601);
  const std::string container_id = EncodeContainerTokenIdentifier(SampleContainer());
  const std::string amrm_id = EncodeAmRmTokenIdentifier(SampleAmRm(99));
  int random_accepted = 0;
  for (int i = 0; i < 4000; ++i) {
    // Pure noise, with a valid header half the time so the field parsers get exercised.
    std::string noise(rng() % 96, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    if (i % 2 == 0 && noise.size() >= 2) {
      noise[0] = static_cast<char>(kTokenFormatVersion);
      noise[1] = (i % 4 == 0) ? 'C' : 'A';
    }
    absl::StatusOr<ContainerTokenData> c = DecodeContainerToken(noise);
    absl::StatusOr<AmRmTokenData> a = DecodeAmRmToken(noise);
    if (c.ok()) {
      ++random_accepted;
      EXPECT_EQ(EncodeContainerTokenIdentifier(*c), noise);
    } else {
      EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
    }
    if (a.ok()) {
      ++random_accepted;
      EXPECT_EQ(EncodeAmRmTokenIdentifier(*a), noise);
    } else {
      EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    }

    // Mutations of valid identifiers: flip, truncate, or insert bytes.
    for (const std::string* valid : {&container_id, &amrm_id}) {
      std::string m = *valid;
      switch (rng() % 3) {
        case 0:
          m[rng() % m.size()] ^= static_cast<char>(1 + rng() % 255);
          break;
        case 1:
          m.resize(rng() % m.size());
          break;
        default:
          m.insert(rng() % (m.size() + 1), 1 + rng() % 8, static_cast<char>(rng()));
      }
      absl::StatusOr<ContainerTokenData> mc = DecodeContainerToken(m);
      absl::StatusOr<AmRmTokenData> ma = DecodeAmRmToken(m);
      if (mc.ok()) {
        EXPECT_EQ(EncodeContainerTokenIdentifier(*mc), m);
      } else {
        EXPECT_EQ(mc.status().code(), absl::StatusCode::kInvalidArgument);
      }
      if (ma.ok()) {
        EXPECT_EQ(EncodeAmRmTokenIdentifier(*ma), m);
      } else {
        EXPECT_EQ(ma.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
  EXPECT_LT(random_accepted, 40);  // noise should almost never parse
}

TEST(TokenIssueTest, PasswordIsHmacOfIdentifierAndRecordsTheKeyId) {
  FakeSecretSource secrets;
  MasterKeyManager keys("container", kTokenRollMs, kTokenLifetimeMs, &secrets);
  ASSERT_TRUE(keys.Start(0).ok());
  ContainerTokenData d = SampleContainer();
  d.master_key_id = 999;  // ignored: the signing key's id is recorded
  const Token t = IssueContainerToken(d, keys.current());
  EXPECT_EQ(t.password, HmacSha256(keys.current().secret, t.identifier));
  EXPECT_EQ(t.password.size(), kTokenPasswordBytes);
  EXPECT_EQ(DecodeContainerToken(t.identifier)->master_key_id, keys.current().id);
  EXPECT_TRUE(PasswordMatches(t, keys.current()));
  EXPECT_FALSE(PasswordMatches(t, keys.next()));
  // Deterministic: same data and key, same token.
  EXPECT_EQ(IssueContainerToken(d, keys.current()), t);
}

class AmRmTokenTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(keys_.Start(0).ok()); }

  static void ExpectDenied(const absl::StatusOr<AmRmTokenData>& r, absl::string_view why) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kPermissionDenied) << r.status();
    EXPECT_NE(r.status().message().find(why), absl::string_view::npos) << r.status();
  }

  const std::string attempt_ = "appattempt_1700000000000_0001_000001";
  FakeSecretSource secrets_;
  MasterKeyManager keys_{"amrm", kTokenRollMs, kTokenLifetimeMs, &secrets_};
};

TEST_F(AmRmTokenTest, IssueThenVerifyRoundTrips) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  absl::StatusOr<AmRmTokenData> r = VerifyAmRmToken(t, keys_, attempt_, 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->app_attempt_id, attempt_);
  EXPECT_EQ(r->master_key_id, keys_.current().id);
  EXPECT_EQ(r->expiry_ms, 5000);
}

TEST_F(AmRmTokenTest, EverySingleBitFlipIsRefused) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  for (size_t byte = 0; byte < t.identifier.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Token forged = t;
      forged.identifier[byte] ^= static_cast<char>(1 << bit);
      EXPECT_FALSE(VerifyAmRmToken(forged, keys_, attempt_, 100).ok())
          << "identifier byte " << byte << " bit " << bit;
    }
  }
  for (size_t byte = 0; byte < t.password.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      Token forged = t;
      forged.password[byte] ^= static_cast<char>(1 << bit);
      ExpectDenied(VerifyAmRmToken(forged, keys_, attempt_, 100), "bad signature");
    }
  }
  Token short_password = t;
  short_password.password.pop_back();
  ExpectDenied(VerifyAmRmToken(short_password, keys_, attempt_, 100), "bad signature");
  Token no_password = t;
  no_password.password.clear();
  ExpectDenied(VerifyAmRmToken(no_password, keys_, attempt_, 100), "bad signature");
}

TEST_F(AmRmTokenTest, ChangedAttemptIdWithoutResigningIsABadSignature) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  AmRmTokenData other = SampleAmRm(5000);
  other.app_attempt_id = "appattempt_1700000000000_0001_000002";
  other.master_key_id = keys_.current().id;
  Token forged = t;
  forged.identifier = EncodeAmRmTokenIdentifier(other);
  ExpectDenied(VerifyAmRmToken(forged, keys_, other.app_attempt_id, 100), "bad signature");
}

TEST_F(AmRmTokenTest, RefusesExpiredTokens) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  EXPECT_TRUE(VerifyAmRmToken(t, keys_, attempt_, 4999).ok());
  ExpectDenied(VerifyAmRmToken(t, keys_, attempt_, 5000), "expired at 5000 (now 5000)");
}

TEST_F(AmRmTokenTest, RefusesAnotherAttempt) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  ExpectDenied(VerifyAmRmToken(t, keys_, "appattempt_1700000000000_0001_000002", 100),
               "issued for appattempt_1700000000000_0001_000001, expected "
               "appattempt_1700000000000_0001_000002");
}

TEST_F(AmRmTokenTest, RefusesUnknownKeyAndMalformedIdentifier) {
  FakeSecretSource other_secrets(42);
  MasterKeyManager other("amrm", kTokenRollMs, kTokenLifetimeMs, &other_secrets);
  ASSERT_TRUE(other.Start(0).ok());
  ASSERT_TRUE(*other.Roll(1000));
  ASSERT_TRUE(*other.Roll(2000));
  const Token t = IssueAmRmToken(SampleAmRm(5000), other.next());  // key id 4
  ExpectDenied(VerifyAmRmToken(t, keys_, attempt_, 100), "unknown master key 4");

  Token garbage{"\x01garbage", std::string(32, 'x')};
  ExpectDenied(VerifyAmRmToken(garbage, keys_, attempt_, 100), "malformed");
  // A container token is not an AMRM token, even under the same key.
  const Token container = IssueContainerToken(SampleContainer(), keys_.current());
  ExpectDenied(VerifyAmRmToken(container, keys_, attempt_, 100), "malformed");
}

// A copy of the manager's keys (what the RM's gRPC threads hold) gives the same answers, for
// the attempt the token names.
TEST_F(AmRmTokenTest, ACopyOfTheKeysVerifiesAsTheManagerDoes) {
  const std::vector<MasterKey> copy = keys_.Keys();
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  absl::StatusOr<AmRmTokenData> r = VerifyAmRmTokenOfAnyAttempt(t, copy, 100);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->app_attempt_id, attempt_);
  ExpectDenied(VerifyAmRmTokenOfAnyAttempt(t, copy, 5000), "expired at 5000 (now 5000)");
  Token forged = t;
  forged.password[0] ^= 1;
  ExpectDenied(VerifyAmRmTokenOfAnyAttempt(forged, copy, 100), "bad signature");
  // A key the copy does not hold (rolled in after it was taken).
  ASSERT_TRUE(*keys_.Roll(kTokenRollMs));
  const Token newer = IssueAmRmToken(SampleAmRm(kTokenRollMs + 5000), keys_.next());
  ExpectDenied(VerifyAmRmTokenOfAnyAttempt(newer, copy, kTokenRollMs),
               absl::StrCat("unknown master key ", keys_.next().id));
  EXPECT_TRUE(VerifyAmRmTokenOfAnyAttempt(newer, keys_.Keys(), kTokenRollMs).ok());
}

TEST_F(AmRmTokenTest, TokenUnderPreviousKeyVerifiesUntilThatKeyExpires) {
  // Key 1 is current from 0 to 1000 and expires at kTokenLifetimeMs = 10000.
  const Token t = IssueAmRmToken(SampleAmRm(/*expiry_ms=*/1'000'000), keys_.current());
  for (int64_t now = 1000; now <= 9000; now += 1000) {
    ASSERT_TRUE(*keys_.Roll(now));
    EXPECT_TRUE(VerifyAmRmToken(t, keys_, attempt_, now).ok()) << "at " << now;
  }
  // Not rolled yet: key 1 is still retained but has expired.
  ExpectDenied(VerifyAmRmToken(t, keys_, attempt_, 10000),
               "master key 1 expired at 10000 (now 10000)");
  ASSERT_TRUE(*keys_.Roll(10000));  // now it is dropped
  ExpectDenied(VerifyAmRmToken(t, keys_, attempt_, 10000), "unknown master key 1");
  // A token issued under the new current key verifies.
  const Token fresh = IssueAmRmToken(SampleAmRm(1'000'000), keys_.current());
  EXPECT_TRUE(VerifyAmRmToken(fresh, keys_, attempt_, 10000).ok());
}

TEST_F(AmRmTokenTest, TokensSurviveAnRmRestart) {
  const Token t = IssueAmRmToken(SampleAmRm(5000), keys_.current());
  FakeSecretSource other_secrets(7);
  MasterKeyManager restarted("amrm", kTokenRollMs, kTokenLifetimeMs, &other_secrets);
  ASSERT_TRUE(restarted.Restore(keys_.Keys(), 500).ok());
  EXPECT_TRUE(VerifyAmRmToken(t, restarted, attempt_, 500).ok());
}

}  // namespace
}  // namespace weft::security
