// Copyright Weft authors. What each federation daemon may do at a sub-cluster RM (issue 27,
// "narrow federation identities"; docs/security.md "Federation identities").
//
// A sub-cluster RM (RmServerOptions::federation_proxies) knows the federation's daemons by
// their mutual-TLS certificates. Each role gets only what it needs:
//   router/<id>  acts for the user it names on ClientService (it authenticated the user by
//                MUNGE, as an RM would); nothing on AmService or AdminService.
//   gpg/<id>     reads (apps, attempts, nodes, queues, metrics) as the user it names, never
//                getting an unmanaged AM's token; submits
//                only the resubmission of a moved app: the context, user and home the
//                federation store's home record holds, to the home the record names now, and
//                only once the home moved (generation >= 2). Nothing else.
//   nm/<node>    (its AMRMProxy) ListNodes; and, for one app, acting for its owner, only when
//                the app's current AM attempt runs on that node, as the app's home RM says:
//                at a secondary, SubmitApplication of the app's unmanaged AM (unmanaged_am,
//                federation_home_sub_cluster_id = the home, the home app's id) and
//                GetApplication/KillApplication of that unmanaged AM; at the home,
//                GetApplication of the app itself (its name and end). Nothing else, and never
//                as root unless ClientAuthOptions::federation_root_apps.
//   rm/<id>      GetApplication and GetApplicationAttempts of any app, without acting for a
//                user (another sub-cluster's RM checking an NM's claim); a report it reads
//                never carries an unmanaged AM's token. Other calls: a plain client.
// A refusal is PermissionDenied naming the daemon, the call and why.
#ifndef WEFT_RM_FEDERATION_IDENTITY_H_
#define WEFT_RM_FEDERATION_IDENTITY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "rm/client_auth.h"
#include "security/tls.h"
#include "weft/v1/common.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {
class FederationStateStore;
}

namespace weft::rm {

class ResourceManager;

// The RM calls the rules name.
enum class RmCall {
  kNewApplication,
  kSubmitApplication,
  kGetApplication,
  kGetApplicationAttempts,
  kListApplications,
  kKillApplication,
  kListNodes,
  kGetClusterMetrics,
  kGetQueue,
  kAdminService,  // every AdminService call
  kAmService,     // every AmService call
};
// "ClientService/SubmitApplication", "AdminService", ...
absl::string_view RmCallName(RmCall call);

// What a peer's certificate lets it do with a call (step 1, before any state is read).
enum class PeerAccess {
  kActsForUser,       // authenticate as the user it names (weft-user), then as for that user
  kAppCheck,          // as the user it names, once JudgeAppClaim allows it for the call's app
  kFederationReader,  // an RM: read the app without acting for anyone (full report, no token)
  kPlainClient,       // the certificate gives nothing: authenticate as any client (MUNGE, secret)
};
// PermissionDenied "federation daemon nm/h:p may not call AdminService: ..." when the role
// may not make the call at all. Callers only ask for routers, NMs, the GPG and RMs.
absl::StatusOr<PeerAccess> CheckPeerCall(const security::DaemonIdentity& peer, RmCall call);

// What a sub-cluster's RM says about an app it runs.
struct HomeAppFacts {
  std::string user;
  bool unmanaged_am = false;
  bool final = false;      // FINISHED, FAILED or KILLED
  std::string am_node_id;  // the node of its current attempt's AM; "" before it has one
};

// What an RM needs from the federation to judge an NM's or the GPG's claim. Thread-safe.
class FederationDirectory {
 public:
  virtual ~FederationDirectory() = default;
  // The app's home record. NotFound when the federation homed no such app; Unavailable (or
  // another error) when the store cannot say.
  virtual absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHome(
      const std::string& app_id) = 0;
  // What sub-cluster `sub_cluster_id`'s RM says about the app. NotFound when that RM does not
  // know it (or the sub-cluster is not a member); Unavailable when it cannot be asked.
  virtual absl::StatusOr<HomeAppFacts> AskHome(const std::string& sub_cluster_id,
                                               const std::string& app_id) = 0;
};

// The real one: home records from `store` (not owned; outlives it), and each sub-cluster's
// RM (its membership record's rm_address list, following HA as the GPG does) asked over
// ClientService GetApplication and GetApplicationAttempts, presenting `tls` (this RM's own
// certificate; nullopt = plaintext, for in-process tests). `deadline_ms` bounds each RPC.
std::unique_ptr<FederationDirectory> NewFederationDirectory(federation::FederationStateStore* store,
                                                            std::optional<security::TlsFiles> tls,
                                                            int64_t deadline_ms = 3000);

// One claim by an NM or the GPG, acting for `user`, about `app_id` (step 2).
struct AppClaim {
  security::DaemonIdentity peer;
  RmCall call = RmCall::kGetApplication;
  std::string app_id;
  Caller caller;              // as AuthenticateClient made it for the peer
  bool root_allowed = false;  // ClientAuthOptions::federation_root_apps
  // SubmitApplication only: what it submits.
  const v1::ApplicationSubmissionContext* submission = nullptr;
  std::string self_sub_cluster_id;  // this RM's
  // The federation home of this RM's unfinished unmanaged AM `app_id` ("" when it runs none):
  // where to ask for an app the store has no record of. Called at most once, from the thread
  // judging the claim.
  std::function<std::string()> local_uam_home;
};

// What a judged claim allows; checked again on the RM loop right before the call (step 3).
struct FederationGrant {
  enum class Scope {
    kAsUser,    // GPG: nothing more to check
    kHomeRead,  // NM at the app's home: GetApplication, if its AM runs on that NM
    kUam,       // NM at a secondary: the app's unmanaged AM here
  };
  Scope scope = Scope::kAsUser;
  security::DaemonIdentity peer;
  RmCall call = RmCall::kGetApplication;
  std::string app_id;
  std::string user;
  std::string home_sub_cluster_id;
};

// Step 2: judges the claim with what the federation store and the app's home RM say; may
// block on both (call it off the RM loop). PermissionDenied naming the peer, the call, the
// app and why; Unavailable when the store or the home cannot be asked (the peer retries).
absl::StatusOr<FederationGrant> JudgeAppClaim(const AppClaim& claim,
                                              FederationDirectory& directory);

// Step 3, on the RM loop: the app as this RM holds it now still fits the grant (kHomeRead: a
// managed app of grant.user whose current AM runs on the peer's node; kUam: an unmanaged app
// of grant.user, or none yet for SubmitApplication / NotFound for reads). PermissionDenied
// as above; NotFound for an unknown app where the call would say so.
absl::Status CheckGrantOnLoop(const FederationGrant& grant, const ResourceManager& rm);

}  // namespace weft::rm

#endif  // WEFT_RM_FEDERATION_IDENTITY_H_
