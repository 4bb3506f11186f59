// Copyright Weft authors.
#include "rm/container_tracker.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/ids.h"
#include "common/log.h"
#include "rm/am_service.h"
#include "rm/app_manager.h"
#include "rm/history_recorder.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "security/tokens.h"

namespace weft::rm {

using scheduler::ContainerId;

std::optional<ContainerName> ParseContainerName(absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "container_e")) return std::nullopt;
  std::vector<absl::string_view> parts = absl::StrSplit(name, '_');
  ContainerName n;
  if (parts.size() != 5 || !absl::SimpleAtoi(parts[0], &n.epoch) ||
      !absl::SimpleAtoi(parts[1], &n.cluster_ts) || !absl::SimpleAtoi(parts[2], &n.app_seq) ||
      !absl::SimpleAtoi(parts[3], &n.attempt) || !absl::SimpleAtoi(parts[4], &n.seq))
    return std::nullopt;
  if (n.epoch < 0 || n.epoch >= (int64_t{1} << 23) || n.cluster_ts < 0 || n.app_seq < 0 ||
      n.attempt < 1 || n.seq < 1 || n.seq >= (int64_t{1} << 40))
    return std::nullopt;
  return n;
}

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

v1::Container ContainerTracker::Proto(const RmContainer& c, const std::string& node_id,
                                      const RmApp& app, const Resource& resource, int32_t priority,
                                      int64_t allocation_request_id) const {
  const std::string& name = c.name;
  security::ContainerTokenData td;
  td.container_id = name;
  td.version = c.version;
  td.node_id = node_id;
  td.user = app.record.user;
  td.resource = ctx_->registry().Format(resource);
  td.expiry_ms = ctx_->NowMs() + ctx_->options->container_token_lifetime_ms;
  td.rm_epoch = ctx_->epoch;
  td.app_id = app.record.app_id;
  td.view_acl = app.context.view_acl();
  td.allocation_tags = c.tags;
  for (const DeviceShare& d : c.devices) td.devices.push_back(FormatDeviceShare(d));
  v1::Container proto;
  proto.set_container_id(name);
  proto.set_node_id(node_id);
  *proto.mutable_resource() = ctx_->ToProto(resource);
  proto.set_priority(priority);
  proto.set_allocation_request_id(allocation_request_id);
  *proto.mutable_container_token() = ctx_->keys->IssueContainerToken(td);
  for (const std::string& t : c.tags) proto.add_allocation_tags(t);
  proto.set_version(c.version);
  proto.set_gang_id(c.gang);
  for (const DeviceShare& d : c.devices) {
    v1::DeviceAssignment* a = proto.add_devices();
    a->set_type(d.type);
    a->set_index(d.index);
    a->set_milli(d.milli);
  }
  return proto;
}

std::optional<v1::Container> ContainerTracker::Describe(ContainerId id) const {
  auto it = containers_.find(id);
  const scheduler::ContainerState* cs = ctx_->scheduler->container(id);
  if (it == containers_.end() || cs == nullptr) return std::nullopt;
  const RmApp* app = ctx_->apps->Find(it->second.app_id);
  if (app == nullptr) return std::nullopt;
  return Proto(it->second, ctx_->scheduler->node(cs->node)->name, *app, cs->resource,
               cs->priority, 0);
}

int32_t ContainerTracker::Version(ContainerId id) const {
  auto it = containers_.find(id);
  return it == containers_.end() ? 0 : it->second.version;
}

void ContainerTracker::Resized(const scheduler::ContainerResized& r) {
  auto it = containers_.find(r.container);
  const scheduler::ContainerState* cs = ctx_->scheduler->container(r.container);
  if (it == containers_.end() || cs == nullptr) return;
  const RmApp* app = ctx_->apps->Find(it->second.app_id);
  if (app == nullptr) return;
  RmContainer& c = it->second;
  ++c.version;
  const std::string& node_id = ctx_->scheduler->node(cs->node)->name;
  v1::UpdatedContainer updated;
  updated.set_update_type(r.increase ? v1::INCREASE_RESOURCE : v1::DECREASE_RESOURCE);
  *updated.mutable_container() = Proto(c, node_id, *app, r.resource, cs->priority, 0);
  log::Info("container_resized", {{"container", c.name},
                                  {"resource", ctx_->registry().Format(r.resource)},
                                  {"version", absl::StrCat(c.version)},
                                  {"kind", r.increase ? "increase" : "decrease"}});
  if (!r.increase)
    ctx_->nodes->AddContainerUpdate(node_id, c.name, c.version,
                                    updated.container().container_token());
  ctx_->apps->ContainerUpdated(*app, std::move(updated));
}

void ContainerTracker::Allocated(const scheduler::Allocation& a) {
  const RmApp* app = ctx_->apps->FindBySchedulerId(a.app);
  if (app == nullptr) return;
  const RmAttempt& at = app->current();
  const std::string& node_id = ctx_->scheduler->node(a.node)->name;
  RmContainer c{NameOf(app->cluster_ts, app->seq, at.id, a.container), app->record.app_id, at.id};
  c.tags = a.tags;
  c.gang = a.gang;
  c.devices = a.devices;
  v1::Container proto = Proto(c, node_id, *app, a.resource, a.priority, a.allocation_request_id);
  by_name_[c.name] = a.container;
  containers_[a.container] = std::move(c);
  ctx_->apps->ContainerAllocated(*app, a.node, std::move(proto), a.is_am);
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

bool ContainerTracker::IsPrevious(const std::string& name) const {
  std::optional<ContainerName> n = ParseContainerName(name);
  return n.has_value() && n->epoch < ctx_->epoch;
}

void ContainerTracker::Completed(const std::string& name, int32_t exit_status,
                                 const std::string& diagnostics, const std::string& node_id) {
  auto named = by_name_.find(name);
  if (named == by_name_.end()) {
    // Reported again while its AM has not acknowledged it: the NM keeps it for now.
    if (unacknowledged_.contains(name)) return;
    // Of an earlier epoch and never held by this RM: it ended while no RM ran (or before its
    // NM registered again). Its attempt hears of it once.
    Previous* p = IsPrevious(name) ? &previous_[name] : nullptr;
    if (p == nullptr || p->completion_handled) {
      // Told already (or never this RM's): its NM may forget it.
      if (!node_id.empty()) ctx_->nodes->AddRemoval(node_id, name);
      return;
    }
    p->completion_handled = true;
    p->running_handled = true;  // ended: never recovered
    const ContainerName n = *ParseContainerName(name);
    RmContainer c{name, AppOfContainer(name), n.attempt};
    const RmApp* app = ctx_->apps->Find(c.app_id);
    const bool is_am = app != nullptr && !app->attempts.empty() && app->current().id == c.attempt &&
                       app->current().am_container_id == name;
    log::Info("container_completed_during_restart",
              {{"container", name}, {"exit_status", exit_status}, {"am", is_am}});
    TellAttempt(c, is_am, exit_status, diagnostics, node_id);
    return;
  }
  if (IsPrevious(name)) previous_[name] = {true, true};
  const ContainerId id = named->second;
  const scheduler::ContainerState* cs = ctx_->scheduler->container(id);
  Resource resource;
  int64_t allocated_ms = ctx_->NowMs();
  bool is_am = false;
  if (cs != nullptr) {
    resource = cs->resource;
    allocated_ms = cs->allocated_ms;
    is_am = cs->is_am;
    // No NM reported it (it is gone from its node): the RM's own record of it.
    if (node_id.empty())
      ctx_->history->ContainerLost(name, ctx_->scheduler->node(cs->node)->name, resource,
                                   allocated_ms, cs->priority, exit_status, diagnostics);
    // A task that ran to completion tells the scheduler how long it ran (policies that
    // estimate task lengths learn from it).
    absl::Status s = exit_status == 0 && !is_am
                         ? ctx_->scheduler->ContainerCompleted(id, ctx_->NowMs())
                         : ctx_->scheduler->ContainerCompleted(id);
    // The container was checked live just above: this cannot fail.
    log::WarnIfError(s, "scheduler_container_completed", {{"container", name}});
  }
  RmContainer c = Remove(id, resource, allocated_ms);
  TellAttempt(c, is_am, exit_status, diagnostics, node_id);
}

void ContainerTracker::Ended(const scheduler::ContainerKill& kill, int32_t exit_status,
                             const std::string& diagnostics) {
  if (!containers_.contains(kill.container)) return;
  RmContainer c = Remove(kill.container, kill.resource, kill.allocated_ms);
  if (IsPrevious(c.name)) previous_[c.name] = {true, true};
  TellAttempt(c, kill.is_am, exit_status, diagnostics, /*node_id=*/"");
}

void ContainerTracker::Forget(ContainerId id, const Resource& resource, int64_t allocated_ms,
                              const std::string& node_id) {
  if (!containers_.contains(id)) return;
  RmContainer c = Remove(id, resource, allocated_ms);
  if (IsPrevious(c.name)) previous_[c.name] = {true, true};
  ctx_->nodes->AddCleanup(node_id, c.name);
}

bool ContainerTracker::TakeUnknownPrevious(const std::string& name) {
  if (by_name_.contains(name) || !IsPrevious(name)) return false;
  Previous& p = previous_[name];
  if (p.running_handled) return false;
  p.running_handled = true;
  ++refused_;
  return true;
}

absl::Status ContainerTracker::Recover(const std::string& node_id, const std::string& name,
                                       const v1::Resource* resource, int32_t version,
                                       std::vector<std::string> tags,
                                       std::vector<DeviceShare> devices) {
  if (by_name_.contains(name))
    return absl::AlreadyExistsError(absl::StrCat("container ", name, " is held already"));
  absl::Status s =
      RecoverOnce(node_id, name, resource, version, std::move(tags), std::move(devices));
  if (IsPrevious(name)) {
    Previous& p = previous_[name];
    // Dealt with once: a later report of it neither recovers it nor refuses it again.
    if (!p.running_handled && !s.ok()) ++refused_;
    p.running_handled = true;
  }
  if (s.ok()) {
    ++recovered_;
  } else {
    s = absl::Status(s.code(), absl::StrCat("recovering container ", name, " on node ", node_id,
                                            ": ", s.message()));
  }
  return s;
}

absl::Status ContainerTracker::RecoverOnce(const std::string& node_id, const std::string& name,
                                           const v1::Resource* reported, int32_t version,
                                           std::vector<std::string> tags,
                                           std::vector<DeviceShare> devices) {
  std::optional<ContainerName> n = ParseContainerName(name);
  if (!n.has_value()) return absl::InvalidArgumentError("not a container id of this cluster");
  if (n->epoch >= ctx_->epoch)
    return absl::FailedPreconditionError("allocated by this RM, which no longer holds it");
  if (previous_[name].running_handled)
    return absl::AlreadyExistsError("reported before: recovered or refused once already");
  const std::string app_id = AppOfContainer(name);
  const RmApp* app = ctx_->apps->Find(app_id);
  if (app == nullptr) return absl::NotFoundError(absl::StrCat("unknown application ", app_id));
  if (IsFinal(app->state) || app->attempts.empty())
    return absl::FailedPreconditionError(absl::StrCat("application ", app_id, " has ended"));
  const RmAttempt& at = app->current();
  if (at.id != n->attempt || IsFinal(at.state))
    return absl::FailedPreconditionError(
        absl::StrCat("attempt ", n->attempt, " of ", app_id, " is not its live attempt"));
  const bool is_am = name == at.am_container_id;
  if (is_am && at.am_node != node_id)
    return absl::FailedPreconditionError(absl::StrCat("it is the AM container of ", at.attempt_id,
                                                      ", allocated on node ", at.am_node));
  Resource resource;
  if (reported != nullptr) {
    absl::StatusOr<Resource> r = ctx_->FromProto(*reported, "its reported resource");
    if (!r.ok()) return r.status();
    resource = *r;
  } else if (is_am) {
    // The AM container was allocated with the app's AM resource (as submitted).
    absl::StatusOr<Resource> r = ctx_->FromProto(app->context.am_resource(), "AM resource");
    if (!r.ok()) return absl::FailedPreconditionError(r.status().message());
    resource = *r;
  } else {
    ++refused_without_resource_;  // once: it is marked dealt with on return
    return absl::FailedPreconditionError("its NM did not report its resource");
  }
  const scheduler::NodeId node = ctx_->scheduler->FindNode(node_id);
  const ContainerId id = n->Id();
  if (absl::Status s = ctx_->scheduler->RecoverContainer(
          {id, at.sched_app, node, resource, /*priority=*/0, is_am, ctx_->NowMs(), tags, devices});
      !s.ok())
    return s;
  by_name_[name] = id;
  RmContainer& c = containers_[id] = RmContainer{name, app_id, at.id};
  c.version = std::max(0, version);
  c.tags = std::move(tags);
  c.devices = ctx_->scheduler->ContainerDevices(id);  // as reported, or as the core chose
  ctx_->apps->ContainerRecovered(*app, node, Proto(c, node_id, *app, resource, 0, 0), is_am);
  log::Info("container_recovered", {{"container", name},
                                    {"node", node_id},
                                    {"resource", ctx_->registry().Format(resource)},
                                    {"am", is_am}});
  return absl::OkStatus();
}

void ContainerTracker::TellAttempt(const RmContainer& c, bool is_am, int32_t exit_status,
                                   const std::string& diagnostics, const std::string& node_id) {
  const RmApp* app = ctx_->apps->Find(c.app_id);
  if (app == nullptr || app->attempts.empty() || app->current().id != c.attempt ||
      IsFinal(app->state) || is_am) {
    // No AM will read it: its NM may forget it now.
    if (!node_id.empty()) ctx_->nodes->AddRemoval(node_id, c.name);
    if (is_am && app != nullptr && !app->attempts.empty() && app->current().id == c.attempt &&
        !IsFinal(app->state))
      ctx_->apps->AmContainerEnded(*app, c.name, exit_status, diagnostics);
    return;
  }
  RmCompletion done;
  done.status.set_container_id(c.name);
  done.status.set_state(v1::CONTAINER_COMPLETE);
  done.status.set_exit_status(exit_status);
  done.status.set_diagnostics(diagnostics);
  done.node = node_id;
  unacknowledged_.insert(c.name);
  ctx_->apps->ContainerCompleted(*app, std::move(done));
}

void ContainerTracker::Acknowledged(const std::vector<RmCompletion>& completions) {
  for (const RmCompletion& done : completions) {
    unacknowledged_.erase(done.status.container_id());
    if (!done.node.empty()) ctx_->nodes->AddRemoval(done.node, done.status.container_id());
  }
}

}  // namespace weft::rm
