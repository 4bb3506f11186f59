// Copyright Weft authors. Where the RM loop's time goes: the loop thread's busy time, and the
// time of each kind of work on it (the on-loop part of each RPC method, and scheduling passes
// with the allocations they made), for `weft bench rm` and the RM's metrics.
#ifndef WEFT_RM_LOOP_WORK_H_
#define WEFT_RM_LOOP_WORK_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/metrics.h"

namespace weft::rm {

// How often one kind of work ran on the loop, and for how long in all (steady clock, ns).
struct LoopWorkTotals {
  int64_t count = 0;
  int64_t nanos = 0;
};

// A copy of the RM loop's accounting at one moment; subtract two for an interval. The work's
// time is the loop thread's CPU time: what the work cost, not counting the moments the thread
// was descheduled while other threads had its core (on a busy host, wall time per event grows
// with everything else running; CPU time does not). busy_nanos is wall time: how much of the
// loop's time work took, whether or not it had a core.
struct LoopStats {
  int64_t busy_nanos = 0;  // the loop thread running tasks, whatever they were (wall time)
  // By kind: an RPC method's name ("NodeHeartbeat", "Allocate", ...) for the part of a call
  // that ran on the loop (its reply included); kPassWork for scheduling passes.
  std::map<std::string, LoopWorkTotals> work;
  int64_t pass_allocations = 0;  // containers the passes counted under kPassWork allocated
  // The loop time of `kind` per event in µs over [earlier, this]; 0 when none ran.
  double MicrosPerEvent(const LoopStats& earlier, const std::string& kind) const;
  // The events of `kind` and their time over [earlier, this].
  LoopWorkTotals Since(const LoopStats& earlier, const std::string& kind) const;
  // Pass loop time shared over the containers those passes allocated, µs; 0 when none.
  double PassMicrosPerAllocation(const LoopStats& earlier) const;
};

inline constexpr char kPassWork[] = "pass";

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns.
int64_t ThreadCpuNanos();

// The accounting itself. Record runs on the loop thread only; Snapshot copies what was
// recorded (call it on the loop too). Each kind also feeds the counters
// weft_rm_loop_seconds_total{work} and weft_rm_loop_work_total{work}.
class LoopWork {
 public:
  explicit LoopWork(metrics::Registry* registry) : registry_(registry) {}
  // One event of `kind` (a string literal: kinds are keyed by address) that began when the
  // loop thread's CPU time was `started_cpu_ns` (ThreadCpuNanos); `allocations` only for
  // passes.
  void Record(const char* kind, int64_t started_cpu_ns, int64_t allocations = 0);
  LoopStats Snapshot(int64_t busy_nanos) const;

 private:
  struct Slot {
    LoopWorkTotals totals;
    metrics::Counter* seconds = nullptr;
    metrics::Counter* events = nullptr;
  };
  metrics::Registry* registry_;
  absl::flat_hash_map<const char*, Slot> slots_;
  int64_t pass_allocations_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_LOOP_WORK_H_
