// Copyright Weft authors. The simulator's run state, shared by its parts (internal to src/sim):
//   simulator.cc   the run: set-up, the event loop, failure injection, scheduling passes
//   task_model.cc  tasks: asks, placement, run times and the contention model
//   am_model.cc    ApplicationMasters: submission, attempts, AdaptCont sizing, memory model
//   sampling.cc    the time series, utilisation and fairness
// Events are typed (event_queue.h). One Sim runs one simulation; not thread-safe.
#ifndef WEFT_SIM_SIM_RUN_H_
#define WEFT_SIM_SIM_RUN_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "adaptcont/adaptcont.h"
#include "scheduler/scheduler.h"
#include "sim/event_queue.h"
#include "sim/federation_model.h"
#include "sim/simulator.h"
#include "sim/workload.h"

namespace weft::sim::internal {

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

inline uint64_t Fnv1a(absl::string_view s) {
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
  // Placement (TaskGroup::has_placement): the group asks with its "*" row only.
  bool placement = false;
  // Gangs: when the phase asked (ms), and the containers allocated to it that wait, idle, for
  // the rest of the gang (the AM starts the tasks when it holds all of them).
  int64_t ask_ms = -1;
  std::vector<ContainerId> held;
  bool gang_started = false;
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
  NodeId node = -1;
  bool held = false;  // allocated to a gang phase that does not hold all its containers yet
  // Contention model only.
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
  // Events other than passes and samples can change what the scheduler sees.
  static bool IsWork(const SimEvent& e) {
    return !std::holds_alternative<PassEvent>(e) && !std::holds_alternative<SampleEvent>(e);
  }
  void Push(int64_t t, SimEvent e) {
    work_events_ += IsWork(e);
    events_.Push(t, std::move(e));
  }
  void EnsurePass(int64_t now) {
    int64_t hb = o_.heartbeat_ms;
    int64_t tick = (now + hb - 1) / hb * hb;
    if (tick <= last_pass_) tick = last_pass_ + hb;
    if (next_pass_ >= 0 && next_pass_ <= tick) return;
    next_pass_ = tick;
    Push(tick, PassEvent{});
  }
  // A pass when the federation's next deferred submission or UAM launch is due.
  void EnsureActivationPass() {
    if (int64_t t = s_->NextActivationMs(); t >= 0) EnsurePass(t);
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
  void AmReady(int64_t j, int32_t attempt, int64_t now);
  void AskGroup(JobRun& job, int32_t g);
  void FlushAsks(JobRun& job, int64_t j);
  void Allocated(const Allocation& a, int64_t now);
  void TaskFinished(ContainerId c, uint64_t version, int64_t now);
  // Contention model: a task joins or leaves its node; every task there is rescheduled.
  void NodeJoin(ContainerId c, int64_t now);
  void NodeLeave(ContainerId c, int64_t now);
  void NodeUpdate(NodeRun& nr, int64_t now);
  void Requeue(const RunningTask& t);
  // Starts a task on its container: its finish event, or its node under the contention model.
  void StartTask(ContainerId c, int64_t duration_ms, int64_t now);
  // A gang phase holds all its containers: starts every task.
  void StartGang(GroupRun& g, int64_t now);
  // Placement bookkeeping: the containers per (tag, node) and (tag, rack), and whether a task
  // container about to be counted at `node` satisfies its group's constraint (nullopt when the
  // simulator cannot tell: node attributes).
  void CountTags(const TaskGroup& g, int64_t job, NodeId node, int delta);
  std::optional<bool> Satisfied(const scheduler::PlacementConstraint& c, int64_t job,
                                NodeId node) const;
  // True when nothing can change any more: no task runs, no event but passes and samples is
  // due, no gang can time out, and it has been so for kStallMs. The run then stops.
  bool Stalled(int64_t now);
  // A running_ entry leaves (lost, released with its app): its tags, its hold or its node.
  void ForgetRunning(ContainerId c, const RunningTask& t, int64_t now);
  // The scheduler gave up a gang of job j (its timeout): the job fails, its containers go.
  void FailJob(int64_t j, int64_t now, const std::string& why);
  void TaskWaiting(GroupRun& g, int32_t task, int delta);
  void AmLost(int64_t j, bool counts, int64_t now);
  void FinishJob(int64_t j, int64_t now, bool failed);
  void Lost(const std::vector<ContainerKill>& kills, int64_t now);
  void TakeSample(int64_t now);
  // Failure injection: removes `f.fraction` of the live nodes (chosen with the seed).
  void InjectFailure(const FailureSpec& f, int64_t now);
  // A scheduling pass: flushes asks, runs the core, hands out what it allocated.
  void Pass(int64_t now);
  // AdaptCont: sizes job j's next AM attempt into JobRun::am_resource; errors are the
  // decision's (no AM fits its ceilings).
  absl::Status SizeAm(int64_t j);
  // The container one task of `spec` asks for (its first group's, or the slot under --slots):
  // the unit AdaptCont counts its headroom in.
  Resource WorkerContainer(const Job& spec) const;
  // Kills the attempts whose AM runs more tasks than its memory can track (the model).
  void CheckAmMemory(int64_t j, int64_t now);

  const Workload& w_;
  const SimOptions& o_;
  std::mt19937_64 rng_;
  // The cluster's cores: one, or one per sub-cluster (federation_model.h).
  std::unique_ptr<SubClusters> s_;
  EventQueue events_;
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
  Resource slot_request_;
  std::vector<NodeRun> node_run_;  // by NodeId, contention model only
  double jain_sum_ = 0;
  int64_t jain_n_ = 0;
  // Placement and gangs.
  int64_t work_events_ = 0;  // queued events that are not passes or samples
  int64_t held_ = 0;         // running_ entries that are held (RunningTask::held)
  int64_t timed_gangs_waiting_ = 0;  // asked gang phases with a timeout, not yet placed
  int64_t stall_since_ = -1;
  int64_t stall_window_ms_ = kStallMs;  // plus the longest gang timeout
  int64_t now_ = 0;                     // the time of the event being handled
  absl::flat_hash_map<ContainerId, Resource> held_resource_;  // per held container
  Resource held_total_;
  std::vector<double> held_integral_;
  struct TagKey {
    std::string tag;
    int64_t where;  // node id, or rack id
    int64_t job;    // -1: every job's
    bool rack;
    friend bool operator==(const TagKey&, const TagKey&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const TagKey& k) {
      return H::combine(std::move(h), k.tag, k.where, k.job, k.rack);
    }
  };
  absl::flat_hash_map<TagKey, int64_t> tag_counts_;
  std::vector<int64_t> gang_wait_ms_;
  SimReport r_;
};

}  // namespace weft::sim::internal

#endif  // WEFT_SIM_SIM_RUN_H_
