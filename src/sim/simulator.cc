#include "sim/simulator.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <queue>
#include <random>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "adaptcont/adaptcont.h"
#include "scheduler/registry.h"

namespace weft::sim {

using scheduler::Allocation;
using scheduler::AppId;
using scheduler::ContainerExit;
using scheduler::ContainerId;
using scheduler::ContainerKill;
using scheduler::NodeId;
using scheduler::PassResult;
using scheduler::RequestUpdate;
using scheduler::ResourceRequest;
using scheduler::Scheduler;

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

namespace {

// The policy whose per-app report gives the utility series (seed 003's utility function).
constexpr char kUtilityYardstick[] = "ras";

// Events at the same instant run in this order, then in the order they were queued.
enum class EventType : uint8_t { kTaskFinish, kFailure, kSubmit, kAmReady, kPass, kSample };

struct Event {
  int64_t time;
  EventType type;
  uint64_t seq;
  int64_t a;   // job index, failure index
  uint64_t b;  // container id, attempt
  uint64_t c;  // kTaskFinish under the contention model: the task's schedule version
  bool operator>(const Event& o) const {
    return std::tie(time, type, seq) > std::tie(o.time, o.type, o.seq);
  }
};

uint64_t Fnv1a(absl::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 1099511628211ull;
  }
  return h;
}

struct GroupRun {
  const TaskGroup* spec = nullptr;
  int32_t deps_left = 0;
  bool asked = false;
  bool finished = false;
  int64_t waiting = 0;  // tasks without a container
  int64_t running = 0;
  int64_t done = 0;
  // Per-task state, only for groups whose tasks differ (durations or preferred hosts).
  bool per_task = false;
  int32_t replicas = 0;          // preferred nodes per task
  std::vector<NodeId> prefs;     // task i prefers prefs[i*replicas .. +replicas)
  std::vector<uint8_t> started;  // per task: has (or had) a container
  std::vector<int32_t> stack;    // waiting task indices (lazily cleaned)
  absl::flat_hash_map<NodeId, std::vector<int32_t>> by_node;
  absl::flat_hash_map<int32_t, std::vector<int32_t>> by_rack;
  absl::flat_hash_map<NodeId, int32_t> node_count;  // waiting tasks preferring the node
  absl::flat_hash_map<int32_t, int32_t> rack_count;
  std::set<NodeId> dirty_nodes;
  std::set<int32_t> dirty_racks;
  bool dirty_any = false;
};

struct JobRun {
  const Job* job = nullptr;
  AppId app = 0;
  bool added = false;
  bool am_running = false;
  ContainerId am_container = 0;
  int32_t attempt = 0;
  std::vector<GroupRun> groups;
  int64_t groups_left = 0;
  bool dirty = false;
  bool done = false;
  // AdaptCont runs (SimOptions::am_master) only.
  Resource am_resource;            // the current attempt's AM container
  int64_t max_running = -1;        // tasks the AM runs at once at most; -1 = no limit
  int64_t trackable = -1;          // tasks its memory can track (the model); -1 = unlimited
  int64_t running = 0;             // its running task containers
  int64_t nodes_lost_seen = 0;     // Sim::nodes_lost_ at its last decision
  bool failed_for_memory = false;  // its last attempt was killed for memory
};

struct RunningTask {
  int64_t job;
  int32_t group;
  int32_t task;  // -1 for identical tasks
  // Contention model only.
  NodeId node = -1;
  double remaining_ms = 0;  // work left, in ms at full speed
  uint64_t version = 0;     // bumped whenever its finish event is rescheduled
};

// A node's running tasks under the contention model.
struct NodeRun {
  std::vector<ContainerId> tasks;
  double cpu = 0, io = 0, mem = 0;  // summed usage shares of its tasks
  double rate = 1;                  // progress per ms of every task on it
  int64_t last_ms = 0;              // when remaining_ms was last brought up to date
};

class Sim {
 public:
  Sim(const Workload& w, const SimOptions& o) : w_(w), o_(o), rng_(o.seed) {}

  absl::StatusOr<SimReport> Run();

 private:
  void Push(int64_t t, EventType type, int64_t a = 0, uint64_t b = 0, uint64_t c = 0) {
    events_.push(Event{t, type, seq_++, a, b, c});
  }
  void EnsurePass(int64_t now) {
    int64_t hb = o_.heartbeat_ms;
    int64_t tick = (now + hb - 1) / hb * hb;
    if (tick <= last_pass_) tick = last_pass_ + hb;
    if (next_pass_ >= 0 && next_pass_ <= tick) return;
    next_pass_ = tick;
    Push(tick, EventType::kPass);
  }
  template <typename F>
  auto Timed(F f) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    sched_wall_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  void Account(int64_t now);
  void Submit(int64_t j, int64_t now);
  void AmReady(int64_t j, uint64_t attempt, int64_t now);
  void AskGroup(JobRun& job, int32_t g);
  void FlushAsks(JobRun& job, int64_t j);
  void Allocated(const Allocation& a, int64_t now);
  void TaskFinished(ContainerId c, uint64_t version, int64_t now);
  // Contention model: a task joins or leaves its node; every task there is rescheduled.
  void NodeJoin(ContainerId c, int64_t now);
  void NodeLeave(ContainerId c, int64_t now);
  void NodeUpdate(NodeRun& nr, int64_t now);
  void Requeue(const RunningTask& t);
  void TaskWaiting(GroupRun& g, int32_t task, int delta);
  void AmLost(int64_t j, bool counts, int64_t now);
  void FinishJob(int64_t j, int64_t now, bool failed);
  void Lost(const std::vector<ContainerKill>& kills, int64_t now);
  void TakeSample(int64_t now);
  // AdaptCont: sizes job j's next AM attempt into JobRun::am_resource; errors are the
  // decision's (no AM fits its ceilings).
  absl::Status SizeAm(int64_t j);
  // What the job's queue would give it at once under the policy with the jobs now in the
  // scheduler: AdaptCont's headroom (docs/adaptcont.md, "In the simulator").
  Resource ExpectedShare(const JobRun& job) const;
  // The container one task of `spec` asks for (its first group's, or the slot under --slots):
  // the unit AdaptCont counts its headroom in.
  Resource WorkerContainer(const Job& spec) const;
  // Kills the attempts whose AM runs more tasks than its memory can track (the model).
  void CheckAmMemory(int64_t j, int64_t now);

  const Workload& w_;
  const SimOptions& o_;
  std::mt19937_64 rng_;
  std::unique_ptr<Scheduler> s_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t seq_ = 0;
  int64_t last_pass_ = -1, next_pass_ = -1;
  std::vector<JobRun> jobs_;
  std::vector<int64_t> dirty_jobs_;
  absl::flat_hash_map<ContainerId, RunningTask> running_;
  absl::flat_hash_map<NodeId, int32_t> node_rack_;
  std::vector<NodeId> node_ids_;
  double sched_wall_ = 0;
  int64_t jobs_left_ = 0;
  int64_t last_t_ = 0;
  std::vector<double> util_integral_;
  std::vector<int> util_types_;
  bool contention_ = false;
  bool utility_series_ = false;           // goals or usage profiles: samples carry RAS utility
  int64_t nodes_lost_ = 0;                // nodes removed by failure injection so far
  adaptcont::AmResource max_allocation_;  // registry maximum capped by the largest node
  Resource slot_request_;
  std::vector<NodeRun> node_run_;  // by NodeId, contention model only
  double jain_sum_ = 0;
  int64_t jain_n_ = 0;
  SimReport r_;
};

void Sim::Account(int64_t now) {
  if (now <= last_t_) return;
  const Resource used = s_->cluster_allocated();
  const Resource& total = s_->cluster_total();
  double dt = static_cast<double>(now - last_t_);
  for (size_t i = 0; i < util_types_.size(); ++i) {
    int t = util_types_[i];
    if (total[t] > 0)
      util_integral_[i] += dt * static_cast<double>(used[t]) / static_cast<double>(total[t]);
  }
  last_t_ = now;
}

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
  absl::Status st = Timed([&] { return s_->AddApp(spec, now); });
  if (!st.ok()) {
    r_.warnings.push_back(
        absl::StrCat(job.job->source, ": job ", job.job->id, " rejected: ", st.message()));
    FinishJob(j, now, /*failed=*/true);
    return;
  }
  job.added = true;
  ++job.attempt;
  r_.job_results[j].am_attempts = job.attempt;
  if (spec.am_resource.IsZero()) {
    job.am_running = true;  // no AM container: the (unmanaged) AM runs from submission on
    AmReady(j, static_cast<uint64_t>(job.attempt), now);
  } else {
    EnsurePass(now);
  }
}

void Sim::AmReady(int64_t j, uint64_t attempt, int64_t now) {
  JobRun& job = jobs_[j];
  if (job.done || static_cast<int32_t>(attempt) != job.attempt) return;  // a stale attempt
  for (int32_t g = 0; g < static_cast<int32_t>(job.groups.size()); ++g) {
    if (job.groups[g].deps_left == 0 && !job.groups[g].finished) AskGroup(job, g);
  }
  if (job.groups_left == 0) FinishJob(j, now, false);
  FlushAsks(job, j);
  EnsurePass(now);
}

// Makes every waiting task of the group visible to the scheduler.
void Sim::AskGroup(JobRun& job, int32_t gi) {
  GroupRun& g = job.groups[gi];
  if (g.asked) return;
  g.asked = true;
  g.dirty_any = true;
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

void Sim::FlushAsks(JobRun& job, int64_t j) {
  (void)j;
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
    if (capped) {
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
    Push(now + o_.am_launch_ms, EventType::kAmReady, j, static_cast<uint64_t>(job.attempt));
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
  int64_t duration = (task >= 0 && !g.spec->task_durations_ms.empty())
                         ? g.spec->task_durations_ms[static_cast<size_t>(task)]
                         : g.spec->duration_ms;
  running_[a.container] = RunningTask{j, static_cast<int32_t>(a.allocation_request_id), task};
  if (contention_) {
    RunningTask& rt = running_[a.container];
    rt.node = a.node;
    rt.remaining_ms = static_cast<double>(std::max<int64_t>(duration, 1));
    NodeJoin(a.container, now);
    return;
  }
  Push(now + std::max<int64_t>(duration, 1), EventType::kTaskFinish, j, a.container);
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
         EventType::kTaskFinish, rt.job, x, rt.version);
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
         EventType::kTaskFinish, rt.job, x, rt.version);
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

// The AM's attempt ended (its container was lost or preempted). As YARN by default, the
// attempt's containers go with it; a new attempt starts unless max attempts are used up.
void Sim::AmLost(int64_t j, bool counts, int64_t now) {
  JobRun& job = jobs_[j];
  auto released = Timed([&] { return s_->RemoveApp(job.app); });
  if (released.ok()) {
    for (const ContainerKill& k : *released) {
      auto it = running_.find(k.container);
      if (it == running_.end()) continue;
      if (contention_) NodeLeave(k.container, now);
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
      if (contention_) NodeLeave(k.container, now);
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

Resource Sim::WorkerContainer(const Job& spec) const {
  if (o_.slots > 0) return slot_request_;
  return spec.groups.empty() ? Resource::Of(1024, 1) : spec.groups.front().resource;
}

Resource Sim::ExpectedShare(const JobRun& job) const {
  const std::string& policy = o_.scheduler.policy;
  if (policy != "fair" && policy != "capacity") {
    // FIFO (and others): what is free now, less what the jobs ahead of it still want (their
    // tasks not yet running, within what their AMs run at once): they are served first.
    Resource share = (s_->cluster_total() - s_->cluster_allocated()).ClampedAtZero();
    for (const JobRun& other : jobs_) {
      if (&other == &job) break;  // jobs_ is in submission order
      if (!other.added || other.done) continue;
      int64_t want = 0;
      for (const GroupRun& g : other.groups) want += g.finished ? 0 : g.waiting;
      if (other.max_running >= 0)
        want = std::min(want, std::max<int64_t>(0, other.max_running - other.running));
      share = (share - WorkerContainer(*other.job) * want).ClampedAtZero();
    }
    return share;
  }
  Resource share = s_->cluster_total();
  const scheduler::QueueNode* leaf = s_->FindQueue(job.job->queue);
  if (leaf == nullptr) return share;
  auto scale = [&](double f) {
    for (int t = 0; t < o_.registry.size(); ++t)
      share[t] = static_cast<int64_t>(std::floor(static_cast<double>(share[t]) * f));
  };
  std::vector<const scheduler::QueueNode*> path;
  for (const scheduler::QueueNode* q = leaf; q->parent != nullptr; q = q->parent) path.push_back(q);
  for (auto it = path.rbegin(); it != path.rend(); ++it) {
    const scheduler::QueueNode* q = *it;
    const auto& siblings = q->parent->children;
    if (policy == "fair") {
      // Weighted among the siblings that have apps, this queue included.
      double sum = 0;
      for (const scheduler::QueueNode* c : siblings) {
        if (c == q || c->running_apps > 0) sum += c->config.weight;
      }
      scale(q->config.weight / sum);
    } else {
      // capacity: the guaranteed capacity, elastic growth not counted.
      scale(q->config.capacity >= 0 ? q->config.capacity / 100
                                    : 1.0 / static_cast<double>(siblings.size()));
    }
  }
  const bool fair_leaf = leaf->config.ordering.has_value()
                             ? *leaf->config.ordering == scheduler::LeafOrdering::kFair
                             : policy == "fair";
  if (fair_leaf) {
    int64_t apps = 1;  // this job's
    for (const scheduler::AppState* a : leaf->apps) apps += a->runnable ? 1 : 0;
    scale(1.0 / static_cast<double>(apps));
  }
  return share;
}

absl::Status Sim::SizeAm(int64_t j) {
  JobRun& job = jobs_[j];
  const Job& spec = *job.job;
  const adaptcont::AdaptContConfig& config = *o_.am_master;
  adaptcont::AmSizingInput in;
  in.user = spec.user;
  // Map-like tasks: the groups that depend on none; reduce-like: the others (seed 002's
  // application constraint sizes the AM for the former).
  int64_t maps = 0, reduces = 0;
  for (const TaskGroup& g : spec.groups) (g.depends_on.empty() ? maps : reduces) += g.count;
  in.map_tasks = maps;
  in.reduce_tasks = reduces;
  in.input_bytes = maps * config.split_bytes;
  in.available_containers =
      adaptcont::ContainersInHeadroom(ExpectedShare(job), WorkerContainer(spec));
  in.nodes_lost = nodes_lost_ - job.nodes_lost_seen;  // the headroom above is taken after it
  in.cluster_max_allocation = max_allocation_;
  if (job.attempt > 0) {
    in.previous_attempt = adaptcont::PreviousAttempt{
        {job.am_resource[kMemoryMb], job.am_resource[kVcores]}, job.failed_for_memory};
  }
  absl::StatusOr<adaptcont::AmSizingDecision> d = adaptcont::DecideAmSize(config, in);
  if (!d.ok()) return d.status();
  absl::StatusOr<Resource> am = o_.registry.Normalize(d->AsResource());
  if (!am.ok()) return am.status();
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
    const scheduler::QueueNode* q = s_->FindQueue(leaf);
    int64_t running = 0, pending = 0;
    for (const scheduler::AppState* a : q->apps) {
      running += a->num_containers;
      pending += a->pending_containers;
    }
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
      auto report = scheduler::PolicyReportAs(kUtilityYardstick, *s_, job.app, now);
      if (!report.ok() || !report->has_value()) continue;
      const scheduler::AppPolicyReport* st = &**report;
      smp.jobs.push_back(
          {static_cast<int32_t>(j), st->utility, st->running_map_like, st->running_reduce_like});
    }
  }
  r_.samples.push_back(std::move(smp));
  // Jain's index over the dominant shares of the apps that want more, counted only while the
  // cluster is contended (>= 90% of some resource allocated); see docs/simulator.md.
  if (s_->view().Share(used) < 0.9) return;
  double sum = 0, sq = 0;
  int n = 0;
  for (const std::string& leaf : r_.leaves) {
    for (const scheduler::AppState* a : s_->FindQueue(leaf)->apps) {
      // Apps that hold task containers and still want more: the ones a fair policy equalises.
      if (!a->runnable || a->pending_containers == 0 || !(a->usage - a->am_usage).AnyPositive())
        continue;
      double x = s_->view().Share(a->usage);
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

absl::StatusOr<SimReport> Sim::Run() {
  auto wall0 = std::chrono::steady_clock::now();
  if (o_.heartbeat_ms < 1) return absl::InvalidArgumentError("heartbeat must be >= 1 ms");
  auto sched = scheduler::CreateScheduler(o_.scheduler, {o_.registry, 1});
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
    for (const TaskGroup& g : job.groups) contention_ |= g.has_usage;
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
  if (o_.am_master) {
    Resource largest;
    for (const scheduler::NodeSpec& n : node_specs) largest = Max(largest, n.capacity);
    max_allocation_ = {std::min(o_.registry.info(kMemoryMb).maximum, largest[kMemoryMb]),
                       std::min(o_.registry.info(kVcores).maximum, largest[kVcores])};
  }
  for (const scheduler::NodeSpec& n : node_specs) {
    auto id = s_->AddNode(n);
    if (!id.ok()) return id.status();
    node_ids_.push_back(*id);
    node_rack_[*id] = s_->node(*id)->rack;
  }
  r_.policy = o_.scheduler.policy;
  r_.nodes = static_cast<int>(o_.nodes.size());
  if (contention_ && !node_ids_.empty())
    node_run_.resize(static_cast<size_t>(node_ids_.back() + 1));
  for (const scheduler::QueueNode* q : s_->queues()) {
    if (q->is_leaf()) r_.leaves.push_back(q->path);
  }
  for (int t = 0; t < o_.registry.size(); ++t) {
    if (s_->cluster_total()[t] > 0) {
      util_types_.push_back(t);
      r_.utilization_types.push_back(o_.registry.info(t).name);
    }
  }
  util_integral_.assign(util_types_.size(), 0);

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
    }
    Push(spec.submit_ms, EventType::kSubmit, static_cast<int64_t>(j));
    last_submit = std::max(last_submit, spec.submit_ms);
  }
  jobs_left_ = static_cast<int64_t>(jobs_.size());
  r_.jobs = jobs_left_;
  for (size_t f = 0; f < o_.failures.size(); ++f)
    Push(o_.failures[f].at_ms, EventType::kFailure, static_cast<int64_t>(f));
  int64_t sample_ms = o_.sample_ms;
  if (sample_ms <= 0) {
    // Aim at ~500 samples over a run we expect to last a little beyond the last submission.
    sample_ms = std::max<int64_t>(o_.heartbeat_ms, (last_submit + 3600 * 1000) / 500 / 1000 * 1000);
  }
  Push(0, EventType::kSample);

  int64_t now = 0;
  while (!events_.empty() && jobs_left_ > 0) {
    Event e = events_.top();
    events_.pop();
    if (e.time > o_.max_sim_ms) {
      r_.warnings.push_back(absl::StrCat("stopped at the time limit of ", o_.max_sim_ms / 1000,
                                         " s with ", jobs_left_, " jobs unfinished"));
      break;
    }
    Account(e.time);
    now = e.time;
    switch (e.type) {
      case EventType::kSubmit:
        Submit(e.a, now);
        break;
      case EventType::kAmReady:
        AmReady(e.a, e.b, now);
        break;
      case EventType::kTaskFinish:
        TaskFinished(e.b, e.c, now);
        break;
      case EventType::kFailure: {
        const FailureSpec& f = o_.failures[static_cast<size_t>(e.a)];
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
        break;
      }
      case EventType::kPass: {
        next_pass_ = -1;
        last_pass_ = now;
        for (int64_t j : dirty_jobs_) FlushAsks(jobs_[j], j);
        dirty_jobs_.clear();
        const PassResult& pr = Timed([&]() -> const PassResult& { return s_->Schedule(now); });
        std::vector<Allocation> allocations = pr.allocations;
        std::vector<ContainerKill> kills = pr.kills;
        for (const Allocation& a : allocations) Allocated(a, now);
        Lost(kills, now);
        if (o_.am_master) {
          for (const Allocation& a : allocations)
            CheckAmMemory(static_cast<int64_t>(a.app - 1), now);
        }
        for (const Allocation& a : allocations) {
          int64_t j = static_cast<int64_t>(a.app - 1);
          if (jobs_[j].dirty) dirty_jobs_.push_back(j);
        }
        for (int64_t j : dirty_jobs_) FlushAsks(jobs_[j], j);
        dirty_jobs_.clear();
        const scheduler::QueueNode* root = s_->FindQueue("root");
        if (root->pending.AnyPositive()) EnsurePass(now + 1);
        break;
      }
      case EventType::kSample:
        TakeSample(now);
        Push(now + sample_ms, EventType::kSample);
        break;
    }
  }
  Account(now);
  TakeSample(now);
  if (r_.makespan_ms == 0) r_.makespan_ms = now;
  double span = static_cast<double>(std::max<int64_t>(last_t_, 1));
  for (double x : util_integral_) r_.utilization_mean.push_back(x / span);
  r_.fairness_jain = jain_n_ > 0 ? jain_sum_ / static_cast<double>(jain_n_) : 1.0;
  const scheduler::SchedulerStats& st = s_->stats();
  r_.allocations = st.allocations;
  r_.node_local = st.node_local;
  r_.rack_local = st.rack_local;
  r_.off_switch = st.off_switch;
  r_.preempted = st.preempted;
  r_.contracts = st.contracts;
  r_.passes = st.passes;
  r_.scheduler_wall_s = sched_wall_;
  r_.total_wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  for (const std::string& wmsg : w_.warnings) r_.warnings.push_back(wmsg);
  return std::move(r_);
}

}  // namespace

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
  Sim sim(workload, options);
  return sim.Run();
}

}  // namespace weft::sim
