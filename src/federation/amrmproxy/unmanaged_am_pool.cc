// Copyright Weft authors.
#include "federation/amrmproxy/unmanaged_am_pool.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace weft::amrmproxy {
namespace {

bool IsFinalState(v1::ApplicationState state) {
  return state == v1::APP_FINISHED || state == v1::APP_FAILED || state == v1::APP_KILLED;
}

absl::Status Context(const absl::Status& s, const UnmanagedAm& uam, absl::string_view step) {
  return absl::Status(s.code(), absl::StrCat("unmanaged AM in sub-cluster '", uam.sub_cluster_id,
                                             "': ", step, ": ", s.message()));
}

}  // namespace

UnmanagedAmPool::UnmanagedAmPool(const AttemptContext& attempt, std::string home_sub_cluster_id,
                                 SubClusterRpc* rpc, std::function<int64_t()> now_ms,
                                 std::function<void(int64_t)> sleep_ms)
    : attempt_(attempt),
      home_sub_cluster_id_(std::move(home_sub_cluster_id)),
      rpc_(rpc),
      now_ms_(std::move(now_ms)),
      sleep_ms_(std::move(sleep_ms)) {}

UnmanagedAm& UnmanagedAmPool::GetOrAdd(const std::string& sub_cluster_id, const std::string& rm) {
  UnmanagedAm& uam = uams_[sub_cluster_id];
  if (uam.sub_cluster_id.empty()) {
    uam.sub_cluster_id = sub_cluster_id;
    uam.rm = rm;
  }
  return uam;
}

UnmanagedAm& UnmanagedAmPool::Adopt(const UamState& state) {
  UnmanagedAm& uam = GetOrAdd(state.sub_cluster_id, state.rm);
  uam.rm = state.rm;
  uam.application_id = state.application_id;
  uam.amrm_token = state.amrm_token;
  uam.registered = false;
  uam.finished = state.finished;
  uam.retry_after_ms = 0;
  return uam;
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> UnmanagedAmPool::Launch(
    UnmanagedAm& uam, const std::string& queue, const std::string& name,
    const v1::RegisterApplicationMasterRequest& registration) {
  if (uam.registered) return v1::RegisterApplicationMasterResponse();
  if (uam.finished) {
    return absl::FailedPreconditionError(
        absl::StrCat("unmanaged AM in sub-cluster '", uam.sub_cluster_id, "' has finished"));
  }
  const int64_t now = now_ms_();
  if (now < uam.retry_after_ms) {
    return absl::FailedPreconditionError(
        absl::StrCat("unmanaged AM in sub-cluster '", uam.sub_cluster_id,
                     "': its last launch failed; next try in ", uam.retry_after_ms - now, " ms"));
  }
  auto failed = [&](const absl::Status& s, absl::string_view step) {
    uam.retry_after_ms = now_ms_() + kLaunchRetryMs;
    absl::Status out = Context(s, uam, step);
    log::Warn(
        "amrmproxy_uam_launch_failed",
        {{"attempt", attempt_.attempt_id}, {"sub_cluster", uam.sub_cluster_id}, {"error", out}});
    return out;
  };
  if (uam.application_id.empty()) {
    // The home app's id: the UAM is the same app, federation-wide (no NewApplication here).
    v1::ApplicationSubmissionContext context;
    context.set_application_id(attempt_.application_id);
    context.set_name(name);
    context.set_queue(queue);
    context.set_unmanaged_am(true);
    context.set_max_app_attempts(1);
    context.set_federation_home_sub_cluster_id(home_sub_cluster_id_);
    absl::Status s = rpc_->SubmitApplication(uam.rm, attempt_.user, context);
    if (!s.ok() && !absl::IsAlreadyExists(s)) return failed(s, "SubmitApplication");
    uam.application_id = attempt_.application_id;
    log::Info(s.ok() ? "amrmproxy_uam_submitted" : "amrmproxy_uam_existed",
              {{"attempt", attempt_.attempt_id},
               {"sub_cluster", uam.sub_cluster_id},
               {"application", uam.application_id},
               {"home", home_sub_cluster_id_}});
  }
  // The RM issues the UAM's token once its attempt exists.
  int64_t wait = kFirstPollWaitMs;
  std::optional<v1::Token> token;
  for (int poll = 0; poll < kReportPolls; ++poll) {
    absl::StatusOr<v1::ApplicationReport> report =
        rpc_->GetApplication(uam.rm, attempt_.user, uam.application_id);
    if (!report.ok()) return failed(report.status(), "GetApplication");
    if (IsFinalState(report->state())) {
      uam.finished = true;
      return failed(absl::FailedPreconditionError(absl::StrCat("application ", uam.application_id,
                                                               " ended: ", report->diagnostics())),
                    "GetApplication");
    }
    if (report->has_amrm_token() && !report->amrm_token().identifier().empty()) {
      token = report->amrm_token();
      break;
    }
    sleep_ms_(wait);
    wait = std::min<int64_t>(wait * 2, 200);
  }
  if (!token.has_value()) {
    return failed(absl::DeadlineExceededError(absl::StrCat("application ", uam.application_id,
                                                           " has no AMRM token after ",
                                                           kReportPolls, " reports")),
                  "GetApplication");
  }
  uam.amrm_token = *std::move(token);
  absl::StatusOr<v1::RegisterApplicationMasterResponse> registered =
      rpc_->RegisterApplicationMaster(uam.rm, uam.amrm_token, registration);
  if (!registered.ok()) return failed(registered.status(), "RegisterApplicationMaster");
  uam.registered = true;
  log::Info("amrmproxy_uam_registered",
            {{"attempt", attempt_.attempt_id},
             {"sub_cluster", uam.sub_cluster_id},
             {"application", uam.application_id},
             {"containers_from_previous_attempts",
              registered->containers_from_previous_attempts_size()}});
  return registered;
}

absl::Status UnmanagedAmPool::Finish(UnmanagedAm& uam,
                                     const v1::FinishApplicationMasterRequest& request) {
  if (!uam.registered || uam.finished) return absl::OkStatus();
  absl::StatusOr<v1::FinishApplicationMasterResponse> done =
      rpc_->FinishApplicationMaster(uam.rm, uam.amrm_token, request);
  if (!done.ok()) return Context(done.status(), uam, "FinishApplicationMaster");
  uam.finished = true;
  return absl::OkStatus();
}

void UnmanagedAmPool::KillUnfinished(const std::string& reason) {
  for (auto& [id, uam] : uams_) {
    if (uam.application_id.empty() || uam.finished) continue;
    absl::Status s = rpc_->KillApplication(uam.rm, attempt_.user, uam.application_id, reason);
    if (!s.ok()) {
      log::Warn("amrmproxy_uam_kill_failed", {{"attempt", attempt_.attempt_id},
                                              {"sub_cluster", id},
                                              {"application", uam.application_id},
                                              {"error", s}});
      continue;
    }
    uam.finished = true;
    log::Info("amrmproxy_uam_killed", {{"attempt", attempt_.attempt_id},
                                       {"sub_cluster", id},
                                       {"application", uam.application_id}});
  }
}

}  // namespace weft::amrmproxy
