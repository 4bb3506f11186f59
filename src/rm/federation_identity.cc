// Copyright Weft authors.
#include "rm/federation_identity.h"

#include <google/protobuf/util/message_differencer.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "rm/resource_manager.h"

namespace weft::rm {
namespace {

using security::DaemonRole;

bool IsRead(RmCall call) {
  switch (call) {
    case RmCall::kGetApplication:
    case RmCall::kGetApplicationAttempts:
    case RmCall::kListApplications:
    case RmCall::kListNodes:
    case RmCall::kGetClusterMetrics:
    case RmCall::kGetQueue:
      return true;
    default:
      return false;
  }
}

absl::Status NotAllowed(const security::DaemonIdentity& peer, RmCall call, absl::string_view why) {
  return absl::PermissionDeniedError(absl::StrCat("federation daemon ", peer.ToString(),
                                                  " may not call ", RmCallName(call), ": ", why));
}

}  // namespace

absl::string_view RmCallName(RmCall call) {
  switch (call) {
    case RmCall::kNewApplication:
      return "ClientService/NewApplication";
    case RmCall::kSubmitApplication:
      return "ClientService/SubmitApplication";
    case RmCall::kGetApplication:
      return "ClientService/GetApplication";
    case RmCall::kGetApplicationAttempts:
      return "ClientService/GetApplicationAttempts";
    case RmCall::kListApplications:
      return "ClientService/ListApplications";
    case RmCall::kKillApplication:
      return "ClientService/KillApplication";
    case RmCall::kListNodes:
      return "ClientService/ListNodes";
    case RmCall::kGetClusterMetrics:
      return "ClientService/GetClusterMetrics";
    case RmCall::kGetQueue:
      return "ClientService/GetQueue";
    case RmCall::kAdminService:
      return "AdminService";
    case RmCall::kAmService:
      return "AmService";
  }
  return "an unknown call";
}

absl::StatusOr<PeerAccess> CheckPeerCall(const security::DaemonIdentity& peer, RmCall call) {
  switch (peer.role) {
    case DaemonRole::kRouter:
      if (call == RmCall::kAdminService || call == RmCall::kAmService)
        return NotAllowed(peer, call, "a router acts for users on ClientService only");
      return PeerAccess::kActsForUser;
    case DaemonRole::kGpg:
      if (IsRead(call)) return PeerAccess::kActsForUser;
      if (call == RmCall::kSubmitApplication) return PeerAccess::kAppCheck;
      return NotAllowed(peer, call,
                        "the GPG only reads and resubmits the apps it moved from a lost "
                        "sub-cluster");
    case DaemonRole::kNodeManager:
      switch (call) {
        case RmCall::kAmService:
          return PeerAccess::kPlainClient;  // its AMRMProxy, with an AM's token
        case RmCall::kListNodes:
          return PeerAccess::kActsForUser;
        case RmCall::kSubmitApplication:
        case RmCall::kGetApplication:
        case RmCall::kKillApplication:
          return PeerAccess::kAppCheck;
        default:
          return NotAllowed(peer, call,
                            "an NM acts only for the app whose AM it runs: its unmanaged AMs in "
                            "other sub-clusters and its report at home");
      }
    case DaemonRole::kResourceManager:
      if (call == RmCall::kGetApplication || call == RmCall::kGetApplicationAttempts)
        return PeerAccess::kFederationReader;
      return PeerAccess::kPlainClient;
  }
  return PeerAccess::kPlainClient;
}

absl::StatusOr<FederationGrant> JudgeAppClaim(const AppClaim& claim,
                                              FederationDirectory& directory) {
  const std::string& app = claim.app_id;
  const std::string& user = claim.caller.user;
  auto deny = [&](absl::string_view why) {
    return absl::PermissionDeniedError(
        absl::StrCat("federation daemon ", claim.peer.ToString(), " may not call ",
                     RmCallName(claim.call), " for application ", app, " as '", user, "': ", why));
  };
  FederationGrant grant;
  grant.peer = claim.peer;
  grant.call = claim.call;
  grant.app_id = app;
  grant.user = user;
  if (app.empty()) return deny("the call names no application");
  const bool nm = claim.peer.role == DaemonRole::kNodeManager;
  if (!nm && claim.peer.role != DaemonRole::kGpg) return deny("only NMs and the GPG make claims");
  const v1::ApplicationSubmissionContext* sub = claim.submission;
  if (claim.call == RmCall::kSubmitApplication) {
    if (sub == nullptr) return deny("the call carries no submission");
    if (sub->application_id() != app)
      return deny(absl::StrCat("the submission names application '", sub->application_id(), "'"));
  }
  if (claim.caller.root && !claim.root_allowed)
    return deny(
        "federation daemons other than routers never act as root unless the RM allows root "
        "apps (ClientAuthOptions::federation_root_apps)");

  // The store's word on the app: its home and the user the router authenticated.
  std::optional<v1::ApplicationHomeSubCluster> record;
  absl::StatusOr<v1::ApplicationHomeSubCluster> read = directory.GetApplicationHome(app);
  if (read.ok()) {
    record = *std::move(read);
  } else if (!absl::IsNotFound(read.status())) {
    return absl::UnavailableError(
        absl::StrCat("checking federation daemon ", claim.peer.ToString(), "'s claim on ", app,
                     ": reading its home record: ", read.status().message()));
  }
  if (record.has_value() && record->user() != user)
    return deny(absl::StrCat("its home record names user '", record->user(), "'"));

  if (!nm) {  // the GPG: a resubmission exactly as the home record holds it
    if (!record.has_value()) return deny("the federation store has no home record of it");
    if (record->home_sub_cluster_id() != claim.self_sub_cluster_id)
      return deny(absl::StrCat("its home record names sub-cluster '", record->home_sub_cluster_id(),
                               "', not this one ('", claim.self_sub_cluster_id, "')"));
    if (record->generation() < 2)
      return deny(absl::StrCat("its home never moved (generation ", record->generation(),
                               "): the GPG submits only apps it moved from a lost sub-cluster"));
    if (!record->has_submission_context() ||
        !google::protobuf::util::MessageDifferencer::Equals(record->submission_context(), *sub))
      return deny("the submission is not the one its home record holds");
    grant.scope = FederationGrant::Scope::kAsUser;
    grant.home_sub_cluster_id = record->home_sub_cluster_id();
    return grant;
  }

  // An NM: which sub-cluster is the app's home, so which RM can say where its AM runs.
  std::string home;
  if (claim.call == RmCall::kSubmitApplication) {
    if (!sub->unmanaged_am())
      return deny("an NM submits only the unmanaged AMs of its AM's app (unmanaged_am)");
    const std::string& claimed = sub->federation_home_sub_cluster_id();
    if (claimed.empty()) return deny("the submission names no federation_home_sub_cluster_id");
    if (claimed == claim.self_sub_cluster_id)
      return deny(
          "it names this sub-cluster as the app's home: unmanaged AMs run in the "
          "secondaries");
    if (record.has_value() && record->home_sub_cluster_id() != claimed)
      return deny(absl::StrCat("it names '", claimed,
                               "' as the app's home but its home record "
                               "names '",
                               record->home_sub_cluster_id(), "'"));
    home = claimed;
  } else if (record.has_value()) {
    home = record->home_sub_cluster_id();
  } else {
    home = claim.local_uam_home ? claim.local_uam_home() : "";
    // Neither a home record nor an unmanaged AM here: at most an app submitted straight to this
    // RM, whose own report the NM running its AM may read.
    if (home.empty()) home = claim.self_sub_cluster_id;
  }
  grant.home_sub_cluster_id = home;
  if (home == claim.self_sub_cluster_id) {
    if (claim.call != RmCall::kGetApplication)
      return deny(
          "this sub-cluster is the app's home: an NM acts only for its unmanaged AMs in "
          "other sub-clusters (the AM itself uses AmService)");
    grant.scope = FederationGrant::Scope::kHomeRead;
    return grant;
  }
  absl::StatusOr<HomeAppFacts> facts = directory.AskHome(home, app);
  if (absl::IsNotFound(facts.status()))
    return deny(absl::StrCat("its home sub-cluster '", home, "' does not know it (",
                             facts.status().message(), ")"));
  if (!facts.ok())
    return absl::UnavailableError(
        absl::StrCat("checking federation daemon ", claim.peer.ToString(), "'s claim on ", app,
                     ": asking its home sub-cluster '", home, "': ", facts.status().message()));
  if (facts->unmanaged_am)
    return deny(absl::StrCat("sub-cluster '", home, "' runs it as an unmanaged AM: not its home"));
  if (facts->user != user)
    return deny(
        absl::StrCat("its home sub-cluster '", home, "' says it is user '", facts->user, "''s"));
  if (facts->am_node_id != claim.peer.name)
    return deny(facts->am_node_id.empty()
                    ? absl::StrCat("its current attempt at '", home, "' has no AM node yet")
                    : absl::StrCat("its current AM runs on node '", facts->am_node_id, "' of '",
                                   home, "', not on this NM"));
  if (claim.call == RmCall::kSubmitApplication && facts->final)
    return deny(absl::StrCat("it has ended at its home sub-cluster '", home, "'"));
  grant.scope = FederationGrant::Scope::kUam;
  return grant;
}

absl::Status CheckGrantOnLoop(const FederationGrant& grant, const ResourceManager& rm) {
  if (grant.scope == FederationGrant::Scope::kAsUser) return absl::OkStatus();
  auto deny = [&](absl::string_view why) {
    return absl::PermissionDeniedError(absl::StrCat(
        "federation daemon ", grant.peer.ToString(), " may not call ", RmCallName(grant.call),
        " for application ", grant.app_id, " as '", grant.user, "': ", why));
  };
  absl::StatusOr<v1::ApplicationReport> report = rm.GetApplication(grant.app_id);
  if (grant.scope == FederationGrant::Scope::kUam) {
    if (!report.ok()) {
      if (absl::IsNotFound(report.status()) && grant.call == RmCall::kSubmitApplication)
        return absl::OkStatus();
      return report.status();
    }
    if (grant.call == RmCall::kSubmitApplication) return absl::OkStatus();  // AlreadyExists
    if (!report->unmanaged_am())
      return deny("it is a managed app here, not the unmanaged AM of an app homed elsewhere");
    if (report->user() != grant.user)
      return deny(absl::StrCat("its unmanaged AM here is user '", report->user(), "''s"));
    return absl::OkStatus();
  }
  // kHomeRead: the app this NM runs the AM of.
  if (!report.ok()) return report.status();
  if (report->unmanaged_am())
    return deny("it is an unmanaged AM here, and its home record does not say where it lives");
  if (report->user() != grant.user)
    return deny(absl::StrCat("it is user '", report->user(), "''s"));
  absl::StatusOr<v1::GetApplicationAttemptsResponse> attempts =
      rm.GetApplicationAttempts(grant.app_id);
  if (!attempts.ok()) return attempts.status();
  std::string am_node;
  for (const v1::ApplicationAttemptReport& a : attempts->attempts())
    if (a.attempt() == report->current_attempt()) am_node = a.am_node_id();
  if (am_node != grant.peer.name)
    return deny(am_node.empty()
                    ? std::string("its current attempt has no AM node yet")
                    : absl::StrCat("its current AM runs on node '", am_node, "', not on this NM"));
  return absl::OkStatus();
}

}  // namespace weft::rm
