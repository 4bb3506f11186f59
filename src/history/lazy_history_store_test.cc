// Copyright Weft authors. LazyHistoryStore: Unavailable while its store cannot be opened, the
// store's answers once it can.
#include "history/lazy_history_store.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::history {
namespace {

using ::testing::HasSubstr;

TEST(LazyHistoryStoreTest, UnavailableUntilTheStoreCanBeOpenedThenServesIt) {
  std::string dir = ::testing::TempDir() + "/weft-lazy-history-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  // A regular file where the store's directory must go: opening fails.
  { std::ofstream(dir + "/blocked") << "x"; }
  LazyHistoryStore store("sqlite:" + dir + "/blocked/history.db");
  v1::ApplicationHistoryRecord app;
  app.set_application_id("application_1_0001");
  app.set_user("alice");
  absl::Status refused = store.PutApplication(app);
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("blocked/history.db"));
  EXPECT_TRUE(absl::IsUnavailable(store.GetApplication("application_1_0001").status()));
  // The way is clear: the next call opens it.
  std::filesystem::remove(dir + "/blocked");
  ASSERT_TRUE(store.PutApplication(app).ok());
  absl::StatusOr<v1::ApplicationHistoryRecord> got = store.GetApplication("application_1_0001");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->user(), "alice");
  EXPECT_TRUE(absl::IsNotFound(store.GetApplication("application_1_0002").status()));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weft::history
