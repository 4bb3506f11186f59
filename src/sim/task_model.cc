// Copyright Weft authors. The simulator's tasks: asks, placement, run times, contention.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/sim_run.h"

namespace weft::sim::internal {

// Makes every waiting task of the group visible to the scheduler.
void Sim::AskGroup(JobRun& job, int32_t gi) {
  GroupRun& g = job.groups[gi];
  if (g.asked) return;
  g.asked = true;
  g.dirty_any = true;
  if (g.spec->gang && g.ask_ms < 0) {
    g.ask_ms = now_;
    ++r_.gang_phases;
  }
  if (g.per_task) {
    // The stack may hold started tasks and duplicates (it is cleaned lazily): rebuild it.
    g.stack.clear();
    for (int32_t t = static_cast<int32_t>(g.started.size()) - 1; t >= 0; --t) {
      if (!g.started[t]) g.stack.push_back(t);
    }
    for (int32_t t : g.stack) TaskWaiting(g, t, +1);
  }
  job.dirty = true;
}

// Adds (+1) or removes (-1) a waiting task's locality preferences from the group's counts.
void Sim::TaskWaiting(GroupRun& g, int32_t task, int delta) {
  g.dirty_any = true;
  if (g.replicas == 0) return;
  int32_t racks_seen[8];
  int n_racks = 0;
  for (int k = 0; k < g.replicas; ++k) {
    NodeId n = g.prefs[static_cast<size_t>(task) * g.replicas + k];
    if (n < 0) continue;
    g.node_count[n] += delta;
    g.dirty_nodes.insert(n);
    if (delta > 0) g.by_node[n].push_back(task);
    int32_t rack = node_rack_[n];
    if (std::find(racks_seen, racks_seen + n_racks, rack) != racks_seen + n_racks) continue;
    if (n_racks < 8) racks_seen[n_racks++] = rack;
    g.rack_count[rack] += delta;
    g.dirty_racks.insert(rack);
    if (delta > 0) g.by_rack[rack].push_back(task);
  }
}

void Sim::FlushAsks(JobRun& job, int64_t /*j*/) {
  if (!job.dirty || !job.added) return;
  RequestUpdate u;
  // An AdaptCont AM asks for no more tasks than it may run at once: the "*" rows (YARN's
  // total per request) share its budget in group order.
  const bool capped = job.max_running >= 0;
  int64_t budget = capped ? std::max<int64_t>(0, job.max_running - job.running) : 0;
  for (int32_t gi = 0; gi < static_cast<int32_t>(job.groups.size()); ++gi) {
    GroupRun& g = job.groups[gi];
    if (!g.asked) continue;
    int64_t any = g.waiting;
    if (capped && !g.spec->gang) {  // a gang asks for all of its containers
      any = std::min(g.waiting, budget);
      budget -= any;
      g.dirty_any = true;
    }
    auto ask = [&](std::string name, int64_t count) {
      ResourceRequest r;
      r.priority = g.spec->priority;
      r.resource_name = std::move(name);
      r.capability = o_.slots > 0 ? slot_request_ : g.spec->resource;
      r.num_containers = static_cast<int32_t>(std::min<int64_t>(count, INT32_MAX));
      r.allocation_request_id = gi;
      if (g.placement && r.resource_name == scheduler::kAnyResourceName) {
        const TaskGroup& spec = *g.spec;
        r.allocation_tags = spec.tags;
        r.has_constraint = spec.has_constraint;
        r.constraint_soft = spec.constraint_soft;
        if (spec.has_constraint) r.constraint = spec.constraint;
        r.gang = spec.gang;
        r.gang_timeout_ms = spec.gang_timeout_ms;
      }
      u.asks.push_back(std::move(r));
    };
    for (NodeId n : g.dirty_nodes) ask(s_->node(n)->name, g.node_count[n]);
    for (int32_t rk : g.dirty_racks) ask(s_->rack_name(rk), g.rack_count[rk]);
    if (g.dirty_any) ask("*", any);
    g.dirty_nodes.clear();
    g.dirty_racks.clear();
    g.dirty_any = false;
  }
  job.dirty = false;
  if (u.asks.empty()) return;
  absl::Status st = Timed([&] { return s_->UpdateRequests(job.app, u); });
  if (!st.ok()) r_.warnings.push_back(absl::StrCat("job ", job.job->id, ": ", st.message()));
}

void Sim::Allocated(const Allocation& a, int64_t now) {
  int64_t j = static_cast<int64_t>(a.app - 1);
  JobRun& job = jobs_[j];
  JobResult& res = r_.job_results[j];
  if (res.start_ms < 0) res.start_ms = now;
  if (a.is_am) {
    job.am_running = true;
    job.am_container = a.container;
    Push(now + o_.am_launch_ms, AmReadyEvent{j, job.attempt});
    return;
  }
  GroupRun& g = job.groups[static_cast<size_t>(a.allocation_request_id)];
  int32_t task = -1;
  if (g.per_task) {
    auto take_from = [&](std::vector<int32_t>& list) {
      while (!list.empty()) {
        int32_t t = list.back();
        list.pop_back();
        if (!g.started[t]) return t;
      }
      return -1;
    };
    if (a.locality == scheduler::Locality::kNodeLocal) {
      auto it = g.by_node.find(a.node);
      if (it != g.by_node.end()) task = take_from(it->second);
    } else if (a.locality == scheduler::Locality::kRackLocal) {
      auto it = g.by_rack.find(node_rack_[a.node]);
      if (it != g.by_rack.end()) task = take_from(it->second);
    }
    if (task < 0) task = take_from(g.stack);
    if (task < 0) {
      // The scheduler gave more than was asked (a stale count): give it back.
      Timed([&] { return s_->ContainerCompleted(a.container); }).IgnoreError();
      return;
    }
    g.started[task] = 1;
    TaskWaiting(g, task, -1);
  } else if (g.waiting <= 0) {
    Timed([&] { return s_->ContainerCompleted(a.container); }).IgnoreError();
    return;
  }
  --g.waiting;
  ++g.running;
  ++job.running;
  res.max_running_tasks = std::max(res.max_running_tasks, job.running);
  if (job.max_running >= 0) job.dirty = true;
  g.dirty_any = true;
  if (g.replicas > 0 || a.locality != scheduler::Locality::kOffSwitch) job.dirty = true;
  RunningTask& rt = running_[a.container];
  rt = RunningTask{j, static_cast<int32_t>(a.allocation_request_id), task};
  rt.node = a.node;
  stall_since_ = -1;
  const TaskGroup& spec = *g.spec;
  if (spec.has_constraint) {
    ++r_.constrained_allocations;
    r_.soft_constrained_allocations += spec.constraint_soft;
    if (std::optional<bool> ok = Satisfied(spec.constraint, j, a.node); ok.has_value()) {
      ++r_.constraint_checked;
      if (!*ok) {
        ++r_.constraint_violated;
        r_.hard_constraint_violated += !spec.constraint_soft;
      }
    }
  }
  if (!spec.tags.empty()) CountTags(spec, j, a.node, +1);
  if (spec.gang && !g.gang_started) {
    // The AM holds it, idle, until the whole gang is allocated.
    rt.held = true;
    ++held_;
    g.held.push_back(a.container);
    held_resource_[a.container] = a.resource;
    held_total_ += a.resource;
    if (g.waiting == 0) StartGang(g, now);
    return;
  }
  int64_t duration = (task >= 0 && !spec.task_durations_ms.empty())
                         ? spec.task_durations_ms[static_cast<size_t>(task)]
                         : spec.duration_ms;
  StartTask(a.container, duration, now);
}

void Sim::StartTask(ContainerId c, int64_t duration_ms, int64_t now) {
  if (contention_) {
    running_[c].remaining_ms = static_cast<double>(std::max<int64_t>(duration_ms, 1));
    NodeJoin(c, now);
    return;
  }
  Push(now + std::max<int64_t>(duration_ms, 1), TaskFinishEvent{c, 0});
}

void Sim::StartGang(GroupRun& g, int64_t now) {
  g.gang_started = true;
  ++r_.gangs_started;
  r_.gang_wait_ms.push_back(now - g.ask_ms);
  std::vector<ContainerId> held = std::move(g.held);
  g.held.clear();
  for (ContainerId c : held) {
    RunningTask& rt = running_[c];
    rt.held = false;
    --held_;
    auto it = held_resource_.find(c);
    held_total_ -= it->second;
    held_resource_.erase(it);
    int64_t duration = (rt.task >= 0 && !g.spec->task_durations_ms.empty())
                           ? g.spec->task_durations_ms[static_cast<size_t>(rt.task)]
                           : g.spec->duration_ms;
    StartTask(c, duration, now);
  }
}

void Sim::CountTags(const TaskGroup& g, int64_t job, NodeId node, int delta) {
  const int64_t rack = node_rack_[node];
  for (const std::string& tag : g.tags) {
    for (TagKey key : {TagKey{tag, node, -1, false}, TagKey{tag, node, job, false},
                       TagKey{tag, rack, -1, true}, TagKey{tag, rack, job, true}}) {
      auto [it, added] = tag_counts_.try_emplace(std::move(key), 0);
      it->second += delta;
      if (it->second == 0) tag_counts_.erase(it);
    }
  }
}

std::optional<bool> Sim::Satisfied(const scheduler::PlacementConstraint& c, int64_t job,
                                   NodeId node) const {
  using Kind = scheduler::PlacementConstraint::Kind;
  switch (c.kind) {
    case Kind::kTags: {
      if (c.scope == scheduler::ConstraintScope::kAttribute) return std::nullopt;
      const bool rack = c.scope == scheduler::ConstraintScope::kRack;
      const int64_t where = rack ? node_rack_.at(node) : node;
      auto count = [&](const std::string& tag, int64_t of) -> int64_t {
        auto it = tag_counts_.find(TagKey{tag, where, of, rack});
        return it == tag_counts_.end() ? 0 : it->second;
      };
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
      for (const std::string& tag : c.tags) {
        int64_t n = 0;
        switch (c.ns) {
          case scheduler::TagNamespace::kSelf: n = count(tag, job); break;
          case scheduler::TagNamespace::kAll: n = count(tag, -1); break;
          case scheduler::TagNamespace::kNotSelf: n = count(tag, -1) - count(tag, job); break;
          case scheduler::TagNamespace::kAppId:
            n = count(tag, static_cast<int64_t>(c.ns_app) - 1);  // app ids are job index + 1
            break;
        }
        lo = std::min(lo, n);
        hi = std::max(hi, n);
      }
      return lo >= c.min && hi <= c.max;
    }
    case Kind::kAttribute:
      return std::nullopt;
    case Kind::kAnd:
    case Kind::kOr: {
      const bool is_and = c.kind == Kind::kAnd;
      for (const scheduler::PlacementConstraint& child : c.children) {
        std::optional<bool> r = Satisfied(child, job, node);
        if (!r.has_value()) return std::nullopt;
        if (*r != is_and) return !is_and;
      }
      return is_and;
    }
  }
  return std::nullopt;
}

void Sim::ForgetRunning(ContainerId c, const RunningTask& t, int64_t now) {
  const JobRun& job = jobs_[t.job];
  if (!job.groups.empty()) {
    const TaskGroup& spec = *job.groups[t.group].spec;
    if (!spec.tags.empty()) CountTags(spec, t.job, t.node, -1);
  }
  if (t.held) {
    --held_;
    auto it = held_resource_.find(c);
    if (it != held_resource_.end()) {
      held_total_ -= it->second;
      held_resource_.erase(it);
    }
    if (!job.groups.empty()) {
      std::vector<ContainerId>& held = jobs_[t.job].groups[t.group].held;
      held.erase(std::remove(held.begin(), held.end(), c), held.end());
    }
    return;
  }
  if (contention_) NodeLeave(c, now);
}

void Sim::FailJob(int64_t j, int64_t now, const std::string& why) {
  JobRun& job = jobs_[j];
  if (job.done) return;
  r_.warnings.push_back(absl::StrCat("job ", job.job->id, ": ", why, "; the job FAILED"));
  if (job.added) {
    Timed([&] { return s_->RemoveApp(job.app); }).status().IgnoreError();
    job.added = false;
  }
  std::vector<ContainerId> mine;
  for (const auto& [c, t] : running_) {
    if (t.job == j) mine.push_back(c);
  }
  std::sort(mine.begin(), mine.end());  // a deterministic order
  for (ContainerId c : mine) {
    auto it = running_.find(c);
    RunningTask t = it->second;
    running_.erase(it);
    ForgetRunning(c, t, now);
  }
  FinishJob(j, now, /*failed=*/true);
}

bool Sim::Stalled(int64_t now) {
  if (work_events_ > 0 || static_cast<int64_t>(running_.size()) > held_ ||
      s_->NextActivationMs() >= 0) {
    stall_since_ = -1;
    return false;
  }
  if (stall_since_ < 0) stall_since_ = now;
  return now - stall_since_ >= stall_window_ms_;
}

void Sim::NodeUpdate(NodeRun& nr, int64_t now) {
  // Bring every task's remaining work up to date at the old rate.
  const double elapsed = static_cast<double>(now - nr.last_ms);
  for (ContainerId c : nr.tasks) running_[c].remaining_ms -= elapsed * nr.rate;
  nr.last_ms = now;
}

void Sim::NodeJoin(ContainerId c, int64_t now) {
  RunningTask& t = running_[c];
  NodeRun& nr = node_run_[static_cast<size_t>(t.node)];
  NodeUpdate(nr, now);
  nr.tasks.push_back(c);
  const TaskGroup& g = *jobs_[t.job].groups[t.group].spec;
  if (g.has_usage) {
    nr.cpu += g.usage.cpu;
    nr.io += g.usage.io;
    nr.mem += g.usage.memory;
  }
  double load = std::max({nr.cpu, nr.io, nr.mem});
  nr.rate = load <= 1 ? 1.0 : 1.0 / (load * (1 + o_.overload_penalty * (load - 1)));
  for (ContainerId x : nr.tasks) {
    RunningTask& rt = running_[x];
    ++rt.version;
    double left = std::max(rt.remaining_ms, 0.0) / nr.rate;
    Push(now + std::max<int64_t>(0, static_cast<int64_t>(std::ceil(left - 1e-6))),
         TaskFinishEvent{x, rt.version});
  }
}

void Sim::NodeLeave(ContainerId c, int64_t now) {
  RunningTask& t = running_[c];
  NodeRun& nr = node_run_[static_cast<size_t>(t.node)];
  NodeUpdate(nr, now);
  nr.tasks.erase(std::find(nr.tasks.begin(), nr.tasks.end(), c));
  const TaskGroup& g = *jobs_[t.job].groups[t.group].spec;
  if (g.has_usage) {
    nr.cpu -= g.usage.cpu;
    nr.io -= g.usage.io;
    nr.mem -= g.usage.memory;
  }
  if (nr.tasks.empty()) nr.cpu = nr.io = nr.mem = 0;  // no drift from rounding
  double load = std::max({nr.cpu, nr.io, nr.mem});
  double rate = load <= 1 ? 1.0 : 1.0 / (load * (1 + o_.overload_penalty * (load - 1)));
  bool changed = rate != nr.rate;
  nr.rate = rate;
  if (!changed) return;  // the others' finish events stay right
  for (ContainerId x : nr.tasks) {
    RunningTask& rt = running_[x];
    ++rt.version;
    double left = std::max(rt.remaining_ms, 0.0) / nr.rate;
    Push(now + std::max<int64_t>(0, static_cast<int64_t>(std::ceil(left - 1e-6))),
         TaskFinishEvent{x, rt.version});
  }
}

void Sim::TaskFinished(ContainerId c, uint64_t version, int64_t now) {
  auto it = running_.find(c);
  if (it == running_.end()) return;  // lost or preempted before it finished
  if (contention_) {
    if (it->second.version != version) return;  // rescheduled since
    NodeLeave(c, now);
    it = running_.find(c);
  }
  RunningTask t = it->second;
  running_.erase(it);
  Timed([&] { return s_->ContainerCompleted(c, now); }).IgnoreError();
  JobRun& job = jobs_[t.job];
  GroupRun& g = job.groups[t.group];
  if (!g.spec->tags.empty()) CountTags(*g.spec, t.job, t.node, -1);
  --g.running;
  --job.running;
  if (job.max_running >= 0) job.dirty = true;  // its budget of tasks at once grew
  ++g.done;
  if (g.done == g.spec->count) {
    g.finished = true;
    --job.groups_left;
    for (int32_t d = 0; d < static_cast<int32_t>(job.groups.size()); ++d) {
      const auto& deps = job.groups[d].spec->depends_on;
      if (std::find(deps.begin(), deps.end(), t.group) == deps.end()) continue;
      if (--job.groups[d].deps_left == 0 && job.am_running) AskGroup(job, d);
    }
    if (job.groups_left == 0) {
      FinishJob(t.job, now, false);
      return;
    }
  }
  if (job.dirty) dirty_jobs_.push_back(t.job);
  EnsurePass(now);
}

void Sim::Requeue(const RunningTask& t) {
  JobRun& job = jobs_[t.job];
  GroupRun& g = job.groups[t.group];
  --g.running;
  --job.running;
  ++g.waiting;
  if (t.task >= 0) {
    g.started[t.task] = 0;
    g.stack.push_back(t.task);
    if (g.asked) TaskWaiting(g, t.task, +1);
  }
  g.dirty_any = true;
  job.dirty = true;
  dirty_jobs_.push_back(t.job);
}

void Sim::FinishJob(int64_t j, int64_t now, bool failed) {
  JobRun& job = jobs_[j];
  if (job.done) return;
  job.done = true;
  --jobs_left_;
  JobResult& res = r_.job_results[j];
  if (failed) {
    res.failed = true;
    ++r_.jobs_failed;
    return;
  }
  res.finish_ms = now;
  r_.makespan_ms = std::max(r_.makespan_ms, now);
  if (job.added) {
    Timed([&] { return s_->RemoveApp(job.app); }).status().IgnoreError();
    job.added = false;
  }
  job.groups.clear();
  job.groups.shrink_to_fit();
  EnsurePass(now);
}

void Sim::Lost(const std::vector<ContainerKill>& kills, int64_t now) {
  std::vector<std::pair<int64_t, bool>> am_lost;  // job, counts as a failed attempt
  for (const ContainerKill& k : kills) {
    auto it = running_.find(k.container);
    if (it != running_.end()) {
      ForgetRunning(k.container, it->second, now);
      Requeue(it->second);
      running_.erase(it);
      ++r_.lost_containers;
      continue;
    }
    int64_t j = static_cast<int64_t>(k.app - 1);
    if (jobs_[j].am_running && jobs_[j].am_container == k.container)
      am_lost.emplace_back(j, k.reason != ContainerExit::kPreempted);
  }
  for (auto [j, counts] : am_lost) {
    jobs_[j].failed_for_memory = false;  // lost with its node or preempted
    AmLost(j, counts, now);
  }
}

}  // namespace weft::sim::internal
