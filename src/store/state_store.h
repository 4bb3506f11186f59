// Copyright Weft authors. The ResourceManager's state store: what the RM must remember across
// a restart (applications, their attempts, master keys and the RM epoch) and the interface of
// the back-ends that keep it.
#ifndef WEFT_STORE_STATE_STORE_H_
#define WEFT_STORE_STATE_STORE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::store {

// Application and attempt states and final statuses are spelled as in store/state_names.h
// (the proto enums' names without prefix).

// Master key purposes: the key that signs container tokens and the one that signs AM-RM tokens.
inline constexpr absl::string_view kMasterKeyPurposes[] = {"container", "amrm"};

// One application as the RM last stored it. Times are milliseconds since the Unix epoch,
// 0 when the event has not happened yet.
struct ApplicationRecord {
  std::string app_id;  // non-empty; the key
  std::string name;
  std::string queue;
  std::string user;
  int32_t priority = 0;
  std::string state = "NEW";  // an application state (store/state_names.h)
  std::string final_status;   // "" or a final status (store/state_names.h)
  std::string diagnostics;
  int64_t submit_ms = 0;
  int64_t start_ms = 0;
  int64_t finish_ms = 0;
  int32_t max_attempts = 1;  // >= 1
  // Opaque bytes: the serialized submission context. May contain NUL bytes.
  std::string submission;

  friend bool operator==(const ApplicationRecord&, const ApplicationRecord&) = default;
};

// One attempt of an application; the key is (app_id, attempt_id). An attempt can only be
// stored while its application is stored, and goes away with it.
struct AttemptRecord {
  std::string app_id;           // non-empty; names a stored application
  int32_t attempt_id = 1;       // >= 1
  std::string state = "NEW";    // an attempt state (store/state_names.h)
  std::string am_container_id;  // "" until the AM container is allocated
  std::string node;             // node of the AM container, "" until allocated
  int32_t exit_status = 0;      // of the AM container
  std::string diagnostics;
  int64_t start_ms = 0;   // ms since the Unix epoch
  int64_t finish_ms = 0;  // ms since the Unix epoch, 0 while running

  friend bool operator==(const AttemptRecord&, const AttemptRecord&) = default;
};

// A master key the RM signs tokens with; the key is (purpose, key_id). Kept so that tokens
// issued before a restart still verify after it.
struct MasterKeyRecord {
  std::string purpose;     // one of kMasterKeyPurposes
  int32_t key_id = 0;      // any value; unique per purpose
  std::string secret;      // non-empty bytes; may contain NUL bytes
  int64_t created_ms = 0;  // ms since the Unix epoch
  int64_t expires_ms = 0;  // ms since the Unix epoch

  friend bool operator==(const MasterKeyRecord&, const MasterKeyRecord&) = default;
};

// What an admin decided about one node (AdminService RefreshNodes and NodeAttributes); the key
// is `node`. A node with neither is not stored.
struct NodeAdminRecord {
  std::string node;  // a node id or host name; non-empty, at most 255 bytes, no '/'
  bool decommissioned = false;
  // Attributes set centrally, winning over the NM's; "" = the NM's value is removed. Keys are
  // non-empty.
  std::map<std::string, std::string> attributes;

  friend bool operator==(const NodeAdminRecord&, const NodeAdminRecord&) = default;
};

// Everything a store holds, as returned by StateStore::Load().
struct RmState {
  int64_t epoch = 0;                    // 0 until BumpEpoch() is first called
  std::vector<ApplicationRecord> apps;  // sorted by app_id (bytewise)
  std::vector<AttemptRecord> attempts;  // sorted by (app_id, attempt_id)
  std::vector<MasterKeyRecord> keys;    // sorted by (purpose, key_id)
  std::vector<NodeAdminRecord> node_admin;  // sorted by node

  friend bool operator==(const RmState&, const RmState&) = default;
};

// Checks a record before it is stored. Returns OK or InvalidArgument naming the offending
// field, e.g. "application 'app_7': state 'DONE' is not one of NEW, SUBMITTED, ...".
// The StateStore calls these (store/state_backend.h); other modules may call them to fail early.
absl::Status ValidateApplicationRecord(const ApplicationRecord& app);
absl::Status ValidateAttemptRecord(const AttemptRecord& attempt);
absl::Status ValidateMasterKeyRecord(const MasterKeyRecord& key);
absl::Status ValidateMasterKeyPurpose(absl::string_view purpose);
absl::Status ValidateNodeAdminRecord(const NodeAdminRecord& node);
// Both records, and that the attempt belongs to the application (equal app_id).
absl::Status ValidateApplicationAndAttempt(const ApplicationRecord& app,
                                           const AttemptRecord& attempt);

// The RM's durable memory. Implementations: OpenSqliteStore() (store/sqlite_store.h), the
// embedded default, OpenZooKeeperStore() (store/zk_store.h), for HA, and NewMemoryStore()
// (store/memory_store.h), for tests; all are one class (store/state_backend.h) that applies the
// contract below over each back-end's primitives.
//
// Contract of every implementation:
//  - Durability: a mutating call (BumpEpoch, Put*, Remove*) that returns OK has been committed
//    and flushed to stable storage, so a crash right after it loses nothing a user was told
//    had succeeded. (The memory store keeps its state only as long as the object lives.)
//  - Atomicity: a call that fails leaves the stored state exactly as it was.
//  - Validation: records are checked with the Validate*Record() functions above before
//    anything is written; a bad record returns InvalidArgument naming the field.
//  - After Close(), every call except Close() returns FailedPrecondition.
//
// Thread-compatible: the RM's event loop is the only caller; calls must not overlap.
class StateStore {
 public:
  virtual ~StateStore() = default;

  // Returns everything stored, sorted as documented on RmState.
  virtual absl::StatusOr<RmState> Load() = 0;

  // Atomically increments the stored epoch and returns the new value: the first call on a
  // new store returns 1. The RM calls it once per start so that ids it mints (containers)
  // never repeat across restarts.
  virtual absl::StatusOr<int64_t> BumpEpoch() = 0;

  // Inserts the application, or replaces the stored one with the same app_id. Its stored
  // attempts are kept.
  virtual absl::Status PutApplication(const ApplicationRecord& app) = 0;

  // Inserts the attempt, or replaces the stored one with the same (app_id, attempt_id).
  // NotFound if its application is not stored.
  virtual absl::Status PutAttempt(const AttemptRecord& attempt) = 0;

  // PutApplication(app) and PutAttempt(attempt) in one transaction: both are stored or
  // neither is. InvalidArgument if attempt.app_id != app.app_id.
  virtual absl::Status PutApplicationAndAttempt(const ApplicationRecord& app,
                                                const AttemptRecord& attempt) = 0;

  // Removes the application and all its attempts. NotFound if it is not stored.
  virtual absl::Status RemoveApplication(absl::string_view app_id) = 0;

  // Inserts the key, or replaces the stored one with the same (purpose, key_id).
  virtual absl::Status PutMasterKey(const MasterKeyRecord& key) = 0;

  // Removes one key. InvalidArgument for an unknown purpose; NotFound if it is not stored.
  virtual absl::Status RemoveMasterKey(absl::string_view purpose, int32_t key_id) = 0;

  // In one transaction: inserts (or replaces) each record of `put` and removes the record of
  // each node of `remove` (nothing to do for one not stored). One admin command's nodes change
  // together or not at all.
  virtual absl::Status UpdateNodeAdmin(const std::vector<NodeAdminRecord>& put,
                                       const std::vector<std::string>& remove) = 0;

  // Releases the store's resources (files, locks). Idempotent. Destroying a store without
  // calling Close() closes it and drops any error.
  virtual absl::Status Close() = 0;
};

}  // namespace weft::store

#endif  // WEFT_STORE_STATE_STORE_H_
