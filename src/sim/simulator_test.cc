#include "sim/simulator.h"

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cluster_spec.h"
#include "sim/report.h"

namespace weft::sim {
namespace {

using ::testing::HasSubstr;

Job MakeJob(std::string id, int64_t submit_ms, int64_t maps, int64_t map_ms, int64_t reduces = 0,
            int64_t reduce_ms = 0, std::string queue = "default") {
  Job j;
  j.id = std::move(id);
  j.queue = std::move(queue);
  j.submit_ms = submit_ms;
  TaskGroup m;
  m.name = "map";
  m.count = maps;
  m.duration_ms = map_ms;
  m.resource = Resource::Of(1024, 1);
  j.groups.push_back(m);
  if (reduces > 0) {
    TaskGroup r;
    r.name = "reduce";
    r.priority = 10;
    r.count = reduces;
    r.duration_ms = reduce_ms;
    r.resource = Resource::Of(2048, 1);
    r.depends_on = {0};
    j.groups.push_back(r);
  }
  return j;
}

SimOptions Options(int nodes, const char* policy = "fair") {
  SimOptions o;
  o.nodes = *UniformCluster(nodes, Resource::Of(8192, 8), 2);
  o.scheduler = scheduler::DefaultSchedulerConfig();
  o.scheduler.policy = policy;
  o.replicas = 0;
  return o;
}

TEST(SimulatorTest, OneJobRunsItsWavesAndReduces) {
  // 2 nodes x 8 vcores = 16 slots, minus the AM: 15 maps at a time. 30 maps of 10 s run in
  // two waves; the 2 reduces (after all maps) take 5 s.
  Workload w;
  w.jobs.push_back(MakeJob("j1", 0, 30, 10000, 2, 5000));
  auto r = RunSimulation(w, Options(2));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->job_results.size(), 1u);
  const JobResult& j = r->job_results[0];
  EXPECT_EQ(j.start_ms, 0);  // the AM container is allocated at the first pass
  // AM at 0 s, asks at 1 s, maps run 1-11 s and 11-21 s (first wave 15, second 15),
  // the reduces 21(+pass)-27 s.
  EXPECT_GE(j.finish_ms, 26000);
  EXPECT_LE(j.finish_ms, 28000);
  EXPECT_EQ(r->allocations, 1 + 30 + 2);
  EXPECT_EQ(r->jobs_failed, 0);
}

TEST(SimulatorTest, FailureInjectionLosesNodesAndWorkIsRedone) {
  Workload w;
  w.jobs.push_back(MakeJob("j1", 0, 80, 60000));
  SimOptions o = Options(10);
  o.failures.push_back(*ParseFailureSpec("50%@30s"));
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->lost_containers, 0);
  EXPECT_EQ(r->jobs_failed + (r->job_results[0].finish_ms > 0 ? 1 : 0), 1);
  EXPECT_THAT(r->warnings.front(), HasSubstr("removed 5 nodes at 30 s"));
  // More allocations than tasks: the lost ones ran again (or the AM restarted).
  EXPECT_GT(r->allocations, 81);
}

TEST(SimulatorTest, UnknownQueueFailsTheJobNotTheRun) {
  Workload w;
  w.jobs.push_back(MakeJob("good", 0, 1, 1000));
  w.jobs.push_back(MakeJob("bad", 0, 1, 1000, 0, 0, "nosuchqueue"));
  auto r = RunSimulation(w, Options(1));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->jobs_failed, 1);
  EXPECT_TRUE(r->job_results[1].failed);
  EXPECT_THAT(r->warnings.front(), HasSubstr("unknown queue 'nosuchqueue'"));
}

TEST(SimulatorTest, DeterministicForTheSameSeed) {
  Workload w;
  for (int i = 0; i < 20; ++i)
    w.jobs.push_back(MakeJob(absl::StrCat("j", i), i * 3000, 10 + i, 5000 + 100 * i, i % 3, 2000));
  SimOptions o = Options(4);
  o.replicas = 3;
  auto a = RunSimulation(w, o);
  auto b = RunSimulation(w, o);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < w.jobs.size(); ++i)
    EXPECT_EQ(a->job_results[i].finish_ms, b->job_results[i].finish_ms);
  EXPECT_EQ(a->node_local, b->node_local);
  EXPECT_GT(a->node_local, 0);
}

TEST(SimulatorTest, FairSharesBeatFifoForSmallJobsBehindABigOne) {
  Workload w;
  w.jobs.push_back(MakeJob("big", 0, 400, 60000));
  for (int i = 0; i < 5; ++i) w.jobs.push_back(MakeJob(absl::StrCat("small", i), 5000, 4, 10000));
  auto fifo = RunSimulation(w, Options(2, "fifo"));
  auto fair = RunSimulation(w, Options(2, "fair"));
  ASSERT_TRUE(fifo.ok() && fair.ok());
  // Under FIFO the small jobs wait for the big one's waves; under DRF they run at once.
  EXPECT_LT(fair->job_results[1].finish_ms * 3, fifo->job_results[1].finish_ms);
  nlohmann::json j = ReportToJson(*fair);
  for (const char* key :
       {"policy", "nodes", "jobs", "makespan_s", "scheduler_wall_s", "allocations",
        "allocations_per_s", "job_completion_s", "utilization", "fairness_jain", "jobs_detail"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j["job_completion_s"].contains("p99"));
  EXPECT_TRUE(j["utilization"].contains("memory-mb"));
}

TEST(SimulatorTest, QueuesForWorkloadCreatesOneLeafPerQueue) {
  Workload w;
  w.jobs.push_back(MakeJob("a", 0, 1, 1000, 0, 0, "root.prod"));
  w.jobs.push_back(MakeJob("b", 0, 1, 1000, 0, 0, "dev"));
  w.jobs.push_back(MakeJob("c", 0, 1, 1000, 0, 0, "prod"));
  auto c = QueuesForWorkload(w, "capacity");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->policy, "capacity");
  ASSERT_EQ(c->root.children.size(), 2u);
  EXPECT_EQ(c->root.children[0].name, "prod");
  EXPECT_EQ(c->root.children[1].name, "dev");
  SimOptions o = Options(1, "capacity");
  o.scheduler = *c;
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->jobs_failed, 0);
  w.jobs.push_back(MakeJob("d", 0, 1, 1000, 0, 0, "bad queue!"));
  EXPECT_THAT(QueuesForWorkload(w, "fair").status().message(),
              HasSubstr("queue 'bad queue!' is not a valid leaf queue name"));
}

TEST(SimulatorTest, FailureSpecErrors) {
  EXPECT_EQ(ParseFailureSpec("10%@300s")->at_ms, 300000);
  EXPECT_DOUBLE_EQ(ParseFailureSpec("0.25@2m")->fraction, 0.25);
  EXPECT_THAT(ParseFailureSpec("10%").status().message(), HasSubstr("missing '@'"));
  EXPECT_THAT(ParseFailureSpec("150%@1s").status().message(), HasSubstr("(0, 100%]"));
  EXPECT_THAT(ParseFailureSpec("x@1s").status().message(), HasSubstr("not a number"));
  EXPECT_THAT(ParseFailureSpec("10%@soon").status().message(), HasSubstr("time"));
}

// Seed 003's contention model: tasks with usage profiles slow down on an overloaded node.
Workload ProfiledJob(std::vector<int64_t> durations_ms, double cpu) {
  Workload w;
  Job j = MakeJob("p", 0, static_cast<int64_t>(durations_ms.size()), 1000);
  j.groups[0].task_durations_ms = durations_ms;
  j.groups[0].has_usage = true;
  j.groups[0].usage = {cpu, 0.1, 0.1};
  w.jobs.push_back(j);
  return w;
}

SimOptions OneNodeNoAm(const char* policy = "fair") {
  SimOptions o = Options(1, policy);
  o.am_resource = Resource();
  return o;
}

TEST(SimulatorTest, ContentionSlowsOverloadedNodes) {
  // Two tasks of 10 s using 75% CPU each: CPU load 1.5 -> both progress at 1/1.5: 15 s.
  auto r = RunSimulation(ProfiledJob({10000, 10000}, 0.75), OneNodeNoAm());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->contention);
  EXPECT_EQ(r->job_results[0].finish_ms, 15000);
  // With the thrashing penalty 1: rate 1 / (1.5 x 1.5): 22.5 s.
  SimOptions o = OneNodeNoAm();
  o.overload_penalty = 1;
  r = RunSimulation(ProfiledJob({10000, 10000}, 0.75), o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job_results[0].finish_ms, 22500);
  // 4 s and 10 s: the short one ends at 6 s (4 s of work at 2/3), then the other runs alone at
  // full speed for its remaining 6 s: 12 s.
  r = RunSimulation(ProfiledJob({4000, 10000}, 0.75), OneNodeNoAm());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job_results[0].finish_ms, 12000);
  // Within capacity nothing slows down.
  r = RunSimulation(ProfiledJob({10000, 10000}, 0.5), OneNodeNoAm());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job_results[0].finish_ms, 10000);
  ASSERT_FALSE(r->samples.empty());
  EXPECT_GT(r->samples.front().cpu_busy_mean, 0.99);
}

TEST(SimulatorTest, ReducesRunWithoutAnAmContainer) {
  Workload w;
  w.jobs.push_back(MakeJob("r", 0, 2, 10000, 1, 5000));
  SimOptions o = Options(1);
  o.am_resource = Resource();
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job_results[0].finish_ms, 15000);
}

TEST(SimulatorTest, FixedSlotsPerNode) {
  // 2 nodes x 2 slots: 8 tasks of 10 s run in two waves, though 8 vcores would fit them all.
  Workload w;
  w.jobs.push_back(MakeJob("s", 0, 8, 10000));
  SimOptions o = Options(2);
  o.am_resource = Resource();
  o.slots = 2;
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job_results[0].finish_ms, 20000);
  o.slots = 8;
  r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->job_results[0].finish_ms, 10000);
}

TEST(SimulatorTest, GoalsAndUtilityInTheReport) {
  Workload w = ProfiledJob({10000, 10000, 10000, 10000}, 0.5);
  w.jobs[0].goal_ms = 15000;
  Job late = MakeJob("late", 0, 2, 10000);
  late.goal_ms = 5000;
  w.jobs.push_back(late);
  auto r = RunSimulation(w, OneNodeNoAm("ras"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->job_series);
  nlohmann::json j = ReportToJson(*r);
  const auto& d = j["jobs_detail"];
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["goal_s"], 15.0);
  EXPECT_EQ(d[1]["goal_s"], 5.0);
  EXPECT_FALSE(d[1]["goal_met"].get<bool>());  // 2 x 10 s tasks cannot end by 5 s
  ASSERT_TRUE(d[0]["utility"].is_array());
  EXPECT_FALSE(d[0]["utility"].empty());
  // RAS never overloads: two 50%-CPU tasks at a time, each 10 s.
  for (const Sample& smp : r->samples) EXPECT_LE(smp.cpu_busy_mean, 1.0 + 1e-9);
  // Without goals or profiles there is no per-job series.
  Workload plain;
  plain.jobs.push_back(MakeJob("x", 0, 1, 1000));
  auto r2 = RunSimulation(plain, OneNodeNoAm());
  ASSERT_TRUE(r2.ok());
  EXPECT_FALSE(r2->job_series);
  EXPECT_FALSE(ReportToJson(*r2)["jobs_detail"][0].contains("utility"));
}

TEST(ClusterSpecTest, UniformAndErrors) {
  auto nodes = UniformCluster(3, Resource::Of(1024, 2), 2);
  ASSERT_TRUE(nodes.ok());
  EXPECT_EQ((*nodes)[2].name, "node0003");
  EXPECT_EQ((*nodes)[2].rack, "/rack01");
  EXPECT_THAT(UniformCluster(0, Resource::Of(1024, 2), 1).status().message(), HasSubstr(">= 1"));
  EXPECT_THAT(UniformCluster(1, Resource::Of(0, 2), 1).status().message(), HasSubstr("positive"));
  ResourceTypeRegistry reg;
  EXPECT_EQ(LoadClusterFile("/nonexistent.yaml", reg).status().code(), absl::StatusCode::kNotFound);
}

// AdaptCont masters (seed 002). 24 nodes x 8 slots; 10 one-minute map waves of different sizes.
SimOptions AdaptContOptions(const char* policy, adaptcont::AdaptContMode mode) {
  SimOptions o = Options(24, policy);
  adaptcont::AdaptContConfig c = adaptcont::DefaultAdaptContConfig();
  c.mode = mode;
  o.am_master = c;
  return o;
}

TEST(SimulatorAdaptContTest, DynamicSizesAmsByWaveAndNeverOverrunsThem) {
  Workload w;
  w.jobs.push_back(MakeJob("small", 0, 8, 60000, 0, 0, "a"));
  w.jobs.push_back(MakeJob("big", 0, 1000, 60000, 0, 0, "b"));
  SimOptions o = AdaptContOptions("fifo", adaptcont::AdaptContMode::kDynamic);
  o.scheduler = *QueuesForWorkload(w, "fifo");
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->am_master, "dynamic");
  ASSERT_EQ(r->job_results[0].am_containers.size(), 1u);
  // 8 tasks: one unit wave, 256 MB. The big job's queue shares the cluster with the small
  // one's (fifo weighs its queues equally; adaptcont/am_sizing.h): 96 of 192 slots, a wave of
  // 1-2 x W0 -> 512 MB / 1 vcore.
  EXPECT_EQ(r->job_results[0].am_containers[0], Resource::Of(256, 1));
  EXPECT_EQ(r->job_results[1].am_containers[0], Resource::Of(512, 1));
  EXPECT_THAT(r->job_results[1].am_decisions[0], HasSubstr("1000 map tasks"));
  EXPECT_THAT(r->job_results[1].am_decisions[0], HasSubstr("96 containers free"));
  EXPECT_EQ(r->am_memory_mb, 256 + 512);
  EXPECT_EQ(r->am_vcores, 2);
  EXPECT_EQ(r->am_memory_failures, 0);
  EXPECT_EQ(r->jobs_failed, 0);
  // It never ran more tasks at once than an AM of its size tracks, and not fewer
  // than the cluster could give it after the AMs.
  EXPECT_LE(r->job_results[1].max_running_tasks, 320);  // 768 MB would track 320
  EXPECT_GE(r->job_results[1].max_running_tasks, 180);
  // The wave series is in the samples.
  bool seen = false;
  for (const Sample& s : r->samples) {
    for (const JobSample& js : s.jobs) seen |= js.job == 1 && js.running_map > 100;
  }
  EXPECT_TRUE(seen);
}

TEST(SimulatorAdaptContTest, FairShareSizesLaterJobsForTheirShare) {
  Workload w;
  for (int i = 0; i < 4; ++i)
    w.jobs.push_back(MakeJob(absl::StrCat("j", i), 0, 500, 60000, 0, 0, absl::StrCat("q", i)));
  SimOptions o = AdaptContOptions("fair", adaptcont::AdaptContMode::kDynamic);
  o.scheduler = *QueuesForWorkload(w, "fair");
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  // Job k (0-based) shares the 192 slots with the k jobs before it: 192, 96, 64, 48.
  EXPECT_EQ(r->job_results[0].am_containers[0], Resource::Of(768, 2));
  EXPECT_EQ(r->job_results[1].am_containers[0], Resource::Of(512, 1));
  EXPECT_EQ(r->job_results[2].am_containers[0], Resource::Of(256, 1));
  EXPECT_EQ(r->job_results[3].am_containers[0], Resource::Of(256, 1));
  // A 256 MB AM tracks 64 tasks and so runs at most 64 at once, though more come free later.
  EXPECT_LE(r->job_results[3].max_running_tasks, 64);
  EXPECT_EQ(r->am_memory_failures, 0);
  EXPECT_EQ(r->jobs_failed, 0);
}

TEST(SimulatorAdaptContTest, TooSmallFixedAmIsKilledForMemoryAndTheJobFails) {
  // A fixed 512 MB AM tracks 192 tasks; this job gets more at once, so each attempt is killed
  // for memory, and yarn-default retries the same size until max attempts.
  Workload w;
  w.jobs.push_back(MakeJob("huge", 0, 1000, 60000));
  SimOptions o = AdaptContOptions("fifo", adaptcont::AdaptContMode::kYarnDefault);
  o.nodes = *UniformCluster(40, Resource::Of(8192, 8), 2);  // 320 slots
  o.am_master->yarn_default_am = {512, 1};
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->am_memory_failures, 2);
  EXPECT_EQ(r->jobs_failed, 1);
  EXPECT_EQ(r->job_results[0].am_containers.size(), 2u);
  EXPECT_THAT(r->warnings[0], HasSubstr("killed for memory"));

  // Dynamic sizes the same job for its wave (320 -> 1280 MB) and it succeeds first time.
  o.am_master->mode = adaptcont::AdaptContMode::kDynamic;
  r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->am_memory_failures, 0);
  EXPECT_EQ(r->jobs_failed, 0);
  EXPECT_EQ(r->job_results[0].am_containers[0], Resource::Of(1280, 3));
}

TEST(SimulatorAdaptContTest, LostAmIsResizedForTheSmallerCluster) {
  // Half the cluster goes while the job runs; if its AM was there, the next attempt is sized
  // for the smaller cluster. Either way no attempt is killed for memory.
  Workload w;
  w.jobs.push_back(MakeJob("j", 0, 2000, 60000));
  SimOptions o = AdaptContOptions("fifo", adaptcont::AdaptContMode::kDynamic);
  o.failures.push_back(*ParseFailureSpec("50%@90s"));
  o.seed = 1;
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->am_memory_failures, 0);
  const JobResult& j = r->job_results[0];
  // With this seed the AM's node is among the lost (checked, so the test keeps its point).
  ASSERT_EQ(j.am_containers.size(), 2u);
  EXPECT_EQ(j.am_containers[0], Resource::Of(768, 2));  // 192 slots
  EXPECT_EQ(j.am_containers[1], Resource::Of(512, 1));  // 96 slots left
  EXPECT_THAT(j.am_decisions[1], HasSubstr("lost"));
  EXPECT_EQ(r->jobs_failed, 0);
}

TEST(SimulatorAdaptContTest, ReportCarriesAmFields) {
  Workload w;
  w.jobs.push_back(MakeJob("j", 0, 10, 1000));
  auto r = RunSimulation(w, AdaptContOptions("fair", adaptcont::AdaptContMode::kPool));
  ASSERT_TRUE(r.ok()) << r.status();
  nlohmann::json j = ReportToJson(*r);
  EXPECT_EQ(j["am_master"], "pool");
  EXPECT_EQ(j["am_memory_mb"], 512);
  EXPECT_EQ(j["am_vcores"], 1);
  EXPECT_EQ(j["am_memory_failures"], 0);
  EXPECT_EQ(j["jobs_detail"][0]["am_containers"][0]["memory_mb"], 512);
  EXPECT_TRUE(j["jobs_detail"][0].contains("running_tasks"));
  EXPECT_FALSE(j["jobs_detail"][0].contains("utility"));
}

}  // namespace
}  // namespace weft::sim
