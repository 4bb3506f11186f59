#include "scheduler/policies/fifo/fifo_policy.h"

#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

TEST(FifoPolicyTest, PriorityThenSubmissionOrderAcrossQueues) {
  auto s = MakeScheduler("queues: {root: {children: {a: {}, b: {}}}}", "fifo");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(4096, 4)}).ok());
  AppSpec first = App(1, "a");
  AppSpec second = App(2, "b");
  AppSpec urgent = App(3, "a");
  urgent.priority = 5;
  for (const AppSpec& a : {first, second, urgent}) ASSERT_TRUE(s->AddApp(a, 0).ok());
  for (AppId id : {1, 2, 3}) {
    ASSERT_TRUE(s->UpdateRequests(id, Asks({Ask(3, Resource::Of(1024, 1))})).ok());
  }
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 3), 3);  // highest priority first, wherever its queue
  EXPECT_EQ(CountFor(r, 1), 1);  // then the earliest submission
  EXPECT_EQ(CountFor(r, 2), 0);
}

TEST(FifoPolicyTest, NoPreemption) {
  auto policy = NewFifoPolicy();
  EXPECT_FALSE(policy->SupportsPreemption());
  EXPECT_EQ(policy->name(), "fifo");
}

}  // namespace
}  // namespace weft::scheduler
