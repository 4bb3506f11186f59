// Copyright Weft authors.
#include "rm/history_recorder.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/app_manager.h"
#include "rm/container_tracker.h"
#include "rm/node_tracker.h"

namespace weft::rm {

namespace {

// How many recently recorded container names are kept to recognise an NM's repeated report.
constexpr size_t kRecentContainers = 100'000;
// How often the loop looks at the outbox's progress while records are pending, ms: what an
// NM's container removal and an app's eviction wait for at most beyond the outbox's fsync.
constexpr int64_t kDurabilityPollMs = 20;

OutboxEntry Entry(OutboxEntry::Kind kind, const std::string& id,
                  const google::protobuf::Message& record) {
  OutboxEntry e;
  e.kind = kind;
  e.id = id;
  record.SerializeToString(&e.payload);
  return e;
}

// "host" of "host:port".
std::string HostOf(const std::string& node_id) {
  return std::string(node_id.substr(0, node_id.rfind(':')));
}

}  // namespace

std::string AttemptOfContainer(const std::string& name) {
  std::optional<ContainerName> n = ParseContainerName(name);
  if (!n.has_value()) return "";
  return absl::StrFormat("appattempt_%d_%04d_%06d", n->cluster_ts, n->app_seq, n->attempt);
}

absl::Status HistoryRecorder::Enable(HistoryPublisherOptions options,
                                     HistoryPublisher::StoreOpener open) {
  absl::StatusOr<std::unique_ptr<HistoryPublisher>> p =
      HistoryPublisher::Start(std::move(options), std::move(open));
  if (!p.ok()) return p.status();
  publisher_ = *std::move(p);
  return absl::OkStatus();
}

void HistoryRecorder::WatchDurability() {
  if (poll_timer_ != 0) return;
  poll_timer_ = ctx_->loop->Schedule(kDurabilityPollMs, [this] {
    poll_timer_ = 0;
    Durable(publisher_->stats().durable_seq);
    if (!pending_containers_.empty() || !pending_apps_.empty()) WatchDurability();
  });
}

HistoryRecorder::~HistoryRecorder() {
  if (poll_timer_ != 0) ctx_->loop->Cancel(poll_timer_);
  publisher_.reset();  // joins its thread
}

HistoryPublisherStats HistoryRecorder::stats() const {
  return publisher_ != nullptr ? publisher_->stats() : HistoryPublisherStats{};
}

void HistoryRecorder::PublishContainer(v1::ContainerHistoryRecord record, bool reported) {
  const std::string name = record.container_id();
  std::vector<OutboxEntry> entries;
  entries.push_back(Entry(OutboxEntry::Kind::kContainer, name, record));
  const int64_t seq = publisher_->Publish(std::move(entries));
  pending_containers_[name] = Pending{seq, reported};
  WatchDurability();
}

void HistoryRecorder::ContainerReported(const v1::ContainerStatus& status,
                                        const std::string& node_id) {
  if (publisher_ == nullptr) return;
  const std::string& name = status.container_id();
  if (recent_.contains(name)) return;
  if (auto it = pending_containers_.find(name);
      it != pending_containers_.end() && it->second.reported)
    return;
  if (!ParseContainerName(name).has_value()) return;  // not one of this cluster's
  v1::ContainerHistoryRecord r;
  r.set_container_id(name);
  r.set_application_id(AppOfContainer(name));
  r.set_attempt_id(AttemptOfContainer(name));
  r.set_node_id(node_id);
  if (const RmNode* node = ctx_->nodes->Find(node_id))
    r.set_node_http_address(node->registration.http_address());
  if (const RmApp* app = ctx_->apps->Find(r.application_id())) {
    r.set_user(app->record.user);
    r.set_priority(app->record.priority);
  }
  Resource granted;
  bool have_granted = false;
  if (status.has_allocated()) {
    absl::StatusOr<Resource> res = ctx_->FromProto(status.allocated(), "granted resource");
    if (res.ok()) {
      granted = *res;
      have_granted = true;
    }
  }
  int64_t start_ms = status.start_time_ms();
  int64_t finish_ms = status.finish_time_ms();
  // An NM that did not say (an older one): what the scheduler knows, while it holds it.
  if (std::optional<ContainerName> n = ParseContainerName(name)) {
    if (const scheduler::ContainerState* cs = ctx_->scheduler->container(n->Id())) {
      if (!have_granted) {
        granted = cs->resource;
        have_granted = true;
      }
      if (start_ms == 0) start_ms = cs->allocated_ms;
      r.set_priority(cs->priority);
    }
  }
  if (finish_ms == 0) finish_ms = ctx_->NowMs();
  if (have_granted) {
    const v1::Resource proto = ctx_->ToProto(granted);
    for (const auto& [type, amount] : proto.values()) (*r.mutable_allocated())[type] = amount;
  }
  r.set_start_time_ms(start_ms);
  r.set_finish_time_ms(finish_ms);
  r.set_exit_status(status.exit_status());
  r.set_state(v1::CONTAINER_COMPLETE);
  r.set_diagnostics(status.diagnostics());
  r.set_memory_mb_seconds(status.usage().memory_mb_seconds());
  r.set_max_rss_bytes(status.usage().peak_memory_bytes());
  r.set_cpu_time_ms(status.usage().cpu_time_ms());
  r.set_vcore_seconds(status.usage().cpu_time_ms() / 1000);
  r.set_network_tx_bytes(status.usage().network_tx_bytes());
  PublishContainer(std::move(r), /*reported=*/true);
}

void HistoryRecorder::ContainerLost(const std::string& name, const std::string& node_id,
                                    const Resource& resource, int64_t allocated_ms,
                                    int32_t priority, int32_t exit_status,
                                    const std::string& diagnostics) {
  if (publisher_ == nullptr) return;
  if (pending_containers_.contains(name) || recent_.contains(name)) return;
  v1::ContainerHistoryRecord r;
  r.set_container_id(name);
  r.set_application_id(AppOfContainer(name));
  r.set_attempt_id(AttemptOfContainer(name));
  r.set_node_id(node_id);
  if (const RmApp* app = ctx_->apps->Find(r.application_id())) r.set_user(app->record.user);
  const v1::Resource proto = ctx_->ToProto(resource);
  for (const auto& [type, amount] : proto.values()) (*r.mutable_allocated())[type] = amount;
  r.set_priority(priority);
  r.set_start_time_ms(allocated_ms);
  r.set_finish_time_ms(ctx_->NowMs());
  r.set_exit_status(exit_status);
  r.set_state(v1::CONTAINER_COMPLETE);
  r.set_diagnostics(diagnostics);
  PublishContainer(std::move(r), /*reported=*/false);
}

bool HistoryRecorder::MayRemove(const std::string& node_id, const std::string& name) {
  if (publisher_ == nullptr) return true;
  auto it = pending_containers_.find(name);
  if (it == pending_containers_.end()) return true;
  // Once: a status the NM reports again while it waits is not held twice.
  if (held_names_.insert(name).second)
    held_removals_.emplace(it->second.seq, std::make_pair(node_id, name));
  return false;
}

v1::ApplicationHistoryRecord HistoryRecorder::AppRecord(const RmApp& app) const {
  v1::ApplicationHistoryRecord r;
  r.set_application_id(app.record.app_id);
  r.set_user(app.record.user);
  r.set_queue(app.record.queue);
  r.set_name(app.record.name);
  r.set_application_type(app.context.application_type());
  r.set_submit_time_ms(app.record.submit_ms);
  r.set_start_time_ms(app.record.start_ms);
  r.set_finish_time_ms(app.record.finish_ms);
  r.set_final_state(app.state);
  r.set_final_status(app.final_status);
  r.set_diagnostics(app.record.diagnostics);
  r.set_view_acl(app.context.view_acl());
  r.set_unmanaged(app.context.unmanaged_am());
  r.set_priority(app.record.priority);
  if (!app.attempts.empty()) {
    const RmAttempt& at = app.current();
    r.set_current_attempt_id(at.attempt_id);
    if (!at.am_node.empty()) r.set_host(HostOf(at.am_node));
  }
  return r;
}

void HistoryRecorder::AppFinished(const RmApp& app) {
  if (publisher_ == nullptr) return;
  std::vector<OutboxEntry> entries;
  for (const RmAttempt& at : app.attempts) {
    v1::AttemptHistoryRecord a;
    a.set_attempt_id(at.attempt_id);
    a.set_application_id(app.record.app_id);
    if (!at.am_node.empty()) a.set_host(HostOf(at.am_node));
    a.set_am_container_id(at.am_container_id);
    a.set_start_time_ms(at.start_ms);
    a.set_finish_time_ms(at.finish_ms != 0 ? at.finish_ms : app.record.finish_ms);
    a.set_state(at.state);
    a.set_diagnostics(at.diagnostics);
    entries.push_back(Entry(OutboxEntry::Kind::kAttempt, at.attempt_id, a));
  }
  // The app last: once it is in the store, its attempts are.
  entries.push_back(Entry(OutboxEntry::Kind::kApplication, app.record.app_id, AppRecord(app)));
  pending_apps_[app.record.app_id] = publisher_->Publish(std::move(entries));
  durable_apps_.erase(app.record.app_id);
  WatchDurability();
}

bool HistoryRecorder::AppDurable(const std::string& app_id) const {
  return publisher_ == nullptr || durable_apps_.contains(app_id);
}

void HistoryRecorder::AppForgotten(const std::string& app_id) {
  if (publisher_ == nullptr) return;
  durable_apps_.erase(app_id);
  pending_apps_.erase(app_id);
  publisher_->ForgetApplications({app_id});
}

void HistoryRecorder::RecoverFinished(const std::vector<const RmApp*>& finished) {
  if (publisher_ == nullptr) return;
  absl::flat_hash_set<std::string> delivered(publisher_->delivered_at_start().begin(),
                                             publisher_->delivered_at_start().end());
  int64_t republished = 0;
  for (const RmApp* app : finished) {
    if (delivered.contains(app->record.app_id)) {
      durable_apps_.insert(app->record.app_id);
      continue;
    }
    AppFinished(*app);
    ++republished;
  }
  if (republished > 0)
    log::Info("history_apps_republished", {{"apps", republished}});
}

void HistoryRecorder::Durable(int64_t seq) {
  if (seq <= durable_) return;
  durable_ = seq;
  for (auto it = pending_containers_.begin(); it != pending_containers_.end();) {
    if (it->second.seq <= seq) {
      if (it->second.reported) {
        if (recent_order_.size() >= kRecentContainers) {
          recent_.erase(recent_order_.front());
          recent_order_.pop_front();
        }
        recent_.insert(it->first);
        recent_order_.push_back(it->first);
      }
      pending_containers_.erase(it++);
    } else {
      ++it;
    }
  }
  while (!held_removals_.empty() && held_removals_.begin()->first <= seq) {
    auto [node, name] = std::move(held_removals_.begin()->second);
    held_removals_.erase(held_removals_.begin());
    held_names_.erase(name);
    ctx_->nodes->AddRemoval(node, name);
  }
  bool any_app = false;
  for (auto it = pending_apps_.begin(); it != pending_apps_.end();) {
    if (it->second <= seq) {
      durable_apps_.insert(it->first);
      pending_apps_.erase(it++);
      any_app = true;
    } else {
      ++it;
    }
  }
  if (any_app) ctx_->apps->EvictFinished();
}

}  // namespace weft::rm
