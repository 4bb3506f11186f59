#include "common/event_loop.h"

#include <algorithm>
#include <chrono>
#include <climits>

namespace weft {

void TaskQueue::Post(Task task) { tasks_.push_back(std::move(task)); }

bool TaskQueue::TakePosted(std::deque<Task>* out) {
  if (tasks_.empty()) return false;
  if (out->empty()) {
    out->swap(tasks_);
  } else {
    for (Task& t : tasks_) out->push_back(std::move(t));
    tasks_.clear();
  }
  return true;
}

TimerId TaskQueue::Schedule(int64_t at_ms, Task task) {
  TimerId id = next_id_++;
  timers_.emplace(std::make_pair(at_ms, id), std::move(task));
  deadlines_[id] = at_ms;
  return id;
}

bool TaskQueue::Cancel(TimerId id) {
  auto it = deadlines_.find(id);
  if (it == deadlines_.end()) return false;
  timers_.erase(std::make_pair(it->second, id));
  deadlines_.erase(it);
  return true;
}

bool TaskQueue::PopRunnable(int64_t now_ms, Task* out) {
  if (!tasks_.empty()) {
    *out = std::move(tasks_.front());
    tasks_.pop_front();
    return true;
  }
  if (!timers_.empty() && timers_.begin()->first.first <= now_ms) {
    auto it = timers_.begin();
    deadlines_.erase(it->first.second);
    *out = std::move(it->second);
    timers_.erase(it);
    return true;
  }
  return false;
}

int64_t TaskQueue::NextDeadline() const {
  return timers_.empty() ? INT64_MAX : timers_.begin()->first.first;
}

ThreadEventLoop::~ThreadEventLoop() { Stop(); }

void ThreadEventLoop::Start(absl::Duration poll) {
  absl::MutexLock l(&mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  // A poll of a day or more is for ever (a steady-clock deadline that far out could overflow).
  poll_ = poll >= absl::Hours(24) ? absl::InfiniteDuration() : std::max(poll, absl::ZeroDuration());
  thread_ = std::thread([this] { Run(); });
  loop_thread_ = thread_.get_id();
}

void ThreadEventLoop::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (!thread_.joinable()) return;
    stopping_ = true;
    changes_.fetch_add(1, std::memory_order_release);
    cv_.Signal();
  }
  thread_.join();
}

int64_t ThreadEventLoop::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void ThreadEventLoop::Post(Task task) {
  absl::MutexLock l(&mu_);
  queue_.Post(std::move(task));
  changes_.fetch_add(1, std::memory_order_release);
  cv_.Signal();
}

TimerId ThreadEventLoop::Schedule(int64_t delay_ms, Task task) {
  int64_t at = NowMs() + (delay_ms < 0 ? 0 : delay_ms);
  absl::MutexLock l(&mu_);
  changes_.fetch_add(1, std::memory_order_release);
  cv_.Signal();
  return queue_.Schedule(at, std::move(task));
}

bool ThreadEventLoop::Cancel(TimerId id) {
  absl::MutexLock l(&mu_);
  return queue_.Cancel(id);
}

bool ThreadEventLoop::InLoop() const { return std::this_thread::get_id() == loop_thread_; }

void ThreadEventLoop::Run() {
  using Steady = std::chrono::steady_clock;
  auto account = [this](Steady::time_point started) {
    busy_ns_.fetch_add(
        std::chrono::duration_cast<std::chrono::nanoseconds>(Steady::now() - started).count(),
        std::memory_order_relaxed);
  };
  std::deque<Task> batch;  // posted tasks taken out of the queue, in the order posted
  mu_.Lock();
  while (true) {
    // Everything posted so far (after any tasks set aside below) runs as one batch, in order:
    // one lock round trip for a burst of RPCs, not one each.
    queue_.TakePosted(&batch);
    if (!batch.empty()) {
      mu_.Unlock();
      const Steady::time_point started = Steady::now();
      while (!batch.empty()) {
        Task task = std::move(batch.front());
        batch.pop_front();
        std::move(task)();
      }  // each task's captures are destroyed outside the lock too
      account(started);
      mu_.Lock();
    }
    // Then one due timer, before the tasks posted meanwhile, which are set aside (in order)
    // for the next batch: timers and posted tasks take turns, so neither a steady stream of
    // RPCs nor a timer that keeps re-arming itself at 0 ms starves the other.
    queue_.TakePosted(&batch);
    Task task;
    const int64_t now = NowMs();
    bool ran_timer = false;
    if (queue_.PopRunnable(now, &task)) {  // nothing posted is queued here: a timer
      mu_.Unlock();
      const Steady::time_point started = Steady::now();
      std::move(task)();
      task = nullptr;  // destroy captures outside the lock too
      account(started);
      mu_.Lock();
      ran_timer = true;
    }
    if (ran_timer || !batch.empty()) continue;
    if (stopping_) break;
    const int64_t next = queue_.NextDeadline();
    // Until the next timer as of `at_ms` (a second when there is none: a re-check, not a need).
    auto wait_from = [next](int64_t at_ms) {
      return next == INT64_MAX ? int64_t{1000} : std::max<int64_t>(0, next - at_ms);
    };
    int64_t wait_ms = wait_from(now);
    if (poll_ > absl::ZeroDuration() && wait_ms > 0) {
      if (Poll(wait_ms)) continue;
      wait_ms = wait_from(NowMs());  // the poll took some of it
    }
    sleeps_.fetch_add(1, std::memory_order_relaxed);
    cv_.WaitWithTimeout(&mu_, absl::Milliseconds(wait_ms));
  }
  mu_.Unlock();
}

namespace {

// A spin-wait hint: lets the core's sibling thread run and saves power while polling.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace

bool ThreadEventLoop::Poll(int64_t wait_ms) {
  using Steady = std::chrono::steady_clock;
  const uint64_t seen = changes_.load(std::memory_order_acquire);
  const Steady::time_point start = Steady::now();
  const Steady::time_point timer_due = start + std::chrono::milliseconds(wait_ms);
  const Steady::time_point poll_end = poll_ == absl::InfiniteDuration()
                                          ? Steady::time_point::max()
                                          : start + absl::ToChronoNanoseconds(poll_);
  mu_.Unlock();
  bool work = true;
  for (uint32_t spin = 0;; ++spin) {
    if (changes_.load(std::memory_order_acquire) != seen) break;
    if (spin % 64 == 0) {  // the steady clock (vDSO, ~30 ns) every 64 pauses
      const Steady::time_point now = Steady::now();
      if (now >= timer_due) break;
      if (now >= poll_end) {
        work = false;
        break;
      }
    }
    CpuRelax();
  }
  mu_.Lock();
  return work;
}

int ManualEventLoop::RunPending() {
  int n = 0;
  Task task;
  while (queue_.PopRunnable(now_ms_, &task)) {
    std::move(task)();
    ++n;
  }
  return n;
}

int ManualEventLoop::AdvanceTo(int64_t ms) {
  int n = RunPending();
  while (queue_.NextDeadline() <= ms) {
    now_ms_ = std::max(now_ms_, queue_.NextDeadline());
    n += RunPending();
  }
  now_ms_ = std::max(now_ms_, ms);
  return n + RunPending();
}

}  // namespace weft
