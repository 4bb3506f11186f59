// Copyright Weft authors. Container tokens and AMRM tokens: HMAC-SHA256 under RM master keys.
//
// A token is an `identifier` (a canonical serialization of what it grants) and a `password`
// (HMAC-SHA256 of the identifier under the master key named inside it). Whoever holds the
// master key can check that the RM issued the identifier unchanged; nobody without it can
// make or alter one.
//
// Identifier format, version 2: u8 version (= 2) | u8 kind ('C' container, 'A' AMRM) | the
// token's protobuf message (proto/weft/v1/tokens.proto, as YARN's *TokenIdentifierProto) in
// deterministic encoding; nothing follows. Decoders accept only that canonical encoding, so
// each value has exactly one identifier, and the kind byte keeps one kind of token from being
// read as the other.
#ifndef WEFT_SECURITY_TOKENS_H_
#define WEFT_SECURITY_TOKENS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/master_key.h"

namespace weft::security {

inline constexpr uint8_t kTokenFormatVersion = 2;  // 1: a hand-made encoding, retired
// Length of a token's password (an HMAC-SHA256 digest), in bytes.
inline constexpr size_t kTokenPasswordBytes = 32;

// What a container token grants: starting `container_id` on `node_id` for `user`.
struct ContainerTokenData {
  std::string container_id;
  std::string node_id;  // host:port of the NM that may start it
  std::string user;
  std::string resource;   // formatted resource, e.g. "memory-mb=1024,vcores=1"
  int64_t expiry_ms = 0;  // the token is refused at and after this time
  int32_t master_key_id = 0;
  int64_t rm_epoch = 0;
  std::string app_id;
  // The app's view ACL, as submitted ("" = nobody besides the owner and admins): who may read
  // its container logs on the NM.
  std::string view_acl;
  // The container's version (YARN's): 0 as allocated, +1 for each resource update the RM
  // makes. An update token grants `resource` from this version on (nm/node_manager.h).
  int32_t version = 0;
  // The container's allocation tags (YARN's), as allocated; empty for a plain ask. The NM
  // records them with the container and reports them when it registers, for RM recovery.
  std::vector<std::string> allocation_tags;
  // The device shares it grants (issue 32), each "gpu:<index>=<milli>" (common/device_share.h),
  // in increasing index; empty for an ask without devices.
  std::vector<std::string> devices;

  friend bool operator==(const ContainerTokenData&, const ContainerTokenData&) = default;
};

// What an AMRM token grants: talking to the RM's AmService as `app_attempt_id`.
struct AmRmTokenData {
  std::string app_attempt_id;
  int32_t master_key_id = 0;
  int64_t expiry_ms = 0;  // the token is refused at and after this time

  friend bool operator==(const AmRmTokenData&, const AmRmTokenData&) = default;
};

// A token as carried on the wire; both fields are raw bytes.
struct Token {
  std::string identifier;  // canonical serialization of the token data (format above)
  std::string password;    // HMAC-SHA256(identifier) under the master key, kTokenPasswordBytes

  friend bool operator==(const Token&, const Token&) = default;
};

// HMAC-SHA256 of `message` under `key`: 32 raw bytes.
std::string HmacSha256(absl::string_view key, absl::string_view message);

// True iff `token.password` is the HMAC of `token.identifier` under `key`. Compares in
// constant time (CRYPTO_memcmp), so timing reveals nothing about the correct password.
// Checks nothing else (not the key id, not any expiry).
bool PasswordMatches(const Token& token, const MasterKey& key);

// Canonical identifiers. Encoding never fails; Decode(Encode(x)) == x, and a successful
// Decode(b) gives Encode(Decode(b)) == b.
std::string EncodeContainerTokenIdentifier(const ContainerTokenData& data);
std::string EncodeAmRmTokenIdentifier(const AmRmTokenData& data);

// Parse an identifier from untrusted bytes (protobuf's parser: bounded reads). InvalidArgument
// "malformed <kind> identifier (<n> bytes): <why>" for an unknown version, the other kind of
// token, a body that does not parse, or one that is not the canonical encoding (trailing or
// repeated fields). Decoding authenticates nothing:
// use the Verify functions for that.
absl::StatusOr<ContainerTokenData> DecodeContainerToken(absl::string_view identifier);
absl::StatusOr<AmRmTokenData> DecodeAmRmToken(absl::string_view identifier);

// Sign `data` under `key`. The identifier records `key.id` as the master key id; the
// `master_key_id` in `data` is ignored. The caller picks the expiry (usually now + token
// lifetime); the token is accepted only while both it and `key` are unexpired.
Token IssueContainerToken(const ContainerTokenData& data, const MasterKey& key);
Token IssueAmRmToken(const AmRmTokenData& data, const MasterKey& key);

// The RM side of an AMRM token: accepts it iff the identifier is well formed, its master key
// is known to `keys` and unexpired, the password matches, now_ms < expiry_ms, and it was
// issued for `expected_attempt_id`. Every refusal is PermissionDenied with a message that
// says which check failed:
//   "AMRM token for <attempt>: bad signature" | ": unknown master key <id>" |
//   ": master key <id> expired at <ms> (now <ms>)" | ": expired at <ms> (now <ms>)" |
//   ": issued for <attempt>, expected <attempt>"; or, for bytes that do not parse,
//   "malformed AMRM token identifier (<n> bytes): <reason>".
absl::StatusOr<AmRmTokenData> VerifyAmRmToken(const Token& token, const MasterKeyManager& keys,
                                              absl::string_view expected_attempt_id,
                                              int64_t now_ms);
// The same checks against a copy of a manager's keys (MasterKeyManager::Keys()), which other
// threads may hold, for whatever attempt the token was issued for: the caller checks that
// attempt itself. The RM's gRPC threads verify with one before a call reaches the RM loop.
absl::StatusOr<AmRmTokenData> VerifyAmRmTokenOfAnyAttempt(const Token& token,
                                                          const std::vector<MasterKey>& keys,
                                                          int64_t now_ms);

}  // namespace weft::security

#endif  // WEFT_SECURITY_TOKENS_H_
