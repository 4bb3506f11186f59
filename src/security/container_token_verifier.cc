// Copyright Weft authors.
#include "security/container_token_verifier.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace weft::security {

void ContainerTokenVerifier::UpdateKeys(const MasterKey& current, const MasterKey& next) {
  keys_.insert_or_assign(current.id, current);
  keys_.insert_or_assign(next.id, next);
}

void ContainerTokenVerifier::RecordStarted(absl::string_view container_id,
                                           int64_t token_expiry_ms) {
  auto [it, inserted] = started_.try_emplace(container_id, token_expiry_ms);
  if (!inserted) {
    if (it->second >= token_expiry_ms) return;  // already remembered at least that long
    it->second = token_expiry_ms;
  }
  started_by_expiry_.emplace(token_expiry_ms, std::string(container_id));
}

void ContainerTokenVerifier::DropExpired(int64_t now_ms) {
  absl::erase_if(keys_, [now_ms](const auto& entry) { return entry.second.expires_ms <= now_ms; });
  while (!started_by_expiry_.empty() && started_by_expiry_.top().first <= now_ms) {
    const Expiry& top = started_by_expiry_.top();
    auto it = started_.find(top.second);
    // Skip stale heap entries: the id is remembered longer under a later expiry.
    if (it != started_.end() && it->second <= now_ms) started_.erase(it);
    started_by_expiry_.pop();
  }
}

absl::StatusOr<ContainerTokenData> ContainerTokenVerifier::VerifyStart(
    const Token& token, absl::string_view this_node_id, int64_t now_ms) {
  // A clock step backwards must not revive a token whose container id was already forgotten.
  latest_now_ms_ = std::max(latest_now_ms_, now_ms);
  absl::StatusOr<ContainerTokenData> result =
      Check(token, this_node_id, latest_now_ms_, Purpose::kStart);
  // Prune afterwards, so that a token under a just-expired key is refused as such rather
  // than as signed by an unknown key.
  DropExpired(latest_now_ms_);
  return result;
}

absl::StatusOr<ContainerTokenData> ContainerTokenVerifier::VerifyControl(
    const Token& token, absl::string_view this_node_id, int64_t now_ms) {
  latest_now_ms_ = std::max(latest_now_ms_, now_ms);
  return Check(token, this_node_id, latest_now_ms_, Purpose::kControl);
}

absl::StatusOr<ContainerTokenData> ContainerTokenVerifier::VerifyUpdate(
    const Token& token, absl::string_view this_node_id, int64_t now_ms) {
  latest_now_ms_ = std::max(latest_now_ms_, now_ms);
  absl::StatusOr<ContainerTokenData> result =
      Check(token, this_node_id, latest_now_ms_, Purpose::kUpdate);
  DropExpired(latest_now_ms_);
  return result;
}

absl::StatusOr<ContainerTokenData> ContainerTokenVerifier::Check(const Token& token,
                                                                 absl::string_view this_node_id,
                                                                 int64_t now_ms, Purpose purpose) {
  absl::StatusOr<ContainerTokenData> data = DecodeContainerToken(token.identifier);
  if (!data.ok()) {
    return absl::PermissionDeniedError(data.status().message());
  }
  // Identifier strings are untrusted until the signature is checked; keep them printable.
  const std::string prefix =
      absl::StrCat("container token for ", absl::CHexEscape(data->container_id), ": ");
  auto key = keys_.find(data->master_key_id);
  if (key == keys_.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat(prefix, "unknown master key ", data->master_key_id));
  }
  if (!PasswordMatches(token, key->second)) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "bad signature"));
  }
  if (now_ms >= key->second.expires_ms) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "master key ", key->second.id,
                                                    " expired at ", key->second.expires_ms,
                                                    " (now ", now_ms, ")"));
  }
  if (purpose != Purpose::kControl && now_ms >= data->expiry_ms) {
    return absl::PermissionDeniedError(
        absl::StrCat(prefix, "expired at ", data->expiry_ms, " (now ", now_ms, ")"));
  }
  if (data->node_id != this_node_id) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "issued for node ", data->node_id,
                                                    ", this is node ",
                                                    absl::CHexEscape(this_node_id)));
  }
  if (purpose != Purpose::kStart) return data;
  if (started_.contains(data->container_id)) {
    return absl::PermissionDeniedError(absl::StrCat(prefix, "already used (replay)"));
  }
  RecordStarted(data->container_id, data->expiry_ms);
  return data;
}

}  // namespace weft::security
