#include "scheduler/policies/capacity/capacity_policy.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/registry.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using ::testing::HasSubstr;
using namespace ::weft::scheduler::testing;  // NOLINT

constexpr int64_t kMbPerGb = 1024;

std::unique_ptr<Scheduler> WithNode(const std::string& yaml, int64_t gb = 100) {
  auto s = MakeScheduler(yaml, "capacity");
  EXPECT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(gb * kMbPerGb, gb)}).ok());
  return s;
}

void Want(Scheduler* s, AppId id, const std::string& queue, const std::string& user = "u",
          int n = 1000) {
  ASSERT_TRUE(s->AddApp(App(id, queue, user), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(id, Asks({Ask(n, Resource::Of(1 * kMbPerGb, 1))})).ok());
}

TEST(CapacityPolicyTest, GuaranteesSplitTheClusterUnderContention) {
  auto s = WithNode(R"(
queues: {root: {children: {a: {capacity: 70, user-limit-factor: 2}, b: {capacity: 30, user-limit-factor: 2}}}}
)");
  Want(s.get(), 1, "a");
  Want(s.get(), 2, "b");
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 1), 70);
  EXPECT_EQ(CountFor(r, 2), 30);
}

TEST(CapacityPolicyTest, IdleCapacityIsLentUpToMaximumCapacity) {
  auto s = WithNode(R"(
queues:
  root:
    children:
      a: {capacity: 40, maximum-capacity: 60, user-limit-factor: 5}
      b: {capacity: 60}
)");
  Want(s.get(), 1, "a");
  EXPECT_EQ(CountFor(s->Schedule(0), 1), 60);
  EXPECT_EQ(s->FindQueue("a")->limit[kMemoryMb], 60 * kMbPerGb);
}

TEST(CapacityPolicyTest, UserLimitFactorCapsOneUser) {
  auto s = WithNode(R"(
queues: {root: {children: {a: {capacity: 20, user-limit-factor: 2}, b: {capacity: 80}}}}
)");
  Want(s.get(), 1, "a", "alice");
  Want(s.get(), 2, "a", "bob");
  PassResult r = s->Schedule(0);
  // Each user stops once above 2 x 20% = 40% of the cluster (YARN's check is "used > limit"):
  // 41 containers; the queue may grow to 100%.
  EXPECT_EQ(CountFor(r, 1), 41);
  EXPECT_EQ(CountFor(r, 2), 41);
}

TEST(CapacityPolicyTest, AmResourcePercentLimitsAmsButOneAlwaysRuns) {
  auto s = WithNode(R"(
queues: {root: {children: {a: {capacity: 10, maximum-am-resource-percent: 20}, b: {capacity: 90}}}}
)");
  for (AppId id = 1; id <= 4; ++id) {
    AppSpec a = App(id, "a");
    a.am_resource = Resource::Of(1 * kMbPerGb, 1);
    ASSERT_TRUE(s->AddApp(a, 0).ok());
  }
  // 20% of a's 10 GB guarantee = 2 GB: two AMs.
  PassResult r = s->Schedule(0);
  EXPECT_EQ(r.allocations.size(), 2u);
  auto tiny = WithNode(
      "queues: {root: {children: {a: {capacity: 1, maximum-am-resource-percent: 1}, b: {capacity: "
      "99}}}}");
  AppSpec a = App(1, "a");
  a.am_resource = Resource::Of(4 * kMbPerGb, 1);
  ASSERT_TRUE(tiny->AddApp(a, 0).ok());
  EXPECT_EQ(tiny->Schedule(0).allocations.size(), 1u);
}

TEST(CapacityPolicyTest, FairOrderingWithinALeaf) {
  auto s = WithNode("queues: {root: {children: {a: {ordering: fair, user-limit-factor: 10}}}}", 10);
  Want(s.get(), 1, "a");
  Want(s.get(), 2, "a");
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 1), 5);
  EXPECT_EQ(CountFor(r, 2), 5);
  auto fifo = WithNode("queues: {root: {children: {a: {user-limit-factor: 10}}}}", 10);
  Want(fifo.get(), 1, "a");
  Want(fifo.get(), 2, "a");
  EXPECT_EQ(CountFor(fifo->Schedule(0), 1), 10);
}

TEST(CapacityPolicyTest, ValidationNamesTheQueue) {
  ResourceTypeRegistry reg;
  auto policy = NewCapacityPolicy();
  auto parse = [&](const char* yaml) { return *ParseSchedulerConfig(yaml, reg); };
  EXPECT_THAT(
      policy
          ->Validate(
              parse("queues: {root: {children: {a: {capacity: 50}, b: {capacity: 40}}}}").root)
          .message(),
      HasSubstr("children of 'root' sum to 90"));
  EXPECT_THAT(policy->Validate(parse("queues: {root: {children: {a: {capacity: 50}, b: {}}}}").root)
                  .message(),
              HasSubstr("all set 'capacity' or none"));
  EXPECT_THAT(
      policy->Validate(parse("queues: {root: {children: {a: {maximum-capacity: 20}, b: {}}}}").root)
          .message(),
      HasSubstr("'root.a': maximum-capacity is below its capacity"));
  EXPECT_TRUE(policy->Validate(parse("queues: {root: {children: {a: {}, b: {}}}}").root).ok());
}

TEST(CapacityPolicyTest, PreemptionRestoresTheGuarantee) {
  auto s = MakeScheduler(R"(
preemption: {enabled: true, starvation-timeout-ms: 10, grace-period-ms: 10, threshold: 1.0}
queues: {root: {children: {a: {capacity: 50, user-limit-factor: 2}, b: {capacity: 50, user-limit-factor: 2}}}}
)",
                         "capacity");
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(10 * kMbPerGb, 10)}).ok());
  Want(s.get(), 1, "a");
  ASSERT_EQ(s->Schedule(0).allocations.size(), 10u);
  Want(s.get(), 2, "b");
  s->Schedule(1);
  PassResult c = s->Schedule(11);
  ASSERT_EQ(c.contracts.size(), 1u);
  EXPECT_EQ(c.contracts[0].strict_containers.size(), 5u);
  PassResult k = s->Schedule(21);
  EXPECT_EQ(k.kills.size(), 5u);
  EXPECT_EQ(CountFor(k, 2), 5);
}

}  // namespace
}  // namespace weft::scheduler
