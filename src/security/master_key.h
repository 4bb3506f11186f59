// Copyright Weft authors. Rolling RM master keys that sign container and AMRM tokens.
#ifndef WEFT_SECURITY_MASTER_KEY_H_
#define WEFT_SECURITY_MASTER_KEY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "security/secret_source.h"

namespace weft::security {

// Length of a master key's secret, in bytes (256 bits, the HMAC-SHA256 output size).
inline constexpr size_t kMasterKeySecretBytes = 32;

// One master key. Tokens name the key that signed them by `id`; a key verifies tokens only
// while now_ms < expires_ms. The secret must never be logged.
struct MasterKey {
  int32_t id = 0;          // > 0; strictly increasing per manager, never reused
  std::string secret;      // kMasterKeySecretBytes random bytes
  int64_t created_ms = 0;  // when the key was made
  int64_t expires_ms = 0;  // first instant (ms) at which the key no longer verifies anything

  friend bool operator==(const MasterKey&, const MasterKey&) = default;
};

// The RM's rolling master keys for one purpose ("container" or "amrm").
//
// At every moment there is a *current* key, which signs new tokens, and a *next* key, made
// one roll interval ahead and already handed to NodeManagers so they know it before it
// starts signing. A roll makes next the current key and creates a new next key; the old
// current key is *retired* but kept (Find() still returns it) until its expiry, so tokens
// issued just before the roll stay valid. A key is next for one interval and current for
// one more, so `key_lifetime_ms` must exceed 2 * `roll_interval_ms`; to keep every token
// valid until its own expiry choose key_lifetime_ms >= 2 * roll_interval_ms + the longest
// token lifetime (a token is accepted only while both it and its key are unexpired).
//
// Pure: time is an argument (ms, any monotonic epoch shared with the verifiers), randomness
// comes from the injected SecretSource. Thread-compatible: owned by the RM's event loop.
class MasterKeyManager {
 public:
  // `purpose` names the keys in error messages. `secrets` is not owned and must outlive the
  // manager. The intervals are validated by Start() and Restore().
  MasterKeyManager(std::string purpose, int64_t roll_interval_ms, int64_t key_lifetime_ms,
                   SecretSource* secrets);

  MasterKeyManager(const MasterKeyManager&) = delete;
  MasterKeyManager& operator=(const MasterKeyManager&) = delete;

  // Creates the first current and next keys at `now_ms`.
  // InvalidArgument for bad intervals; FailedPrecondition when already started or restored;
  // the SecretSource's error when it cannot deliver. On error nothing changes.
  absl::Status Start(int64_t now_ms);

  // Rolls when `now_ms` >= (the time the current key became current) + roll_interval_ms:
  // next becomes current and a new next key is made at `now_ms`. If the promoted key has
  // itself already expired (the manager was not rolled for a long time) it rolls again, so
  // afterwards current() is always unexpired. Every call, rolled or not, drops retired keys
  // with expires_ms <= now_ms. Returns whether it rolled; after a roll, send the new keys to
  // the NMs and persist Keys().
  // FailedPrecondition before Start()/Restore() or when key ids are exhausted; the
  // SecretSource's error when it cannot deliver (the keys stay consistent, but may have
  // rolled once already if two rolls were due).
  absl::StatusOr<bool> Roll(int64_t now_ms);

  bool started() const { return !keys_.empty(); }

  // The key that signs new tokens / the key that will sign after the next roll.
  // Precondition: started() (aborts otherwise).
  const MasterKey& current() const;
  const MasterKey& next() const;

  // The current, next or a retired key with this id, or nullptr. A returned retired key may
  // have expired since the last Roll(): callers must still check expires_ms against now.
  // The pointer is valid until the next non-const call.
  const MasterKey* Find(int32_t id) const;

  // Every retained key (retired ones, then current, then next), ordered by id; for the state
  // store. Empty before Start()/Restore().
  std::vector<MasterKey> Keys() const;

  // Replaces all state with `keys` as returned by Keys() before an RM restart: the highest id
  // is next, the one below it current, older ones retired (dropped if expired at `now_ms`).
  // New keys get ids above every id restored or ever made here, so ids are never reused;
  // callers must therefore persist Keys() after every roll, before handing out its keys.
  // Then rolls if due, as Roll(now_ms) would (persist Keys() again afterwards).
  // InvalidArgument for bad intervals or bad keys (fewer than two, duplicate or non-positive
  // ids, a secret of the wrong length, expires_ms < created_ms); on that error nothing
  // changes. Errors from the roll as in Roll().
  absl::Status Restore(std::vector<MasterKey> keys, int64_t now_ms);

  const std::string& purpose() const { return purpose_; }
  int64_t roll_interval_ms() const { return roll_interval_ms_; }
  int64_t key_lifetime_ms() const { return key_lifetime_ms_; }

  // The earliest time at which Roll() will roll. Precondition: started().
  int64_t next_roll_ms() const;

 private:
  absl::Status ValidateIntervals() const;
  // Makes a key with a fresh id and secret created at `now_ms`; does not change keys_.
  absl::StatusOr<MasterKey> MakeKey(int64_t now_ms);
  // Appends `new_next`: the old next key becomes current, the old current one retired.
  void Promote(MasterKey new_next);
  void DropExpiredRetired(int64_t now_ms);
  absl::StatusOr<bool> RollIfDue(int64_t now_ms);

  std::string purpose_;
  int64_t roll_interval_ms_;
  int64_t key_lifetime_ms_;
  SecretSource* secrets_;  // not owned

  // Sorted by id; back() is next, the one before it current, the rest retired. Either empty
  // (not started) or at least two keys.
  std::vector<MasterKey> keys_;
  int64_t next_id_ = 1;  // int64 so that exhausting int32 ids is detectable
};

}  // namespace weft::security

#endif  // WEFT_SECURITY_MASTER_KEY_H_
