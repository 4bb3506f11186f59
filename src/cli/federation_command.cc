// Copyright Weft authors.
#include "cli/federation_command.h"

#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "common/log.h"
#include "common/terminal_text.h"
#include "federation/store/federation_store.h"
#include "google/protobuf/util/json_util.h"

namespace weft::cli {
namespace {

struct FederationFlags {
  std::string store_uri;
  bool json = false;
  int64_t expiry_ms = 30000;
  // policy set
  std::string queue = "*";
  std::string router_policy;
  std::string amrm_policy;
  std::string router_weights;
  std::string amrm_weights;
  double headroom_alpha = -1;  // -1: keep (or 0 for a new queue)
  std::string resubmit;        // "", "true" or "false"
  std::string home_filter;
  std::string sub_cluster;  // subcluster deregister
  std::string state = "SC_UNREGISTERED";
};

absl::StatusOr<std::unique_ptr<federation::FederationStateStore>> Open(const FederationFlags& f) {
  auto store = federation::OpenFederationStore(f.store_uri);
  if (!store.ok())
    return absl::Status(store.status().code(),
                        absl::StrCat("--federation-store: ", store.status().message()));
  return store;
}

std::string Json(const google::protobuf::Message& m) {
  std::string out;
  google::protobuf::util::JsonPrintOptions o;
  o.add_whitespace = false;
  o.preserve_proto_field_names = true;
  // Only a message with a field JSON cannot express fails; it prints as what was written.
  if (auto s = google::protobuf::util::MessageToJsonString(m, &out, o); !s.ok())
    log::Warn("json_print_failed", {{"message", m.GetTypeName()}, {"error", s.ToString()}});
  return out;
}

std::string Mb(const v1::Resource& r) {
  auto it = r.values().find("memory-mb");
  auto vc = r.values().find("vcores");
  return absl::StrCat(it == r.values().end() ? 0 : it->second, " MB/",
                      vc == r.values().end() ? 0 : vc->second, " vc");
}

// "sc1=2,sc2=0.5" into `out`. InvalidArgument naming `flag` and the bad item.
absl::Status ParseWeights(const std::string& text, const char* flag,
                          google::protobuf::Map<std::string, double>* out) {
  out->clear();
  if (text == "-") return absl::OkStatus();  // "-": no weights (every sub-cluster weighs 1)
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    double w = 0;
    if (kv.second.empty() || !absl::SimpleAtod(kv.second, &w) || !std::isfinite(w) || w < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", item, "' is not SUB_CLUSTER=WEIGHT with a finite weight >= 0"));
    if (absl::Status s = federation::ValidateSubClusterId(kv.first); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.message()));
    (*out)[kv.first] = w;
  }
  return absl::OkStatus();
}

int ListSubClusters(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  auto members = (*store)->GetSubClusters(false);
  if (!members.ok()) return PrintError(members.status().message());
  const int64_t now = absl::ToUnixMillis(absl::Now());
  if (f.json) {
    for (const v1::SubClusterInfo& sc : *members) std::cout << Json(sc) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"SUB-CLUSTER", "STATE", "USABLE", "RM", "WEB", "HEARD", "NODES", "APPS", "AVAILABLE",
       "CAPABILITY"}};
  for (const v1::SubClusterInfo& sc : *members)
    rows.push_back({sc.sub_cluster_id(), v1::SubClusterState_Name(sc.state()),
                    federation::IsSubClusterUsable(sc, now, f.expiry_ms) ? "yes" : "no",
                    sc.rm_address(), sc.rm_http_address(),
                    absl::StrFormat("%.1fs ago", (now - sc.last_heartbeat_ms()) / 1000.0),
                    absl::StrCat(sc.active_nodes()),
                    absl::StrCat(sc.apps_running(), " running, ", sc.apps_pending(), " pending"),
                    Mb(sc.available()), Mb(sc.capability())});
  PrintTable(rows);
  return 0;
}

// The cluster timestamps RMs claimed at start (each the first part of one RM's application ids).
int ListClusterTimestamps(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  auto claims = (*store)->GetClusterTimestampClaims();
  if (!claims.ok()) return PrintError(claims.status().message());
  if (f.json) {
    for (v1::ClusterTimestampClaim c : *claims) {
      c.clear_nonce();
      std::cout << Json(c) << "\n";
    }
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"CLUSTER-TIMESTAMP", "SUB-CLUSTER", "WANTED"}};
  for (const v1::ClusterTimestampClaim& c : *claims)
    rows.push_back({absl::StrCat(c.cluster_timestamp_ms()), c.sub_cluster_id(),
                    absl::StrCat(c.wanted_ms())});
  PrintTable(rows);
  return 0;
}

int ListHomes(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  auto homes = (*store)->GetApplicationsHomeSubCluster(f.home_filter);
  if (!homes.ok()) return PrintError(homes.status().message());
  if (f.json) {
    for (v1::ApplicationHomeSubCluster h : *homes) {
      h.clear_submission_context();
      std::cout << Json(h) << "\n";
    }
    return 0;
  }
  // ENDED: when its home record says it ended (finished_ms, written by its RM before the app
  // ends, or by the GPG); such an app is never resubmitted.
  std::vector<std::vector<std::string>> rows = {{"APPLICATION", "HOME", "QUEUE", "USER", "ENDED"}};
  for (const v1::ApplicationHomeSubCluster& h : *homes)
    rows.push_back({h.application_id(), h.home_sub_cluster_id(), h.queue(), h.user(),
                    FormatTimeMs(h.finished_ms())});
  PrintTable(rows);
  return 0;
}

std::string Weights(const google::protobuf::Map<std::string, double>& w) {
  if (w.empty()) return "(all 1)";
  std::map<std::string, double> sorted(w.begin(), w.end());
  std::vector<std::string> parts;
  for (const auto& [id, v] : sorted) parts.push_back(absl::StrFormat("%s=%.3g", id, v));
  return absl::StrJoin(parts, ",");
}

int ShowPolicies(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  auto configs = (*store)->GetPoliciesConfigurations();
  if (!configs.ok()) return PrintError(configs.status().message());
  if (f.json) {
    for (const auto& c : *configs) std::cout << Json(c) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"QUEUE", "ROUTER", "ROUTER WEIGHTS", "AMRMPROXY",
                                                 "AMRM WEIGHTS", "ALPHA", "RESUBMIT",
                                                 "PUBLISHED BY"}};
  for (const auto& c : *configs)
    rows.push_back({c.queue(), c.router_policy(), Weights(c.router_weights()), c.amrm_policy(),
                    Weights(c.amrm_weights()), absl::StrFormat("%.2f", c.headroom_alpha()),
                    c.resubmit_on_sub_cluster_loss() ? "yes" : "no", c.published_by()});
  PrintTable(rows);
  return 0;
}

int SetPolicy(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  // Starts from the queue's current configuration: flags not given keep their values.
  v1::SubClusterPolicyConfiguration c;
  auto current = (*store)->GetPolicyConfiguration(f.queue);
  if (current.ok()) {
    c = *current;
  } else if (current.status().code() != absl::StatusCode::kNotFound) {
    return PrintError(current.status().message());
  } else {
    c.set_queue(f.queue);
    c.set_router_policy("uniform");
    c.set_amrm_policy("home-only");
  }
  if (!f.router_policy.empty()) c.set_router_policy(f.router_policy);
  if (!f.amrm_policy.empty()) c.set_amrm_policy(f.amrm_policy);
  // The operator's weights, kept apart from what the GPG publishes from them and the headroom;
  // published as given until the GPG's next round.
  if (!f.router_weights.empty()) {
    if (absl::Status s = ParseWeights(f.router_weights, "--router-weights",
                                      c.mutable_operator_router_weights());
        !s.ok())
      return PrintError(s.message());
    *c.mutable_router_weights() = c.operator_router_weights();
  }
  if (!f.amrm_weights.empty()) {
    if (absl::Status s =
            ParseWeights(f.amrm_weights, "--amrm-weights", c.mutable_operator_amrm_weights());
        !s.ok())
      return PrintError(s.message());
    *c.mutable_amrm_weights() = c.operator_amrm_weights();
  }
  if (f.headroom_alpha != -1) c.set_headroom_alpha(f.headroom_alpha);
  if (f.resubmit == "true") c.set_resubmit_on_sub_cluster_loss(true);
  if (f.resubmit == "false") c.set_resubmit_on_sub_cluster_loss(false);
  c.set_published_ms(absl::ToUnixMillis(absl::Now()));
  c.set_published_by(absl::StrCat("admin/", DefaultUser()));
  // Over the generation read: a GPG round that wrote in between makes this fail, not vanish.
  if (absl::Status s = (*store)->SetPolicyConfiguration(c); !s.ok())
    return PrintError(absl::StrCat("queue ", f.queue, ": ", s.message(),
                                   absl::IsAborted(s) ? " (run the command again)" : ""));
  std::cout << EscapeForTerminal(absl::StrCat("queue ", c.queue(), ": router ", c.router_policy(),
                                              " ", Weights(c.router_weights()), ", AMRMProxy ",
                                              c.amrm_policy(), " ", Weights(c.amrm_weights()),
                                              ", resubmit on loss ",
                                              c.resubmit_on_sub_cluster_loss() ? "yes" : "no"))
            << "\n";
  return 0;
}

int DeletePolicy(const FederationFlags& f) {
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  if (absl::Status s = (*store)->DeletePolicyConfiguration(f.queue); !s.ok())
    return PrintError(s.message());
  std::cout << EscapeForTerminal(absl::StrCat("queue ", f.queue, ": its own policies deleted",
                                              f.queue == "*" ? "" : " (it follows \"*\" now)"))
            << "\n";
  return 0;
}

// Takes a sub-cluster out of the federation by hand (YARN's deregisterSubCluster): no new homes
// or secondary asks go there. Its RM's next heartbeat would make it RUNNING again, so this is for
// a sub-cluster whose RM is gone or about to be stopped.
int DeregisterSubCluster(const FederationFlags& f) {
  v1::SubClusterState state;
  if (!v1::SubClusterState_Parse(f.state, &state) ||
      (state != v1::SC_UNREGISTERED && state != v1::SC_DECOMMISSIONED && state != v1::SC_LOST))
    return PrintError(absl::StrCat("--state '", f.state,
                                   "': one of SC_UNREGISTERED, SC_DECOMMISSIONED, SC_LOST"));
  auto store = Open(f);
  if (!store.ok()) return PrintError(store.status().message());
  if (absl::Status s = (*store)->DeregisterSubCluster(f.sub_cluster, state); !s.ok())
    return PrintError(s.message());
  std::cout << EscapeForTerminal(absl::StrCat("sub-cluster ", f.sub_cluster, ": ", f.state))
            << "\n";
  return 0;
}

}  // namespace

void AddFederationCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<FederationFlags>();
  CLI::App* cmd = app.add_subcommand(
      "federation", "Inspect the federation state store and set its policies (seed 004)");
  cmd->require_subcommand(1);
  auto store_flag = [f](CLI::App* c) {
    c->add_option("--federation-store", f->store_uri,
                  "sqlite:/path, zk://host:port/root?auth-file=FILE or "
                  "postgresql://user@host:port/db")
        ->required();
  };
  CLI::App* subclusters = cmd->add_subcommand("subclusters", "List the sub-clusters and their load");
  store_flag(subclusters);
  subclusters->add_flag("--json", f->json, "one JSON record per line");
  subclusters->add_option("--membership-expiry-ms", f->expiry_ms,
                          "silent longer than this: not usable")
      ->capture_default_str();
  subclusters->callback([f, exit_code] { *exit_code = ListSubClusters(*f); });
  CLI::App* deregister = cmd->add_subcommand(
      "deregister", "Mark a sub-cluster UNREGISTERED (or --state): no new homes go there");
  store_flag(deregister);
  deregister->add_option("sub-cluster", f->sub_cluster, "the sub-cluster id")->required();
  deregister->add_option("--state", f->state, "SC_UNREGISTERED, SC_DECOMMISSIONED or SC_LOST")
      ->capture_default_str();
  deregister->callback([f, exit_code] { *exit_code = DeregisterSubCluster(*f); });

  CLI::App* homes = cmd->add_subcommand("homes", "List applications and their home sub-cluster");
  store_flag(homes);
  homes->add_flag("--json", f->json, "one JSON record per line");
  homes->add_option("--sub-cluster", f->home_filter, "only those homed there");
  homes->callback([f, exit_code] { *exit_code = ListHomes(*f); });

  CLI::App* timestamps = cmd->add_subcommand(
      "cluster-timestamps",
      "List the cluster timestamps sub-cluster RMs claimed at start (one per RM run; the first "
      "part of its application ids)");
  store_flag(timestamps);
  timestamps->add_flag("--json", f->json, "one JSON record per line");
  timestamps->callback([f, exit_code] { *exit_code = ListClusterTimestamps(*f); });

  CLI::App* policy = cmd->add_subcommand("policy", "Show or set per-queue policies");
  policy->require_subcommand(1);
  CLI::App* show = policy->add_subcommand("show", "Every queue's policies");
  store_flag(show);
  show->add_flag("--json", f->json, "one JSON record per line");
  show->callback([f, exit_code] { *exit_code = ShowPolicies(*f); });
  CLI::App* set = policy->add_subcommand(
      "set", "Set a queue's policies (\"*\": queues without their own); others are kept");
  store_flag(set);
  set->add_option("--queue", f->queue, "the queue, or *")->capture_default_str();
  set->add_option("--router-policy", f->router_policy,
                  "uniform, hashing, weighted-random, priority, locality, load-based, power-of-two or "
                  "reject");
  set->add_option("--amrm-policy", f->amrm_policy, "home-only, broadcast or locality-multicast");
  set->add_option("--router-weights", f->router_weights,
                  "SUB_CLUSTER=WEIGHT,... (- for none: every sub-cluster weighs 1)");
  set->add_option("--amrm-weights", f->amrm_weights, "SUB_CLUSTER=WEIGHT,... (- for none)");
  set->add_option("--headroom-alpha", f->headroom_alpha,
                  "locality-multicast: 0 = split * asks by weights, 1 = by headroom")
      ->check(FiniteNumberValidator("", 0, 1));
  set->add_option("--resubmit-on-loss", f->resubmit,
                  "resubmit apps of a LOST home sub-cluster elsewhere: true or false. Relies "
                  "on every NM running `weft nm --federation-fence-ms N` with the RMs' "
                  "--federation-heartbeat-ms < N and N + the NM heartbeat interval < the GPG's "
                  "--membership-expiry-ms - the RMs' --federation-heartbeat-ms, so that the "
                  "containers of a stopped RM, or of one cut off from the federation store, are "
                  "dead before the app runs elsewhere")
      ->check(CLI::IsMember({"true", "false"}));
  set->callback([f, exit_code] { *exit_code = SetPolicy(*f); });
  CLI::App* del = policy->add_subcommand("delete", "Delete a queue's own policies");
  store_flag(del);
  del->add_option("--queue", f->queue, "the queue, or *")->required();
  del->callback([f, exit_code] { *exit_code = DeletePolicy(*f); });
}

}  // namespace weft::cli
