// Copyright Weft authors. The AM sizing the RM and the simulator share: what it reads from the
// scheduling core.
#include "adaptcont/am_sizing.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/registry.h"

namespace weft::adaptcont {
namespace {

using ::testing::HasSubstr;

constexpr const char* kQueues = R"(
policy: capacity
queues:
  root:
    children:
      small: {capacity: 25, maximum-capacity: 25}
      big: {capacity: 75, maximum-capacity: 100}
)";

constexpr const char* kWeightedQueues = R"(
policy: fair
queues:
  root:
    children:
      light: {weight: 1}
      heavy: {weight: 3}
)";

std::unique_ptr<scheduler::Scheduler> Cluster(int nodes, Resource each,
                                              const char* queues = kQueues) {
  ResourceTypeRegistry reg;
  auto config = scheduler::ParseSchedulerConfig(queues, reg, "t");
  EXPECT_TRUE(config.ok()) << config.status();
  auto s = scheduler::CreateScheduler(*config, scheduler::SchedulerOptions{reg});
  EXPECT_TRUE(s.ok()) << s.status();
  for (int i = 0; i < nodes; ++i) {
    EXPECT_TRUE((*s)->AddNode({"n" + std::to_string(i), "/r", each}).ok());
  }
  return *std::move(s);
}

AmSizingJob Job(const std::string& queue, int64_t map_tasks) {
  AmSizingJob job;
  job.user = "alice";
  job.queue = queue;
  job.map_tasks = map_tasks;
  job.worker = Resource::Of(1024, 1);
  return job;
}

TEST(AmSizingTest, TheQueueLimitBindsTheHeadroom) {
  auto s = Cluster(4, Resource::Of(8192, 8));  // 32 GB, 32 vcores
  auto small = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("small", 100));
  auto big = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("big", 100));
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(small->input.available_containers, 8);   // 25% of 32 GB in 1 GB containers
  EXPECT_EQ(big->input.available_containers, 32);    // its maximum is the whole cluster
  EXPECT_LE(small->decision.wave_size, big->decision.wave_size);
}

constexpr const char* kAmLimitedQueues = R"(
policy: capacity
queues:
  root:
    children:
      tight: {capacity: 50, maximum-capacity: 50, maximum-am-resource-percent: 0.2}
      tiny: {capacity: 50, maximum-capacity: 50, maximum-am-resource-percent: 0.01}
)";

// The queue's AM limit (its maximum-am-resource-percent of the queue) is a ceiling on the AM,
// as seed 002 has it; where no AM would fit under it, the AM is sized without it, since the
// scheduler starts a queue's first AM whatever its limit.
TEST(AmSizingTest, TheQueuesAmLimitIsACeilingUnlessNoAmFitsUnderIt) {
  auto s = Cluster(64, Resource::Of(8192, 64), kAmLimitedQueues);  // 512 GB, 4096 vcores
  auto tight = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("tight", 5000));
  ASSERT_TRUE(tight.ok()) << tight.status();
  ASSERT_TRUE(tight->input.queue_am_limit.has_value());
  EXPECT_EQ(tight->input.queue_am_limit->memory_mb, 524);  // 0.2% of its 256 GB
  EXPECT_THAT(tight->decision.Explanation(), HasSubstr("ceiling 524 MB (queue AM limit)"));
  EXPECT_LE(tight->decision.AsResource()[kMemoryMb], 524);
  auto tiny = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("tiny", 5000));
  ASSERT_TRUE(tiny.ok()) << tiny.status();
  EXPECT_FALSE(tiny->input.queue_am_limit.has_value());  // 26 MB: no AM fits under it
  EXPECT_THAT(tiny->decision.Explanation(), ::testing::Not(HasSubstr("queue AM limit")));
  EXPECT_GT(tiny->decision.AsResource()[kMemoryMb], tight->decision.AsResource()[kMemoryMb]);
}

TEST(AmSizingTest, WhatTheClusterHasFreeBindsTheHeadroom) {
  auto s = Cluster(1, Resource::Of(8192, 8));
  scheduler::AppSpec hog;
  hog.id = 1;
  hog.queue = "big";
  ASSERT_TRUE(s->AddApp(hog, 0).ok());
  scheduler::RequestUpdate u;
  u.asks.push_back({1, "*", Resource::Of(1024, 1), 6, true, 0});
  ASSERT_TRUE(s->UpdateRequests(1, u).ok());
  s->Schedule(0);
  auto sized = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("big", 100));
  ASSERT_TRUE(sized.ok()) << sized.status();
  EXPECT_EQ(sized->input.available_containers, 2);  // 8 GB less 6 allocated
}

TEST(AmSizingTest, ActiveSiblingQueuesShrinkTheShareByWeight) {
  auto s = Cluster(4, Resource::Of(8192, 8), kWeightedQueues);  // 32 containers
  // Alone, a queue may count on the whole cluster.
  auto alone = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("light", 100));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->input.available_containers, 32);
  scheduler::AppSpec other;
  other.id = 1;
  other.queue = "heavy";
  ASSERT_TRUE(s->AddApp(other, 0).ok());
  // With the heavier sibling active: weight 1 of 4, nothing allocated yet.
  EXPECT_EQ(ActiveQueueShare(*s, *s->FindQueue("light")), Resource::Of(8192, 8));
  auto shared = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("light", 100));
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(shared->input.available_containers, 8);
  // A fair leaf splits its part among its runnable apps and the new one.
  auto heavy = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("heavy", 100));
  ASSERT_TRUE(heavy.ok());
  EXPECT_EQ(heavy->input.available_containers, 16);  // 32 (only heavy active) / 2 apps
}

TEST(AmSizingTest, ACapacityQueueCountsOnItsGuaranteeAtLeast) {
  auto s = Cluster(4, Resource::Of(8192, 8));
  scheduler::AppSpec other;
  other.id = 1;
  other.queue = "small";
  ASSERT_TRUE(s->AddApp(other, 0).ok());
  // big: 75 of the 100 active capacity, and never below its 75% guarantee.
  EXPECT_EQ(ActiveQueueShare(*s, *s->FindQueue("big")), Resource::Of(24576, 24));
  auto big = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("big", 100));
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->input.available_containers, 24);
}

TEST(AmSizingTest, APreviousMemoryFailureGrowsTheNextAttempt) {
  auto s = Cluster(4, Resource::Of(8192, 8));
  AmSizingJob job = Job("big", 50);
  auto first = SizeAmContainer(DefaultAdaptContConfig(), *s, job);
  ASSERT_TRUE(first.ok());
  job.previous_attempt = PreviousAttempt{{first->am[kMemoryMb], first->am[kVcores]}, true};
  auto second = SizeAmContainer(DefaultAdaptContConfig(), *s, job);
  ASSERT_TRUE(second.ok());
  EXPECT_GT(second->am[kMemoryMb], first->am[kMemoryMb]);
}

TEST(AmSizingTest, TheLargestLiveNodeCapsTheAmUnlessTheCallerSaysNodesAreNotSettled) {
  auto s = Cluster(2, Resource::Of(2048, 2));
  ASSERT_EQ(LargestLiveNode(*s), Resource::Of(2048, 2));
  auto capped = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("big", 100));
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ(capped->input.cluster_max_allocation.memory_mb, 2048);
  EXPECT_EQ(capped->input.cluster_max_allocation.vcores, 2);
  EXPECT_LE(capped->am[kMemoryMb], 2048);
  auto uncapped = SizeAmContainer(DefaultAdaptContConfig(), *s, Job("big", 100), false);
  ASSERT_TRUE(uncapped.ok());
  EXPECT_EQ(uncapped->input.cluster_max_allocation.memory_mb,
            s->registry().info(kMemoryMb).maximum);
  ASSERT_TRUE(s->RemoveNode("n0").ok());
  ASSERT_TRUE(s->RemoveNode("n1").ok());
  EXPECT_FALSE(LargestLiveNode(*s).has_value());
}

TEST(AmSizingTest, AnImpossibleDecisionIsAnErrorAndNamesWhy) {
  auto s = Cluster(1, Resource::Of(64, 1));  // no AM fits a 64 MB node
  AdaptContConfig config = DefaultAdaptContConfig();
  auto sized = SizeAmContainer(config, *s, Job("big", 100000));
  ASSERT_FALSE(sized.ok()) << sized->am.DebugString();
  EXPECT_THAT(sized.status().message(), HasSubstr("AM"));
}

}  // namespace
}  // namespace weft::adaptcont
