// Copyright Weft authors. The AppManager's AM launcher (YARN's AMLauncher): an attempt's AM
// container, once allocated, is launched on its node with the AM's environment and AMRM token,
// retried while its NM is unavailable, and held while this sub-cluster's federation lease is
// stale; an unmanaged AM's attempt is launched by handing out its token.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/app_manager.h"
#include "rm/container_tracker.h"
#include "rm/rm_keys.h"

namespace weft::rm {
namespace {

// Tries of an AM launch whose NM is unreachable: the first again after this, doubling up to
// kAmLaunchMaxRetryMs, ms.
constexpr int64_t kAmLaunchRetryMs = 250;
constexpr int64_t kAmLaunchMaxRetryMs = 4000;

}  // namespace

absl::Status AppManager::LaunchUnmanaged(RmApp& app, RmAttempt& at) {
  // No AM container: the attempt is launched as soon as it is admitted, and its AM (the
  // submitter) has am_expiry_ms to register with the token its report carries.
  if (absl::Status s = Transition(at, AttemptEvent::kAmAllocated); !s.ok()) return s;
  if (absl::Status s = Transition(at, AttemptEvent::kAmLaunched); !s.ok()) return s;
  at.amrm_token = ctx_->keys->IssueAmRmToken(at.attempt_id, &at.amrm_key_id);
  at.last_heard_ms = ctx_->NowMs();
  if (app.record.start_ms == 0) app.record.start_ms = ctx_->NowMs();
  return absl::OkStatus();
}

void AppManager::AmContainerAllocated(RmApp& app, const v1::Container& container) {
  RmAttempt& at = app.current();
  // An attempt that is not waiting for its AM container does not take one (the scheduler only
  // allocates one to an attempt that asked): the container stays with the scheduler's app and
  // is released with it.
  if (!TransitionOrLog(at, AttemptEvent::kAmAllocated, "am_container_allocated")) return;
  at.am_container_id = container.container_id();
  at.am_node = container.node_id();
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
    if (absl::Status s = LaunchUnmanaged(app, at); !s.ok()) {
      AttemptFailed(app, absl::StrCat("its AM could not be launched: ", s.message()));
      return;
    }
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
      RmApp* app = FindMutable(app_id);
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
            RmApp* again = FindMutable(app_id);
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
        TransitionOrLog(app->current(), AttemptEvent::kAmLaunched, "am_launch_answered");
    });
  });
}

}  // namespace weft::rm
