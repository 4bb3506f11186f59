// Copyright Weft authors. AppManager's reports: what ClientService, the web UI and the cluster
// metrics read of apps and attempts (app_manager.h).
#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rm/app_manager.h"
#include "rm/container_tracker.h"
#include "rm/node_tracker.h"

namespace weft::rm {

// ---------------------------------------------------------------------------------------------
// Reports

v1::ApplicationReport AppManager::Report(const RmApp& app) const {
  v1::ApplicationReport r;
  r.set_application_id(app.record.app_id);
  r.set_name(app.record.name);
  r.set_queue(app.record.queue);
  r.set_user(app.record.user);
  r.set_priority(app.record.priority);
  r.set_state(app.state);
  r.set_final_status(app.final_status);
  r.set_diagnostics(app.record.diagnostics);
  if (const FederationEnds::End* end = ends_.Find(app.record.app_id))
    r.set_diagnostics(absl::StrCat("Ending as ", AppStateName(NextAppState(app.state, end->event)
                                                                  .value_or(v1::APP_KILLED)),
                                   " once its home record in the federation store says so: ",
                                   end->diagnostics));
  r.set_submit_time_ms(app.record.submit_ms);
  r.set_start_time_ms(app.record.start_ms);
  r.set_finish_time_ms(app.record.finish_ms);
  const scheduler::Scheduler& sched = *ctx_->scheduler;
  if (!app.attempts.empty()) {
    const RmAttempt& at = app.current();
    r.set_current_attempt(at.id);
    r.set_am_host(at.am_node);
    if (const scheduler::AppState* s = sched.app(at.sched_app)) {
      *r.mutable_allocated() = ctx_->ToProto(s->usage);
      r.set_running_containers(static_cast<int32_t>(s->num_containers));
      r.set_pending_containers(static_cast<int32_t>(s->pending_containers));
    }
  }
  r.set_completed_containers(static_cast<int32_t>(app.completed_containers));
  r.set_progress(IsFinal(app.state) ? 1.0f : 0.0f);
  *r.mutable_am_resource() = app.context.am_resource();
  for (const std::string& d : app.am_sizing_decisions) r.add_am_sizing_decisions(d);
  r.set_completion_goal_ms(app.context.profile().completion_goal_ms());
  r.set_unmanaged_am(app.context.unmanaged_am());
  r.set_sub_cluster_id(ctx_->options->sub_cluster_id);
  // Resource-seconds: ended containers plus the running ones so far.
  Resource usage_ms = app.usage_ms;
  if (!app.attempts.empty() && !IsFinal(app.state)) {
    const int64_t now = ctx_->NowMs();
    for (scheduler::ContainerId id : sched.AppContainers(app.current().sched_app)) {
      if (const scheduler::ContainerState* c = sched.container(id))
        usage_ms += c->resource * std::max<int64_t>(0, now - c->allocated_ms);
    }
  }
  Resource seconds;
  for (int i = 0; i < ctx_->registry().size(); ++i) seconds[i] = usage_ms[i] / 1000;
  *r.mutable_resource_seconds() = ctx_->ToProto(seconds);
  return r;
}

std::optional<v1::Token> AppManager::UnmanagedAmToken(const std::string& app_id) const {
  auto it = apps_.find(app_id);
  if (it == apps_.end() || !it->second.context.unmanaged_am() || it->second.attempts.empty() ||
      IsFinal(it->second.state) || IsFinal(it->second.current().state) ||
      it->second.current().state == v1::ATTEMPT_SCHEDULED)  // held: no token yet
    return std::nullopt;
  return it->second.current().amrm_token;
}

absl::StatusOr<v1::ApplicationReport> AppManager::GetApplication(const std::string& app_id) const {
  auto it = apps_.find(app_id);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  return Report(it->second);
}

v1::ListApplicationsResponse AppManager::ListApplications(
    const v1::ListApplicationsRequest& req) const {
  v1::ListApplicationsResponse resp;
  for (const auto& [id, app] : apps_) {
    if (!req.states().empty() &&
        std::find(req.states().begin(), req.states().end(), app.state) == req.states().end())
      continue;
    if (!req.queue().empty() && req.queue() != app.record.queue) continue;
    if (!req.user().empty() && req.user() != app.record.user) continue;
    *resp.add_applications() = Report(app);
    if (req.limit() > 0 && resp.applications_size() >= req.limit()) break;
  }
  return resp;
}

absl::StatusOr<v1::GetApplicationAttemptsResponse> AppManager::GetApplicationAttempts(
    const std::string& app_id) const {
  auto it = apps_.find(app_id);
  if (it == apps_.end())
    return absl::NotFoundError(absl::StrCat("application '", app_id, "' not found"));
  v1::GetApplicationAttemptsResponse resp;
  for (const RmAttempt& at : it->second.attempts) {
    v1::ApplicationAttemptReport* r = resp.add_attempts();
    r->set_attempt_id(at.attempt_id);
    r->set_attempt(at.id);
    r->set_state(AttemptStateName(at.state));
    r->set_am_container_id(at.am_container_id);
    r->set_am_node_id(at.am_node);
    if (const RmNode* n = ctx_->nodes->Find(at.am_node))
      r->set_am_node_http_address(n->registration.http_address());
    r->set_start_time_ms(at.start_ms);
    r->set_finish_time_ms(at.finish_ms);
    r->set_diagnostics(at.diagnostics);
  }
  return resp;
}

void AppManager::CountApps(v1::GetClusterMetricsResponse* m) const {
  for (const auto& [id, app] : apps_) {
    m->set_apps_submitted(m->apps_submitted() + 1);
    switch (app.state) {
      case v1::APP_RUNNING:
        m->set_apps_running(m->apps_running() + 1);
        break;
      case v1::APP_ACCEPTED:
      case v1::APP_SUBMITTED:
        m->set_apps_pending(m->apps_pending() + 1);
        break;
      case v1::APP_FINISHED:
        m->set_apps_completed(m->apps_completed() + 1);
        break;
      case v1::APP_FAILED:
        m->set_apps_failed(m->apps_failed() + 1);
        break;
      case v1::APP_KILLED:
        m->set_apps_killed(m->apps_killed() + 1);
        break;
      default:
        break;
    }
  }
}

}  // namespace weft::rm
