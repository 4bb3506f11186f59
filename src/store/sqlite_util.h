// Copyright Weft authors. What every SQLite-backed store in Weft shares: result codes as
// absl::Status codes, prepared-statement ownership, parameter binding and (type-checked) row
// reading. Internal to the stores (the RM state store, the federation state store and the
// NodeManager's state store); not a general SQLite wrapper.
#ifndef WEFT_STORE_SQLITE_UTIL_H_
#define WEFT_STORE_SQLITE_UTIL_H_

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/errors.h"
#include "common/files.h"

namespace weft::store::sqlite {

// The absl code for an SQLite result code (primary code; extended bits ignored): e.g. BUSY ->
// Unavailable, CORRUPT -> DataLoss, CONSTRAINT -> FailedPrecondition.
absl::StatusCode CodeForSqlite(int rc);

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
  enum class Kind { kInt, kText, kBlob, kNull };
  Kind kind;
  int64_t integer;
  absl::string_view bytes;
};
inline Param Int(int64_t value) { return {Param::Kind::kInt, value, {}}; }
inline Param Text(absl::string_view value) { return {Param::Kind::kText, 0, value}; }
inline Param Blob(absl::string_view value) { return {Param::Kind::kBlob, 0, value}; }
inline Param Null() { return {Param::Kind::kNull, 0, {}}; }

// Binds `param` to parameter `index` (1-based) of `stmt`; an empty value stays an empty
// TEXT/BLOB, not NULL. Returns an SQLite result code.
int Bind(sqlite3_stmt* stmt, int index, const Param& param);
// Binds `params` to parameters 1..n of `stmt`; the first failure's SQLite result code, or
// SQLITE_OK.
int BindAll(sqlite3_stmt* stmt, std::initializer_list<Param> params);

// Column `col` of the current row as raw bytes, whatever its type ("" for NULL and for a
// zero-length value).
std::string ColumnBytes(sqlite3_stmt* stmt, int col);

// Reads the columns of the current row of a query, checking each value's type. The first
// mismatch is kept in problem().
class RowReader {
 public:
  RowReader(sqlite3_stmt* stmt, absl::string_view table) : stmt_(stmt), table_(table) {}

  // A TEXT column (want_blob false) or a BLOB column (want_blob true), as raw bytes.
  std::string Bytes(int col, bool want_blob = false);
  int64_t Int64(int col);
  int32_t Int32(int col);  // an INTEGER that fits in 32 bits
  // Whether the column is NULL (a nullable column: read it with Int64 etc. only when not).
  bool IsNull(int col) const;

  // "" if every column read so far was well-typed; else "<table>.<column> <what is wrong>".
  const std::string& problem() const { return problem_; }

 private:
  void Bad(int col, absl::string_view why);

  sqlite3_stmt* stmt_;
  absl::string_view table_;
  std::string problem_;
};

// Makes this process the one user of the SQLite file `db_path`: an exclusive flock on
// `<db_path>.lock` (created 0600, never through a symbolic link), held while the returned
// descriptor is open. A separate file, because closing any descriptor of the database itself
// drops SQLite's POSIX locks on it. `what` names the file in errors ("state store '/x'");
// FailedPrecondition "<what> is in use by <holder> (lock file '...')" when another holds it.
absl::StatusOr<int> LockExclusively(const std::string& db_path, absl::string_view what,
                                    absl::string_view holder);

}  // namespace weft::store::sqlite

#endif  // WEFT_STORE_SQLITE_UTIL_H_
