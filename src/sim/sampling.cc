// Copyright Weft authors. The simulator's time series, utilisation and fairness.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "scheduler/registry.h"
#include "sim/sim_run.h"

namespace weft::sim::internal {
namespace {

// The policy whose per-app report gives the utility series (seed 003's utility function).
constexpr char kUtilityYardstick[] = "ras";

}  // namespace

void Sim::Account(int64_t now) {
  if (now <= last_t_) return;
  const Resource used = s_->cluster_allocated();
  const Resource& total = s_->cluster_total();
  double dt = static_cast<double>(now - last_t_);
  for (size_t i = 0; i < util_types_.size(); ++i) {
    int t = util_types_[i];
    if (total[t] > 0)
      util_integral_[i] += dt * static_cast<double>(used[t]) / static_cast<double>(total[t]);
    if (total[t] > 0 && held_ > 0)
      held_integral_[i] +=
          dt * static_cast<double>(held_total_[t]) / static_cast<double>(total[t]);
  }
  s_->Account(now - last_t_, util_types_);
  last_t_ = now;
}

void Sim::TakeSample(int64_t now) {
  Sample smp;
  smp.time_ms = now;
  const Resource used = s_->cluster_allocated();
  const Resource& total = s_->cluster_total();
  for (int t : util_types_) {
    smp.utilization.push_back(
        total[t] > 0 ? static_cast<double>(used[t]) / static_cast<double>(total[t]) : 0);
  }
  for (const std::string& leaf : r_.leaves) {
    auto [running, pending] = s_->QueueLoad(leaf);
    smp.running_per_queue.push_back(running);
    smp.pending_per_queue.push_back(pending);
  }
  if (contention_) {
    double n = 0, busy = 0, busy2 = 0, wait = 0, wait2 = 0;
    for (NodeId id : node_ids_) {
      const scheduler::NodeState* ns = s_->node(id);
      if (ns == nullptr || ns->removed) continue;
      const NodeRun& nr = node_run_[static_cast<size_t>(id)];
      double b = std::min(1.0, nr.cpu * nr.rate);
      double io = std::min(1.0, nr.io * nr.rate);
      double w = (1 - b) * io;
      n += 1;
      busy += b;
      busy2 += b * b;
      wait += w;
      wait2 += w * w;
    }
    if (n > 0) {
      smp.cpu_busy_mean = busy / n;
      smp.cpu_wait_mean = wait / n;
      smp.cpu_busy_std =
          std::sqrt(std::max(0.0, busy2 / n - smp.cpu_busy_mean * smp.cpu_busy_mean));
      smp.cpu_wait_std =
          std::sqrt(std::max(0.0, wait2 / n - smp.cpu_wait_mean * smp.cpu_wait_mean));
    }
  }
  if (r_.job_series) {
    for (size_t j = 0; j < jobs_.size(); ++j) {
      const JobRun& job = jobs_[j];
      if (!job.added || job.done) continue;
      if (!utility_series_) {
        // Its wave: running map-like (no dependencies) and reduce-like task containers.
        JobSample js{static_cast<int32_t>(j), -std::numeric_limits<double>::infinity(), 0, 0};
        for (const GroupRun& g : job.groups) {
          (g.spec->depends_on.empty() ? js.running_map : js.running_reduce) +=
              static_cast<int32_t>(g.running);
        }
        smp.jobs.push_back(js);
        continue;
      }
      // Seed 003's job utility, whatever policy schedules the run (the baselines are measured
      // with the same yardstick).
      auto report = scheduler::PolicyReportAs(kUtilityYardstick, s_->HomeOf(job.app), job.app, now);
      if (!report.ok() || !report->has_value()) continue;
      const scheduler::AppPolicyReport* st = &**report;
      smp.jobs.push_back(
          {static_cast<int32_t>(j), st->utility, st->running_map_like, st->running_reduce_like});
    }
  }
  r_.samples.push_back(std::move(smp));
  // Jain's index over the dominant shares of the apps that want more, counted only while the
  // cluster is contended (>= 90% of some resource allocated); see docs/simulator.md.
  if (s_->Share(used) < 0.9) return;
  double sum = 0, sq = 0;
  int n = 0;
  for (const std::string& leaf : r_.leaves) {
    for (double x : s_->WantingShares(leaf)) {
      sum += x;
      sq += x * x;
      ++n;
    }
  }
  if (n >= 2 && sq > 0) {
    jain_sum_ += sum * sum / (n * sq);
    ++jain_n_;
    ++r_.fairness_samples;
  }
}

}  // namespace weft::sim::internal
