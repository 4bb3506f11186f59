// Copyright Weft authors.
#include "sim/event_queue.h"

#include <tuple>
#include <utility>

namespace weft::sim {

bool EventQueue::Later::operator()(const TimedEvent& a, const TimedEvent& b) const {
  return std::make_tuple(a.time_ms, a.event.index(), a.seq) >
         std::make_tuple(b.time_ms, b.event.index(), b.seq);
}

void EventQueue::Push(int64_t time_ms, SimEvent event) {
  heap_.push(TimedEvent{time_ms, seq_++, std::move(event)});
}

TimedEvent EventQueue::Pop() {
  TimedEvent e = heap_.top();
  heap_.pop();
  return e;
}

}  // namespace weft::sim
