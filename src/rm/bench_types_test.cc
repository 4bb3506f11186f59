// Copyright Weft authors.
// The vocabulary `weft bench rm` and its simulated NMs share: the heartbeat schedule's names,
// the latency summary and the process's CPU time.
#include "rm/bench_types.h"

#include <time.h>

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

// The process's CPU time grows by at least what one of its threads spent: 50 ms of this
// thread's own CPU clock, however long the machine takes to give it that.
TEST(ProcessCpuSecondsTest, GrowsByTheCpuAThreadSpends) {
  auto thread_cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  };
  const double before = ProcessCpuSeconds();
  const double thread_from = thread_cpu_s();
  volatile uint64_t spin = 0;
  while (thread_cpu_s() - thread_from < 0.05) spin = spin + 1;
  // getrusage counts in microseconds, the thread clock in nanoseconds: 1 ms of slack.
  EXPECT_GE(ProcessCpuSeconds() - before, 0.049);
}

}  // namespace
}  // namespace weft::rm
