#include "common/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::metrics {
namespace {

using ::testing::HasSubstr;

// `promtool check metrics` (parse and lint) over `text`: its exit status and output, or
// nullopt when promtool is not installed.
struct PromtoolResult {
  int status;
  std::string output;
};
std::optional<PromtoolResult> Promtool(const std::string& text) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) return std::nullopt;
  const std::string path = ::testing::TempDir() + "/metrics_test.prom";
  std::ofstream(path) << text;
  FILE* p = popen(("promtool check metrics <" + path + " 2>&1").c_str(), "r");
  if (p == nullptr) return std::nullopt;
  PromtoolResult r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) r.output.append(buf, n);
  r.status = pclose(p);
  return r;
}

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

TEST(MetricsTest, LabelsKeepTheCallersOrder) {
  Registry r;
  r.GetCounter("weft_calls_total", "Calls.", {{"method", "m"}, {"code", "OK"}})->Increment(2);
  r.GetCounter("weft_calls_total", "Calls.", {{"method", "a"}, {"code", "INTERNAL"}})->Increment();
  EXPECT_EQ(r.Render(),
            "# HELP weft_calls_total Calls.\n"
            "# TYPE weft_calls_total counter\n"
            "weft_calls_total{method=\"a\",code=\"INTERNAL\"} 1\n"
            "weft_calls_total{method=\"m\",code=\"OK\"} 2\n");
}

TEST(MetricsTest, FamilyWithoutSeriesKeepsHelpAndType) {
  Registry r;
  r.GetGauge("weft_rate", "A rate.", {{"c", "1"}})->Set(1);
  r.Remove("weft_rate", {{"c", "1"}});
  EXPECT_EQ(r.Render(), "# HELP weft_rate A rate.\n# TYPE weft_rate gauge\n");
}

TEST(MetricsTest, HistogramDataComesBackPerBucket) {
  Registry r;
  Histogram* h = r.GetHistogram("weft_op_seconds", "Op time.", {0.1, 1});
  h->Observe(0.1);  // bounds are inclusive
  h->Observe(3);
  const Histogram::Data d = h->data();
  EXPECT_EQ(d.bounds, (std::vector<double>{0.1, 1}));
  EXPECT_EQ(d.counts, (std::vector<uint64_t>{1, 0, 1}));
  EXPECT_EQ(d.sum, 3.1);
  EXPECT_EQ(d.count, 2u);
  // The same series again, whatever bounds are given.
  EXPECT_EQ(r.GetHistogram("weft_op_seconds", "Op time.", {5}), h);
}

TEST(MetricsTest, WriterAppendsCollectorFamiliesAfterTheRegistry) {
  Registry r;
  r.GetCounter("weft_a_total", "A.")->Increment();
  TextWriter w;
  r.RenderTo(&w);
  w.Family("weft_b", "B.", TextWriter::Type::kGauge);
  w.Sample("weft_b", {{"z", "1"}, {"a", "2"}}, 0.5);
  w.Family("weft_c_seconds", "C.", TextWriter::Type::kHistogram);
  w.Histogram("weft_c_seconds", {}, {{1}, {2, 1}, 2.5, 3});
  EXPECT_EQ(w.text(),
            "# HELP weft_a_total A.\n# TYPE weft_a_total counter\nweft_a_total 1\n"
            "# HELP weft_b B.\n# TYPE weft_b gauge\nweft_b{z=\"1\",a=\"2\"} 0.5\n"
            "# HELP weft_c_seconds C.\n# TYPE weft_c_seconds histogram\n"
            "weft_c_seconds_bucket{le=\"1\"} 2\nweft_c_seconds_bucket{le=\"+Inf\"} 3\n"
            "weft_c_seconds_sum 2.5\nweft_c_seconds_count 3\n");
  const std::string first = w.text();
  EXPECT_EQ(w.Take(), first);  // Take empties the writer
  EXPECT_EQ(w.Take(), "");
}

// Everything the registry and a collector write parses and lints clean (when promtool is
// installed): escapes, label order, NaN and infinities, histograms with and without labels.
TEST(MetricsTest, OutputPassesPromtool) {
  Registry r;
  r.GetCounter("weft_calls_total", "Calls by \"method\"\nand code \\ status.",
               {{"method", "a\"b\\c\nd"}, {"code", "OK"}})
      ->Increment(3);
  r.GetGauge("weft_level", "A level.", {{"queue", "root.a"}})->Set(0.1 + 0.2);
  r.GetGauge("weft_level", "A level.", {{"queue", "root.b"}})
      ->Set(std::numeric_limits<double>::quiet_NaN());
  r.GetGauge("weft_level", "A level.", {{"queue", "root.c"}})
      ->Set(-std::numeric_limits<double>::infinity());
  r.GetHistogram("weft_op_seconds", "Op time.", LatencyBuckets(), {{"op", "x"}})->Observe(0.003);
  r.GetHistogram("weft_pass_seconds", "Pass time.", LatencyBuckets())->Observe(12);
  TextWriter w;
  r.RenderTo(&w);
  w.Family("weft_snapshot_age_seconds", "Age.", TextWriter::Type::kGauge);
  w.Sample("weft_snapshot_age_seconds", {}, 1.234);
  const std::string text = w.Take();
  std::optional<PromtoolResult> result = Promtool(text);
  if (!result.has_value()) GTEST_SKIP() << "promtool is not installed";
  EXPECT_EQ(result->status, 0) << result->output << "\n" << text;
}

TEST(MetricsDeathTest, SamplesOutsideTheirFamilyAbort) {
  TextWriter w;
  EXPECT_DEATH(w.Sample("weft_b", {}, 1), "outside its counter or gauge family");
  w.Family("weft_b", "B.", TextWriter::Type::kGauge);
  EXPECT_DEATH(w.Sample("weft_c", {}, 1), "outside its counter or gauge family");
  EXPECT_DEATH(w.Histogram("weft_b", {}, {}), "outside its histogram family");
  Registry r;
  EXPECT_DEATH(r.GetGauge("g", "h", {{"a", "1"}, {"a", "2"}}), "given twice");
  EXPECT_DEATH(r.GetGauge("g", "h", {{"__a", "1"}}), "check failed");
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
