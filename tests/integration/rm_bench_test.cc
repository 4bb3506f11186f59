#include "rm/rm_bench.h"

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

// 20 NMs heartbeating every 100 ms, 4 AMs keeping 10 containers each, 2 client threads.
RmBenchOptions SmallCluster() {
  RmBenchOptions o;
  o.nodes = 20;
  o.apps = 4;
  o.containers_per_app = 10;
  o.heartbeat_interval_ms = 100;
  o.client_threads = 2;
  return o;
}

// Runs `o`, which must succeed with no RPC error and every AM registered.
RmBenchReport RunClean(const RmBenchOptions& o) {
  absl::StatusOr<RmBenchReport> r = RunRmBench(o);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  EXPECT_EQ(r->rpc_errors, 0);
  EXPECT_EQ(r->submit_to_am_running.count, o.apps);
  return *std::move(r);
}

// A small run: the harness works and the RM allocates under it. Figures are measured by
// `weft bench rm`, never asserted here.
TEST(RmBenchTest, SmallRunAllocatesAndHeartbeats) {
  RmBenchOptions o = SmallCluster();
  o.container_run_ms = 200;
  o.duration_ms = 2000;
  const RmBenchReport r = RunClean(o);
  EXPECT_GT(r.heartbeat.count, 100);
  // Containers complete after 200 ms and are asked for again: well over one round.
  EXPECT_GT(r.containers_allocated, 40);
  EXPECT_NE(r.ToJson().find("heartbeats_per_s"), std::string::npos);
}

// With a warm-up, what happens before it is not measured: containers that never end are all
// allocated in the warm-up (40 of them, well within 1.5 s), so the measured second allocates
// none; without the warm-up it would count all 40. Every AM's registration still counts.
TEST(RmBenchTest, TheWarmUpIsNotMeasured) {
  RmBenchOptions o = SmallCluster();
  o.container_run_ms = 600000;
  o.warmup_ms = 1500;
  o.duration_ms = 1000;
  const RmBenchReport r = RunClean(o);
  EXPECT_EQ(r.containers_allocated, 0);
  EXPECT_GT(r.heartbeat.count, 50);  // the measured second's heartbeats
  EXPECT_DOUBLE_EQ(r.warmup_s, 1.5);
  EXPECT_NE(r.ToJson().find("\"warmup_s\": 1.5"), std::string::npos) << r.ToJson();
}

// An ask sets the RM's outstanding count. A simulated AM that asked again before receiving
// what its last ask got would be given those containers twice over; each AM here asks for 10
// containers that never end, so the cluster (room for far more) hands out exactly 40.
TEST(RmBenchTest, AnAmIsNeverGivenMoreThanItKeepsAskedFor) {
  RmBenchOptions o = SmallCluster();
  o.container_run_ms = 600000;
  o.duration_ms = 2000;
  EXPECT_EQ(RunClean(o).containers_allocated, 40);
}

// Probes every 100 ms of a measured second: about ten of them ran on the loop, each timed, and
// the report says so.
TEST(RmBenchTest, LoopProbesRunThroughTheMeasuredInterval) {
  RmBenchOptions o = SmallCluster();
  o.container_run_ms = 200;
  o.duration_ms = 1000;
  o.loop_probe_ms = 100;
  const RmBenchReport r = RunClean(o);
  EXPECT_GE(r.loop_probes, 8);
  EXPECT_LE(r.loop_probes, 11);
  EXPECT_GT(r.loop_us_per_probe, 0);
  EXPECT_NE(r.ToJson().find("\"loop_us_per_probe\""), std::string::npos);
  EXPECT_NE(r.ToText().find("a probe"), std::string::npos) << r.ToText();
  // Without the option, none.
  o.loop_probe_ms = 0;
  EXPECT_EQ(RunClean(o).loop_probes, 0);
}

TEST(RmBenchTest, BadOptionsAreRefused) {
  RmBenchOptions o;
  o.nodes = 0;
  EXPECT_EQ(RunRmBench(o).status().code(), absl::StatusCode::kInvalidArgument);
  RmBenchOptions negative_warmup;
  negative_warmup.warmup_ms = -1;
  auto r = RunRmBench(negative_warmup);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("warm-up"), std::string::npos) << r.status();
  RmBenchOptions negative_probe;
  negative_probe.loop_probe_ms = -5;
  r = RunRmBench(negative_probe);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("--loop-probe-ms -5"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace weft::rm
