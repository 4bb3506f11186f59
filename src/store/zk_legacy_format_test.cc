// Copyright Weft authors. Decoding the pre-proto ZooKeeper records (read-only format).
#include "store/zk_legacy_format.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/legacy_store_test_util.h"
#include "store/state_records.h"
#include "store/store_test_util.h"

namespace weft::store::zk::legacy {
namespace {

using legacy_test::OldZkApplication;
using legacy_test::OldZkAttempt;
using legacy_test::OldZkMasterKey;
using ::testing::HasSubstr;

TEST(ZkLegacyFormatTest, DecodesTheDocumentedBytes) {
  // A master key as the pre-proto encoder wrote it, byte by byte.
  const std::string data = std::string("\x01K", 2) + std::string("\0\0\0\x04", 4) + "amrm" +
                           std::string("\xff\xff\xff\xff\xff\xff\xff\xfe", 8) +
                           std::string("\0\0\0\x01s", 5) + std::string("\0\0\0\0\0\0\0\x01", 8) +
                           std::string("\0\0\0\0\0\0\x01\x02", 8);
  EXPECT_TRUE(IsLegacyRecord(data));
  absl::StatusOr<MasterKeyRecord> key = DecodeMasterKey(data);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, (MasterKeyRecord{"amrm", -2, "s", 1, 258}));
  EXPECT_EQ(OldZkMasterKey(*key), data);  // The test writer is the old encoder.
}

TEST(ZkLegacyFormatTest, RecordsOfEveryFieldValueDecodeExactly) {
  const ApplicationRecord app = FullApplication(std::string("app\0/1", 6));
  absl::StatusOr<ApplicationRecord> app_back = DecodeApplication(OldZkApplication(app));
  ASSERT_TRUE(app_back.ok()) << app_back.status();
  EXPECT_EQ(*app_back, app);
  ApplicationRecord bare;
  bare.app_id = "a";
  EXPECT_EQ(*DecodeApplication(OldZkApplication(bare)), bare);

  AttemptRecord attempt = FullAttempt("app_1", INT32_MAX);
  attempt.exit_status = INT32_MIN;
  absl::StatusOr<AttemptRecord> attempt_back = DecodeAttempt(OldZkAttempt(attempt));
  ASSERT_TRUE(attempt_back.ok()) << attempt_back.status();
  EXPECT_EQ(*attempt_back, attempt);

  const MasterKeyRecord key = FullMasterKey("amrm", -5);
  absl::StatusOr<MasterKeyRecord> key_back = DecodeMasterKey(OldZkMasterKey(key));
  ASSERT_TRUE(key_back.ok()) << key_back.status();
  EXPECT_EQ(*key_back, key);
}

TEST(ZkLegacyFormatTest, TellsOldRecordsFromProtos) {
  EXPECT_TRUE(IsLegacyRecord(OldZkApplication(FullApplication("app_1"))));
  EXPECT_TRUE(IsLegacyRecord(OldZkAttempt(FullAttempt("app_1", 1))));
  EXPECT_TRUE(IsLegacyRecord(OldZkMasterKey(FullMasterKey("container", 1))));
  EXPECT_FALSE(IsLegacyRecord(EncodeApplication(FullApplication("app_1"))));
  EXPECT_FALSE(IsLegacyRecord(EncodeAttempt(FullAttempt("app_1", 1))));
  EXPECT_FALSE(IsLegacyRecord(EncodeMasterKey(FullMasterKey("container", 1))));
  EXPECT_FALSE(IsLegacyRecord(""));

  EXPECT_TRUE(IsLegacyEpoch("0"));
  EXPECT_TRUE(IsLegacyEpoch("123456789"));
  EXPECT_FALSE(IsLegacyEpoch(EncodeEpoch(0)));
  EXPECT_FALSE(IsLegacyEpoch(EncodeEpoch(123456789)));
  EXPECT_EQ(*DecodeEpoch("42"), 42);
  EXPECT_EQ(DecodeEpoch("-1").status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeEpoch("4x").status().code(), absl::StatusCode::kDataLoss);
}

TEST(ZkLegacyFormatTest, DamagedRecordsAreDataLossNamingTheProblem) {
  const std::string app = OldZkApplication(FullApplication("app_1"));
  struct Case {
    std::string data;
    const char* want;
  } cases[] = {
      {"", "shorter than its 2-byte header"},
      {std::string("\x07\x41", 2) + app.substr(2), "unknown record format 7"},
      {OldZkAttempt(FullAttempt("app_1", 1)), "record kind 'T' is not 'A'"},
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
  std::string attempt = OldZkAttempt(FullAttempt("app_1", 1));
  const size_t attempt_id_at = 2 + 4 + 5;  // header, app_id
  attempt[attempt_id_at + 3] = 1;
  absl::StatusOr<AttemptRecord> decoded = DecodeAttempt(attempt);
  EXPECT_EQ(decoded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(decoded.status().message(), HasSubstr("does not fit in 32 bits"));
}

}  // namespace
}  // namespace weft::store::zk::legacy
