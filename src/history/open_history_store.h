// Copyright Weft authors. Opening a HistoryStore by URL, for daemons and tools configured with
// one string.
#ifndef WEFT_HISTORY_OPEN_HISTORY_STORE_H_
#define WEFT_HISTORY_OPEN_HISTORY_STORE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "history/history_store.h"

namespace weft::history {

// Opens the store `url` names:
//   "memory"                         MemoryHistoryStore (nothing survives the process);
//   "sqlite:/abs/path.db" or "/abs/path.db"
//                                    SqliteHistoryStore at that absolute path (its directory is
//                                    created private if missing);
//   "postgresql://..." or "postgres://..."
//                                    PostgresHistoryStore (a libpq URI; the password in a
//                                    passfile, ?passfile=/etc/weft/pgpass, never in the URL).
// InvalidArgument naming the url for anything else (a relative path included); otherwise the
// back-end's Open errors (e.g. Unavailable when the PostgreSQL server cannot be reached).
absl::StatusOr<std::unique_ptr<HistoryStore>> OpenHistoryStore(absl::string_view url);

}  // namespace weft::history

#endif  // WEFT_HISTORY_OPEN_HISTORY_STORE_H_
