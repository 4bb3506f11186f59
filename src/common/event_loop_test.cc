#include "common/event_loop.h"

#include <atomic>
#include <chrono>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(ManualEventLoopTest, TasksInOrderTimersByDeadlineAndCancel) {
  ManualEventLoop loop(1000);
  std::vector<int> order;
  loop.Schedule(50, [&] { order.push_back(3); });
  TimerId cancelled = loop.Schedule(20, [&] { order.push_back(99); });
  loop.Schedule(10, [&] { order.push_back(2); });
  loop.Post([&] {
    order.push_back(1);
    loop.Post([&] { order.push_back(11); });  // posted from a task: runs in the same drain
  });
  EXPECT_TRUE(loop.Cancel(cancelled));
  EXPECT_FALSE(loop.Cancel(cancelled));
  EXPECT_EQ(loop.RunPending(), 2);
  EXPECT_EQ(order, (std::vector<int>{1, 11}));
  loop.Advance(10);
  EXPECT_EQ(loop.NowMs(), 1010);
  EXPECT_EQ(order, (std::vector<int>{1, 11, 2}));
  loop.Advance(100);
  EXPECT_EQ(order, (std::vector<int>{1, 11, 2, 3}));
  EXPECT_EQ(loop.NowMs(), 1110);
}

TEST(ManualEventLoopTest, TimerSeesItsOwnDeadlineAsNow) {
  ManualEventLoop loop(0);
  int64_t seen = -1;
  loop.Schedule(30, [&] {
    seen = loop.NowMs();
    loop.Schedule(5, [&] { seen = loop.NowMs(); });
  });
  loop.AdvanceTo(100);
  EXPECT_EQ(seen, 35);  // the nested timer fired at 30 + 5, inside the same advance
}

TEST(ThreadEventLoopTest, RunsPostedTasksAndTimersOnItsThread) {
  ThreadEventLoop loop;
  loop.Start();
  absl::Notification posted, timed;
  std::atomic<bool> in_loop{false};
  loop.Post([&] {
    in_loop = loop.InLoop();
    posted.Notify();
  });
  loop.Schedule(20, [&] { timed.Notify(); });
  EXPECT_TRUE(posted.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(timed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(in_loop);
  EXPECT_FALSE(loop.InLoop());
  loop.Stop();
}

TEST(ThreadEventLoopTest, StopRunsWhatIsPostedThenJoins) {
  ThreadEventLoop loop;
  loop.Start();
  std::atomic<int> ran{0};
  for (int i = 0; i < 100; ++i) loop.Post([&] { ++ran; });
  loop.Stop();
  EXPECT_EQ(ran.load(), 100);
}

// Posted tasks run as batches (ThreadEventLoop::Run): the order must still be the order
// posted, from any thread, a task posted by a running task after those already waiting, and a
// due timer after the posted tasks waiting with it.
TEST(ThreadEventLoopTest, BatchesKeepThePostedOrder) {
  ThreadEventLoop loop;
  absl::Notification release;
  std::vector<int> order;  // written on the loop only
  loop.Start();
  loop.Post([&] { release.WaitForNotification(); });  // holds the loop while the rest queue
  loop.Schedule(0, [&] { order.push_back(-1); });    // due at once, but after posted tasks
  for (int i = 0; i < 50; ++i) {
    loop.Post([&, i] {
      order.push_back(i);
      if (i == 0) loop.Post([&] { order.push_back(1000); });  // after the 49 waiting
    });
  }
  release.Notify();
  absl::Notification done;
  loop.Schedule(30, [&] { done.Notify(); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  loop.Stop();
  ASSERT_EQ(order.size(), 52u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
  EXPECT_EQ(order[50], 1000);
  EXPECT_EQ(order[51], -1);
}

TEST(ThreadEventLoopTest, BusyNanosCountsTimeSpentInTasks) {
  ThreadEventLoop loop;
  loop.Start();
  EXPECT_EQ(loop.BusyNanos(), 0);
  absl::Notification done;
  loop.Post([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    done.Notify();
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  loop.Stop();  // the batch's time is added once the batch has run
  EXPECT_GE(loop.BusyNanos(), 20'000'000);
}

}  // namespace
}  // namespace weft
