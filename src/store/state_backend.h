// Copyright Weft authors. What every StateStore back-end shares: the StateStore contract
// (validation, the NotFound rules, the sorting of Load(), the closed checks, the atomicity of
// PutApplicationAndAttempt) implemented once, by NewBackedStateStore(), over the few primitives
// of a StateBackend, which each back-end (memory, SQLite, ZooKeeper) implements. Internal to
// store/; callers use StateStore and the Open*/New* functions.
#ifndef WEFT_STORE_STATE_BACKEND_H_
#define WEFT_STORE_STATE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_store.h"

namespace weft::store {

// The operations of one Commit(). Records arrive validated; a back-end that stores bytes
// stores them as store/state_records.h encodes them.
struct PutApplicationOp {
  ApplicationRecord app;  // inserted, or replaces the stored one (its attempts are kept)
};
struct PutAttemptOp {
  AttemptRecord attempt;  // inserted, or replaces the stored one
  // Precondition: its application is stored (checked in the commit's own transaction).
  // false only when the same commit puts the application first.
  bool require_application = true;
};
struct RemoveApplicationOp {
  std::string app_id;  // precondition: stored; its attempts go with it
};
struct PutMasterKeyOp {
  MasterKeyRecord key;  // inserted, or replaces the stored one
};
struct RemoveMasterKeyOp {
  std::string purpose;  // precondition: (purpose, key_id) is stored
  int32_t key_id = 0;
};
struct PutNodeAdminOp {
  NodeAdminRecord node;  // inserted, or replaces the stored one
};
struct RemoveNodeAdminOp {
  std::string node;  // no precondition: removing what is not stored changes nothing
};
using StateOp = std::variant<PutApplicationOp, PutAttemptOp, RemoveApplicationOp, PutMasterKeyOp,
                             RemoveMasterKeyOp, PutNodeAdminOp, RemoveNodeAdminOp>;

// A back-end's primitives. The StateStore returned by NewBackedStateStore() calls them only
// while open and one at a time, with records that passed the Validate*Record() checks.
// Errors carry the back-end's description and the caller's `what` ("storing application
// 'app_7'"); the store adds nothing to them.
class StateBackend {
 public:
  virtual ~StateBackend() = default;
  StateBackend(const StateBackend&) = delete;
  StateBackend& operator=(const StateBackend&) = delete;

  // Names the store in messages, e.g. "state store '/var/lib/weft/rm.db'".
  const std::string& Description() const { return description_; }

  // Everything stored, in any order; DataLoss for what cannot be decoded. The store validates
  // and sorts the result.
  virtual absl::StatusOr<RmState> ReadAll() = 0;

  // Atomically increments the stored epoch (0 when never bumped) and returns the new value;
  // durable when it returns.
  virtual absl::StatusOr<int64_t> BumpEpoch() = 0;

  // Applies `ops` in order, all or nothing, durably. Returns false, writing nothing, when a
  // precondition of an op (see the ops) does not hold; the check is part of the commit, never
  // a separate earlier read. A RemoveApplicationOp always comes alone; a back-end with a
  // bounded transaction size may remove a large application's attempts in several
  // transactions, the application last (a repeated call finishes it).
  virtual absl::StatusOr<bool> Commit(absl::string_view what, const std::vector<StateOp>& ops) = 0;

  // Releases the back-end's resources. Called once; the destructor must also release them.
  virtual absl::Status Close() = 0;

 protected:
  explicit StateBackend(std::string description) : description_(std::move(description)) {}

 private:
  const std::string description_;
};

// The StateStore over `backend` (the one implementation of the StateStore rules).
std::unique_ptr<StateStore> NewBackedStateStore(std::unique_ptr<StateBackend> backend);

// Validates every record of a state read from `description`'s store: DataLoss
// "<description>: stored record is invalid: ..." for the first bad one. Load() calls it; a
// back-end may too (the ZooKeeper migration before rewriting records).
absl::Status ValidateStoredState(absl::string_view description, const RmState& state);

}  // namespace weft::store

#endif  // WEFT_STORE_STATE_BACKEND_H_
