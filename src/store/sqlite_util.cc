// Copyright Weft authors.
#include "store/sqlite_util.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace weft::store::sqlite {

absl::StatusCode CodeForSqlite(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CONSTRAINT:
    case SQLITE_NOTADB:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_SCHEMA:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kUnavailable;
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_FULL:
    case SQLITE_NOMEM:
      return absl::StatusCode::kResourceExhausted;
    case SQLITE_TOOBIG:
    case SQLITE_RANGE:
      return absl::StatusCode::kInvalidArgument;
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    default:
      return absl::StatusCode::kInternal;
  }
}

int Bind(sqlite3_stmt* stmt, int index, const Param& p) {
  // A null pointer would bind SQL NULL; an empty value must stay an empty TEXT or BLOB.
  const char* data = p.bytes.data() != nullptr ? p.bytes.data() : "";
  switch (p.kind) {
    case Param::Kind::kInt:
      return sqlite3_bind_int64(stmt, index, p.integer);
    case Param::Kind::kText:
      return sqlite3_bind_text64(stmt, index, data, p.bytes.size(), SQLITE_STATIC, SQLITE_UTF8);
    case Param::Kind::kBlob:
      return sqlite3_bind_blob64(stmt, index, data, p.bytes.size(), SQLITE_STATIC);
    case Param::Kind::kNull:
      return sqlite3_bind_null(stmt, index);
  }
  return SQLITE_MISUSE;
}

int BindAll(sqlite3_stmt* stmt, std::initializer_list<Param> params) {
  int index = 0;
  for (const Param& p : params) {
    if (int rc = Bind(stmt, ++index, p); rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

std::string ColumnBytes(sqlite3_stmt* stmt, int col) {
  // A zero-length BLOB reads as a null pointer.
  const void* data = sqlite3_column_blob(stmt, col);
  const int size = sqlite3_column_bytes(stmt, col);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

std::string RowReader::Bytes(int col, bool want_blob) {
  const int type = sqlite3_column_type(stmt_, col);
  if (type != (want_blob ? SQLITE_BLOB : SQLITE_TEXT)) {
    Bad(col, want_blob ? "is not a BLOB" : "is not TEXT");
    return {};
  }
  return ColumnBytes(stmt_, col);
}

bool RowReader::IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

int64_t RowReader::Int64(int col) {
  if (sqlite3_column_type(stmt_, col) != SQLITE_INTEGER) {
    Bad(col, "is not an INTEGER");
    return 0;
  }
  return sqlite3_column_int64(stmt_, col);
}

int32_t RowReader::Int32(int col) {
  const int64_t value = Int64(col);
  if (value < INT32_MIN || value > INT32_MAX) {
    Bad(col, absl::StrCat("value ", value, " does not fit in 32 bits"));
    return 0;
  }
  return static_cast<int32_t>(value);
}

void RowReader::Bad(int col, absl::string_view why) {
  if (problem_.empty()) {
    problem_ = absl::StrCat(table_, ".", sqlite3_column_name(stmt_, col), " ", why);
  }
}

absl::StatusOr<int> LockExclusively(const std::string& db_path, absl::string_view what,
                                    absl::string_view holder) {
  const std::string lock_path = absl::StrCat(db_path, ".lock");
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0)
    return ErrnoError(errno, absl::StrCat(what, ": creating lock file '", lock_path, "'"));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " is in use by ", holder, " (lock file '", lock_path, "')"));
    }
    return ErrnoError(err, absl::StrCat(what, ": locking '", lock_path, "'"));
  }
  return fd;
}

}  // namespace weft::store::sqlite
