// Copyright Weft authors.
#include "sim/gpu_sim.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "scheduler/gpu/gpu_placement.h"
#include "sim/gpu_trace.h"

namespace weft::sim {
namespace {

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            absl::StrCat("weft_gpu_sim_test_", getpid(), "_", name))
                               .string();
  std::ofstream(path) << text;
  return path;
}

const char kNodes[] =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n0,32000,262144,0,\n"
    "n1,64000,262144,2,P100\n"
    "n2,96000,786432,8,V100M32\n"
    "n3,64000,262144,4,T4\n";

const char kPods[] =
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
    "deletion_time,scheduled_time\n"
    "p0,4000,15258,1,500,,LS,Running,0,10,0\n"
    "p1,8000,30000,2,1000,,LS,Running,0,10,0\n"
    "p2,2000,4000,0,0,,BE,Running,0,10,0\n"
    "p3,6000,12288,1,250,T4|P100,LS,Running,0,10,0\n"
    "p4,12000,24576,1,1000,,LS,Running,0,10,0\n";

TEST(GpuTraceTest, ReadsThePublishedFormat) {
  auto nodes = ReadGpuNodeList(WriteTemp("nodes.csv", kNodes));
  ASSERT_TRUE(nodes.ok()) << nodes.status();
  ASSERT_EQ(nodes->size(), 4u);
  EXPECT_EQ((*nodes)[0].gpus, 0);
  EXPECT_EQ((*nodes)[0].model, "");
  EXPECT_EQ((*nodes)[2].gpus, 8);
  EXPECT_EQ((*nodes)[2].model, "V100M32");
  auto pods = ReadGpuPodList(WriteTemp("pods.csv", kPods));
  ASSERT_TRUE(pods.ok()) << pods.status();
  ASSERT_EQ(pods->size(), 5u);
  EXPECT_EQ((*pods)[0].ask.gpu_milli, 500);
  EXPECT_EQ((*pods)[1].ask.gpu_milli, 2000);
  EXPECT_EQ((*pods)[2].ask.gpu_milli, 0);
  EXPECT_EQ((*pods)[3].ask.allowed_models, (std::vector<std::string>{"T4", "P100"}));
  EXPECT_EQ((*pods)[4].ask.memory_mib, 24576);
}

// The vendored trace, as published (data/traces/alibaba-gpu-v2023/README.md).
TEST(GpuTraceTest, ReadsTheVendoredTrace) {
  const std::string dir = std::string(WEFT_TEST_SOURCE_DIR) + "/data/traces/alibaba-gpu-v2023/";
  auto all = ReadGpuNodeList(dir + "openb_node_list_all_node.csv");
  ASSERT_TRUE(all.ok()) << all.status();
  auto gpu_nodes = ReadGpuNodeList(dir + "openb_node_list_gpu_node.csv");
  ASSERT_TRUE(gpu_nodes.ok()) << gpu_nodes.status();
  EXPECT_EQ(all->size(), 1523u);
  EXPECT_EQ(gpu_nodes->size(), 1213u);
  int64_t gpus = 0;
  for (const GpuTraceNode& n : *gpu_nodes) gpus += n.gpus;
  EXPECT_EQ(gpus, 6212);
  auto pods = ReadGpuPodList(dir + "openb_pod_list_default.csv");
  ASSERT_TRUE(pods.ok()) << pods.status();
  EXPECT_EQ(pods->size(), 8152u);
  int64_t cpu_only = 0, demand = 0;
  for (const GpuTracePod& p : *pods) {
    cpu_only += p.ask.gpu_milli == 0;
    demand += p.ask.gpu_milli;
  }
  EXPECT_EQ(cpu_only, 1088);
  EXPECT_EQ(demand, 6086800);
}

TEST(GpuTraceTest, ErrorsNameFileLineAndField) {
  const std::string bad_gpu =
      WriteTemp("bad_nodes.csv",
                "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,1024,2,T4\nn1,32000,1024,x,T4\n");
  auto n = ReadGpuNodeList(bad_gpu);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find(bad_gpu + ":3: field 'gpu' is 'x'"), std::string::npos)
      << n.status();
  const std::string bad_milli =
      WriteTemp("bad_pods.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
                                "p0,1000,1024,2,500,\n");
  auto p = ReadGpuPodList(bad_milli);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(bad_milli + ":2: field 'gpu_milli' is 500"),
            std::string::npos)
      << p.status();
  auto missing = ReadGpuPodList(WriteTemp("no_col.csv", "name,cpu_milli\np,1\n"));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no column 'memory_mib'"), std::string::npos);
  EXPECT_EQ(ReadGpuNodeList("/nonexistent/nodes.csv").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(GpuSimTest, RunsToTheTunedDemandDeterministically) {
  auto nodes = ReadGpuNodeList(WriteTemp("nodes.csv", kNodes));
  auto pods = ReadGpuPodList(WriteTemp("pods.csv", kPods));
  ASSERT_TRUE(nodes.ok() && pods.ok());
  for (const std::string& policy : gpu::GpuPlacementNames()) {
    GpuSimOptions o;
    o.policy = policy;
    o.seed = 3;
    o.tune = 1.3;
    auto a = RunGpuSim(*nodes, *pods, o);
    ASSERT_TRUE(a.ok()) << a.status();
    auto b = RunGpuSim(*nodes, *pods, o);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(GpuSimResultToJson(*a), GpuSimResultToJson(*b)) << policy;
    EXPECT_EQ(a->total_gpus, 14);
    // Arrived demand stops within one pod (at most 2 GPUs here) of 130% of 14 GPUs.
    EXPECT_LE(a->arrived_gpu_milli, 18200);
    EXPECT_GT(a->arrived_gpu_milli, 18200 - 2000);
    EXPECT_LE(a->final.allocation_ratio, 100.0);
    EXPECT_GT(a->pods_failed, 0) << policy;  // more demand than GPUs
    EXPECT_NEAR(a->final.unallocated_gpus,
                14.0 * (1 - a->final.allocation_ratio / 100), 1e-9);
    ASSERT_FALSE(a->series.empty());
    for (size_t i = 1; i < a->series.size(); ++i)
      EXPECT_LT(a->series[i - 1].arrived_pct, a->series[i].arrived_pct);
    EXPECT_EQ(a->series.back().arrived_pct, a->final.arrived_pct);
  }
}

TEST(GpuSimTest, BadOptionsAreRefused) {
  auto nodes = ReadGpuNodeList(WriteTemp("nodes.csv", kNodes));
  auto pods = ReadGpuPodList(WriteTemp("pods.csv", kPods));
  ASSERT_TRUE(nodes.ok() && pods.ok());
  GpuSimOptions o;
  o.policy = "tetris";
  auto r = RunGpuSim(*nodes, *pods, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fgd"), std::string::npos);
  o.policy = "fgd";
  o.tune = 0;
  EXPECT_FALSE(RunGpuSim(*nodes, *pods, o).ok());
  GpuSimCommand c;
  c.pods_path = "/nonexistent.csv";
  c.policy = "fgd";
  auto s = RunGpuSimCommand(c);
  EXPECT_NE(s.message().find("--cluster-file"), std::string::npos) << s;
}

}  // namespace
}  // namespace weft::sim
