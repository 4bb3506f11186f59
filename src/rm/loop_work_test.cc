// Copyright Weft authors. LoopWork: the RM loop's time by kind of work, and its differences.
#include "rm/loop_work.h"

#include <chrono>

#include "common/metrics.h"
#include "gtest/gtest.h"

namespace weft::rm {
namespace {

TEST(LoopWorkTest, EventsAndTimeByKindAndPassAllocations) {
  metrics::Registry registry;
  LoopWork work(&registry);
  const LoopStats empty = work.Snapshot(0);
  const int64_t long_ago = ThreadCpuNanos() - 2'000'000;  // 2 ms of this thread's CPU ago
  work.Record("TrackerService/NodeHeartbeat", long_ago);
  work.Record("TrackerService/NodeHeartbeat", long_ago);
  work.Record(kPassWork, long_ago, /*allocations=*/4);
  const LoopStats after = work.Snapshot(123);
  EXPECT_EQ(after.busy_nanos, 123);
  ASSERT_EQ(after.work.count("TrackerService/NodeHeartbeat"), 1u);
  EXPECT_EQ(after.work.at("TrackerService/NodeHeartbeat").count, 2);
  EXPECT_GE(after.work.at("TrackerService/NodeHeartbeat").nanos, 4'000'000);
  EXPECT_EQ(after.pass_allocations, 4);
  // Each began at least 2 ms of CPU ago: >= 2000 µs per event, the pass's shared over 4 containers.
  EXPECT_GE(after.MicrosPerEvent(empty, "TrackerService/NodeHeartbeat"), 2000);
  EXPECT_GE(after.PassMicrosPerAllocation(empty), 500);
  EXPECT_EQ(after.MicrosPerEvent(empty, "AmService/Allocate"), 0);            // none ran
  EXPECT_EQ(after.MicrosPerEvent(after, "TrackerService/NodeHeartbeat"), 0);  // no interval
  EXPECT_EQ(after.PassMicrosPerAllocation(after), 0);
  // The counters carry the same figures for Prometheus.
  const std::string text = registry.Render();
  EXPECT_NE(text.find("weft_rm_loop_work_total{work=\"TrackerService/NodeHeartbeat\"} 2"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("weft_rm_loop_seconds_total{work=\"pass\"}"), std::string::npos) << text;
}

// Two literals with the same text (two addresses) are one kind in a snapshot.
TEST(LoopWorkTest, SameNameFromTwoLiteralsAddsUp) {
  metrics::Registry registry;
  LoopWork work(&registry);
  static const char kA[] = "AmService/Allocate";
  static const char kB[] = "AmService/Allocate";
  work.Record(kA, ThreadCpuNanos());
  work.Record(kB, ThreadCpuNanos());
  EXPECT_EQ(work.Snapshot(0).work.at("AmService/Allocate").count, 2);
}

}  // namespace
}  // namespace weft::rm
