// Copyright Weft authors.
#include "common/log.h"

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace weft::log {
namespace {

TEST(LogTest, FormatsEventWithFields) {
  EXPECT_EQ(Format("node_registered", {{"node", "127.0.0.1:4000"}, {"vcores", 8}}),
            "node_registered node=127.0.0.1:4000 vcores=8");
}

TEST(LogTest, QuotesValuesThatWouldBreakTheLine) {
  EXPECT_EQ(Format("e", {{"why", "two words"}}), "e why=\"two words\"");
  EXPECT_EQ(Format("e", {{"v", ""}}), "e v=\"\"");
  EXPECT_EQ(Format("e", {{"v", "a=b"}}), "e v=\"a=b\"");
  EXPECT_EQ(Format("e", {{"v", "line\nnext \"q\""}}), "e v=\"line\\nnext \\\"q\\\"\"");
  EXPECT_EQ(Format("e", {{"v", std::string("\x01", 1)}}), "e v=\"\\x01\"");
}

TEST(LogTest, StatusesAndBooleans) {
  EXPECT_EQ(Format("e", {{"ok", true}, {"status", absl::NotFoundError("gone")}}),
            "e ok=true status=\"NOT_FOUND: gone\"");
}

TEST(LogTest, ParsesLevelsAndRefusesOthers) {
  EXPECT_EQ(*ParseLevel("DEBUG"), Level::kDebug);
  EXPECT_EQ(*ParseLevel("warn"), Level::kWarn);
  EXPECT_EQ(*ParseLevel("off"), Level::kOff);
  absl::StatusOr<Level> bad = ParseLevel("loud");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'loud'"), std::string::npos);
}

TEST(LogTest, ThresholdFiltersBelowIt) {
  Init("test", Level::kWarn);
  EXPECT_EQ(CurrentLevel(), Level::kWarn);
  // Writing below or at the threshold must not crash; what reaches stderr is spdlog's job.
  Info("ignored", {{"k", 1}});
  Warn("written", {{"k", 2}});
  Init("test", Level::kInfo);
  EXPECT_EQ(CurrentLevel(), Level::kInfo);
}

TEST(LogTest, WarnIfErrorLogsADroppedErrorWithItsFields) {
  Init("test", Level::kInfo);
  testing::internal::CaptureStderr();
  EXPECT_TRUE(WarnIfError(absl::OkStatus(), "cleanup_failed", {{"k", 1}}));
  EXPECT_FALSE(WarnIfError(absl::NotFoundError("gone"), "cleanup_failed", {{"k", 2}}));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("k=1"), std::string::npos) << err;
  EXPECT_NE(err.find("cleanup_failed k=2 error=\"NOT_FOUND: gone\""), std::string::npos) << err;
}

}  // namespace
}  // namespace weft::log
