// Copyright Weft authors. MUNGE credentials: how a client proves its Unix user to the RM.
#ifndef WEFT_SECURITY_MUNGE_H_
#define WEFT_SECURITY_MUNGE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/user_identity.h"

namespace weft::security {

// MUNGE (what Slurm uses) authenticates a local user to any process that shares the munge key:
// the client asks its local munged for a credential, which munged seals with the caller's
// uid and gid as the kernel reports them (SO_PEERCRED); the server's munged opens it. A
// credential decodes once (munged refuses a replay) and expires after its TTL (300 s by
// default), so each call carries a fresh one.

// The munged socket to use: $WEFT_MUNGE_SOCKET when set and non-empty, else "" (libmunge's
// default, /run/munge/munge.socket.2).
std::string MungeSocketFromEnvironment();

// A credential for the calling process's user with `payload` sealed inside. `socket` "" =
// libmunge's default. Unavailable when munged cannot be reached, naming the socket and how to
// start it; Internal for other MUNGE errors.
absl::StatusOr<std::string> MungeEncode(absl::string_view socket, absl::string_view payload);

struct MungeCredential {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string payload;
};

// Opens `credential` through the munged at `socket`. Unauthenticated for a credential that is
// malformed, forged, expired, replayed or sealed under another key (MUNGE's reason in the
// message); Unavailable when munged cannot be reached.
absl::StatusOr<MungeCredential> MungeDecode(absl::string_view socket,
                                            absl::string_view credential);

// The payload sealed in a Weft client's credentials (the CLI's, and `weft app logs`'s to the
// web servers); a credential with another payload is refused.
inline constexpr char kClientMungePayload[] = "weft-client";

// The user a Weft client's `credential` proves: opened (MungeDecode), its payload checked
// (kClientMungePayload) and its uid looked up. Unauthenticated for any credential that does not
// prove a known user; Unavailable when munged cannot be reached.
absl::StatusOr<UnixUser> MungeClientUser(absl::string_view socket, absl::string_view credential);

}  // namespace weft::security

#endif  // WEFT_SECURITY_MUNGE_H_
