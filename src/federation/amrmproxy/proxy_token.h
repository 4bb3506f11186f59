// Copyright Weft authors. The AMRM token an AM gets from its NM's AMRMProxy instead of the
// RM's (seed 004 step 6b: "the security tokens are also modified by the NM when launching the
// AM, so that the AM can only talk with the AMRMProxy"). It names the NM and the attempt and
// is signed with HMAC-SHA256 under a key the NM draws at start and never shares: it is valid at
// this NM's proxy only, and useless at an RM or at another NM.
#ifndef WEFT_FEDERATION_AMRMPROXY_PROXY_TOKEN_H_
#define WEFT_FEDERATION_AMRMPROXY_PROXY_TOKEN_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "weft/v1/common.pb.h"

namespace weft::amrmproxy {

inline constexpr char kProxyTokenKind[] = "AMRMProxyToken";

// Issues and verifies proxy tokens for one NM. Immutable after construction: thread-safe.
class ProxyTokenSecretManager {
 public:
  // `key`: the NM's secret (32 random bytes); `node_id`: the NM's "host:port".
  ProxyTokenSecretManager(std::string key, std::string node_id);

  v1::Token Issue(absl::string_view attempt_id) const;

  // The attempt a token names. Unauthenticated when `token` is empty (none presented);
  // PermissionDenied for a malformed one, one of another NM's proxy ("issued by the AMRMProxy
  // of <node>"), or a bad signature.
  absl::StatusOr<std::string> Verify(const v1::Token& token) const;

  const std::string& node_id() const { return node_id_; }

 private:
  const std::string key_;
  const std::string node_id_;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_PROXY_TOKEN_H_
