// Copyright Weft authors.
#include "federation/gpg/global_policy_generator.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "federation/policies/policy.h"
#include "federation/policies/registry.h"

namespace weft::federation {
namespace {

constexpr char kMemoryMb[] = "memory-mb";

int64_t AvailableMb(const v1::SubClusterInfo& sc) {
  auto it = sc.available().values().find(kMemoryMb);
  return it == sc.available().values().end() ? 0 : std::max<int64_t>(0, it->second);
}

bool IsFinalState(v1::ApplicationState s) {
  return s == v1::APP_FINISHED || s == v1::APP_FAILED || s == v1::APP_KILLED;
}

// Whether an RM call failed because the RM did not answer (as opposed to answering "no").
bool RmDidNotAnswer(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsUnavailable(s);
}

// Whether the policy's weights are proportions (the GPG sets them from headroom) rather than
// a ranking or a gate (the GPG only zeroes sub-clusters that must not be chosen).
bool RouterWeightsAreProportions(const std::string& policy) {
  return policy == "weighted-random" || policy == "locality";
}
bool AmrmWeightsAreProportions(const std::string& policy) { return policy == "locality-multicast"; }

// Gate weights: 0 where `proportional` says 0, otherwise the operator's own weight (1 when the
// map was empty, i.e. every sub-cluster weighed 1).
std::map<std::string, double> Gate(const google::protobuf::Map<std::string, double>& current,
                                   const std::map<std::string, double>& proportional) {
  std::map<std::string, double> out;
  for (const auto& [id, w] : proportional) {
    if (w <= 0) {
      out[id] = 0;
    } else if (current.empty()) {
      out[id] = 1;
    } else {
      auto it = current.find(id);
      out[id] = it == current.end() ? 0 : it->second;
    }
  }
  return out;
}

// Proportional weights from the operator's and the headroom: headroom[id] x the operator's
// weight of id (1 for all when the operator gave none, 0 for an id the operator left out),
// normalised to sum 1 (all 0 when nothing is usable).
std::map<std::string, double> Combine(const google::protobuf::Map<std::string, double>& operator_w,
                                      const std::map<std::string, double>& headroom) {
  std::map<std::string, double> out;
  double sum = 0;
  for (const auto& [id, h] : headroom) {
    double w = 1;
    if (!operator_w.empty()) {
      auto it = operator_w.find(id);
      w = it == operator_w.end() ? 0 : it->second;
    }
    out[id] = h > 0 ? h * w : 0;
    sum += out[id];
  }
  if (sum > 0)
    for (auto& [id, w] : out) w /= sum;
  return out;
}

// Copies an operator's weights from a record written before operator weights existed (its
// published ones, when an operator published it), so that they survive this round.
bool AdoptOperatorWeights(v1::SubClusterPolicyConfiguration& config) {
  if (absl::StartsWith(config.published_by(), "gpg/") ||
      !config.operator_router_weights().empty() || !config.operator_amrm_weights().empty())
    return false;
  if (config.router_weights().empty() && config.amrm_weights().empty()) return false;
  *config.mutable_operator_router_weights() = config.router_weights();
  *config.mutable_operator_amrm_weights() = config.amrm_weights();
  return true;
}

bool Differs(const google::protobuf::Map<std::string, double>& current,
             const std::map<std::string, double>& next, double threshold) {
  if (static_cast<size_t>(current.size()) != next.size()) return true;
  for (const auto& [id, w] : next) {
    auto it = current.find(id);
    if (it == current.end() || std::fabs(it->second - w) > threshold) return true;
  }
  return false;
}

void Assign(google::protobuf::Map<std::string, double>* to,
            const std::map<std::string, double>& w) {
  to->clear();
  for (const auto& [id, v] : w) (*to)[id] = v;
}

}  // namespace

std::map<std::string, double> HeadroomWeights(const std::vector<v1::SubClusterInfo>& members,
                                              int64_t now_ms, int64_t expiry_ms,
                                              const std::set<std::string>& drained) {
  std::map<std::string, double> weights;
  int64_t total_mb = 0;
  int usable = 0;
  for (const v1::SubClusterInfo& sc : members) {
    weights[sc.sub_cluster_id()] = 0;
    if (!IsSubClusterUsable(sc, now_ms, expiry_ms) || drained.contains(sc.sub_cluster_id()))
      continue;
    ++usable;
    total_mb += AvailableMb(sc);
  }
  if (usable == 0) return weights;
  for (const v1::SubClusterInfo& sc : members) {
    if (!IsSubClusterUsable(sc, now_ms, expiry_ms) || drained.contains(sc.sub_cluster_id()))
      continue;
    weights[sc.sub_cluster_id()] =
        total_mb > 0 ? static_cast<double>(AvailableMb(sc)) / total_mb : 1.0 / usable;
  }
  return weights;
}

GlobalPolicyGenerator::GlobalPolicyGenerator(GpgOptions options, FederationStateStore* store,
                                             SubClusterRms* rms)
    : options_(std::move(options)), store_(store), rms_(rms), rng_(options_.seed) {}

GpgRound GlobalPolicyGenerator::RunOnce(int64_t now_ms) {
  GpgRound round;
  absl::StatusOr<std::vector<v1::SubClusterInfo>> members = store_->GetSubClusters(false);
  if (!members.ok()) {
    round.errors.push_back(absl::StrCat("reading membership: ", members.status().message()));
    return round;
  }
  MarkLost(*members, now_ms, round);
  PublishWeights(*members, now_ms, round);
  SweepApplications(*members, now_ms, round);
  // Ids issued and never submitted within the routers' TTL (a client that died in between).
  absl::StatusOr<int> issued =
      store_->DeleteIssuedApplicationIdsBefore(now_ms - options_.issued_id_ttl_ms);
  if (issued.ok()) {
    round.issued_ids_removed = *issued;
  } else {
    round.errors.push_back(
        absl::StrCat("removing expired issued application ids: ", issued.status().message()));
  }
  return round;
}

void GlobalPolicyGenerator::MarkLost(std::vector<v1::SubClusterInfo>& members, int64_t now_ms,
                                     GpgRound& round) {
  for (v1::SubClusterInfo& sc : members) {
    switch (sc.state()) {
      case v1::SC_NEW:
      case v1::SC_RUNNING:
      case v1::SC_UNHEALTHY:
      case v1::SC_DECOMMISSIONING:
        break;
      default:
        continue;  // already out of the federation
    }
    const int64_t heard = std::max(sc.last_heartbeat_ms(), sc.last_start_ms());
    if (now_ms - heard <= options_.membership_expiry_ms) continue;
    if (absl::Status s = store_->DeregisterSubCluster(sc.sub_cluster_id(), v1::SC_LOST); !s.ok()) {
      round.errors.push_back(
          absl::StrCat("marking sub-cluster ", sc.sub_cluster_id(), " LOST: ", s.message()));
      continue;
    }
    log::Warn("sub_cluster_lost", {{"sub_cluster", sc.sub_cluster_id()},
                                   {"silent_ms", std::to_string(now_ms - heard)}});
    sc.set_state(v1::SC_LOST);
    round.marked_lost.push_back(sc.sub_cluster_id());
  }
}

void GlobalPolicyGenerator::PublishWeights(const std::vector<v1::SubClusterInfo>& members,
                                           int64_t now_ms, GpgRound& round) {
  round.weights = HeadroomWeights(members, now_ms, options_.membership_expiry_ms, options_.drained);
  if (members.empty()) return;
  absl::StatusOr<std::vector<v1::SubClusterPolicyConfiguration>> configs =
      store_->GetPoliciesConfigurations();
  if (!configs.ok()) {
    round.errors.push_back(absl::StrCat("reading policies: ", configs.status().message()));
    return;
  }
  if (configs->empty()) {
    v1::SubClusterPolicyConfiguration all;
    all.set_queue("*");
    all.set_router_policy(options_.default_router_policy);
    all.set_amrm_policy(options_.default_amrm_policy);
    all.set_headroom_alpha(1.0);
    configs->push_back(std::move(all));
  }
  for (v1::SubClusterPolicyConfiguration& config : *configs) {
    // Published weights come from the operator's and the headroom, never from the last
    // publication: the operator's ranking survives every round, and a sub-cluster that was
    // LOST gets its weight back when it returns.
    const bool adopted = AdoptOperatorWeights(config);
    const std::map<std::string, double> router =
        RouterWeightsAreProportions(config.router_policy())
            ? Combine(config.operator_router_weights(), round.weights)
            : Gate(config.operator_router_weights(), round.weights);
    const std::map<std::string, double> amrm =
        AmrmWeightsAreProportions(config.amrm_policy())
            ? Combine(config.operator_amrm_weights(), round.weights)
            : Gate(config.operator_amrm_weights(), round.weights);
    if (!adopted && !Differs(config.router_weights(), router, options_.weight_change_threshold) &&
        !Differs(config.amrm_weights(), amrm, options_.weight_change_threshold))
      continue;
    Assign(config.mutable_router_weights(), router);
    Assign(config.mutable_amrm_weights(), amrm);
    config.set_published_ms(now_ms);
    config.set_published_by(absl::StrCat("gpg/", options_.gpg_id));
    // Over the generation read (compare-and-set): an operator's write in between wins, and
    // the next round starts from it.
    if (absl::Status s = store_->SetPolicyConfiguration(config); !s.ok()) {
      round.errors.push_back(
          absl::StrCat("publishing the policy of queue ", config.queue(), ": ", s.message()));
      continue;
    }
    ++round.policies_published;
  }
}

v1::SubClusterPolicyConfiguration GlobalPolicyGenerator::PolicyFor(const std::string& queue) {
  absl::StatusOr<v1::SubClusterPolicyConfiguration> own = store_->GetPolicyConfiguration(queue);
  if (own.ok()) return *std::move(own);
  absl::StatusOr<v1::SubClusterPolicyConfiguration> all = store_->GetPolicyConfiguration("*");
  if (all.ok()) return *std::move(all);
  return DefaultPolicyConfiguration();
}

bool GlobalPolicyGenerator::MustBeResubmitted(const v1::ApplicationHomeSubCluster& home) {
  if (home.generation() <= 1 || home.finished_ms() > 0 || !home.has_submission_context())
    return false;
  return PolicyFor(home.queue()).resubmit_on_sub_cluster_loss();
}

absl::StatusOr<v1::ApplicationReport> GlobalPolicyGenerator::AskRm(
    const v1::SubClusterInfo& sc, const v1::ApplicationHomeSubCluster& home,
    std::set<std::string>& unresponsive, GpgRound& round) {
  if (unresponsive.contains(sc.sub_cluster_id())) {
    return absl::UnavailableError(absl::StrCat("sub-cluster ", sc.sub_cluster_id(),
                                               " did not answer earlier this round"));
  }
  absl::StatusOr<v1::ApplicationReport> report =
      rms_->GetApplication(sc, home.user(), home.application_id());
  if (!report.ok() && RmDidNotAnswer(report.status())) {
    unresponsive.insert(sc.sub_cluster_id());
    round.errors.push_back(absl::StrCat("asking ", sc.sub_cluster_id(), " about ",
                                        home.application_id(), ": ", report.status().message(),
                                        " (its RM is not asked again until the next round)"));
  }
  return report;
}

absl::Status GlobalPolicyGenerator::Submit(const v1::SubClusterInfo& target,
                                           const v1::ApplicationHomeSubCluster& home,
                                           GpgRound& round) {
  absl::Status s = rms_->SubmitApplication(target, home.user(), home.submission_context());
  if (s.ok() || absl::IsAlreadyExists(s)) return absl::OkStatus();  // there already
  round.errors.push_back(absl::StrCat("submitting ", home.application_id(), " to its new home ",
                                      target.sub_cluster_id(),
                                      " (retried next round): ", s.message()));
  return s;
}

void GlobalPolicyGenerator::SweepApplications(const std::vector<v1::SubClusterInfo>& members,
                                              int64_t now_ms, GpgRound& round) {
  absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>> homes =
      store_->GetApplicationsHomeSubCluster("");
  if (!homes.ok()) {
    round.errors.push_back(absl::StrCat("reading application homes: ", homes.status().message()));
    return;
  }
  std::map<std::string, const v1::SubClusterInfo*> by_id;
  std::vector<v1::SubClusterInfo> usable;  // ordered by id, as the store returns them
  for (const v1::SubClusterInfo& sc : members) {
    by_id[sc.sub_cluster_id()] = &sc;
    if (IsSubClusterUsable(sc, now_ms, options_.membership_expiry_ms) &&
        !options_.drained.contains(sc.sub_cluster_id()))
      usable.push_back(sc);
  }
  // Sub-clusters whose RM did not answer (deadline, unavailable) this round: not asked again
  // until the next one, so that a silent sub-cluster that is not yet past the expiry costs one
  // RM deadline per round rather than one per app homed there (and MarkLost is not delayed).
  std::set<std::string> unresponsive;
  for (v1::ApplicationHomeSubCluster& home : *homes) {
    const std::string& app = home.application_id();
    auto it = by_id.find(home.home_sub_cluster_id());
    const bool lost = it == by_id.end() || it->second->state() == v1::SC_LOST ||
                      it->second->state() == v1::SC_UNREGISTERED ||
                      it->second->state() == v1::SC_DECOMMISSIONED;
    if (home.finished_ms() > 0) {
      // Seen ended at its home: never resubmitted (even when that home is lost since), not
      // asked about again, and removed once the retention has passed.
      if (now_ms - home.finished_ms() > options_.finished_app_retention_ms) {
        if (absl::Status s = store_->DeleteApplicationHomeSubCluster(app); !s.ok()) {
          round.errors.push_back(absl::StrCat("removing the home of ", app, ": ", s.message()));
          continue;
        }
        ++round.mappings_removed;
      }
      continue;
    }
    if (lost) {
      const v1::SubClusterPolicyConfiguration policy = PolicyFor(home.queue());
      if (!policy.resubmit_on_sub_cluster_loss() || !home.has_submission_context() ||
          usable.empty())
        continue;
      absl::StatusOr<std::unique_ptr<RouterPolicy>> router =
          MakeRouterPolicy(policy.router_policy());
      if (!router.ok()) {
        round.errors.push_back(absl::StrCat("resubmitting ", app, ": ", router.status().message()));
        continue;
      }
      PolicyContext ctx;
      ctx.config = &policy;
      ctx.active = usable;
      ctx.rng = &rng_;
      // A sub-cluster whose RM holds the app's id already (the unmanaged AM of the old copy
      // there, under the home app's id) cannot take it: it is excluded and another chosen.
      std::vector<std::string> exclude = {home.home_sub_cluster_id()};
      const v1::SubClusterInfo* target = nullptr;
      absl::Status chosen;
      while (target == nullptr && exclude.size() <= usable.size()) {
        absl::StatusOr<std::string> next =
            (*router)->ChooseHome(home.submission_context(), ctx, exclude);
        if (!next.ok()) {
          chosen = next.status();
          break;
        }
        const v1::SubClusterInfo* candidate = nullptr;
        for (const v1::SubClusterInfo& sc : usable)
          if (sc.sub_cluster_id() == *next) candidate = &sc;
        if (candidate == nullptr) break;  // a policy bug; the conformance suite rules it out
        // One whose RM did not answer this round is not chosen either: it is retried next
        // round rather than moved to an RM that may be going silent.
        if (AskRm(*candidate, home, unresponsive, round).ok() ||
            unresponsive.contains(*next)) {
          exclude.push_back(*next);
          continue;
        }
        target = candidate;
      }
      if (target == nullptr) {
        round.errors.push_back(absl::StrCat(
            "resubmitting ", app, ": ",
            chosen.ok() ? "no usable sub-cluster that answered and lacks the app's id"
                        : chosen.message()));
        continue;
      }
      const std::string* next = &target->sub_cluster_id();
      // The home moves first, by compare-and-set over the generation read: of every writer
      // that saw it homed in the lost sub-cluster (other GPGs, CAS-won routers) exactly one
      // moves it, and only that one submits it. A submission that fails after the move is
      // retried next round, when the home record names where the app must run.
      const std::string from = home.home_sub_cluster_id();
      v1::ApplicationHomeSubCluster moved = home;
      moved.set_home_sub_cluster_id(*next);
      if (absl::Status s = store_->UpdateApplicationHomeSubCluster(moved); !s.ok()) {
        if (absl::IsAborted(s)) {
          // Another writer moved it since it was read: that writer submits it, not this one.
          log::Info("app_move_lost_race",
                    {{"app", app}, {"from", from}, {"generation", home.generation()}});
          round.moves_lost.push_back(app);
        } else {
          round.errors.push_back(absl::StrCat("moving the home of ", app, " from ", from, " to ",
                                              *next, ": ", s.message()));
        }
        continue;
      }
      log::Warn("app_home_moved", {{"app", app}, {"from", from}, {"to", *next}});
      if (absl::Status s = Submit(*target, home, round); !s.ok()) continue;
      log::Warn("app_resubmitted", {{"app", app}, {"from", from}, {"to", *next}});
      round.resubmitted.push_back(absl::StrCat(app, " -> ", *next));
      continue;
    }
    // A home silent past the expiry (MarkLost's next round) or that did not answer earlier
    // this round is not asked.
    if (!IsSubClusterUsable(*it->second, now_ms, options_.membership_expiry_ms) ||
        unresponsive.contains(home.home_sub_cluster_id()))
      continue;
    absl::StatusOr<v1::ApplicationReport> report =
        AskRm(*it->second, home, unresponsive, round);
    bool remove = false;
    if (report.ok()) {
      if (!IsFinalState(report->state())) continue;
      remove = report->finish_time_ms() > 0 &&
               now_ms - report->finish_time_ms() > options_.finished_app_retention_ms;
      if (!remove) {
        // Ended here: the record says so (over the generation read), so that the app is not
        // resubmitted if this sub-cluster is lost during the retention.
        v1::ApplicationHomeSubCluster ended = home;
        ended.set_finished_ms(now_ms);
        if (absl::Status s = store_->UpdateApplicationHomeSubCluster(ended); !s.ok()) {
          if (!absl::IsAborted(s))  // Aborted: another writer moved it; next round reads it
            round.errors.push_back(
                absl::StrCat("marking ", app, " ended in its home record: ", s.message()));
        }
        continue;
      }
    } else if (report.status().code() == absl::StatusCode::kNotFound) {
      if (MustBeResubmitted(home)) {
        // Moved here from a lost home and not submitted yet (the submission failed after the
        // move, or its mover died in between): the home record says it runs here.
        if (Submit(*it->second, home, round).ok()) {
          log::Warn("app_resubmitted",
                    {{"app", app}, {"to", home.home_sub_cluster_id()}, {"retry", "true"}});
          round.resubmitted.push_back(absl::StrCat(app, " -> ", home.home_sub_cluster_id()));
        }
        continue;
      }
      // Never submitted (its router died between the mapping and the forward) or forgotten by
      // its RM: kept for the retention time, as an ended app.
      remove = now_ms - home.create_time_ms() > options_.finished_app_retention_ms;
    } else if (!RmDidNotAnswer(report.status())) {  // AskRm reported those
      round.errors.push_back(absl::StrCat("asking ", home.home_sub_cluster_id(), " about ", app,
                                          ": ", report.status().message()));
    }
    if (!remove) continue;
    if (absl::Status s = store_->DeleteApplicationHomeSubCluster(app); !s.ok()) {
      round.errors.push_back(absl::StrCat("removing the home of ", app, ": ", s.message()));
      continue;
    }
    ++round.mappings_removed;
  }
}

}  // namespace weft::federation
