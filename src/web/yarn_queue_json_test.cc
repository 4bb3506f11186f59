// The capacities SchedulerJson reports for each queue (capacity, maxCapacity, absoluteCapacity,
// absoluteMaxCapacity): YARN's CapacityScheduler numbers, as the scheduler's policy reports them
// through the RM's queue report, for the capacity policy (configured and equal splits) and for a
// weight-based policy (fair).
#include <string>

#include "absl/strings/str_cat.h"
#include "common/event_loop.h"
#include "gtest/gtest.h"
#include "rm/resource_manager.h"
#include "scheduler/registry.h"
#include "security/secret_source.h"
#include "store/memory_store.h"
#include "web/snapshot.h"
#include "web/test_cluster.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

// One line per queue, pre-order: "path capacity maxCapacity absoluteCapacity absoluteMaxCapacity".
void Lines(const Json& q, std::string* out) {
  absl::StrAppend(out, q["queuePath"].get<std::string>(), " ", q["capacity"].get<double>(), " ",
                  q["maxCapacity"].get<double>(), " ", q["absoluteCapacity"].get<double>(), " ",
                  q["absoluteMaxCapacity"].get<double>(), "\n");
  if (q.contains("queues"))
    for (const Json& c : q["queues"]["queue"]) Lines(c, out);
}

// The queue lines of an RM running `yaml` on nodes of 8192 MB, 8 vcores, 1000 Mbit/s and
// 4096 MB, 4 vcores.
std::string QueueLines(const std::string& yaml) {
  rm::RmOptions o;
  auto config = scheduler::ParseSchedulerConfig(yaml, o.registry, "test");
  EXPECT_TRUE(config.ok()) << config.status();
  if (!config.ok()) return "";
  o.scheduler = *config;
  ManualEventLoop loop;
  auto store = store::NewMemoryStore();
  NoLauncher launcher;
  security::FakeSecretSource secrets;
  auto rm = rm::ResourceManager::Create(o, &loop, store.get(), &launcher, &secrets);
  EXPECT_TRUE(rm.ok()) << rm.status();
  if (!rm.ok()) return "";
  for (const auto& [id, mb, vcores, mbps] :
       {std::tuple<std::string, int64_t, int64_t, int64_t>{"h1:1", 8192, 8, 1000},
        {"h2:1", 4096, 4, 0}}) {
    v1::RegisterNodeManagerRequest req;
    req.set_node_id(id);
    (*req.mutable_capability()->mutable_values())["memory-mb"] = mb;
    (*req.mutable_capability()->mutable_values())["vcores"] = vcores;
    if (mbps > 0) (*req.mutable_capability()->mutable_values())["network-mbps"] = mbps;
    EXPECT_TRUE((*rm)->RegisterNode(req).ok());
  }
  std::shared_ptr<ClusterSnapshot> s = BuildSnapshot(**rm, loop.NowMs(), nullptr);
  std::string out;
  Lines(SchedulerJson(*s)["scheduler"]["schedulerInfo"], &out);
  return out;
}

TEST(YarnQueueJsonTest, CapacityPolicyConfiguredAndEqualSplits) {
  EXPECT_EQ(QueueLines(R"(
policy: capacity
queues:
  root:
    children:
      prod:
        capacity: 70
        maximum-capacity: 90
        children:
          etl: {}
          adhoc: {maximum-capacity: 50}
          web: {}
      dev: {capacity: 30}
)"),
            "root 100 100 100 100\n"
            "root.prod 70 90 70 90\n"
            "root.prod.etl 33.333 100 23.333 90\n"
            "root.prod.adhoc 33.333 50 23.333 45\n"
            "root.prod.web 33.333 100 23.333 90\n"
            "root.dev 30 100 30 100\n");
}

TEST(YarnQueueJsonTest, FairPolicyWeightsAndLimits) {
  EXPECT_EQ(QueueLines(R"(
policy: fair
queues:
  root:
    children:
      a: {weight: 3, max-resources: "memory-mb=6144,vcores=6,network-mbps=500"}
      b:
        weight: 1
        max-resources: "memory-mb=9216,vcores=9,network-mbps=750"
        children:
          b1: {weight: 1}
          b2: {weight: 2, max-resources: "memory-mb=3072,vcores=3,network-mbps=250"}
)"),
            "root 100 100 100 100\n"
            "root.a 75 50 75 50\n"
            "root.b 25 75 25 75\n"
            "root.b.b1 33.333 100 8.333 75\n"
            "root.b.b2 66.667 33.333 16.667 25\n");
}

}  // namespace
}  // namespace weft::web
