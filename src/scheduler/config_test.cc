#include "scheduler/config.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/registry.h"

namespace weft::scheduler {
namespace {

using ::testing::HasSubstr;

absl::Status Parse(const char* yaml) {
  ResourceTypeRegistry reg;
  return ParseSchedulerConfig(yaml, reg, "q.yaml").status();
}

TEST(SchedulerConfigTest, DefaultsAndFullExample) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig("", reg);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->policy, "fair");
  ASSERT_EQ(c->root.children.size(), 1u);
  EXPECT_EQ(c->root.children[0].name, "default");

  c = ParseSchedulerConfig(R"(
policy: capacity
locality: {node-locality-delay: 5, rack-locality-delay: 1, max-locality-probes: 4}
preemption: {enabled: true, starvation-timeout-ms: 100, grace-period-ms: 50, threshold: 0.5}
queues:
  root:
    children:
      prod:
        capacity: 70
        maximum-capacity: 90
        user-limit-factor: 1.5
        maximum-am-resource-percent: 20
        ordering: fair
        weight: 2
        min-resources: "memory-mb=1024,vcores=1"
        max-resources: "memory-mb=8192"
        max-running-apps: 10
      dev: {capacity: 30, state: STOPPED}
)",
                           reg);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "capacity");
  EXPECT_EQ(c->locality.node_locality_delay, 5);
  EXPECT_TRUE(c->preemption.enabled);
  EXPECT_EQ(c->preemption.grace_period_ms, 50);
  const QueueConfig& prod = c->root.children[0];
  EXPECT_EQ(prod.name, "prod");
  EXPECT_EQ(prod.capacity, 70);
  EXPECT_EQ(prod.ordering, LeafOrdering::kFair);
  EXPECT_EQ(prod.max_resources[kMemoryMb], 8192);
  EXPECT_EQ(prod.max_resources[kVcores], kUnlimited);  // not named: unlimited
  EXPECT_EQ(prod.max_running_apps, 10);
  EXPECT_EQ(c->root.children[1].state, QueueState::kStopped);
}

TEST(SchedulerConfigTest, ErrorsNameTheKeyPath) {
  EXPECT_THAT(Parse("queues: {root: {children: {a: {wieght: 2}}}}").message(),
              HasSubstr("q.yaml: queues.root.children.a: unknown key 'wieght'"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {weight: -1}}}}").message(),
              HasSubstr("queues.root.children.a.weight: -1 must be > 0"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {weight: heavy}}}}").message(),
              HasSubstr("'heavy' is not a valid value"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {capacity: 150}}}}").message(),
              HasSubstr("must be a percentage"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {max-resources: 'gpus=1'}}}}").message(),
              HasSubstr("unknown resource type 'gpus'"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {}, b: {children: {a: {}}}}}}").message(),
              HasSubstr("'a' is used twice"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {state: PAUSED}}}}").message(),
              HasSubstr("not RUNNING or STOPPED"));
  EXPECT_THAT(Parse("queues: {top: {}}").message(), HasSubstr("single key 'root'"));
  EXPECT_THAT(Parse("queues: {root: {}}").message(), HasSubstr("at least one child"));
  EXPECT_THAT(Parse("policy: [a, b]").message(), HasSubstr("policy"));
  EXPECT_THAT(Parse("preemption: {threshold: 2}").message(), HasSubstr("(0, 1]"));
  EXPECT_THAT(Parse("locality: {node-locality-delay: -1}").message(), HasSubstr(">= 0"));
  EXPECT_THAT(Parse("a: [").message(), HasSubstr("not valid YAML"));
  EXPECT_THAT(Parse("queues: {root: {children: {a: {min-resources: 'memory-mb=2048', "
                    "max-resources: 'memory-mb=1024'}}}}")
                  .message(),
              HasSubstr("min-resources is above max-resources"));
}

}  // namespace
}  // namespace weft::scheduler
