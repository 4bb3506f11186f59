// Copyright Weft authors. `weft sim` with sub-clusters (seed 004): each sub-cluster scheduled
// by its own core, jobs homed by the router policy and spanning by the AMRMProxy policy.
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/cluster_spec.h"
#include "sim/report.h"
#include "sim/simulator.h"

namespace weft::sim {
namespace {

using ::testing::HasSubstr;

Job MapJob(std::string id, int64_t submit_ms, int64_t maps, int64_t map_ms) {
  Job j;
  j.id = std::move(id);
  j.queue = "default";
  j.submit_ms = submit_ms;
  TaskGroup m;
  m.name = "map";
  m.count = maps;
  m.duration_ms = map_ms;
  m.resource = Resource::Of(1024, 1);
  j.groups.push_back(m);
  return j;
}

// 6 nodes of 8 vcores on 3 racks; with 3 sub-clusters, 2 nodes (16 containers) each.
SimOptions FederationOptions(int sub_clusters, int replicas = 0) {
  SimOptions o;
  o.nodes = *UniformCluster(6, Resource::Of(8192, 8), 3);
  o.scheduler = scheduler::DefaultSchedulerConfig();
  o.scheduler.policy = "fair";
  o.replicas = replicas;
  o.federation.sub_clusters = sub_clusters;
  return o;
}

TEST(SimFederationTest, JobLargerThanOneSubClusterSpansAndFinishes) {
  Workload w;
  w.jobs.push_back(MapJob("big", 0, 40, 10000));  // 40 maps + AM > 16 containers of a home
  auto fed = RunSimulation(w, FederationOptions(3));
  ASSERT_TRUE(fed.ok()) << fed.status();
  const JobResult& j = fed->job_results[0];
  ASSERT_GE(j.finish_ms, 0);
  EXPECT_FALSE(j.failed);
  EXPECT_EQ(fed->allocations, 1 + 40);  // one AM (in the home), unmanaged AMs elsewhere
  EXPECT_EQ(fed->jobs_spanning, 1);
  ASSERT_EQ(fed->sub_clusters.size(), 3u);
  for (const SubClusterResult& sc : fed->sub_clusters) {
    EXPECT_EQ(sc.nodes, 2) << sc.id;
    EXPECT_GT(sc.allocations, 0) << sc.id;
    EXPECT_GT(sc.utilization_mean[0], 0) << sc.id;
  }
  EXPECT_EQ(fed->router_policy, "load-based");
  EXPECT_EQ(fed->amrm_policy, "locality-multicast");
  // 41 containers fit the 48 of the federation at once: one wave of 10 s.
  EXPECT_LE(j.finish_ms, 13000);

  // Kept home, it runs in waves of 15 on its 2 nodes.
  SimOptions home_only = FederationOptions(3);
  home_only.federation.amrm_policy = "home-only";
  auto home = RunSimulation(w, home_only);
  ASSERT_TRUE(home.ok()) << home.status();
  EXPECT_EQ(home->jobs_spanning, 0);
  EXPECT_GE(home->job_results[0].finish_ms, 30000);
}

TEST(SimFederationTest, LocalityAsksGoWhereTheirNodesAre) {
  Workload w;
  for (int i = 0; i < 6; ++i) w.jobs.push_back(MapJob("j" + std::to_string(i), i * 1000, 12, 8000));
  auto r = RunSimulation(w, FederationOptions(3, /*replicas=*/3));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 0);
  for (const JobResult& j : r->job_results) EXPECT_GE(j.finish_ms, 0) << j.id;
  // Map tasks prefer random hosts all over the federation: asks follow them and most
  // containers are node-local, as in the monolithic run.
  EXPECT_GT(r->node_local, r->allocations / 2);
  EXPECT_GT(r->jobs_spanning, 0);
}

TEST(SimFederationTest, OneSubClusterIsTheMonolithicRun) {
  Workload w;
  for (int i = 0; i < 8; ++i) {
    w.jobs.push_back(MapJob("j" + std::to_string(i), i * 3000, 10 + 7 * i, 5000 + 1000 * i));
  }
  SimOptions mono = FederationOptions(1, 3);
  SimOptions one = mono;
  one.federation.router_policy = "uniform";  // irrelevant with one sub-cluster
  one.federation.amrm_policy = "broadcast";
  one.federation.headroom_alpha = 0.3;
  auto a = RunSimulation(w, mono);
  auto b = RunSimulation(w, one);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->makespan_ms, b->makespan_ms);
  EXPECT_EQ(a->allocations, b->allocations);
  EXPECT_EQ(a->node_local, b->node_local);
  EXPECT_EQ(a->rack_local, b->rack_local);
  EXPECT_EQ(a->utilization_mean, b->utilization_mean);
  for (size_t j = 0; j < a->job_results.size(); ++j) {
    EXPECT_EQ(a->job_results[j].finish_ms, b->job_results[j].finish_ms) << j;
  }
  ASSERT_EQ(b->sub_clusters.size(), 1u);
  EXPECT_EQ(b->sub_clusters[0].nodes, 6);
  EXPECT_EQ(b->sub_clusters[0].allocations, b->allocations);
  EXPECT_EQ(b->sub_clusters[0].apps_homed, 8);
  for (size_t t = 0; t < b->utilization_mean.size(); ++t) {
    EXPECT_DOUBLE_EQ(b->sub_clusters[0].utilization_mean[t], b->utilization_mean[t]);
  }
  EXPECT_EQ(b->jobs_spanning, 0);
  EXPECT_EQ(b->router_policy, "");
  EXPECT_DOUBLE_EQ(b->scheduler_wall_sum_s, b->scheduler_wall_s);
  nlohmann::json json = ReportToJson(*b);
  EXPECT_EQ(json["federation"]["sub_clusters"], 1);
}

TEST(SimFederationTest, SameSeedSameRun) {
  Workload w;
  for (int i = 0; i < 10; ++i) w.jobs.push_back(MapJob("j" + std::to_string(i), i * 500, 9, 4000));
  SimOptions o = FederationOptions(3, 3);
  o.federation.router_policy = "uniform";
  auto a = RunSimulation(w, o);
  auto b = RunSimulation(w, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->makespan_ms, b->makespan_ms);
  EXPECT_EQ(a->jobs_spanning, b->jobs_spanning);
  for (size_t s = 0; s < 3; ++s) {
    EXPECT_EQ(a->sub_clusters[s].apps_homed, b->sub_clusters[s].apps_homed);
    EXPECT_EQ(a->sub_clusters[s].allocations, b->sub_clusters[s].allocations);
  }
}

TEST(SimFederationTest, RejectRouterPolicyFailsEveryJobNamingTheQueue) {
  Workload w;
  w.jobs.push_back(MapJob("j", 0, 2, 1000));
  SimOptions o = FederationOptions(2);
  o.federation.router_policy = "reject";
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 1);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_THAT(r->warnings.front(), HasSubstr("'default'"));
}

// Nine jobs submitted within one heartbeat, read against the same snapshot in which the three
// sub-clusters look equally free. Without in-flight accounting the load-based router sends all
// nine to the first; counting its own placements it sends three to each.
TEST(SimFederationTest, StaleSnapshotsMakeLoadBasedHerdUnlessItCountsItsPlacements) {
  Workload w;
  for (int i = 0; i < 9; ++i) {
    w.jobs.push_back(MapJob("j" + std::to_string(i), 100 + 10 * i, 4, 20000));
  }
  for (bool in_flight : {false, true}) {
    SimOptions o = FederationOptions(3);
    o.federation.amrm_policy = "home-only";  // a job runs where it is homed
    o.federation.heartbeat_ms = 10000;
    o.federation.cache_ttl_ms = 10000;
    o.federation.in_flight_accounting = in_flight;
    auto r = RunSimulation(w, o);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->jobs_failed, 0);
    ASSERT_EQ(r->sub_clusters.size(), 3u);
    std::vector<int64_t> homed;
    for (const SubClusterResult& sc : r->sub_clusters) homed.push_back(sc.apps_homed);
    if (in_flight) {
      EXPECT_THAT(homed, ::testing::ElementsAre(3, 3, 3));
      EXPECT_LT(r->homed_apps_cv_over_time, 0.1);
    } else {
      EXPECT_THAT(homed, ::testing::ElementsAre(9, 0, 0));
      EXPECT_GT(r->homed_apps_cv_over_time, 1.0);  // sqrt(2) while all nine run
    }
    EXPECT_EQ(r->federation.in_flight_accounting, in_flight);
    nlohmann::json json = ReportToJson(*r);
    EXPECT_EQ(json["federation"]["model"]["in_flight_accounting"], in_flight);
    EXPECT_EQ(json["federation"]["model"]["sub_cluster_heartbeat_ms"], 10000);
    EXPECT_DOUBLE_EQ(json["federation"]["apps_per_rm"]["homed"]["max"].get<double>(),
                     in_flight ? 3.0 : 9.0);
  }
}

// Read live (no heartbeat lag, no cache), load-based herds all the same: an app's load shows
// only once its containers are allocated, after the burst was placed.
TEST(SimFederationTest, LiveLoadHerdsTooWithoutInFlightAccounting) {
  Workload w;
  for (int i = 0; i < 6; ++i) w.jobs.push_back(MapJob("j" + std::to_string(i), 100, 2, 5000));
  SimOptions o = FederationOptions(3);
  o.federation.amrm_policy = "home-only";
  o.federation.heartbeat_ms = 0;
  o.federation.cache_ttl_ms = 0;
  o.federation.in_flight_accounting = false;
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->sub_clusters[0].apps_homed, 6);
  o.federation.in_flight_accounting = true;
  r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const SubClusterResult& sc : r->sub_clusters) EXPECT_EQ(sc.apps_homed, 2) << sc.id;
}

TEST(SimFederationTest, AppsPerRmCountUnmanagedAms) {
  Workload w;
  w.jobs.push_back(MapJob("big", 0, 40, 10000));  // spans all three sub-clusters
  auto r = RunSimulation(w, FederationOptions(3));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->jobs_spanning, 1);
  int64_t homed = 0, uams = 0;
  for (const SubClusterResult& sc : r->sub_clusters) {
    homed += sc.apps_homed;
    uams += sc.uams;
    EXPECT_EQ(sc.apps_homed + sc.uams, 1) << sc.id;  // the app itself, or its UAM
    EXPECT_EQ(sc.apps_peak, 1) << sc.id;
    EXPECT_GT(sc.apps_mean, 0) << sc.id;
    EXPECT_LE(sc.apps_mean, 1) << sc.id;
  }
  EXPECT_EQ(homed, 1);
  EXPECT_EQ(uams, 2);
  nlohmann::json json = ReportToJson(*r);
  const auto& apr = json["federation"]["apps_per_rm"];
  EXPECT_EQ(apr["uams"], 2);
  EXPECT_DOUBLE_EQ(apr["apps"]["max"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(apr["apps"]["mean"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(apr["apps"]["cv"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(apr["homed"]["max"].get<double>(), 1.0);
  for (const auto& sc : json["federation"]["per_sub_cluster"]) {
    EXPECT_EQ(sc["apps"], 1);
    EXPECT_EQ(sc["apps_peak"], 1);
  }
  // Kept home: no UAMs.
  SimOptions home_only = FederationOptions(3);
  home_only.federation.amrm_policy = "home-only";
  auto h = RunSimulation(w, home_only);
  ASSERT_TRUE(h.ok()) << h.status();
  for (const SubClusterResult& sc : h->sub_clusters) EXPECT_EQ(sc.uams, 0) << sc.id;
}

TEST(SimFederationTest, StoreLatencyDelaysTheSubmissionTwice) {
  Workload w;
  w.jobs.push_back(MapJob("j", 0, 2, 1000));
  SimOptions o = FederationOptions(3);
  o.federation.store_latency_ms = 3000;  // the home write and its read-back: 6 s
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 0);
  EXPECT_GE(r->job_results[0].start_ms, 6000);
  o.federation.store_latency_ms = 0;
  r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LT(r->job_results[0].start_ms, 6000);
}

TEST(SimFederationTest, DeferredSubmissionToAMissingQueueFailsTheJob) {
  Workload w;
  w.jobs.push_back(MapJob("j", 0, 2, 1000));
  w.jobs[0].queue = "nope";
  SimOptions o = FederationOptions(3);
  o.federation.store_latency_ms = 50;
  auto r = RunSimulation(w, o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->jobs_failed, 1);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_THAT(r->warnings.front(), HasSubstr("rejected"));
}

TEST(SimFederationTest, UamLaunchTimeDelaysContainersInSecondaries) {
  Workload w;
  w.jobs.push_back(MapJob("big", 0, 40, 10000));
  SimOptions o = FederationOptions(3);
  o.federation.uam_launch_ms = 0;
  auto fast = RunSimulation(w, o);
  o.federation.uam_launch_ms = 8000;
  auto slow = RunSimulation(w, o);
  ASSERT_TRUE(fast.ok() && slow.ok());
  EXPECT_LE(fast->job_results[0].finish_ms, 13000);
  // 15 tasks run at home from the start; the 25 in the secondaries start 8 s later.
  EXPECT_GE(slow->job_results[0].finish_ms, 8000 + 10000);
  EXPECT_EQ(slow->jobs_spanning, 1);
}

TEST(SimFederationTest, BadOptionsAreRefused) {
  Workload w;
  w.jobs.push_back(MapJob("j", 0, 2, 1000));
  struct Case {
    void (*set)(SimOptions&);
    const char* want;
  } cases[] = {
      {[](SimOptions& o) { o.federation.sub_clusters = 0; }, "sub-clusters 0 must be >= 1"},
      {[](SimOptions& o) { o.federation.sub_clusters = 7; },
       "must not exceed the number of nodes (6)"},
      {[](SimOptions& o) { o.federation.router_policy = "round-robin"; }, "'round-robin'"},
      {[](SimOptions& o) { o.federation.amrm_policy = "nope"; }, "unknown AMRMProxy policy 'nope'"},
      {[](SimOptions& o) { o.federation.headroom_alpha = 1.5; }, "headroom alpha 1.5"},
      {[](SimOptions& o) { o.federation.heartbeat_ms = -1; },
       "sub-cluster heartbeat -1 ms must be in 0..3600000 ms"},
      {[](SimOptions& o) { o.federation.cache_ttl_ms = 3600001; }, "cache TTL 3600001 ms"},
      {[](SimOptions& o) { o.federation.store_latency_ms = -5; }, "store latency -5 ms"},
      {[](SimOptions& o) { o.federation.uam_launch_ms = -2; }, "UAM launch time -2 ms"},
      {[](SimOptions& o) {
         o.federation.sub_clusters = 2;
         o.am_master = adaptcont::DefaultAdaptContConfig();
       },
       "monolithic cluster only"},
  };
  for (const Case& c : cases) {
    SimOptions o = FederationOptions(1);
    c.set(o);
    auto r = RunSimulation(w, o);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << c.want;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want));
  }
}

}  // namespace
}  // namespace weft::sim
