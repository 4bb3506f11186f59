// Copyright Weft authors. `weft bench rm`: a real ResourceManager under load over gRPC.
#ifndef WEFT_RM_RM_BENCH_H_
#define WEFT_RM_RM_BENCH_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/resource.h"

namespace weft::rm {

struct RmBenchOptions {
  int32_t nodes = 5000;  // simulated NMs, each heartbeating every interval
  int64_t heartbeat_interval_ms = 1000;
  int32_t apps = 100;                  // simulated AMs
  int32_t containers_per_app = 100;    // each AM keeps this many containers asked or running
  int64_t container_run_ms = 2000;     // a container "runs" this long on its simulated node
  int64_t allocate_interval_ms = 200;  // between an AM's Allocate calls
  int64_t duration_ms = 30000;         // measured time, after all nodes registered
  int32_t client_threads = 4;          // threads driving the simulated NMs and AMs
  Resource node_capability = Resource::Of(65536, 32);
  Resource container = Resource::Of(1024, 1);
};

struct LatencyMs {
  double p50 = 0, p99 = 0, max = 0;
  int64_t count = 0;
};

struct RmBenchReport {
  int32_t nodes = 0, apps = 0;
  double duration_s = 0;
  double heartbeats_per_s = 0;
  LatencyMs heartbeat;
  LatencyMs allocate;
  double containers_allocated_per_s = 0;  // containers handed to AMs, per second
  int64_t containers_allocated = 0;
  LatencyMs submit_to_am_running;  // SubmitApplication -> RegisterApplicationMaster ok
  int64_t rpc_errors = 0;
  // Where the RM loop's time went over the measured interval (rm/loop_work.h): the share of
  // wall time its thread was busy, and its time per heartbeat, per Allocate call and per
  // container allocated (passes' time shared over the containers they allocated), µs.
  double loop_busy_fraction = 0;
  double loop_us_per_heartbeat = 0;
  double loop_us_per_allocate = 0;
  double loop_us_per_allocation = 0;
  // The process's resident memory at the end, MiB, and its growth from before the RM started
  // per simulated NM, KiB. The simulated NMs and AMs run in this process: their client state
  // (about 0.1 KiB a node) is included.
  double rm_rss_mb = 0;
  double rss_kb_per_nm = 0;
  std::string ToJson() const;
  std::string ToText() const;
};

// Starts an RmServer on 127.0.0.1:0 in this process and drives it. Fails on setup errors
// (invalid options, a node that cannot register).
absl::StatusOr<RmBenchReport> RunRmBench(const RmBenchOptions& options);

}  // namespace weft::rm

#endif  // WEFT_RM_RM_BENCH_H_
