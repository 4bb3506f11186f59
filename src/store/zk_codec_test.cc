// Copyright Weft authors. The ZooKeeper store's node names and record encoding.
#include "store/zk_codec.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace weft::store::zk {
namespace {

using ::testing::HasSubstr;

TEST(ZkCodecTest, NodeNamesKeepSafeBytesAndEscapeTheRest) {
  EXPECT_EQ(EscapeNodeName("application_1700000000000_0001"), "application_1700000000000_0001");
  EXPECT_EQ(EscapeNodeName("a/b"), "a%2Fb");
  EXPECT_EQ(EscapeNodeName(".."), "%2E%2E");
  EXPECT_EQ(EscapeNodeName("%"), "%25");
  EXPECT_EQ(EscapeNodeName(std::string("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(EscapeNodeName("zookeeper"), "zookeeper");  // Reserved only as a child of "/".
}

TEST(ZkCodecTest, EveryByteRoundTripsThroughANodeName) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string name = EscapeNodeName(all);
  EXPECT_EQ(name.find_first_of("/."), std::string::npos);
  absl::StatusOr<std::string> back = UnescapeNodeName(name);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, all);
}

TEST(ZkCodecTest, UnescapeRejectsNamesEscapeCannotProduce) {
  for (const char* name : {"%", "%4", "%zz", "%2f", "%41", "a.b", "a b", "a/b"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::string> back = UnescapeNodeName(name);
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(ZkCodecTest, RecordsRoundTripExactly) {
  const ApplicationRecord app = FullApplication(std::string("app\0/1", 6));
  absl::StatusOr<ApplicationRecord> app_back = DecodeApplication(EncodeApplication(app));
  ASSERT_TRUE(app_back.ok()) << app_back.status();
  EXPECT_EQ(*app_back, app);
  ApplicationRecord bare;
  bare.app_id = "a";
  EXPECT_EQ(*DecodeApplication(EncodeApplication(bare)), bare);

  AttemptRecord attempt = FullAttempt("app_1", INT32_MAX);
  attempt.exit_status = INT32_MIN;
  absl::StatusOr<AttemptRecord> attempt_back = DecodeAttempt(EncodeAttempt(attempt));
  ASSERT_TRUE(attempt_back.ok()) << attempt_back.status();
  EXPECT_EQ(*attempt_back, attempt);

  const MasterKeyRecord key = FullMasterKey("amrm", -5);
  absl::StatusOr<MasterKeyRecord> key_back = DecodeMasterKey(EncodeMasterKey(key));
  ASSERT_TRUE(key_back.ok()) << key_back.status();
  EXPECT_EQ(*key_back, key);
}

TEST(ZkCodecTest, EncodingIsTheDocumentedOne) {
  MasterKeyRecord key;
  key.purpose = "amrm";
  key.key_id = -2;
  key.secret = "s";
  key.created_ms = 1;
  key.expires_ms = 258;
  const std::string want = std::string("\x01K", 2) + std::string("\0\0\0\x04", 4) + "amrm" +
                           std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8) +
                           std::string("\0\0\0\x01s", 5) + std::string("\0\0\0\0\0\0\0\x01", 8) +
                           std::string("\0\0\0\0\0\0\x01\x02", 8);
  EXPECT_EQ(EncodeMasterKey(key), want);
}

TEST(ZkCodecTest, DamagedRecordsAreDataLossNamingTheProblem) {
  const std::string app = EncodeApplication(FullApplication("app_1"));
  struct Case {
    std::string data;
    const char* want;
  } cases[] = {
      {"", "shorter than its 2-byte header"},
      {std::string("\x07\x41", 2) + app.substr(2), "unknown record format 7"},
      {EncodeAttempt(FullAttempt("app_1", 1)), "record kind 'T' is not 'A'"},
      {app.substr(0, 20), "truncated in field"},
      {app.substr(0, app.size() - 1), "truncated in field 'submission'"},
      {app + "x", "1 trailing bytes"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.want);
    absl::StatusOr<ApplicationRecord> decoded = DecodeApplication(c.data);
    EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(decoded.status().message(), HasSubstr(c.want));
  }

  // A 32-bit field holding a 64-bit value.
  std::string attempt = EncodeAttempt(FullAttempt("app_1", 1));
  const size_t attempt_id_at = 2 + 4 + 5;  // header, app_id
  attempt[attempt_id_at + 3] = 1;
  absl::StatusOr<AttemptRecord> decoded = DecodeAttempt(attempt);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("does not fit in 32 bits"));
}

}  // namespace
}  // namespace weft::store::zk
