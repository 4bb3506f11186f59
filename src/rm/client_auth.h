// Copyright Weft authors. Who is calling the RM's client and admin services
// (YARN: the RPC layer's UserGroupInformation, proxy users and yarn.admin.acl).
#ifndef WEFT_RM_CLIENT_AUTH_H_
#define WEFT_RM_CLIENT_AUTH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/munge.h"

namespace weft::rm {

// An authenticated caller.
struct Caller {
  std::string user;                 // whom the call acts as (owner of what it submits)
  std::vector<std::string> groups;  // user's groups, from the OS (empty for declared users)
  std::string real_user;            // who authenticated: == user unless proxying
  bool admin = false;               // a cluster admin (may administer every app and queue)
  // The acting user is root: uid 0 (where users are declared, the name "root").
  bool root = false;
};

enum class UserAuthentication {
  // The caller proves its Unix user with a MUNGE credential (metadata "weft-munge-cred", HTTP
  // header X-Weft-Munge-Credential); the RM resolves the user and groups from its OS.
  kMunge,
  // The caller's declared user ("weft-user") is believed. FOR IN-PROCESS TESTS, the DRF demo
  // and `weft bench rm` only, whose callers are the RM's own process; no CLI flag selects it.
  kDeclared,
};

struct ClientAuthOptions {
  UserAuthentication mode = UserAuthentication::kMunge;
  std::string munge_socket;  // "" = libmunge's default socket
  // Whoever presents it (metadata "weft-secret", header X-Weft-Secret) is a cluster admin
  // acting as its declared user. Empty: no secret is accepted.
  std::string admin_secret;
  // Users who may act as another user by declaring it ("weft-user"), as YARN's proxy users
  // (hadoop.proxyuser.*): e.g. a gateway or a workflow server. Never as root.
  std::vector<std::string> proxy_users;
  // Cluster admins besides the RM's own user (YARN: yarn.admin.acl). "*" = everyone.
  std::vector<std::string> admins;
  std::string rm_user;  // the RM process's user, always an admin; set by the server
  // Whether NMs (AMRMProxies) and the GPG may act as root for the apps of root the
  // federation's rules let them act for (rm/federation_identity.h): the RM's counterpart of
  // the NMs' `--allowed-system-users root`. Routers always may act for the users they
  // authenticated, root included.
  bool federation_root_apps = false;
};

// What a call presented.
struct Presented {
  std::string munge_credential;
  std::string secret;
  std::string declared_user;  // "" = none
  // Set by the server when the call came over mutual TLS with a verified certificate of a
  // federation daemon (a router, an NM or the GPG: "router/r1", "nm/host:port", "gpg/g1") and
  // the RM is a federation sub-cluster (RmServerOptions::federation_proxies), for a call the
  // daemon's role may make (rm/federation_identity.h decides which, and for which apps). Such a
  // caller acts as `declared_user`, which it must name (seed 004: the router and the
  // AMRMProxy speak to sub-cluster RMs for the user).
  std::string federation_peer;
};

// Authenticates a call. Unauthenticated: no credential, a bad or replayed MUNGE credential,
// a wrong secret; PermissionDenied: a declared user the caller may not act as; InvalidArgument:
// a declared user that is not a user name; InvalidArgument for a federation peer that names no
// user or one the OS does not know. Blocks for the MUNGE decode (one local IPC).
absl::StatusOr<Caller> AuthenticateClient(const ClientAuthOptions& options,
                                          const Presented& presented);

// The payload sealed in client credentials; a credential with another payload is refused.
inline constexpr const char* kMungePayload = security::kClientMungePayload;

}  // namespace weft::rm

#endif  // WEFT_RM_CLIENT_AUTH_H_
