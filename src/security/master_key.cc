// Copyright Weft authors.
#include "security/master_key.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft::security {
namespace {

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  }
  return sum;
}

}  // namespace

MasterKeyManager::MasterKeyManager(std::string purpose, int64_t roll_interval_ms,
                                   int64_t key_lifetime_ms, SecretSource* secrets)
    : purpose_(std::move(purpose)),
      roll_interval_ms_(roll_interval_ms),
      key_lifetime_ms_(key_lifetime_ms),
      secrets_(secrets) {
  CheckOrDie(secrets_ != nullptr, "MasterKeyManager needs a SecretSource");
}

absl::Status MasterKeyManager::ValidateIntervals() const {
  if (roll_interval_ms_ <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("master keys '", purpose_,
                                                   "': roll interval must be positive, got ",
                                                   roll_interval_ms_, " ms"));
  }
  // key_lifetime > 2 * roll_interval, written so that it cannot overflow.
  if (key_lifetime_ms_ <= roll_interval_ms_ ||
      key_lifetime_ms_ - roll_interval_ms_ <= roll_interval_ms_) {
    return absl::InvalidArgumentError(
        absl::StrCat("master keys '", purpose_, "': key lifetime (", key_lifetime_ms_,
                     " ms) must exceed twice the roll interval (", roll_interval_ms_, " ms)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<MasterKey> MasterKeyManager::MakeKey(int64_t now_ms) {
  if (next_id_ > std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(
        absl::StrCat("master keys '", purpose_, "': key ids exhausted"));
  }
  absl::StatusOr<std::string> secret = secrets_->Generate(kMasterKeySecretBytes);
  if (!secret.ok()) {
    return absl::Status(secret.status().code(),
                        absl::StrCat("master keys '", purpose_, "': making key ", next_id_, ": ",
                                     secret.status().message()));
  }
  if (secret->size() != kMasterKeySecretBytes) {
    return absl::InternalError(absl::StrCat("master keys '", purpose_, "': secret source gave ",
                                            secret->size(), " bytes, asked for ",
                                            kMasterKeySecretBytes));
  }
  MasterKey key;
  key.id = static_cast<int32_t>(next_id_++);
  key.secret = *std::move(secret);
  key.created_ms = now_ms;
  key.expires_ms = SaturatingAdd(now_ms, key_lifetime_ms_);
  return key;
}

absl::Status MasterKeyManager::Start(int64_t now_ms) {
  if (absl::Status s = ValidateIntervals(); !s.ok()) return s;
  if (started()) {
    return absl::FailedPreconditionError(
        absl::StrCat("master keys '", purpose_, "': already started"));
  }
  absl::StatusOr<MasterKey> current = MakeKey(now_ms);
  if (!current.ok()) return current.status();
  absl::StatusOr<MasterKey> next = MakeKey(now_ms);
  if (!next.ok()) return next.status();  // the id consumed by `current` is simply skipped
  keys_.push_back(*std::move(current));
  keys_.push_back(*std::move(next));
  return absl::OkStatus();
}

const MasterKey& MasterKeyManager::current() const {
  CheckOrDie(started(), "MasterKeyManager::current() before Start()/Restore()");
  return keys_[keys_.size() - 2];
}

const MasterKey& MasterKeyManager::next() const {
  CheckOrDie(started(), "MasterKeyManager::next() before Start()/Restore()");
  return keys_.back();
}

int64_t MasterKeyManager::next_roll_ms() const {
  // The next key was made at the instant the current one became current.
  return SaturatingAdd(next().created_ms, roll_interval_ms_);
}

const MasterKey* MasterKeyManager::Find(int32_t id) const {
  for (const MasterKey& key : keys_) {
    if (key.id == id) return &key;
  }
  return nullptr;
}

std::vector<MasterKey> MasterKeyManager::Keys() const { return keys_; }

void MasterKeyManager::Promote(MasterKey new_next) { keys_.push_back(std::move(new_next)); }

void MasterKeyManager::DropExpiredRetired(int64_t now_ms) {
  // Retired keys are all but the last two.
  const auto retired_end = keys_.end() - 2;
  const auto kept = std::remove_if(keys_.begin(), retired_end, [now_ms](const MasterKey& key) {
    return key.expires_ms <= now_ms;
  });
  keys_.erase(kept, retired_end);
}

absl::StatusOr<bool> MasterKeyManager::RollIfDue(int64_t now_ms) {
  bool rolled = false;
  if (now_ms >= next_roll_ms()) {
    absl::StatusOr<MasterKey> key = MakeKey(now_ms);
    if (!key.ok()) return key.status();
    Promote(*std::move(key));
    rolled = true;
    // A long pause may leave the promoted key already expired: it must not sign anything.
    if (current().expires_ms <= now_ms) {
      absl::StatusOr<MasterKey> again = MakeKey(now_ms);
      if (!again.ok()) return again.status();
      Promote(*std::move(again));
    }
  }
  DropExpiredRetired(now_ms);
  return rolled;
}

absl::StatusOr<bool> MasterKeyManager::Roll(int64_t now_ms) {
  if (!started()) {
    return absl::FailedPreconditionError(
        absl::StrCat("master keys '", purpose_, "': Roll() before Start() or Restore()"));
  }
  return RollIfDue(now_ms);
}

absl::Status MasterKeyManager::Restore(std::vector<MasterKey> keys, int64_t now_ms) {
  if (absl::Status s = ValidateIntervals(); !s.ok()) return s;
  const std::string context = absl::StrCat("restoring master keys '", purpose_, "': ");
  if (keys.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(context, "need at least a current and a next key, got ", keys.size()));
  }
  std::sort(keys.begin(), keys.end(),
            [](const MasterKey& a, const MasterKey& b) { return a.id < b.id; });
  for (size_t i = 0; i < keys.size(); ++i) {
    const MasterKey& key = keys[i];
    if (key.id <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(context, "key id ", key.id, " is not positive"));
    }
    if (i > 0 && keys[i - 1].id == key.id) {
      return absl::InvalidArgumentError(absl::StrCat(context, "key id ", key.id, " appears twice"));
    }
    if (key.secret.size() != kMasterKeySecretBytes) {
      return absl::InvalidArgumentError(absl::StrCat(context, "key ", key.id, " has a ",
                                                     key.secret.size(), "-byte secret, expected ",
                                                     kMasterKeySecretBytes));
    }
    if (key.expires_ms < key.created_ms) {
      return absl::InvalidArgumentError(absl::StrCat(context, "key ", key.id, " expires at ",
                                                     key.expires_ms, " ms, before its creation at ",
                                                     key.created_ms, " ms"));
    }
  }
  next_id_ = std::max<int64_t>(next_id_, static_cast<int64_t>(keys.back().id) + 1);
  keys_ = std::move(keys);
  absl::StatusOr<bool> rolled = RollIfDue(now_ms);
  if (!rolled.ok()) {
    return absl::Status(
        rolled.status().code(),
        absl::StrCat(context, "rolling after restore: ", rolled.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace weft::security
