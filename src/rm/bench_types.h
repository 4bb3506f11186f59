// Copyright Weft authors. What `weft bench rm` (rm_bench.h) and its simulated NMs (nm_sim.h)
// share: when a simulated NM heartbeats, and how latencies are summarised.
#ifndef WEFT_RM_BENCH_TYPES_H_
#define WEFT_RM_BENCH_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace weft::rm {

// When a simulated node sends its next heartbeat.
enum class SimNmSchedule {
  // As Weft's NM (NodeManager::OnHeartbeatReply) and YARN's NodeStatusUpdater: one interval
  // after the reply to the last one, the interval being the one the RM last told it (adaptive
  // intervals) or else the configured one. A node sends one per interval + reply time, so a
  // slow RM sees the rate fall by its latency, and a backlog drains.
  kAfterReply,
  // On a fixed timetable, one every interval from the node's first, whatever the RM's replies
  // say; a reply later than the next one's time sends that one at once, on reply. Harsher than
  // real NMs: a backlog keeps every node's next heartbeat due at once, so it lasts as long as
  // the RM serves no faster than the nominal rate.
  kFixed,
};

// "after-reply" or "fixed".
const char* SimNmScheduleName(SimNmSchedule schedule);
// InvalidArgument, naming the value and both choices, for any other name.
absl::StatusOr<SimNmSchedule> ParseSimNmSchedule(const std::string& name);

struct LatencyMs {
  double p50 = 0, p99 = 0, max = 0;
  double mean = 0;
  int64_t count = 0;
};

// Percentiles of latencies, ms (p50 and p99 the nearest-rank values below), and their mean.
LatencyMs SummarizeLatencies(std::vector<double> ms);
// As the bench reports print it: {"p50_ms", "p99_ms", "max_ms", "mean_ms", "count"}.
nlohmann::json LatencyJson(const LatencyMs& latency);

// CPU time (user + system, every thread) this process has used so far, s (getrusage).
double ProcessCpuSeconds();

}  // namespace weft::rm

#endif  // WEFT_RM_BENCH_TYPES_H_
