#include "rm/rm_bench.h"

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

// A small run: the harness works and the RM allocates under it. Figures are measured by
// `weft bench rm`, never asserted here.
TEST(RmBenchTest, SmallRunAllocatesAndHeartbeats) {
  RmBenchOptions o;
  o.nodes = 20;
  o.apps = 4;
  o.containers_per_app = 10;
  o.container_run_ms = 200;
  o.heartbeat_interval_ms = 100;
  o.duration_ms = 2000;
  o.client_threads = 2;
  auto r = RunRmBench(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->rpc_errors, 0);
  EXPECT_GT(r->heartbeat.count, 100);
  EXPECT_EQ(r->submit_to_am_running.count, 4);
  // Containers complete after 200 ms and are asked for again: well over one round.
  EXPECT_GT(r->containers_allocated, 40);
  EXPECT_NE(r->ToJson().find("heartbeats_per_s"), std::string::npos);
}

TEST(RmBenchTest, BadOptionsAreRefused) {
  RmBenchOptions o;
  o.nodes = 0;
  EXPECT_EQ(RunRmBench(o).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::rm
