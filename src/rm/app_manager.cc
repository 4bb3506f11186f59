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
#include "rm/container_tracker.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "rm/submission.h"

namespace weft::rm {
namespace {

// Tries of an AM launch whose NM is unreachable: the first again after this, doubling up to
// kAmLaunchMaxRetryMs, ms.
constexpr int64_t kAmLaunchRetryMs = 250;
constexpr int64_t kAmLaunchMaxRetryMs = 4000;

}  // namespace

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

AppManager::~AppManager() { ctx_->loop->Cancel(retry_timer_); }

RmApp* AppManager::Find(const std::string& app_id) {
  auto it = apps_.find(app_id);
  return it == apps_.end() ? nullptr : &it->second;
}

RmApp* AppManager::FindBySchedulerId(scheduler::AppId id) {
  auto it = by_sched_app_.find(id);
  return it == by_sched_app_.end() ? nullptr : Find(it->second);
}

RmApp* AppManager::FindByAttempt(const std::string& attempt_id) {
  auto it = by_attempt_.find(attempt_id);
  return it == by_attempt_.end() ? nullptr : Find(it->second);
}

void AppManager::Transition(RmApp& app, AppEvent event) {
  absl::StatusOr<AppState> next = NextAppState(app.state, event);
  if (!next.ok()) {
    log::Error("app_transition_refused", {{"app", app.record.app_id}, {"error", next.status()}});
    return;
  }
  if (*next != app.state)
    log::Info("app_state", {{"app", app.record.app_id},
                            {"from", AppStateName(app.state)},
                            {"to", AppStateName(*next)}});
  app.state = *next;
}

void AppManager::Transition(RmAttempt& at, AttemptEvent event) {
  absl::StatusOr<AttemptState> next = NextAttemptState(at.state, event);
  if (!next.ok()) {
    log::Error("attempt_transition_refused",
               {{"attempt", at.attempt_id}, {"error", next.status()}});
    return;
  }
  at.state = *next;
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
    if (RmApp* app = Find(id)) {
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
  Transition(stored, AppEvent::kAccepted);
  const RmAttempt& first = stored.current();
  if (absl::Status s = Write(stored); !s.ok()) {
    // Not stored: the submission did not happen (the client may retry with the same id).
    (void)ctx_->scheduler->RemoveApp(first.sched_app);
    by_sched_app_.erase(first.sched_app);
    by_attempt_.erase(first.attempt_id);
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
  Transition(at, AttemptEvent::kScheduled);
  if (unmanaged) {
    if (MustHoldForLease(app)) {
      // As for an AM container (AmContainerAllocated): no AMRM token is handed out until the
      // federation heartbeater has checked the app.
      federation_.Hold(app.record.app_id);
      log::Warn("am_launch_held_federation_lease_stale",
                {{"attempt", at.attempt_id},
                 {"lease_renewed_ms", federation_.renewed_ms()},
                 {"fence_ms", federation_.fence_ms()}});
    } else {
      LaunchUnmanaged(app, at);
    }
  }
  app.attempts.push_back(std::move(at));
  return absl::OkStatus();
}

void AppManager::LaunchUnmanaged(RmApp& app, RmAttempt& at) {
  // No AM container: the attempt is launched as soon as it is admitted, and its AM (the
  // submitter) has am_expiry_ms to register with the token its report carries.
  Transition(at, AttemptEvent::kAmAllocated);
  Transition(at, AttemptEvent::kAmLaunched);
  at.amrm_token = ctx_->keys->IssueAmRmToken(at.attempt_id, &at.amrm_key_id);
  at.last_heard_ms = ctx_->NowMs();
  if (app.record.start_ms == 0) app.record.start_ms = ctx_->NowMs();
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
  RmApp* app = Find(app_id);
  if (app == nullptr)
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  if (IsFinal(app->state)) return absl::OkStatus();  // idempotent, as YARN
  FinishApp(*app, AppEvent::kKilled, v1::FINAL_KILLED,
            diagnostics.empty() ? "Application killed by user." : diagnostics);
  if (unpersisted_.contains(app_id))
    return absl::UnavailableError(absl::StrCat(
        "application ", app_id,
        " is killed, but the state store did not take it yet; the RM retries the write"));
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Attempts and the end of an app

void AppManager::AmContainerAllocated(RmApp& app, const v1::Container& container) {
  RmAttempt& at = app.current();
  at.am_container_id = container.container_id();
  at.am_node = container.node_id();
  Transition(at, AttemptEvent::kAmAllocated);
  at.amrm_token = ctx_->keys->IssueAmRmToken(at.attempt_id, &at.amrm_key_id);
  at.last_heard_ms = ctx_->NowMs();
  if (app.record.start_ms == 0) app.record.start_ms = ctx_->NowMs();
  // A failed write is logged and retried; the launch does not wait for it.
  Persist(app).IgnoreError();
  v1::StartContainerRequest start;
  *start.mutable_container_token() = container.container_token();
  *start.mutable_launch_context() = app.context.am_container_spec();
  auto& env = *start.mutable_launch_context()->mutable_environment();
  env["WEFT_APPLICATION_ID"] = app.record.app_id;
  env["WEFT_APP_ATTEMPT_ID"] = at.attempt_id;
  env["WEFT_RM_ADDRESS"] = ctx_->rm_address;
  // The AMRM token goes to a file only the app's user can read (the NM writes it), not into
  // an environment every process of the container inherits.
  auto& tokens = *start.mutable_launch_context()->mutable_tokens();
  tokens.clear();
  tokens["amrm"] = at.amrm_token.SerializeAsString();
  auto request = std::make_shared<const v1::StartContainerRequest>(std::move(start));
  if (MustHoldForLease(app)) {
    // Its home may have moved while this sub-cluster was silent (e.g. an ACCEPTED app of an
    // RM that was stopped): the AM container is kept, but its AM starts only once the
    // federation heartbeater has checked the app (FederationHomesChecked).
    federation_.Hold(app.record.app_id);
    held_launches_[app.record.app_id] = {at.id, at.am_container_id, at.am_node, request};
    log::Warn("am_launch_held_federation_lease_stale",
              {{"attempt", at.attempt_id},
               {"lease_renewed_ms", federation_.renewed_ms()},
               {"fence_ms", federation_.fence_ms()}});
    return;
  }
  LaunchAm(app.record.app_id, at.id, at.am_container_id, at.am_node, std::move(request),
           /*tries=*/0, ctx_->NowMs());
}

bool AppManager::MustHoldForLease(const RmApp& app) const {
  // Apps of an RM that is not a federation sub-cluster are never held.
  if (ctx_->options->sub_cluster_id.empty()) return false;
  const bool uam = !app.context.federation_home_sub_cluster_id().empty();
  return federation_.MustHold(app.record.app_id, uam, ctx_->NowMs());
}

void AppManager::ReleaseHeld(RmApp& app) {
  auto launch = held_launches_.extract(app.record.app_id);
  if (app.attempts.empty()) return;
  RmAttempt& at = app.current();
  if (IsFinal(at.state)) {
    log::Info("attempt_released", {{"app", app.record.app_id}, {"why", "federation home checked"}});
    StartNextAttempt(app);
    return;
  }
  if (app.context.unmanaged_am() && at.state == v1::ATTEMPT_SCHEDULED) {
    log::Info("am_launch_released",
              {{"attempt", at.attempt_id}, {"why", "federation home checked"}});
    LaunchUnmanaged(app, at);
    Persist(app).IgnoreError();  // logged, retried
    return;
  }
  if (launch.empty() || launch.mapped().attempt != at.id ||
      !AmLaunchPending(app, launch.mapped().container))
    return;  // settled while it was held (its node was lost, ...)
  log::Info("am_launch_released", {{"attempt", at.attempt_id}, {"why", "federation home checked"}});
  at.last_heard_ms = ctx_->NowMs();  // a full am_expiry_ms from the launch
  LaunchAm(app.record.app_id, at.id, launch.mapped().container, launch.mapped().node,
           std::move(launch.mapped().start), /*tries=*/0, ctx_->NowMs());
}

bool AppManager::AmLaunchPending(const RmApp& app, const std::string& container) const {
  if (IsFinal(app.state) || app.attempts.empty()) return false;
  const RmAttempt& at = app.current();
  return at.state == v1::ATTEMPT_ALLOCATED && at.am_container_id == container;
}

bool AppManager::AmLaunchPending(const std::string& container) {
  const RmApp* app = Find(AppOfContainer(container));
  return app != nullptr && AmLaunchPending(*app, container);
}

void AppManager::LaunchAm(const std::string& app_id, int32_t attempt,
                          const std::string& container, const std::string& node,
                          std::shared_ptr<const v1::StartContainerRequest> start, int32_t tries,
                          int64_t first_try_ms) {
  EventLoop* loop = ctx_->loop;
  std::weak_ptr<int> alive = alive_;
  ctx_->launcher->Launch(node, *start, [this, loop, alive, app_id, attempt, container, node, start,
                                        tries, first_try_ms](absl::Status s) {
    loop->Post([this, alive, app_id, attempt, container, node, start, tries, first_try_ms, s] {
      if (alive.expired()) return;  // the ResourceManager is gone (read on the loop)
      RmApp* app = Find(app_id);
      if (app == nullptr || app->current().id != attempt || IsFinal(app->state)) return;
      absl::Status result = s;
      // A try after one that went unanswered may meet the container started already: the NM
      // took that try (its answer was lost), so the AM runs. A restarted NM says it has the
      // container; the same NM refuses the token as used.
      if (!result.ok() && tries > 0 &&
          (result.code() == absl::StatusCode::kAlreadyExists ||
           (result.code() == absl::StatusCode::kPermissionDenied &&
            absl::StrContains(result.message(), "already used (replay)")))) {
        result = absl::OkStatus();
      }
      if (!result.ok()) {
        if (!AmLaunchPending(*app, container)) return;  // settled meanwhile (e.g. it registered)
        // Its NM is unreachable or restarting, or answered that it cannot take the container
        // yet (before its first registration): Unavailable either way. The container waits
        // for it, as long as the RM holds it (its node is not lost) and for at most the NM
        // expiry.
        const bool unavailable = result.code() == absl::StatusCode::kUnavailable;
        const int64_t waited_ms = ctx_->NowMs() - first_try_ms;
        if (unavailable && ctx_->containers->Holds(container) &&
            waited_ms < ctx_->options->nm_expiry_ms) {
          const int64_t delay_ms =
              std::min<int64_t>(kAmLaunchMaxRetryMs, kAmLaunchRetryMs << std::min(tries, 6));
          log::Warn("am_launch_retry", {{"attempt", app->current().attempt_id},
                                        {"container", container},
                                        {"node", node},
                                        {"error", result},
                                        {"retry_ms", delay_ms}});
          ctx_->loop->Schedule(delay_ms, [this, alive, app_id, attempt, container, node, start,
                                          tries, first_try_ms] {
            if (alive.expired()) return;
            RmApp* again = Find(app_id);
            if (again == nullptr || again->current().id != attempt ||
                !AmLaunchPending(*again, container) || !ctx_->containers->Holds(container))
              return;  // settled while it waited (its node was lost, the app was killed, ...)
            LaunchAm(app_id, attempt, container, node, start, tries + 1, first_try_ms);
          });
          return;
        }
        AttemptFailed(*app, absl::StrCat("AM container launch failed: ", result.message()));
        return;
      }
      if (app->current().state == v1::ATTEMPT_ALLOCATED)
        Transition(app->current(), AttemptEvent::kAmLaunched);
    });
  });
}

void AppManager::AmContainerEnded(RmApp& app, const std::string& container, int32_t exit_status,
                                  const std::string& diagnostics) {
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

absl::Status AppManager::AttemptRegistered(RmApp& app) {
  RmAttempt& at = app.current();
  at.registered = true;
  Transition(at, AttemptEvent::kRegistered);
  at.last_heard_ms = ctx_->NowMs();
  Transition(app, AppEvent::kAttemptRegistered);
  return Persist(app);
}

absl::Status AppManager::AttemptUnregistered(RmApp& app, FinalStatus final_status,
                                             const std::string& diagnostics) {
  RmAttempt& at = app.current();
  Transition(at, AttemptEvent::kUnregistered);
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
  ctx_->containers->Acknowledged(at.new_completed);
  ctx_->containers->Acknowledged(at.sent_completed);
  at.new_completed.clear();
  at.sent_completed.clear();
}

void AppManager::AttemptFailed(RmApp& app, const std::string& diagnostics) {
  RmAttempt& at = app.current();
  DropCompletions(at);  // no AM will read them
  Transition(at, AttemptEvent::kFailed);
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
  FinishApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
            absl::StrCat("Application failed ", failed, " time(s) (max attempts ",
                         app.record.max_attempts, "); last attempt: ", last));
  return true;
}

void AppManager::StartNextAttempt(RmApp& app) {
  if (absl::Status s = StartAttempt(app); !s.ok()) {
    FinishApp(app, AppEvent::kFailed, v1::FINAL_FAILED,
              absl::StrCat("cannot start a new attempt: ", s.message()));
    return;
  }
  Transition(app, AppEvent::kAccepted);
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
    RmApp* app = Find(id);
    if (app == nullptr || IsFinal(app->state)) continue;
    log::Warn("app_homed_elsewhere_killed", {{"app", id}, {"why", diagnostics}});
    KillApplication(id, diagnostics).IgnoreError();  // Unavailable: killed, write retried
  }
  for (const std::string& id : seen) {
    RmApp* app = Find(id);
    if (app == nullptr || IsFinal(app->state)) {
      held_launches_.erase(id);
      continue;
    }
    ReleaseHeld(*app);
  }
}

void AppManager::FinishApp(RmApp& app, AppEvent event, FinalStatus final_status,
                           const std::string& diagnostics) {
  Transition(app, event);
  if (!app.attempts.empty() && !IsFinal(app.current().state)) {
    RmAttempt& at = app.current();
    Transition(at, app.state == v1::APP_FINISHED ? AttemptEvent::kFinished
                   : app.state == v1::APP_KILLED ? AttemptEvent::kKilled
                                                 : AttemptEvent::kFailed);
    at.finish_ms = ctx_->NowMs();
  }
  if (!app.attempts.empty()) DropCompletions(app.current());  // no AM will read them
  ReleaseContainers(app);
  // Its NMs delete its work dirs once its containers there have exited.
  for (const std::string& node : app.ran_nodes) {
    ctx_->nodes->AddAppCleanup(node, app.record.app_id);
  }
  app.ran_nodes.clear();
  federation_.Forget(app.record.app_id);
  held_launches_.erase(app.record.app_id);
  app.final_status = final_status;
  app.record.diagnostics = diagnostics;
  app.record.finish_ms = ctx_->NowMs();
  log::Info("app_finished", {{"app", app.record.app_id},
                             {"state", AppStateName(app.state)},
                             {"final_status", FinalStatusName(final_status)}});
  Persist(app).IgnoreError();  // logged, retried; callers with a client check unpersisted_
}

void AppManager::ChargeUsage(const std::string& app_id, const Resource& resource_ms) {
  if (RmApp* app = Find(app_id)) {
    app->usage_ms += resource_ms;
    ++app->completed_containers;  // called once for every container that ends
  }
}

}  // namespace weft::rm
