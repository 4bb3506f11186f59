#include "scheduler/policies/ras/ras_policy.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scheduler/registry.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using namespace ::weft::scheduler::testing;  // NOLINT

constexpr const char* kRas = "policy: ras\nras: {control-period-ms: 30000, max-rounds: 100}\n";

AppSpec Job(AppId id, int64_t goal_ms, TaskUsage map_usage) {
  AppSpec a = App(id);
  a.profile.goal_ms = goal_ms;
  PhaseProfile map;
  map.priority = 20;
  map.name = "map";
  map.has_usage = true;
  map.usage = map_usage;
  PhaseProfile reduce;
  reduce.priority = 10;
  reduce.name = "reduce";
  reduce.kind = PhaseKind::kReduceLike;
  reduce.has_usage = true;
  reduce.usage = {0.1, 0.1, 0.25};
  a.profile.phases = {map, reduce};
  return a;
}

// Sum of the actual usage (profiles) of the containers on node `n`, per dimension.
ras::Load UsageOn(const Scheduler& s, NodeId n) {
  ras::Load used{};
  for (ContainerId c : s.NodeContainers(n)) {
    const ContainerState* cs = s.container(c);
    PhaseProfile p = ras::PhaseAt(*s.app(cs->app), cs->priority);
    ras::Load l = ras::TaskLoad(p.has_usage, p.usage, cs->resource, s.node(n)->capacity);
    for (int d = 0; d < ras::kNumDims; ++d) used[d] += l[d];
  }
  return used;
}

TEST(RasPolicyTest, PlacesByActualUsageNotByRequests) {
  auto s = MakeScheduler(kRas);
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
  // Requests would let 8 run; the profile (CPU 30%) lets 3.
  ASSERT_TRUE(s->AddApp(Job(1, -1, {0.3, 0.1, 0.1}), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(10, Resource::Of(128, 1), "*", 20)})).ok());
  PassResult r = s->Schedule(0);
  EXPECT_EQ(CountFor(r, 1), 3);
  EXPECT_LE(UsageOn(*s, 0)[ras::kCpu], 1.0 + 1e-9);
  // A second, I/O-heavy job still fits beside it: complementary usage.
  ASSERT_TRUE(s->AddApp(Job(2, -1, {0.05, 0.35, 0.1}), 1).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(10, Resource::Of(128, 1), "*", 20)})).ok());
  r = s->Schedule(1);
  EXPECT_EQ(CountFor(r, 2), 2);
  ras::Load used = UsageOn(*s, 0);
  for (int d = 0; d < ras::kNumDims; ++d) EXPECT_LE(used[d], 1.0 + 1e-9) << d;
}

TEST(RasPolicyTest, WithoutProfileTheRequestIsTheUsage) {
  auto s = MakeScheduler(kRas);
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(4096, 4)}).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(10, Resource::Of(1024, 1))})).ok());
  EXPECT_EQ(CountFor(s->Schedule(0), 1), 4);
}

// The task scheduler moves to a new plan only as running tasks finish: never overloading the
// node, and giving freed capacity to the job of lowest utility.
TEST(RasPolicyTest, TransitionWithoutOverload) {
  auto s = MakeScheduler(kRas);
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
  const TaskUsage quarter{0.25, 0.1, 0.1};                              // four fit on the node
  ASSERT_TRUE(s->AddApp(Job(1, 1000 * 1000 * 1000, quarter), 0).ok());  // a relaxed goal
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(20, Resource::Of(128, 1), "*", 20)})).ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(CountFor(r, 1), 4);
  std::vector<ContainerId> a_tasks;
  for (const Allocation& al : r.allocations) a_tasks.push_back(al.container);
  // Job 1 finishes a task: its task length is known (10 s), so with its relaxed goal s_req = 1
  // and its utility is high.
  ASSERT_TRUE(s->ContainerCompleted(a_tasks[0], 10000).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(15, Resource::Of(128, 1), "*", 20)})).ok());
  ASSERT_EQ(CountFor(s->Schedule(10000), 1), 1);  // refills its slot
  // Job 2 arrives with a goal (cold start: it needs all 4 at once): the new plan moves three of
  // job 1's slots to it (max-min rounds), but nothing can start while job 1's tasks run.
  ASSERT_TRUE(s->AddApp(Job(2, 20000, quarter), 10001).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(4, Resource::Of(128, 1), "*", 20)})).ok());
  r = s->Schedule(10001);
  EXPECT_TRUE(r.allocations.empty()) << "must not start job 2 on a full node";
  EXPECT_LE(UsageOn(*s, 0)[ras::kCpu], 1.0 + 1e-9);
  // As each of job 1's tasks ends, the freed slot goes to job 2 (lower utility), not job 1.
  std::vector<ContainerId> running = s->AppContainers(1);
  ASSERT_EQ(running.size(), 4u);
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_TRUE(s->ContainerCompleted(running[i], 12000 + static_cast<int64_t>(i)).ok());
    r = s->Schedule(12000 + static_cast<int64_t>(i));
    ASSERT_EQ(r.allocations.size(), 1u);
    EXPECT_EQ(r.allocations[0].app, 2u);
    EXPECT_LE(UsageOn(*s, 0)[ras::kCpu], 1.0 + 1e-9);
  }
  auto st1 = ras::StatusOf(*s, 1, 12001);
  auto st2 = ras::StatusOf(*s, 2, 12001);
  ASSERT_TRUE(st1.ok() && st2.ok());
  EXPECT_EQ(st2->s_running, 2);
  EXPECT_EQ(st2->s_req, 4);  // cold start: everything at once
  EXPECT_EQ(st1->s_req, 1);  // relaxed goal, known task length
  EXPECT_LT(st2->utility, st1->utility);
}

TEST(RasPolicyTest, ReducesGoToDistinctNodes) {
  auto s = MakeScheduler(kRas);
  for (int i = 0; i < 4; ++i)
    ASSERT_TRUE(s->AddNode({absl::StrCat("n", i), "/r1", Resource::Of(2048, 8)}).ok());
  ASSERT_TRUE(s->AddApp(Job(1, -1, {0.25, 0.1, 0.1}), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(4, Resource::Of(128, 1), "*", 10)})).ok());
  PassResult r = s->Schedule(0);
  ASSERT_EQ(r.allocations.size(), 4u);
  std::set<NodeId> nodes;
  for (const Allocation& a : r.allocations) nodes.insert(a.node);
  EXPECT_EQ(nodes.size(), 4u);
}

TEST(RasPolicyTest, RecordsTaskLengthsAndValidatesProfiles) {
  auto s = MakeScheduler(kRas);
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
  AppSpec bad = Job(1, -1, {1.5, 0, 0});
  absl::Status st = s->AddApp(bad, 0);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("cpu=1.5"), std::string::npos) << st;
  bad = Job(1, -5, {0.1, 0, 0});
  EXPECT_FALSE(s->AddApp(bad, 0).ok());
  bad = Job(1, -1, {0.1, 0, 0});
  bad.profile.phases[1].priority = 20;
  st = s->AddApp(bad, 0);
  EXPECT_NE(st.message().find("priority already used"), std::string::npos) << st;

  ASSERT_TRUE(s->AddApp(Job(1, 100000, {0.1, 0.1, 0.1}), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Resource::Of(128, 1), "*", 20)})).ok());
  PassResult r = s->Schedule(1000);
  ASSERT_EQ(r.allocations.size(), 2u);
  ASSERT_TRUE(s->ContainerCompleted(r.allocations[0].container, 5000).ok());
  ASSERT_TRUE(s->ContainerCompleted(r.allocations[1].container, 7000).ok());
  const TaskStats& ps = s->app(1)->task_stats.at(20);
  EXPECT_EQ(ps.completed, 2);
  EXPECT_EQ(ps.total_ms, 4000 + 6000);
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(30, Resource::Of(128, 1), "*", 20)})).ok());
  auto status = ras::StatusOf(*s, 1, 10000);
  ASSERT_TRUE(status.ok());
  EXPECT_DOUBLE_EQ(status->avg_map_ms, 5000);
  EXPECT_EQ(status->s_pend, 30);
  EXPECT_EQ(status->s_req, 2);  // 90 s left = 18 waves of 5 s -> ceil(30 / 18)
  EXPECT_FALSE(ras::StatusOf(*s, 9, 0).ok());
}

TEST(RasPolicyTest, EstimatorReservesTimeForTheReducePhase) {
  // 30 map tasks of 5 s left, the goal 20 s away. mode 0: no reduce-like phase; 1: one, none of
  // its tasks finished (one map length reserved); 2: a reduce-like task took 10 s (reserved).
  auto s_req = [](int mode) -> int64_t {
    auto s = MakeScheduler(kRas);
    EXPECT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
    AppSpec job = Job(1, 30000, {0.1, 0.1, 0.1});
    if (mode == 0) job.profile.phases.pop_back();
    EXPECT_TRUE(s->AddApp(job, 0).ok());
    RequestUpdate asks = Asks({Ask(2, Resource::Of(128, 1), "*", 20)});
    if (mode == 2) asks.asks.push_back(Ask(1, Resource::Of(128, 1), "*", 10));
    EXPECT_TRUE(s->UpdateRequests(1, asks).ok());
    PassResult r = s->Schedule(1000);
    EXPECT_EQ(r.allocations.size(), mode == 2 ? 3u : 2u);
    int maps_done = 0;  // maps take 4 s and 6 s (mean 5 s), the reduce 10 s
    for (const Allocation& a : r.allocations) {
      int64_t end = a.priority == 10 ? 11000 : (maps_done++ == 0 ? 5000 : 7000);
      EXPECT_TRUE(s->ContainerCompleted(a.container, end).ok());
    }
    EXPECT_TRUE(s->UpdateRequests(1, Asks({Ask(30, Resource::Of(128, 1), "*", 20)})).ok());
    auto status = ras::StatusOf(*s, 1, 10000);
    EXPECT_TRUE(status.ok());
    return status.ok() ? status->s_req : -1;
  };
  EXPECT_EQ(s_req(0), 8);   // 20 s = 4 waves of 5 s -> ceil(30 / 4)
  EXPECT_EQ(s_req(1), 10);  // 15 s = 3 waves
  EXPECT_EQ(s_req(2), 15);  // 10 s = 2 waves
}

TEST(RasPolicyTest, EstimatorUsesDeclaredTaskLengthsUntilItHasObservedOne) {
  // 30 map tasks left, the goal 30 s away. The profile declares maps of 2 s and reduces of 8 s
  // (the offline profiling run); observed lengths replace them once tasks have finished.
  auto s = MakeScheduler(kRas);
  ASSERT_TRUE(s->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
  AppSpec job = Job(1, 30000, {0.1, 0.1, 0.1});
  job.profile.phases[0].expected_task_ms = 2000;
  job.profile.phases[1].expected_task_ms = 8000;
  ASSERT_TRUE(s->AddApp(job, 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(30, Resource::Of(128, 1), "*", 20)})).ok());
  auto status = ras::StatusOf(*s, 1, 0);
  ASSERT_TRUE(status.ok());
  EXPECT_DOUBLE_EQ(status->avg_map_ms, 2000);
  EXPECT_EQ(status->s_req, 3);  // 30 s - 8 s reserved = 11 waves of 2 s -> ceil(30 / 11)

  // Without declared lengths the cold start asks for every pending task at once.
  auto cold = MakeScheduler(kRas);
  ASSERT_TRUE(cold->AddNode({"n1", "/r1", Resource::Of(2048, 8)}).ok());
  ASSERT_TRUE(cold->AddApp(Job(1, 30000, {0.1, 0.1, 0.1}), 0).ok());
  ASSERT_TRUE(cold->UpdateRequests(1, Asks({Ask(30, Resource::Of(128, 1), "*", 20)})).ok());
  auto cold_status = ras::StatusOf(*cold, 1, 0);
  ASSERT_TRUE(cold_status.ok());
  EXPECT_EQ(cold_status->s_req, 30);

  // The maps placed at 1 s all finish at 5 s: the observed 4 s replaces the declared 2 s (the
  // reduce reserve stays the declared 8 s until a reduce-like task finishes).
  PassResult r = s->Schedule(1000);
  ASSERT_GE(r.allocations.size(), 3u);
  for (const Allocation& a : r.allocations)
    ASSERT_TRUE(s->ContainerCompleted(a.container, 5000).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(24, Resource::Of(128, 1), "*", 20)})).ok());
  status = ras::StatusOf(*s, 1, 5000);
  ASSERT_TRUE(status.ok());
  EXPECT_DOUBLE_EQ(status->avg_map_ms, 4000);
  EXPECT_EQ(status->s_pend, 24);
  EXPECT_EQ(status->s_req, 6);  // 30 s - 8 s - 5 s = 4 waves of 4 s -> ceil(24 / 4)
}

TEST(RasPolicyTest, DeclaredTaskLengthMustBePositive) {
  for (int64_t bad : {int64_t{0}, int64_t{-2}}) {
    auto s = MakeScheduler(kRas);
    AppSpec job = Job(1, 20000, {0.1, 0.1, 0.1});
    job.profile.phases[1].expected_task_ms = bad;
    absl::Status st = s->AddApp(job, 0);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("phase #1 ('reduce', priority 10): expected task length"),
              std::string::npos)
        << st.message();
    EXPECT_EQ(s->app(1), nullptr);
  }
}

TEST(RasPolicyTest, ConfigKeys) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig("policy: ras\nras: {control-period-ms: 5000, max-rounds: 7}\n", reg,
                                "t");
  ASSERT_TRUE(c.ok()) << c.status();
  // The section is the policy's: the core keeps its text, the policy parses it.
  ASSERT_TRUE(c->policy_sections.contains("ras"));
  auto ras_config = ParseRasSection(c->policy_sections.at("ras"), "t");
  ASSERT_TRUE(ras_config.ok()) << ras_config.status();
  EXPECT_EQ(ras_config->control_period_ms, 5000);
  EXPECT_EQ(ras_config->max_rounds, 7);
  c = ParseSchedulerConfig("ras: {control-period-ms: 0}\n", reg, "t");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ras.control-period-ms"), std::string::npos);
  c = ParseSchedulerConfig("ras: {period: 5}\n", reg, "t");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unknown key 'period'"), std::string::npos);
  // A section the configuration carries is checked again when the policy is configured.
  SchedulerConfig direct = DefaultSchedulerConfig();
  direct.policy = "ras";
  direct.origin = "direct";
  direct.policy_sections["ras"] = "max-rounds: -3";
  auto created = CreateScheduler(direct, SchedulerOptions{reg});
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().message(), "direct: ras.max-rounds: -3 must be >= 0");
  // Other top-level keys stay refused, naming what is allowed.
  c = ParseSchedulerConfig("fifo: {x: 1}\n", reg, "t");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(
                "unknown key 'fifo' (allowed: gang-mode, gpu-placement, gpu-placement-candidates, "
                "locality, node-labels, policy, preemption, queue-max-am-share-default, queues, "
                "ras, user-max-apps-default, users)"),
            std::string::npos)
      << c.status();
}

TEST(RasPolicyTest, ReportsThroughTheCoresPerAppHook) {
  ResourceTypeRegistry reg;
  auto c = ParseSchedulerConfig("policy: ras\n", reg, "t");
  ASSERT_TRUE(c.ok());
  auto s = CreateScheduler(*c, SchedulerOptions{reg});
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_TRUE((*s)->AddNode({"n1", "/r", Resource::Of(4096, 4)}).ok());
  AppSpec app;
  app.id = 1;
  app.profile.goal_ms = 100000;
  ASSERT_TRUE((*s)->AddApp(app, 0).ok());
  ASSERT_TRUE((*s)->UpdateRequests(1, Asks({Ask(1, Resource::Of(512, 1), "*", 5)})).ok());
  const PassResult& r = (*s)->Schedule(1000);
  ASSERT_EQ(r.allocations.size(), 1u);
  const ContainerId task = r.allocations[0].container;
  std::optional<AppPolicyReport> running = (*s)->PolicyReport(1, 2000);
  ASSERT_TRUE(running.has_value());
  EXPECT_EQ(running->running_map_like, 1);
  ASSERT_TRUE((*s)->ContainerCompleted(task, 4000).ok());
  EXPECT_EQ((*s)->app(1)->task_stats.at(5).total_ms, 3000);
  std::optional<AppPolicyReport> report = (*s)->PolicyReport(1, 5000);
  ASSERT_TRUE(report.has_value());
  EXPECT_EQ(report->running_map_like, 0);
  EXPECT_FALSE((*s)->PolicyReport(99, 5000).has_value());
}

}  // namespace
}  // namespace weft::scheduler
