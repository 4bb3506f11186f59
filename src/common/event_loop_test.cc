#include "common/event_loop.h"

#include <atomic>
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

}  // namespace
}  // namespace weft
