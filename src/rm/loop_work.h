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
// with everything else running; CPU time does not). LoopWork measures it as described there.
// busy_nanos is wall time: how much of the loop's time work took, whether or not it had a core.
struct LoopStats {
  int64_t busy_nanos = 0;  // the loop thread running tasks, whatever they were (wall time)
  // The loop thread's own CPU time when copied (CLOCK_THREAD_CPUTIME_ID, exact): every event,
  // the work between them and each wake-up. The kinds below share part of it by sampling.
  int64_t cpu_nanos = 0;
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
  // The time charged to all kinds together over [earlier, this], ns.
  int64_t ChargedNanosSince(const LoopStats& earlier) const;
};

inline constexpr char kPassWork[] = "pass";

// The calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID), ns. A system call: about 1.3 µs on
// a paravirtualised VM, against ~30 ns for the steady clock's vDSO read.
int64_t ThreadCpuNanos();

// The accounting itself. Begin and Record run on the loop thread only; Snapshot copies what
// was recorded (call it on the loop too). Each kind also feeds the counters
// weft_rm_loop_seconds_total{work} and weft_rm_loop_work_total{work}.
//
// How an event's CPU time is measured without two CPU-clock system calls per event (they were
// 3% of the RM's CPU at 10,000 heartbeats/s): every event is timed on the steady clock, and one
// in `sample_every` also on the thread's CPU clock. The events recorded in a window of at least
// `window_ns` are charged their wall time scaled by the sampled events' CPU time over their
// wall time in that window (at most 1; the last window's scale when none was sampled). An event
// that lost its core for half its time is charged half of it, as CPU time would; and only the
// events' own spans are compared, not the thread's wake-ups between them.
class LoopWork {
 public:
  static constexpr int64_t kWindowNanos = 10'000'000;  // 10 ms
  static constexpr int64_t kSampleEvery = 8;

  // When an event began: the steady clock, and the thread's CPU clock when sampled (else -1);
  // own_cpu for an event begun with kOwnCpu.
  struct Start {
    int64_t wall_ns = 0;
    int64_t cpu_ns = -1;
    bool own_cpu = false;
  };
  // Begin's argument for an event always charged its own CPU time (see above).
  static constexpr bool kOwnCpu = true;

  explicit LoopWork(metrics::Registry* registry, int64_t window_ns = kWindowNanos,
                    int64_t sample_every = kSampleEvery);
  // The steady clock, ns.
  static int64_t Now();
  // Marks the start of an event, to Record when it ends; with kOwnCpu, always sampled.
  Start Begin(bool own_cpu = false);
  // One event of `kind` (a string literal: kinds are keyed by address) begun at `started`;
  // `allocations` only for passes.
  void Record(const char* kind, Start started, int64_t allocations = 0);
  // Charges the window so far (see above), then copies the totals and the calling (loop)
  // thread's CPU time.
  LoopStats Snapshot(int64_t busy_nanos);

 private:
  struct Slot {
    LoopWorkTotals totals;
    int64_t window_wall_ns = 0;  // this kind's unsampled events' wall time in this window
    metrics::Counter* seconds = nullptr;
    metrics::Counter* events = nullptr;
  };
  // Charges the current window's events (scaled as above) and starts the next at `now_ns`.
  void CloseWindow(int64_t now_ns);

  metrics::Registry* registry_;
  const int64_t window_ns_;
  const int64_t sample_every_;
  absl::flat_hash_map<const char*, Slot> slots_;
  int64_t pass_allocations_ = 0;
  int64_t begun_ = 0;             // events begun, for sampling
  int64_t window_start_ns_ = -1;  // steady clock; -1 until the first Record
  int64_t sampled_wall_ns_ = 0;   // the sampled events' wall and CPU time in the window
  int64_t sampled_cpu_ns_ = 0;
  double scale_ = 1.0;  // the last window's CPU / wall
};

}  // namespace weft::rm

#endif  // WEFT_RM_LOOP_WORK_H_
