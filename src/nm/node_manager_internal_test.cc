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

TEST(CompletedStatusTest, CarriesExitAndDiagnostics) {
  v1::ContainerStatus s = CompletedStatus("container_1", 137, "killed");
  EXPECT_EQ(s.container_id(), "container_1");
  EXPECT_EQ(s.state(), v1::CONTAINER_COMPLETE);
  EXPECT_EQ(s.exit_status(), 137);
  EXPECT_EQ(s.diagnostics(), "killed");
}

}  // namespace
}  // namespace weft::nm::internal
