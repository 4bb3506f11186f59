// Copyright Weft authors. What the NodeManager's parts share: the limits a token's resource
// grants, and the COMPLETE status they report.
#include "nm/node_manager_internal.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm::internal {
namespace {

using ::testing::HasSubstr;

TEST(LimitsFromTokenResourceTest, BothSpellingsGiveTheSameLimits) {
  int64_t mbps = -1;
  auto plain = LimitsFromTokenResource("memory-mb=1024,vcores=2,network-mbps=50", &mbps);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->memory_bytes, int64_t{1024} << 20);
  EXPECT_EQ(plain->cpu_weight, 2 * kCpuSharesPerVcore);
  EXPECT_EQ(mbps, 50);
  int64_t mbps2 = -1;
  auto bracketed = LimitsFromTokenResource("<memory-mb=1024, vcores=2>", &mbps2);
  ASSERT_TRUE(bracketed.ok()) << bracketed.status();
  EXPECT_EQ(bracketed->memory_bytes, plain->memory_bytes);
  EXPECT_EQ(mbps2, 0);  // absent: not shaped
  // Unknown types are accepted and not enforced here.
  EXPECT_TRUE(LimitsFromTokenResource("memory-mb=1,gpus=4", &mbps).ok());
}

TEST(PidsLimitForTest, PerVcoreWithAFloorOfOneVcoreOrAFixedMax) {
  EXPECT_EQ(PidsLimitFor(2, 512, 0), 1024);
  EXPECT_EQ(PidsLimitFor(0, 512, 0), 512) << "a container with no vcores counts as one";
  EXPECT_EQ(PidsLimitFor(8, 512, 300), 300) << "a fixed max wins";
  EXPECT_EQ(PidsLimitFor(8, 0, 0), 0) << "no limit";
  EXPECT_EQ(PidsLimitFor(int64_t{1} << 40, 512, 0), int64_t{1} << 22) << "the kernel's most";
}

TEST(LimitsFromTokenResourceTest, MalformedResourcesNameTheProblem) {
  int64_t mbps = 0;
  EXPECT_THAT(LimitsFromTokenResource("<memory-mb=1", &mbps).status().message(),
              HasSubstr("missing '>'"));
  EXPECT_THAT(LimitsFromTokenResource("memory-mb=-1", &mbps).status().message(),
              HasSubstr("bad item 'memory-mb=-1'"));
  EXPECT_THAT(LimitsFromTokenResource("vcores", &mbps).status().message(),
              HasSubstr("bad item 'vcores'"));
  EXPECT_THAT(LimitsFromTokenResource("vcores=1,vcores=2", &mbps).status().message(),
              HasSubstr("repeated vcores"));
  EXPECT_THAT(LimitsFromTokenResource("memory-mb=9223372036854775807", &mbps).status().message(),
              HasSubstr("out of range"));
}

TEST(ResourceFromTokenResourceTest, EveryTypeByName) {
  absl::StatusOr<v1::Resource> r = ResourceFromTokenResource("<memory-mb=1024, vcores=2, gpu=1>");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->values().size(), 3u);
  EXPECT_EQ(r->values().at("memory-mb"), 1024);
  EXPECT_EQ(r->values().at("vcores"), 2);
  EXPECT_EQ(r->values().at("gpu"), 1);
  EXPECT_THAT(ResourceFromTokenResource("gpu=1,gpu=2").status().message(),
              HasSubstr("repeated gpu"));
  EXPECT_THAT(ResourceFromTokenResource("memory-mb=x").status().message(),
              HasSubstr("bad item 'memory-mb=x'"));
}

TEST(CompletedStatusTest, CarriesExitDiagnosticsTimesAllocationAndLifetimeUsage) {
  NmContainerRecord accounting;
  accounting.resource = "memory-mb=1024,vcores=2";
  accounting.launched_ms = 1'700'000'000'000;
  accounting.finished_ms = 1'700'000'002'500;
  accounting.cpu_time_ms = 1800;
  accounting.peak_memory_bytes = 300 << 20;
  accounting.network_tx_bytes = 4096;
  accounting.memory_mb_seconds = 611.6;
  v1::ContainerStatus s = CompletedStatus("container_1", 137, "killed", accounting);
  EXPECT_EQ(s.container_id(), "container_1");
  EXPECT_EQ(s.state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(s.exit_status(), 137);
  EXPECT_EQ(s.diagnostics(), "killed");
  EXPECT_EQ(s.start_time_ms(), 1'700'000'000'000);
  EXPECT_EQ(s.finish_time_ms(), 1'700'000'002'500);
  EXPECT_EQ(s.allocated().values().at("memory-mb"), 1024);
  EXPECT_EQ(s.allocated().values().at("vcores"), 2);
  EXPECT_EQ(s.usage().cpu_time_ms(), 1800);
  EXPECT_EQ(s.usage().peak_memory_bytes(), 300 << 20);
  EXPECT_EQ(s.usage().network_tx_bytes(), 4096);
  EXPECT_EQ(s.usage().memory_mb_seconds(), 612);
  // Through the store's MB x ms: 12.4996 is kept as 12.5, and both report 13.
  EXPECT_EQ(ReportedMbSeconds(12.4996), 13);
  EXPECT_EQ(ReportedMbSeconds(12.5), 13);
  EXPECT_EQ(ReportedMbSeconds(12.4994), 12);
  EXPECT_EQ(ReportedMbSeconds(0.0004), 0);
  EXPECT_EQ(s.usage().memory_rss_bytes(), 0) << "it has ended";

  // A launch cut short: no start, nothing measured.
  v1::ContainerStatus lost = CompletedStatus("container_2", -108, "lost", NmContainerRecord());
  EXPECT_EQ(lost.start_time_ms(), 0);
  EXPECT_FALSE(lost.has_allocated()) << "no resource recorded";
  EXPECT_EQ(lost.usage().memory_mb_seconds(), 0);
}

TEST(AddMemorySampleTest, IntegratesRssOverTimeKeepingFractions) {
  NmContainerRecord r;
  AddMemorySample(&r, 1000, 64 << 20);  // the first sample: nothing before it
  EXPECT_EQ(r.memory_mb_seconds, 0);
  EXPECT_EQ(r.usage_sample_ms, 1000);
  EXPECT_EQ(r.usage_sample_rss_bytes, 64 << 20);
  AddMemorySample(&r, 1100, 10 << 20);  // 10 MB over 0.1 s
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 1.0);
  AddMemorySample(&r, 1150, 1 << 19);  // 0.5 MB over 0.05 s: kept, not rounded away
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 1.025);
  AddMemorySample(&r, 1150, 1 << 20);  // no time passed: nothing added, the rss is taken
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 1.025);
  EXPECT_EQ(r.usage_sample_rss_bytes, 1 << 20);
  AddMemorySample(&r, 900, 99 << 20);  // the clock stepped back: nothing added
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 1.025);
  EXPECT_EQ(r.usage_sample_ms, 1150);
  // At its end: the last rss held until then (here 99 MB over 1 s).
  AddMemorySample(&r, 2150, r.usage_sample_rss_bytes);
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 100.025);
}

}  // namespace
}  // namespace weft::nm::internal
