// Copyright Weft authors. A fake of the sub-cluster RMs for the AMRMProxy's tests: each RM
// (by address list) keeps YARN's response_id protocol, records what it was sent and answers
// Allocate with the replies the test queued. Test-only.
#ifndef WEFT_FEDERATION_AMRMPROXY_FAKE_SUB_CLUSTER_RPC_TEST_UTIL_H_
#define WEFT_FEDERATION_AMRMPROXY_FAKE_SUB_CLUSTER_RPC_TEST_UTIL_H_

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "federation/amrmproxy/amrm_proxy_state.h"
#include "federation/amrmproxy/sub_cluster_rpc.h"

namespace weft::amrmproxy::testing {

// Thread-safe; tests read an RM's records through Rm() between calls.
class FakeSubClusterRpc final : public SubClusterRpc {
 public:
  struct Rm {
    std::vector<v1::RegisterApplicationMasterRequest> registrations;
    std::vector<v1::AllocateRequest> allocates;  // the ones it applied
    std::vector<std::string> tokens_used;        // identifier of each AmService call's token
    std::vector<v1::FinishApplicationMasterRequest> finishes;
    std::vector<v1::ApplicationSubmissionContext> submissions;
    std::vector<std::string> users;  // of ClientService calls
    std::vector<std::string> kills;
    std::deque<v1::AllocateResponse> replies;  // the next replies (ids set by the fake)
    int fail_allocates = 0;                    // next calls fail Unavailable before being applied
    int lose_replies = 0;                      // next calls are applied, then answered Unavailable
    bool resync_next = false;
    int reports_without_token = 0;  // GetApplication reports before the UAM's token shows
    int32_t last_response_id = 0;
    v1::AllocateResponse last_reply;
    bool registered = false;
    int apps = 0;
    int new_applications = 0;  // NewApplication calls
    // GetApplication answers NotFound for an app never submitted here.
    bool reports_only_submitted = false;
    std::map<std::string, v1::ApplicationState> states;  // reported states (default ACCEPTED)
    // What a registration lists in containers_from_previous_attempts.
    std::vector<v1::Container> live_containers;
    std::vector<v1::NodeReport> nodes;
  };

  // The RM at `rm` (created on first use). The reference stays valid.
  Rm& rm(const std::string& address) {
    absl::MutexLock lock(&mu_);
    return rms_[address];
  }
  // Runs `fn` on the RM under the fake's lock (to change it while calls may run).
  template <typename Fn>
  void With(const std::string& address, Fn fn) {
    absl::MutexLock lock(&mu_);
    fn(rms_[address]);
  }

  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::RegisterApplicationMasterRequest& request) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.registrations.push_back(request);
    r.tokens_used.push_back(token.identifier());
    r.registered = true;
    r.last_response_id = 0;
    v1::RegisterApplicationMasterResponse response;
    response.set_queue("default");
    for (const v1::Container& c : r.live_containers) {
      *response.add_containers_from_previous_attempts() = c;
    }
    return response;
  }

  absl::StatusOr<v1::AllocateResponse> Allocate(const std::string& rm, const v1::Token& token,
                                                const v1::AllocateRequest& request) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.tokens_used.push_back(token.identifier());
    if (r.fail_allocates > 0) {
      --r.fail_allocates;
      return absl::UnavailableError(absl::StrCat("fake RM ", rm, " is down"));
    }
    if (r.resync_next) {
      r.resync_next = false;
      r.registered = false;
      v1::AllocateResponse resync;
      resync.set_am_command(v1::AM_RESYNC);
      return resync;
    }
    if (request.response_id() + 1 == r.last_response_id) return r.last_reply;
    if (request.response_id() != r.last_response_id || !r.registered) {
      v1::AllocateResponse resync;
      resync.set_am_command(v1::AM_RESYNC);
      return resync;
    }
    r.allocates.push_back(request);
    v1::AllocateResponse reply;
    if (!r.replies.empty()) {
      reply = r.replies.front();
      r.replies.pop_front();
    }
    reply.set_response_id(++r.last_response_id);
    r.last_reply = reply;
    if (r.lose_replies > 0) {
      --r.lose_replies;
      return absl::UnavailableError(absl::StrCat("fake RM ", rm, ": reply lost"));
    }
    return reply;
  }

  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::FinishApplicationMasterRequest& request) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.tokens_used.push_back(token.identifier());
    r.finishes.push_back(request);
    v1::FinishApplicationMasterResponse response;
    response.set_is_unregistered(true);
    return response;
  }

  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const std::string& rm,
                                                            const std::string& user) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.users.push_back(user);
    ++r.new_applications;
    v1::NewApplicationResponse response;
    response.set_application_id(absl::StrCat("application_", rm.size(), "_", ++r.apps));
    return response;
  }
  absl::Status SubmitApplication(const std::string& rm, const std::string& user,
                                 const v1::ApplicationSubmissionContext& context) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.users.push_back(user);
    for (const v1::ApplicationSubmissionContext& earlier : r.submissions) {
      if (earlier.application_id() == context.application_id()) {
        return absl::AlreadyExistsError(
            absl::StrCat("application ", context.application_id(), " was already submitted"));
      }
    }
    r.submissions.push_back(context);
    return absl::OkStatus();
  }
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& rm,
                                                       const std::string& user,
                                                       const std::string& application_id) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.users.push_back(user);
    const v1::ApplicationSubmissionContext* submitted = nullptr;
    for (const v1::ApplicationSubmissionContext& c : r.submissions) {
      if (c.application_id() == application_id) submitted = &c;
    }
    if (r.reports_only_submitted && submitted == nullptr) {
      return absl::NotFoundError(absl::StrCat("application ", application_id, " is unknown"));
    }
    v1::ApplicationReport report;
    report.set_application_id(application_id);
    report.set_name("the-app");
    report.set_unmanaged_am(submitted != nullptr && submitted->unmanaged_am());
    auto state = r.states.find(application_id);
    report.set_state(state == r.states.end() ? v1::APP_ACCEPTED : state->second);
    if (r.reports_without_token > 0) {
      --r.reports_without_token;
    } else {
      report.mutable_amrm_token()->set_identifier(absl::StrCat("uam-token@", rm));
    }
    return report;
  }
  absl::Status KillApplication(const std::string& rm, const std::string& user,
                               const std::string& application_id,
                               const std::string& /*diagnostics*/) override {
    absl::MutexLock lock(&mu_);
    Rm& r = rms_[rm];
    r.users.push_back(user);
    r.kills.push_back(application_id);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<v1::NodeReport>> ListNodes(const std::string& rm,
                                                        const std::string& /*user*/) override {
    absl::MutexLock lock(&mu_);
    return rms_[rm].nodes;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, Rm> rms_ ABSL_GUARDED_BY(mu_);
};

// The NM's state store as the proxy sees it, in memory (survives the proxies that use it).
class MemoryAmrmProxyStateStore final : public AmrmProxyStateStore {
 public:
  absl::Status PutAttempt(const AttemptState& state) override {
    absl::MutexLock lock(&mu_);
    ++writes_;
    attempts_[state.attempt.attempt_id] = state;
    return absl::OkStatus();
  }
  absl::Status RemoveAttempt(absl::string_view attempt_id) override {
    absl::MutexLock lock(&mu_);
    attempts_.erase(std::string(attempt_id));
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<AttemptState>> LoadAttempts() override {
    absl::MutexLock lock(&mu_);
    std::vector<AttemptState> out;
    for (const auto& [id, state] : attempts_) out.push_back(state);
    return out;
  }
  absl::StatusOr<std::optional<std::string>> GetTokenKey() override {
    absl::MutexLock lock(&mu_);
    return key_;
  }
  absl::Status SetTokenKey(absl::string_view key) override {
    absl::MutexLock lock(&mu_);
    key_ = std::string(key);
    return absl::OkStatus();
  }

  // The record of `attempt_id`, if any.
  std::optional<AttemptState> Get(const std::string& attempt_id) {
    absl::MutexLock lock(&mu_);
    auto it = attempts_.find(attempt_id);
    if (it == attempts_.end()) return std::nullopt;
    return it->second;
  }
  int writes() {
    absl::MutexLock lock(&mu_);
    return writes_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, AttemptState> attempts_ ABSL_GUARDED_BY(mu_);
  std::optional<std::string> key_ ABSL_GUARDED_BY(mu_);
  int writes_ ABSL_GUARDED_BY(mu_) = 0;
};

// A container as an RM allocates it, with a token naming its RM.
inline v1::Container MakeContainer(const std::string& id, const std::string& node,
                                   const std::string& rm, int32_t priority = 1) {
  v1::Container c;
  c.set_container_id(id);
  c.set_node_id(node);
  c.set_priority(priority);
  c.mutable_container_token()->set_identifier(absl::StrCat("container-token@", rm));
  return c;
}

inline v1::ResourceRequest MakeAsk(int32_t count, const std::string& name = "*",
                                   int64_t memory_mb = 1024, int32_t priority = 1) {
  v1::ResourceRequest ask;
  ask.set_priority(priority);
  ask.set_resource_name(name);
  ask.set_num_containers(count);
  ask.set_relax_locality(true);
  (*ask.mutable_capability()->mutable_values())["memory-mb"] = memory_mb;
  (*ask.mutable_capability()->mutable_values())["vcores"] = 1;
  return ask;
}

}  // namespace weft::amrmproxy::testing

#endif  // WEFT_FEDERATION_AMRMPROXY_FAKE_SUB_CLUSTER_RPC_TEST_UTIL_H_
