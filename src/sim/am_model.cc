// Copyright Weft authors. The simulator's ApplicationMasters: submission, attempts, AdaptCont.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "adaptcont/am_sizing.h"
#include "sim/sim_run.h"

namespace weft::sim::internal {

void Sim::Submit(int64_t j, int64_t now) {
  JobRun& job = jobs_[j];
  scheduler::AppSpec spec;
  spec.id = job.app;
  spec.queue = job.job->queue;
  spec.user = job.job->user;
  spec.priority = job.job->priority;
  spec.am_resource = o_.am_resource;
  if (o_.am_master) {
    if (absl::Status st = SizeAm(j); !st.ok()) {
      r_.warnings.push_back(absl::StrCat(job.job->source, ": job ", job.job->id,
                                         ": sizing its AM (AdaptCont): ", st.message()));
      FinishJob(j, now, /*failed=*/true);
      return;
    }
    spec.am_resource = job.am_resource;
  }
  spec.profile.goal_ms = job.job->goal_ms;
  for (const TaskGroup& g : job.job->groups) {
    bool dup = false;
    for (const PhaseProfile& p : spec.profile.phases) dup |= p.priority == g.priority;
    if (dup) continue;  // one profile per container priority: the first group's
    PhaseProfile p;
    p.priority = g.priority;
    p.name = g.name;
    p.kind = g.name == "reduce" ? PhaseKind::kReduceLike : g.kind;
    p.has_usage = g.has_usage;
    p.usage = g.usage;
    p.expected_task_ms = g.expected_ms;
    spec.profile.phases.push_back(std::move(p));
  }
  std::vector<std::string> preferred;  // the hosts of its first tasks' data, for the router
  if (!job.job->groups.empty()) {
    const TaskGroup& first = job.job->groups.front();
    for (size_t t = 0; t < first.task_hosts.size() && preferred.size() < 3; ++t) {
      if (first.task_hosts[t].empty()) continue;
      preferred.push_back(s_->node(node_ids_[Fnv1a(first.task_hosts[t]) % node_ids_.size()])->name);
    }
  }
  absl::Status st = Timed([&] { return s_->AddApp(spec, now, preferred); });
  if (!st.ok()) {
    r_.warnings.push_back(
        absl::StrCat(job.job->source, ": job ", job.job->id, " rejected: ", st.message()));
    FinishJob(j, now, /*failed=*/true);
    return;
  }
  job.added = true;
  EnsureActivationPass();  // its submission may reach its home later (store latency)
  ++job.attempt;
  r_.job_results[j].am_attempts = job.attempt;
  if (spec.am_resource.IsZero()) {
    job.am_running = true;  // no AM container: the (unmanaged) AM runs from submission on
    AmReady(j, static_cast<uint64_t>(job.attempt), now);
  } else {
    EnsurePass(now);
  }
}

void Sim::AmReady(int64_t j, int32_t attempt, int64_t now) {
  JobRun& job = jobs_[j];
  if (job.done || attempt != job.attempt) return;  // a stale attempt
  for (int32_t g = 0; g < static_cast<int32_t>(job.groups.size()); ++g) {
    if (job.groups[g].deps_left == 0 && !job.groups[g].finished) AskGroup(job, g);
  }
  if (job.groups_left == 0) FinishJob(j, now, false);
  FlushAsks(job, j);
  EnsurePass(now);
}

// The AM's attempt ended (its container was lost or preempted). As YARN by default, the
// attempt's containers go with it; a new attempt starts unless max attempts are used up.
void Sim::AmLost(int64_t j, bool counts, int64_t now) {
  JobRun& job = jobs_[j];
  auto released = Timed([&] { return s_->RemoveApp(job.app); });
  if (released.ok()) {
    for (const ContainerKill& k : *released) {
      auto it = running_.find(k.container);
      if (it == running_.end()) continue;
      ForgetRunning(k.container, it->second, now);
      Requeue(it->second);
      running_.erase(it);
      ++r_.lost_containers;
    }
  }
  job.added = false;
  job.am_running = false;
  for (GroupRun& g : job.groups) {
    g.asked = false;
    g.node_count.clear();
    g.rack_count.clear();
    g.by_node.clear();
    g.by_rack.clear();
    g.dirty_nodes.clear();
    g.dirty_racks.clear();
  }
  if (counts && job.attempt >= o_.max_am_attempts) {
    r_.warnings.push_back(
        absl::StrCat("job ", job.job->id, ": AM failed ", job.attempt, " times; the job FAILED"));
    job.done = true;
    r_.job_results[j].failed = true;
    ++r_.jobs_failed;
    --jobs_left_;
    return;
  }
  if (!counts) --job.attempt;  // preemption does not count against max attempts (YARN)
  Submit(j, now);
}

Resource Sim::WorkerContainer(const Job& spec) const {
  if (o_.slots > 0) return slot_request_;
  return spec.groups.empty() ? Resource::Of(1024, 1) : spec.groups.front().resource;
}

absl::Status Sim::SizeAm(int64_t j) {
  JobRun& job = jobs_[j];
  const Job& spec = *job.job;
  const adaptcont::AdaptContConfig& config = *o_.am_master;
  // The RM's decision in the same state (adaptcont/am_sizing.h). Map-like tasks: the groups
  // that depend on none; reduce-like: the others (seed 002's application constraint sizes the
  // AM for the former).
  adaptcont::AmSizingJob in;
  in.user = spec.user;
  in.queue = spec.queue;
  int64_t maps = 0, reduces = 0;
  for (const TaskGroup& g : spec.groups) (g.depends_on.empty() ? maps : reduces) += g.count;
  // As a client of the RM says it: the input (one split per map task) and the split size.
  in.input_bytes = maps * config.split_bytes;
  in.split_bytes = config.split_bytes;
  in.reduce_tasks = reduces;
  in.worker = WorkerContainer(spec);
  in.nodes_lost = nodes_lost_ - job.nodes_lost_seen;
  if (job.attempt > 0) {
    in.previous_attempt = adaptcont::PreviousAttempt{
        {job.am_resource[kMemoryMb], job.am_resource[kVcores]}, job.failed_for_memory};
  }
  absl::StatusOr<adaptcont::AmSizingOutcome> sized =
      adaptcont::SizeAmContainer(config, s_->first(), in);
  if (!sized.ok()) return sized.status();
  const Resource* am = &sized->am;
  const adaptcont::AmSizingDecision* d = &sized->decision;
  job.am_resource = *am;
  job.max_running = d->max_running_tasks;
  job.trackable = adaptcont::AmTasksTrackable((*am)[kMemoryMb], config.am_memory_model);
  job.nodes_lost_seen = nodes_lost_;
  JobResult& res = r_.job_results[static_cast<size_t>(j)];
  res.am_containers.push_back(*am);
  res.am_decisions.push_back(d->Explanation());
  r_.am_memory_mb += (*am)[kMemoryMb];
  r_.am_vcores += (*am)[kVcores];
  return absl::OkStatus();
}

void Sim::CheckAmMemory(int64_t j, int64_t now) {
  JobRun& job = jobs_[j];
  if (job.done || !job.am_running || job.trackable < 0 || job.running <= job.trackable) return;
  JobResult& res = r_.job_results[static_cast<size_t>(j)];
  ++res.am_memory_failures;
  ++r_.am_memory_failures;
  r_.warnings.push_back(absl::StrCat("job ", job.job->id, ": AM attempt ", job.attempt, " (",
                                     job.am_resource[kMemoryMb], " MB) killed for memory at ",
                                     now / 1000, " s: ", job.running,
                                     " tasks at once, it can track ", job.trackable));
  job.failed_for_memory = true;
  AmLost(j, /*counts=*/true, now);
}

}  // namespace weft::sim::internal
