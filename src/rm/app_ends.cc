// Copyright Weft authors. The AppManager's ends of federated apps (app_lifecycle.h
// FederationEnds): a kill or failure decided by this sub-cluster's RM is written into the
// app's home record in the federation store before the app ends, so that the GPG never
// resubmits an app that a client saw end.
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "rm/app_manager.h"

namespace weft::rm {

void AppManager::EndApp(RmApp& app, AppEvent event, FinalStatus final_status,
                        const std::string& diagnostics) {
  const std::string& id = app.record.app_id;
  // Only an app that may have a home record: not one the last federation check found without
  // one, nor a secondary's unmanaged AM (its home app's record is not this copy's to write).
  if (!ctx_->options->record_end_at_home || IsFinal(app.state) ||
      !app.context.federation_home_sub_cluster_id().empty() || federation_.WithoutHome(id)) {
    FinishApp(app, event, final_status, diagnostics);
    return;
  }
  if (!ends_.Add(id, {event, final_status, diagnostics, ctx_->NowMs()})) return;  // one waits
  log::Info("app_end_waits_for_home_record",
            {{"app", id}, {"final_status", FinalStatusName(final_status)}});
  WriteEnds();
}

void AppManager::WriteEnds() {
  EventLoop* loop = ctx_->loop;
  std::weak_ptr<int> alive = alive_;
  for (auto& [id, ended_ms] : ends_.TakeToWrite()) {
    ctx_->options->record_end_at_home(id, ended_ms, [this, loop, alive, id](absl::Status s) {
      loop->Post([this, alive, id, s] {
        if (alive.expired()) return;  // the ResourceManager is gone (read on the loop)
        EndWritten(id, s);
      });
    });
  }
}

void AppManager::EndWritten(const std::string& app_id, const absl::Status& written) {
  RmApp* app = FindMutable(app_id);
  if (app == nullptr || IsFinal(app->state)) {
    ends_.Take(app_id);  // ended otherwise meanwhile (its AM unregistered, a fenced copy)
    return;
  }
  if (written.ok()) {
    std::optional<FederationEnds::End> end = ends_.Take(app_id);
    if (end.has_value()) FinishApp(*app, end->event, end->final_status, end->diagnostics);
    return;
  }
  if (absl::IsFailedPrecondition(written)) {
    // Its record names another sub-cluster: the GPG moved the app while this one was lost,
    // and this is a copy, killed as the federation check kills one.
    ends_.Take(app_id);
    log::Warn("app_homed_elsewhere_killed", {{"app", app_id}, {"why", written.message()}});
    FinishApp(*app, AppEvent::kKilled, v1::FINAL_KILLED, std::string(written.message()));
    return;
  }
  log::Warn("app_end_write_failed",
            {{"app", app_id}, {"error", written}, {"retry_ms", ctx_->options->store_retry_ms}});
  ends_.Retry(app_id);
  if (end_retry_timer_ == 0)
    end_retry_timer_ = ctx_->loop->Schedule(ctx_->options->store_retry_ms, [this] {
      end_retry_timer_ = 0;
      WriteEnds();
    });
}

}  // namespace weft::rm
