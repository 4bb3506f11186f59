// Copyright Weft authors.
#include "scheduler/gpu/fragmentation.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft::gpu {
namespace {

TaskType Type(int64_t cpu, int32_t milli, int32_t devices, double popularity,
              std::vector<std::string> models = {}) {
  TaskType t;
  t.cpu_milli = cpu;
  t.milli_per_device = milli;
  t.devices = devices;
  t.popularity = popularity;
  t.allowed_models = std::move(models);
  return t;
}

GpuAsk TaskAsk(int64_t cpu, int64_t gpu, std::vector<std::string> models = {}) {
  GpuAsk a;
  a.cpu_milli = cpu;
  a.memory_mib = 1024;
  a.gpu_milli = gpu;
  a.allowed_models = std::move(models);
  return a;
}

TEST(FragmentationTest, HandComputedValues) {
  // Half the tasks take 500 milli of one GPU, half one whole GPU; each 1 core.
  auto w = TargetWorkload::FromTypes({Type(1000, 500, 1, 1), Type(1000, 1000, 1, 1)});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_DOUBLE_EQ(w->types()[0].popularity, 0.5);
  // Devices free 1000, 300, 600: the share type cannot use the 300 (0.5 * 300); the whole-GPU
  // type cannot use the 300 nor the 600 (0.5 * 900).
  EXPECT_DOUBLE_EQ(FragmentationMilli(10000, std::vector<int32_t>{1000, 300, 600}, "T4", *w),
                   600);
  // Too little CPU for either type: all 1900 free milli are fragments.
  EXPECT_DOUBLE_EQ(FragmentationMilli(500, std::vector<int32_t>{1000, 300, 600}, "T4", *w), 1900);
  // No whole device: the whole-GPU type can use none of it (0.5 * 900 + 0.5 * 300).
  EXPECT_DOUBLE_EQ(FragmentationMilli(10000, std::vector<int32_t>{300, 600}, "T4", *w), 600);
  // Nothing free, or no GPUs: nothing fragmented.
  EXPECT_DOUBLE_EQ(FragmentationMilli(10000, std::vector<int32_t>{0, 0}, "T4", *w), 0);
  EXPECT_DOUBLE_EQ(FragmentationMilli(10000, std::vector<int32_t>{}, "", *w), 0);
}

TEST(FragmentationTest, CpuOnlyAndModelConstrainedTypesCountAllFreeGpu) {
  auto w = TargetWorkload::FromTypes(
      {Type(1000, 0, 0, 1), Type(1000, 200, 1, 1, {"V100M32"}), Type(1000, 200, 1, 2)});
  ASSERT_TRUE(w.ok());
  // The CPU-only type (1/4) and, on a T4, the V100-only type (1/4) count all 800 free milli;
  // the unconstrained share type (1/2) can use it all.
  EXPECT_DOUBLE_EQ(FragmentationMilli(4000, std::vector<int32_t>{800}, "T4", *w), 400);
  // On a V100M32 only the CPU-only type counts it.
  EXPECT_DOUBLE_EQ(FragmentationMilli(4000, std::vector<int32_t>{800}, "V100M32", *w), 200);
}

TEST(FragmentationTest, MultiGpuTypeNeedsEnoughWholeDevices) {
  auto w = TargetWorkload::FromTypes({Type(1000, 1000, 2, 1)});
  ASSERT_TRUE(w.ok());
  EXPECT_DOUBLE_EQ(FragmentationMilli(8000, std::vector<int32_t>{1000, 1000, 400}, "A", *w), 400);
  EXPECT_DOUBLE_EQ(FragmentationMilli(8000, std::vector<int32_t>{1000, 900, 400}, "A", *w), 2300);
}

TEST(FragmentationTest, WorkloadFromAsksTakesTheCommonTypesToCoverage) {
  std::vector<GpuAsk> asks;
  for (int i = 0; i < 60; ++i) asks.push_back(TaskAsk(4000, 500));
  for (int i = 0; i < 30; ++i) asks.push_back(TaskAsk(8000, 2000));
  for (int i = 0; i < 6; ++i) asks.push_back(TaskAsk(2000, 0));
  for (int i = 0; i < 4; ++i) asks.push_back(TaskAsk(1000, 250, {"T4"}));
  auto w = TargetWorkload::FromAsks(asks);
  ASSERT_TRUE(w.ok()) << w.status();
  // 60 + 30 + 6 = 96 >= 95: the fourth type is left out and the rest renormalised.
  ASSERT_EQ(w->types().size(), 3u);
  EXPECT_EQ(w->types()[0].milli_per_device, 500);
  EXPECT_EQ(w->types()[1].devices, 2);
  EXPECT_EQ(w->types()[1].milli_per_device, 1000);
  EXPECT_EQ(w->types()[2].devices, 0);
  EXPECT_NEAR(w->types()[0].popularity, 60.0 / 96, 1e-12);
  // Without CPU-only asks: 60 + 30 = 90 of 94 asks already cover 95%.
  TargetWorkloadOptions gpu_only;
  gpu_only.include_cpu_only = false;
  auto g = TargetWorkload::FromAsks(asks, gpu_only);
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->types().size(), 2u);
  EXPECT_NEAR(g->types()[1].popularity, 30.0 / 90, 1e-12);
  // With full coverage the model-constrained type is kept, with its models.
  TargetWorkloadOptions all;
  all.coverage = 1.0;
  auto a = TargetWorkload::FromAsks(asks, all);
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->types().size(), 4u);
  EXPECT_EQ(a->types()[3].allowed_models, std::vector<std::string>{"T4"});
}

TEST(FragmentationTest, BadInputsAreRefused) {
  EXPECT_FALSE(TargetWorkload::FromAsks({}).ok());
  std::vector<GpuAsk> bad = {TaskAsk(1000, 500), TaskAsk(1000, 1500)};
  auto w = TargetWorkload::FromAsks(bad);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("ask 1"), std::string::npos) << w.status();
  EXPECT_FALSE(TargetWorkload::FromTypes({Type(1, 1, 1, 0)}).ok());
}

}  // namespace
}  // namespace weft::gpu
