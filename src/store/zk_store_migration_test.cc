// Copyright Weft authors. Opening a ZooKeeper store written before issue 28 (marker
// "weft-rm-state 1", records in the pre-proto encoding): it loads as it was and, opened with
// fence=true, is rewritten as protos.
#include <zookeeper/zookeeper.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/legacy_store_test_util.h"
#include "store/state_records.h"
#include "store/store_test_util.h"
#include "store/test_zookeeper.h"
#include "store/zk_client.h"
#include "store/zk_store.h"

namespace weft::store {
namespace {

using ::testing::HasSubstr;
using zk::ZkClient;
using Op = ZkClient::Op;

// What the old store holds: every kind of record, binary bytes, an app_id that needs escaping.
RmState OldState() {
  RmState state;
  state.epoch = 7;
  state.apps = {FullApplication("app/1"), FullApplication("app_2")};
  state.apps[1].state = "FINISHED";
  state.apps[1].final_status = "SUCCEEDED";
  state.attempts = {FullAttempt("app/1", 1), FullAttempt("app/1", 2), FullAttempt("app_2", 1)};
  state.keys = {FullMasterKey("amrm", -3), FullMasterKey("container", 9)};
  return state;
}

class ZkStoreMigrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new absl::StatusOr<std::unique_ptr<TestZooKeeper>>(TestZooKeeper::Start());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(server_->ok()) << server_->status();
    root_ = absl::StrCat("/zk-store-migration-test/",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    absl::StatusOr<std::unique_ptr<ZkClient>> client =
        ZkClient::Create((**server_)->connect_string(), 10000);
    ASSERT_TRUE(client.ok()) << client.status();
    raw_ = *std::move(client);
    ASSERT_TRUE(raw_->Connect(absl::Now() + absl::Seconds(30)).ok());
  }

  ZkStoreOptions Options(bool fence) const {
    ZkStoreOptions options;
    options.connect = (**server_)->connect_string();
    options.root = root_;
    options.identity = "rm-new";
    options.fence = fence;
    return options;
  }

  std::optional<std::string> Read(const std::string& path) {
    absl::StatusOr<std::vector<ZkClient::Node>> nodes =
        raw_->Get({path}, absl::Now() + absl::Seconds(30));
    EXPECT_TRUE(nodes.ok()) << nodes.status();
    if (!nodes.ok() || !(*nodes)[0].exists) return std::nullopt;
    return (*nodes)[0].data;
  }

  // Every record node of `state` holds its proto, and the epoch and the marker are format 2.
  void ExpectProtoFormat(const RmState& state) {
    EXPECT_EQ(Read(root_), "weft-rm-state 2");
    EXPECT_EQ(Read(root_ + "/epoch"), EncodeEpoch(state.epoch));
    for (const ApplicationRecord& app : state.apps) {
      EXPECT_EQ(Read(root_ + "/apps/" + zk::EscapeNodeName(app.app_id)), EncodeApplication(app));
    }
    for (const AttemptRecord& attempt : state.attempts) {
      EXPECT_EQ(Read(absl::StrCat(root_, "/apps/", zk::EscapeNodeName(attempt.app_id), "/",
                                  attempt.attempt_id)),
                EncodeAttempt(attempt));
    }
    for (const MasterKeyRecord& key : state.keys) {
      EXPECT_EQ(Read(absl::StrCat(root_, "/keys/", key.purpose, ".", key.key_id)),
                EncodeMasterKey(key));
    }
  }

  static absl::StatusOr<std::unique_ptr<TestZooKeeper>>* server_;
  std::string root_;
  std::unique_ptr<ZkClient> raw_;
};

absl::StatusOr<std::unique_ptr<TestZooKeeper>>* ZkStoreMigrationTest::server_ = nullptr;

TEST_F(ZkStoreMigrationTest, OldStoreLoadsAsItWasAndOpeningItActiveRewritesItAsProtos) {
  const RmState old = OldState();
  ASSERT_TRUE(legacy_test::WriteOldZkStore(*raw_, root_, old).ok());

  // A read-only store (a standby, an old-format reader's peer) reads it and changes nothing.
  {
    absl::StatusOr<std::unique_ptr<StateStore>> standby = OpenZooKeeperStore(Options(false));
    ASSERT_TRUE(standby.ok()) << standby.status();
    absl::StatusOr<RmState> loaded = (*standby)->Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    EXPECT_EQ(*loaded, old);
    EXPECT_EQ(Read(root_), "weft-rm-state 1");
    EXPECT_EQ(Read(root_ + "/epoch"), "7");
    EXPECT_EQ(Read(root_ + "/apps/app_2"), legacy_test::OldZkApplication(old.apps[1]));
  }

  // The active store migrates it when it opens.
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(Options(true));
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<RmState> loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);
  ExpectProtoFormat(old);

  // It keeps working, and the result survives a reopen.
  absl::StatusOr<int64_t> epoch = (*store)->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 8);
  ASSERT_TRUE((*store)->RemoveApplication("app_2").ok());
  ASSERT_TRUE((*store)->PutAttempt(FullAttempt("app/1", 3)).ok());
  store->reset();
  store = OpenZooKeeperStore(Options(true));
  ASSERT_TRUE(store.ok()) << store.status();
  loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->epoch, 8);
  EXPECT_EQ(loaded->apps, std::vector<ApplicationRecord>{old.apps[0]});
  EXPECT_EQ(loaded->attempts.size(), 3u);
  ExpectProtoFormat(*loaded);
}

// A store too large for one transaction is migrated in several, each fenced; the marker moves
// with the last one.
TEST_F(ZkStoreMigrationTest, LargeStoreMigratesInSeveralTransactions) {
  RmState old;
  old.epoch = 3;
  for (int i = 0; i < 40; ++i) {
    ApplicationRecord app = FullApplication(absl::StrCat("app_", 100 + i));
    app.diagnostics.assign(300, 'd');
    old.apps.push_back(app);
    old.attempts.push_back(FullAttempt(app.app_id, 1));
  }
  ASSERT_TRUE(legacy_test::WriteOldZkStore(*raw_, root_, old).ok());
  ZkStoreOptions options = Options(true);
  options.max_request_bytes = 4096;  // A few records per transaction.
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(options);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<RmState> loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);
  ExpectProtoFormat(old);
}

// An interrupted migration (some records already protos, the marker still 1): reads work, and
// the next active finishes it.
TEST_F(ZkStoreMigrationTest, HalfMigratedStoreLoadsAndIsFinished) {
  const RmState old = OldState();
  ASSERT_TRUE(legacy_test::WriteOldZkStore(*raw_, root_, old).ok());
  absl::StatusOr<ZkClient::MultiResult> r =
      raw_->Multi({Op::Set(root_ + "/apps/app_2", EncodeApplication(old.apps[1])),
                   Op::Set(root_ + "/keys/amrm.-3", EncodeMasterKey(old.keys[0])),
                   Op::Set(root_ + "/epoch", EncodeEpoch(old.epoch))},
                  absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(r.ok() && r->rc == ZOK);

  absl::StatusOr<std::unique_ptr<StateStore>> standby = OpenZooKeeperStore(Options(false));
  ASSERT_TRUE(standby.ok()) << standby.status();
  absl::StatusOr<RmState> loaded = (*standby)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);

  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(Options(true));
  ASSERT_TRUE(store.ok()) << store.status();
  loaded = (*store)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);
  ExpectProtoFormat(old);
  // The standby, which opened before the migration, still reads the migrated store.
  loaded = (*standby)->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);
}

// A damaged old record stops the migration (and the open) with DataLoss naming the node;
// nothing is rewritten.
TEST_F(ZkStoreMigrationTest, DamagedOldRecordFailsTheOpenAndRewritesNothing) {
  const RmState old = OldState();
  ASSERT_TRUE(legacy_test::WriteOldZkStore(*raw_, root_, old).ok());
  std::string damaged = legacy_test::OldZkApplication(old.apps[1]);
  damaged.pop_back();
  absl::StatusOr<ZkClient::MultiResult> r =
      raw_->Multi({Op::Set(root_ + "/apps/app_2", damaged)}, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(r.ok() && r->rc == ZOK);

  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(Options(true));
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_THAT(store.status().message(),
              HasSubstr(root_ + "/apps/app_2: application record (pre-proto format): truncated"));
  EXPECT_EQ(Read(root_), "weft-rm-state 1");
  EXPECT_EQ(Read(root_ + "/apps/app%2F1"), legacy_test::OldZkApplication(old.apps[0]));
}

// After the migration the old format is no longer accepted: a format-2 store holds protos only.
TEST_F(ZkStoreMigrationTest, MigratedStoreRefusesOldRecords) {
  const RmState old = OldState();
  ASSERT_TRUE(legacy_test::WriteOldZkStore(*raw_, root_, old).ok());
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(Options(true));
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<ZkClient::MultiResult> r =
      raw_->Multi({Op::Set(root_ + "/apps/app_2", legacy_test::OldZkApplication(old.apps[1]))},
                  absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(r.ok() && r->rc == ZOK);
  absl::Status s = (*store)->Load().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(root_ + "/apps/app_2: application record: not a valid"));
}

}  // namespace
}  // namespace weft::store
