#include "common/metrics.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::metrics {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTest, CounterAndGaugeRender) {
  Registry r;
  r.GetCounter("weft_things_total", "Things done.")->Increment();
  r.GetCounter("weft_things_total", "Things done.")->Increment(2);
  r.GetCounter("weft_things_total", "Things done.")->Increment(-5);   // ignored
  r.GetCounter("weft_things_total", "Things done.")->IncrementTo(1);  // never down
  r.GetGauge("weft_level", "A level.", {{"queue", "root.a"}})->Set(1.5);
  EXPECT_EQ(r.Render(),
            "# HELP weft_level A level.\n"
            "# TYPE weft_level gauge\n"
            "weft_level{queue=\"root.a\"} 1.5\n"
            "# HELP weft_things_total Things done.\n"
            "# TYPE weft_things_total counter\n"
            "weft_things_total 3\n");
}

TEST(MetricsTest, EscapesHelpAndLabelValues) {
  Registry r;
  r.GetGauge("g", "line one\nback\\slash", {{"v", "a\"b\\c\nd"}})->Set(0);
  EXPECT_THAT(r.Render(), HasSubstr("# HELP g line one\\nback\\\\slash\n"));
  EXPECT_THAT(r.Render(), HasSubstr("g{v=\"a\\\"b\\\\c\\nd\"} 0\n"));
}

TEST(MetricsTest, HistogramIsCumulative) {
  Registry r;
  Histogram* h = r.GetHistogram("weft_op_seconds", "Op time.", {0.1, 1}, {{"op", "x"}});
  h->Observe(0.05);
  h->Observe(0.5);
  h->Observe(0.5);
  h->Observe(7);
  EXPECT_EQ(r.Render(),
            "# HELP weft_op_seconds Op time.\n"
            "# TYPE weft_op_seconds histogram\n"
            "weft_op_seconds_bucket{op=\"x\",le=\"0.1\"} 1\n"
            "weft_op_seconds_bucket{op=\"x\",le=\"1\"} 3\n"
            "weft_op_seconds_bucket{op=\"x\",le=\"+Inf\"} 4\n"
            "weft_op_seconds_sum{op=\"x\"} 8.05\n"
            "weft_op_seconds_count{op=\"x\"} 4\n");
}

TEST(MetricsTest, RemoveDropsOneSeries) {
  Registry r;
  r.GetGauge("g", "h", {{"c", "1"}})->Set(1);
  r.GetGauge("g", "h", {{"c", "2"}})->Set(2);
  r.Remove("g", {{"c", "1"}});
  r.Remove("absent", {});
  EXPECT_THAT(r.Render(), Not(HasSubstr("c=\"1\"")));
  EXPECT_THAT(r.Render(), HasSubstr("g{c=\"2\"} 2"));
}

TEST(MetricsTest, FormatsValues) {
  EXPECT_EQ(FormatValue(12345678901), "12345678901");
  EXPECT_EQ(FormatValue(-3), "-3");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatValue(1.0 / 0.0), "+Inf");
  EXPECT_EQ(FormatValue(-1.0 / 0.0), "-Inf");
  EXPECT_EQ(FormatValue(0.0 / 0.0), "NaN");
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  Registry r;
  Counter* c = r.GetCounter("c_total", "c");
  Histogram* h = r.GetHistogram("h_seconds", "h", LatencyBuckets());
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c->Increment();
        h->Observe(0.001);
        if (i % 1000 == 0) (void)r.Render();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(c->value(), 40000);
  EXPECT_EQ(h->data().count, 40000u);
}

TEST(MetricsDeathTest, InvalidNamesAndTypeClashesAbort) {
  Registry r;
  EXPECT_DEATH(r.GetGauge("bad-name", "h"), "check failed");
  EXPECT_DEATH(r.GetGauge("g", "h", {{"le", "x"}}), "check failed");
  r.GetGauge("g", "h");
  EXPECT_DEATH(r.GetCounter("g", "h"), "another type");
}

}  // namespace
}  // namespace weft::metrics
