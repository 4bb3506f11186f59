// Copyright Weft authors.
#include "nm/exit_watcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

// A child that sleeps until killed; the test reaps it.
pid_t SpawnSleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

struct Wakeups {
  absl::Mutex mu;
  int count ABSL_GUARDED_BY(mu) = 0;
  void Add() {
    absl::MutexLock lock(&mu);
    ++count;
  }
  // Waits (bounded) until at least `n` wake-ups have run.
  bool AwaitAtLeast(int n) {
    absl::MutexLock lock(&mu);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return count >= n; };
    return mu.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(30));
  }
  int Get() {
    absl::MutexLock lock(&mu);
    return count;
  }
};

TEST(ExitWatcherTest, WakesWhenAWatchedProcessEndsAndNotBefore) {
  Wakeups wakeups;
  auto watcher = ExitWatcher::Start([&] { wakeups.Add(); });
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  pid_t a = SpawnSleeper();
  pid_t b = SpawnSleeper();
  ASSERT_TRUE((*watcher)->Watch(a).ok());
  ASSERT_TRUE((*watcher)->Watch(b).ok());
  EXPECT_EQ((*watcher)->watched(), 2u);
  EXPECT_EQ(wakeups.Get(), 0);  // both alive: nothing to hear

  kill(a, SIGKILL);
  ASSERT_TRUE(wakeups.AwaitAtLeast(1));
  // The ended one left the set (its zombie is still unreaped: the watcher does not wait).
  EXPECT_EQ((*watcher)->watched(), 1u);
  int status = 0;
  ASSERT_EQ(waitpid(a, &status, 0), a);
  EXPECT_TRUE(WIFSIGNALED(status));

  kill(b, SIGKILL);
  ASSERT_TRUE(wakeups.AwaitAtLeast(2));
  EXPECT_EQ((*watcher)->watched(), 0u);
  ASSERT_EQ(waitpid(b, &status, 0), b);
}

TEST(ExitWatcherTest, AZombieWakesAtOnceAndAReapedPidIsNotFound) {
  Wakeups wakeups;
  auto watcher = ExitWatcher::Start([&] { wakeups.Add(); });
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  pid_t zombie = SpawnSleeper();
  kill(zombie, SIGKILL);
  // Until reaped it can still be watched, and it has ended already.
  siginfo_t info{};
  ASSERT_EQ(waitid(P_PID, zombie, &info, WEXITED | WNOWAIT), 0);
  ASSERT_TRUE((*watcher)->Watch(zombie).ok());
  ASSERT_TRUE(wakeups.AwaitAtLeast(1));
  int status = 0;
  ASSERT_EQ(waitpid(zombie, &status, 0), zombie);
  absl::Status gone = (*watcher)->Watch(zombie);
  EXPECT_TRUE(absl::IsNotFound(gone)) << gone;
}

TEST(ExitWatcherTest, DestroyingWithWatchedProcessesStopsWithoutWaking) {
  std::atomic<int> wakeups{0};
  pid_t alive = SpawnSleeper();
  {
    auto watcher = ExitWatcher::Start([&] { ++wakeups; });
    ASSERT_TRUE(watcher.ok()) << watcher.status();
    ASSERT_TRUE((*watcher)->Watch(alive).ok());
  }
  kill(alive, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(alive, &status, 0), alive);
  EXPECT_EQ(wakeups.load(), 0);
}

}  // namespace
}  // namespace weft::nm
