#include "rm/resource_manager.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace weft::rm {
namespace {

using scheduler::Allocation;
using scheduler::ContainerId;

bool IsFinal(const std::string& state) {
  return state == "FINISHED" || state == "FAILED" || state == "KILLED";
}

// A submission's RAS profile (seed 003): shares in [0, 1], distinct priorities, a goal that is
// not negative. The error names the phase and field.
absl::Status ValidateProfile(const v1::JobProfile& profile) {
  if (profile.completion_goal_ms() < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("profile: completion_goal_ms ", profile.completion_goal_ms(), " is negative"));
  std::set<int32_t> priorities;
  for (const v1::PhaseProfile& phase : profile.phases()) {
    const std::string name =
        absl::StrCat("profile phase '", phase.name(), "' (priority ", phase.priority(), ")");
    if (!priorities.insert(phase.priority()).second)
      return absl::InvalidArgumentError(absl::StrCat(name, ": another phase has that priority"));
    if (phase.expected_task_ms() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": expected_task_ms ", phase.expected_task_ms(), " is negative (0 = unknown)"));
    for (auto [field, value] : {std::pair<const char*, double>{"cpu", phase.cpu()},
                                {"io", phase.io()},
                                {"memory", phase.memory()}}) {
      if (!(value >= 0 && value <= 1))
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", field, " share ", value, " is not within [0, 1]"));
    }
  }
  return absl::OkStatus();
}

scheduler::JobProfile ToJobProfile(const v1::JobProfile& in) {
  scheduler::JobProfile out;
  out.goal_ms = in.completion_goal_ms() > 0 ? in.completion_goal_ms() : -1;
  for (const v1::PhaseProfile& p : in.phases()) {
    scheduler::PhaseProfile phase;
    phase.priority = p.priority();
    phase.name = p.name();
    phase.kind =
        p.reduce_like() ? scheduler::PhaseKind::kReduceLike : scheduler::PhaseKind::kMapLike;
    phase.has_usage = p.has_usage();
    phase.usage = {p.cpu(), p.io(), p.memory()};
    phase.expected_task_ms = p.expected_task_ms() > 0 ? p.expected_task_ms() : -1;
    out.phases.push_back(std::move(phase));
  }
  return out;
}

v1::ApplicationState ToProtoState(const std::string& s) {
  static const std::map<std::string, v1::ApplicationState> kMap = {
      {"NEW", v1::APP_NEW},           {"SUBMITTED", v1::APP_SUBMITTED},
      {"ACCEPTED", v1::APP_ACCEPTED}, {"RUNNING", v1::APP_RUNNING},
      {"FINISHED", v1::APP_FINISHED}, {"FAILED", v1::APP_FAILED},
      {"KILLED", v1::APP_KILLED}};
  auto it = kMap.find(s);
  return it == kMap.end() ? v1::APPLICATION_STATE_UNSPECIFIED : it->second;
}

v1::FinalApplicationStatus ToProtoFinal(const std::string& s) {
  if (s == "SUCCEEDED") return v1::FINAL_SUCCEEDED;
  if (s == "FAILED") return v1::FINAL_FAILED;
  if (s == "KILLED") return v1::FINAL_KILLED;
  return v1::FINAL_STATUS_UNDEFINED;
}

// The application state an AM's final status leads to (YARN: SUCCEEDED -> FINISHED).
const char* AppStateFor(const std::string& final_status) {
  if (final_status == "SUCCEEDED") return "FINISHED";
  if (final_status == "KILLED") return "KILLED";
  return "FAILED";
}

v1::Token ToProtoToken(const security::Token& t, const char* kind) {
  v1::Token p;
  p.set_identifier(t.identifier);
  p.set_password(t.password);
  p.set_kind(kind);
  return p;
}

v1::MasterKey ToProtoKey(const security::MasterKey& k) {
  v1::MasterKey p;
  p.set_key_id(k.id);
  p.set_secret(k.secret);
  p.set_expires_ms(k.expires_ms);
  return p;
}

}  // namespace

ResourceManager::ResourceManager(RmOptions options, EventLoop* loop, store::StateStore* store,
                                 AmLauncher* launcher, security::SecretSource* secrets)
    : options_(std::move(options)),
      loop_(loop),
      store_(store),
      launcher_(launcher),
      container_keys_("container", options_.key_roll_interval_ms,
                      3 * options_.key_roll_interval_ms + options_.container_token_lifetime_ms,
                      secrets),
      amrm_keys_("amrm", options_.key_roll_interval_ms,
                 3 * options_.key_roll_interval_ms + options_.am_expiry_ms, secrets) {}

ResourceManager::~ResourceManager() {
  shutting_down_ = true;
  loop_->Cancel(pass_timer_);
  loop_->Cancel(expiry_timer_);
  loop_->Cancel(roll_timer_);
}

absl::StatusOr<std::unique_ptr<ResourceManager>> ResourceManager::Create(
    RmOptions options, EventLoop* loop, store::StateStore* store, AmLauncher* launcher,
    security::SecretSource* secrets) {
  if (options.cluster_timestamp_ms == 0) options.cluster_timestamp_ms = loop->NowMs();
  std::unique_ptr<ResourceManager> rm(
      new ResourceManager(std::move(options), loop, store, launcher, secrets));
  auto epoch = store->BumpEpoch();
  if (!epoch.ok()) return epoch.status();
  rm->epoch_ = *epoch;
  rm->started_ms_ = loop->NowMs();
  auto sched = scheduler::CreateScheduler(
      rm->options_.scheduler,
      scheduler::SchedulerOptions{rm->options_.registry,
                                  (static_cast<ContainerId>(rm->epoch_) << 40) + 1});
  if (!sched.ok()) return sched.status();
  rm->scheduler_ = std::move(*sched);
  auto state = store->Load();
  if (!state.ok()) return state.status();
  if (absl::Status s = rm->Recover(*state); !s.ok())
    return absl::Status(s.code(), absl::StrCat("recovering RM state: ", s.message()));
  rm->roll_timer_ = loop->Schedule(std::max<int64_t>(1000, rm->options_.key_roll_interval_ms / 10),
                                   [r = rm.get()] { r->RollKeys(); });
  rm->SchedulePass();
  rm->expiry_timer_ =
      loop->Schedule(std::min(rm->options_.nm_expiry_ms, rm->options_.am_expiry_ms) / 4,
                     [r = rm.get()] { r->CheckExpiry(); });
  return rm;
}

// ---------------------------------------------------------------------------------------------
// Conversions

v1::Resource ResourceManager::ToProto(const Resource& r) const {
  v1::Resource p;
  for (int i = 0; i < options_.registry.size(); ++i) {
    if (r[i] != 0 || i <= kVcores) (*p.mutable_values())[options_.registry.info(i).name] = r[i];
  }
  return p;
}

absl::StatusOr<Resource> ResourceManager::FromProto(const v1::Resource& p,
                                                    absl::string_view what) const {
  Resource r;
  for (const auto& [name, value] : p.values()) {
    int id = options_.registry.Find(name);
    if (id < 0)
      return absl::InvalidArgumentError(absl::StrCat(what, ": unknown resource type '", name, "'"));
    r[id] = value;
  }
  return r;
}

std::string ResourceManager::ContainerIdString(const App& app, int32_t attempt,
                                               ContainerId id) const {
  return absl::StrFormat("container_e%d_%d_%04d_%02d_%06d", epoch_, app.cluster_ts, app.seq,
                         attempt, id & ((ContainerId{1} << 40) - 1));
}

v1::ApplicationReport ResourceManager::Report(const App& app) const {
  v1::ApplicationReport r;
  r.set_application_id(app.record.app_id);
  r.set_name(app.record.name);
  r.set_queue(app.record.queue);
  r.set_user(app.record.user);
  r.set_priority(app.record.priority);
  r.set_state(ToProtoState(app.record.state));
  r.set_final_status(ToProtoFinal(app.record.final_status));
  r.set_diagnostics(app.record.diagnostics);
  r.set_submit_time_ms(app.record.submit_ms);
  r.set_start_time_ms(app.record.start_ms);
  r.set_finish_time_ms(app.record.finish_ms);
  if (!app.attempts.empty()) {
    const Attempt& at = app.attempts.back();
    r.set_current_attempt(at.id);
    r.set_am_host(at.am_node);
    if (const scheduler::AppState* s = scheduler_->app(at.sched_app)) {
      *r.mutable_allocated() = ToProto(s->usage);
      r.set_running_containers(static_cast<int32_t>(s->num_containers));
    }
  }
  r.set_progress(IsFinal(app.record.state) ? 1.0f : 0.0f);
  *r.mutable_am_resource() = app.context.am_resource();
  for (const std::string& d : app.am_sizing_decisions) r.add_am_sizing_decisions(d);
  r.set_completion_goal_ms(app.context.profile().completion_goal_ms());
  // Resource-seconds: ended containers plus the running ones so far.
  Resource usage_ms = app.usage_ms;
  if (!app.attempts.empty() && !IsFinal(app.record.state)) {
    const int64_t now = loop_->NowMs();
    for (ContainerId id : scheduler_->AppContainers(app.attempts.back().sched_app)) {
      auto c = containers_.find(id);
      if (c != containers_.end()) usage_ms += c->second.resource * (now - c->second.start_ms);
    }
  }
  Resource seconds;
  for (int i = 0; i < options_.registry.size(); ++i) seconds[i] = usage_ms[i] / 1000;
  *r.mutable_resource_seconds() = ToProto(seconds);
  return r;
}

absl::Status ResourceManager::Persist(const App& app) {
  store::AttemptRecord at;
  at.app_id = app.record.app_id;
  if (app.attempts.empty()) return store_->PutApplication(app.record);
  const Attempt& a = app.attempts.back();
  at.attempt_id = a.id;
  at.state = a.state;
  at.am_container_id = a.am_container_id;
  at.node = a.am_node;
  at.diagnostics = a.diagnostics;
  at.start_ms = a.start_ms;
  return store_->PutApplicationAndAttempt(app.record, at);
}

// ---------------------------------------------------------------------------------------------
// Recovery and master keys

// Restores what the store holds after an RM (re)start: master keys (so tokens issued before
// stay valid), finished applications (queryable), and unfinished ones, whose running attempt
// died with the old RM: it is marked FAILED and a new attempt starts if attempts remain (the
// RM does not preserve work across restarts). Container ids carry the new epoch.
absl::Status ResourceManager::Recover(const store::RmState& state) {
  const int64_t now = loop_->NowMs();
  for (security::MasterKeyManager* keys : {&container_keys_, &amrm_keys_}) {
    std::vector<security::MasterKey> restored;
    for (const store::MasterKeyRecord& k : state.keys) {
      if (k.purpose == keys->purpose())
        restored.push_back({k.key_id, k.secret, k.created_ms, k.expires_ms});
    }
    for (const auto& k : restored) stored_keys_[keys->purpose()].insert(k.id);
    absl::Status s = restored.empty() ? keys->Start(now) : keys->Restore(restored, now);
    if (!s.ok()) return s;
    if (absl::Status p = PersistKeys(*keys); !p.ok()) return p;
  }
  for (const store::ApplicationRecord& rec : state.apps) {
    App app;
    app.record = rec;
    if (!app.context.ParseFromString(rec.submission))
      return absl::DataLossError(
          absl::StrCat("application ", rec.app_id, ": stored submission does not parse"));
    int64_t ts = 0;
    int seq = 0;
    if (sscanf(rec.app_id.c_str(), "application_%ld_%d", &ts, &seq) != 2)
      return absl::DataLossError(
          absl::StrCat("stored application id '", rec.app_id, "' is malformed"));
    app.cluster_ts = ts;
    app.seq = seq;
    if (ts == options_.cluster_timestamp_ms) next_app_seq_ = std::max(next_app_seq_, seq + 1);
    for (const store::AttemptRecord& a : state.attempts) {
      if (a.app_id != rec.app_id) continue;
      Attempt at;
      at.id = a.attempt_id;
      at.attempt_id = absl::StrFormat("appattempt_%d_%04d_%06d", ts, seq, a.attempt_id);
      at.state = a.state;
      at.am_container_id = a.am_container_id;
      at.am_node = a.node;
      at.diagnostics = a.diagnostics;
      at.start_ms = a.start_ms;
      app.attempts.push_back(std::move(at));
    }
    auto [it, inserted] = apps_.emplace(rec.app_id, std::move(app));
    App& stored = it->second;
    if (IsFinal(stored.record.state)) continue;
    if (!stored.attempts.empty()) {
      stored.current().state = "FAILED";
      stored.current().diagnostics = "the ResourceManager restarted";
    }
    if (static_cast<int32_t>(stored.attempts.size()) >= stored.record.max_attempts) {
      FinishApp(stored, "FAILED", "FAILED",
                "The ResourceManager restarted and no application attempts remain.");
      continue;
    }
    if (absl::Status s = StartAttempt(stored); !s.ok()) {
      FinishApp(stored, "FAILED", "FAILED",
                absl::StrCat("The ResourceManager restarted; a new attempt could not start: ",
                             s.message()));
      continue;
    }
    stored.record.state = "ACCEPTED";
    if (absl::Status s = Persist(stored); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// Writes every live key of `keys` and removes the stored ones that are gone.
absl::Status ResourceManager::PersistKeys(const security::MasterKeyManager& keys) {
  std::set<int32_t>& stored = stored_keys_[keys.purpose()];
  std::set<int32_t> live;
  for (const security::MasterKey& k : keys.Keys()) {
    live.insert(k.id);
    if (stored.contains(k.id)) continue;
    store::MasterKeyRecord rec{keys.purpose(), k.id, k.secret, k.created_ms, k.expires_ms};
    if (absl::Status s = store_->PutMasterKey(rec); !s.ok()) return s;
    stored.insert(k.id);
  }
  for (auto it = stored.begin(); it != stored.end();) {
    if (live.contains(*it)) {
      ++it;
      continue;
    }
    (void)store_->RemoveMasterKey(keys.purpose(), *it);
    it = stored.erase(it);
  }
  return absl::OkStatus();
}

void ResourceManager::RollKeys() {
  roll_timer_ = 0;
  const int64_t now = loop_->NowMs();
  for (security::MasterKeyManager* keys : {&container_keys_, &amrm_keys_}) {
    auto rolled = keys->Roll(now);
    if (!rolled.ok()) {
      std::fprintf(stderr, "weft rm: rolling %s master keys: %s\n", keys->purpose().c_str(),
                   std::string(rolled.status().message()).c_str());
    } else if (*rolled) {
      if (absl::Status s = PersistKeys(*keys); !s.ok())
        std::fprintf(stderr, "weft rm: storing %s master keys: %s\n", keys->purpose().c_str(),
                     std::string(s.message()).c_str());
    }
  }
  if (!shutting_down_)
    roll_timer_ = loop_->Schedule(std::max<int64_t>(1000, options_.key_roll_interval_ms / 10),
                                  [this] { RollKeys(); });
}

// ---------------------------------------------------------------------------------------------
// ClientService

absl::StatusOr<v1::NewApplicationResponse> ResourceManager::NewApplication() {
  int32_t seq = next_app_seq_++;
  std::string id = absl::StrFormat("application_%d_%04d", options_.cluster_timestamp_ms, seq);
  reserved_ids_[id] = seq;
  v1::NewApplicationResponse resp;
  resp.set_application_id(id);
  Resource max;
  for (int i = 0; i < options_.registry.size(); ++i) max[i] = options_.registry.info(i).maximum;
  *resp.mutable_maximum_capability() = ToProto(max);
  return resp;
}

absl::Status ResourceManager::SubmitApplication(const v1::ApplicationSubmissionContext& ctx,
                                                const std::string& user) {
  const std::string& id = ctx.application_id();
  if (apps_.contains(id))
    return absl::AlreadyExistsError(absl::StrCat("application ", id, " was already submitted"));
  auto reserved = reserved_ids_.find(id);
  if (reserved == reserved_ids_.end())
    return absl::NotFoundError(
        absl::StrCat("application id '", id, "' was not handed out by NewApplication on this RM"));
  if (static_cast<int64_t>(ctx.ByteSizeLong()) > options_.max_submission_bytes)
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": submission of ",
                                                   ctx.ByteSizeLong(), " bytes exceeds ",
                                                   options_.max_submission_bytes));
  if (user.empty())
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": no user"));
  if (ctx.am_container_spec().command().empty())
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": empty AM command"));
  if (ctx.max_app_attempts() < 0)
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": max_app_attempts ",
                                                   ctx.max_app_attempts(), " is negative"));
  if (absl::Status s = ValidateProfile(ctx.profile()); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": ", s.message()));
  if (ctx.am_sizing().enabled()) {
    const v1::AmSizingRequest& sizing = ctx.am_sizing();
    if (sizing.input_bytes() <= 0 || sizing.split_bytes() < 0 || sizing.reduce_tasks() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "application ", id,
          ": AM sizing needs input_bytes > 0, split_bytes >= 0 and "
          "reduce_tasks >= 0 (got ",
          sizing.input_bytes(), ", ", sizing.split_bytes(), ", ", sizing.reduce_tasks(), ")"));
    auto worker = SizingWorker(sizing);
    if (!worker.ok())
      return absl::InvalidArgumentError(absl::StrCat(
          "application ", id, ": AM sizing worker resource: ", worker.status().message()));
  }
  auto am = FromProto(ctx.am_resource(), absl::StrCat("application ", id, ": AM resource"));
  if (!am.ok()) return am.status();
  if (am->IsZero()) *am = Resource::Of(1024, 1);  // YARN's default AM container
  auto normalized = options_.registry.Normalize(*am);
  if (!normalized.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("application ", id, ": AM resource: ", normalized.status().message()));

  App app;
  app.cluster_ts = options_.cluster_timestamp_ms;
  app.seq = reserved->second;
  app.context = ctx;
  app.context.mutable_am_resource()->CopyFrom(ToProto(*normalized));
  app.record.app_id = id;
  app.record.name = ctx.name();
  app.record.queue = ctx.queue().empty() ? "default" : ctx.queue();
  app.record.user = user;
  app.record.priority = ctx.priority();
  app.record.state = "ACCEPTED";
  app.record.submit_ms = loop_->NowMs();
  app.record.max_attempts = ctx.max_app_attempts() == 0
                                ? options_.max_app_attempts
                                : std::min(ctx.max_app_attempts(), options_.max_app_attempts);
  app.record.submission = app.context.SerializeAsString();
  // The scheduler validates the queue (known, a leaf, RUNNING) as it admits the attempt; the
  // store must have the app before the client hears success.
  auto [it, inserted] = apps_.emplace(id, std::move(app));
  App& stored = it->second;
  if (absl::Status s = StartAttempt(stored); !s.ok()) {
    apps_.erase(it);
    return s;
  }
  if (absl::Status s = Persist(stored); !s.ok()) {
    (void)scheduler_->RemoveApp(stored.current().sched_app);
    sched_to_app_.erase(stored.current().sched_app);
    apps_.erase(it);
    return absl::UnavailableError(absl::StrCat("application ", id, ": not stored: ", s.message()));
  }
  reserved_ids_.erase(reserved);
  SchedulePass();
  return absl::OkStatus();
}

absl::StatusOr<Resource> ResourceManager::SizingWorker(const v1::AmSizingRequest& req) const {
  auto worker = FromProto(req.worker_resource(), "worker resource");
  if (!worker.ok()) return worker.status();
  if (worker->IsZero()) return Resource::Of(1024, 1);
  return options_.registry.Normalize(*worker);
}

absl::Status ResourceManager::SizeAm(App& app) {
  const v1::AmSizingRequest& req = app.context.am_sizing();
  adaptcont::AmSizingInput in;
  in.user = app.record.user;
  in.input_bytes = req.input_bytes();
  in.split_bytes = req.split_bytes();
  in.reduce_tasks = req.reduce_tasks();
  absl::StatusOr<Resource> worker = SizingWorker(req);
  if (!worker.ok()) return worker.status();  // checked at submission
  // Headroom: what the app's queue may still take (its limit less its usage), within what the
  // cluster has free now.
  Resource headroom =
      (scheduler_->cluster_total() - scheduler_->cluster_allocated()).ClampedAtZero();
  if (const scheduler::QueueNode* q = scheduler_->FindQueue(app.record.queue)) {
    headroom = Min(headroom, (q->limit - q->usage).ClampedAtZero());
  }
  in.available_containers = adaptcont::ContainersInHeadroom(headroom, *worker);
  in.nodes_lost = lost_nodes_ - app.lost_nodes_at_last_sizing;
  // The scheduler's maximum allocation, capped by the largest node as for any ask.
  Resource max;
  for (int i = 0; i < options_.registry.size(); ++i) max[i] = options_.registry.info(i).maximum;
  if (std::optional<Resource> largest = LargestNodeCapability()) max = Min(max, *largest);
  in.cluster_max_allocation = {max[kMemoryMb], max[kVcores]};
  if (!app.attempts.empty()) {
    const Attempt& last = app.attempts.back();
    in.previous_attempt = adaptcont::PreviousAttempt{
        {last.am_resource[kMemoryMb], last.am_resource[kVcores]}, last.am_memory_failure};
  }
  absl::StatusOr<adaptcont::AmSizingDecision> decision =
      adaptcont::DecideAmSize(options_.adaptcont, in);
  if (!decision.ok()) return decision.status();
  auto normalized = options_.registry.Normalize(decision->AsResource());
  if (!normalized.ok()) return normalized.status();
  app.context.mutable_am_resource()->CopyFrom(ToProto(*normalized));
  app.lost_nodes_at_last_sizing = lost_nodes_;
  std::string line =
      absl::StrCat("attempt ", app.attempts.size() + 1, ": AM ",
                   options_.registry.Format(*normalized), " (", decision->Explanation(), ")");
  std::fprintf(stderr, "weft rm: %s: AdaptCont: %s\n", app.record.app_id.c_str(), line.c_str());
  app.am_sizing_decisions.push_back(std::move(line));
  return absl::OkStatus();
}

// Adds a new attempt of `app` to the scheduler, asking for its AM container.
absl::Status ResourceManager::StartAttempt(App& app) {
  Attempt at;
  at.id = app.attempts.empty() ? 1 : app.attempts.back().id + 1;
  at.attempt_id =
      absl::StrFormat("appattempt_%d_%04d_%06d", options_.cluster_timestamp_ms, app.seq, at.id);
  at.sched_app = next_sched_app_++;
  at.start_ms = loop_->NowMs();
  at.state = "SCHEDULED";
  scheduler::AppSpec spec;
  spec.id = at.sched_app;
  spec.queue = app.record.queue;
  spec.user = app.record.user;
  spec.priority = app.record.priority;
  spec.profile = ToJobProfile(app.context.profile());
  if (app.context.am_sizing().enabled()) {
    if (absl::Status s = SizeAm(app); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("application ", app.record.app_id,
                                                 ": sizing its AM (AdaptCont): ", s.message()));
    }
  }
  auto am = FromProto(app.context.am_resource(), "AM resource");
  if (!am.ok()) return am.status();
  spec.am_resource = *am;
  at.am_resource = *am;
  if (absl::Status s = scheduler_->AddApp(spec, loop_->NowMs()); !s.ok()) {
    // The core names the app by its internal number; users know it by its id.
    absl::string_view why = s.message();
    absl::ConsumePrefix(&why, absl::StrCat("application ", spec.id, ": "));
    return absl::Status(s.code(), absl::StrCat("application ", app.record.app_id, ": ", why));
  }
  sched_to_app_[at.sched_app] = app.record.app_id;
  app.attempts.push_back(std::move(at));
  return absl::OkStatus();
}

absl::StatusOr<v1::ApplicationReport> ResourceManager::GetApplication(
    const std::string& app_id) const {
  auto it = apps_.find(app_id);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  return Report(it->second);
}

v1::ListApplicationsResponse ResourceManager::ListApplications(
    const v1::ListApplicationsRequest& req) const {
  v1::ListApplicationsResponse resp;
  for (const auto& [id, app] : apps_) {
    v1::ApplicationState st = ToProtoState(app.record.state);
    if (!req.states().empty() &&
        std::find(req.states().begin(), req.states().end(), st) == req.states().end())
      continue;
    if (!req.queue().empty() && req.queue() != app.record.queue) continue;
    if (!req.user().empty() && req.user() != app.record.user) continue;
    *resp.add_applications() = Report(app);
    if (req.limit() > 0 && resp.applications_size() >= req.limit()) break;
  }
  return resp;
}

absl::Status ResourceManager::KillApplication(const std::string& app_id,
                                              const std::string& diagnostics) {
  auto it = apps_.find(app_id);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  if (IsFinal(it->second.record.state)) return absl::OkStatus();  // idempotent, as YARN
  FinishApp(it->second, "KILLED", "KILLED",
            diagnostics.empty() ? "Application killed by user." : diagnostics);
  return absl::OkStatus();
}

absl::StatusOr<v1::GetApplicationAttemptsResponse> ResourceManager::GetApplicationAttempts(
    const std::string& app_id) const {
  auto it = apps_.find(app_id);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  v1::GetApplicationAttemptsResponse resp;
  for (const Attempt& at : it->second.attempts) {
    v1::ApplicationAttemptReport* r = resp.add_attempts();
    r->set_attempt_id(at.attempt_id);
    r->set_attempt(at.id);
    r->set_state(at.state);
    r->set_am_container_id(at.am_container_id);
    r->set_am_node_id(at.am_node);
    if (auto n = nodes_.find(at.am_node); n != nodes_.end())
      r->set_am_node_http_address(n->second.registration.http_address());
    r->set_start_time_ms(at.start_ms);
    r->set_finish_time_ms(at.finish_ms);
    r->set_diagnostics(at.diagnostics);
  }
  return resp;
}

v1::ListNodesResponse ResourceManager::ListNodes(const v1::ListNodesRequest& req) const {
  v1::ListNodesResponse resp;
  for (const auto& [id, node] : nodes_) {
    if (!req.states().empty() &&
        std::find(req.states().begin(), req.states().end(), node.state) == req.states().end())
      continue;
    v1::NodeReport* r = resp.add_nodes();
    r->set_node_id(id);
    r->set_rack(node.registration.rack());
    r->set_state(node.state);
    r->set_http_address(node.registration.http_address());
    *r->mutable_capability() = node.registration.capability();
    r->set_health_report(node.health_report);
    r->set_last_health_update_ms(node.last_heartbeat_ms);
    for (const auto& f : node.registration.missing_features()) r->add_missing_features(f);
    r->set_network_isolation(node.registration.network_isolation());
    for (const v1::ContainerStatus& st : node.running) *r->add_containers() = st;
    *r->mutable_usage() = node.usage;
    scheduler::NodeId sid = scheduler_->FindNode(id);
    if (sid >= 0) {
      *r->mutable_used() = ToProto(scheduler_->node(sid)->allocated);
      r->set_num_containers(scheduler_->node(sid)->num_containers);
    }
  }
  return resp;
}

v1::GetClusterMetricsResponse ResourceManager::GetClusterMetrics() const {
  v1::GetClusterMetricsResponse m;
  for (const auto& [id, node] : nodes_) {
    switch (node.state) {
      case v1::NODE_RUNNING:
        m.set_active_nodes(m.active_nodes() + 1);
        break;
      case v1::NODE_LOST:
        m.set_lost_nodes(m.lost_nodes() + 1);
        break;
      case v1::NODE_UNHEALTHY:
        m.set_unhealthy_nodes(m.unhealthy_nodes() + 1);
        break;
      case v1::NODE_DECOMMISSIONED:
        m.set_decommissioned_nodes(m.decommissioned_nodes() + 1);
        break;
      default:
        break;
    }
  }
  *m.mutable_total() = ToProto(scheduler_->cluster_total());
  *m.mutable_allocated() = ToProto(scheduler_->cluster_allocated());
  *m.mutable_pending() = ToProto(scheduler_->FindQueue("root")->pending);
  for (const auto& [id, app] : apps_) {
    m.set_apps_submitted(m.apps_submitted() + 1);
    const std::string& st = app.record.state;
    if (st == "RUNNING") m.set_apps_running(m.apps_running() + 1);
    if (st == "ACCEPTED" || st == "SUBMITTED") m.set_apps_pending(m.apps_pending() + 1);
    if (st == "FINISHED") m.set_apps_completed(m.apps_completed() + 1);
    if (st == "FAILED") m.set_apps_failed(m.apps_failed() + 1);
    if (st == "KILLED") m.set_apps_killed(m.apps_killed() + 1);
  }
  m.set_containers_allocated(scheduler_->stats().allocations);
  return m;
}

absl::StatusOr<v1::GetQueueResponse> ResourceManager::GetQueue(const v1::GetQueueRequest& req) {
  const scheduler::QueueNode* q = scheduler_->FindQueue(req.queue().empty() ? "root" : req.queue());
  if (q == nullptr) return absl::NotFoundError(absl::StrCat("unknown queue '", req.queue(), "'"));
  scheduler_->RefreshEntitlements();
  std::function<void(const scheduler::QueueNode&, v1::QueueInfo*, bool)> fill =
      [&](const scheduler::QueueNode& n, v1::QueueInfo* out, bool recurse) {
        out->set_name(n.config.name);
        out->set_path(n.path);
        out->set_state(n.config.state == scheduler::QueueState::kRunning ? "RUNNING" : "STOPPED");
        *out->mutable_used() = ToProto(n.usage);
        *out->mutable_pending() = ToProto(n.pending);
        *out->mutable_entitlement() = ToProto(n.entitlement);
        Resource limit = Min(n.limit, scheduler_->cluster_total());
        *out->mutable_limit() = ToProto(limit);
        out->set_weight(n.config.weight);
        out->set_capacity(n.config.capacity);
        out->set_maximum_capacity(n.config.maximum_capacity);
        int32_t apps = 0;
        std::function<void(const scheduler::QueueNode&)> count =
            [&](const scheduler::QueueNode& x) {
              apps += static_cast<int32_t>(x.apps.size());
              for (const auto* c : x.children) count(*c);
            };
        count(n);
        out->set_num_applications(apps);
        out->set_num_running_applications(static_cast<int32_t>(n.running_apps));
        if (!recurse) return;
        for (const auto* c : n.children) fill(*c, out->add_children(), true);
      };
  v1::GetQueueResponse resp;
  fill(*q, resp.mutable_queue(), req.recursive());
  return resp;
}

absl::Status ResourceManager::RefreshQueues() {
  if (options_.scheduler_config_path.empty())
    return absl::FailedPreconditionError(
        "this RM was started without a scheduler configuration file: nothing to refresh");
  auto config =
      scheduler::LoadSchedulerConfigFile(options_.scheduler_config_path, options_.registry);
  if (!config.ok())
    return absl::InvalidArgumentError(absl::StrCat(
        "refresh-queues refused, the old configuration stays: ", config.status().message()));
  if (absl::Status s = scheduler_->Reconfigure(*config); !s.ok())
    return absl::Status(s.code(), absl::StrCat("refresh-queues refused, the old configuration "
                                               "stays: ",
                                               s.message()));
  options_.scheduler = *config;
  SchedulePass();
  return absl::OkStatus();
}

absl::Status ResourceManager::RefreshNodes(const v1::RefreshNodesRequest& req) {
  auto matches = [](const std::string& id, const std::string& name) {
    return id == name || id.substr(0, id.find(':')) == name;
  };
  for (const std::string& name : req.decommission()) {
    if (name.empty()) return absl::InvalidArgumentError("empty node name to decommission");
  }
  for (const std::string& name : req.decommission()) {
    decommissioned_.insert(name);
    for (auto& [id, node] : nodes_) {
      if (!matches(id, name) || node.state == v1::NODE_DECOMMISSIONED) continue;
      node.state = v1::NODE_DECOMMISSIONED;
      if (scheduler_->FindNode(id) < 0) continue;
      auto lost = scheduler_->RemoveNode(id);
      if (!lost.ok()) continue;
      for (const auto& k : *lost) {
        auto c = containers_.find(k.container);
        if (c != containers_.end()) node.to_cleanup.push_back(c->second.id);
        ContainerFinished(k.container, v1::CONTAINER_EXIT_ABORTED,
                          absl::StrCat("node ", id, " was decommissioned"));
      }
    }
  }
  for (const std::string& name : req.recommission()) {
    decommissioned_.erase(name);
    for (auto& [id, node] : nodes_) {
      if (matches(id, name) && node.state == v1::NODE_DECOMMISSIONED) node.state = v1::NODE_LOST;
    }
  }
  SchedulePass();
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// TrackerService

absl::StatusOr<v1::RegisterNodeManagerResponse> ResourceManager::RegisterNode(
    const v1::RegisterNodeManagerRequest& req) {
  const std::string& id = req.node_id();
  if (id.empty() || id.find(':') == std::string::npos)
    return absl::InvalidArgumentError(absl::StrCat("node id '", id, "' is not host:port"));
  std::string rack = req.rack().empty() ? "/default-rack" : req.rack();
  auto cap = FromProto(req.capability(), absl::StrCat("node ", id, ": capability"));
  if (!cap.ok()) return cap.status();
  if (cap->AnyNegative())
    return absl::InvalidArgumentError(
        absl::StrCat("node ", id, ": capability ", options_.registry.Format(*cap), " is negative"));
  auto existing = nodes_.find(id);
  bool decommissioned =
      decommissioned_.contains(id) || decommissioned_.contains(id.substr(0, id.find(':')));
  if (decommissioned ||
      (existing != nodes_.end() && existing->second.state == v1::NODE_DECOMMISSIONED)) {
    v1::RegisterNodeManagerResponse resp;
    resp.set_action(v1::NODE_ACTION_SHUTDOWN);
    resp.set_diagnostics("node is decommissioned");
    return resp;
  }
  // A node registering again (NM restart) loses the containers the RM had for it.
  if (scheduler_->FindNode(id) >= 0) {
    auto lost = scheduler_->RemoveNode(id);
    if (lost.ok()) {
      for (const auto& k : *lost)
        ContainerFinished(k.container, v1::CONTAINER_EXIT_LOST_NODE,
                          "node " + id + " re-registered");
    }
  }
  auto sid = scheduler_->AddNode({id, rack, *cap});
  if (!sid.ok()) return sid.status();
  Node& node = nodes_[id];
  node.registration = req;
  node.registration.set_rack(rack);
  node.state = v1::NODE_RUNNING;
  node.last_heartbeat_ms = loop_->NowMs();
  node.response_id = 0;
  node.to_cleanup.clear();
  v1::RegisterNodeManagerResponse resp;
  resp.set_action(v1::NODE_ACTION_NORMAL);
  resp.set_rm_epoch(epoch_);
  *resp.mutable_container_key() = ToProtoKey(container_keys_.current());
  *resp.mutable_next_container_key() = ToProtoKey(container_keys_.next());
  resp.set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  SchedulePass();
  return resp;
}

absl::StatusOr<v1::NodeHeartbeatResponse> ResourceManager::NodeHeartbeat(
    const v1::NodeHeartbeatRequest& req) {
  v1::NodeHeartbeatResponse resp;
  resp.set_next_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  auto it = nodes_.find(req.node_id());
  if (it == nodes_.end() || it->second.state == v1::NODE_LOST) {
    resp.set_action(v1::NODE_ACTION_RESYNC);
    resp.set_diagnostics("unknown node: register again");
    return resp;
  }
  Node& node = it->second;
  if (node.state == v1::NODE_DECOMMISSIONED) {
    resp.set_action(v1::NODE_ACTION_SHUTDOWN);
    return resp;
  }
  node.last_heartbeat_ms = loop_->NowMs();
  node.health_report = req.health().report();
  bool healthy = !req.has_health() || req.health().healthy();
  if ((node.state == v1::NODE_UNHEALTHY) == healthy) {
    node.state = healthy ? v1::NODE_RUNNING : v1::NODE_UNHEALTHY;
    auto cap = FromProto(node.registration.capability(), "capability");
    if (cap.ok()) (void)scheduler_->UpdateNode(req.node_id(), *cap, healthy);
  }
  node.running.clear();
  node.usage = req.node_usage();
  for (const v1::ContainerStatus& st : req.container_statuses()) {
    if (st.state() == v1::CONTAINER_RUNNING) node.running.push_back(st);
    if (st.state() != v1::CONTAINER_COMPLETE) continue;
    auto c = container_by_name_.find(st.container_id());
    if (c == container_by_name_.end()) continue;  // already known complete, or never ours
    ContainerFinished(c->second, st.exit_status(), st.diagnostics());
  }
  resp.set_response_id(++node.response_id);
  resp.set_action(v1::NODE_ACTION_NORMAL);
  for (const std::string& c : node.to_cleanup) resp.add_containers_to_cleanup(c);
  node.to_cleanup.clear();
  *resp.mutable_container_key() = ToProtoKey(container_keys_.current());
  *resp.mutable_next_container_key() = ToProtoKey(container_keys_.next());
  SchedulePass();
  return resp;
}

// ---------------------------------------------------------------------------------------------
// Scheduling and container lifecycle

void ResourceManager::SchedulePass() {
  if (pass_timer_ != 0 || shutting_down_) return;
  pass_timer_ = loop_->Schedule(options_.pass_interval_ms, [this] {
    pass_timer_ = 0;
    RunPass();
  });
}

void ResourceManager::RunPass() {
  const auto pass_start = std::chrono::steady_clock::now();
  const scheduler::PassResult& r = scheduler_->Schedule(loop_->NowMs());
  if (options_.pass_observer) {
    options_.pass_observer(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - pass_start).count(),
        static_cast<int64_t>(r.allocations.size()));
  }
  std::vector<Allocation> allocations = r.allocations;
  std::vector<scheduler::ContainerKill> kills = r.kills;
  for (const Allocation& a : allocations) HandleAllocation(a);
  for (const auto& k : kills) {
    auto c = containers_.find(k.container);
    if (c == containers_.end()) continue;
    auto n = nodes_.find(c->second.node_id);
    if (n != nodes_.end()) n->second.to_cleanup.push_back(c->second.id);
    ContainerFinished(k.container, v1::CONTAINER_EXIT_PREEMPTED,
                      "Container preempted by the scheduler.");
  }
  if (scheduler_->FindQueue("root")->pending.AnyPositive()) SchedulePass();
}

void ResourceManager::HandleAllocation(const Allocation& a) {
  auto owner = sched_to_app_.find(a.app);
  if (owner == sched_to_app_.end()) return;
  App& app = apps_.at(owner->second);
  Attempt& at = app.current();
  const scheduler::NodeState* node = scheduler_->node(a.node);
  Container c;
  c.id = ContainerIdString(app, at.id, a.container);
  c.app_id = app.record.app_id;
  c.attempt = at.id;
  c.node_id = node->name;
  c.resource = a.resource;
  c.is_am = a.is_am;
  c.start_ms = loop_->NowMs();
  security::ContainerTokenData td;
  td.container_id = c.id;
  td.node_id = c.node_id;
  td.user = app.record.user;
  td.resource = options_.registry.Format(a.resource);
  td.expiry_ms = loop_->NowMs() + options_.container_token_lifetime_ms;
  td.rm_epoch = epoch_;
  td.app_id = app.record.app_id;
  v1::Container proto;
  proto.set_container_id(c.id);
  proto.set_node_id(c.node_id);
  *proto.mutable_resource() = ToProto(a.resource);
  proto.set_priority(a.priority);
  proto.set_allocation_request_id(a.allocation_request_id);
  *proto.mutable_container_token() =
      ToProtoToken(security::IssueContainerToken(td, container_keys_.current()), "ContainerToken");
  container_by_name_[c.id] = a.container;
  containers_[a.container] = c;
  if (!a.is_am) {
    at.new_containers.push_back(std::move(proto));
    return;
  }
  // The AM container: start it on its node with the attempt's AMRM token in its environment.
  at.am_container_id = c.id;
  at.am_node = c.node_id;
  at.state = "ALLOCATED";
  security::AmRmTokenData amrm;
  amrm.app_attempt_id = at.attempt_id;
  amrm.expiry_ms = loop_->NowMs() + 30LL * 24 * 3600 * 1000;
  at.amrm_token = ToProtoToken(security::IssueAmRmToken(amrm, amrm_keys_.current()), "AMRMToken");
  at.amrm_key_id = amrm_keys_.current().id;
  at.last_heard_ms = loop_->NowMs();
  if (app.record.start_ms == 0) app.record.start_ms = loop_->NowMs();
  (void)Persist(app);
  v1::StartContainerRequest start;
  *start.mutable_container_token() = proto.container_token();
  *start.mutable_launch_context() = app.context.am_container_spec();
  auto& env = *start.mutable_launch_context()->mutable_environment();
  env["WEFT_APPLICATION_ID"] = app.record.app_id;
  env["WEFT_APP_ATTEMPT_ID"] = at.attempt_id;
  env["WEFT_RM_ADDRESS"] = rm_address_;
  // Environment variables are text: the serialized token travels base64-encoded.
  env["WEFT_AMRM_TOKEN"] = absl::Base64Escape(at.amrm_token.SerializeAsString());
  std::string app_id = app.record.app_id;
  int32_t attempt = at.id;
  launcher_->Launch(c.node_id, start, [this, app_id, attempt](absl::Status s) {
    loop_->Post([this, app_id, attempt, s] {
      auto it = apps_.find(app_id);
      if (it == apps_.end() || it->second.current().id != attempt) return;
      if (IsFinal(it->second.record.state)) return;
      if (!s.ok()) {
        AttemptFailed(it->second, absl::StrCat("AM container launch failed: ", s.message()));
        return;
      }
      if (it->second.current().state == "ALLOCATED") it->second.current().state = "LAUNCHED";
    });
  });
}

// A container ended (its NM said so, its node was lost, or it was preempted). Frees it in the
// scheduler and tells its AM exactly once; the AM's own container ends its attempt.
void ResourceManager::ContainerFinished(ContainerId id, int32_t exit_status,
                                        const std::string& diagnostics) {
  auto it = containers_.find(id);
  if (it == containers_.end()) return;
  Container c = it->second;
  containers_.erase(it);
  ChargeContainerUsage(c);
  container_by_name_.erase(c.id);
  if (scheduler_->container(id) != nullptr) {
    // A task that ran to completion tells the scheduler its phase's task length (seed 003).
    if (exit_status == 0 && !c.is_am) {
      (void)scheduler_->ContainerCompleted(id, loop_->NowMs());
    } else {
      (void)scheduler_->ContainerCompleted(id);
    }
  }
  auto app_it = apps_.find(c.app_id);
  if (app_it == apps_.end()) return;
  App& app = app_it->second;
  if (app.attempts.empty() || app.current().id != c.attempt || IsFinal(app.record.state)) return;
  Attempt& at = app.current();
  if (c.is_am) {
    if (at.state == "FINISHING") {
      FinishApp(app, AppStateFor(at.final_status), at.final_status, at.diagnostics);
    } else {
      at.am_memory_failure = exit_status == v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM;
      AttemptFailed(app, absl::StrCat("AM container ", c.id, " exited with status ", exit_status,
                                      diagnostics.empty() ? "" : ": ", diagnostics));
    }
    return;
  }
  v1::ContainerStatus st;
  st.set_container_id(c.id);
  st.set_state(v1::CONTAINER_COMPLETE);
  st.set_exit_status(exit_status);
  st.set_diagnostics(diagnostics);
  at.new_completed.push_back(std::move(st));
}

void ResourceManager::ChargeContainerUsage(const Container& c) {
  ++containers_completed_;
  auto app = apps_.find(c.app_id);
  if (app == apps_.end()) return;
  app->second.usage_ms += c.resource * std::max<int64_t>(0, loop_->NowMs() - c.start_ms);
}

void ResourceManager::ReleaseAppContainers(App& app) {
  if (app.attempts.empty()) return;
  auto released = scheduler_->RemoveApp(app.current().sched_app);
  sched_to_app_.erase(app.current().sched_app);
  if (!released.ok()) return;
  for (const auto& k : *released) {
    auto c = containers_.find(k.container);
    if (c == containers_.end()) continue;
    auto n = nodes_.find(c->second.node_id);
    if (n != nodes_.end()) n->second.to_cleanup.push_back(c->second.id);
    container_by_name_.erase(c->second.id);
    ChargeContainerUsage(c->second);
    containers_.erase(c);
  }
}

void ResourceManager::AttemptFailed(App& app, const std::string& diagnostics) {
  Attempt& at = app.current();
  at.state = "FAILED";
  at.diagnostics = diagnostics;
  at.finish_ms = loop_->NowMs();
  (void)Persist(app);
  ReleaseAppContainers(app);
  if (static_cast<int32_t>(app.attempts.size()) >= app.record.max_attempts) {
    FinishApp(app, "FAILED", "FAILED",
              absl::StrCat("Application failed ", app.attempts.size(), " time(s) (max attempts ",
                           app.record.max_attempts, "); last attempt: ", diagnostics));
    return;
  }
  if (absl::Status s = StartAttempt(app); !s.ok()) {
    FinishApp(app, "FAILED", "FAILED", absl::StrCat("cannot start a new attempt: ", s.message()));
    return;
  }
  app.record.state = "ACCEPTED";
  (void)Persist(app);
  SchedulePass();
}

void ResourceManager::FinishApp(App& app, const std::string& state, const std::string& final_status,
                                const std::string& diagnostics) {
  if (!app.attempts.empty() && !IsFinal(app.current().state)) {
    app.current().state = state == "FINISHED" ? "FINISHED" : state;
    app.current().finish_ms = loop_->NowMs();
  }
  ReleaseAppContainers(app);
  app.record.state = state;
  app.record.final_status = final_status;
  app.record.diagnostics = diagnostics;
  app.record.finish_ms = loop_->NowMs();
  (void)Persist(app);
}

void ResourceManager::CheckExpiry() {
  expiry_timer_ = 0;
  const int64_t now = loop_->NowMs();
  for (auto& [id, node] : nodes_) {
    if (node.state == v1::NODE_LOST || node.state == v1::NODE_DECOMMISSIONED) continue;
    if (now - node.last_heartbeat_ms < options_.nm_expiry_ms) continue;
    node.state = v1::NODE_LOST;
    ++lost_nodes_;
    auto lost = scheduler_->RemoveNode(id);
    if (!lost.ok()) continue;
    for (const auto& k : *lost) {
      ContainerFinished(k.container, v1::CONTAINER_EXIT_LOST_NODE,
                        absl::StrCat("Container lost: node ", id, " stopped heartbeating"));
    }
  }
  for (auto& [id, app] : apps_) {
    if (IsFinal(app.record.state) || app.attempts.empty()) continue;
    Attempt& at = app.current();
    if ((at.state == "LAUNCHED" || at.state == "RUNNING") &&
        now - at.last_heard_ms >= options_.am_expiry_ms) {
      AttemptFailed(app, absl::StrCat("AM of ", at.attempt_id, " did not call Allocate for ",
                                      (now - at.last_heard_ms) / 1000, " s"));
    }
  }
  if (!shutting_down_)
    expiry_timer_ = loop_->Schedule(std::min(options_.nm_expiry_ms, options_.am_expiry_ms) / 4,
                                    [this] { CheckExpiry(); });
  SchedulePass();
}

// ---------------------------------------------------------------------------------------------
// AmService

absl::StatusOr<std::pair<ResourceManager::App*, ResourceManager::Attempt*>>
ResourceManager::Authenticate(const v1::Token& token) {
  auto data = security::DecodeAmRmToken(token.identifier());
  if (!data.ok())
    return absl::PermissionDeniedError(absl::StrCat("bad AMRM token: ", data.status().message()));
  security::Token t{token.identifier(), token.password()};
  auto verified = security::VerifyAmRmToken(t, amrm_keys_, data->app_attempt_id, loop_->NowMs());
  if (!verified.ok()) return verified.status();
  for (auto& [id, app] : apps_) {
    if (app.attempts.empty() || app.current().attempt_id != data->app_attempt_id) continue;
    if (IsFinal(app.record.state) || app.current().state == "FAILED")
      return absl::FailedPreconditionError(
          absl::StrCat(data->app_attempt_id, " is no longer running"));
    return std::make_pair(&app, &app.current());
  }
  return absl::PermissionDeniedError(
      absl::StrCat("AMRM token for unknown or old attempt ", data->app_attempt_id));
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> ResourceManager::RegisterApplicationMaster(
    const v1::Token& token, const v1::RegisterApplicationMasterRequest&) {
  auto who = Authenticate(token);
  if (!who.ok()) return who.status();
  auto [app, at] = *who;
  if (at->registered)
    return absl::FailedPreconditionError(absl::StrCat(at->attempt_id, " is already registered"));
  at->registered = true;
  at->state = "RUNNING";
  at->last_heard_ms = loop_->NowMs();
  app->record.state = "RUNNING";
  (void)Persist(*app);
  v1::RegisterApplicationMasterResponse resp;
  Resource max;
  for (int i = 0; i < options_.registry.size(); ++i) max[i] = options_.registry.info(i).maximum;
  *resp.mutable_maximum_capability() = ToProto(max);
  resp.set_queue(app->record.queue);
  return resp;
}

std::optional<Resource> ResourceManager::LargestNodeCapability() const {
  std::optional<Resource> largest;
  if (loop_->NowMs() - started_ms_ < options_.max_allocation_wait_ms) return largest;
  for (const auto& [id, node] : nodes_) {
    if (node.state != v1::NODE_RUNNING && node.state != v1::NODE_UNHEALTHY) continue;
    auto cap = FromProto(node.registration.capability(), "capability");
    if (cap.ok()) largest = Max(largest.value_or(Resource()), *cap);
  }
  return largest;
}

absl::StatusOr<v1::AllocateResponse> ResourceManager::Allocate(const v1::Token& token,
                                                               const v1::AllocateRequest& req) {
  auto who = Authenticate(token);
  if (!who.ok()) return who.status();
  auto [app, at] = *who;
  if (!at->registered)
    return absl::FailedPreconditionError(
        absl::StrCat(at->attempt_id, ": Allocate before RegisterApplicationMaster"));
  at->last_heard_ms = loop_->NowMs();
  // YARN's response_id protocol: the AM sends the id of the last reply it received.
  if (req.response_id() + 1 == at->last_response_id) return at->last_response;  // a retry
  if (req.response_id() != at->last_response_id) {
    v1::AllocateResponse resync;
    resync.set_am_command(v1::AM_RESYNC);
    resync.set_response_id(at->last_response_id);
    return resync;
  }
  // Validate and convert everything before changing anything.
  scheduler::RequestUpdate update;
  // The largest running node's capability; nullopt when none runs (nothing to compare with).
  const std::optional<Resource> largest =
      req.asks_size() > 0 ? LargestNodeCapability() : std::nullopt;
  for (int i = 0; i < req.asks_size(); ++i) {
    const v1::ResourceRequest& ask = req.asks(i);
    auto cap = FromProto(ask.capability(), absl::StrCat("ask #", i));
    if (!cap.ok()) return cap.status();
    // As YARN caps the maximum allocation by the largest node: an ask no node could ever hold
    // is refused now rather than left pending forever.
    if (ask.num_containers() > 0 && largest.has_value()) {
      for (int t = 0; t < options_.registry.size(); ++t) {
        if ((*cap)[t] > (*largest)[t]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "ask #", i, ": ", options_.registry.info(t).name, "=", (*cap)[t],
              " is above the largest node's ", (*largest)[t],
              t == kNetworkMbps ? " (a node offers its containers' share of its link, or 0 "
                                  "when it does not enforce bandwidth)"
                                : ""));
        }
      }
    }
    update.asks.push_back({ask.priority(), ask.resource_name(), *cap, ask.num_containers(),
                           ask.relax_locality(), ask.allocation_request_id()});
  }
  for (const std::string& r : req.releases()) {
    auto c = container_by_name_.find(r);
    if (c == container_by_name_.end() || containers_.at(c->second).app_id != app->record.app_id)
      return absl::InvalidArgumentError(
          absl::StrCat("cannot release container '", r, "': not allocated to this application"));
    if (containers_.at(c->second).is_am)
      return absl::InvalidArgumentError(absl::StrCat("cannot release the AM container '", r, "'"));
    update.releases.push_back(c->second);
  }
  for (const auto& b : req.blacklist_additions()) update.blacklist_additions.push_back(b);
  for (const auto& b : req.blacklist_removals()) update.blacklist_removals.push_back(b);
  if (absl::Status s = scheduler_->UpdateRequests(at->sched_app, update); !s.ok()) return s;
  for (ContainerId id : update.releases) {
    auto c = containers_.find(id);
    auto n = nodes_.find(c->second.node_id);
    if (n != nodes_.end()) n->second.to_cleanup.push_back(c->second.id);
    container_by_name_.erase(c->second.id);
    ChargeContainerUsage(c->second);
    containers_.erase(c);
  }
  v1::AllocateResponse resp;
  resp.set_response_id(++at->last_response_id);
  for (auto& c : at->new_containers) *resp.add_allocated_containers() = std::move(c);
  at->new_containers.clear();
  for (auto& s : at->new_completed) *resp.add_completed_containers() = std::move(s);
  at->new_completed.clear();
  *resp.mutable_available_resources() =
      ToProto((scheduler_->cluster_total() - scheduler_->cluster_allocated()).ClampedAtZero());
  resp.set_num_cluster_nodes(scheduler_->num_nodes());
  // The AMRM master key rolled since this attempt's token was issued: hand the AM a token under
  // the current key (YARN's rolled AMRM token), before the old key expires.
  if (at->amrm_key_id != amrm_keys_.current().id) {
    security::AmRmTokenData data;
    data.app_attempt_id = at->attempt_id;
    data.expiry_ms = loop_->NowMs() + 30LL * 24 * 3600 * 1000;
    at->amrm_token =
        ToProtoToken(security::IssueAmRmToken(data, amrm_keys_.current()), "AMRMToken");
    at->amrm_key_id = amrm_keys_.current().id;
    *resp.mutable_amrm_token() = at->amrm_token;
  }
  at->last_response = resp;
  SchedulePass();
  return resp;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> ResourceManager::FinishApplicationMaster(
    const v1::Token& token, const v1::FinishApplicationMasterRequest& req) {
  auto who = Authenticate(token);
  if (!who.ok()) return who.status();
  auto [app, at] = *who;
  at->state = "FINISHING";
  switch (req.final_status()) {
    case v1::FINAL_SUCCEEDED:
      at->final_status = "SUCCEEDED";
      break;
    case v1::FINAL_KILLED:
      at->final_status = "KILLED";
      break;
    default:
      at->final_status = "FAILED";
  }
  at->diagnostics = req.diagnostics();
  // YARN finishes the app once the AM container exits; the AM has unregistered now.
  FinishApp(*app, AppStateFor(at->final_status), at->final_status, req.diagnostics());
  v1::FinishApplicationMasterResponse resp;
  resp.set_is_unregistered(true);
  return resp;
}

}  // namespace weft::rm
