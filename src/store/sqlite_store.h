// Copyright Weft authors. The embedded state store: one SQLite database file.
#ifndef WEFT_STORE_SQLITE_STORE_H_
#define WEFT_STORE_SQLITE_STORE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "store/state_store.h"

namespace weft::store {

// How long a store call waits for a lock on the database file held by another process (e.g.
// the sqlite3 shell reading it) before failing with Unavailable, in ms.
inline constexpr int kSqliteBusyTimeoutMs = 5000;

// Opens the SQLite state store at `path`, creating the file (and its parent directories) if
// missing. The database uses WAL journaling with synchronous=FULL, so each mutating call is
// fsynced before it returns (see StateStore).
//
// Only one store may use a path at a time: the store holds an exclusive flock(2) on
// "<path>.lock" (a file it creates and leaves behind) until Close(). The kernel releases it when
// the holding process dies, so a crashed RM never leaves a stale lock.
//
// Errors, all naming the path:
//  - FailedPrecondition "state store '<path>' is in use by another process" while another open
//    store (in this process or another) holds the path;
//  - FailedPrecondition "state store '<path>': file is not a database" for a file that is not
//    SQLite; FailedPrecondition "...: file is not a Weft state store ..." for another program's
//    SQLite database; FailedPrecondition "...: schema version N is newer than this binary
//    supports (1) ..." or "...: unknown schema version N" (schema_version table);
//  - other codes for file system and SQLite failures (e.g. PermissionDenied, DataLoss).
absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStore(absl::string_view path);

}  // namespace weft::store

#endif  // WEFT_STORE_SQLITE_STORE_H_
