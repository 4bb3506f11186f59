#include "common/resource.h"

#include "common/resource_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(ResourceTest, ArithmeticAndFits) {
  Resource a = Resource::Of(2048, 2, 20);
  Resource b = Resource::Of(1024, 1, 5);
  EXPECT_EQ(a + b, Resource::Of(3072, 3, 25));
  EXPECT_EQ(a - b, Resource::Of(1024, 1, 15));
  EXPECT_EQ(b * 3, Resource::Of(3072, 3, 15));
  EXPECT_TRUE(b.FitsIn(a));
  EXPECT_FALSE(a.FitsIn(b));
  EXPECT_FALSE(Resource::Of(1024, 3, 0).FitsIn(a));  // one dimension too large is enough
  EXPECT_TRUE(Resource().IsZero());
  EXPECT_TRUE((b - a).AnyNegative());
  EXPECT_EQ((b - a).ClampedAtZero(), Resource());
  EXPECT_EQ(Min(a, Resource::Of(4096, 1, 0)), Resource::Of(2048, 1, 0));
  EXPECT_EQ(Max(a, Resource::Of(4096, 1, 0)), Resource::Of(4096, 2, 20));
}

TEST(ResourceTest, DominantShareIsLargestRatio) {
  Resource total = Resource::Of(18 * 1024, 9, 0);
  // Seed 000's example: A's task <1 CPU, 4 GB> is memory-dominant, B's <3 CPU, 1 GB> CPU.
  Resource a = Resource::Of(4096, 1);
  Resource b = Resource::Of(1024, 3);
  EXPECT_DOUBLE_EQ(a.DominantShare(total), 4.0 / 18.0);
  EXPECT_EQ(a.DominantType(total), kMemoryMb);
  EXPECT_DOUBLE_EQ(b.DominantShare(total), 3.0 / 9.0);
  EXPECT_EQ(b.DominantType(total), kVcores);
  // Types absent from the total are ignored rather than dividing by zero.
  EXPECT_DOUBLE_EQ(Resource::Of(0, 0, 50).DominantShare(total), 0.0);
  EXPECT_EQ(Resource().DominantType(total), -1);
}

TEST(ResourceTest, DebugString) {
  EXPECT_EQ(Resource::Of(2048, 1, 20).DebugString(), "<memory-mb=2048, vcores=1, network-mbps=20>");
  EXPECT_EQ(Resource::Of(2048, 1).DebugString(), "<memory-mb=2048, vcores=1>");
}

TEST(ResourceTypeRegistryTest, ParseAndFormat) {
  ResourceTypeRegistry reg;
  auto r = reg.Parse("memory-mb=2048, vcores=1,network-mbps=20");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, Resource::Of(2048, 1, 20));
  EXPECT_EQ(reg.Format(*r), "<memory-mb=2048, vcores=1, network-mbps=20>");
  EXPECT_TRUE(reg.Parse("").ok());
}

TEST(ResourceTypeRegistryTest, ParseErrorsNameTheItem) {
  ResourceTypeRegistry reg;
  EXPECT_THAT(reg.Parse("memory-mb=2g").status().message(), HasSubstr("'2g' is not an integer"));
  EXPECT_THAT(reg.Parse("gpus=1").status().message(), HasSubstr("unknown resource type 'gpus'"));
  EXPECT_THAT(reg.Parse("memory-mb").status().message(), HasSubstr("type=value"));
  EXPECT_THAT(reg.Parse("vcores=1,vcores=2").status().message(), HasSubstr("given twice"));
}

TEST(ResourceTypeRegistryTest, CustomTypes) {
  ResourceTypeRegistry reg;
  auto id = reg.AddType({"gpu", "devices", 0, 8, 1});
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, kFirstCustomType);
  EXPECT_EQ(reg.Find("gpu"), kFirstCustomType);
  auto r = reg.Parse("memory-mb=1024,vcores=1,gpu=2");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[kFirstCustomType], 2);
  EXPECT_EQ(reg.Format(*r), "<memory-mb=1024, vcores=1, gpu=2>");
  EXPECT_EQ(reg.AddType({"gpu", "devices", 0, 8, 1}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(reg.AddType({"Bad Name", "x", 0, 1, 1}).status().message(), HasSubstr("must be"));
  EXPECT_THAT(reg.AddType({"fpga", "x", 5, 1, 1}).status().message(), HasSubstr("below minimum"));
  for (int i = reg.size(); i < kMaxResourceTypes; ++i) {
    ASSERT_TRUE(reg.AddType({"t" + std::to_string(i), "x", 0, 1, 1}).ok());
  }
  EXPECT_EQ(reg.AddType({"one-too-many", "x", 0, 1, 1}).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(reg.size(), kMaxResourceTypes);
}

TEST(ResourceTypeRegistryTest, NormalizeRoundsUpAndRaisesToMinimum) {
  ResourceTypeRegistry reg;
  ASSERT_TRUE(reg.SetLimits("memory-mb", 1024, 8192, 512).ok());
  ASSERT_TRUE(reg.SetLimits("network-mbps", 1, 200, 1).ok());
  auto n = reg.Normalize(Resource::Of(1500, 0, 0));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(*n, Resource::Of(1536, 1, 0));  // network 0 stays 0: not requested
  n = reg.Normalize(Resource::Of(100, 2, 10));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, Resource::Of(1024, 2, 10));
}

TEST(ResourceTypeRegistryTest, NormalizeRejectsNeverClamps) {
  ResourceTypeRegistry reg;
  ASSERT_TRUE(reg.SetLimits("memory-mb", 1024, 8192, 512).ok());
  ASSERT_TRUE(reg.SetLimits("network-mbps", 1, 200, 1).ok());
  EXPECT_THAT(reg.Normalize(Resource::Of(-1, 1)).status().message(),
              HasSubstr("memory-mb=-1 is negative"));
  EXPECT_THAT(reg.Normalize(Resource::Of(9000, 1)).status().message(),
              HasSubstr("memory-mb=9000 is above the maximum allocation 8192"));
  EXPECT_THAT(reg.Normalize(Resource::Of(1024, 1, 201)).status().message(),
              HasSubstr("network-mbps=201"));
  Resource unknown;
  unknown[kMaxResourceTypes - 1] = 1;
  EXPECT_THAT(reg.Validate(unknown).message(), HasSubstr("not registered"));
  EXPECT_EQ(reg.SetLimits("nope", 0, 1, 1).code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(reg.SetLimits("vcores", 0, 4, 0).ok());
}

TEST(ResourceTypeRegistryTest, GpuMilliIsAShareOfOneGpuOrWholeGpus) {
  ResourceTypeRegistry reg;
  for (const char* ok : {"gpu-milli=1", "gpu-milli=999", "gpu-milli=1000", "gpu-milli=3000"}) {
    absl::StatusOr<Resource> r = reg.Parse(ok);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(reg.Validate(*r).ok()) << ok;
  }
  absl::StatusOr<Resource> bad = reg.Parse("gpu-milli=1500");
  ASSERT_TRUE(bad.ok());
  absl::Status s = reg.Validate(*bad);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu-milli=1500"), std::string::npos) << s;
  EXPECT_FALSE(reg.Normalize(*bad).ok());
  EXPECT_EQ(reg.Format(*reg.Parse("memory-mb=128,vcores=1,gpu-milli=500")),
            "<memory-mb=128, vcores=1, gpu-milli=500>");
}

}  // namespace
}  // namespace weft
