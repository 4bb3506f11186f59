// Copyright Weft authors. The ResourceManager and the simulator size an AM with the same
// function (adaptcont/am_sizing.h): the same job on the same cluster and queues gets the same
// AM container, with the same reasons, in both.
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"
#include "scheduler/registry.h"
#include "sim/simulator.h"

namespace weft {
namespace {

constexpr const char* kQueues = R"(
policy: capacity
queues:
  root:
    children:
      etl: {capacity: 40, maximum-capacity: 60}
      adhoc: {capacity: 60}
)";

struct Case {
  std::string queue;
  int64_t maps;
  int64_t reduces;
  Resource worker;
};

class AmSizingParityTest : public ::testing::TestWithParam<Case> {};

TEST_P(AmSizingParityTest, RmAndSimulatorDecideTheSameAm) {
  const Case& c = GetParam();
  ResourceTypeRegistry registry;
  auto queues = scheduler::ParseSchedulerConfig(kQueues, registry, "parity");
  ASSERT_TRUE(queues.ok()) << queues.status();
  adaptcont::AdaptContConfig adaptcont = adaptcont::DefaultAdaptContConfig();
  const Resource node = Resource::Of(16384, 16);
  const int kNodes = 6;

  // The RM: six nodes, then (once nodes have settled) the app asks the RM to size its AM.
  rm::RmOptions options = rm::RmHarness::DefaultOptions();
  options.scheduler = *queues;
  options.adaptcont = adaptcont;
  rm::RmHarness h(options);
  for (int i = 0; i < kNodes; ++i) h.AddNode("n" + std::to_string(i) + ":1", 16384, 16);
  h.loop.Advance(options.max_allocation_wait_ms);
  auto id = h.rm().NewApplication();
  ASSERT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.set_queue(c.queue);
  ctx.mutable_am_container_spec()->add_command("true");
  v1::AmSizingRequest* sizing = ctx.mutable_am_sizing();
  sizing->set_enabled(true);
  sizing->set_split_bytes(adaptcont.split_bytes);
  sizing->set_input_bytes(c.maps * adaptcont.split_bytes);
  sizing->set_reduce_tasks(c.reduces);
  (*sizing->mutable_worker_resource()->mutable_values())["memory-mb"] = c.worker[kMemoryMb];
  (*sizing->mutable_worker_resource()->mutable_values())["vcores"] = c.worker[kVcores];
  ASSERT_TRUE(h.rm().SubmitApplication(ctx, "alice").ok());
  auto report = h.rm().GetApplication(id->application_id());
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->am_sizing_decisions_size(), 1);
  const std::string rm_decision = report->am_sizing_decisions(0);

  // The simulator: the same cluster, queues and job.
  sim::Workload workload;
  sim::Job job;
  job.id = "j1";
  job.queue = c.queue;
  job.user = "alice";
  sim::TaskGroup map;
  map.name = "map";
  map.count = c.maps;
  map.resource = c.worker;
  map.duration_ms = 1000;
  job.groups.push_back(map);
  if (c.reduces > 0) {
    sim::TaskGroup reduce = map;
    reduce.name = "reduce";
    reduce.count = c.reduces;
    reduce.depends_on = {0};
    job.groups.push_back(reduce);
  }
  workload.jobs.push_back(job);
  sim::SimOptions sim_options;
  sim_options.scheduler = *queues;
  sim_options.registry = registry;
  sim_options.am_master = adaptcont;
  sim_options.replicas = 0;
  for (int i = 0; i < kNodes; ++i)
    sim_options.nodes.push_back({"n" + std::to_string(i), "/r", node});
  auto run = sim::RunSimulation(workload, sim_options);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->job_results.size(), 1u);
  ASSERT_FALSE(run->job_results[0].am_decisions.empty());
  const Resource& sim_am = run->job_results[0].am_containers[0];
  const std::string sim_decision = absl::StrCat("attempt 1: AM ", registry.Format(sim_am), " (",
                                                run->job_results[0].am_decisions[0], ")");

  EXPECT_EQ(rm_decision, sim_decision);
  EXPECT_EQ(report->am_resource().values().at("memory-mb"), sim_am[kMemoryMb]);
  EXPECT_EQ(report->am_resource().values().at("vcores"), sim_am[kVcores]);
}

INSTANTIATE_TEST_SUITE_P(Jobs, AmSizingParityTest,
                         ::testing::Values(Case{"etl", 40, 0, Resource::Of(1024, 1)},
                                           Case{"etl", 2000, 20, Resource::Of(2048, 1)},
                                           Case{"adhoc", 300, 10, Resource::Of(1024, 1)},
                                           Case{"adhoc", 5, 1, Resource::Of(4096, 2)}));

}  // namespace
}  // namespace weft
