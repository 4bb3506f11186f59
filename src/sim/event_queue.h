// Copyright Weft authors. The simulator's event kernel: typed events on a simulated clock.
#ifndef WEFT_SIM_EVENT_QUEUE_H_
#define WEFT_SIM_EVENT_QUEUE_H_

#include <cstdint>
#include <queue>
#include <variant>
#include <vector>

#include "scheduler/types.h"

namespace weft::sim {

// A task container's work is done (under the contention model only if `version` is still the
// task's current schedule version; a reschedule bumps it and queues a new event).
struct TaskFinishEvent {
  scheduler::ContainerId container = 0;
  uint64_t version = 0;
};
// Failure injection number `index` (SimOptions::failures) strikes.
struct FailureEvent {
  size_t index = 0;
};
// Job `job` (an index into the workload) is submitted.
struct SubmitEvent {
  int64_t job = 0;
};
// The AM of `job`'s attempt `attempt` has started and sends its first asks.
struct AmReadyEvent {
  int64_t job = 0;
  int32_t attempt = 0;
};
// A scheduling pass (the NM heartbeat tick).
struct PassEvent {};
// A row of the time series.
struct SampleEvent {};

// At the same instant, events run in the order of these alternatives (a finished task frees
// its container before the pass that reuses it), then in the order they were queued.
using SimEvent =
    std::variant<TaskFinishEvent, FailureEvent, SubmitEvent, AmReadyEvent, PassEvent, SampleEvent>;

struct TimedEvent {
  int64_t time_ms = 0;
  uint64_t seq = 0;  // queue order
  SimEvent event;
};

// A min-queue of events by (time, kind, queue order): deterministic for the same pushes.
// Thread-compatible.
class EventQueue {
 public:
  void Push(int64_t time_ms, SimEvent event);
  bool empty() const { return heap_.empty(); }
  const TimedEvent& top() const { return heap_.top(); }
  TimedEvent Pop();

 private:
  struct Later {
    bool operator()(const TimedEvent& a, const TimedEvent& b) const;
  };
  std::priority_queue<TimedEvent, std::vector<TimedEvent>, Later> heap_;
  uint64_t seq_ = 0;
};

}  // namespace weft::sim

#endif  // WEFT_SIM_EVENT_QUEUE_H_
