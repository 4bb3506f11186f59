// Copyright Weft authors. The StateStore rules of store/state_backend.h over a recording fake
// back-end: what reaches the primitives, and what the store makes of their answers.
#include "store/state_backend.h"

#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace weft::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Records every call; answers with what the test sets.
struct FakeState {
  RmState read_all;                           // what ReadAll() returns
  bool commit_result = true;                  // what Commit() returns
  std::vector<std::string> whats;             // Commit()'s `what`, in order
  std::vector<std::vector<StateOp>> commits;  // Commit()'s ops, in order
  int closes = 0;
};

class FakeBackend final : public StateBackend {
 public:
  explicit FakeBackend(FakeState* state) : StateBackend("fake store"), state_(state) {}
  absl::StatusOr<RmState> ReadAll() override { return state_->read_all; }
  absl::StatusOr<int64_t> BumpEpoch() override { return ++state_->read_all.epoch; }
  absl::StatusOr<bool> Commit(absl::string_view what, const std::vector<StateOp>& ops) override {
    state_->whats.emplace_back(what);
    state_->commits.push_back(ops);
    return state_->commit_result;
  }
  absl::Status Close() override {
    ++state_->closes;
    return absl::OkStatus();
  }

 private:
  FakeState* state_;
};

class BackedStateStoreTest : public ::testing::Test {
 protected:
  FakeState fake_;
  std::unique_ptr<StateStore> store_ = NewBackedStateStore(std::make_unique<FakeBackend>(&fake_));
};

TEST_F(BackedStateStoreTest, InvalidRecordsNeverReachTheBackend) {
  ApplicationRecord app = FullApplication("app_1");
  app.max_attempts = 0;
  EXPECT_EQ(store_->PutApplication(app).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      store_->PutApplicationAndAttempt(FullApplication("app_1"), FullAttempt("app_2", 1)).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->RemoveMasterKey("bogus", 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(fake_.commits, IsEmpty());
}

TEST_F(BackedStateStoreTest, OpsCarryTheirPreconditions) {
  ASSERT_TRUE(store_->PutAttempt(FullAttempt("app_1", 1)).ok());
  ASSERT_TRUE(
      store_->PutApplicationAndAttempt(FullApplication("app_1"), FullAttempt("app_1", 2)).ok());
  ASSERT_EQ(fake_.commits.size(), 2u);
  ASSERT_EQ(fake_.commits[0].size(), 1u);
  EXPECT_TRUE(std::get<PutAttemptOp>(fake_.commits[0][0]).require_application);
  ASSERT_EQ(fake_.commits[1].size(), 2u);
  EXPECT_EQ(std::get<PutApplicationOp>(fake_.commits[1][0]).app, FullApplication("app_1"));
  EXPECT_FALSE(std::get<PutAttemptOp>(fake_.commits[1][1]).require_application);
  EXPECT_THAT(fake_.whats, ElementsAre("storing attempt 1 of application 'app_1'",
                                       "storing application 'app_1' and its attempt 2"));
}

TEST_F(BackedStateStoreTest, AFailedPreconditionIsNotFoundNamingTheRecord) {
  fake_.commit_result = false;
  absl::Status s = store_->PutAttempt(FullAttempt("app_1", 3));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("attempt 3 of application 'app_1'"));
  s = store_->RemoveApplication("app_2");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("'app_2'"));
  s = store_->RemoveMasterKey("amrm", 4);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("amrm/4"));
}

TEST_F(BackedStateStoreTest, LoadSortsAndRejectsInvalidStoredRecords) {
  fake_.read_all.apps = {FullApplication("b"), FullApplication("a")};
  fake_.read_all.attempts = {FullAttempt("b", 2), FullAttempt("a", 1), FullAttempt("b", 1)};
  fake_.read_all.keys = {FullMasterKey("container", 1), FullMasterKey("amrm", 2),
                         FullMasterKey("amrm", -1)};
  absl::StatusOr<RmState> state = store_->Load();
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_THAT(state->apps, ElementsAre(FullApplication("a"), FullApplication("b")));
  EXPECT_THAT(state->attempts,
              ElementsAre(FullAttempt("a", 1), FullAttempt("b", 1), FullAttempt("b", 2)));
  EXPECT_THAT(state->keys, ElementsAre(FullMasterKey("amrm", -1), FullMasterKey("amrm", 2),
                                       FullMasterKey("container", 1)));

  fake_.read_all.attempts[1].state = "BOGUS";
  state = store_->Load();
  EXPECT_EQ(state.status().code(), absl::StatusCode::kDataLoss) << state.status();
  EXPECT_THAT(state.status().message(), HasSubstr("fake store: stored record is invalid"));
}

TEST_F(BackedStateStoreTest, AfterCloseNothingReachesTheBackend) {
  ASSERT_TRUE(store_->Close().ok());
  EXPECT_EQ(store_->Load().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store_->Load().status().message(), HasSubstr("fake store is closed"));
  EXPECT_EQ(store_->BumpEpoch().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->PutApplication(FullApplication("app_1")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_->Close().ok());
  store_.reset();
  EXPECT_THAT(fake_.commits, IsEmpty());
  EXPECT_EQ(fake_.read_all.epoch, 0);
  EXPECT_EQ(fake_.closes, 1);
}

}  // namespace
}  // namespace weft::store
