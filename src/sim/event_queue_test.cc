// Copyright Weft authors.
#include "sim/event_queue.h"

#include "gtest/gtest.h"

namespace weft::sim {
namespace {

TEST(EventQueueTest, EarlierFirstThenByKindThenByQueueOrder) {
  EventQueue q;
  q.Push(20, PassEvent{});
  q.Push(10, SampleEvent{});
  q.Push(10, SubmitEvent{7});
  q.Push(10, TaskFinishEvent{42, 3});
  q.Push(10, SubmitEvent{8});
  q.Push(5, AmReadyEvent{1, 2});
  std::vector<std::pair<int64_t, size_t>> order;
  while (!q.empty()) {
    TimedEvent e = q.Pop();
    order.push_back({e.time_ms, e.event.index()});
  }
  // kinds: 0 task-finish, 1 failure, 2 submit, 3 am-ready, 4 pass, 5 sample
  std::vector<std::pair<int64_t, size_t>> want = {{5, 3},  {10, 0}, {10, 2},
                                                  {10, 2}, {10, 5}, {20, 4}};
  EXPECT_EQ(order, want);
}

TEST(EventQueueTest, SameKindAtTheSameTimeKeepsQueueOrderAndFields) {
  EventQueue q;
  q.Push(10, SubmitEvent{8});
  q.Push(10, SubmitEvent{7});
  TimedEvent first = q.Pop();
  EXPECT_EQ(std::get<SubmitEvent>(first.event).job, 8);
  TimedEvent last = q.Pop();
  EXPECT_EQ(std::get<SubmitEvent>(last.event).job, 7);
  EXPECT_EQ(last.time_ms, 10);
  EXPECT_TRUE(q.empty());
  q.Push(1, TaskFinishEvent{99, 4});
  TimedEvent finish = q.Pop();
  EXPECT_EQ(std::get<TaskFinishEvent>(finish.event).container, 99u);
  EXPECT_EQ(std::get<TaskFinishEvent>(finish.event).version, 4u);
}

}  // namespace
}  // namespace weft::sim
