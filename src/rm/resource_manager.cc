// Copyright Weft authors.
#include "rm/resource_manager.h"

#include <algorithm>
#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "history/open_history_store.h"
#include "rm/am_service.h"
#include "rm/app_acls.h"
#include "rm/app_manager.h"
#include "rm/cluster_history.h"
#include "rm/container_tracker.h"
#include "rm/history_recorder.h"
#include "rm/node_tracker.h"
#include "rm/rm_keys.h"
#include "rm/rm_recovery.h"

namespace weft::rm {
namespace {

// Whether `queue` names a queue of the tree under `q`: by a queue's name or its path
// ("root.a.b" or "a.b"), as apps name them.
bool QueueExists(const scheduler::QueueConfig& q, absl::string_view queue,
                 const std::string& parent_path = "") {
  const std::string path = parent_path.empty() ? q.name : absl::StrCat(parent_path, ".", q.name);
  if (q.name == queue || path == queue || absl::StrCat("root.", queue) == path) return true;
  for (const scheduler::QueueConfig& child : q.children)
    if (QueueExists(child, queue, path)) return true;
  return false;
}

}  // namespace

ResourceManager::ResourceManager(RmOptions options, EventLoop* loop, store::StateStore* store,
                                 AmLauncher* launcher, security::SecretSource* secrets)
    : options_(std::move(options)) {
  ctx_.options = &options_;
  ctx_.loop = loop;
  ctx_.store = store;
  ctx_.launcher = launcher;
  ctx_.request_pass = [this] { SchedulePass(); };
  ctx_.request_prompt_pass = [this] { SchedulePass(/*prompt=*/true); };
  keys_ = std::make_unique<RmKeys>(&ctx_, secrets);
  containers_ = std::make_unique<ContainerTracker>(&ctx_);
  nodes_ = std::make_unique<NodeTracker>(&ctx_);
  apps_ = std::make_unique<AppManager>(&ctx_);
  am_service_ = std::make_unique<AmService>(&ctx_);
  app_history_ = std::make_unique<HistoryRecorder>(&ctx_);
  ctx_.history = app_history_.get();
  ctx_.keys = keys_.get();
  ctx_.containers = containers_.get();
  ctx_.nodes = nodes_.get();
  ctx_.apps = apps_.get();
  ctx_.am_service = am_service_.get();
}

ResourceManager::~ResourceManager() {
  shutting_down_ = true;
  app_history_.reset();  // its publisher's thread first: what it queued goes to the outbox
  history_sampler_.reset();
  ctx_.loop->Cancel(pass_timer_);
}

absl::StatusOr<std::unique_ptr<ResourceManager>> ResourceManager::Create(
    RmOptions options, EventLoop* loop, store::StateStore* store, AmLauncher* launcher,
    security::SecretSource* secrets) {
  if (options.cluster_timestamp_ms == 0) options.cluster_timestamp_ms = loop->NowMs();
  if (absl::Status s = ValidateHistoryOptions(
          {options.history_sample_ms, options.history_retention_s});
      !s.ok())
    return s;
  if (absl::Status s =
          ValidateHeartbeatScaling(options.heartbeat_scaling, options.heartbeat_interval_ms);
      !s.ok())
    return s;
  std::unique_ptr<ResourceManager> rm(
      new ResourceManager(std::move(options), loop, store, launcher, secrets));
  auto epoch = store->BumpEpoch();
  if (!epoch.ok()) return epoch.status();
  if (rm->options_.federation_epoch) {
    epoch = rm->options_.federation_epoch(*epoch);
    if (!epoch.ok())
      return absl::Status(epoch.status().code(),
                          absl::StrCat("claiming the container epoch in the federation store: ",
                                       epoch.status().message()));
    if (*epoch < 1 || *epoch >= (int64_t{1} << 23))
      return absl::InternalError(absl::StrCat("container epoch ", *epoch, " out of range"));
  }
  rm->ctx_.epoch = *epoch;
  rm->ctx_.started_ms = loop->NowMs();
  auto sched = scheduler::CreateScheduler(
      rm->options_.scheduler,
      scheduler::SchedulerOptions{rm->options_.registry,
                                  (static_cast<scheduler::ContainerId>(*epoch) << 40) + 1});
  if (!sched.ok()) return sched.status();
  rm->scheduler_ = std::move(*sched);
  rm->ctx_.scheduler = rm->scheduler_.get();
  if (!rm->options_.history_store.empty()) {
    if (rm->options_.history_outbox.empty())
      return absl::InvalidArgumentError(
          "a history store needs a history outbox (RmOptions::history_outbox, "
          "weft rm --history-outbox)");
    HistoryPublisher::StoreOpener open = rm->options_.open_history_store;
    if (!open) {
      open = [url = rm->options_.history_store] { return history::OpenHistoryStore(url); };
    }
    HistoryPublisherOptions ho;
    ho.outbox_path = rm->options_.history_outbox;
    ho.store_name = rm->options_.history_store;
    ho.keep_days = rm->options_.history_keep_days;
    ho.keep_apps = rm->options_.history_keep_apps;
    if (ho.keep_days < 0 || ho.keep_apps < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          "history retention must be >= 0 (0 = unbounded), got ", ho.keep_days, " days and ",
          ho.keep_apps, " apps"));
    if (absl::Status s = rm->app_history_->Enable(ho, std::move(open)); !s.ok()) return s;
  }
  if (rm->options_.max_completed_apps < 0)
    return absl::InvalidArgumentError(absl::StrCat("max completed apps must be >= 0, got ",
                                                   rm->options_.max_completed_apps));
  auto state = store->Load();
  if (!state.ok()) return state.status();
  if (absl::Status s = RecoverRmState(*state, &rm->ctx_); !s.ok())
    return absl::Status(s.code(), absl::StrCat("recovering RM state: ", s.message()));
  rm->SchedulePass();
  rm->nodes_->StartExpiry();
  rm->am_service_->StartExpiry();
  rm->StartHistory();
  return rm;
}

HistoryPublisherStats ResourceManager::AppHistoryStats() const { return app_history_->stats(); }
int64_t ResourceManager::FinishedAppsHeld() const { return apps_->finished_count(); }
int64_t ResourceManager::FinishedAppsForgotten() const { return apps_->evicted(); }

// ---------------------------------------------------------------------------------------------
// Scheduling passes

void ResourceManager::SchedulePass(bool prompt) {
  if (shutting_down_) return;
  // Freed capacity or new demand hastens the pass only while some demand waits for it: with
  // none waiting (new asks already placed, a cancel), the early pass would place nothing.
  if (prompt && !scheduler_->DemandWaits()) prompt = false;
  const int64_t now = ctx_.NowMs();
  const int64_t due = prompt ? std::max(now, last_pass_ms_ + options_.min_pass_gap_ms)
                             : now + options_.pass_interval_ms;
  if (pass_timer_ != 0) {
    if (pass_due_ms_ <= due) return;  // one is due sooner already
    ctx_.loop->Cancel(pass_timer_);
  }
  pass_due_ms_ = due;
  pass_timer_ = ctx_.loop->Schedule(due - now, [this] {
    pass_timer_ = 0;
    RunPass();
  });
}

void ResourceManager::RunPass() {
  if (options_.pass_observer) options_.pass_observer->BeforePass();
  const scheduler::PassResult& r = scheduler_->Schedule(ctx_.NowMs());
  // Copied: handling them may call into the scheduler, which reuses its result buffer.
  pass_allocations_.assign(r.allocations.begin(), r.allocations.end());
  pass_kills_.assign(r.kills.begin(), r.kills.end());
  const std::vector<scheduler::ContainerResized> resized = r.resized;
  const std::vector<scheduler::RejectedRequest> rejected = r.rejected;
  const std::vector<scheduler::Allocation>& allocations = pass_allocations_;
  for (const scheduler::Allocation& a : allocations) containers_->Allocated(a);
  for (const scheduler::ContainerKill& k : pass_kills_) {
    if (const RmContainer* c = containers_->Find(k.container))
      nodes_->AddCleanup(scheduler_->node(k.node)->name, c->name);
    containers_->Ended(k, v1::CONTAINER_EXIT_PREEMPTED, "Container preempted by the scheduler.");
  }
  for (const scheduler::ContainerResized& u : resized) containers_->Resized(u);
  for (const scheduler::RejectedRequest& rr : rejected) {
    v1::RejectedSchedulingRequest proto;
    proto.set_reason(rr.reason);
    v1::ResourceRequest* ask = proto.mutable_request();
    ask->set_priority(rr.priority);
    ask->set_resource_name(scheduler::kAnyResourceName);
    *ask->mutable_capability() = ctx_.ToProto(rr.capability);
    ask->set_num_containers(rr.num_containers);
    ask->set_allocation_request_id(rr.allocation_request_id);
    ask->set_gang(true);
    apps_->RequestRejected(rr.app, std::move(proto));
  }
  // The pass as the observer sees it includes handing its containers out.
  if (options_.pass_observer)
    options_.pass_observer->AfterPass(static_cast<int64_t>(allocations.size()));
  last_pass_ms_ = ctx_.NowMs();
  if (scheduler_->DemandWaits()) SchedulePass();
}

// ---------------------------------------------------------------------------------------------
// ClientService and AdminService

absl::StatusOr<v1::NewApplicationResponse> ResourceManager::NewApplication() {
  return apps_->NewApplication();
}

absl::Status ResourceManager::SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                                const std::string& user) {
  return apps_->SubmitApplication(context, user);
}

absl::StatusOr<v1::ApplicationReport> ResourceManager::GetApplication(
    const std::string& app_id) const {
  return apps_->GetApplication(app_id);
}

v1::ListApplicationsResponse ResourceManager::ListApplications(
    const v1::ListApplicationsRequest& req) const {
  return apps_->ListApplications(req);
}

absl::Status ResourceManager::KillApplication(const std::string& app_id,
                                              const std::string& diagnostics) {
  return apps_->KillApplication(app_id, diagnostics);
}

absl::Status ResourceManager::SubmitApplication(const v1::ApplicationSubmissionContext& context,
                                                const Caller& caller) {
  if (absl::Status s = ParseViewAcl(context.view_acl()).status(); !s.ok())
    return absl::InvalidArgumentError(
        absl::StrCat("application ", context.application_id(), ": ", s.message()));
  const std::string queue = context.queue().empty() ? "default" : context.queue();
  // An unknown queue is the app manager's error to report, as for any caller.
  if (!caller.admin && QueueExists(scheduler_->config().root, queue) &&
      !scheduler::QueueAccessAllowed(scheduler_->config(), queue,
                                     scheduler::QueueAcl::kSubmitApplications, caller.user,
                                     caller.groups))
    return absl::PermissionDeniedError(
        absl::StrCat("user '", caller.user, "' may not submit applications to queue '", queue,
                     "' (its acl_submit_applications, or an ancestor's, does not name the user "
                     "or a group of theirs)"));
  return apps_->SubmitApplication(context, caller.user);
}

absl::Status ResourceManager::KillApplication(const std::string& app_id,
                                              const std::string& diagnostics,
                                              const Caller& caller) {
  if (absl::Status st = CheckModifyAccess(app_id, caller); !st.ok()) return st;
  return apps_->KillApplication(
      app_id, diagnostics.empty() && caller.user != caller.real_user
                  ? absl::StrCat("Application killed by ", caller.user, ".")
                  : diagnostics);
}

bool ResourceManager::AppEndPending(const std::string& app_id) const {
  return apps_->EndPending(app_id);
}

absl::Status ResourceManager::CheckModifyAccess(const std::string& app_id,
                                                const Caller& caller) const {
  absl::StatusOr<v1::ApplicationReport> app = apps_->GetApplication(app_id);
  if (!app.ok()) return app.status();
  if (caller.admin || app->user() == caller.user ||
      scheduler::QueueAccessAllowed(scheduler_->config(), app->queue(),
                                    scheduler::QueueAcl::kAdministerQueue, caller.user,
                                    caller.groups))
    return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat(
      "user '", caller.user, "' may not modify application ", app_id, " of user '", app->user(),
      "': only its owner, an admin of its queue or a cluster admin may"));
}

std::string ResourceManager::ViewAclOf(const std::string& app_id) const {
  auto it = apps_->apps().find(app_id);
  return it == apps_->apps().end() ? "" : it->second.context.view_acl();
}

absl::StatusOr<bool> ResourceManager::MayView(const std::string& app_id,
                                              const Caller& caller) const {
  auto it = apps_->apps().find(app_id);
  if (it == apps_->apps().end())
    return absl::NotFoundError(absl::StrCat("application ", app_id, " is not known"));
  const RmApp& app = it->second;
  // Checked at submission; a stored app whose ACL no longer parses is viewable by no one else.
  absl::StatusOr<AccessControlList> acl = ParseViewAcl(app.context.view_acl());
  return MayViewApplication(caller, app.record.user, app.record.queue,
                            acl.ok() ? *acl : AccessControlList::Nobody(), scheduler_->config());
}

absl::StatusOr<v1::ApplicationReport> ResourceManager::GetApplication(const std::string& app_id,
                                                                      const Caller& caller) const {
  absl::StatusOr<v1::ApplicationReport> report = GetApplication(app_id);
  if (!report.ok()) return report;
  // An unmanaged AM's token goes to its owner (directly or through a router or an AMRMProxy
  // acting for it) and to cluster admins, never to viewers.
  if (caller.admin || caller.user == report->user()) {
    if (std::optional<v1::Token> token = apps_->UnmanagedAmToken(app_id))
      *report->mutable_amrm_token() = *std::move(token);
  }
  absl::StatusOr<bool> may = MayView(app_id, caller);
  if (may.ok() && *may) return report;
  return RedactedReport(*std::move(report));
}

v1::ListApplicationsResponse ResourceManager::ListApplications(
    const v1::ListApplicationsRequest& req, const Caller& caller) const {
  v1::ListApplicationsResponse resp = ListApplications(req);
  for (v1::ApplicationReport& report : *resp.mutable_applications()) {
    absl::StatusOr<bool> may = MayView(report.application_id(), caller);
    if (!may.ok() || !*may) report = RedactedReport(std::move(report));
  }
  return resp;
}

absl::StatusOr<v1::GetApplicationAttemptsResponse> ResourceManager::GetApplicationAttempts(
    const std::string& app_id, const Caller& caller) const {
  absl::StatusOr<bool> may = MayView(app_id, caller);
  if (!may.ok()) return may.status();
  if (!*may)
    return absl::PermissionDeniedError(absl::StrCat("user '", caller.user,
                                                    "' may not view the attempts of ", app_id,
                                                    ": not its owner, an admin or in its view ACL"));
  return GetApplicationAttempts(app_id);
}

absl::StatusOr<v1::GetApplicationAttemptsResponse> ResourceManager::GetApplicationAttempts(
    const std::string& app_id) const {
  return apps_->GetApplicationAttempts(app_id);
}

v1::ListNodesResponse ResourceManager::ListNodes(const v1::ListNodesRequest& req) const {
  return nodes_->ListNodes(req);
}

std::vector<FederationApp> ResourceManager::FederationApps() const {
  return apps_->FederationApps();
}

absl::StatusOr<FederationApp> ResourceManager::FederationAppOfAmToken(const v1::Token& token) {
  absl::StatusOr<const RmApp*> app = am_service_->Authenticate(token);
  if (!app.ok()) return app.status();
  return FederationApp{(*app)->record.app_id, (*app)->context.federation_home_sub_cluster_id()};
}

void ResourceManager::FederationHomesChecked(const FederationHomesCheck& check) {
  apps_->FederationHomesChecked(check);
}

const FederationLease& ResourceManager::federation_lease() const {
  return apps_->federation_lease();
}

v1::GetClusterMetricsResponse ResourceManager::GetClusterMetrics() const {
  v1::GetClusterMetricsResponse m;
  nodes_->CountNodes(&m);
  *m.mutable_total() = ctx_.ToProto(scheduler_->cluster_total());
  *m.mutable_allocated() = ctx_.ToProto(scheduler_->cluster_allocated());
  *m.mutable_pending() = ctx_.ToProto(scheduler_->FindQueue("root")->pending);
  apps_->CountApps(&m);
  m.set_containers_allocated(scheduler_->stats().allocations);
  return m;
}

absl::StatusOr<v1::GetQueueResponse> ResourceManager::GetQueue(const v1::GetQueueRequest& req) {
  const scheduler::QueueNode* q = scheduler_->FindQueue(req.queue().empty() ? "root" : req.queue());
  if (q == nullptr) return absl::NotFoundError(absl::StrCat("unknown queue '", req.queue(), "'"));
  scheduler_->RefreshEntitlements();
  std::function<void(const scheduler::QueueNode&, v1::QueueInfo*, bool)> fill =
      [&](const scheduler::QueueNode& n, v1::QueueInfo* out, bool recurse) {
        out->set_name(n.config.name);
        out->set_path(n.path);
        out->set_state(n.config.state == scheduler::QueueState::kRunning ? "RUNNING" : "STOPPED");
        *out->mutable_used() = ctx_.ToProto(n.usage);
        *out->mutable_pending() = ctx_.ToProto(n.pending);
        *out->mutable_entitlement() = ctx_.ToProto(n.entitlement);
        *out->mutable_limit() = ctx_.ToProto(Min(n.limit, scheduler_->cluster_total()));
        out->set_weight(n.config.weight);
        out->set_capacity(n.config.capacity);
        out->set_maximum_capacity(n.config.maximum_capacity);
        const scheduler::QueueCapacities caps = scheduler_->Capacities(n);
        v1::QueueCapacities* reported = out->mutable_capacities();
        reported->set_capacity(caps.capacity);
        reported->set_maximum_capacity(caps.maximum_capacity);
        reported->set_absolute_capacity(caps.absolute_capacity);
        reported->set_absolute_maximum_capacity(caps.absolute_maximum_capacity);
        int32_t apps = 0;
        std::function<void(const scheduler::QueueNode&)> count =
            [&](const scheduler::QueueNode& x) {
              apps += static_cast<int32_t>(x.apps.size());
              for (const auto* c : x.children) count(*c);
            };
        count(n);
        out->set_num_applications(apps);
        out->set_num_running_applications(static_cast<int32_t>(n.running_apps));
        if (!recurse) return;
        for (const auto* c : n.children) fill(*c, out->add_children(), true);
      };
  v1::GetQueueResponse resp;
  fill(*q, resp.mutable_queue(), req.recursive());
  return resp;
}

absl::Status ResourceManager::RefreshQueues() {
  if (options_.scheduler_config_path.empty())
    return absl::FailedPreconditionError(
        "this RM was started without a scheduler configuration file: nothing to refresh");
  auto config =
      scheduler::LoadSchedulerConfigFile(options_.scheduler_config_path, options_.registry);
  if (!config.ok())
    return absl::InvalidArgumentError(absl::StrCat(
        "refresh-queues refused, the old configuration stays: ", config.status().message()));
  if (absl::Status s = scheduler_->Reconfigure(*config); !s.ok())
    return absl::Status(s.code(), absl::StrCat("refresh-queues refused, the old configuration "
                                               "stays: ",
                                               s.message()));
  options_.scheduler = *config;
  SchedulePass();
  return absl::OkStatus();
}

absl::Status ResourceManager::RefreshNodes(const v1::RefreshNodesRequest& req) {
  return nodes_->RefreshNodes(req);
}

absl::Status ResourceManager::SetNodeAttributes(const v1::NodeAttributesRequest& req) {
  absl::Status s = nodes_->SetNodeAttributes(req);
  if (s.ok()) ctx_.request_pass();
  return s;
}

// ---------------------------------------------------------------------------------------------
// TrackerService and AmService

std::optional<int64_t> ResourceManager::FederationLeaseAgeMs() const {
  const FederationLease& lease = apps_->federation_lease();
  if (options_.sub_cluster_id.empty() || lease.fence_ms() <= 0) return std::nullopt;
  // Before its first check the RM's start counts as a renewal: a sub-cluster RM starts only
  // after claiming its epoch in the federation store.
  const int64_t renewed_ms = lease.renewed_ms() >= 0 ? lease.renewed_ms() : ctx_.started_ms;
  return std::max<int64_t>(0, NowMs() - renewed_ms);
}

template <typename Reply>
absl::StatusOr<Reply> ResourceManager::WithFederationLease(absl::StatusOr<Reply> r) const {
  if (!r.ok()) return r;
  if (std::optional<int64_t> age = FederationLeaseAgeMs()) {
    r->set_federation_lease_age_ms(*age);
    r->set_federation_lease_renewal_ms(apps_->federation_lease().interval_ms());
  }
  return r;
}

absl::StatusOr<v1::RegisterNodeManagerResponse> ResourceManager::RegisterNode(
    const v1::RegisterNodeManagerRequest& req) {
  return WithFederationLease(nodes_->RegisterNode(req));
}

absl::StatusOr<v1::NodeHeartbeatResponse> ResourceManager::NodeHeartbeat(
    const v1::NodeHeartbeatRequest& req, RmNode* resolved) {
  return WithFederationLease(nodes_->NodeHeartbeat(req, resolved));
}

std::shared_ptr<const NodeDirectory> ResourceManager::node_directory() const {
  return nodes_->directory();
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> ResourceManager::RegisterApplicationMaster(
    const v1::Token& token, const v1::RegisterApplicationMasterRequest& req) {
  return am_service_->RegisterApplicationMaster(token, req);
}

absl::StatusOr<v1::AllocateResponse> ResourceManager::Allocate(const v1::Token& token,
                                                               const v1::AllocateRequest& req) {
  return am_service_->Allocate(token, req);
}

void ResourceManager::StopHoldingCalls() { am_service_->StopHolding(); }

size_t ResourceManager::parked_allocates() const { return am_service_->parked_allocates(); }

void ResourceManager::Allocate(const v1::Token& token, const v1::AllocateRequest& req,
                               std::function<void(absl::StatusOr<v1::AllocateResponse>)> reply,
                               const std::string& verified_attempt) {
  am_service_->Allocate(token, req, std::move(reply), verified_attempt);
}

std::shared_ptr<const AmRmVerifier> ResourceManager::amrm_verifier() const {
  return keys_->amrm_verifier();
}

absl::StatusOr<v1::FinishApplicationMasterResponse> ResourceManager::FinishApplicationMaster(
    const v1::Token& token, const v1::FinishApplicationMasterRequest& req) {
  return am_service_->FinishApplicationMaster(token, req);
}

int64_t ResourceManager::containers_completed() const { return containers_->completed(); }
ResourceManager::RecoveryCounts ResourceManager::recovery_counts() const {
  return {containers_->recovered(), containers_->refused(),
          containers_->refused_without_resource()};
}

const security::MasterKeyManager& ResourceManager::container_keys() const {
  return keys_->container();
}

void ResourceManager::StartHistory() {
  const HistoryOptions o{options_.history_sample_ms, options_.history_retention_s};
  std::vector<std::string> names;
  for (int i = 0; i < options_.registry.size(); ++i)
    names.push_back(options_.registry.info(i).name);
  history_ = std::make_shared<ClusterHistory>(o, std::move(names));
  history_sampler_ = std::make_unique<HistorySampler>(
      ctx_.loop, history_, [this](int64_t now_ms, std::vector<std::string>* paths) {
        return SampleCluster(*scheduler_, GetClusterMetrics(), now_ms, paths);
      });
}

std::shared_ptr<const ClusterHistory> ResourceManager::history() const { return history_; }

// ---------------------------------------------------------------------------------------------
// RmContext's conversions

v1::Resource RmContext::ToProto(const Resource& r) const {
  v1::Resource p;
  for (int i = 0; i < registry().size(); ++i) {
    if (r[i] != 0 || i <= kVcores) (*p.mutable_values())[registry().info(i).name] = r[i];
  }
  return p;
}

absl::StatusOr<Resource> RmContext::FromProto(const v1::Resource& p, absl::string_view what) const {
  Resource r;
  for (const auto& [name, value] : p.values()) {
    int id = registry().Find(name);
    if (id < 0)
      return absl::InvalidArgumentError(absl::StrCat(what, ": unknown resource type '", name, "'"));
    r[id] = value;
  }
  return r;
}

Resource RmContext::MaximumAllocation() const {
  Resource max;
  for (int i = 0; i < registry().size(); ++i) max[i] = registry().info(i).maximum;
  return max;
}

}  // namespace weft::rm
