// Copyright Weft authors. What every SQLite-backed store in Weft shares: result codes and errno
// as absl::Status codes, durable directory creation, prepared-statement ownership, parameter
// binding and type-checked row reading. Internal to the stores (the RM state store and the
// federation state store); not a general SQLite wrapper.
#ifndef WEFT_STORE_SQLITE_UTIL_H_
#define WEFT_STORE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::store::sqlite {

// The absl code for an SQLite result code (primary code; extended bits ignored): e.g. BUSY ->
// Unavailable, CORRUPT -> DataLoss, CONSTRAINT -> FailedPrecondition.
absl::StatusCode CodeForSqlite(int rc);
// The absl code for an errno value, and an error "<what>: <strerror>" with it.
absl::StatusCode CodeForErrno(int err);
absl::Status ErrnoError(int err, absl::string_view what);

// Flushes a directory's entries (files created in it) to stable storage.
absl::Status SyncDirectory(const std::filesystem::path& dir);
// Creates the missing directories above `file` (mode 0700: they hold a store) and makes their
// entries durable.
absl::Status CreateParentDirectories(const std::filesystem::path& file);

struct StatementDeleter {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StatementPtr = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

// Resets a statement and clears its bindings when it goes out of scope, so that it can be run
// again and holds no pointers into the caller's strings.
class ScopedReset {
 public:
  explicit ScopedReset(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~ScopedReset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  ScopedReset(const ScopedReset&) = delete;
  ScopedReset& operator=(const ScopedReset&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

// A value bound to a statement parameter. Text and blob values point into the caller's
// memory, which must stay valid until the statement is reset.
struct Param {
  enum class Kind { kInt, kText, kBlob };
  Kind kind;
  int64_t integer;
  absl::string_view bytes;
};
inline Param Int(int64_t value) { return {Param::Kind::kInt, value, {}}; }
inline Param Text(absl::string_view value) { return {Param::Kind::kText, 0, value}; }
inline Param Blob(absl::string_view value) { return {Param::Kind::kBlob, 0, value}; }

// Binds `params` to parameters 1..n of `stmt` (empty values stay empty TEXT/BLOB, not NULL).
// Returns an SQLite result code.
int BindAll(sqlite3_stmt* stmt, std::initializer_list<Param> params);

// Reads the columns of the current row of a query, checking each value's type. The first
// mismatch is kept in problem().
class RowReader {
 public:
  RowReader(sqlite3_stmt* stmt, absl::string_view table) : stmt_(stmt), table_(table) {}

  // A TEXT column (want_blob false) or a BLOB column (want_blob true), as raw bytes.
  std::string Bytes(int col, bool want_blob = false);
  int64_t Int64(int col);
  int32_t Int32(int col);  // an INTEGER that fits in 32 bits

  // "" if every column read so far was well-typed; else "<table>.<column> <what is wrong>".
  const std::string& problem() const { return problem_; }

 private:
  void Bad(int col, absl::string_view why);

  sqlite3_stmt* stmt_;
  absl::string_view table_;
  std::string problem_;
};

}  // namespace weft::store::sqlite

#endif  // WEFT_STORE_SQLITE_UTIL_H_
