#include "sim/report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"

namespace weft::sim {
namespace {

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  i = std::clamp<size_t>(i, 1, v.size());
  return v[i - 1];
}

std::vector<double> CompletionSeconds(const SimReport& r) {
  std::vector<double> out;
  for (const JobResult& j : r.job_results) {
    if (j.finish_ms >= 0) out.push_back(static_cast<double>(j.finish_ms - j.submit_ms) / 1000.0);
  }
  return out;
}

absl::Status OpenForWrite(absl::string_view path, std::ofstream* out) {
  std::filesystem::path p{std::string(path)};
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  out->open(p);
  if (!*out) return absl::PermissionDeniedError(absl::StrCat("cannot write '", path, "'"));
  return absl::OkStatus();
}

// Constraint satisfaction: the share of checked constrained placements that met their
// constraint when placed (1 when none was checked).
double Satisfaction(const SimReport& r) {
  if (r.constraint_checked == 0) return 1.0;
  return 1.0 -
         static_cast<double>(r.constraint_violated) / static_cast<double>(r.constraint_checked);
}

nlohmann::json PlacementJson(const SimReport& r) {
  using nlohmann::json;
  std::vector<double> waits;
  for (int64_t ms : r.gang_wait_ms) waits.push_back(static_cast<double>(ms) / 1000.0);
  json held = json::object();
  for (size_t i = 0; i < r.utilization_types.size() && i < r.held_idle_mean.size(); ++i)
    held[r.utilization_types[i]] = r.held_idle_mean[i];
  const double soft = static_cast<double>(r.soft_constrained_allocations);
  return {
      {"gang_mode", r.gang_mode},
      {"constrained_allocations", r.constrained_allocations},
      {"soft_constrained_allocations", r.soft_constrained_allocations},
      {"constraint_checked", r.constraint_checked},
      {"constraint_violated", r.constraint_violated},
      {"hard_constraint_violated", r.hard_constraint_violated},
      {"constraint_satisfaction", Satisfaction(r)},
      {"soft_violations", r.soft_violations},
      {"soft_satisfaction", soft > 0 ? 1.0 - static_cast<double>(r.soft_violations) / soft : 1.0},
      {"gang_phases", r.gang_phases},
      {"gangs_started", r.gangs_started},
      {"gangs_rejected", r.gangs_rejected},
      {"gang_reservations", r.gang_reservations},
      {"gang_wait_s",
       {{"p50", Percentile(waits, 0.50)},
        {"p95", Percentile(waits, 0.95)},
        {"max", waits.empty() ? 0.0 : *std::max_element(waits.begin(), waits.end())}}},
      {"held_idle", held},
      {"jobs_unfinished", r.jobs_unfinished},
      {"stalled", r.stalled},
      {"stalled_at_s", r.stalled_at_ms < 0 ? json(nullptr)
                                           : json(static_cast<double>(r.stalled_at_ms) / 1000.0)},
      {"deadlock", r.deadlock},
      {"tasks_running_at_end", r.tasks_running_at_end},
      {"held_containers_at_end", r.held_containers_at_end},
      {"jobs_holding_at_end", r.jobs_holding_at_end},
  };
}

}  // namespace

nlohmann::json ReportToJson(const SimReport& r) {
  using nlohmann::json;
  std::vector<double> jct = CompletionSeconds(r);
  double mean = 0;
  for (double x : jct) mean += x;
  if (!jct.empty()) mean /= static_cast<double>(jct.size());
  json util = json::object();
  for (size_t i = 0; i < r.utilization_types.size(); ++i)
    util[r.utilization_types[i]] = r.utilization_mean[i];
  json detail = json::array();
  auto secs = [](int64_t ms) -> json {
    if (ms < 0) return nullptr;
    return static_cast<double>(ms) / 1000.0;
  };
  // Per job: [time_s, utility] (RAS runs) or [time_s, running task containers] (AdaptCont).
  std::vector<json> series(r.job_results.size(), json::array());
  if (r.job_series) {
    for (const Sample& smp : r.samples) {
      for (const JobSample& js : smp.jobs) {
        json v = r.utility_series ? (std::isfinite(js.utility) ? json(js.utility) : json(nullptr))
                                  : json(js.running_map + js.running_reduce);
        series[static_cast<size_t>(js.job)].push_back(
            json::array({static_cast<double>(smp.time_ms) / 1000.0, v}));
      }
    }
  }
  for (size_t ji = 0; ji < r.job_results.size(); ++ji) {
    const JobResult& j = r.job_results[ji];
    json goal_met = nullptr;
    if (j.goal_ms >= 0) goal_met = j.finish_ms >= 0 && j.finish_ms <= j.goal_ms;
    detail.push_back({{"id", j.id},
                      {"queue", j.queue},
                      {"submit_s", secs(j.submit_ms)},
                      {"start_s", secs(j.start_ms)},
                      {"finish_s", secs(j.finish_ms)},
                      {"tasks", j.tasks},
                      {"am_attempts", j.am_attempts},
                      {"failed", j.failed},
                      {"goal_s", secs(j.goal_ms)},
                      {"goal_met", goal_met}});
    if (r.job_series) {
      detail.back()[r.utility_series ? "utility" : "running_tasks"] = std::move(series[ji]);
    }
    if (!r.am_master.empty()) {
      json ams = json::array();
      for (const Resource& am : j.am_containers)
        ams.push_back({{"memory_mb", am[kMemoryMb]}, {"vcores", am[kVcores]}});
      detail.back()["am_containers"] = std::move(ams);
      detail.back()["am_decisions"] = j.am_decisions;
      detail.back()["am_memory_failures"] = j.am_memory_failures;
      detail.back()["max_running_tasks"] = j.max_running_tasks;
    }
  }
  json warnings = json::array();
  for (size_t i = 0; i < r.warnings.size() && i < 100; ++i) warnings.push_back(r.warnings[i]);
  json out{
      {"policy", r.policy},
      {"nodes", r.nodes},
      {"jobs", r.jobs},
      {"jobs_failed", r.jobs_failed},
      {"makespan_s", static_cast<double>(r.makespan_ms) / 1000.0},
      {"scheduler_wall_s", r.scheduler_wall_s},
      {"total_wall_s", r.total_wall_s},
      {"allocations", r.allocations},
      {"allocations_per_s",
       r.scheduler_wall_s > 0 ? static_cast<double>(r.allocations) / r.scheduler_wall_s : 0.0},
      {"scheduling_passes", r.passes},
      {"locality",
       {{"node_local", r.node_local}, {"rack_local", r.rack_local}, {"off_switch", r.off_switch}}},
      {"preemption_contracts", r.contracts},
      {"preempted_containers", r.preempted},
      {"lost_containers", r.lost_containers},
      {"job_completion_s",
       {{"mean", mean},
        {"p50", Percentile(jct, 0.50)},
        {"p95", Percentile(jct, 0.95)},
        {"p99", Percentile(jct, 0.99)}}},
      {"utilization", util},
      {"fairness_jain", r.fairness_jain},
      {"fairness_samples", r.fairness_samples},
      {"jobs_detail", detail},
      {"warnings", warnings},
      {"warnings_total", r.warnings.size()},
  };
  // Federation (seed 004): every run has at least one sub-cluster.
  json subs = json::array();
  for (const SubClusterResult& sc : r.sub_clusters) {
    json u = json::object();
    for (size_t i = 0; i < r.utilization_types.size() && i < sc.utilization_mean.size(); ++i)
      u[r.utilization_types[i]] = sc.utilization_mean[i];
    subs.push_back({{"id", sc.id},
                    {"nodes", sc.nodes},
                    {"utilization", u},
                    {"scheduler_wall_s", sc.scheduler_wall_s},
                    {"allocations", sc.allocations},
                    {"apps_homed", sc.apps_homed},
                    {"uams", sc.uams},
                    {"apps", sc.apps_homed + sc.uams},
                    {"apps_peak", sc.apps_peak},
                    {"apps_mean", sc.apps_mean}});
  }
  // Apps per RM, homed plus unmanaged AMs (the seed's bounded-load claim): across sub-clusters.
  auto spread = [&](auto value) {
    std::vector<double> v;
    for (const SubClusterResult& sc : r.sub_clusters) v.push_back(value(sc));
    json out{{"max", 0.0}, {"mean", 0.0}, {"cv", 0.0}};
    if (v.empty()) return out;
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    out["max"] = *std::max_element(v.begin(), v.end());
    out["mean"] = mean;
    out["cv"] = mean > 0 ? std::sqrt(var / static_cast<double>(v.size())) / mean : 0.0;
    return out;
  };
  int64_t uams = 0;
  for (const SubClusterResult& sc : r.sub_clusters) uams += sc.uams;
  json apps_per_rm{
      {"apps", spread([](const SubClusterResult& sc) {
         return static_cast<double>(sc.apps_homed + sc.uams);
       })},
      {"homed", spread([](const SubClusterResult& sc) { return static_cast<double>(sc.apps_homed); })},
      {"peak", spread([](const SubClusterResult& sc) { return static_cast<double>(sc.apps_peak); })},
      {"mean", spread([](const SubClusterResult& sc) { return sc.apps_mean; })},
      {"uams", uams},
      {"homed_cv_over_time", r.homed_apps_cv_over_time},
      {"apps_cv_over_time", r.apps_cv_over_time},
  };
  const FederationOptions& fo = r.federation;
  json model{{"sub_cluster_heartbeat_ms", fo.heartbeat_ms},
             {"cache_ttl_ms", fo.cache_ttl_ms},
             {"store_latency_ms", fo.store_latency_ms},
             {"uam_launch_ms", fo.uam_launch_ms},
             {"in_flight_accounting", fo.in_flight_accounting}};
  out["federation"] = {
      {"sub_clusters", std::max<size_t>(1, r.sub_clusters.size())},
      {"router_policy", r.router_policy},
      {"amrm_policy", r.amrm_policy},
      {"jobs_spanning", r.jobs_spanning},
      {"spanning_fraction",
       r.jobs > 0 ? static_cast<double>(r.jobs_spanning) / static_cast<double>(r.jobs) : 0.0},
      {"scheduler_wall_sum_s", r.scheduler_wall_sum_s},
      {"scheduler_wall_max_s", r.scheduler_wall_max_s},
      {"federation_wall_s", r.federation_wall_s},
      {"model", model},
      {"apps_per_rm", apps_per_rm},
      {"per_sub_cluster", subs},
  };
  out["placement"] = PlacementJson(r);
  if (!r.am_master.empty()) {
    out["am_master"] = r.am_master;
    out["am_memory_mb"] = r.am_memory_mb;
    out["am_vcores"] = r.am_vcores;
    out["am_memory_failures"] = r.am_memory_failures;
  }
  return out;
}

absl::Status WriteReport(const SimReport& r, absl::string_view path) {
  std::ofstream out;
  if (auto s = OpenForWrite(path, &out); !s.ok()) return s;
  out << ReportToJson(r).dump(2) << "\n";
  if (!out) return absl::DataLossError(absl::StrCat("error writing '", path, "'"));
  return absl::OkStatus();
}

absl::Status WriteTimeseries(const SimReport& r, absl::string_view path) {
  std::ofstream out;
  if (auto s = OpenForWrite(path, &out); !s.ok()) return s;
  out << "time_s";
  for (const std::string& t : r.utilization_types) out << ",util_" << t;
  for (const std::string& q : r.leaves) out << ",running_" << q;
  for (const std::string& q : r.leaves) out << ",pending_" << q;
  if (r.contention) out << ",cpu_busy_mean,cpu_busy_std,cpu_wait_mean,cpu_wait_std";
  out << "\n";
  for (const Sample& s : r.samples) {
    out << absl::StrFormat("%.3f", static_cast<double>(s.time_ms) / 1000.0);
    for (double u : s.utilization) out << absl::StrFormat(",%.4f", u);
    for (int64_t x : s.running_per_queue) out << "," << x;
    for (int64_t x : s.pending_per_queue) out << "," << x;
    if (r.contention) {
      out << absl::StrFormat(",%.4f,%.4f,%.4f,%.4f", s.cpu_busy_mean, s.cpu_busy_std,
                             s.cpu_wait_mean, s.cpu_wait_std);
    }
    out << "\n";
  }
  if (!out) return absl::DataLossError(absl::StrCat("error writing '", path, "'"));
  return absl::OkStatus();
}

absl::Status WriteJobSeries(const SimReport& r, absl::string_view path) {
  std::ofstream out;
  if (auto s = OpenForWrite(path, &out); !s.ok()) return s;
  out << "time_s,job,running_map,running_reduce,utility\n";
  for (const Sample& s : r.samples) {
    for (const JobSample& j : s.jobs) {
      out << absl::StrFormat("%.3f,%s,%d,%d,", static_cast<double>(s.time_ms) / 1000.0,
                             r.job_results[static_cast<size_t>(j.job)].id, j.running_map,
                             j.running_reduce);
      if (std::isfinite(j.utility)) {
        out << absl::StrFormat("%.5f", j.utility);
      } else {
        out << "-inf";
      }
      out << "\n";
    }
  }
  if (!out) return absl::DataLossError(absl::StrCat("error writing '", path, "'"));
  return absl::OkStatus();
}

void PrintSummary(const SimReport& r, std::ostream& out) {
  nlohmann::json j = ReportToJson(r);
  out << absl::StrFormat("policy %s on %d nodes: %d jobs (%d failed), makespan %.0f s\n", r.policy,
                         r.nodes, r.jobs, r.jobs_failed,
                         static_cast<double>(r.makespan_ms) / 1000.0);
  const auto& jct = j["job_completion_s"];
  out << absl::StrFormat("job completion (s): mean %.1f  p50 %.1f  p95 %.1f  p99 %.1f\n",
                         jct["mean"].get<double>(), jct["p50"].get<double>(),
                         jct["p95"].get<double>(), jct["p99"].get<double>());
  out << "utilisation (time-weighted mean):";
  for (size_t i = 0; i < r.utilization_types.size(); ++i)
    out << absl::StrFormat("  %s %.1f%%", r.utilization_types[i], 100 * r.utilization_mean[i]);
  out << "\n";
  int64_t total = std::max<int64_t>(1, r.node_local + r.rack_local + r.off_switch);
  out << absl::StrFormat(
      "containers: %d allocated (%.0f%% node-local, %.0f%% rack-local), %d preempted, %d lost\n",
      r.allocations, 100.0 * r.node_local / total, 100.0 * r.rack_local / total, r.preempted,
      r.lost_containers);
  out << absl::StrFormat("fairness (Jain, apps wanting more, %d contended samples): %.3f\n",
                         r.fairness_samples, r.fairness_jain);
  if (!r.am_master.empty()) {
    out << absl::StrFormat(
        "AM master %s: %d MB and %d vcores over all AM containers, %d attempts killed for memory\n",
        r.am_master, r.am_memory_mb, r.am_vcores, r.am_memory_failures);
  }
  if (r.constrained_allocations > 0 || r.gang_phases > 0 || r.stalled) {
    const auto& p = j["placement"];
    out << absl::StrFormat(
        "placement: %d constrained containers (%d soft), %.2f%% satisfied (%d checked); gangs "
        "(%s): %d asked, %d started, %d rejected, wait p50 %.1f s p95 %.1f s\n",
        r.constrained_allocations, r.soft_constrained_allocations,
        100 * p["constraint_satisfaction"].get<double>(), r.constraint_checked, r.gang_mode,
        r.gang_phases, r.gangs_started, r.gangs_rejected, p["gang_wait_s"]["p50"].get<double>(),
        p["gang_wait_s"]["p95"].get<double>());
  }
  if (r.stalled || r.deadlock) {
    out << absl::StrFormat(
        "%s: %d jobs unfinished, %d containers of %d jobs held idle by gangs, %d tasks running "
        "(%s)\n",
        r.deadlock ? "DEADLOCK" : "STALLED", r.jobs_unfinished, r.held_containers_at_end,
        r.jobs_holding_at_end, r.tasks_running_at_end,
        r.stalled ? absl::StrFormat("nothing could change any more: stopped at %.0f s",
                                    static_cast<double>(r.stalled_at_ms) / 1000.0)
                  : "at the end of the run");
  }
  out << absl::StrFormat(
      "scheduler: %.2f s wall in the core (%.0f allocations/s, %d passes); simulation %.2f s "
      "wall\n",
      r.scheduler_wall_s, j["allocations_per_s"].get<double>(), r.passes, r.total_wall_s);
  if (r.sub_clusters.size() > 1) {
    out << absl::StrFormat(
        "federation: %d sub-clusters (router %s, AMRMProxy %s), %d jobs (%.1f%%) spanned more "
        "than one; core wall sum %.2f s, max %.2f s; router+AMRMProxy %.2f s\n",
        r.sub_clusters.size(), r.router_policy, r.amrm_policy, r.jobs_spanning,
        r.jobs > 0 ? 100.0 * static_cast<double>(r.jobs_spanning) / static_cast<double>(r.jobs)
                   : 0.0,
        r.scheduler_wall_sum_s, r.scheduler_wall_max_s, r.federation_wall_s);
    const FederationOptions& fo = r.federation;
    out << absl::StrFormat(
        "  what the policies see: sub-cluster heartbeat %d ms, cache TTL %d ms, store latency "
        "%d ms, UAM launch %d ms, in-flight accounting %s\n",
        fo.heartbeat_ms, fo.cache_ttl_ms, fo.store_latency_ms, fo.uam_launch_ms,
        fo.in_flight_accounting ? "on" : "off");
    const auto& apr = j["federation"]["apps_per_rm"];
    out << absl::StrFormat(
        "  apps per RM (homed + %d UAMs): max %.0f, mean %.1f, CV %.3f; at once: peak max %.0f, "
        "mean %.1f, CV %.3f; herding (CV over time): homed %.3f, all %.3f\n",
        apr["uams"].get<int64_t>(), apr["apps"]["max"].get<double>(),
        apr["apps"]["mean"].get<double>(), apr["apps"]["cv"].get<double>(),
        apr["peak"]["max"].get<double>(), apr["peak"]["mean"].get<double>(),
        apr["peak"]["cv"].get<double>(), r.homed_apps_cv_over_time, r.apps_cv_over_time);
    out << "  utilisation per sub-cluster:";
    for (const SubClusterResult& sc : r.sub_clusters) {
      out << absl::StrFormat("  %s", sc.id);
      for (size_t i = 0; i < sc.utilization_mean.size(); ++i)
        out << absl::StrFormat(" %s %.1f%%", r.utilization_types[i], 100 * sc.utilization_mean[i]);
    }
    out << "\n";
  }
  int goals = 0, met = 0;
  for (const JobResult& jr : r.job_results) {
    if (jr.goal_ms < 0) continue;
    ++goals;
    met += jr.finish_ms >= 0 && jr.finish_ms <= jr.goal_ms;
  }
  if (goals > 0) out << absl::StrFormat("completion-time goals: %d of %d met\n", met, goals);
  if (!r.warnings.empty()) {
    out << r.warnings.size() << " warning(s); first: " << r.warnings.front() << "\n";
  }
}

}  // namespace weft::sim
