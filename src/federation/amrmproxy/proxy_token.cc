// Copyright Weft authors.
#include "federation/amrmproxy/proxy_token.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::amrmproxy {
namespace {

// Identifier: "weft-amrmproxy/1" LF node id LF attempt id. Neither id holds a LF.
constexpr absl::string_view kIdentifierVersion = "weft-amrmproxy/1";

}  // namespace

ProxyTokenSecretManager::ProxyTokenSecretManager(std::string key, std::string node_id)
    : key_(std::move(key)), node_id_(std::move(node_id)) {}

v1::Token ProxyTokenSecretManager::Issue(absl::string_view attempt_id) const {
  v1::Token token;
  token.set_identifier(absl::StrCat(kIdentifierVersion, "\n", node_id_, "\n", attempt_id));
  token.set_password(security::HmacSha256(key_, token.identifier()));
  token.set_kind(kProxyTokenKind);
  return token;
}

absl::StatusOr<std::string> ProxyTokenSecretManager::Verify(const v1::Token& token) const {
  if (token.identifier().empty()) {
    return absl::UnauthenticatedError(
        "no AMRM token presented (metadata weft-amrm-token-bin): the AMRMProxy serves only the "
        "AMs its NM launched, with the token it gave them");
  }
  std::vector<std::string> parts = absl::StrSplit(token.identifier(), '\n');
  if (parts.size() != 3 || parts[0] != kIdentifierVersion || parts[2].empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "malformed AMRMProxy token (", token.identifier().size(),
        " bytes): not a token of an AMRMProxy (an RM's AMRM token is not valid here)"));
  }
  if (parts[1] != node_id_) {
    return absl::PermissionDeniedError(absl::StrCat("AMRMProxy token for ", parts[2],
                                                    ": issued by the AMRMProxy of ", parts[1],
                                                    ", this is ", node_id_));
  }
  security::MasterKey key;
  key.secret = key_;
  if (!security::PasswordMatches(security::Token{token.identifier(), token.password()}, key)) {
    return absl::PermissionDeniedError(
        absl::StrCat("AMRMProxy token for ", parts[2], ": bad signature"));
  }
  return parts[2];
}

}  // namespace weft::amrmproxy
