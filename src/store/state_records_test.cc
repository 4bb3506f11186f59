// Copyright Weft authors. The state store's records as protos.
#include "store/state_records.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"
#include "weft/v1/state_store.pb.h"

namespace weft::store {
namespace {

using ::testing::HasSubstr;

TEST(StateRecordsTest, RecordsRoundTripExactly) {
  const ApplicationRecord app = FullApplication(std::string("app\0/1\xff", 7));
  absl::StatusOr<ApplicationRecord> app_back = DecodeApplication(EncodeApplication(app));
  ASSERT_TRUE(app_back.ok()) << app_back.status();
  EXPECT_EQ(*app_back, app);
  ApplicationRecord bare;
  bare.app_id = "a";
  EXPECT_EQ(*DecodeApplication(EncodeApplication(bare)), bare);

  AttemptRecord attempt = FullAttempt("app_1", INT32_MAX);
  attempt.exit_status = INT32_MIN;
  attempt.node = "\xc3\x28 not UTF-8";
  absl::StatusOr<AttemptRecord> attempt_back = DecodeAttempt(EncodeAttempt(attempt));
  ASSERT_TRUE(attempt_back.ok()) << attempt_back.status();
  EXPECT_EQ(*attempt_back, attempt);

  const MasterKeyRecord key = FullMasterKey("amrm", -5);
  absl::StatusOr<MasterKeyRecord> key_back = DecodeMasterKey(EncodeMasterKey(key));
  ASSERT_TRUE(key_back.ok()) << key_back.status();
  EXPECT_EQ(*key_back, key);

  for (int64_t epoch : {int64_t{0}, int64_t{1}, INT64_MAX}) {
    EXPECT_EQ(*DecodeEpoch(EncodeEpoch(epoch)), epoch);
  }
  EXPECT_EQ(EncodeEpoch(0), "");
}

TEST(StateRecordsTest, EqualRecordsGiveEqualBytesStartingWithTheKeyField) {
  EXPECT_EQ(EncodeApplication(FullApplication("app_1")),
            EncodeApplication(FullApplication("app_1")));
  EXPECT_EQ(EncodeApplication(FullApplication("app_1"))[0], '\x0a');
  EXPECT_EQ(EncodeAttempt(FullAttempt("app_1", 1))[0], '\x0a');
  EXPECT_EQ(EncodeMasterKey(FullMasterKey("amrm", 1))[0], '\x0a');
}

// Evolution: a record written by a newer binary, with a field this one does not know, loads
// with every known field intact.
TEST(StateRecordsTest, UnknownFieldsAreIgnored) {
  const ApplicationRecord app = FullApplication("app_1");
  const std::string newer =
      EncodeApplication(app) + std::string("\xa0\x06\x07", 3);  // plus field 100 = 7
  absl::StatusOr<ApplicationRecord> back = DecodeApplication(newer);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, app);
}

TEST(StateRecordsTest, BytesThatAreNotARecordAreDataLoss) {
  absl::StatusOr<ApplicationRecord> app = DecodeApplication("garbage");
  EXPECT_EQ(app.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(app.status().message(), HasSubstr("application record: not a valid"));
  EXPECT_EQ(DecodeAttempt(std::string("\x01T", 2)).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeMasterKey("\x0a\x05x").status().code(), absl::StatusCode::kDataLoss);
  v1::StoredEpoch negative;
  negative.set_epoch(-3);
  EXPECT_EQ(DecodeEpoch(negative.SerializeAsString()).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace weft::store
