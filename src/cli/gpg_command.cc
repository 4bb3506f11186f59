// Copyright Weft authors.
#include "cli/gpg_command.h"

#include <csignal>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "cli/daemon_config.h"
#include "common/log.h"
#include "common/terminal_text.h"
#include "federation/gpg/global_policy_generator.h"
#include "federation/gpg/rm_clients.h"
#include "federation/policies/registry.h"
#include "federation/store/federation_store.h"

namespace weft::cli {
namespace {

struct GpgFlags {
  std::string gpg_id = "gpg";
  std::string store_uri;
  int64_t interval_ms = 10000;
  int64_t membership_expiry_ms = 30000;
  std::vector<std::string> drain;
  int64_t retention_ms = 600000;
  std::string default_router_policy = "weighted-random";
  std::string default_amrm_policy = "locality-multicast";
  bool once = false;
  TlsFlags tls;
};

void PrintRound(const federation::GpgRound& round) {
  std::vector<std::string> weights;
  for (const auto& [id, w] : round.weights) weights.push_back(absl::StrCat(id, "=", w));
  std::cout << "weft gpg: weights "
            << (weights.empty() ? "(no sub-clusters)"
                                : EscapeForTerminal(absl::StrJoin(weights, " ")))
            << "; " << round.policies_published << " policies published, "
            << round.marked_lost.size() << " sub-clusters marked LOST, " << round.resubmitted.size()
            << " apps resubmitted, " << round.mappings_removed << " ended apps' homes removed, "
            << round.issued_ids_removed << " unused issued ids removed" << std::endl;
  for (const std::string& e : round.errors)
    std::cout << "weft gpg: error: " << EscapeForTerminal(e) << std::endl;
}

int RunGpg(const GpgFlags& f) {
  if (f.interval_ms <= 0) return PrintError(absl::StrCat("--interval-ms ", f.interval_ms, " must be > 0"));
  if (f.membership_expiry_ms <= 0)
    return PrintError(absl::StrCat("--membership-expiry-ms ", f.membership_expiry_ms, " must be > 0"));
  if (f.retention_ms < 0)
    return PrintError(absl::StrCat("--app-retention-ms ", f.retention_ms, " is negative"));
  federation::GpgOptions o;
  o.gpg_id = f.gpg_id;
  o.membership_expiry_ms = f.membership_expiry_ms;
  o.finished_app_retention_ms = f.retention_ms;
  o.default_router_policy = f.default_router_policy;
  o.default_amrm_policy = f.default_amrm_policy;
  for (const std::string& id : f.drain) {
    if (absl::Status s = federation::ValidateSubClusterId(id); !s.ok())
      return PrintError(absl::StrCat("--drain: ", s.message()));
    o.drained.insert(id);
  }
  {
    // The default policies must be ones a store takes.
    v1::SubClusterPolicyConfiguration probe;
    probe.set_queue("*");
    probe.set_router_policy(o.default_router_policy);
    probe.set_amrm_policy(o.default_amrm_policy);
    if (absl::Status s = federation::ValidatePolicyConfiguration(probe); !s.ok())
      return PrintError(absl::StrCat("--default-router-policy/--default-amrm-policy: ", s.message()));
  }
  absl::StatusOr<security::TlsFiles> tls = LoadTlsFlags(f.tls, "gpg");
  if (!tls.ok()) return PrintError(tls.status().message());
  auto store = federation::OpenFederationStore(f.store_uri);
  if (!store.ok())
    return PrintError(absl::StrCat("--federation-store: ", store.status().message()));
  federation::GrpcSubClusterRms rms(*std::move(tls));
  federation::GlobalPolicyGenerator gpg(o, store->get(), &rms);
  std::cout << "weft gpg: " << (*store)->Describe() << ", a round every " << f.interval_ms
            << " ms" << (o.drained.empty() ? "" : absl::StrCat(", draining ", absl::StrJoin(o.drained, ",")))
            << std::endl;
  if (f.once) {
    federation::GpgRound round = gpg.RunOnce(absl::ToUnixMillis(absl::Now()));
    PrintRound(round);
    return round.errors.empty() ? 0 : 1;
  }
  BlockTerminationSignals();
  absl::Notification stop;
  std::thread rounds([&] {
    do {
      federation::GpgRound round = gpg.RunOnce(absl::ToUnixMillis(absl::Now()));
      for (const std::string& e : round.errors) log::Warn("gpg_round_error", {{"error", e}});
      if (round.policies_published > 0 || !round.marked_lost.empty() ||
          !round.resubmitted.empty() || round.mappings_removed > 0)
        PrintRound(round);
    } while (!stop.WaitForNotificationWithTimeout(absl::Milliseconds(f.interval_ms)));
  });
  int sig = WaitForTerminationSignal();
  log::Info("shutting_down", {{"signal", sig == SIGINT ? "SIGINT" : "SIGTERM"}});
  stop.Notify();
  rounds.join();
  return 0;
}

}  // namespace

void AddGpgCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<GpgFlags>();
  CLI::App* cmd = app.add_subcommand(
      "gpg", "Run the federation's Global Policy Generator (membership expiry, weights, drains)");
  cmd->add_option("--gpg-id", f->gpg_id, "this GPG's name (its certificate is gpg/<id>)")
      ->capture_default_str();
  cmd->add_option("--federation-store", f->store_uri,
                  "the federation state store: sqlite:/path, "
                  "zk://host:port/root?auth-file=FILE or postgresql://user@host:port/db")
      ->required();
  cmd->add_option("--interval-ms", f->interval_ms, "between rounds")->capture_default_str();
  cmd->add_option("--membership-expiry-ms", f->membership_expiry_ms,
                  "a sub-cluster silent this long is marked LOST, and the apps of queues whose "
                  "policy says --resubmit-on-loss are moved (compare-and-set on their homes) and "
                  "resubmitted elsewhere. Resubmission relies on every NM of the sub-cluster "
                  "running `weft nm --federation-fence-ms N` with N + the NM heartbeat interval "
                  "< this - the RMs' --federation-heartbeat-ms: a silent RM's containers are "
                  "then gone before their apps run elsewhere, and the RM kills its copies at "
                  "its next heartbeat")
      ->capture_default_str();
  cmd->add_option("--drain", f->drain,
                  "sub-clusters under maintenance: weight 0, no new homes (comma-separated)")
      ->delimiter(',');
  cmd->add_option("--app-retention-ms", f->retention_ms,
                  "how long an ended app's home mapping is kept")
      ->capture_default_str();
  cmd->add_option("--default-router-policy", f->default_router_policy,
                  "the router policy written for \"*\" when the store has none")
      ->capture_default_str();
  cmd->add_option("--default-amrm-policy", f->default_amrm_policy,
                  "the AMRMProxy policy written for \"*\" when the store has none")
      ->capture_default_str();
  cmd->add_flag("--once", f->once, "run one round, print it and exit (1 if it had errors)");
  AddTlsFlags(cmd, &f->tls);
  AddDaemonConfig(cmd);  // --config: every flag may also be set in weft.yaml's section
  cmd->callback([f, exit_code] { *exit_code = RunGpg(*f); });
}

}  // namespace weft::cli
