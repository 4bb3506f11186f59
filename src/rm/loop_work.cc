#include "rm/loop_work.h"

#include <time.h>

#include <algorithm>

namespace weft::rm {

LoopWorkTotals LoopStats::Since(const LoopStats& earlier, const std::string& kind) const {
  LoopWorkTotals d;
  if (auto now = work.find(kind); now != work.end()) d = now->second;
  if (auto before = earlier.work.find(kind); before != earlier.work.end()) {
    d.count -= before->second.count;
    d.nanos -= before->second.nanos;
  }
  return d;
}

double LoopStats::MicrosPerEvent(const LoopStats& earlier, const std::string& kind) const {
  const LoopWorkTotals d = Since(earlier, kind);
  if (d.count <= 0) return 0;
  return static_cast<double>(d.nanos) / 1000.0 / static_cast<double>(d.count);
}

double LoopStats::PassMicrosPerAllocation(const LoopStats& earlier) const {
  const int64_t n = pass_allocations - earlier.pass_allocations;
  if (n <= 0 || !work.contains(kPassWork)) return 0;
  return static_cast<double>(Since(earlier, kPassWork).nanos) / 1000.0 / static_cast<double>(n);
}

int64_t LoopStats::ChargedNanosSince(const LoopStats& earlier) const {
  int64_t ns = 0;
  for (const auto& [kind, totals] : work) ns += Since(earlier, kind).nanos;
  return ns;
}

int64_t ThreadCpuNanos() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

LoopWork::LoopWork(metrics::Registry* registry, int64_t window_ns, int64_t sample_every)
    : registry_(registry),
      window_ns_(window_ns),
      sample_every_(std::max<int64_t>(1, sample_every)) {}

int64_t LoopWork::Now() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
}

LoopWork::Start LoopWork::Begin(bool own_cpu) {
  Start s;
  s.own_cpu = own_cpu;
  if (own_cpu || begun_++ % sample_every_ == 0) s.cpu_ns = ThreadCpuNanos();
  s.wall_ns = Now();
  return s;
}

void LoopWork::Record(const char* kind, Start started, int64_t allocations) {
  const int64_t now = Now();
  const int64_t ns = std::max<int64_t>(0, now - started.wall_ns);
  int64_t cpu_ns = -1;  // this event's own CPU time when sampled
  if (started.cpu_ns >= 0) {
    cpu_ns = std::clamp<int64_t>(ThreadCpuNanos() - started.cpu_ns, 0, ns);
    if (!started.own_cpu) {
      sampled_wall_ns_ += ns;
      sampled_cpu_ns_ += cpu_ns;
    }
  }
  if (window_start_ns_ < 0) window_start_ns_ = started.wall_ns;
  Slot& slot = slots_[kind];
  if (slot.seconds == nullptr) {
    slot.seconds = registry_->GetCounter(
        "weft_rm_loop_seconds_total",
        "CPU time the RM loop thread spent on each kind of work (an RPC method's on-loop "
        "part, or scheduling passes), seconds.",
        {{"work", kind}});
    slot.events =
        registry_->GetCounter("weft_rm_loop_work_total",
                              "Events of each kind of work the RM loop ran.", {{"work", kind}});
  }
  ++slot.totals.count;
  if (cpu_ns >= 0) {
    slot.totals.nanos += cpu_ns;
    slot.seconds->Increment(static_cast<double>(cpu_ns) / 1e9);
  } else {
    slot.window_wall_ns += ns;
  }
  slot.events->Increment();
  pass_allocations_ += allocations;
  if (now - window_start_ns_ >= window_ns_) CloseWindow(now);
}

void LoopWork::CloseWindow(int64_t now_ns) {
  if (sampled_wall_ns_ > 0)
    scale_ =
        std::min(1.0, static_cast<double>(sampled_cpu_ns_) / static_cast<double>(sampled_wall_ns_));
  for (auto& [kind, slot] : slots_) {
    if (slot.window_wall_ns == 0) continue;
    const auto charged = static_cast<int64_t>(static_cast<double>(slot.window_wall_ns) * scale_);
    slot.totals.nanos += charged;
    slot.seconds->Increment(static_cast<double>(charged) / 1e9);
    slot.window_wall_ns = 0;
  }
  sampled_wall_ns_ = sampled_cpu_ns_ = 0;
  window_start_ns_ = now_ns;
}

LoopStats LoopWork::Snapshot(int64_t busy_nanos) {
  CloseWindow(Now());
  LoopStats s;
  s.busy_nanos = busy_nanos;
  s.cpu_nanos = ThreadCpuNanos();
  // The same name may come from two literals (two addresses): their totals add up.
  for (const auto& [kind, slot] : slots_) {
    LoopWorkTotals& t = s.work[kind];
    t.count += slot.totals.count;
    t.nanos += slot.totals.nanos;
  }
  s.pass_allocations = pass_allocations_;
  return s;
}

}  // namespace weft::rm
