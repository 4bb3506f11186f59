// Copyright Weft authors.
#include "federation/amrmproxy/federation_interceptor.h"

#include <algorithm>
#include <future>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/numbers.h"
#include "common/log.h"
#include "federation/amrmproxy/amrm_proxy_state.h"
#include "federation/policies/registry.h"

namespace weft::amrmproxy {
namespace {

v1::AllocateResponse Resync(int32_t response_id) {
  v1::AllocateResponse resync;
  resync.set_response_id(response_id);
  resync.set_am_command(v1::AM_RESYNC);
  return resync;
}

void AddResource(const v1::Resource& add, v1::Resource* into) {
  for (const auto& [name, value] : add.values()) (*into->mutable_values())[name] += value;
}

bool IsFinal(v1::ApplicationState state) {
  return state == v1::APP_FINISHED || state == v1::APP_FAILED || state == v1::APP_KILLED;
}

// The attempt number of appattempt_<ts>_<seq>_<n>; 0 when it does not parse.
int64_t AttemptNumber(const std::string& attempt_id) {
  const size_t last = attempt_id.rfind('_');
  int64_t n = 0;
  if (last == std::string::npos || !absl::SimpleAtoi(attempt_id.substr(last + 1), &n)) return 0;
  return n;
}

}  // namespace

FederationInterceptor::FederationInterceptor(const AttemptContext& attempt,
                                             const InterceptorEnvironment& env)
    : attempt_(attempt),
      env_(env),
      rng_(env.seed),
      home_token_(attempt.amrm_token),
      uams_(attempt, env.home_sub_cluster_id, env.rpc, env.now_ms, env.sleep_ms),
      home_id_(env.home_sub_cluster_id),
      // The first attempt has no UAMs to find.
      looked_for_uams_(AttemptNumber(attempt.attempt_id) <= 1) {
  Session& home = sessions_[home_id_];
  home.sub_cluster_id = home_id_;
  home.rm = attempt.home_rm_address;
  home.home = true;
  home.token = &home_token_;
}

FederationInterceptor::~FederationInterceptor() = default;

FederationInterceptor::Session& FederationInterceptor::SessionFor(const std::string& sub_cluster_id,
                                                                  const std::string& rm) {
  auto [it, inserted] = sessions_.try_emplace(sub_cluster_id);
  Session& session = it->second;
  if (inserted) {
    session.sub_cluster_id = sub_cluster_id;
    session.rm = rm;
    session.uam = &uams_.GetOrAdd(sub_cluster_id, rm);
    session.token = &session.uam->amrm_token;
  }
  return session;
}

absl::StatusOr<v1::RegisterApplicationMasterResponse>
FederationInterceptor::RegisterApplicationMaster(
    const v1::RegisterApplicationMasterRequest& request) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attempt ", attempt_.attempt_id, " has unregistered"));
  }
  Session& home = sessions_.at(home_id_);
  absl::StatusOr<v1::RegisterApplicationMasterResponse> registered =
      env_.rpc->RegisterApplicationMaster(home.rm, home_token_, request);
  if (!registered.ok()) {
    return absl::Status(registered.status().code(),
                        absl::StrCat("registering with the home sub-cluster '", home_id_,
                                     "': ", registered.status().message()));
  }
  registration_ = request;
  queue_ = registered->queue();
  // A registration starts a new sequence with the home; what it was told is told again
  // (absolute counts: harmless when it still knows them).
  home.last_response_id = 0;
  home.unanswered.reset();
  for (const auto& [key, ask] : home.sent) home.pending_asks.try_emplace(key, ask);
  if (app_name_.empty()) {
    absl::StatusOr<v1::ApplicationReport> report =
        env_.rpc->GetApplication(home.rm, attempt_.user, attempt_.application_id);
    app_name_ = report.ok() && !report->name().empty() ? report->name() : attempt_.application_id;
  }
  for (const v1::Container& c : registered->containers_from_previous_attempts()) {
    container_sub_cluster_[c.container_id()] = home_id_;
  }
  registered_ = true;
  last_response_id_ = 0;
  last_response_.reset();
  if (!looked_for_uams_) FindUamsOfEarlierAttempts();
  Reattach(&*registered);
  Persist();
  return registered;
}

void FederationInterceptor::FindUamsOfEarlierAttempts() {
  if (env_.federation == nullptr) return;
  absl::StatusOr<FederationSnapshot> view = env_.federation->Get(queue_, attempt_.user);
  if (!view.ok()) {
    log::Warn("amrmproxy_uam_search_failed",
              {{"attempt", attempt_.attempt_id}, {"error", view.status()}});
    return;  // tried again at the next registration
  }
  looked_for_uams_ = true;
  std::vector<std::pair<v1::SubClusterInfo, std::future<absl::StatusOr<v1::ApplicationReport>>>>
      asked;
  for (const v1::SubClusterInfo& sc : view->active) {
    if (sc.sub_cluster_id() == home_id_ || sc.rm_address().empty() ||
        sessions_.contains(sc.sub_cluster_id())) {
      continue;
    }
    asked.emplace_back(sc, std::async(std::launch::async, [this, rm = sc.rm_address()] {
                         return env_.rpc->GetApplication(rm, attempt_.user,
                                                         attempt_.application_id);
                       }));
  }
  for (auto& [sc, future] : asked) {
    absl::StatusOr<v1::ApplicationReport> report = future.get();
    if (!report.ok()) {
      if (!absl::IsNotFound(report.status())) {
        log::Warn("amrmproxy_uam_search_failed", {{"attempt", attempt_.attempt_id},
                                                  {"sub_cluster", sc.sub_cluster_id()},
                                                  {"error", report.status()}});
      }
      continue;
    }
    if (!report->unmanaged_am() || IsFinal(report->state())) continue;
    UamState found;
    found.sub_cluster_id = sc.sub_cluster_id();
    found.rm = sc.rm_address();
    found.application_id = attempt_.application_id;
    found.amrm_token = report->amrm_token();
    Session& session = SessionFor(found.sub_cluster_id, found.rm);
    uams_.Adopt(found);
    session.reattach = true;
    log::Info("amrmproxy_uam_found", {{"attempt", attempt_.attempt_id},
                                      {"sub_cluster", found.sub_cluster_id},
                                      {"application", found.application_id}});
  }
}

void FederationInterceptor::Reattach(v1::RegisterApplicationMasterResponse* response) {
  std::vector<std::pair<Session*, std::future<absl::StatusOr<v1::RegisterApplicationMasterResponse>>>>
      registering;
  for (auto& [id, session] : sessions_) {
    if (session.home || !session.reattach || session.lost || session.uam->finished) continue;
    Session* s = &session;
    registering.emplace_back(s, std::async(std::launch::async, [this, s] {
                               return uams_.Launch(*s->uam, queue_, app_name_, registration_);
                             }));
  }
  for (auto& [session, future] : registering) {
    absl::StatusOr<v1::RegisterApplicationMasterResponse> again = future.get();
    if (!again.ok()) continue;  // logged by the pool; the next heartbeat with asks tries again
    session->reattach = false;
    session->changed = true;
    session->last_response_id = 0;
    session->unanswered.reset();
    for (const v1::Container& c : again->containers_from_previous_attempts()) {
      container_sub_cluster_[c.container_id()] = session->sub_cluster_id;
      *response->add_containers_from_previous_attempts() = c;
    }
  }
}

AttemptState FederationInterceptor::State() const {
  AttemptState state;
  state.attempt = attempt_;
  state.attempt.amrm_token = home_token_;
  state.registered = registered_;
  state.registration = registration_;
  state.queue = queue_;
  state.app_name = app_name_;
  state.ended = ended_;
  for (const auto& [id, uam] : uams_.uams()) {
    UamState u;
    u.sub_cluster_id = uam.sub_cluster_id;
    u.rm = uam.rm;
    u.application_id = uam.application_id;
    u.amrm_token = uam.amrm_token;
    u.registered = uam.registered;
    u.finished = uam.finished;
    state.uams.push_back(std::move(u));
  }
  return state;
}

void FederationInterceptor::Persist() {
  if (env_.state_store == nullptr) return;
  if (absl::Status s = env_.state_store->PutAttempt(State()); !s.ok()) {
    log::Error("amrmproxy_state_write_failed", {{"attempt", attempt_.attempt_id}, {"error", s}});
  }
}

void FederationInterceptor::Recover(const AttemptState& state) {
  home_token_ = state.attempt.amrm_token;
  registration_ = state.registration;
  queue_ = state.queue;
  app_name_ = state.app_name;
  ended_ = state.ended;
  // The AM registers again (it is told AM_RESYNC), and so do the home and the UAMs.
  registered_ = false;
  looked_for_uams_ = true;  // its UAMs are those recorded
  for (const UamState& u : state.uams) {
    if (u.sub_cluster_id == home_id_) continue;
    Session& session = SessionFor(u.sub_cluster_id, u.rm);
    uams_.Adopt(u);
    session.reattach = !u.application_id.empty() && !u.finished;
  }
  log::Info("amrmproxy_attempt_recovered", {{"attempt", attempt_.attempt_id},
                                            {"uams", state.uams.size()},
                                            {"registered", state.registered},
                                            {"ended", state.ended}});
}

std::map<std::string, std::map<std::string, v1::ResourceRequest>> FederationInterceptor::Split(
    const std::vector<v1::ResourceRequest>& asks) {
  std::map<std::string, std::map<std::string, v1::ResourceRequest>> shares;
  if (asks.empty()) return shares;
  auto add = [&shares](const std::string& sub_cluster, const v1::ResourceRequest& ask) {
    auto [it, inserted] = shares[sub_cluster].try_emplace(AskKey(ask), ask);
    if (!inserted)
      it->second.set_num_containers(it->second.num_containers() + ask.num_containers());
  };
  auto all_home = [&](absl::string_view why, const absl::Status& error) {
    split_policy_.clear();
    log::Warn("amrmproxy_split_home_only",
              {{"attempt", attempt_.attempt_id}, {"reason", why}, {"error", error}});
    shares.clear();
    for (const v1::ResourceRequest& ask : asks) add(home_id_, ask);
    return shares;
  };
  if (env_.federation == nullptr) return all_home("no federation view", absl::OkStatus());
  absl::StatusOr<FederationSnapshot> view = env_.federation->Get(queue_, attempt_.user);
  if (!view.ok()) return all_home("the federation store cannot be read", view.status());
  if (view->active.empty()) return all_home("no usable sub-cluster", absl::OkStatus());
  const std::string policy_name =
      view->config.amrm_policy().empty() ? "home-only" : view->config.amrm_policy();
  auto& policy = policies_[policy_name];
  if (policy == nullptr) {
    absl::StatusOr<std::unique_ptr<federation::AmrmPolicy>> made =
        federation::MakeAmrmPolicy(policy_name);
    if (!made.ok()) {
      policies_.erase(policy_name);
      return all_home("the queue's AMRM policy is unknown", made.status());
    }
    policy = *std::move(made);
  }
  std::map<std::string, v1::Resource> headroom;
  for (const auto& [id, session] : sessions_) {
    if (session.headroom.has_value()) headroom[id] = *session.headroom;
  }
  federation::PolicyContext ctx;
  ctx.config = &view->config;
  for (const v1::SubClusterInfo& sc : view->active) {
    auto s = sessions_.find(sc.sub_cluster_id());
    if (s == sessions_.end() || !s->second.lost) ctx.active.push_back(sc);
  }
  if (ctx.active.empty()) return all_home("every usable sub-cluster was dropped", absl::OkStatus());
  ctx.resolver = view->resolver.get();
  ctx.rng = &rng_;
  absl::StatusOr<std::map<std::string, std::vector<v1::ResourceRequest>>> split =
      policy->SplitResourceRequests(asks, home_id_, headroom, ctx);
  if (!split.ok()) return all_home("the AMRM policy failed", split.status());
  split_policy_ = policy_name;
  for (const auto& [sub_cluster, share] : *split) {
    auto known = view->known.find(sub_cluster);
    const bool usable = sub_cluster == home_id_ || sessions_.contains(sub_cluster) ||
                        (known != view->known.end() && !known->second.rm_address().empty());
    for (const v1::ResourceRequest& ask : share) {
      if (usable) {
        add(sub_cluster, ask);
      } else {
        log::Warn("amrmproxy_unknown_sub_cluster",
                  {{"attempt", attempt_.attempt_id}, {"sub_cluster", sub_cluster}});
        add(home_id_, ask);
      }
    }
    if (usable && sub_cluster != home_id_ && !sessions_.contains(sub_cluster)) {
      SessionFor(sub_cluster, known->second.rm_address());
    }
  }
  return shares;
}

absl::StatusOr<v1::RegisterApplicationMasterResponse> FederationInterceptor::Reregister(
    Session& session) {
  absl::StatusOr<v1::RegisterApplicationMasterResponse> registered =
      env_.rpc->RegisterApplicationMaster(session.rm, *session.token, registration_);
  if (!registered.ok()) return registered.status();
  session.last_response_id = 0;
  log::Info("amrmproxy_resynced",
            {{"attempt", attempt_.attempt_id}, {"sub_cluster", session.sub_cluster_id}});
  return registered;
}

absl::StatusOr<v1::AllocateResponse> FederationInterceptor::Call(
    Session& session, const v1::AllocateRequest& request) {
  absl::StatusOr<v1::AllocateResponse> reply =
      env_.rpc->Allocate(session.rm, *session.token, request);
  if (reply.ok() && reply->am_command() == v1::AM_RESYNC) {
    // The RM restarted: register again and tell it this session's whole share.
    absl::StatusOr<v1::RegisterApplicationMasterResponse> again = Reregister(session);
    if (!again.ok()) return again.status();
    v1::AllocateRequest full = request;
    full.set_response_id(0);
    full.clear_asks();
    for (const auto& [key, ask] : session.sent) *full.add_asks() = ask;
    reply = env_.rpc->Allocate(session.rm, *session.token, full);
    if (reply.ok() && reply->am_command() == v1::AM_RESYNC) {
      return absl::AbortedError("the RM asks for a resync again right after a registration");
    }
    if (reply.ok()) {
      google::protobuf::RepeatedPtrField<v1::Container> recovered(
          again->containers_from_previous_attempts().begin(),
          again->containers_from_previous_attempts().end());
      recovered.MergeFrom(reply->containers_from_previous_attempts());
      reply->mutable_containers_from_previous_attempts()->Swap(&recovered);
    }
  }
  if (!reply.ok()) return reply.status();
  if (reply->has_amrm_token()) {
    *session.token = reply->amrm_token();  // the RM rolled its key
    reply->clear_amrm_token();
    session.changed = true;
  }
  if (reply->am_command() == v1::AM_SHUTDOWN && !session.home) session.shut_down = true;
  session.last_response_id = reply->response_id();
  if (reply->has_available_resources()) session.headroom = reply->available_resources();
  session.num_nodes = reply->num_cluster_nodes();
  return reply;
}

FederationInterceptor::Outcome FederationInterceptor::Heartbeat(Session& session, float progress,
                                                                int64_t wait_ms) {
  Outcome out;
  if (!session.home && !session.uam->registered) {
    const bool wants = std::any_of(session.pending_asks.begin(), session.pending_asks.end(),
                                   [](const auto& e) { return e.second.num_containers() > 0; });
    if (!wants && !session.reattach) {
      // Nothing was ever asked there: nothing to cancel.
      session.pending_asks.clear();
      session.sent.clear();
      session.blacklist_additions.clear();
      session.blacklist_removals.clear();
      return out;
    }
    absl::StatusOr<v1::RegisterApplicationMasterResponse> launched =
        uams_.Launch(*session.uam, queue_, app_name_, registration_);
    session.changed = true;  // submitted, registered, or found ended
    if (!launched.ok()) {
      out.status = launched.status();
      return out;
    }
    session.reattach = false;
    session.last_response_id = 0;
    session.unanswered.reset();
    if (launched->containers_from_previous_attempts_size() > 0) {
      v1::AllocateResponse recovered;
      *recovered.mutable_containers_from_previous_attempts() =
          launched->containers_from_previous_attempts();
      out.replies.push_back(std::move(recovered));
    }
  }
  if (session.unanswered.has_value()) {
    absl::StatusOr<v1::AllocateResponse> reply = Call(session, *session.unanswered);
    if (!reply.ok()) {
      out.status = reply.status();
      return out;
    }
    session.unanswered.reset();
    out.replies.push_back(*std::move(reply));
    if (session.shut_down) return out;
  }
  v1::AllocateRequest request;
  request.set_response_id(session.last_response_id);
  request.set_progress(progress);
  request.set_wait_ms(wait_ms);
  for (auto& [key, ask] : session.pending_asks) *request.add_asks() = std::move(ask);
  for (std::string& id : session.releases) request.add_releases(std::move(id));
  for (std::string& node : session.blacklist_additions) request.add_blacklist_additions(node);
  for (std::string& node : session.blacklist_removals) request.add_blacklist_removals(node);
  session.pending_asks.clear();
  session.releases.clear();
  session.blacklist_additions.clear();
  session.blacklist_removals.clear();
  session.unanswered = request;
  absl::StatusOr<v1::AllocateResponse> reply = Call(session, request);
  if (!reply.ok()) {
    out.status = reply.status();
    return out;
  }
  session.unanswered.reset();
  out.replies.push_back(*std::move(reply));
  return out;
}

void FederationInterceptor::Merge(Session& session, const v1::AllocateResponse& reply,
                                  v1::AllocateResponse* merged) {
  for (const v1::Container& c : reply.allocated_containers()) {
    container_sub_cluster_[c.container_id()] = session.sub_cluster_id;
    *merged->add_allocated_containers() = c;
    // The RM took the container off its outstanding asks of that priority and request id: at
    // "*", at its node, at racks (YARN decrements node, rack and "*" asks alike).
    const std::string host(c.node_id().substr(0, c.node_id().rfind(':')));
    for (auto& [key, ask] : session.sent) {
      if (ask.priority() != c.priority() ||
          ask.allocation_request_id() != c.allocation_request_id() || ask.num_containers() <= 0)
        continue;
      const std::string& where = ask.resource_name();
      if (where == "*" || where == host || where == c.node_id() || absl::StartsWith(where, "/"))
        ask.set_num_containers(ask.num_containers() - 1);
    }
  }
  for (const v1::Container& c : reply.containers_from_previous_attempts()) {
    container_sub_cluster_[c.container_id()] = session.sub_cluster_id;
    *merged->add_containers_from_previous_attempts() = c;
  }
  for (const v1::ContainerStatus& status : reply.completed_containers()) {
    container_sub_cluster_.erase(status.container_id());
    *merged->add_completed_containers() = status;
  }
  for (const v1::NodeReport& node : reply.updated_nodes()) *merged->add_updated_nodes() = node;
  if (reply.has_preemption()) {
    v1::PreemptionMessage* p = merged->mutable_preemption();
    p->mutable_strict_containers()->MergeFrom(reply.preemption().strict_containers());
    p->mutable_negotiable_containers()->MergeFrom(reply.preemption().negotiable_containers());
    AddResource(reply.preemption().negotiable_resource(), p->mutable_negotiable_resource());
    const int64_t deadline = reply.preemption().deadline_ms();
    if (deadline > 0 && (p->deadline_ms() == 0 || deadline < p->deadline_ms())) {
      p->set_deadline_ms(deadline);
    }
  }
  for (const std::string& line : reply.diagnostics()) {
    merged->add_diagnostics(
        session.home ? line : absl::StrCat("sub-cluster ", session.sub_cluster_id, ": ", line));
  }
  if (session.home && reply.am_command() == v1::AM_SHUTDOWN) {
    merged->set_am_command(v1::AM_SHUTDOWN);
  }
  if (!session.home && reply.am_command() == v1::AM_SHUTDOWN) {
    log::Warn("amrmproxy_uam_shut_down",
              {{"attempt", attempt_.attempt_id}, {"sub_cluster", session.sub_cluster_id}});
  }
}

void FederationInterceptor::RerouteAsks(const std::vector<v1::ResourceRequest>& asks) {
  if (asks.empty() || split_policy_ == "broadcast") return;
  for (const auto& [id, share] : Split(asks)) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.lost) continue;
    Session& to = it->second;
    for (const auto& [key, ask] : share) {
      if (ask.num_containers() <= 0) continue;
      v1::ResourceRequest want = ask;
      if (auto told = to.sent.find(key); told != to.sent.end())
        want.set_num_containers(told->second.num_containers() + ask.num_containers());
      to.pending_asks[key] = want;
      to.sent[key] = want;
      log::Info("amrmproxy_ask_rerouted", {{"attempt", attempt_.attempt_id},
                                           {"to", id},
                                           {"resource_name", ask.resource_name()},
                                           {"containers", ask.num_containers()}});
    }
  }
}

void FederationInterceptor::DropSecondary(Session& session, const std::string& why) {
  if (session.lost) return;
  std::vector<v1::ResourceRequest> held;
  for (const auto& [key, ask] : session.sent)
    if (ask.num_containers() > 0) held.push_back(ask);
  session.lost = true;
  session.shut_down = true;
  session.pending_asks.clear();
  session.sent.clear();
  session.unanswered.reset();
  session.headroom.reset();
  session.num_nodes = 0;
  int lost = 0;
  for (auto it = container_sub_cluster_.begin(); it != container_sub_cluster_.end();) {
    if (it->second != session.sub_cluster_id) {
      ++it;
      continue;
    }
    v1::ContainerStatus* status = carry_.add_completed_containers();
    status->set_container_id(it->first);
    status->set_state(v1::CONTAINER_COMPLETE);
    status->set_exit_status(v1::CONTAINER_EXIT_LOST_NODE);
    status->set_diagnostics(absl::StrCat("sub-cluster ", session.sub_cluster_id,
                                         " was dropped from the app: ", why));
    it = container_sub_cluster_.erase(it);
    ++lost;
  }
  RerouteAsks(held);
  carry_.add_diagnostics(absl::StrCat("sub-cluster ", session.sub_cluster_id, " dropped: ", why,
                                      "; ", lost, " container(s) there reported lost"));
  log::Warn("amrmproxy_sub_cluster_dropped", {{"attempt", attempt_.attempt_id},
                                              {"sub_cluster", session.sub_cluster_id},
                                              {"containers_lost", std::to_string(lost)},
                                              {"why", why}});
}

absl::StatusOr<v1::AllocateResponse> FederationInterceptor::Allocate(
    const v1::AllocateRequest& request) {
  if (finished_) {
    return absl::FailedPreconditionError(
        absl::StrCat("attempt ", attempt_.attempt_id, " has unregistered"));
  }
  if (!registered_) return Resync(last_response_id_);
  // The AM's sequence: a retry of the last call gets its reply again.
  if (last_response_.has_value() && request.response_id() + 1 == last_response_id_) {
    return *last_response_;
  }
  if (request.response_id() != last_response_id_) return Resync(last_response_id_);

  std::set<std::string> stated;
  std::vector<v1::ResourceRequest> outstanding;
  for (const v1::ResourceRequest& ask : request.asks()) {
    const std::string key = AskKey(ask);
    asks_[key] = ask;
    stated.insert(key);
    if (ask.num_containers() > 0) outstanding.push_back(ask);
  }
  const auto shares = Split(outstanding);
  // What changed for each sub-cluster: the stated keys' new shares (0 where a share moved).
  for (auto& [id, session] : sessions_) {
    auto share = shares.find(id);
    for (const std::string& key : stated) {
      v1::ResourceRequest want = asks_[key];
      want.set_num_containers(0);
      if (share != shares.end()) {
        if (auto it = share->second.find(key); it != share->second.end()) want = it->second;
      }
      auto told = session.sent.find(key);
      if (told == session.sent.end() ? want.num_containers() == 0
                                     : told->second.num_containers() == want.num_containers()) {
        continue;
      }
      session.pending_asks[key] = want;
      session.sent[key] = want;
    }
  }
  for (const std::string& id : request.releases()) {
    auto owner = container_sub_cluster_.find(id);
    auto session =
        owner == container_sub_cluster_.end() ? sessions_.end() : sessions_.find(owner->second);
    (session == sessions_.end() ? sessions_.at(home_id_) : session->second).releases.push_back(id);
  }
  for (auto& [id, session] : sessions_) {
    session.blacklist_additions.insert(session.blacklist_additions.end(),
                                       request.blacklist_additions().begin(),
                                       request.blacklist_additions().end());
    session.blacklist_removals.insert(session.blacklist_removals.end(),
                                      request.blacklist_removals().begin(),
                                      request.blacklist_removals().end());
  }

  // The secondaries in parallel, the home on this thread.
  std::vector<std::pair<Session*, std::future<Outcome>>> secondaries;
  for (auto& [id, session] : sessions_) {
    if (session.home || session.shut_down || session.uam->finished) continue;
    Session* s = &session;
    secondaries.emplace_back(s, std::async(std::launch::async, [this, s, &request] {
                               return Heartbeat(*s, request.progress());
                             }));
  }
  Session& home = sessions_.at(home_id_);
  // The AM's long poll goes to its home only while no secondary's reply would wait for it.
  Outcome home_outcome =
      Heartbeat(home, request.progress(), secondaries.empty() ? request.wait_ms() : 0);
  v1::AllocateResponse merged;
  for (auto& [session, future] : secondaries) {
    Outcome outcome = future.get();
    // What a secondary answered is the AM's even when the home fails (kept for its retry).
    for (const v1::AllocateResponse& reply : outcome.replies) Merge(*session, reply, &carry_);
    const int64_t now = env_.now_ms();
    if (outcome.status.ok()) {
      session->failing_since_ms = 0;
      if (session->shut_down) DropSecondary(*session, "its RM shut the unmanaged AM down");
      continue;
    }
    log::Warn("amrmproxy_sub_cluster_skipped", {{"attempt", attempt_.attempt_id},
                                                {"sub_cluster", session->sub_cluster_id},
                                                {"error", outcome.status}});
    if (session->failing_since_ms == 0) session->failing_since_ms = now;
    if (now - session->failing_since_ms >= env_.secondary_timeout_ms) {
      DropSecondary(*session,
                    absl::StrCat("its RM has not answered for ", now - session->failing_since_ms,
                                 " ms (", outcome.status.message(), ")"));
    }
  }
  bool changed = false;
  for (auto& [id, session] : sessions_) changed = std::exchange(session.changed, false) || changed;
  if (changed) Persist();
  if (!home_outcome.status.ok()) {
    for (const v1::AllocateResponse& reply : home_outcome.replies) Merge(home, reply, &carry_);
    return absl::Status(
        home_outcome.status.code(),
        absl::StrCat("home sub-cluster '", home_id_, "': ", home_outcome.status.message()));
  }
  for (const v1::AllocateResponse& reply : home_outcome.replies) Merge(home, reply, &merged);
  merged.MergeFrom(carry_);
  carry_.Clear();
  // Headroom and node counts: the sum of each sub-cluster's latest.
  int32_t nodes = 0;
  for (const auto& [id, session] : sessions_) {
    if (session.shut_down || (!session.home && session.uam->finished)) continue;
    if (session.headroom.has_value()) {
      AddResource(*session.headroom, merged.mutable_available_resources());
    }
    nodes += session.num_nodes;
  }
  merged.set_num_cluster_nodes(nodes);
  merged.set_response_id(++last_response_id_);
  last_response_ = merged;
  return merged;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> FederationInterceptor::FinishApplicationMaster(
    const v1::FinishApplicationMasterRequest& request) {
  std::vector<std::pair<UnmanagedAm*, std::future<absl::Status>>> finishing;
  for (auto& [id, session] : sessions_) {
    if (session.home || session.lost || !session.uam->registered || session.uam->finished) continue;
    UnmanagedAm* uam = session.uam;
    finishing.emplace_back(uam, std::async(std::launch::async, [this, uam, &request] {
                             return uams_.Finish(*uam, request);
                           }));
  }
  for (auto& [uam, future] : finishing) {
    if (absl::Status s = future.get(); !s.ok()) {
      log::Warn(
          "amrmproxy_uam_finish_failed",
          {{"attempt", attempt_.attempt_id}, {"sub_cluster", uam->sub_cluster_id}, {"error", s}});
    }
  }
  Session& home = sessions_.at(home_id_);
  absl::StatusOr<v1::FinishApplicationMasterResponse> done =
      env_.rpc->FinishApplicationMaster(home.rm, home_token_, request);
  if (!done.ok()) {
    return absl::Status(done.status().code(),
                        absl::StrCat("unregistering from the home sub-cluster '", home_id_,
                                     "': ", done.status().message()));
  }
  if (done->is_unregistered()) {
    finished_ = true;
    // Nothing left to serve after a restart.
    if (env_.state_store != nullptr) {
      if (absl::Status s = env_.state_store->RemoveAttempt(attempt_.attempt_id); !s.ok()) {
        log::Error("amrmproxy_state_write_failed",
                   {{"attempt", attempt_.attempt_id}, {"error", s}});
      }
    }
  }
  return done;
}

void FederationInterceptor::Shutdown(AttemptEnd why) {
  auto forget = [this] {
    if (env_.state_store == nullptr) return;
    if (absl::Status s = env_.state_store->RemoveAttempt(attempt_.attempt_id); !s.ok()) {
      log::Error("amrmproxy_state_write_failed", {{"attempt", attempt_.attempt_id}, {"error", s}});
    }
  };
  const bool live = std::any_of(uams_.uams().begin(), uams_.uams().end(), [](const auto& e) {
    return !e.second.application_id.empty() && !e.second.finished;
  });
  if (why == AttemptEnd::kAttemptEnded && live && !finished_) {
    // Another attempt may follow and take the UAMs over (seed 004 8a), unless the home RM
    // says the app is over.
    Session& home = sessions_.at(home_id_);
    absl::StatusOr<v1::ApplicationReport> report =
        env_.rpc->GetApplication(home.rm, attempt_.user, attempt_.application_id);
    if (!report.ok() || !IsFinal(report->state())) {
      ended_ = true;
      Persist();
      log::Info("amrmproxy_uams_kept",
                {{"attempt", attempt_.attempt_id},
                 {"home_state", report.ok() ? v1::ApplicationState_Name(report->state())
                                            : std::string(report.status().message())}});
      return;
    }
  }
  uams_.KillUnfinished(why == AttemptEnd::kApplicationEnded
                           ? absl::StrCat("application ", attempt_.application_id, " ended")
                           : absl::StrCat("the AMRMProxy's attempt ", attempt_.attempt_id,
                                          " ended without unregistering and its app is over"));
  forget();
}

}  // namespace weft::amrmproxy
