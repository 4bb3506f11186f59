// Copyright Weft authors. `weft bench rm`: a real ResourceManager under load over gRPC.
#ifndef WEFT_RM_RM_BENCH_H_
#define WEFT_RM_RM_BENCH_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/resource.h"
#include "rm/bench_types.h"

namespace weft::rm {

struct RmBenchOptions {
  int32_t nodes = 5000;  // simulated NMs, each heartbeating every interval
  int64_t heartbeat_interval_ms = 1000;
  // When a simulated NM sends its next heartbeat: by default as NMs do, one
  // interval after each reply.
  SimNmSchedule nm_schedule = SimNmSchedule::kAfterReply;
  int32_t apps = 100;                  // simulated AMs
  int32_t containers_per_app = 100;    // each AM keeps this many containers asked or running
  int64_t container_run_ms = 2000;     // a container "runs" this long on its simulated node
  int64_t allocate_interval_ms = 200;  // between an AM's Allocate calls
  int64_t duration_ms = 30000;         // measured time, after all nodes registered
  // Before the measured time: the apps are submitted and the AMs and NMs run this long
  // unmeasured, so that what is measured is the steady state, not the first fill of an empty
  // cluster (at 50,000 NMs and 25 s heartbeats, 12 s from submission see the AMs start and
  // their first 10,000 containers placed, and almost no container end). The submit -> AM
  // registered latencies count every AM, warm-up included.
  int64_t warmup_ms = 0;
  int32_t client_threads = 4;  // threads driving the simulated AMs (the NMs: SimNmHeartbeats)
  // 0: the simulated NMs are threads of this process, over plaintext gRPC. K > 0: they run in K
  // child processes, `<nm_sim_binary> bench nm-sim` (rm/nm_sim.h), the nodes split between
  // them, and the RM serves mutual TLS as in production (a throwaway CA and certificates for
  // the RM and every node in a temporary directory, removed at the end); the AMs stay in this
  // process, talk TLS too, and tell each child which containers run on its nodes. Then the
  // loop accounting and memory below are the RM's (and the AMs'), not the NMs'. The children
  // are killed and reaped whatever way this returns, and die with the thread that called
  // RunRmBench (PR_SET_PDEATHSIG): call it from a thread that outlives the run.
  int32_t nm_processes = 0;
  int call_finishers = -1;     // RmServerOptions::call_finishers of the RM under test
  int heartbeat_batch_ms = 1;  // RmServerOptions::heartbeat_batch_ms of the RM under test
  int64_t loop_poll_us = 0;    // RmServerOptions::loop_poll_us of the RM under test
  // Every this many ms of the measured interval, LoopProbe's fixed work (loop_probe.h) is
  // posted to the RM loop and its CPU time there taken (RmBenchReport::loop_us_per_probe);
  // 0 = never. 1..60000.
  int64_t loop_probe_ms = 0;
  std::string nm_sim_binary = "/proc/self/exe";  // a `weft` binary
  Resource node_capability = Resource::Of(65536, 32);
  Resource container = Resource::Of(1024, 1);
};

struct RmBenchReport {
  int32_t nodes = 0, apps = 0;
  int32_t nm_processes = 0;    // RmBenchOptions::nm_processes
  std::string nm_schedule;     // RmBenchOptions::nm_schedule, by name (SimNmScheduleName)
  int heartbeat_batch_ms = 0;  // RmBenchOptions::heartbeat_batch_ms
  int64_t loop_poll_us = 0;    // RmBenchOptions::loop_poll_us
  bool tls = false;            // the RM served mutual TLS (with nm_processes > 0)
  double duration_s = 0;
  double warmup_s = 0;  // RmBenchOptions::warmup_ms, s
  double heartbeats_per_s = 0;
  LatencyMs heartbeat;
  // How late the simulated NMs sent their heartbeats (SimNmTally::send_lags_ms): under
  // after-reply each node sends one per interval + heartbeat latency + send lag, so a send lag
  // is load the simulator failed to offer (its threads busy, or waiting for a core it shares
  // with the RM), not the RM's latency.
  LatencyMs heartbeat_send_lag;
  LatencyMs allocate;
  double containers_allocated_per_s = 0;  // containers handed to AMs, per second
  int64_t containers_allocated = 0;
  LatencyMs submit_to_am_running;  // SubmitApplication -> RegisterApplicationMaster ok
  int64_t rpc_errors = 0;
  // Where the RM loop's time went over the measured interval (rm/loop_work.h): the share of
  // wall time its thread was busy, and its CPU time per heartbeat, per Allocate call and per
  // container allocated (passes' time shared over the containers they allocated), µs.
  double loop_busy_fraction = 0;
  double loop_us_per_heartbeat = 0;
  double loop_us_per_allocate = 0;
  double loop_us_per_allocation = 0;
  // Scheduling passes per second and the loop time of one, µs: a pass's fixed part (what it
  // costs with nothing to allocate) is loop_us_per_pass less its allocations' share.
  double passes_per_s = 0;
  double loop_us_per_pass = 0;
  // The loop thread's own CPU time per second of the interval, exact (CLOCK_THREAD_CPUTIME_ID
  // read on the loop at both ends), and the part of it charged to the kinds above by sampling
  // (the rest: wake-ups, timers, tasks of no kind). At equal event rates, loop_cpu_per_s
  // compares two cluster sizes without the sampling's share-out between kinds.
  double loop_cpu_per_s = 0;
  double loop_charged_cpu_per_s = 0;
  // With loop_probe_ms: the probes run on the loop in the measured interval, and the loop's CPU
  // time for one, µs (the same work at every size: its growth is the machine's). The probes'
  // own time is left out of loop_cpu_per_s (and charged to no kind).
  int64_t loop_probes = 0;
  double loop_us_per_probe = 0;
  // The process's resident memory at the end, MiB, and its growth from before the RM started
  // per simulated NM, KiB. The simulated AMs run in this process, and so do the NMs without
  // nm_processes: their client state (about 0.1 KiB a node in-process) is then included.
  double rm_rss_mb = 0;
  double rss_kb_per_nm = 0;
  // CPU time this process used over the measured interval (getrusage, user + system) per
  // second of it: the RM and the simulated AMs, plus the NMs without nm_processes.
  double process_cpu_per_s = 0;
  // The same for the NM-sim children together (each over its own measured interval; only with
  // nm_processes): on a host they share with the RM, what the load generator took.
  double nm_processes_cpu_per_s = 0;
  // Containers the simulated NMs reported complete (counted by the NM-sim children; only with
  // nm_processes).
  int64_t containers_completed = 0;
  std::string ToJson() const;
  std::string ToText() const;
};

// Starts an RmServer on 127.0.0.1:0 in this process and drives it. Fails on setup errors
// (invalid options, a node that cannot register, an NM-sim child that fails or reports
// nothing).
absl::StatusOr<RmBenchReport> RunRmBench(const RmBenchOptions& options);

}  // namespace weft::rm

#endif  // WEFT_RM_RM_BENCH_H_
