// Copyright Weft authors. The queue keys policies own: the capacity and fair policies' parsers
// called directly, and the core's dispatch to them (ParseSchedulerConfigWith, and the
// registry's ParseSchedulerConfig, which passes every policy's keys).
#include "scheduler/policies/capacity/capacity_queue_config.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/config.h"
#include "scheduler/policies/fair/fair_queue_config.h"
#include "scheduler/registry.h"

namespace weft::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kPath[] = "queues.root.children.prod";

TEST(CapacityQueueConfigTest, SetsTheFieldsOfTheKeysGiven) {
  QueueConfig q;
  ASSERT_TRUE(ParseCapacityQueueKeys({{"capacity", "70"},
                                      {"maximum-capacity", "90"},
                                      {"user-limit-factor", "1.5"},
                                      {"maximum-am-resource-percent", "20"}},
                                     /*leaf=*/true, "q.yaml", kPath, &q)
                  .ok());
  EXPECT_EQ(q.capacity, 70);
  EXPECT_EQ(q.maximum_capacity, 90);
  EXPECT_EQ(q.user_limit_factor, 1.5);
  EXPECT_EQ(q.maximum_am_resource_percent, 20);

  QueueConfig untouched;
  ASSERT_TRUE(ParseCapacityQueueKeys({}, /*leaf=*/false, "q.yaml", kPath, &untouched).ok());
  EXPECT_EQ(untouched.capacity, -1);
  EXPECT_EQ(untouched.maximum_capacity, 100);
  EXPECT_EQ(untouched.user_limit_factor, 1.0);
  EXPECT_EQ(untouched.maximum_am_resource_percent, 10);
}

TEST(CapacityQueueConfigTest, RefusesOutOfRangeValuesNamingTheKeyPath) {
  auto error = [](std::map<std::string, std::string> given, absl::string_view origin = "q.yaml") {
    QueueConfig q;
    return std::string(ParseCapacityQueueKeys(given, true, origin, kPath, &q).message());
  };
  EXPECT_EQ(error({{"capacity", "150"}}),
            "q.yaml: queues.root.children.prod.capacity: 150 must be a percentage in [0, 100]");
  EXPECT_EQ(error({{"capacity", "150"}}, ""),
            "queues.root.children.prod.capacity: 150 must be a percentage in [0, 100]");
  EXPECT_EQ(error({{"maximum-capacity", "-1"}}),
            "q.yaml: queues.root.children.prod.maximum-capacity: -1 must be a percentage in "
            "[0, 100]");
  EXPECT_EQ(error({{"maximum-am-resource-percent", "100.5"}}),
            "q.yaml: queues.root.children.prod.maximum-am-resource-percent: 100.5 must be a "
            "percentage in [0, 100]");
  EXPECT_EQ(error({{"capacity", "half"}}),
            "q.yaml: queues.root.children.prod.capacity: 'half' is not a valid value");
  EXPECT_EQ(error({{"user-limit-factor", "0"}}),
            "q.yaml: queues.root.children.prod.user-limit-factor: 0 must be > 0");
  EXPECT_EQ(error({{"capacity", "80"}, {"maximum-capacity", "60"}}),
            "q.yaml: queues.root.children.prod: capacity 80 is above maximum-capacity 60");
  // The bounds themselves are allowed.
  EXPECT_EQ(error({{"capacity", "100"}, {"maximum-am-resource-percent", "0"}}), "");
}

TEST(FairQueueConfigTest, MaxAmShareIsAShareOnLeavesOnly) {
  QueueConfig q;
  ASSERT_TRUE(ParseFairQueueKeys({{"max-am-share", "0.25"}}, true, "q.yaml", kPath, &q).ok());
  EXPECT_EQ(q.max_am_share, 0.25);
  QueueConfig parent;
  EXPECT_EQ(
      ParseFairQueueKeys({{"max-am-share", "0.25"}}, false, "q.yaml", kPath, &parent).message(),
      "q.yaml: queues.root.children.prod.max-am-share: applies to leaf queues only (set it "
      "on the children, or set queue-max-am-share-default)");
  EXPECT_EQ(ParseFairQueueKeys({{"max-am-share", "2"}}, true, "q.yaml", kPath, &q).message(),
            "q.yaml: queues.root.children.prod.max-am-share: 2 must be a share in [0, 1], or -1 "
            "for no limit");
}

TEST(PolicyQueueKeysTest, RegistryParsesCapacityKeysIntoTheQueueWhateverThePolicy) {
  ResourceTypeRegistry reg;
  // `policy: fair`: the capacity keys are still accepted and parsed (a configuration may be
  // run under several policies).
  auto c = ParseSchedulerConfig(R"(
policy: fair
queues:
  root:
    children:
      prod: {capacity: 70, maximum-capacity: 90, user-limit-factor: 3,
             maximum-am-resource-percent: 25, max-am-share: 0.4, weight: 2}
      dev: {capacity: 30}
)",
                                reg, "q.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "fair");
  ASSERT_EQ(c->root.children.size(), 2u);
  const QueueConfig& prod = c->root.children[0];
  EXPECT_EQ(prod.capacity, 70);
  EXPECT_EQ(prod.maximum_capacity, 90);
  EXPECT_EQ(prod.user_limit_factor, 3);
  EXPECT_EQ(prod.maximum_am_resource_percent, 25);
  EXPECT_EQ(prod.max_am_share, 0.4);
  EXPECT_EQ(prod.weight, 2);
  EXPECT_EQ(c->root.children[1].capacity, 30);
  EXPECT_EQ(c->root.children[1].maximum_capacity, 100);
  EXPECT_EQ(c->root.capacity, -1);
}

TEST(PolicyQueueKeysTest, RegistryKeepsTheMessages) {
  ResourceTypeRegistry reg;
  auto error = [&](const char* yaml) {
    return std::string(ParseSchedulerConfig(yaml, reg, "q.yaml").status().message());
  };
  EXPECT_EQ(error("queues: {root: {children: {prod: {capacity: 150}}}}"),
            "q.yaml: queues.root.children.prod.capacity: 150 must be a percentage in [0, 100]");
  EXPECT_EQ(error("queues: {root: {children: {prod: {capacity: [1, 2]}}}}"),
            "q.yaml: queues.root.children.prod.capacity: expected a single value");
  EXPECT_EQ(error("queues: {root: {children: {prod: {max-am-share: }}}}"),
            "q.yaml: queues.root.children.prod.max-am-share: expected a single value");
  EXPECT_EQ(error("queues: {root: {children: {p: {capacity: 50, maximum-capacity: 40, "
                  "children: {x: {}}}}}}"),
            "q.yaml: queues.root.children.p: capacity 50 is above maximum-capacity 40");
  EXPECT_EQ(error("queues: {root: {children: {p: {max-am-share: 0.5, children: {x: {}}}}}}"),
            "q.yaml: queues.root.children.p.max-am-share: applies to leaf queues only (set it "
            "on the children, or set queue-max-am-share-default)");
  // A key no policy owns is refused, listing the core's and every policy's keys.
  EXPECT_EQ(error("queues: {root: {children: {prod: {guaranteed: 5}}}}"),
            "q.yaml: queues.root.children.prod: unknown key 'guaranteed' (allowed: "
            "accessible-node-labels, acl_administer_queue, acl_submit_applications, capacity, "
            "children, max-am-share, max-resources, max-running-apps, "
            "maximum-am-resource-percent, maximum-capacity, min-resources, "
            "node-label-maximum-capacity, ordering, state, user-limit-factor, weight)");
}

TEST(PolicyQueueKeysTest, WithoutThePolicysKeysTheCoreRefusesThem) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfigWith("queues: {root: {children: {a: {capacity: 50}}}}", reg,
                                    "q.yaml", {}, {});
  EXPECT_THAT(c.status().message(),
              HasSubstr("q.yaml: queues.root.children.a: unknown key 'capacity'"));
  c = ParseSchedulerConfigWith("queues: {root: {children: {a: {capacity: 50}}}}", reg, "q.yaml", {},
                               {CapacityQueueKeys()});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->root.children[0].capacity, 50);
}

// A fake policy's parser: records each call.
struct Call {
  std::string path;
  std::map<std::string, std::string> given;
  bool leaf;
  size_t children;  // of the queue when called
};
std::vector<Call>* calls = nullptr;

absl::Status RecordCall(const std::map<std::string, std::string>& given, bool leaf,
                        absl::string_view /*origin*/, absl::string_view path, QueueConfig* queue) {
  calls->push_back({std::string(path), given, leaf, queue->children.size()});
  if (given.count("x-fail")) return absl::InvalidArgumentError("refused by the policy");
  return absl::OkStatus();
}

TEST(PolicyQueueKeysTest, EachQueueIsParsedAfterItsChildren) {
  std::vector<Call> recorded;
  calls = &recorded;
  ResourceTypeRegistry reg;
  const std::vector<PolicyQueueKeys> keys = {{"x", {"x-a", "x-b", "x-fail"}, &RecordCall}};
  auto c = ParseSchedulerConfigWith(
      "queues: {root: {x-a: 1, children: {p: {x-b: two, children: {l: }}}}}", reg, "q.yaml", {},
      keys);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(recorded.size(), 3u);
  // Children first (depth first), each with only its own keys given.
  EXPECT_EQ(recorded[0].path, "queues.root.children.p.children.l");
  EXPECT_TRUE(recorded[0].given.empty());
  EXPECT_TRUE(recorded[0].leaf);
  EXPECT_EQ(recorded[1].path, "queues.root.children.p");
  EXPECT_THAT(recorded[1].given, ElementsAre(std::pair{std::string("x-b"), std::string("two")}));
  EXPECT_FALSE(recorded[1].leaf);
  EXPECT_EQ(recorded[1].children, 1u);
  EXPECT_EQ(recorded[2].path, "queues.root");
  EXPECT_THAT(recorded[2].given, ElementsAre(std::pair{std::string("x-a"), std::string("1")}));

  recorded.clear();
  EXPECT_EQ(ParseSchedulerConfigWith("queues: {root: {children: {a: {x-fail: 1}}}}", reg, "q.yaml",
                                     {}, keys)
                .status()
                .message(),
            "refused by the policy");

  // Two owners of one key, or a policy claiming a core key: the list itself is wrong.
  EXPECT_EQ(ParseSchedulerConfigWith("", reg, "q.yaml", {},
                                     {{"x", {"x-a"}, &RecordCall}, {"y", {"x-a"}, &RecordCall}})
                .status()
                .code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(ParseSchedulerConfigWith("", reg, "q.yaml", {}, {{"x", {"weight"}, &RecordCall}})
                .status()
                .code(),
            absl::StatusCode::kInternal);
  calls = nullptr;
}

}  // namespace
}  // namespace weft::scheduler
