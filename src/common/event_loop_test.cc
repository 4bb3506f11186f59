#include "common/event_loop.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/test_poll.h"
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
// posted, from any thread, with a task posted by a running task after those already waiting.
// A due timer runs between two batches (where, depends on how the posts were batched).
TEST(ThreadEventLoopTest, BatchesKeepThePostedOrder) {
  ThreadEventLoop loop;
  absl::Notification release;
  std::vector<int> order;  // written on the loop only
  loop.Start();
  loop.Post([&] { release.WaitForNotification(); });  // holds the loop while the rest queue
  loop.Schedule(0, [&] { order.push_back(-1); });    // due at once
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
  std::vector<int> posted;
  for (int v : order)
    if (v != -1) posted.push_back(v);
  ASSERT_EQ(posted.size(), 51u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(posted[static_cast<size_t>(i)], i);
  EXPECT_EQ(posted[50], 1000);
  EXPECT_EQ(std::count(order.begin(), order.end(), -1), 1);
}

// A steady stream of posted tasks (each posting the next, as RPCs under load keep arriving)
// must not starve a timer: it runs between two batches, long before the stream ends.
TEST(ThreadEventLoopTest, AFloodOfPostedTasksDoesNotStarveTimers) {
  ThreadEventLoop loop;
  loop.Start();
  std::atomic<bool> timer_ran{false};
  std::atomic<int> posted_after_timer{0};
  std::function<void(int)> flood = [&](int left) {
    if (timer_ran) ++posted_after_timer;
    if (left > 0) loop.Post([&flood, left] { flood(left - 1); });
  };
  loop.Post([&] {
    loop.Schedule(0, [&] { timer_ran = true; });
    flood(200000);
  });
  for (int i = 0; i < 1000 && !timer_ran; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  loop.Stop();
  EXPECT_TRUE(timer_ran);
  EXPECT_GT(posted_after_timer.load(), 0) << "the timer waited for the whole flood";
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

// Out of work, a loop started without polling sleeps (and Sleeps counts it).
TEST(ThreadEventLoopTest, WithoutPollingALoopOutOfWorkSleeps) {
  ThreadEventLoop loop;
  loop.Start();
  absl::Notification ran;
  loop.Post([&] { ran.Notify(); });
  ASSERT_TRUE(ran.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(PollUntil([&] { return loop.Sleeps() >= 1; }, absl::Seconds(10)));
  loop.Stop();
}

// A loop that polls for ever never sleeps: it sees posted tasks and due timers by spinning,
// and Stop still ends it. A poll of a day or more counts as for ever.
TEST(ThreadEventLoopTest, ALoopPollingForEverNeverSleeps) {
  for (absl::Duration poll : {absl::InfiniteDuration(), absl::Hours(100'000)}) {
    ThreadEventLoop loop;
    loop.Start(poll);
    std::atomic<int> ran{0};
    absl::Notification timed;
    loop.Schedule(30, [&] { timed.Notify(); });
    for (int i = 0; i < 20; ++i) {
      loop.Post([&] { ++ran; });
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(timed.WaitForNotificationWithTimeout(absl::Seconds(10))) << poll;
    EXPECT_TRUE(PollUntil([&] { return ran.load() == 20; }, absl::Seconds(10))) << poll;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // out of work, no timer
    EXPECT_EQ(loop.Sleeps(), 0) << poll;
    loop.Stop();
    EXPECT_EQ(loop.Sleeps(), 0) << poll;
  }
}

// A bounded poll ends in a sleep once nothing arrives, and the loop still wakes for work
// posted and timers scheduled afterwards.
TEST(ThreadEventLoopTest, ABoundedPollEndsInSleep) {
  ThreadEventLoop loop;
  loop.Start(absl::Milliseconds(5));
  EXPECT_TRUE(PollUntil([&] { return loop.Sleeps() >= 1; }, absl::Seconds(10)));
  absl::Notification posted, timed;
  loop.Post([&] { posted.Notify(); });
  loop.Schedule(10, [&] { timed.Notify(); });
  EXPECT_TRUE(posted.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(timed.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const int64_t after = loop.Sleeps();
  EXPECT_TRUE(PollUntil([&] { return loop.Sleeps() > after; }, absl::Seconds(10)));
  loop.Stop();
}

}  // namespace
}  // namespace weft
