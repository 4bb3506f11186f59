// Copyright Weft authors.
#include "rm/container_tracker.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rm/app_manager.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "security/tokens.h"

namespace weft::rm {

using scheduler::ContainerId;

std::string ContainerTracker::NameOf(int64_t cluster_ts, int32_t app_seq, int32_t attempt,
                                     ContainerId id) const {
  return absl::StrFormat("container_e%d_%d_%04d_%02d_%06d", ctx_->epoch, cluster_ts, app_seq,
                         attempt, id & ((ContainerId{1} << 40) - 1));
}

const RmContainer* ContainerTracker::Find(ContainerId id) const {
  auto it = containers_.find(id);
  return it == containers_.end() ? nullptr : &it->second;
}

absl::StatusOr<ContainerId> ContainerTracker::FindOwned(const std::string& name,
                                                        const std::string& app_id) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end() || containers_.at(it->second).app_id != app_id)
    return absl::InvalidArgumentError(
        absl::StrCat("cannot release container '", name, "': not allocated to this application"));
  return it->second;
}

void ContainerTracker::Allocated(const scheduler::Allocation& a) {
  RmApp* app = ctx_->apps->FindBySchedulerId(a.app);
  if (app == nullptr) return;
  RmAttempt& at = app->current();
  const std::string& node_id = ctx_->scheduler->node(a.node)->name;
  RmContainer c{NameOf(app->cluster_ts, app->seq, at.id, a.container), app->record.app_id, at.id};
  security::ContainerTokenData td;
  td.container_id = c.name;
  td.node_id = node_id;
  td.user = app->record.user;
  td.resource = ctx_->registry().Format(a.resource);
  td.expiry_ms = ctx_->NowMs() + ctx_->options->container_token_lifetime_ms;
  td.rm_epoch = ctx_->epoch;
  td.app_id = app->record.app_id;
  v1::Container proto;
  proto.set_container_id(c.name);
  proto.set_node_id(node_id);
  *proto.mutable_resource() = ctx_->ToProto(a.resource);
  proto.set_priority(a.priority);
  proto.set_allocation_request_id(a.allocation_request_id);
  *proto.mutable_container_token() = ctx_->keys->IssueContainerToken(td);
  by_name_[c.name] = a.container;
  containers_[a.container] = std::move(c);
  app->ran_nodes.insert(node_id);
  if (a.is_am) {
    ctx_->apps->AmContainerAllocated(*app, proto);
  } else {
    at.new_containers.push_back(std::move(proto));
  }
}

RmContainer ContainerTracker::Remove(ContainerId id, const Resource& resource,
                                     int64_t allocated_ms) {
  auto it = containers_.find(id);
  RmContainer c = std::move(it->second);
  containers_.erase(it);
  by_name_.erase(c.name);
  ++completed_;
  ctx_->apps->ChargeUsage(c.app_id, resource * std::max<int64_t>(0, ctx_->NowMs() - allocated_ms));
  return c;
}

void ContainerTracker::Completed(const std::string& name, int32_t exit_status,
                                 const std::string& diagnostics) {
  auto named = by_name_.find(name);
  if (named == by_name_.end()) return;
  const ContainerId id = named->second;
  const scheduler::ContainerState* cs = ctx_->scheduler->container(id);
  Resource resource;
  int64_t allocated_ms = ctx_->NowMs();
  bool is_am = false;
  if (cs != nullptr) {
    resource = cs->resource;
    allocated_ms = cs->allocated_ms;
    is_am = cs->is_am;
    // A task that ran to completion tells the scheduler how long it ran (policies that
    // estimate task lengths learn from it).
    absl::Status s = exit_status == 0 && !is_am
                         ? ctx_->scheduler->ContainerCompleted(id, ctx_->NowMs())
                         : ctx_->scheduler->ContainerCompleted(id);
    (void)s;  // the container was checked live just above: this cannot fail
  }
  RmContainer c = Remove(id, resource, allocated_ms);
  TellAttempt(c, is_am, exit_status, diagnostics);
}

void ContainerTracker::Ended(const scheduler::ContainerKill& kill, int32_t exit_status,
                             const std::string& diagnostics) {
  if (!containers_.contains(kill.container)) return;
  RmContainer c = Remove(kill.container, kill.resource, kill.allocated_ms);
  TellAttempt(c, kill.is_am, exit_status, diagnostics);
}

void ContainerTracker::Forget(ContainerId id, const Resource& resource, int64_t allocated_ms,
                              const std::string& node_id) {
  if (!containers_.contains(id)) return;
  RmContainer c = Remove(id, resource, allocated_ms);
  ctx_->nodes->AddCleanup(node_id, c.name);
}

void ContainerTracker::TellAttempt(const RmContainer& c, bool is_am, int32_t exit_status,
                                   const std::string& diagnostics) {
  RmApp* app = ctx_->apps->Find(c.app_id);
  if (app == nullptr || app->attempts.empty() || app->current().id != c.attempt ||
      IsFinal(app->state))
    return;
  if (is_am) {
    ctx_->apps->AmContainerEnded(*app, c.name, exit_status, diagnostics);
    return;
  }
  v1::ContainerStatus st;
  st.set_container_id(c.name);
  st.set_state(v1::CONTAINER_COMPLETE);
  st.set_exit_status(exit_status);
  st.set_diagnostics(diagnostics);
  app->current().new_completed.push_back(std::move(st));
}

}  // namespace weft::rm
