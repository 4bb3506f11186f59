// Copyright Weft authors.
#include "rm/app_manager.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "adaptcont/am_sizing.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/am_service.h"
#include "rm/container_tracker.h"
#include "rm/history_recorder.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "rm/submission.h"

namespace weft::rm {
bool CountsTowardMaxAttempts(const RmAttempt& at) {
  switch (at.am_exit_status) {
    case v1::CONTAINER_EXIT_ABORTED:
    case v1::CONTAINER_EXIT_PREEMPTED:
    case v1::CONTAINER_EXIT_DISKS_FAILED:
    case v1::CONTAINER_EXIT_KILLED_BY_RM:
    case v1::CONTAINER_EXIT_LOST_NODE:
      return false;
    default:
      return true;
  }
}

int32_t CountedAttempts(const RmApp& app) {
  int32_t n = 0;
  for (const RmAttempt& at : app.attempts) n += CountsTowardMaxAttempts(at) ? 1 : 0;
  return n;
}

AppManager::AppManager(RmContext* ctx)
    : ctx_(ctx), federation_(ctx->options->federation_fence_ms) {}

AppManager::~AppManager() {
  ctx_->loop->Cancel(retry_timer_);
  ctx_->loop->Cancel(end_retry_timer_);
}

const RmApp* AppManager::Find(const std::string& app_id) const {
  auto it = apps_.find(app_id);
  return it == apps_.end() ? nullptr : &it->second;
}

RmApp* AppManager::FindMutable(const std::string& app_id) {
  auto it = apps_.find(app_id);
  return it == apps_.end() ? nullptr : &it->second;
}

const RmApp* AppManager::FindBySchedulerId(scheduler::AppId id) const {
  auto it = by_sched_app_.find(id);
  return it == by_sched_app_.end() ? nullptr : Find(it->second);
}

const RmApp* AppManager::FindByAttempt(const std::string& attempt_id) const {
  auto it = by_attempt_.find(attempt_id);
  return it == by_attempt_.end() ? nullptr : Find(it->second);
}

absl::Status AppManager::Transition(RmApp& app, AppEvent event) {
  absl::StatusOr<AppState> next = NextAppState(app.state, event);
  if (!next.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(app.record.app_id, ": ", next.status().message()));
  if (*next != app.state)
    log::Info("app_state", {{"app", app.record.app_id},
                            {"from", AppStateName(app.state)},
                            {"to", AppStateName(*next)}});
  app.state = *next;
  return absl::OkStatus();
}

absl::Status AppManager::Transition(RmAttempt& at, AttemptEvent event) {
  absl::StatusOr<AttemptState> next = NextAttemptState(at.state, event);
  if (!next.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(at.attempt_id, ": ", next.status().message()));
  at.state = *next;
  return absl::OkStatus();
}

bool AppManager::TransitionOrLog(RmApp& app, AppEvent event, absl::string_view during) {
  absl::Status s = Transition(app, event);
  if (!s.ok()) log::Error("app_transition_refused", {{"during", during}, {"error", s}});
  return s.ok();
}

bool AppManager::TransitionOrLog(RmAttempt& at, AttemptEvent event, absl::string_view during) {
  absl::Status s = Transition(at, event);
  if (!s.ok()) log::Error("attempt_transition_refused", {{"during", during}, {"error", s}});
  return s.ok();
}

void AppManager::Unadmit(const RmAttempt& at) {
  if (absl::StatusOr<std::vector<scheduler::ContainerKill>> r =
          ctx_->scheduler->RemoveApp(at.sched_app);
      !r.ok())
    log::Warn("unadmit_attempt", {{"attempt", at.attempt_id}, {"error", r.status()}});
  by_sched_app_.erase(at.sched_app);
  by_attempt_.erase(at.attempt_id);
}

absl::Status AppManager::Write(RmApp& app) {
  app.record.state = AppStateName(app.state);
  app.record.final_status = FinalStatusName(app.final_status);
  absl::Status s;
  if (app.attempts.empty()) {
    s = ctx_->store->PutApplication(app.record);
  } else {
    const RmAttempt& a = app.current();
    store::AttemptRecord at;
    at.app_id = app.record.app_id;
    at.attempt_id = a.id;
    at.state = AttemptStateName(a.state);
    at.am_container_id = a.am_container_id;
    at.node = a.am_node;
    at.diagnostics = a.diagnostics;
    at.exit_status = a.am_exit_status;
    at.start_ms = a.start_ms;
    at.finish_ms = a.finish_ms;
    s = ctx_->store->PutApplicationAndAttempt(app.record, at);
  }
  return s;
}

absl::Status AppManager::Persist(RmApp& app) {
  absl::Status s = Write(app);
  if (s.ok()) {
    unpersisted_.erase(app.record.app_id);
    return s;
  }
  log::Error("store_write_failed", {{"app", app.record.app_id},
                                    {"state", AppStateName(app.state)},
                                    {"error", s},
                                    {"retry_ms", ctx_->options->store_retry_ms}});
  unpersisted_.insert(app.record.app_id);
  if (retry_timer_ == 0)
    retry_timer_ = ctx_->loop->Schedule(ctx_->options->store_retry_ms, [this] { RetryPersist(); });
  return absl::UnavailableError(absl::StrCat("application ", app.record.app_id,
                                             ": the state store did not take the change (",
                                             s.message(), "); the RM retries the write"));
}

void AppManager::RetryPersist() {
  retry_timer_ = 0;
  std::set<std::string> pending = std::move(unpersisted_);
  unpersisted_.clear();
  for (const std::string& id : pending) {
    if (RmApp* app = FindMutable(id)) {
      if (Persist(*app).ok()) log::Info("store_write_retried", {{"app", id}});
    }
  }
}

// ---------------------------------------------------------------------------------------------
// ClientService

absl::StatusOr<v1::NewApplicationResponse> AppManager::NewApplication() {
  int32_t seq = next_app_seq_++;
  std::string id = absl::StrFormat("application_%d_%04d", ctx_->options->cluster_timestamp_ms, seq);
  reserved_ids_[id] = seq;
  v1::NewApplicationResponse resp;
  resp.set_application_id(id);
  *resp.mutable_maximum_capability() = ctx_->ToProto(ctx_->MaximumAllocation());
  return resp;
}

absl::StatusOr<Resource> AppManager::SizingWorker(const v1::AmSizingRequest& req) const {
  auto worker = ctx_->FromProto(req.worker_resource(), "worker resource");
  if (!worker.ok()) return worker.status();
  if (worker->IsZero()) return Resource::Of(1024, 1);
  return ctx_->registry().Normalize(*worker);
}

absl::Status AppManager::SubmitApplication(const v1::ApplicationSubmissionContext& ctx,
                                           const std::string& user) {
  const std::string& id = ctx.application_id();
  if (apps_.contains(id))
    return absl::AlreadyExistsError(absl::StrCat("application ", id, " was already submitted"));
  auto reserved = reserved_ids_.find(id);
  int64_t cluster_ts = ctx_->options->cluster_timestamp_ms;
  int32_t seq = 0;
  if (reserved != reserved_ids_.end()) {
    seq = reserved->second;
  } else {
    // In a federation the router takes an id from any sub-cluster and submits it to the home
    // its policy chose (YARN's FederationClientInterceptor), or resubmits an app whose home was
    // lost: an id of another RM's cluster timestamp is taken as it is. Ids of this RM's own
    // timestamp must come from its NewApplication.
    long long ts = 0;
    int parsed_seq = 0;
    char extra = 0;
    const bool foreign =
        !ctx_->options->sub_cluster_id.empty() &&
        std::sscanf(id.c_str(), "application_%lld_%d%c", &ts, &parsed_seq, &extra) == 2 &&
        ts > 0 && parsed_seq > 0 && ts != ctx_->options->cluster_timestamp_ms &&
        id == absl::StrFormat("application_%d_%04d", ts, parsed_seq);
    if (!foreign)
      return absl::NotFoundError(absl::StrCat(
          "application id '", id, "' was not handed out by NewApplication on this RM"));
    cluster_ts = ts;
    seq = parsed_seq;
  }
  if (static_cast<int64_t>(ctx.ByteSizeLong()) > ctx_->options->max_submission_bytes)
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": submission of ",
                                                   ctx.ByteSizeLong(), " bytes exceeds ",
                                                   ctx_->options->max_submission_bytes));
  if (user.empty())
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": no user"));
  if (absl::Status s = ctx.unmanaged_am() ? absl::OkStatus()
                                           : ValidateAmContainerSpec(ctx.am_container_spec());
      !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("application ", id, ": ", s.message()));
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
  if (ctx.unmanaged_am() && ctx.am_sizing().enabled())
    return absl::InvalidArgumentError(absl::StrCat(
        "application ", id, ": an unmanaged AM runs outside the cluster; AM sizing is for AM "
        "containers"));
  auto am = ctx_->FromProto(ctx.am_resource(), absl::StrCat("application ", id, ": AM resource"));
  if (!am.ok()) return am.status();
  if (am->IsZero()) *am = Resource::Of(1024, 1);  // YARN's default AM container
  auto normalized = ctx_->registry().Normalize(*am);
  if (!normalized.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("application ", id, ": AM resource: ", normalized.status().message()));
  if (ctx.unmanaged_am()) *normalized = Resource();  // it holds no AM container

  RmApp app;
  app.cluster_ts = cluster_ts;
  app.seq = seq;
  app.context = ctx;
  app.context.mutable_am_resource()->CopyFrom(ctx_->ToProto(*normalized));
  if (ctx.unmanaged_am()) app.context.clear_am_container_spec();
  app.record.app_id = id;
  app.record.name = ctx.name();
  app.record.queue = ctx.queue().empty() ? "default" : ctx.queue();
  app.record.user = user;
  app.record.priority = ctx.priority();
  app.record.submit_ms = ctx_->NowMs();
  app.record.max_attempts = ctx.max_app_attempts() == 0
                                ? ctx_->options->max_app_attempts
                                : std::min(ctx.max_app_attempts(), ctx_->options->max_app_attempts);
  // An unmanaged AM's attempt ends with its submitter: the RM cannot start another (YARN).
  if (ctx.unmanaged_am()) app.record.max_attempts = 1;
  app.record.submission = app.context.SerializeAsString();
  // The scheduler validates the queue (known, a leaf, RUNNING) as it admits the attempt; the
  // store must have the app before the client hears success.
  auto [it, inserted] = apps_.emplace(id, std::move(app));
  RmApp& stored = it->second;
  if (absl::Status s = StartAttempt(stored); !s.ok()) {
    apps_.erase(it);
    return s;
  }
  if (absl::Status s = Transition(stored, AppEvent::kAccepted); !s.ok()) {
    Unadmit(stored.current());
    apps_.erase(it);
    return s;
  }
  if (absl::Status s = Write(stored); !s.ok()) {
    // Not stored: the submission did not happen (the client may retry with the same id).
    Unadmit(stored.current());
    apps_.erase(it);
    log::Error("store_write_failed", {{"app", id}, {"during", "submission"}, {"error", s}});
    return absl::UnavailableError(absl::StrCat("application ", id, ": not stored: ", s.message()));
  }
  if (reserved != reserved_ids_.end()) reserved_ids_.erase(reserved);
  log::Info("app_submitted", {{"app", id}, {"user", user}, {"queue", stored.record.queue}});
  ctx_->request_pass();
  return absl::OkStatus();
}

absl::Status AppManager::SizeAm(RmApp& app) {
  const v1::AmSizingRequest& req = app.context.am_sizing();
  adaptcont::AmSizingJob job;
  job.user = app.record.user;
  job.queue = app.record.queue;
  job.input_bytes = req.input_bytes();
  job.split_bytes = req.split_bytes();
  job.reduce_tasks = req.reduce_tasks();
  absl::StatusOr<Resource> worker = SizingWorker(req);
  if (!worker.ok()) return worker.status();  // checked at submission
  job.worker = *worker;
  job.nodes_lost = ctx_->nodes->lost_nodes() - app.lost_nodes_at_last_sizing;
  if (!app.attempts.empty()) {
    const RmAttempt& last = app.attempts.back();
    job.previous_attempt = adaptcont::PreviousAttempt{
        {last.am_resource[kMemoryMb], last.am_resource[kVcores]}, last.am_memory_failure};
  }
  // Nodes still re-registering after a start must not look like a smaller cluster.
  const bool nodes_settled =
      ctx_->NowMs() - ctx_->started_ms >= ctx_->options->max_allocation_wait_ms;
  absl::StatusOr<adaptcont::AmSizingOutcome> sized =
      adaptcont::SizeAmContainer(ctx_->options->adaptcont, *ctx_->scheduler, job, nodes_settled);
  if (!sized.ok()) return sized.status();
  app.context.mutable_am_resource()->CopyFrom(ctx_->ToProto(sized->am));
  app.lost_nodes_at_last_sizing = ctx_->nodes->lost_nodes();
  std::string line =
      absl::StrCat("attempt ", app.attempts.size() + 1, ": AM ", ctx_->registry().Format(sized->am),
                   " (", sized->decision.Explanation(), ")");
  log::Info("am_sized", {{"app", app.record.app_id}, {"decision", line}});
  app.am_sizing_decisions.push_back(std::move(line));
  return absl::OkStatus();
}

absl::Status AppManager::StartAttempt(RmApp& app) {
  RmAttempt at;
  at.id = app.attempts.empty() ? 1 : app.attempts.back().id + 1;
  // The app's own cluster timestamp: after a restart it may be an earlier RM's.
  at.attempt_id = absl::StrFormat("appattempt_%d_%04d_%06d", app.cluster_ts, app.seq, at.id);
  at.start_ms = ctx_->NowMs();
  if (app.context.am_sizing().enabled()) {
    if (absl::Status s = SizeAm(app); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("application ", app.record.app_id,
                                                 ": sizing its AM (AdaptCont): ", s.message()));
    }
  }
  const bool unmanaged = app.context.unmanaged_am();
  if (absl::Status s = AdmitAttempt(app, at, /*ask_for_am=*/!unmanaged); !s.ok()) return s;
  if (absl::Status s = Transition(at, AttemptEvent::kScheduled); !s.ok()) {
    Unadmit(at);
    return s;
  }
  if (unmanaged) {
    if (MustHoldForLease(app)) {
      // As for an AM container (AmContainerAllocated): no AMRM token is handed out until the
      // federation heartbeater has checked the app.
      federation_.Hold(app.record.app_id);
      log::Warn("am_launch_held_federation_lease_stale",
                {{"attempt", at.attempt_id},
                 {"lease_renewed_ms", federation_.renewed_ms()},
                 {"fence_ms", federation_.fence_ms()}});
    } else if (absl::Status s = LaunchUnmanaged(app, at); !s.ok()) {
      Unadmit(at);
      return s;
    }
  }
  app.attempts.push_back(std::move(at));
  return absl::OkStatus();
}

absl::Status AppManager::AdmitAttempt(RmApp& app, RmAttempt& at, bool ask_for_am) {
  auto am = ctx_->FromProto(app.context.am_resource(), "AM resource");
  if (!am.ok()) return am.status();
  scheduler::AppSpec spec;
  spec.id = next_sched_app_++;
  spec.queue = app.record.queue;
  spec.user = app.record.user;
  spec.priority = app.record.priority;
  spec.profile = ToJobProfile(app.context.profile());
  if (ask_for_am) spec.am_resource = *am;
  if (absl::Status s = ctx_->scheduler->AddApp(spec, ctx_->NowMs()); !s.ok()) {
    // The core names the app by its internal number; users know it by its id.
    absl::string_view why = s.message();
    absl::ConsumePrefix(&why, absl::StrCat("application ", spec.id, ": "));
    return absl::Status(s.code(), absl::StrCat("application ", app.record.app_id, ": ", why));
  }
  at.sched_app = spec.id;
  at.am_resource = *am;
  by_sched_app_[at.sched_app] = app.record.app_id;
  by_attempt_[at.attempt_id] = app.record.app_id;
  return absl::OkStatus();
}

absl::Status AppManager::KillApplication(const std::string& app_id,
                                         const std::string& diagnostics) {
  RmApp* app = FindMutable(app_id);
  if (app == nullptr)
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  if (IsFinal(app->state)) return absl::OkStatus();  // idempotent, as YARN
  EndApp(*app, AppEvent::kKilled, v1::FINAL_KILLED,
         diagnostics.empty() ? "Application killed by user." : diagnostics);
  if (EndPending(app_id)) return absl::OkStatus();  // ends once its home record says so
  if (unpersisted_.contains(app_id))
    return absl::UnavailableError(absl::StrCat(
        "application ", app_id,
        " is killed, but the state store did not take it yet; the RM retries the write"));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Attempts and the end of an app

void AppManager::AmContainerEnded(const RmApp& handle, const std::string& container,
                                  int32_t exit_status, const std::string& diagnostics) {
  RmApp& app = Own(handle);
  RmAttempt& at = app.current();
  if (at.state == v1::ATTEMPT_FINISHING) {
    FinishApp(app, AppEventFor(at.final_status), at.final_status, at.diagnostics);
    return;
  }
  at.am_memory_failure = exit_status == v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM;
  at.am_exit_status = exit_status;
  AttemptFailed(app, absl::StrCat("AM container ", container, " exited with status ", exit_status,
                                  diagnostics.empty() ? "" : ": ", diagnostics));
}

absl::Status AppManager::AttemptRegistered(const RmApp& handle) {
  RmApp& app = Own(handle);
  RmAttempt& at = app.current();
  // Checked before anything changes: the app takes the registration in every state its live
  // attempt can register in, but an AM must hear of a refusal rather than run unregistered.
  if (absl::StatusOr<AppState> next = NextAppState(app.state, AppEvent::kAttemptRegistered);
      !next.ok())
    return absl::FailedPreconditionError(
        absl::StrCat(app.record.app_id, ": ", next.status().message()));
  if (absl::Status s = Transition(at, AttemptEvent::kRegistered); !s.ok()) return s;
  at.registered = true;
  at.last_heard_ms = ctx_->NowMs();
  if (absl::Status s = Transition(app, AppEvent::kAttemptRegistered); !s.ok()) return s;
  return Persist(app);
}

absl::Status AppManager::AttemptUnregistered(const RmApp& handle, FinalStatus final_status,
                                             const std::string& diagnostics) {
  RmApp& app = Own(handle);
  RmAttempt& at = app.current();
  if (absl::Status s = Transition(at, AttemptEvent::kUnregistered); !s.ok()) return s;
  at.final_status = final_status;
  at.diagnostics = diagnostics;
  // YARN finishes the app once the AM container exits; the AM has unregistered now.
  FinishApp(app, AppEventFor(final_status), final_status, diagnostics);
  if (unpersisted_.contains(app.record.app_id))
    return absl::UnavailableError(
        absl::StrCat("application ", app.record.app_id,
                     ": unregistered, but the state store did not take it yet"));
  return absl::OkStatus();
}

void AppManager::ReleaseContainers(RmApp& app) {
  if (app.attempts.empty()) return;
  const scheduler::AppId sched_app = app.current().sched_app;
  if (!by_sched_app_.contains(sched_app)) return;  // released already
  auto released = ctx_->scheduler->RemoveApp(sched_app);
  by_sched_app_.erase(sched_app);
  if (!released.ok()) return;
  for (const scheduler::ContainerKill& k : *released) {
    ctx_->containers->Forget(k.container, k.resource, k.allocated_ms,
                             ctx_->scheduler->node(k.node)->name);
  }
}

void AppManager::DropCompletions(RmAttempt& at) {
  ctx_->containers->Acknowledged(at.mailbox.TakeCompletions());
}

void AppManager::AttemptFailed(const RmApp& handle, const std::string& diagnostics) {
  RmApp& app = Own(handle);
  RmAttempt& at = app.current();
  // An attempt that has ended already fails no second time (nor starts a second successor).
  if (!TransitionOrLog(at, AttemptEvent::kFailed, "attempt_failed")) return;
  DropCompletions(at);  // no AM will read them
  at.diagnostics = diagnostics;
  at.finish_ms = ctx_->NowMs();
  log::Warn("attempt_failed", {{"attempt", at.attempt_id}, {"why", diagnostics}});
  Persist(app).IgnoreError();  // logged, retried
  ReleaseContainers(app);
  if (FailIfAttemptsUsedUp(app, diagnostics)) return;
  if (!CountsTowardMaxAttempts(at))
    log::Info("attempt_not_counted", {{"attempt", at.attempt_id},
                                      {"am_exit_status", at.am_exit_status},
                                      {"counted", CountedAttempts(app)},
                                      {"max_attempts", app.record.max_attempts}});
  if (MustHoldForLease(app)) {
    // Its home may have moved while this sub-cluster was silent: no second copy starts until
    // the federation heartbeater has checked it (FederationHomesChecked).
    federation_.Hold(app.record.app_id);
    log::Warn("attempt_held_federation_lease_stale",
              {{"app", app.record.app_id},
               {"lease_renewed_ms", federation_.renewed_ms()},
               {"fence_ms", federation_.fence_ms()}});
    return;
  }
  StartNextAttempt(app);
}

bool AppManager::FailIfAttemptsUsedUp(RmApp& app, absl::string_view last) {
  const int32_t failed = CountedAttempts(app);
  if (failed < app.record.max_attempts) return false;
  EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
            absl::StrCat("Application failed ", failed, " time(s) (max attempts ",
                         app.record.max_attempts, "); last attempt: ", last));
  return true;
}

void AppManager::StartNextAttempt(RmApp& app) {
  // Killed while its attempt ran, the kill waiting for its home record: no new attempt.
  if (EndPending(app.record.app_id)) return;
  if (absl::Status s = StartAttempt(app); !s.ok()) {
    EndApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
              absl::StrCat("cannot start a new attempt: ", s.message()));
    return;
  }
  if (!TransitionOrLog(app, AppEvent::kAccepted, "next_attempt")) return;
  Persist(app).IgnoreError();  // logged, retried
  ctx_->request_pass();
}

std::vector<FederationApp> AppManager::FederationApps() const {
  std::vector<FederationApp> out;
  for (const auto& [id, app] : apps_) {
    if (IsFinal(app.state)) continue;
    out.push_back({id, app.context.federation_home_sub_cluster_id()});
  }
  return out;
}

void AppManager::FederationHomesChecked(const FederationHomesCheck& check) {
  const std::vector<std::string> seen = federation_.Checked(check);
  for (const auto& [id, diagnostics] : check.homed_elsewhere) {
    RmApp* app = FindMutable(id);
    if (app == nullptr || IsFinal(app->state)) continue;
    log::Warn("app_homed_elsewhere_killed", {{"app", id}, {"why", diagnostics}});
    // A copy: its end is not its app's, and is not written into the home record.
    FinishApp(*app, AppEvent::kKilled, v1::FINAL_KILLED, diagnostics);
  }
  for (const std::string& id : seen) {
    RmApp* app = FindMutable(id);
    if (app == nullptr || IsFinal(app->state)) {
      held_launches_.erase(id);
      continue;
    }
    ReleaseHeld(*app);
  }
}

void AppManager::FinishApp(RmApp& app, AppEvent event, FinalStatus final_status,
                           const std::string& diagnostics) {
  // An app ends once: a second end (e.g. a kill racing its AM's unregistration) changes
  // nothing.
  if (!TransitionOrLog(app, event, "finish_app")) return;
  if (!app.attempts.empty() && !IsFinal(app.current().state)) {
    RmAttempt& at = app.current();
    // Every non-final attempt state takes each of these events (app_lifecycle.cc).
    if (TransitionOrLog(at,
                        app.state == v1::APP_FINISHED ? AttemptEvent::kFinished
                        : app.state == v1::APP_KILLED ? AttemptEvent::kKilled
                                                      : AttemptEvent::kFailed,
                        "finish_app"))
      at.finish_ms = ctx_->NowMs();
  }
  if (!app.attempts.empty()) DropCompletions(app.current());  // no AM will read them
  ReleaseContainers(app);
  // Its NMs delete its work dirs once its containers there have exited.
  app.ran_nodes.ForEach([&](scheduler::NodeId node) {
    if (const scheduler::NodeState* n = ctx_->scheduler->node(node))
      ctx_->nodes->AddAppCleanup(n->name, app.record.app_id);
  });
  app.ran_nodes.clear();
  federation_.Forget(app.record.app_id);
  held_launches_.erase(app.record.app_id);
  ends_.Take(app.record.app_id);
  app.final_status = final_status;
  app.record.diagnostics = diagnostics;
  app.record.finish_ms = ctx_->NowMs();
  log::Info("app_finished", {{"app", app.record.app_id},
                             {"state", AppStateName(app.state)},
                             {"final_status", FinalStatusName(final_status)}});
  Persist(app).IgnoreError();  // logged, retried; callers with a client check unpersisted_
  finished_.emplace(app.record.finish_ms, app.record.app_id);
  ctx_->history->AppFinished(app);
  EvictFinished();
}

void AppManager::EvictFinished() {
  std::vector<std::string> forgotten;
  while (static_cast<int64_t>(finished_.size()) > ctx_->options->max_completed_apps) {
    const std::string id = finished_.begin()->second;
    // Not before its final state is stored (a retry is pending) and its history is durable:
    // the next call (a retried write, a durability report) tries again.
    if (unpersisted_.contains(id) || !ctx_->history->AppDurable(id)) break;
    auto it = apps_.find(id);
    if (it != apps_.end()) {
      if (absl::Status s = ctx_->store->RemoveApplication(id);
          !s.ok() && !absl::IsNotFound(s)) {
        // Kept in memory as well then; tried again with the next finished app.
        log::Warn("store_remove_failed", {{"app", id}, {"error", s}});
        break;
      }
      for (const RmAttempt& at : it->second.attempts) {
        by_attempt_.erase(at.attempt_id);
        if (by_sched_app_.contains(at.sched_app) && by_sched_app_[at.sched_app] == id)
          by_sched_app_.erase(at.sched_app);
      }
      awaiting_am_.erase(id);
      held_launches_.erase(id);
      apps_.erase(it);
    }
    finished_.erase(finished_.begin());
    ctx_->history->AppForgotten(id);
    forgotten.push_back(id);
    ++evicted_;
  }
  if (!forgotten.empty())
    log::Info("apps_forgotten", {{"apps", static_cast<int64_t>(forgotten.size())},
                                 {"oldest", forgotten.front()},
                                 {"kept", static_cast<int64_t>(finished_.size())}});
}

void AppManager::ContainerAllocated(const RmApp& handle, scheduler::NodeId node,
                                    v1::Container container, bool is_am) {
  RmApp& app = Own(handle);
  app.ran_nodes.insert(node);
  if (is_am) {
    AmContainerAllocated(app, container);
    return;
  }
  app.current().mailbox.AddAllocated(std::move(container));
  if (ctx_->am_service != nullptr) ctx_->am_service->NotifyNews(app.record.app_id);
}

void AppManager::ContainerRecovered(const RmApp& handle, scheduler::NodeId node,
                                    v1::Container container, bool is_am) {
  RmApp& app = Own(handle);
  app.ran_nodes.insert(node);
  RmAttempt& at = app.current();
  if (is_am) {
    at.am_recovered = true;
  } else if (at.registered) {
    // Its AM registered again before this node did: it hears of it in its next Allocate.
    at.mailbox.AddRecovered(std::move(container));
    if (ctx_->am_service != nullptr) ctx_->am_service->NotifyNews(app.record.app_id);
  }
}

void AppManager::ContainerUpdated(const RmApp& handle, v1::UpdatedContainer updated) {
  RmApp& app = Own(handle);
  app.current().mailbox.AddUpdated(std::move(updated));
  if (ctx_->am_service != nullptr) ctx_->am_service->NotifyNews(app.record.app_id);
}

void AppManager::RequestRejected(scheduler::AppId sched_app,
                                 v1::RejectedSchedulingRequest rejected) {
  const RmApp* handle = FindBySchedulerId(sched_app);
  if (handle == nullptr) return;
  RmApp& app = Own(*handle);
  log::Info("request_rejected", {{"app", app.record.app_id}, {"reason", rejected.reason()}});
  app.current().mailbox.AddRejected(std::move(rejected));
  if (ctx_->am_service != nullptr) ctx_->am_service->NotifyNews(app.record.app_id);
}

void AppManager::ContainerCompleted(const RmApp& handle, RmCompletion done) {
  RmApp& app = Own(handle);
  app.current().mailbox.AddCompleted(std::move(done));
  if (ctx_->am_service != nullptr) ctx_->am_service->NotifyNews(app.record.app_id);
}

void AppManager::AmHeard(const RmApp& app) { Own(app).current().last_heard_ms = ctx_->NowMs(); }

AmMailbox& AppManager::mailbox(const RmApp& app) { return Own(app).current().mailbox; }

std::optional<v1::Token> AppManager::RollAmRmToken(const RmApp& app) {
  RmAttempt& at = Own(app).current();
  if (at.amrm_key_id == ctx_->keys->amrm().current().id) return std::nullopt;
  at.amrm_token = ctx_->keys->IssueAmRmToken(at.attempt_id, &at.amrm_key_id);
  return at.amrm_token;
}

void AppManager::ChargeUsage(const std::string& app_id, const Resource& resource_ms) {
  if (RmApp* app = FindMutable(app_id)) {
    app->usage_ms += resource_ms;
    ++app->completed_containers;  // called once for every container that ends
  }
}

}  // namespace weft::rm
