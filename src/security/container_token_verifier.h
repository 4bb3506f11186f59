// Copyright Weft authors. The NodeManager's check of container tokens on StartContainers.
#ifndef WEFT_SECURITY_CONTAINER_TOKEN_VERIFIER_H_
#define WEFT_SECURITY_CONTAINER_TOKEN_VERIFIER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::security {

// Holds the container master keys an NM learnt from the RM's heartbeat replies, and verifies
// the container token of every container start, refusing replays.
//
// Memory is bounded: a key is forgotten once expired, a started container id once its token
// has expired (from then on the token is refused as expired anyway, so forgetting it cannot
// readmit a replay). Expired entries are dropped on each VerifyStart().
//
// Pure: time is an argument (ms, on the same clock base as the RM's token expiries). Time
// never runs backwards here: VerifyStart() uses the latest now_ms it has seen, so a clock
// step back cannot revive a token whose container id was already forgotten.
//
// Thread-compatible: the NM's event loop owns it and serializes all calls.
class ContainerTokenVerifier {
 public:
  ContainerTokenVerifier() = default;
  ContainerTokenVerifier(const ContainerTokenVerifier&) = delete;
  ContainerTokenVerifier& operator=(const ContainerTokenVerifier&) = delete;

  // Learns the RM's current and next container master keys (from a heartbeat reply). Keys seen
  // earlier stay usable until their expiry, so tokens signed just before a roll still verify.
  // A key with an already known id replaces the old one (the RM lost it in a crash).
  void UpdateKeys(const MasterKey& current, const MasterKey& next);

  // Accepts a container start iff the identifier is well formed, its master key is known and
  // unexpired, the password matches, now_ms < expiry_ms, it was issued for `this_node_id`, and
  // this container id has not been started here under an unexpired token. On success the
  // container id is remembered until the token's expiry. Every refusal is PermissionDenied and
  // leaves the replay memory unchanged; messages start "container token for <container id>: "
  // and end "bad signature" | "unknown master key <id>" |
  // "master key <id> expired at <ms> (now <ms>)" | "expired at <ms> (now <ms>)" |
  // "issued for node <A>, this is node <B>" | "already used (replay)";
  // or, for bytes that do not parse, "malformed container token identifier (<n> bytes): ...".
  absl::StatusOr<ContainerTokenData> VerifyStart(const Token& token, absl::string_view this_node_id,
                                                 int64_t now_ms);

  // Accepts a container resource update (ContainerService.UpdateContainers, or the RM's
  // NodeHeartbeatResponse.containers_to_update): the checks of VerifyStart (well formed, master
  // key known and unexpired, password matching, now_ms < expiry_ms, issued for
  // `this_node_id`) without the replay memory: an update names a container that was started,
  // and its replays are refused by version (the NodeManager keeps each container's). Nothing
  // is remembered. Refusals are PermissionDenied with the messages of VerifyStart.
  absl::StatusOr<ContainerTokenData> VerifyUpdate(const Token& token,
                                                  absl::string_view this_node_id, int64_t now_ms);

  // Authorises a stop or status call on the container the token names: well formed, master
  // key known and unexpired, password matching, issued for `this_node_id`. The token's own
  // expiry is not checked (a container outlives its start token, as YARN's NMToken outlives
  // its container token) and nothing is remembered. Refusals are PermissionDenied with the
  // messages of VerifyStart.
  absl::StatusOr<ContainerTokenData> VerifyControl(const Token& token,
                                                   absl::string_view this_node_id,
                                                   int64_t now_ms);

  // Marks `container_id` as started until `token_expiry_ms` without a token; for NM recovery,
  // which re-reads its running containers after a restart so that their tokens stay spent.
  void RecordStarted(absl::string_view container_id, int64_t token_expiry_ms);

  // Number of keys / started container ids currently remembered (includes entries that have
  // expired but have not been dropped yet).
  size_t key_count() const { return keys_.size(); }
  // Whether key `id` is known and unexpired at `now_ms` (a token under it may verify).
  bool HoldsKey(int32_t id, int64_t now_ms) const {
    auto it = keys_.find(id);
    return it != keys_.end() && now_ms < it->second.expires_ms;
  }
  size_t started_count() const { return started_.size(); }

 private:
  // What a token is checked for: kStart and kUpdate check its expiry; kStart also refuses
  // (then records) a replay.
  enum class Purpose { kStart, kUpdate, kControl };
  absl::StatusOr<ContainerTokenData> Check(const Token& token, absl::string_view this_node_id,
                                           int64_t now_ms, Purpose purpose);
  // Drops keys with expires_ms <= now_ms and started ids whose token expired at or before now.
  void DropExpired(int64_t now_ms);

  int64_t latest_now_ms_ = std::numeric_limits<int64_t>::min();
  absl::flat_hash_map<int32_t, MasterKey> keys_;
  // Started container id -> its token's expiry (ms).
  absl::flat_hash_map<std::string, int64_t> started_;
  // (expiry ms, container id), earliest first: finds the started ids to forget without a scan.
  // An entry is stale when started_ holds a later expiry for the id (after RecordStarted).
  using Expiry = std::pair<int64_t, std::string>;
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> started_by_expiry_;
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_CONTAINER_TOKEN_VERIFIER_H_
