// Copyright Weft authors. The Global Policy Generator (seed 004; YARN's GPG): out of band, it
// reads the federation's membership and load from the state store and
//   - marks LOST the sub-clusters that stopped heartbeating for longer than the expiry;
//   - republishes every queue's router and AMRMProxy weights in proportion to each usable
//     sub-cluster's headroom, with weight 0 for sub-clusters drained for maintenance (no new
//     homes, no new secondary asks) and for unusable ones;
//   - resubmits apps homed in a LOST sub-cluster to another one when their queue's policy says
//     so (resubmit_on_sub_cluster_loss: the seed's "external mechanism", made a policy). The
//     home moves first, by compare-and-set over the generation read, and only the writer that
//     moved it submits it (never to a sub-cluster whose RM holds the app's id already, e.g. the
//     old copy's unmanaged AM); a submission that fails is retried in later rounds while the new
//     home's RM does not know the app. The lost RM learns at its next heartbeat that the app
//     lives elsewhere and kills its copy (sub_cluster_heartbeater.h); its NMs have killed their
//     containers before the loss threshold (`weft nm --federation-fence-ms`), so the two
//     copies never run at once;
//   - marks the home records of apps it sees ended (finished_ms, by compare-and-set), so that
//     an ended app is never resubmitted when its home is lost later;
//   - removes the home mappings of apps that ended longer ago than a retention time.
// The cluster does not depend on it: routers and AMRMProxies keep using the last policies it
// published (docs/federation.md). Pure over its two injected dependencies and the time it is
// given; `weft gpg` drives RunOnce() on a timer.
#ifndef WEFT_FEDERATION_GPG_GLOBAL_POLICY_GENERATOR_H_
#define WEFT_FEDERATION_GPG_GLOBAL_POLICY_GENERATOR_H_

#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "federation/store/federation_store.h"
#include "weft/v1/common.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

// What the GPG asks of sub-cluster RMs: gRPC with the GPG's certificate in `weft gpg`
// (rm_clients.h), fakes in tests. Called from RunOnce()'s thread only.
class SubClusterRms {
 public:
  virtual ~SubClusterRms() = default;
  // The app's report from `sc`'s RM, asked as `user`. NotFound when that RM does not know the
  // app; Unavailable when it cannot be reached.
  virtual absl::StatusOr<v1::ApplicationReport> GetApplication(const v1::SubClusterInfo& sc,
                                                               const std::string& user,
                                                               const std::string& app_id) = 0;
  // Submits `context` (its application id kept) to `sc`'s RM as `user`.
  virtual absl::Status SubmitApplication(const v1::SubClusterInfo& sc, const std::string& user,
                                         const v1::ApplicationSubmissionContext& context) = 0;
};

struct GpgOptions {
  std::string gpg_id = "gpg";               // published_by "gpg/<id>"
  int64_t membership_expiry_ms = 30000;     // silent this long: LOST (IsSubClusterUsable)
  std::set<std::string> drained;            // sub-cluster ids under maintenance
  int64_t finished_app_retention_ms = 600000;  // an ended app's mapping is kept this long
  // Application ids the routers issued and nobody submitted are forgotten this long after
  // their issue: the routers' issued-id TTL (RouterOptions::issued_id_ttl_ms), ms.
  int64_t issued_id_ttl_ms = 3600 * 1000;
  // The policies written for "*" when the store has no configuration at all.
  std::string default_router_policy = "weighted-random";
  std::string default_amrm_policy = "locality-multicast";
  // A configuration is rewritten only when one of its weights moves by more than this (or a
  // sub-cluster appears or goes), so that an idle federation is not rewritten every round.
  double weight_change_threshold = 0.02;
  uint64_t seed = 1;  // the router policy's randomness when resubmitting
};

// What one round did (logs, metrics, tests).
struct GpgRound {
  std::vector<std::string> marked_lost;          // sub-cluster ids
  std::map<std::string, double> weights;          // as computed this round
  int policies_published = 0;
  std::vector<std::string> resubmitted;          // "<app> -> <sub-cluster>"
  // Apps of a lost home another writer moved between this round's read and its
  // compare-and-set: left to that writer (not submitted by this GPG).
  std::vector<std::string> moves_lost;
  int mappings_removed = 0;
  int issued_ids_removed = 0;  // issued, never submitted, past issued_id_ttl_ms
  std::vector<std::string> errors;               // one line each; the round carries on
};

// Weights in proportion to each sub-cluster's headroom (available memory-mb) among those that
// are usable at `now_ms` and not drained, summing to 1; 0 for every other one (each member
// has an entry). Usable ones that all have no headroom share equally. All 0 when none is
// usable.
std::map<std::string, double> HeadroomWeights(const std::vector<v1::SubClusterInfo>& members,
                                              int64_t now_ms, int64_t expiry_ms,
                                              const std::set<std::string>& drained);

class GlobalPolicyGenerator {
 public:
  // `store` and `rms` are not owned and must outlive the generator.
  GlobalPolicyGenerator(GpgOptions options, FederationStateStore* store, SubClusterRms* rms);

  // One round at `now_ms` (ms since the Unix epoch). Store or RM errors are reported in the
  // round's errors and retried the next round; they never stop it.
  GpgRound RunOnce(int64_t now_ms);

  const GpgOptions& options() const { return options_; }

 private:
  void MarkLost(std::vector<v1::SubClusterInfo>& members, int64_t now_ms, GpgRound& round);
  void PublishWeights(const std::vector<v1::SubClusterInfo>& members, int64_t now_ms,
                      GpgRound& round);
  void SweepApplications(const std::vector<v1::SubClusterInfo>& members, int64_t now_ms,
                         GpgRound& round);
  // Asks `sc`'s RM about `app` unless that RM failed with DEADLINE_EXCEEDED or UNAVAILABLE
  // earlier this round (its id in `unresponsive`): then Unavailable without a call, so that a
  // silent sub-cluster costs one RM deadline per round, not one per app homed there. A call
  // that fails so adds `sc` to `unresponsive` and one line to the round's errors.
  absl::StatusOr<v1::ApplicationReport> AskRm(const v1::SubClusterInfo& sc,
                                              const v1::ApplicationHomeSubCluster& home,
                                              std::set<std::string>& unresponsive,
                                              GpgRound& round);
  // Submits `home`'s app, as its user, to `target` (its new home): OK when the RM took it or
  // had it already; otherwise the error, also added to the round's errors.
  absl::Status Submit(const v1::SubClusterInfo& target, const v1::ApplicationHomeSubCluster& home,
                      GpgRound& round);
  // Whether an app its home's RM does not know must be submitted there: its home was moved
  // (generation > 1), it is not known to have ended (finished_ms 0) and its queue's policy
  // resubmits on loss, with a submission context.
  bool MustBeResubmitted(const v1::ApplicationHomeSubCluster& home);
  // The queue's configuration, else "*", else DefaultPolicyConfiguration().
  v1::SubClusterPolicyConfiguration PolicyFor(const std::string& queue);

  GpgOptions options_;
  FederationStateStore* store_;
  SubClusterRms* rms_;
  std::mt19937_64 rng_;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_GPG_GLOBAL_POLICY_GENERATOR_H_
