// Copyright Weft authors. What `weft sim` writes: the JSON report, the CSV time series and a
// human summary.
#ifndef WEFT_SIM_REPORT_H_
#define WEFT_SIM_REPORT_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"
#include "sim/simulator.h"

namespace weft::sim {

// The report as JSON. Field names are an interface (scripts and tests rely on them): policy,
// nodes, jobs, jobs_failed, makespan_s, scheduler_wall_s, total_wall_s, allocations,
// allocations_per_s, locality {node_local, rack_local, off_switch}, preempted_containers,
// lost_containers, job_completion_s {mean, p50, p95, p99}, utilization {<type>: mean fraction},
// fairness_jain, jobs_detail [{id, queue, submit_s, start_s, finish_s, tasks, failed, goal_s,
// goal_met, and for workloads with goals or usage profiles utility [[time_s, U], ...] with
// null for -inf}],
// warnings [..] (first 100) and warnings_total, federation {sub_clusters, router_policy,
// amrm_policy ("" when monolithic), jobs_spanning, spanning_fraction, scheduler_wall_sum_s,
// scheduler_wall_max_s, federation_wall_s, model {sub_cluster_heartbeat_ms, cache_ttl_ms,
// store_latency_ms, uam_launch_ms, in_flight_accounting}, apps_per_rm {apps, homed, peak, mean:
// each {max, mean, cv} across sub-clusters; uams; homed_cv_over_time, apps_cv_over_time},
// per_sub_cluster [{id, nodes, utilization {<type>: mean fraction}, scheduler_wall_s,
// allocations, apps_homed, uams, apps (homed + UAMs), apps_peak, apps_mean}]},
// placement {gang_mode, constrained_allocations, soft_constrained_allocations,
// constraint_checked, constraint_violated, hard_constraint_violated, constraint_satisfaction
// (1 - violated / checked), soft_violations (the scheduler's), soft_satisfaction, gang_phases,
// gangs_started, gangs_rejected, gang_reservations, gang_wait_s {p50, p95, max}, held_idle
// {<type>: mean fraction}, jobs_unfinished, stalled, stalled_at_s, deadlock,
// tasks_running_at_end, held_containers_at_end, jobs_holding_at_end}.
nlohmann::json ReportToJson(const SimReport& r);

// Writes the JSON report / the time series (header: time_s, util_<type>..., then
// running_<leaf> and pending_<leaf> per leaf queue). Errors name the file.
absl::Status WriteReport(const SimReport& r, absl::string_view path);
absl::Status WriteTimeseries(const SimReport& r, absl::string_view path);
// Per-job series (workloads with goals or usage profiles): one row per live job per sample,
// header time_s,job,running_map,running_reduce,utility (utility "-inf" when no map-like task
// of a job with map work left runs). Errors name the file.
absl::Status WriteJobSeries(const SimReport& r, absl::string_view path);

// A few lines for people: makespan, completion percentiles, utilisation, fairness, speed.
void PrintSummary(const SimReport& r, std::ostream& out);

}  // namespace weft::sim

#endif  // WEFT_SIM_REPORT_H_
