// Copyright Weft authors. The simulator replays placement: allocation tags and constraints,
// gang phases whose AM starts no task before it holds them all, and the deadlock that
// hold-and-wait gangs reach (docs/placement-experiment.md).
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cluster_spec.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace weft::sim {
namespace {

using scheduler::ConstraintScope;
using scheduler::PlacementConstraint;
using ::testing::HasSubstr;

TaskGroup Phase(std::string name, int64_t count, int64_t ms, int64_t vcores = 1) {
  TaskGroup g;
  g.name = std::move(name);
  g.count = count;
  g.duration_ms = ms;
  g.resource = Resource::Of(1024 * vcores, static_cast<int32_t>(vcores));
  return g;
}

Job OneGroupJob(std::string id, int64_t submit_ms, TaskGroup g) {
  Job j;
  j.id = std::move(id);
  j.submit_ms = submit_ms;
  j.groups.push_back(std::move(g));
  return j;
}

SimOptions Options(int nodes, int vcores, const char* gang_mode = "reserve") {
  SimOptions o;
  o.nodes = *UniformCluster(nodes, Resource::Of(1024 * vcores, vcores), 2);
  o.scheduler = scheduler::DefaultSchedulerConfig();
  o.scheduler.policy = "fair";
  o.scheduler.gang_mode = gang_mode;
  o.replicas = 3;  // map phases with placement must not ask for hosts all the same
  return o;
}

TEST(SimulatorPlacementTest, AntiAffinityPhasesNeverCoLocate) {
  // 4 nodes of 8 vcores. A map phase of 6 tasks that keep apart per node, then a reduce of 4
  // that also keeps apart from every container of its job: 4 maps run at once, then 2.
  TaskGroup map = Phase("map", 6, 10000);
  map.tags = {"w"};
  map.has_constraint = true;
  map.constraint = PlacementConstraint::NotIn(ConstraintScope::kNode, "w");
  TaskGroup reduce = map;
  reduce.name = "reduce";
  reduce.count = 4;
  reduce.depends_on = {0};
  Job j = OneGroupJob("spread", 0, map);
  j.groups.push_back(reduce);
  Workload w;
  w.jobs.push_back(j);
  auto r = RunSimulation(w, Options(4, 8));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 0);
  EXPECT_EQ(r->constrained_allocations, 10);
  EXPECT_EQ(r->constraint_checked, 10);
  EXPECT_EQ(r->constraint_violated, 0);
  EXPECT_EQ(r->hard_constraint_violated, 0);
  // Maps in two rounds of 10 s (4, then 2), then the reduces: at least 30 s of tasks.
  EXPECT_GE(r->job_results[0].finish_ms, 31000);
  EXPECT_EQ(r->job_results[0].max_running_tasks, 4);
  EXPECT_DOUBLE_EQ(ReportToJson(*r)["placement"]["constraint_satisfaction"].get<double>(), 1.0);

  // Soft: all 6 maps run at once; the 2 beyond one per node are violations, counted alike by
  // the scheduler and by the simulator's own check.
  w.jobs[0].groups[0].constraint_soft = true;
  w.jobs[0].groups[1].constraint_soft = true;
  r = RunSimulation(w, Options(4, 8));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job_results[0].max_running_tasks, 6);
  EXPECT_EQ(r->soft_constrained_allocations, 10);
  EXPECT_EQ(r->soft_violations, 2);
  EXPECT_EQ(r->constraint_violated, 2);
  EXPECT_EQ(r->hard_constraint_violated, 0);
  EXPECT_NEAR(ReportToJson(*r)["placement"]["constraint_satisfaction"].get<double>(), 0.8, 1e-9);
}

TEST(SimulatorPlacementTest, GangPhaseStartsAllAtOnce) {
  // 2 nodes x 8 vcores. A filler holds 12 vcores for 20 s; the gang of 8 (asked at 2 s) fits
  // only when the filler ends.
  for (const char* mode : {"reserve", "hold-and-wait"}) {
    SCOPED_TRACE(mode);
    TaskGroup gang = Phase("train", 8, 10000);
    gang.gang = true;
    Workload w;
    w.jobs.push_back(OneGroupJob("filler", 0, Phase("work", 12, 20000)));
    w.jobs.push_back(OneGroupJob("gang", 1000, gang));
    auto r = RunSimulation(w, Options(2, 8, mode));
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->jobs_failed, 0);
    EXPECT_EQ(r->gang_phases, 1);
    EXPECT_EQ(r->gangs_started, 1);
    ASSERT_EQ(r->gang_wait_ms.size(), 1u);
    const int64_t wait = r->gang_wait_ms[0];
    EXPECT_GE(wait, 19000);  // the filler's tasks end at 21-22 s
    // Every task started when the last container came: the job ends one task later.
    const JobResult& g = r->job_results[1];
    EXPECT_EQ(g.finish_ms, 2000 + wait + 10000);
    EXPECT_EQ(g.max_running_tasks, 8);
    EXPECT_FALSE(r->stalled);
    const double held = r->held_idle_mean[1];  // vcores
    if (std::string(mode) == "reserve") {
      EXPECT_EQ(held, 0);  // nothing is held while a gang waits
      EXPECT_GE(r->gang_reservations, 1);
    } else {
      EXPECT_GT(held, 0);  // the 2 free vcores (16 - 12 - 2 AMs) sat held from 2 s to ~22 s
    }
  }
}

TEST(SimulatorPlacementTest, CompetingGangsDeadlockUnderHoldAndWaitButBothFinishUnderReserve) {
  // 2 nodes x 4 vcores and no AM containers; two jobs each with a gang of 8 one-vcore tasks:
  // each needs the whole cluster.
  Workload w;
  for (const char* id : {"a", "b"}) {
    TaskGroup g = Phase("gang", 8, 5000);
    g.gang = true;
    w.jobs.push_back(OneGroupJob(id, 0, g));
  }
  for (const char* mode : {"hold-and-wait", "reserve"}) {
    SCOPED_TRACE(mode);
    SimOptions o = Options(2, 4, mode);
    o.am_resource = Resource();
    auto r = RunSimulation(w, o);
    ASSERT_TRUE(r.ok()) << r.status();
    std::ostringstream summary;
    PrintSummary(*r, summary);
    nlohmann::json p = ReportToJson(*r)["placement"];
    EXPECT_EQ(p["gang_mode"], mode);
    if (std::string(mode) == "hold-and-wait") {
      EXPECT_TRUE(r->stalled);
      EXPECT_TRUE(r->deadlock);
      EXPECT_EQ(r->jobs_unfinished, 2);
      EXPECT_EQ(r->held_containers_at_end, 8);  // 4 each, idle
      EXPECT_EQ(r->jobs_holding_at_end, 2);
      EXPECT_EQ(r->tasks_running_at_end, 0);
      EXPECT_EQ(r->gangs_started, 0);
      EXPECT_EQ(r->job_results[0].finish_ms, -1);
      EXPECT_EQ(r->job_results[1].finish_ms, -1);
      // It stops once nothing changed for kStallMs, not at the 30-day limit.
      EXPECT_LE(r->stalled_at_ms, kStallMs + 2000);
      EXPECT_TRUE(p["deadlock"].get<bool>());
      EXPECT_THAT(summary.str(), HasSubstr("DEADLOCK"));
      EXPECT_NEAR(r->held_idle_mean[1], 1.0, 1e-9);  // every vcore held idle throughout
    } else {
      EXPECT_FALSE(r->stalled);
      EXPECT_FALSE(r->deadlock);
      EXPECT_EQ(r->jobs_unfinished, 0);
      EXPECT_EQ(r->gangs_started, 2);
      EXPECT_GT(r->job_results[0].finish_ms, 0);
      EXPECT_GT(r->job_results[1].finish_ms, 0);
      EXPECT_FALSE(p["deadlock"].get<bool>());
      EXPECT_THAT(summary.str(), ::testing::Not(HasSubstr("DEADLOCK")));
    }
  }
}

TEST(SimulatorPlacementTest, AGangRejectedAfterItsTimeoutFailsItsJob) {
  // A gang of 10 on 8 vcores can never start: with a 30 s timeout the scheduler gives it up,
  // the job fails, and the run ends without stalling.
  TaskGroup g = Phase("gang", 10, 1000);
  g.gang = true;
  g.gang_timeout_ms = 30000;
  Workload w;
  w.jobs.push_back(OneGroupJob("big", 0, g));
  SimOptions o = Options(2, 4);
  o.am_resource = Resource();
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 1);
  EXPECT_EQ(r->gangs_rejected, 1);
  EXPECT_FALSE(r->stalled);
  EXPECT_THAT(r->warnings.front(), HasSubstr("was rejected"));
}

TEST(SimulatorPlacementTest, FederatedRunsRefusePlacement) {
  TaskGroup g = Phase("gang", 4, 1000);
  g.gang = true;
  Workload w;
  w.jobs.push_back(OneGroupJob("g", 0, g));
  SimOptions o = Options(4, 4);
  o.federation.sub_clusters = 2;
  auto r = RunSimulation(w, o);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("federated runs do not model"));
}

}  // namespace
}  // namespace weft::sim
