#include "scheduler/policies/ras/ras_policy.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"

namespace weft::scheduler {
namespace ras {

PhaseProfile PhaseAt(const AppState& app, int32_t priority) {
  for (const PhaseProfile& p : app.profile.phases) {
    if (p.priority == priority) return p;
  }
  PhaseProfile p;
  p.priority = priority;
  return p;
}

namespace {

// Mean run time of the app's completed tasks of phases of `kind`; until one has finished, the
// mean of those phases' declared expected lengths; -1 when neither is known (ms).
double AvgTaskMs(const AppState& app, PhaseKind kind) {
  int64_t n = 0, total = 0;
  for (const auto& [priority, st] : app.task_stats) {
    if (PhaseAt(app, priority).kind != kind) continue;
    n += st.completed;
    total += st.total_ms;
  }
  if (n > 0) return static_cast<double>(total) / static_cast<double>(n);
  for (const PhaseProfile& p : app.profile.phases) {
    if (p.kind != kind || p.expected_task_ms <= 0) continue;
    ++n;
    total += p.expected_task_ms;
  }
  return n > 0 ? static_cast<double>(total) / static_cast<double>(n) : -1;
}

double AvgMapMs(const AppState& app) { return AvgTaskMs(app, PhaseKind::kMapLike); }

// The time the map-like phase must leave before the goal for the reduce-like one that follows
// it (reduce-like tasks run at once, spread out, after the maps): one reduce-like task's mean
// observed length, or the map-like one's until a reduce-like task has finished; 0 for apps
// without a reduce-like phase in their profile (ms).
double ReduceReserveMs(const AppState& app, double avg_map_ms) {
  bool has_reduce = false;
  for (const PhaseProfile& p : app.profile.phases) has_reduce |= p.kind == PhaseKind::kReduceLike;
  if (!has_reduce) return 0;
  const double avg_reduce_ms = AvgTaskMs(app, PhaseKind::kReduceLike);
  return avg_reduce_ms >= 0 ? avg_reduce_ms : std::max(avg_map_ms, 0.0);
}

// RequiredMapSlots for `app`, with its reduce-like phase's time reserved before the goal.
int64_t RequiredSlotsOf(const AppState& app, int64_t s_pend, int64_t goal_ms, int64_t now_ms) {
  const double avg = AvgMapMs(app);
  int64_t map_goal = goal_ms;
  if (goal_ms >= 0) map_goal = goal_ms - static_cast<int64_t>(ReduceReserveMs(app, avg));
  return RequiredMapSlots(s_pend, avg, map_goal, now_ms);
}

// The app's pending containers per priority (AM excluded; none while its AM waits).
std::map<int32_t, int64_t> PendingByPriority(const AppState& app) {
  std::map<int32_t, int64_t> out;
  if (!app.groups.empty() && app.groups[0].is_am) return out;
  for (const RequestGroup& g : app.groups) {
    if (!g.is_am && g.any.count > 0) out[g.priority] += g.any.count;
  }
  return out;
}

}  // namespace

absl::StatusOr<JobStatus> StatusOf(const Scheduler& s, AppId id, int64_t now_ms) {
  const AppState* app = s.app(id);
  if (app == nullptr) return absl::NotFoundError(absl::StrCat("application ", id, " not found"));
  JobStatus st;
  st.app = id;
  st.goal_ms = app->profile.goal_ms;
  for (const auto& [priority, n] : PendingByPriority(*app)) {
    (PhaseAt(*app, priority).kind == PhaseKind::kMapLike ? st.s_pend : st.r_pend) += n;
  }
  for (ContainerId c : s.AppContainers(id)) {
    const ContainerState* cs = s.container(c);
    if (cs->is_am) continue;
    bool map = PhaseAt(*app, cs->priority).kind == PhaseKind::kMapLike;
    ++(map ? st.s_running : st.r_running);
    ++(map ? st.s_pend : st.r_pend);
  }
  st.avg_map_ms = AvgMapMs(*app);
  st.s_req = RequiredSlotsOf(*app, st.s_pend, st.goal_ms, now_ms);
  st.utility = JobUtility(st.s_running, st.s_req, st.s_pend, st.r_running, st.r_pend);
  return st;
}

}  // namespace ras

namespace {

using ras::Load;

// Orders apps as FIFO does (seed 003's RAS has no queue fairness); what it adds is placement.
class RasPolicy final : public FifoOrderingPolicy {
 public:
  absl::string_view name() const override { return "ras"; }
  absl::Status Configure(const SchedulerConfig& config) override {
    auto section = config.policy_sections.find("ras");
    if (section == config.policy_sections.end()) {
      config_ = RasConfig();
      return absl::OkStatus();
    }
    absl::StatusOr<RasConfig> parsed = ParseRasSection(section->second, config.origin);
    if (!parsed.ok()) return parsed.status();
    config_ = *parsed;
    return absl::OkStatus();
  }
  std::optional<AppPolicyReport> Report(const Scheduler& scheduler, AppId app,
                                        int64_t now_ms) const override {
    absl::StatusOr<ras::JobStatus> st = ras::StatusOf(scheduler, app, now_ms);
    if (!st.ok()) return std::nullopt;
    return AppPolicyReport{st->utility, static_cast<int32_t>(st->s_running),
                           static_cast<int32_t>(st->r_running)};
  }
  bool DecidesPlacement() const override { return true; }
  void Place(PlacementContext& ctx) override;

 private:
  // A phase of the model, with where it came from.
  struct PhaseRef {
    const AppState* app;
    int32_t priority;
  };
  using Key = std::pair<AppId, int32_t>;  // (app, container priority)

  void BuildModel(const PlacementContext& ctx);
  bool NeedsPlan(const PlacementContext& ctx) const;

  RasConfig config_;
  // The current plan: job slots per node for each (app, priority).
  absl::flat_hash_map<Key, std::vector<int32_t>> plan_;
  bool has_plan_ = false;
  int64_t plan_ms_ = 0;
  NodeId plan_node_limit_ = 0;
  int plan_usable_nodes_ = 0;
  // This pass's model (rebuilt every pass).
  ras::PlacementModel model_;
  std::vector<PhaseRef> refs_;
  std::vector<const AppState*> job_apps_;
  int usable_nodes_ = 0;
};

void RasPolicy::BuildModel(const PlacementContext& ctx) {
  const NodeId n_nodes = ctx.node_limit();
  model_.nodes.assign(static_cast<size_t>(n_nodes), {});
  model_.jobs.clear();
  model_.phases.clear();
  refs_.clear();
  job_apps_.clear();
  usable_nodes_ = 0;
  absl::flat_hash_map<AppId, int32_t> job_of;
  std::map<std::pair<int32_t, int32_t>, int32_t> phase_of;  // (job, priority) -> phase
  auto phase = [&](const AppState& app, int32_t job, int32_t priority) -> ras::PhaseModel& {
    auto [it, inserted] = phase_of.try_emplace({job, priority}, 0);
    if (inserted) {
      it->second = static_cast<int32_t>(model_.phases.size());
      PhaseProfile prof = ras::PhaseAt(app, priority);
      ras::PhaseModel pm;
      pm.job = job;
      pm.priority = priority;
      pm.kind = prof.kind;
      pm.has_usage = prof.has_usage;
      pm.usage = prof.usage;
      pm.running.assign(static_cast<size_t>(n_nodes), 0);
      pm.allowed.assign(static_cast<size_t>(n_nodes), 0);
      for (NodeId n = 0; n < n_nodes; ++n) {
        pm.allowed[n] = ctx.node(n).schedulable && !app.blacklist.contains(n);
      }
      model_.phases.push_back(std::move(pm));
      refs_.push_back({&app, priority});
    }
    return model_.phases[it->second];
  };
  for (const AppState* app : ctx.apps()) {
    int32_t j = static_cast<int32_t>(model_.jobs.size());
    job_of[app->id] = j;
    ras::JobModel jm;
    jm.goal_ms = app->profile.goal_ms;
    model_.jobs.push_back(jm);
    job_apps_.push_back(app);
    for (const auto& [priority, n] : ras::PendingByPriority(*app)) {
      ras::PhaseModel& pm = phase(*app, j, priority);
      pm.pending += n;
    }
    // Requests of the phases with pending tasks: their first group's capability.
    for (const RequestGroup& g : app->groups) {
      if (g.is_am || g.any.count <= 0) continue;
      auto it = phase_of.find({j, g.priority});
      if (it != phase_of.end() && model_.phases[it->second].request.IsZero())
        model_.phases[it->second].request = g.capability;
    }
  }
  for (NodeId n = 0; n < n_nodes; ++n) {
    const NodeState& node = ctx.node(n);
    ras::NodeModel& nm = model_.nodes[n];
    nm.usable = node.schedulable;
    nm.capacity = node.capacity;
    nm.free = (node.capacity - node.allocated).ClampedAtZero();
    usable_nodes_ += node.schedulable;
    ctx.ForEachContainer(n, [&](const ContainerState& c) {
      auto it = job_of.find(c.app);
      Load load;
      if (c.is_am || it == job_of.end()) {
        load = ras::TaskLoad(false, {}, c.resource, node.capacity);
      } else {
        ras::PhaseModel& pm = phase(*job_apps_[it->second], it->second, c.priority);
        ++pm.running[n];
        if (pm.request.IsZero()) pm.request = c.resource;
        load = ras::TaskLoad(pm.has_usage, pm.usage, c.resource, node.capacity);
      }
      for (int d = 0; d < ras::kNumDims; ++d) nm.used[d] += load[d];
    });
  }
  // Job aggregates and s_req.
  for (const ras::PhaseModel& pm : model_.phases) {
    int64_t running = 0;
    for (int32_t r : pm.running) running += r;
    ras::JobModel& jm = model_.jobs[pm.job];
    (pm.kind == PhaseKind::kMapLike ? jm.s_pend : jm.r_pend) += pm.pending + running;
  }
  for (size_t j = 0; j < model_.jobs.size(); ++j) {
    ras::JobModel& jm = model_.jobs[j];
    jm.s_req = ras::RequiredSlotsOf(*job_apps_[j], jm.s_pend, jm.goal_ms, ctx.now_ms());
  }
}

bool RasPolicy::NeedsPlan(const PlacementContext& ctx) const {
  if (!has_plan_ || ctx.now_ms() - plan_ms_ >= config_.control_period_ms ||
      ctx.now_ms() < plan_ms_ || ctx.node_limit() != plan_node_limit_ ||
      usable_nodes_ != plan_usable_nodes_)
    return true;
  for (size_t p = 0; p < model_.phases.size(); ++p) {
    if (model_.phases[p].pending > 0 && !plan_.contains(Key{refs_[p].app->id, refs_[p].priority}))
      return true;  // a new job, or a new phase of one: react at once
  }
  return false;
}

void RasPolicy::Place(PlacementContext& ctx) {
  // ApplicationMasters first, by the core's placement: nothing of an app runs before its AM.
  for (const AppState* app : ctx.apps()) {
    if (!app->groups.empty() && app->groups[0].is_am && app->groups[0].any.count > 0)
      ctx.PlaceAnywhere(app->id, 0);
  }
  BuildModel(ctx);
  if (model_.phases.empty()) return;

  // The placement control loop.
  if (NeedsPlan(ctx)) {
    ras::Placement plan = ras::ComputePlacement(model_, config_.max_rounds);
    plan_.clear();
    for (size_t p = 0; p < model_.phases.size(); ++p)
      plan_[Key{refs_[p].app->id, refs_[p].priority}] = std::move(plan.slots[p]);
    has_plan_ = true;
    plan_ms_ = ctx.now_ms();
    plan_node_limit_ = ctx.node_limit();
    plan_usable_nodes_ = usable_nodes_;
  }

  // The task scheduler. Live counts, updated as containers are placed in this pass.
  const size_t n_phases = model_.phases.size();
  std::vector<std::vector<int32_t>> running(n_phases);
  std::vector<const std::vector<int32_t>*> planned(n_phases, nullptr);
  std::vector<int64_t> pending(n_phases);
  std::vector<int64_t> s_run(model_.jobs.size(), 0), r_run(model_.jobs.size(), 0);
  for (size_t p = 0; p < n_phases; ++p) {
    const ras::PhaseModel& pm = model_.phases[p];
    running[p] = pm.running;
    pending[p] = pm.pending;
    auto it = plan_.find(Key{refs_[p].app->id, refs_[p].priority});
    if (it != plan_.end()) planned[p] = &it->second;
    int64_t total = 0;
    for (int32_t r : pm.running) total += r;
    (pm.kind == PhaseKind::kMapLike ? s_run : r_run)[pm.job] += total;
  }
  auto utility = [&](int32_t j) { return ras::UtilityOf(model_.jobs[j], s_run[j], r_run[j]); };
  // A group of phase p that may start a task on node n now, with that task's load.
  auto candidate = [&](size_t p, size_t n) -> std::pair<int, Load> {
    const ras::PhaseModel& pm = model_.phases[p];
    const AppState& app = *refs_[p].app;
    if (!pm.allowed[n]) return {-1, Load{}};
    for (size_t gi = 0; gi < app.groups.size(); ++gi) {
      const RequestGroup& g = app.groups[gi];
      if (g.is_am || g.priority != pm.priority || g.any.count <= 0) continue;
      Load load = ras::TaskLoad(pm.has_usage, pm.usage, g.capability, model_.nodes[n].capacity);
      if (!ras::LoadFits(model_.nodes[n].used, load)) continue;
      if (ctx.CanPlace(app, gi, static_cast<NodeId>(n))) return {static_cast<int>(gi), load};
    }
    return {-1, Load{}};
  };
  auto commit = [&](size_t p, size_t n, int gi, const Load& load) {
    const ras::PhaseModel& pm = model_.phases[p];
    if (!ctx.Place(refs_[p].app->id, static_cast<size_t>(gi), static_cast<NodeId>(n))) return false;
    ++running[p][n];
    --pending[p];
    ++(pm.kind == PhaseKind::kMapLike ? s_run : r_run)[pm.job];
    for (int d = 0; d < ras::kNumDims; ++d) model_.nodes[n].used[d] += load[d];
    return true;
  };

  // 1. Towards the plan: slots the plan gives a job beyond its running tasks on a node, lowest
  //    current utility first, when the task's usage fits the node now.
  std::vector<std::pair<size_t, size_t>> deficits;
  for (size_t p = 0; p < n_phases; ++p) {
    if (planned[p] == nullptr || pending[p] <= 0) continue;
    for (size_t n = 0; n < model_.nodes.size() && n < planned[p]->size(); ++n) {
      if ((*planned[p])[n] > running[p][n]) deficits.emplace_back(p, n);
    }
  }
  while (!deficits.empty()) {
    int best = -1, best_group = -1;
    Load best_load{};
    std::tuple<double, int32_t, size_t, size_t> best_key;
    for (size_t i = 0; i < deficits.size(); ++i) {
      auto [p, n] = deficits[i];
      if (pending[p] <= 0 || (*planned[p])[n] <= running[p][n]) continue;
      auto key = std::make_tuple(utility(model_.phases[p].job), model_.phases[p].job, p, n);
      if (best >= 0 && !(key < best_key)) continue;
      auto [gi, load] = candidate(p, n);
      if (gi < 0) continue;
      best = static_cast<int>(i);
      best_group = gi;
      best_load = load;
      best_key = key;
    }
    if (best < 0) break;
    auto [p, n] = deficits[static_cast<size_t>(best)];
    if (!commit(p, n, best_group, best_load)) deficits.erase(deficits.begin() + best);
  }

  // 2. Work conservation: what capacity remains goes to any pending task that fits, lowest
  //    utility first, on the node it leaves least loaded.
  std::vector<std::vector<size_t>> job_phases(model_.jobs.size());
  for (size_t p = 0; p < n_phases; ++p) job_phases[model_.phases[p].job].push_back(p);
  for (auto& list : job_phases) {
    std::sort(list.begin(), list.end(), [&](size_t a, size_t b) {
      return model_.phases[a].priority < model_.phases[b].priority;
    });
  }
  std::vector<uint8_t> done(model_.jobs.size(), 0);
  while (true) {
    int32_t low = -1;
    for (int32_t j = 0; j < static_cast<int32_t>(model_.jobs.size()); ++j) {
      if (done[j]) continue;
      bool wants = false;
      for (size_t p : job_phases[j]) wants |= pending[p] > 0;
      if (!wants) {
        done[j] = 1;
        continue;
      }
      if (low < 0 || utility(j) < utility(low)) low = j;
    }
    if (low < 0) break;
    bool placed = false;
    for (size_t p : job_phases[low]) {  // phases in ascending priority (YARN: lower first)
      if (pending[p] <= 0) continue;
      int best = -1, best_group = -1;
      Load best_load{};
      double best_peak = 0;
      for (size_t n = 0; n < model_.nodes.size(); ++n) {
        auto [gi, load] = candidate(p, n);
        if (gi < 0) continue;
        double peak = ras::PeakAfter(model_.nodes[n].used, load);
        if (best >= 0 && peak >= best_peak - 1e-12) continue;
        best = static_cast<int>(n);
        best_group = gi;
        best_load = load;
        best_peak = peak;
      }
      if (best >= 0 && commit(p, static_cast<size_t>(best), best_group, best_load)) {
        placed = true;
        break;
      }
    }
    if (!placed) done[low] = 1;
  }
}

}  // namespace

std::unique_ptr<SchedulingPolicy> NewRasPolicy() { return std::make_unique<RasPolicy>(); }

absl::StatusOr<RasConfig> ParseRasSection(absl::string_view text, absl::string_view origin) {
  absl::StatusOr<YAML::Node> loaded = yaml::Load(text, origin);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& node = *loaded;
  RasConfig config;
  if (node.IsNull()) return config;
  if (auto s = yaml::CheckKeys(node, {"control-period-ms", "max-rounds"}, origin, "ras"); !s.ok())
    return s;
  if (node["control-period-ms"]) {
    auto v = yaml::Scalar<int64_t>(node["control-period-ms"], origin, "ras.control-period-ms");
    if (!v.ok()) return v.status();
    if (*v < 1)
      return yaml::Err(origin, "ras.control-period-ms", absl::StrCat(*v, " must be >= 1"));
    config.control_period_ms = *v;
  }
  if (node["max-rounds"]) {
    auto v = yaml::Scalar<int32_t>(node["max-rounds"], origin, "ras.max-rounds");
    if (!v.ok()) return v.status();
    if (*v < 0) return yaml::Err(origin, "ras.max-rounds", absl::StrCat(*v, " must be >= 0"));
    config.max_rounds = *v;
  }
  return config;
}

absl::Status ValidateRasSection(absl::string_view yaml, absl::string_view origin) {
  return ParseRasSection(yaml, origin).status();
}

}  // namespace weft::scheduler
