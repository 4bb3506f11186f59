// Copyright Weft authors. The last step of the AMRMProxy in a federation (YARN's
// FederationInterceptor, seed 004 steps 8-11): the AM sees one RM; behind it the interceptor
// registers with the home RM, splits the AM's asks across sub-clusters with the queue's AMRM
// policy, runs an unmanaged AM in each secondary sub-cluster it uses, and merges every
// sub-cluster's replies into one.
#ifndef WEFT_FEDERATION_AMRMPROXY_FEDERATION_INTERCEPTOR_H_
#define WEFT_FEDERATION_AMRMPROXY_FEDERATION_INTERCEPTOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "federation/amrmproxy/federation_view.h"
#include "federation/amrmproxy/interceptor.h"
#include "federation/amrmproxy/unmanaged_am_pool.h"
#include "federation/policies/policy.h"

namespace weft::amrmproxy {

// Contract toward the AM: AmService's, as an RM gives it.
// - Register registers with the home RM (again after a resync: the home's reply, with its
//   containers_from_previous_attempts, is the AM's). The response_id sequence toward the AM is
//   the interceptor's own: a call with the last reply's id is a new call, one with the id
//   before it gets the last reply again (a lost reply is safe to retry), any other AM_RESYNC.
// - Allocate merges the asks (absolute counts) into the attempt's table; splits the asks of
//   this call (as YARN does: a count the AM did not state again is not split again) with the
//   AMRM policy of the app's queue (store: the queue's
//   configuration, else "*", else DefaultPolicyConfiguration) over the usable sub-clusters;
//   sends each sub-cluster only what changed for it (count 0 cancels what moved away); routes
//   each release to the sub-cluster that allocated the container (unknown ones to the home);
//   sends blacklist changes to every sub-cluster called. The first time a secondary gets asks
//   it launches an unmanaged AM there (UnmanagedAmPool). Secondaries are called in parallel
//   with the home; a secondary that fails is skipped for this heartbeat (logged, its changes
//   kept for the next one); the home's failure is the AM's failure.
// - The reply merges every sub-cluster's: allocated containers (each with its own
//   sub-cluster's container token), completed statuses, updated nodes, containers from
//   previous attempts, preemption (lists joined, negotiable resources summed, the earliest
//   deadline), headroom and node counts summed, diagnostics (a secondary's prefixed with its
//   id). AM_SHUTDOWN from the home is passed on; rolled tokens are kept here.
// - Toward each RM the interceptor is an AM client: its own response_id per RM; a call whose
//   reply was lost is sent again unchanged before anything new; an RM's AM_RESYNC (it
//   restarted) makes it register again and send that RM its whole share of the table.
// - UAMs run under the home app's id (UnmanagedAmPool) and outlive the attempt (seed 004 8a):
//   a registration of an attempt after the first looks for the app in every other usable
//   sub-cluster (GetApplication as the user) and re-attaches to the unmanaged AM it finds
//   there instead of submitting another; a re-attached UAM's live containers reach the AM in
//   the registration's containers_from_previous_attempts.
// - Finish unregisters every UAM (in parallel), then the home; the home's answer is the AM's.
//   Shutdown(kApplicationEnded) kills the UAMs not finished. Shutdown(kAttemptEnded) kills
//   them only when the home RM says the app is over; otherwise they are kept for the app's
//   next attempt (the record says so, until the app is cleaned up here).
// - With a state store (InterceptorEnvironment::state_store) the interceptor writes what it
//   needs to go on after an NM restart (AttemptState: the home's token, the registration, the
//   UAMs with their tokens) whenever that changes; Recover takes it up: the AM is told
//   AM_RESYNC, and its registration registers again with the home and every UAM, whose
//   containers_from_previous_attempts rebuild which sub-cluster holds which container.
// - Without a usable view of the federation (store unreadable and never read) or when the
//   policy fails, every ask goes to the home (logged): federation degrades to no federation.
class FederationInterceptor final : public RequestInterceptor {
 public:
  FederationInterceptor(const AttemptContext& attempt, const InterceptorEnvironment& env);
  ~FederationInterceptor() override;

  absl::string_view name() const override { return "federation"; }
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::RegisterApplicationMasterRequest& request) override;
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::AllocateRequest& request) override;
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::FinishApplicationMasterRequest& request) override;
  void Shutdown(AttemptEnd why) override;
  void Recover(const AttemptState& state) override;

  // What the state store would hold now.
  AttemptState State() const;

  // For tests: the UAMs, and the sub-cluster of each container the AM holds.
  const UnmanagedAmPool& uam_pool() const { return uams_; }
  const std::map<std::string, std::string>& container_sub_clusters() const {
    return container_sub_cluster_;
  }

 private:
  // The interceptor as one RM's AM client.
  struct Session {
    std::string sub_cluster_id;
    std::string rm;
    bool home = false;
    UnmanagedAm* uam = nullptr;  // secondaries
    v1::Token* token = nullptr;  // the home's token, or the UAM's
    int32_t last_response_id = 0;
    std::optional<v1::AllocateRequest> unanswered;            // sent, reply not received
    std::map<std::string, v1::ResourceRequest> sent;          // what this RM was told, by AskKey
    std::map<std::string, v1::ResourceRequest> pending_asks;  // changes not yet sent
    std::vector<std::string> releases;
    std::vector<std::string> blacklist_additions;
    std::vector<std::string> blacklist_removals;
    std::optional<v1::Resource> headroom;  // as of its RM's latest reply
    int32_t num_nodes = 0;                 // likewise
    bool shut_down = false;                // a secondary's RM said AM_SHUTDOWN: not called again
    int64_t failing_since_ms = 0;          // first of the current run of failed heartbeats
    bool lost = false;                     // dropped (DropSecondary): no asks, no calls
    // A UAM that exists already (recovered, or of an earlier attempt): registered again at
    // the AM's registration, asks or not.
    bool reattach = false;
    bool changed = false;  // something the state store keeps changed (token, launch)
  };
  // What one heartbeat of one session brought back.
  struct Outcome {
    absl::Status status;
    std::vector<v1::AllocateResponse> replies;
  };

  Session& SessionFor(const std::string& sub_cluster_id, const std::string& rm);
  // The share of each sub-cluster id of `asks` (outstanding, count > 0), by the policy.
  std::map<std::string, std::map<std::string, v1::ResourceRequest>> Split(
      const std::vector<v1::ResourceRequest>& asks);
  // One heartbeat of one session: launches its UAM when needed, re-sends an unanswered call,
  // then sends its pending changes. Touches only `session` and its UAM (runs in parallel with
  // other sessions).
  // `wait_ms` > 0: its new call is a long poll (AllocateRequest.wait_ms).
  Outcome Heartbeat(Session& session, float progress, int64_t wait_ms = 0);
  absl::StatusOr<v1::AllocateResponse> Call(Session& session, const v1::AllocateRequest& request);
  // Registers `session` again after its RM's AM_RESYNC.
  absl::StatusOr<v1::RegisterApplicationMasterResponse> Reregister(Session& session);
  // Also keeps session.sent what its RM's table now holds: each container it allocated takes
  // one from the asks it answers, as the RM does (so that a later statement of the same count
  // is seen as a change and sent).
  void Merge(Session& session, const v1::AllocateResponse& reply, v1::AllocateResponse* merged);
  // Drops a secondary that failed for longer than the timeout or shut the UAM down: each of
  // the AM's containers there reaches the AM (in carry_) as completed with LOST_NODE, the
  // sub-cluster gets no asks any more, and what it still held of the AM's asks is split again
  // over the others (RerouteAsks).
  void DropSecondary(Session& session, const std::string& why);
  // Adds `asks` (outstanding counts a dropped secondary held) to the shares of the sessions the
  // policy splits them over now, sent with their next heartbeat: the AM states an ask's
  // absolute count only when it changes, so a share left with a dropped sub-cluster would never
  // be allocated. Not under a policy that copies every ask to every sub-cluster (broadcast):
  // the others hold it already.
  void RerouteAsks(const std::vector<v1::ResourceRequest>& asks);
  // For an attempt after the first: the app's UAMs in other usable sub-clusters (their RMs
  // report the app, unmanaged and not ended) become sessions to re-attach.
  void FindUamsOfEarlierAttempts();
  // Registers again, in parallel, every UAM to re-attach; their live containers are added to
  // `response` and to container_sub_cluster_. A failure is logged and tried again with the
  // next heartbeat that has asks for it.
  void Reattach(v1::RegisterApplicationMasterResponse* response);
  // Writes State() to the state store (errors logged), if there is one.
  void Persist();

  const AttemptContext attempt_;
  const InterceptorEnvironment env_;
  std::mt19937_64 rng_;
  v1::Token home_token_;
  UnmanagedAmPool uams_;
  std::map<std::string, Session> sessions_;  // by sub-cluster id; the home's first created
  std::string home_id_;
  std::map<std::string, std::unique_ptr<federation::AmrmPolicy>> policies_;  // by name
  std::string split_policy_;  // the policy of the last Split ("" when it sent all home)

  bool registered_ = false;
  bool finished_ = false;
  bool looked_for_uams_ = false;  // FindUamsOfEarlierAttempts ran (or was not needed)
  bool ended_ = false;  // Shutdown(kAttemptEnded) kept the UAMs for the next attempt
  v1::RegisterApplicationMasterRequest registration_;  // the AM's, for UAMs and resyncs
  std::string queue_;
  std::string app_name_;
  // The AM's asks (absolute counts, as last stated), by AskKey.
  std::map<std::string, v1::ResourceRequest> asks_;
  std::map<std::string, std::string> container_sub_cluster_;  // container id -> sub-cluster
  int32_t last_response_id_ = 0;
  std::optional<v1::AllocateResponse> last_response_;
  // Secondaries' replies not yet delivered (the home failed that heartbeat).
  v1::AllocateResponse carry_;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_FEDERATION_INTERCEPTOR_H_
