#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <type_traits>
#include <variant>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "adaptcont/adaptcont.h"
#include "scheduler/registry.h"
#include "sim/event_queue.h"
#include "sim/sim_run.h"

namespace weft::sim {

absl::StatusOr<FailureSpec> ParseFailureSpec(absl::string_view text) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("failure spec '", text, "': ", why, " (expected e.g. 10%@300s)"));
  };
  size_t at = text.find('@');
  if (at == absl::string_view::npos) return bad("missing '@'");
  absl::string_view frac = text.substr(0, at), when = text.substr(at + 1);
  double f = 0;
  bool percent = !frac.empty() && frac.back() == '%';
  if (percent) frac.remove_suffix(1);
  if (!absl::SimpleAtod(frac, &f)) return bad("the fraction is not a number");
  if (percent) f /= 100;
  if (!(f > 0 && f <= 1)) return bad("the fraction must be in (0, 100%]");
  double scale = 1000;
  for (auto [suffix, ms] : {std::pair{"ms", 1.0}, std::pair{"s", 1000.0}, std::pair{"m", 60000.0},
                            std::pair{"h", 3600000.0}}) {
    if (absl::EndsWith(when, suffix)) {
      when.remove_suffix(absl::string_view(suffix).size());
      scale = ms;
      break;
    }
  }
  double t = 0;
  if (!absl::SimpleAtod(when, &t) || t < 0) return bad("the time is not a non-negative number");
  return FailureSpec{f, static_cast<int64_t>(std::llround(t * scale))};
}

namespace internal {

void Sim::InjectFailure(const FailureSpec& f, int64_t now) {
  std::vector<std::string> live;
  for (NodeId id : node_ids_) {
    if (s_->node(id) != nullptr && !s_->node(id)->removed) live.push_back(s_->node(id)->name);
  }
  std::shuffle(live.begin(), live.end(), rng_);
  size_t n = static_cast<size_t>(std::llround(f.fraction * static_cast<double>(live.size())));
  n = std::min(n, live.size() > 0 ? live.size() - 1 : 0);  // keep one node alive
  std::sort(live.begin(), live.begin() + static_cast<std::ptrdiff_t>(n));
  nodes_lost_ += static_cast<int64_t>(n);
  // Remove every node first: a lost AM's next attempt is sized for what is left.
  std::vector<ContainerKill> kills;
  for (size_t i = 0; i < n; ++i) {
    auto lost = Timed([&] { return s_->RemoveNode(live[i]); });
    if (lost.ok()) kills.insert(kills.end(), lost->begin(), lost->end());
  }
  Lost(kills, now);
  r_.warnings.push_back(
      absl::StrCat("failure injection: removed ", n, " nodes at ", now / 1000, " s"));
  EnsurePass(now);
}

void Sim::Pass(int64_t now) {
  next_pass_ = -1;
  last_pass_ = now;
  for (int64_t j : dirty_jobs_) FlushAsks(jobs_[j], j);
  dirty_jobs_.clear();
  const PassResult& pr = Timed([&]() -> const PassResult& { return s_->Schedule(now); });
  std::vector<Allocation> allocations = pr.allocations;
  std::vector<ContainerKill> kills = pr.kills;
  std::vector<scheduler::RejectedRequest> rejected = pr.rejected;
  for (const Allocation& a : allocations) Allocated(a, now);
  Lost(kills, now);
  // A gang given up (its timeout): the simulated AM does not ask again; the job fails.
  for (const scheduler::RejectedRequest& rj : rejected) {
    FailJob(static_cast<int64_t>(rj.app - 1), now,
            absl::StrCat("its gang (priority ", rj.priority, ", group ", rj.allocation_request_id,
                         ") was rejected: ", rj.reason));
  }
  if (o_.am_master) {
    for (const Allocation& a : allocations) CheckAmMemory(static_cast<int64_t>(a.app - 1), now);
  }
  for (const Allocation& a : allocations) {
    int64_t j = static_cast<int64_t>(a.app - 1);
    if (jobs_[j].dirty) dirty_jobs_.push_back(j);
  }
  for (int64_t j : dirty_jobs_) FlushAsks(jobs_[j], j);
  dirty_jobs_.clear();
  if (s_->AnyPending()) EnsurePass(now + 1);
  EnsureActivationPass();
}

absl::StatusOr<SimReport> Sim::Run() {
  auto wall0 = std::chrono::steady_clock::now();
  if (o_.heartbeat_ms < 1) return absl::InvalidArgumentError("heartbeat must be >= 1 ms");
  auto sched = SubClusters::Create(o_);
  if (!sched.ok()) return sched.status();
  s_ = std::move(*sched);
  if (o_.slots < 0) return absl::InvalidArgumentError("slots must be >= 0");
  if (!(o_.overload_penalty >= 0))
    return absl::InvalidArgumentError("the overload penalty must be >= 0");
  std::vector<scheduler::NodeSpec> node_specs = o_.nodes;
  if (o_.slots > 0 && !node_specs.empty()) {
    // A slot = one vcore and 1/slots of the (smallest) node's memory.
    int64_t mem = node_specs[0].capacity[kMemoryMb];
    for (scheduler::NodeSpec& n : node_specs) {
      mem = std::min(mem, n.capacity[kMemoryMb]);
      n.capacity[kVcores] = o_.slots;
    }
    const auto& info = o_.registry.info(kMemoryMb);
    int64_t inc = std::max<int64_t>(info.increment, 1);
    int64_t per_slot = std::max<int64_t>(mem / o_.slots / inc * inc, info.minimum);
    slot_request_ = Resource::Of(per_slot, 1);
  }
  for (const auto& job : w_.jobs) {
    for (const TaskGroup& g : job.groups) {
      contention_ |= g.has_usage;
      // The AMRMProxy model splits a job's "*" asks over sub-clusters: a gang would be split.
      if (g.has_placement() && o_.federation.sub_clusters > 1)
        return absl::InvalidArgumentError(absl::StrCat(
            job.source, ": job ", job.id, ": group '", g.name,
            "' has allocation tags, a constraint or a gang, which federated runs do not model "
            "(use --subclusters 1)"));
    }
    r_.job_series |= job.goal_ms >= 0;
  }
  r_.job_series |= contention_;
  utility_series_ = r_.job_series;
  r_.utility_series = utility_series_;
  if (o_.am_master) {
    if (absl::Status st = adaptcont::ValidateAdaptContConfig(*o_.am_master); !st.ok())
      return absl::InvalidArgumentError(absl::StrCat("AdaptCont master: ", st.message()));
    r_.am_master = std::string(adaptcont::AdaptContModeName(o_.am_master->mode));
    r_.job_series = true;  // the wave of every job over time (seed 002's Fig. 5)
  }
  r_.contention = contention_;
  auto ids = s_->AddNodes(node_specs);
  if (!ids.ok()) return ids.status();
  node_ids_ = std::move(*ids);
  for (NodeId id : node_ids_) node_rack_[id] = s_->RackOf(id);
  r_.policy = o_.scheduler.policy;
  r_.nodes = static_cast<int>(o_.nodes.size());
  if (contention_ && !node_ids_.empty())
    node_run_.resize(static_cast<size_t>(*std::max_element(node_ids_.begin(), node_ids_.end()) + 1));
  for (const scheduler::QueueNode* q : s_->first().queues()) {
    if (q->is_leaf()) r_.leaves.push_back(q->path);
  }
  for (int t = 0; t < o_.registry.size(); ++t) {
    if (s_->cluster_total()[t] > 0) {
      util_types_.push_back(t);
      r_.utilization_types.push_back(o_.registry.info(t).name);
    }
  }
  util_integral_.assign(util_types_.size(), 0);
  held_integral_.assign(util_types_.size(), 0);

  // Jobs and their per-task state.
  jobs_.resize(w_.jobs.size());
  r_.job_results.resize(w_.jobs.size());
  int64_t last_submit = 0;
  for (size_t j = 0; j < w_.jobs.size(); ++j) {
    const Job& spec = w_.jobs[j];
    JobRun& job = jobs_[j];
    job.job = &spec;
    job.app = static_cast<AppId>(j + 1);
    job.groups.resize(spec.groups.size());
    job.groups_left = static_cast<int64_t>(spec.groups.size());
    JobResult& res = r_.job_results[j];
    res.id = spec.id;
    res.queue = spec.queue;
    res.submit_ms = spec.submit_ms;
    res.goal_ms = spec.goal_ms;
    for (size_t gi = 0; gi < spec.groups.size(); ++gi) {
      const TaskGroup& tg = spec.groups[gi];
      GroupRun& g = job.groups[gi];
      g.spec = &tg;
      g.deps_left = static_cast<int32_t>(tg.depends_on.size());
      g.waiting = tg.count;
      res.tasks += tg.count;
      bool trace_hosts = !tg.task_hosts.empty();
      bool synthetic = !trace_hosts && o_.replicas > 0 && tg.name == "map";
      g.per_task = trace_hosts || synthetic || !tg.task_durations_ms.empty();
      g.placement = tg.has_placement();
      if (tg.gang) stall_window_ms_ = std::max(stall_window_ms_, kStallMs + tg.gang_timeout_ms);
      if (!g.per_task) continue;
      g.started.assign(static_cast<size_t>(tg.count), 0);
      g.stack.reserve(static_cast<size_t>(tg.count));
      for (int32_t t = static_cast<int32_t>(tg.count) - 1; t >= 0; --t) g.stack.push_back(t);
      if (trace_hosts) {
        g.replicas = 1;
        g.prefs.resize(static_cast<size_t>(tg.count));
        for (int64_t t = 0; t < tg.count; ++t) {
          const std::string& h = tg.task_hosts[static_cast<size_t>(t)];
          g.prefs[static_cast<size_t>(t)] = h.empty() ? -1 : node_ids_[Fnv1a(h) % node_ids_.size()];
        }
      } else if (synthetic) {
        g.replicas = std::min<int32_t>(o_.replicas, 8);
        g.prefs.resize(static_cast<size_t>(tg.count * g.replicas));
        for (NodeId& n : g.prefs) n = node_ids_[rng_() % node_ids_.size()];
      }
      if (g.placement) {
        // Its asks carry placement: the "*" row only, no preferred hosts. (Synthetic replicas
        // are drawn all the same, so the other jobs' draws match a run without placement.)
        g.replicas = 0;
        g.prefs.clear();
      }
    }
    Push(spec.submit_ms, SubmitEvent{static_cast<int64_t>(j)});
    last_submit = std::max(last_submit, spec.submit_ms);
  }
  jobs_left_ = static_cast<int64_t>(jobs_.size());
  r_.jobs = jobs_left_;
  for (size_t f = 0; f < o_.failures.size(); ++f) Push(o_.failures[f].at_ms, FailureEvent{f});
  int64_t sample_ms = o_.sample_ms;
  if (sample_ms <= 0) {
    // Aim at ~500 samples over a run we expect to last a little beyond the last submission.
    sample_ms = std::max<int64_t>(o_.heartbeat_ms, (last_submit + 3600 * 1000) / 500 / 1000 * 1000);
  }
  Push(0, SampleEvent{});

  int64_t now = 0;
  while (!events_.empty() && jobs_left_ > 0) {
    TimedEvent e = events_.Pop();
    work_events_ -= IsWork(e.event);
    if (e.time_ms > o_.max_sim_ms) {
      r_.warnings.push_back(absl::StrCat(
          "stopped at the time limit of ", o_.max_sim_ms / 1000, " s with ", jobs_left_,
          " jobs unfinished, ", static_cast<int64_t>(running_.size()) - held_,
          " tasks running and ", held_, " containers held idle by gangs"));
      break;
    }
    Account(e.time_ms);
    now = e.time_ms;
    now_ = now;
    // The federation's heartbeats and deferred submissions up to now (federation_model.h).
    Timed([&] {
      s_->AdvanceTo(now);
      return 0;
    });
    for (const auto& [app, st] : s_->TakeFailedActivations()) {
      const int64_t j = static_cast<int64_t>(app - 1);
      r_.warnings.push_back(absl::StrCat(jobs_[j].job->source, ": job ", jobs_[j].job->id,
                                         " rejected: ", st.message()));
      jobs_[j].added = false;
      FinishJob(j, now, /*failed=*/true);
    }
    std::visit(
        [&](auto& ev) {
          using T = std::decay_t<decltype(ev)>;
          if constexpr (std::is_same_v<T, SubmitEvent>) {
            Submit(ev.job, now);
          } else if constexpr (std::is_same_v<T, AmReadyEvent>) {
            AmReady(ev.job, ev.attempt, now);
          } else if constexpr (std::is_same_v<T, TaskFinishEvent>) {
            TaskFinished(ev.container, ev.version, now);
          } else if constexpr (std::is_same_v<T, FailureEvent>) {
            InjectFailure(o_.failures[ev.index], now);
          } else if constexpr (std::is_same_v<T, PassEvent>) {
            Pass(now);
          } else {
            static_assert(std::is_same_v<T, SampleEvent>);
            TakeSample(now);
            Push(now + sample_ms, SampleEvent{});
          }
        },
        e.event);
    if (jobs_left_ > 0 && Stalled(now)) {
      r_.stalled = true;
      r_.stalled_at_ms = now;
      r_.warnings.push_back(absl::StrCat(
          "stopped at ", now / 1000, " s: nothing changed for ", (now - stall_since_) / 1000,
          " s with ", jobs_left_, " jobs unfinished and ", held_,
          " containers held idle by gangs waiting for the rest of their containers",
          held_ > 0 ? " (deadlock)" : ""));
      break;
    }
  }
  Account(now);
  TakeSample(now);
  if (r_.makespan_ms == 0) r_.makespan_ms = now;
  double span = static_cast<double>(std::max<int64_t>(last_t_, 1));
  for (double x : util_integral_) r_.utilization_mean.push_back(x / span);
  for (double x : held_integral_) r_.held_idle_mean.push_back(x / span);
  r_.gang_mode = o_.scheduler.gang_mode;
  r_.jobs_unfinished = jobs_left_;
  r_.held_containers_at_end = held_;
  for (const JobRun& job : jobs_) {
    bool holds = false;
    for (const GroupRun& g : job.groups) holds |= !g.held.empty();
    r_.jobs_holding_at_end += holds;
  }
  r_.tasks_running_at_end = static_cast<int64_t>(running_.size()) - held_;
  r_.deadlock = jobs_left_ > 0 && held_ > 0;
  r_.fairness_jain = jain_n_ > 0 ? jain_sum_ / static_cast<double>(jain_n_) : 1.0;
  const scheduler::SchedulerStats st = s_->stats();
  r_.allocations = st.allocations;
  r_.node_local = st.node_local;
  r_.rack_local = st.rack_local;
  r_.off_switch = st.off_switch;
  r_.preempted = st.preempted;
  r_.contracts = st.contracts;
  r_.passes = st.passes;
  r_.soft_violations = st.soft_violations;
  r_.gangs_rejected = st.gangs_rejected;
  r_.gang_reservations = st.gang_reservations;
  r_.scheduler_wall_s = sched_wall_;
  s_->FillReport(span, sched_wall_, &r_);
  r_.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  for (const std::string& wmsg : w_.warnings) r_.warnings.push_back(wmsg);
  return std::move(r_);
}

}  // namespace internal

absl::StatusOr<scheduler::SchedulerConfig> QueuesForWorkload(const Workload& workload,
                                                             absl::string_view policy) {
  scheduler::SchedulerConfig config = scheduler::DefaultSchedulerConfig();
  config.policy = std::string(policy);
  std::vector<std::string> names;
  for (const Job& job : workload.jobs) {
    absl::string_view q = job.queue;
    absl::ConsumePrefix(&q, "root.");
    bool valid = !q.empty();
    for (char c : q) valid &= absl::ascii_isalnum(c) || c == '_' || c == '-';
    if (!valid)
      return absl::InvalidArgumentError(absl::StrCat(job.source, ": job ", job.id, ": queue '",
                                                     job.queue,
                                                     "' is not a valid leaf queue name"));
    if (std::find(names.begin(), names.end(), q) == names.end()) names.emplace_back(q);
  }
  if (names.empty()) return config;
  scheduler::QueueConfig leaf = config.root.children.front();
  config.root.children.clear();
  for (const std::string& name : names) {
    leaf.name = name;
    config.root.children.push_back(leaf);
  }
  return config;
}

absl::StatusOr<SimReport> RunSimulation(const Workload& workload, const SimOptions& options) {
  internal::Sim sim(workload, options);
  return sim.Run();
}

}  // namespace weft::sim
