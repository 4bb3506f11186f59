// Copyright Weft authors. The owner thread of a daemon's state, and its time.
#ifndef WEFT_COMMON_EVENT_LOOP_H_
#define WEFT_COMMON_EVENT_LOOP_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace weft {

using Task = absl::AnyInvocable<void() &&>;
using TimerId = uint64_t;

// Runs tasks one at a time on one logical thread: the only code that touches the state it
// owns. Time comes from the loop (NowMs), never from the system clock directly, so tests
// drive it with ManualEventLoop instead of sleeping.
//
// Post/Schedule/Cancel are thread-safe; tasks run in the order posted, timers in deadline
// order (ties in scheduling order), all on the loop's thread.
class EventLoop {
 public:
  virtual ~EventLoop() = default;
  // Milliseconds since the Unix epoch on this loop's clock.
  virtual int64_t NowMs() const = 0;
  virtual void Post(Task task) = 0;
  // Runs `task` once, `delay_ms` (>= 0) from now. The id is unique for this loop.
  virtual TimerId Schedule(int64_t delay_ms, Task task) = 0;
  // Cancels a timer that has not run yet; false if it already ran or was unknown.
  virtual bool Cancel(TimerId id) = 0;
  // True when called from a task of this loop.
  virtual bool InLoop() const = 0;
};

// Shared bookkeeping of the two implementations: a FIFO of tasks and timers by deadline.
class TaskQueue {
 public:
  void Post(Task task);
  TimerId Schedule(int64_t at_ms, Task task);
  bool Cancel(TimerId id);
  // Removes and returns the next task runnable at `now_ms` (posted first, then due timers);
  // false when there is none.
  bool PopRunnable(int64_t now_ms, Task* out);
  // Moves every posted task, in order, to the end of `out` (timers stay); false when none was
  // posted. ThreadEventLoop runs them as one batch: one lock round trip for many tasks.
  bool TakePosted(std::deque<Task>* out);
  // The earliest timer deadline; INT64_MAX when there is none.
  int64_t NextDeadline() const;
  bool empty() const { return tasks_.empty() && timers_.empty(); }

 private:
  std::multimap<std::pair<int64_t, TimerId>, Task> timers_;
  std::map<TimerId, int64_t> deadlines_;
  std::deque<Task> tasks_;  // FIFO
  TimerId next_id_ = 1;
};

// A real thread and the system clock. Start() launches the thread; Stop() (or the destructor)
// runs what is already posted, then joins. Tasks posted after Stop are dropped.
class ThreadEventLoop final : public EventLoop {
 public:
  ThreadEventLoop() = default;
  ~ThreadEventLoop() override;
  // With `poll` > 0 the thread, out of work, polls for new work (spinning on its core) for up
  // to that long before it sleeps; absl::InfiniteDuration(): it never sleeps, and keeps a core.
  // A sleeping thread's core runs other threads, which leave its caches and TLB cold for the
  // next task; a polling one keeps them, at the price of the core (a server's RM loop may; see
  // docs/performance.md). Zero (the default): it sleeps at once.
  void Start(absl::Duration poll = absl::ZeroDuration());
  void Stop();

  int64_t NowMs() const override;
  void Post(Task task) override;
  TimerId Schedule(int64_t delay_ms, Task task) override;
  bool Cancel(TimerId id) override;
  bool InLoop() const override;

  // Nanoseconds the loop's thread has spent running tasks since Start (steady clock), for
  // its busy fraction; readable from any thread.
  int64_t BusyNanos() const { return busy_ns_.load(std::memory_order_relaxed); }
  // How many times the thread has gone to sleep for want of work since Start; readable from
  // any thread.
  int64_t Sleeps() const { return sleeps_.load(std::memory_order_relaxed); }

 private:
  void Run();
  // Out of work, with the next timer due in `wait_ms` (> 0): spins without mu_ until the timer
  // is due, the poll ends, or a task is posted, a timer scheduled or Stop called (changes_
  // moves). False only when the poll ended first (the caller then sleeps). Called, and
  // returns, with mu_ held.
  bool Poll(int64_t wait_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  absl::CondVar cv_;
  TaskQueue queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::thread::id loop_thread_;
  std::atomic<int64_t> busy_ns_{0};
  std::atomic<int64_t> sleeps_{0};
  absl::Duration poll_ = absl::ZeroDuration();  // set by Start before the thread runs
  // Bumped (under mu_) by every Post, Schedule and Stop, so that a polling thread sees new
  // work without taking mu_.
  std::atomic<uint64_t> changes_{0};
};

// For tests: nothing runs until the test says so, and time moves only when it is advanced.
// Thread-compatible (one test thread; it is the "loop thread").
class ManualEventLoop final : public EventLoop {
 public:
  explicit ManualEventLoop(int64_t start_ms = 1'000'000) : now_ms_(start_ms) {}
  int64_t NowMs() const override { return now_ms_; }
  void Post(Task task) override { queue_.Post(std::move(task)); }
  TimerId Schedule(int64_t delay_ms, Task task) override {
    return queue_.Schedule(now_ms_ + (delay_ms < 0 ? 0 : delay_ms), std::move(task));
  }
  bool Cancel(TimerId id) override { return queue_.Cancel(id); }
  bool InLoop() const override { return true; }

  // Runs every task runnable now, including ones they post. Returns how many ran.
  int RunPending();
  // Moves time forward to `ms`, running timers in deadline order as their time comes.
  int AdvanceTo(int64_t ms);
  int Advance(int64_t delta_ms) { return AdvanceTo(now_ms_ + delta_ms); }

 private:
  int64_t now_ms_;
  TaskQueue queue_;
};

}  // namespace weft

#endif  // WEFT_COMMON_EVENT_LOOP_H_
