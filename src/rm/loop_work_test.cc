// Copyright Weft authors. LoopWork: the RM loop's time by kind of work, and its differences.
#include "rm/loop_work.h"

#include <chrono>
#include <thread>

#include "common/metrics.h"
#include "gtest/gtest.h"

namespace weft::rm {
namespace {

// An event that keeps this thread busy for `cpu_ns` of its CPU time, recorded as `kind`.
void BusyEvent(LoopWork& work, const char* kind, int64_t cpu_ns, int64_t allocations = 0) {
  const LoopWork::Start started = work.Begin();
  const int64_t until = ThreadCpuNanos() + cpu_ns;
  while (ThreadCpuNanos() < until) {
  }
  work.Record(kind, started, allocations);
}

// Every event sampled, so each is charged its own CPU time: the lower bounds below hold however
// the host preempts this thread (unsampled events are charged at a ratio measured on others).
TEST(LoopWorkTest, EventsAndTimeByKindAndPassAllocations) {
  metrics::Registry registry;
  LoopWork work(&registry, LoopWork::kWindowNanos, /*sample_every=*/1);
  const LoopStats empty = work.Snapshot(0);
  BusyEvent(work, "TrackerService/NodeHeartbeat", 2'000'000);  // 2 ms of this thread's CPU
  BusyEvent(work, "TrackerService/NodeHeartbeat", 2'000'000);
  BusyEvent(work, kPassWork, 2'000'000, /*allocations=*/4);
  const LoopStats after = work.Snapshot(123);
  EXPECT_EQ(after.busy_nanos, 123);
  ASSERT_EQ(after.work.count("TrackerService/NodeHeartbeat"), 1u);
  EXPECT_EQ(after.work.at("TrackerService/NodeHeartbeat").count, 2);
  EXPECT_GE(after.work.at("TrackerService/NodeHeartbeat").nanos, 4'000'000);
  EXPECT_EQ(after.pass_allocations, 4);
  // Each took at least 2 ms of CPU: >= 2000 µs per event, the pass's shared over 4 containers.
  EXPECT_GE(after.MicrosPerEvent(empty, "TrackerService/NodeHeartbeat"), 2000);
  EXPECT_GE(after.PassMicrosPerAllocation(empty), 500);
  EXPECT_EQ(after.MicrosPerEvent(empty, "AmService/Allocate"), 0);            // none ran
  EXPECT_EQ(after.MicrosPerEvent(after, "TrackerService/NodeHeartbeat"), 0);  // no interval
  EXPECT_EQ(after.PassMicrosPerAllocation(after), 0);
  // The thread's own CPU time covers the three events; the kinds together were charged 6 ms.
  EXPECT_GE(after.cpu_nanos - empty.cpu_nanos, 6'000'000);
  EXPECT_GE(after.ChargedNanosSince(empty), 6'000'000);
  EXPECT_LE(after.ChargedNanosSince(empty), after.cpu_nanos - empty.cpu_nanos);
  EXPECT_EQ(after.ChargedNanosSince(after), 0);
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
  work.Record(kA, work.Begin());
  work.Record(kB, work.Begin());
  EXPECT_EQ(work.Snapshot(0).work.at("AmService/Allocate").count, 2);
}

// An event's time is the thread's CPU time, not its wall time: 50 ms without the CPU (here
// asleep; on a busy host, descheduled) are not charged, 2 ms busy are. Windows of 1 ms, so each
// event closes its own, and every event sampled.
TEST(LoopWorkTest, TimeWithoutTheCpuIsNotCharged) {
  metrics::Registry registry;
  LoopWork work(&registry, /*window_ns=*/1'000'000, /*sample_every=*/1);
  const LoopStats before = work.Snapshot(0);
  const LoopWork::Start started = work.Begin();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  work.Record("AmService/Allocate", started);
  BusyEvent(work, "TrackerService/NodeHeartbeat", 2'000'000);
  const LoopStats after = work.Snapshot(0);
  EXPECT_LT(after.MicrosPerEvent(before, "AmService/Allocate"), 10'000);  // not the 50 ms
  EXPECT_GE(after.MicrosPerEvent(before, "TrackerService/NodeHeartbeat"), 2'000);
  EXPECT_LE(after.MicrosPerEvent(before, "TrackerService/NodeHeartbeat"),
            static_cast<double>(LoopWork::Now() - started.wall_ns) / 1000);  // <= its wall time
}

// Events not sampled are charged at the sampled ones' ratio of CPU to wall time in their
// window: sampling every second event, a sampled 40 ms sleep (ratio ~0) makes the busy
// unsampled event after it, in the same window, cost ~0 too. The ratio is the thread's, shared
// by the events around it, not each event's own.
TEST(LoopWorkTest, UnsampledEventsTakeTheirWindowsRatio) {
  metrics::Registry registry;
  LoopWork work(&registry, /*window_ns=*/30'000'000, /*sample_every=*/2);
  const LoopStats before = work.Snapshot(0);
  LoopWork::Start sleep = work.Begin();  // sampled
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  work.Record("sleep", sleep);
  BusyEvent(work, "busy", 2'000'000);  // not sampled; this Record closes the window
  const LoopStats after = work.Snapshot(0);
  EXPECT_LT(after.MicrosPerEvent(before, "busy"), 1'000);
  EXPECT_LT(after.MicrosPerEvent(before, "sleep"), 10'000);
}

// An event begun with kOwnCpu is charged its own CPU time, whatever the window's scale, and
// does not move that scale. Here the short busy events around it set a scale of ~1; a pass
// that is 2 ms busy and 40 ms without its core (asleep here) is charged ~2 ms, not its 42 ms
// of wall time at the window's scale. And it does not lower the scale of the unsampled busy
// event in its window (sample_every 2: the first busy event is sampled, the second is not).
TEST(LoopWorkTest, AnOwnCpuEventIsChargedItsOwnCpuTime) {
  metrics::Registry registry;
  LoopWork work(&registry, /*window_ns=*/1'000'000'000, /*sample_every=*/2);
  const LoopStats before = work.Snapshot(0);
  BusyEvent(work, "TrackerService/NodeHeartbeat", 2'000'000);  // sampled: scale ~1
  const LoopWork::Start pass = work.Begin(LoopWork::kOwnCpu);
  EXPECT_TRUE(pass.own_cpu);
  EXPECT_GE(pass.cpu_ns, 0);
  const int64_t until = ThreadCpuNanos() + 2'000'000;
  while (ThreadCpuNanos() < until) {
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  work.Record(kPassWork, pass, /*allocations=*/2);
  BusyEvent(work, "TrackerService/NodeHeartbeat", 2'000'000);  // not sampled
  const LoopStats after = work.Snapshot(0);
  EXPECT_GE(after.MicrosPerEvent(before, kPassWork), 2'000);
  EXPECT_LT(after.MicrosPerEvent(before, kPassWork), 20'000);  // not the ~42 ms span
  EXPECT_GE(after.PassMicrosPerAllocation(before), 1'000);
  // Both heartbeats charged ~2 ms: the pass's ratio (~0.05) was not the window's.
  EXPECT_GE(after.MicrosPerEvent(before, "TrackerService/NodeHeartbeat"), 1'500);
}

}  // namespace
}  // namespace weft::rm
