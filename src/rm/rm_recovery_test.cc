// Copyright Weft authors. What an RM start restores from its store, and stored state it
// refuses.
#include "rm/rm_recovery.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"
#include "store/memory_store.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

absl::Status StartOn(store::StateStore* store) {
  ManualEventLoop loop;
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  return ResourceManager::Create(RmHarness::DefaultOptions(), &loop, store, &launcher, &secrets)
      .status();
}

store::ApplicationRecord App(const std::string& id, const std::string& state) {
  store::ApplicationRecord a;
  a.app_id = id;
  a.queue = "default";
  a.user = "alice";
  a.state = state;
  a.max_attempts = 2;
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id);
  ctx.mutable_am_container_spec()->add_command("true");
  (*ctx.mutable_am_resource()->mutable_values())["memory-mb"] = 1024;  // as submissions store it
  (*ctx.mutable_am_resource()->mutable_values())["vcores"] = 1;
  a.submission = ctx.SerializeAsString();
  return a;
}

TEST(RmRecoveryTest, ASubmissionThatDoesNotParseRefusesTheStartNamingTheApp) {
  auto store = store::NewMemoryStore();
  store::ApplicationRecord a = App("application_1_0001", "FINISHED");
  a.submission = "\xff\xff not a proto";
  ASSERT_TRUE(store->PutApplication(a).ok());
  absl::Status s = StartOn(store.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("recovering RM state"));
  EXPECT_THAT(s.message(), HasSubstr("application_1_0001"));
}

TEST(RmRecoveryTest, AMalformedAppIdRefusesTheStart) {
  auto store = store::NewMemoryStore();
  ASSERT_TRUE(store->PutApplication(App("app-7", "FINISHED")).ok());
  absl::Status s = StartOn(store.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.message(), HasSubstr("'app-7' is malformed"));
}

TEST(RmRecoveryTest, FinishedAppsStayQueryableAndUnfinishedOnesCarryOn) {
  auto store = std::make_unique<FaultyStore>(store::NewMemoryStore());
  ASSERT_TRUE(store->PutApplication(App("application_1_0001", "FINISHED")).ok());
  // Running when the old RM died: its attempt carries on, waiting for its AM to register again.
  store::ApplicationRecord running = App("application_1_0002", "RUNNING");
  store::AttemptRecord at;
  at.app_id = running.app_id;
  at.attempt_id = 1;
  at.state = "RUNNING";
  at.am_container_id = "container_e1_1_0002_01_000001";
  at.node = "h1:1";
  ASSERT_TRUE(store->PutApplicationAndAttempt(running, at).ok());
  // Its attempt had failed and the old RM died before it stored the next one.
  store::ApplicationRecord between = App("application_1_0003", "ACCEPTED");
  store::AttemptRecord failed = at;
  failed.app_id = between.app_id;
  failed.state = "FAILED";
  failed.am_container_id = "container_e1_1_0003_01_000002";
  ASSERT_TRUE(store->PutApplicationAndAttempt(between, failed).ok());
  ManualEventLoop loop;
  FakeLauncher launcher;
  security::FakeSecretSource secrets;
  auto rm =
      ResourceManager::Create(RmHarness::DefaultOptions(), &loop, store.get(), &launcher, &secrets);
  ASSERT_TRUE(rm.ok()) << rm.status();
  EXPECT_EQ((*rm)->GetApplication("application_1_0001")->state(), v1::APP_FINISHED);
  auto attempts = (*rm)->GetApplicationAttempts("application_1_0002");
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "RUNNING");
  EXPECT_EQ(attempts->attempts(0).am_container_id(), "container_e1_1_0002_01_000001");
  EXPECT_EQ((*rm)->GetApplication("application_1_0002")->state(), v1::APP_RUNNING);
  attempts = (*rm)->GetApplicationAttempts("application_1_0003");
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(0).state(), "FAILED");
  EXPECT_EQ(attempts->attempts(1).state(), "SCHEDULED");
  EXPECT_EQ((*rm)->GetApplication("application_1_0003")->state(), v1::APP_ACCEPTED);
  // Nothing of the running app is asked for again: its AM container exists.
  EXPECT_EQ((*rm)->scheduler().FindQueue("root")->pending, Resource::Of(1024, 1));
}

TEST(RmRecoveryTest, AStoreThatRefusesWritesRefusesTheStart) {
  auto store = std::make_unique<FaultyStore>(store::NewMemoryStore());
  store->fail_writes = true;
  absl::Status s = StartOn(store.get());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("disk full"));
}

}  // namespace
}  // namespace weft::rm
