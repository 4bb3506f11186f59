// Copyright Weft authors.
// The vocabulary `weft bench rm` and its simulated NMs share: the heartbeat schedule's names
// and the latency summary.
#include "rm/bench_types.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

// The schedule's names round-trip; any other name is refused, naming it and both choices.
TEST(SimNmScheduleTest, NamesRoundTripAndAnUnknownOneIsRefused) {
  for (SimNmSchedule s : {SimNmSchedule::kAfterReply, SimNmSchedule::kFixed}) {
    absl::StatusOr<SimNmSchedule> parsed = ParseSimNmSchedule(SimNmScheduleName(s));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, s);
  }
  EXPECT_STREQ(SimNmScheduleName(SimNmSchedule::kFixed), "fixed");
  absl::StatusOr<SimNmSchedule> bad = ParseSimNmSchedule("Fixed");
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'Fixed'"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("'after-reply'"), std::string::npos) << bad.status();
}

// Nearest-rank percentiles below: p50 of 1..100 is the 50th value, p99 the 99th; the samples
// need not come sorted; the mean is of all of them; no samples give zeros and a count of 0.
TEST(SummarizeLatenciesTest, NearestRankPercentilesOfUnsortedSamples) {
  std::vector<double> ms;
  for (int i = 100; i >= 1; --i) ms.push_back(i);
  const LatencyMs l = SummarizeLatencies(ms);
  EXPECT_EQ(l.count, 100);
  EXPECT_EQ(l.p50, 50);
  EXPECT_EQ(l.p99, 99);
  EXPECT_EQ(l.max, 100);
  EXPECT_DOUBLE_EQ(l.mean, 50.5);
  EXPECT_EQ(SummarizeLatencies({1, 1, 1, 9}).mean, 3);  // not the median
  const LatencyMs none = SummarizeLatencies({});
  EXPECT_EQ(none.count, 0);
  EXPECT_EQ(none.p50, 0);
  EXPECT_EQ(none.max, 0);
  EXPECT_EQ(none.mean, 0);
}

}  // namespace
}  // namespace weft::rm
