// Copyright Weft authors.
#include "store/sqlite_util.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"

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

absl::StatusCode CodeForErrno(int err) {
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::StatusCode::kPermissionDenied;
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status ErrnoError(int err, absl::string_view what) {
  return absl::Status(CodeForErrno(err), absl::StrCat(what, ": ", std::strerror(err)));
}

absl::Status SyncDirectory(const std::filesystem::path& dir) {
  const std::string name = dir.empty() ? std::string(".") : dir.string();
  int fd = ::open(name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, absl::StrCat("opening directory '", name, "'"));
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError(err, absl::StrCat("syncing directory '", name, "'"));
  return absl::OkStatus();
}

absl::Status CreateParentDirectories(const std::filesystem::path& file) {
  namespace fs = std::filesystem;
  const fs::path parent = file.parent_path();
  std::vector<fs::path> missing;  // deepest first
  for (fs::path dir = parent; !dir.empty(); dir = dir.parent_path()) {
    std::error_code ec;
    if (fs::exists(dir, ec) || dir == dir.parent_path()) break;
    missing.push_back(dir);
  }
  if (missing.empty()) return absl::OkStatus();
  // Deepest last; 0700: a store's directory holds its keys and state (common/private_files.h).
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (::mkdir(it->c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoError(errno, absl::StrCat("creating directory '", it->string(), "'"));
    }
  }
  for (const fs::path& dir : missing) {
    if (absl::Status s = SyncDirectory(dir.parent_path()); !s.ok()) return s;
  }
  return absl::OkStatus();
}

int BindAll(sqlite3_stmt* stmt, std::initializer_list<Param> params) {
  int index = 0;
  for (const Param& p : params) {
    ++index;
    // A null pointer would bind SQL NULL; an empty value must stay an empty TEXT or BLOB.
    const char* data = p.bytes.data() != nullptr ? p.bytes.data() : "";
    int rc = SQLITE_OK;
    switch (p.kind) {
      case Param::Kind::kInt:
        rc = sqlite3_bind_int64(stmt, index, p.integer);
        break;
      case Param::Kind::kText:
        rc = sqlite3_bind_text64(stmt, index, data, p.bytes.size(), SQLITE_STATIC, SQLITE_UTF8);
        break;
      case Param::Kind::kBlob:
        rc = sqlite3_bind_blob64(stmt, index, data, p.bytes.size(), SQLITE_STATIC);
        break;
    }
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

std::string RowReader::Bytes(int col, bool want_blob) {
  const int type = sqlite3_column_type(stmt_, col);
  if (type != (want_blob ? SQLITE_BLOB : SQLITE_TEXT)) {
    Bad(col, want_blob ? "is not a BLOB" : "is not TEXT");
    return {};
  }
  const void* data = sqlite3_column_blob(stmt_, col);
  const int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr || size <= 0) return {};
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

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

}  // namespace weft::store::sqlite
