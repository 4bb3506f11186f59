#include "rm/heartbeat_interval.h"

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

HeartbeatScaling Open() {
  HeartbeatScaling s;
  s.enabled = true;
  s.min_ms = 250;
  s.max_ms = 5000;
  return s;
}

TEST(HeartbeatIntervalTest, OffOrUnknownKeepsTheInterval) {
  HeartbeatScaling off = Open();
  off.enabled = false;
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, off, 0.9, 0.1), 1000);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), std::nullopt, 0.5), 1000);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), 0.5, std::nullopt), 1000);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), 0.5, 0.5), 1000);
}

// YARN's documented examples: 20 points below the average is 20% faster, above 20% slower.
TEST(HeartbeatIntervalTest, ScalesByTheDistanceFromTheClusterAverage) {
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), 0.3, 0.5), 800);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), 0.7, 0.5), 1200);
  HeartbeatScaling strong = Open();
  strong.speedup_factor = 2;
  strong.slowdown_factor = 3;
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, strong, 0.3, 0.5), 600);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, strong, 0.7, 0.5), 1600);
}

TEST(HeartbeatIntervalTest, BoundedAndUtilizationsClamped) {
  HeartbeatScaling s = Open();
  s.speedup_factor = 10;
  s.slowdown_factor = 10;
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, s, 0.0, 1.0), 250);
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, s, 1.0, 0.0), 5000);
  // A node reporting more than all its cores (a CPU-time spike) counts as fully busy.
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, Open(), 3.0, 0.5), 1500);
  // YARN's defaults: min = max = the interval, so enabling alone changes nothing.
  HeartbeatScaling yarn_defaults;
  yarn_defaults.enabled = true;
  EXPECT_EQ(ScaledHeartbeatIntervalMs(1000, yarn_defaults, 0.0, 1.0), 1000);
}

TEST(HeartbeatIntervalTest, ValidationNamesWhatIsWrong) {
  EXPECT_TRUE(ValidateHeartbeatScaling(Open(), 1000).ok());
  HeartbeatScaling s = Open();
  s.min_ms = 2000;
  absl::Status st = ValidateHeartbeatScaling(s, 1000);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("2000..5000"), absl::string_view::npos) << st;
  s = Open();
  s.speedup_factor = -1;
  st = ValidateHeartbeatScaling(s, 1000);
  EXPECT_NE(st.message().find("speedup"), absl::string_view::npos) << st;
  EXPECT_FALSE(ValidateHeartbeatScaling(Open(), 0).ok());
  HeartbeatScaling off;  // bounds are not checked while scaling is off
  off.min_ms = 5000;
  EXPECT_TRUE(ValidateHeartbeatScaling(off, 1000).ok());
}

}  // namespace
}  // namespace weft::rm
