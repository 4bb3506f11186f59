// Copyright Weft authors. The NodeManager's side of the ResourceTracker protocol (YARN's
// NodeStatusUpdater): registration, heartbeats with container statuses, and what the RM's
// replies carry (master keys, containers and applications to clean up, resync). Runs on the
// NodeManager's loop.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/log.h"
#include "nm/node_manager.h"
#include "nm/node_manager_internal.h"

namespace weft::nm {
namespace {

using internal::kDefaultHeartbeatIntervalMs;
using internal::kRegisterRetryMs;
using internal::kRmCallTimeoutMs;

// After a failover to the next RM of the list (not a hint followed at once), the call is tried
// there after at most this long, ms.
constexpr int64_t kFailoverRetryMs = 250;

// One call to the RM and what it needs to stay alive until its callback has run.
template <typename Request, typename Response>
struct RmCall {
  grpc::ClientContext context;
  Request request;
  Response response;
};

security::MasterKey FromProto(const v1::MasterKey& key) {
  security::MasterKey out;
  out.id = key.key_id();
  out.secret = key.secret();
  out.expires_ms = key.expires_ms();
  return out;
}

void ToProto(const Resource& r, v1::Resource* out) {
  auto& values = *out->mutable_values();
  values["memory-mb"] = r[kMemoryMb];
  values["vcores"] = r[kVcores];
  if (r[kNetworkMbps] != 0) values["network-mbps"] = r[kNetworkMbps];
  if (r[kDiskMbps] != 0) values["disk-mbps"] = r[kDiskMbps];
  if (r[kGpuMilli] != 0) values["gpu-milli"] = r[kGpuMilli];
}

std::string FenceReason(const internal::RmAnswerFence& fence, int64_t now_ms) {
  if (fence.from_lease())
    return absl::StrCat(
        "Container killed: the ResourceManager answers but last renewed its federation lease ",
        now_ms - fence.last_answer_ms(), " ms ago (federation fence ", fence.fence_ms(),
        " ms; it cannot reach the federation store): its sub-cluster may be declared lost and "
        "the application run elsewhere");
  return absl::StrCat(
      "Container killed: no answer from the ResourceManager for ", now_ms - fence.last_answer_ms(),
      " ms (federation fence ", fence.fence_ms(),
      " ms): its sub-cluster may be declared lost and the application run elsewhere");
}

template <typename Containers>
size_t RunningCount(const Containers& containers) {
  return std::count_if(containers.begin(), containers.end(),
                       [](const auto& e) { return e.second.running; });
}

// Before an RM call at `now_ms`: starts the NM's fence clock, and once no answer came for
// longer than the fence, returns why its containers are killed (logged the first time, and
// whenever containers still run); nullopt otherwise or without a fence.
std::optional<std::string> CheckFence(internal::RmAnswerFence* fence, int64_t now_ms,
                                      const std::string& node, const std::string& rm,
                                      size_t running) {
  if (fence == nullptr) return std::nullopt;
  fence->Start(now_ms);
  if (!fence->Expired(now_ms)) return std::nullopt;
  if (fence->Fire() || running > 0)
    log::Warn("federation_fence_fired", {{"node", node},
                                         {"rm", rm},
                                         {"silent_ms", now_ms - fence->last_answer_ms()},
                                         {"fence_ms", fence->fence_ms()},
                                         {"containers_killed", static_cast<int64_t>(running)}});
  return FenceReason(*fence, now_ms);
}

// A federation sub-cluster RM's lease, as its reply (tracker.proto) says; nullopt without.
template <typename Reply>
std::optional<internal::RmAnswerFence::Lease> LeaseOf(const Reply& reply) {
  if (!reply.has_federation_lease_age_ms()) return std::nullopt;
  return internal::RmAnswerFence::Lease{reply.federation_lease_age_ms(),
                                        reply.federation_lease_renewal_ms()};
}

// After an RM call sent at `sent_ms` answered: the fence restarts, from the RM's federation
// lease when the reply names one it can run from (RmAnswerFence::Answered); logs when that
// lifts a fence that fired, and once when the RM renews its lease less often than the fence.
void FenceAnswered(internal::RmAnswerFence* fence, int64_t now_ms, const std::string& node,
                   const std::string& rm, int64_t sent_ms,
                   std::optional<internal::RmAnswerFence::Lease> lease) {
  if (fence == nullptr) return;
  if (lease.has_value() && lease->renewal_ms > 0 && !fence->Usable(*lease) &&
      fence->FirstUnusableLease())
    log::Error("federation_fence_shorter_than_lease_renewal",
               {{"node", node},
                {"rm", rm},
                {"fence_ms", fence->fence_ms()},
                {"rm_lease_renewal_ms", lease->renewal_ms},
                {"note", "weft nm --federation-fence-ms must be longer than the RM's "
                         "--federation-heartbeat-ms: this NM fences only on unanswered calls, "
                         "not on an RM that answers but cannot reach the federation store"}});
  const int64_t silent_ms = fence->last_answer_ms() < 0 ? 0 : now_ms - fence->last_answer_ms();
  if (fence->Answered(now_ms, sent_ms, lease))
    log::Info("federation_fence_lifted",
              {{"node", node},
               {"rm", rm},
               {"silent_ms", silent_ms},
               {"note", "the killed containers are reported in this NM's next heartbeat"}});
}

// The deadline of an RM call made at `now_ms`: kRmCallTimeoutMs, shortened so that a call an
// RM never answers (a stopped process) returns when the fence passes.
int64_t RmCallDeadlineMs(internal::RmAnswerFence* fence, int64_t now_ms) {
  return fence == nullptr ? kRmCallTimeoutMs : fence->CallDeadlineMs(now_ms, kRmCallTimeoutMs);
}

}  // namespace

// ---- RM protocol.

bool NodeManager::BeginRmCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&rm_mu_);
  if (rm_closed_) return false;
  rm_calls_.insert(context);
  return true;
}

bool NodeManager::RmCallsClosed() {
  absl::MutexLock lock(&rm_mu_);
  return rm_closed_;
}

void NodeManager::EndRmCall(grpc::ClientContext* context) {
  absl::MutexLock lock(&rm_mu_);
  rm_calls_.erase(context);
}

void NodeManager::ScheduleRm(int64_t delay_ms, bool register_again) {
  if (rm_timer_.has_value()) loop_->Cancel(*rm_timer_);
  if (register_again) registered_ = false;
  rm_timer_due_ms_ = loop_->NowMs() + delay_ms;
  rm_timer_ = loop_->Schedule(delay_ms, [this, register_again] {
    rm_timer_.reset();
    if (rm_call_in_flight_ || shutting_down_ || rm_shutdown_) return;
    if (register_again) {
      SendRegister();
    } else {
      SendHeartbeat();
    }
  });
}

void NodeManager::RequestOutOfBandHeartbeat() {
  if (options_.out_of_band_heartbeat_gap_ms < 0 || !registered_ || shutting_down_ || rm_shutdown_)
    return;
  if (rm_call_in_flight_) return;  // OnHeartbeatReply asks again
  const int64_t now = loop_->NowMs();
  const int64_t due =
      std::max(now, last_heartbeat_sent_ms_ + options_.out_of_band_heartbeat_gap_ms);
  if (rm_timer_.has_value() && rm_timer_due_ms_ <= due) return;  // one is due sooner
  ScheduleRm(due - now, /*register_again=*/false);
}

void NodeManager::ConnectTracker() {
  // Fast reconnection: an NM that found the RM down notices within a second that it is back.
  // A channel of its own (no subchannel shared with the NM's earlier channels): one made after
  // a failover connects at once instead of waiting out an old subchannel's backoff.
  grpc::ChannelArguments args = FastReconnectChannelArgs();
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  tracker_ = v1::TrackerService::NewStub(
      grpc::CreateCustomChannel(rm_failover_->current(), tracker_credentials_, args));
}

int64_t NodeManager::FailOver(absl::string_view event, const grpc::Status& status,
                              const std::string& active_hint, int64_t usual_ms) {
  const std::string failed = rm_failover_->current();
  const RmFailoverAction action = rm_failover_->OnFailure(status, active_hint);
  // Straight to the active a standby named, unless the last failure did that already (two RMs
  // each naming the other, or naming one that is down, are then tried every kFailoverRetryMs).
  int64_t retry_ms = usual_ms;
  if (action == RmFailoverAction::kActiveRm && last_failover_ != RmFailoverAction::kActiveRm) {
    retry_ms = 0;
  } else if (action != RmFailoverAction::kNone) {
    retry_ms = std::min(usual_ms, kFailoverRetryMs);
  }
  last_failover_ = action;
  log::Warn(event, {{"rm", failed}, {"error", status.error_message()}, {"retry_ms", retry_ms}});
  if (action == RmFailoverAction::kNone) return retry_ms;
  ConnectTracker();
  log::Info("rm_failover",
            {{"node", node_id_},
             {"from", failed},
             {"to", rm_failover_->current()},
             {"why", action == RmFailoverAction::kActiveRm ? "the standby named the active"
                                                           : "trying the next ResourceManager"}});
  return retry_ms;
}

void NodeManager::UpdateKeys(bool has_current, const v1::MasterKey& current, bool has_next,
                             const v1::MasterKey& next) {
  if (!has_current && !has_next) return;
  const v1::MasterKey& current_proto = has_current ? current : next;
  const v1::MasterKey& next_proto = has_next ? next : current;
  security::MasterKey cur = FromProto(current_proto);
  security::MasterKey nxt = FromProto(next_proto);
  verifier_.UpdateKeys(cur, nxt);
  keys_heard_ = true;
  last_key_id_ = cur.id;
  if (cur == stored_keys_.first && nxt == stored_keys_.second) return;
  // Kept for a restart; failing to keep them costs only the wait for the next registration.
  if (absl::Status s = state_->SetContainerKeys(current_proto.SerializeAsString(),
                                                next_proto.SerializeAsString());
      s.ok()) {
    stored_keys_ = {cur, nxt};
  } else {
    log::Warn("container_keys_not_stored", {{"node", node_id_}, {"error", s}});
  }
}

void NodeManager::RestoreKeys() {
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> kept =
      state_->GetContainerKeys();
  if (!kept.ok()) {
    log::Warn("container_keys_not_restored", {{"node", node_id_}, {"error", kept.status()}});
    return;
  }
  if (!kept->has_value()) return;
  v1::MasterKey current, next;
  if (!current.ParseFromString((*kept)->first) || !next.ParseFromString((*kept)->second)) {
    log::Warn("container_keys_not_restored",
              {{"node", node_id_}, {"error", "a kept key does not parse"}});
    return;
  }
  stored_keys_ = {FromProto(current), FromProto(next)};
  verifier_.UpdateKeys(stored_keys_.first, stored_keys_.second);
  last_key_id_ = current.key_id();
  log::Info("container_keys_restored",
            {{"node", node_id_}, {"current", current.key_id()}, {"next", next.key_id()}});
}

void NodeManager::SendRegister() {
  // The federation fence: no answer from the RM for too long kills every container here.
  if (std::optional<std::string> why =
          CheckFence(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                     RunningCount(containers_)))
    StopAllContainers(v1::CONTAINER_EXIT_ABORTED, *why);
  using Call = RmCall<v1::RegisterNodeManagerRequest, v1::RegisterNodeManagerResponse>;
  auto call = std::make_shared<Call>();
  v1::RegisterNodeManagerRequest& request = call->request;
  request.set_node_id(node_id_);
  request.set_rack(options_.rack);
  // gpu-milli as the GPUs' health is now (1000 per healthy GPU), the rest as at Start.
  Resource capability = capability_;
  if (!options_.device_plugins.empty())
    capability[kGpuMilli] = device_ledger_.HealthyCount("gpu") * kWholeDeviceMilli;
  ToProto(capability, request.mutable_capability());
  // Every device, healthy or not (the RM schedules the healthy GPUs): no change is pending.
  for (const v1::Device& device : device_ledger_.devices()) *request.add_devices() = device;
  device_changes_.clear();
  // What runs here, with what each was granted (its token's resource), and what ended
  // unacknowledged: the RM keeps, recovers or stops each (after its restart, or this NM's) and
  // learns real exit statuses rather than only absences.
  for (const auto& [id, record] : containers_) {
    if (!record.running) continue;
    *request.add_running_containers() = StatusOf(id, record);
    absl::StatusOr<v1::Resource> granted =
        internal::ResourceFromTokenResource(record.stored.resource);
    if (granted.ok()) (*request.mutable_container_resources())[id] = *std::move(granted);
    if (record.stored.version > 0)
      (*request.mutable_container_versions())[id] = record.stored.version;
    if (!record.stored.allocation_tags.empty()) {
      v1::ContainerTags& tags = (*request.mutable_container_tags())[id];
      for (const std::string& t : record.stored.allocation_tags) tags.add_tags(t);
    }
  }
  for (const auto& [id, status] : unacked_completed_) *request.add_completed_containers() = status;
  for (const auto& [id, status] : unreleased_completed_)
    *request.add_completed_containers() = status;
  for (const std::string& feature : missing_features_) request.add_missing_features(feature);
  request.set_network_isolation(network_isolation_);
  request.set_http_address(options_.http_address);
  // The node's label and attributes (YARN's distributed providers), in every registration.
  request.set_node_label(options_.node_label);
  for (const auto& [k, v] : options_.node_attributes) (*request.mutable_node_attributes())[k] = v;
  call->context.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(RmCallDeadlineMs(federation_fence(), loop_->NowMs())));
  if (!BeginRmCall(&call->context)) return;
  rm_call_in_flight_ = true;
  rm_call_sent_ms_ = loop_->NowMs();
  tracker_->async()->RegisterNodeManager(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        std::string hint = status.ok() ? "" : ActiveRmHint(call->context);
        loop_->Post([this, call, status, hint = std::move(hint)] {
          OnRegisterReply(status, hint, call->response);
        });
        EndRmCall(&call->context);
      });
}

void NodeManager::FenceOnRmAnswer(std::optional<internal::RmAnswerFence::Lease> lease) {
  FenceAnswered(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                rm_call_sent_ms_, lease);
  // An RM that answers with a lease too old (it cannot reach the federation store).
  if (std::optional<std::string> why =
          CheckFence(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                     RunningCount(containers_)))
    StopAllContainers(v1::CONTAINER_EXIT_ABORTED, *why);
}

void NodeManager::OnRegisterReply(const grpc::Status& status, const std::string& active_hint,
                                  const v1::RegisterNodeManagerResponse& reply) {
  rm_call_in_flight_ = false;
  if (shutting_down_) return;
  if (!status.ok()) {
    if (RmCallsClosed()) return;  // cancelled by Shutdown()
    if (std::optional<std::string> why =
            CheckFence(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                       RunningCount(containers_)))
      StopAllContainers(v1::CONTAINER_EXIT_ABORTED, *why);
    ScheduleRm(FailOver("register_failed", status, active_hint, kRegisterRetryMs),
               /*register_again=*/true);
    return;
  }
  FenceOnRmAnswer(LeaseOf(reply));
  last_failover_ = RmFailoverAction::kNone;
  if (reply.action() == v1::NODE_ACTION_SHUTDOWN) {
    log::Error("register_refused", {{"rm", rm_failover_->current()},
                                    {"action", "shutdown"},
                                    {"diagnostics", reply.diagnostics()}});
    rm_shutdown_ = true;
    StopAllContainers(v1::CONTAINER_EXIT_KILLED_BY_RM,
                      "Container killed: the ResourceManager shut this node down");
    if (options_.on_rm_shutdown) options_.on_rm_shutdown(reply.diagnostics());
    return;
  }
  if (reply.action() == v1::NODE_ACTION_RESYNC) {
    log::Info("register_resync",
              {{"rm", rm_failover_->current()}, {"diagnostics", reply.diagnostics()}});
    ScheduleRm(kRegisterRetryMs, /*register_again=*/true);
    return;
  }
  UpdateKeys(reply.has_container_key(), reply.container_key(), reply.has_next_container_key(),
             reply.next_container_key());
  rm_epoch_ = reply.rm_epoch();
  log::Info("registered",
            {{"node", node_id_}, {"rm", rm_failover_->current()}, {"rm_epoch", rm_epoch_}});
  last_response_id_ = 0;
  heartbeat_interval_ms_ = reply.heartbeat_interval_ms() > 0 ? reply.heartbeat_interval_ms()
                                                             : kDefaultHeartbeatIntervalMs;
  registered_ = true;
  ScheduleRm(0, /*register_again=*/false);
}

void NodeManager::SendHeartbeat() {
  // The federation fence: no answer from the RM for too long kills every container here.
  if (std::optional<std::string> why =
          CheckFence(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                     RunningCount(containers_)))
    StopAllContainers(v1::CONTAINER_EXIT_ABORTED, *why);
  using Call = RmCall<v1::NodeHeartbeatRequest, v1::NodeHeartbeatResponse>;
  auto call = std::make_shared<Call>();
  v1::NodeHeartbeatRequest& request = call->request;
  request.set_node_id(node_id_);
  request.set_response_id(last_response_id_);
  v1::ResourceUsage* node_usage = request.mutable_node_usage();
  RefreshNetworkStats();
  for (const auto& [id, record] : containers_) {
    if (!record.running) continue;
    v1::ContainerStatus* status = request.add_container_statuses();
    *status = StatusOf(id, record);
    // Which resource updates it has applied (the RM re-sends those it has not).
    if (record.stored.version > 0)
      (*request.mutable_container_versions())[id] = record.stored.version;
    node_usage->set_memory_rss_bytes(node_usage->memory_rss_bytes() +
                                     status->usage().memory_rss_bytes());
    node_usage->set_cpu_time_ms(node_usage->cpu_time_ms() + status->usage().cpu_time_ms());
    node_usage->set_network_tx_bytes(node_usage->network_tx_bytes() +
                                     status->usage().network_tx_bytes());
    node_usage->set_network_tx_rate_mbps(node_usage->network_tx_rate_mbps() +
                                         status->usage().network_tx_rate_mbps());
  }
  for (const auto& [id, status] : unacked_completed_) *request.add_container_statuses() = status;
  // Devices whose health changed (a failed heartbeat puts them back, OnHeartbeatReply).
  MaybeRecheckDevices();
  for (const auto& [key, device] : device_changes_) *request.add_devices() = device;
  device_changes_.clear();
  request.mutable_health()->set_healthy(true);
  request.set_last_known_container_key_id(last_key_id_);
  call->context.set_deadline(
      std::chrono::system_clock::now() +
      std::chrono::milliseconds(RmCallDeadlineMs(federation_fence(), loop_->NowMs())));
  if (!BeginRmCall(&call->context)) return;
  rm_call_in_flight_ = true;
  last_heartbeat_sent_ms_ = loop_->NowMs();
  rm_call_sent_ms_ = last_heartbeat_sent_ms_;
  tracker_->async()->NodeHeartbeat(
      &call->context, &call->request, &call->response, [this, call](grpc::Status status) {
        std::string hint = status.ok() ? "" : ActiveRmHint(call->context);
        loop_->Post([this, call, status, hint = std::move(hint)] {
          OnHeartbeatReply(status, hint, call->request, call->response);
        });
        EndRmCall(&call->context);
      });
}

void NodeManager::OnHeartbeatReply(const grpc::Status& status, const std::string& active_hint,
                                   const v1::NodeHeartbeatRequest& request,
                                   const v1::NodeHeartbeatResponse& reply) {
  rm_call_in_flight_ = false;
  if (shutting_down_ || rm_shutdown_) return;
  CountHeartbeat(status.ok());
  if (!status.ok()) {
    // Nothing is lost: unacknowledged completed statuses go out again with the next one. An
    // RM the NM fails over to answers RESYNC (it does not know this node) and the NM registers.
    if (RmCallsClosed()) return;  // cancelled by Shutdown()
    for (const v1::Device& device : request.devices())  // unless a newer change is queued
      device_changes_.try_emplace({device.type(), device.index()}, device);
    if (std::optional<std::string> why =
            CheckFence(federation_fence(), loop_->NowMs(), node_id_, rm_failover_->current(),
                       RunningCount(containers_)))
      StopAllContainers(v1::CONTAINER_EXIT_ABORTED, *why);
    ScheduleRm(FailOver("heartbeat_failed", status, active_hint, heartbeat_interval_ms_),
               /*register_again=*/false);
    return;
  }
  FenceOnRmAnswer(LeaseOf(reply));
  last_failover_ = RmFailoverAction::kNone;
  if (reply.response_id() == request.response_id() + 1) {
    for (const v1::ContainerStatus& sent : request.container_statuses()) {
      if (sent.state() != v1::CONTAINER_COMPLETE) continue;
      // The RM has it: no longer sent in heartbeats, but kept, and reported when this NM
      // registers again, until the RM says its AM has it (YARN-1372).
      auto it = unacked_completed_.find(sent.container_id());
      if (it == unacked_completed_.end()) continue;
      unreleased_completed_[it->first] = it->second;
      unacked_completed_.erase(it);
    }
  }
  for (const std::string& id : reply.containers_to_be_removed_from_nm()) {
    unacked_completed_.erase(id);
    unreleased_completed_.erase(id);
    // A restarted NM need not report it again.
    if (auto it = containers_.find(id); it != containers_.end() && !it->second.running) {
      it->second.stored.acknowledged = true;
      Persist(it->first, it->second);
    }
  }
  last_response_id_ = reply.response_id();
  UpdateKeys(reply.has_container_key(), reply.container_key(), reply.has_next_container_key(),
             reply.next_container_key());
  if (reply.next_heartbeat_interval_ms() > 0) {
    heartbeat_interval_ms_ = reply.next_heartbeat_interval_ms();
  }
  switch (reply.action()) {
    case v1::NODE_ACTION_RESYNC:
      log::Info("heartbeat_resync", {{"node", node_id_},
                                     {"rm", rm_failover_->current()},
                                     {"diagnostics", reply.diagnostics()}});
      ScheduleRm(0, /*register_again=*/true);
      return;
    case v1::NODE_ACTION_SHUTDOWN:
      log::Error("shutdown_by_rm", {{"node", node_id_}, {"diagnostics", reply.diagnostics()}});
      rm_shutdown_ = true;
      StopAllContainers(v1::CONTAINER_EXIT_KILLED_BY_RM,
                        "Container killed: the ResourceManager shut this node down");
      if (options_.on_rm_shutdown) options_.on_rm_shutdown(reply.diagnostics());
      return;
    default:
      break;
  }
  for (const std::string& id : reply.containers_to_cleanup()) {
    StopContainer(id, v1::CONTAINER_EXIT_KILLED_BY_RM, "Container killed by the ResourceManager");
  }
  for (const std::string& app_id : reply.applications_to_cleanup()) CleanupApplication(app_id);
  // The RM's own resource updates (decreases): the path of ContainerService.UpdateContainers.
  for (const v1::Token& token : reply.containers_to_update()) {
    std::string container_id;
    if (absl::Status s = UpdateOne(token, "heartbeat", &container_id); !s.ok())
      log::Warn(
          "container_update_refused",
          {{"node", node_id_}, {"container", container_id}, {"source", "heartbeat"}, {"error", s}});
  }
  ScheduleRm(heartbeat_interval_ms_, /*register_again=*/false);
  // Containers that ended while this heartbeat was in flight (those in it are acknowledged).
  if (!unacked_completed_.empty()) RequestOutOfBandHeartbeat();
}

}  // namespace weft::nm
