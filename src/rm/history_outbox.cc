// Copyright Weft authors.
#include "rm/history_outbox.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "common/private_files.h"
#include "store/sqlite_util.h"

namespace weft::rm {

namespace sq = store::sqlite;

namespace {

// The schema. Version 1: the entries waiting (AUTOINCREMENT: a seq is never reused, so a
// row appended after others were removed still sorts after them) and the applications
// delivered, which a restarted RM does not publish again.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS outbox ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind INTEGER NOT NULL,"
    "  id TEXT NOT NULL,"
    "  payload BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS delivered_applications ("
    "  application_id TEXT PRIMARY KEY) WITHOUT ROWID;";

constexpr int kBusyTimeoutMs = 5000;

}  // namespace

absl::StatusOr<std::unique_ptr<HistoryOutbox>> HistoryOutbox::Open(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("history outbox: an empty path");
  std::unique_ptr<HistoryOutbox> box(new HistoryOutbox(path));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    if (absl::Status s = EnsurePrivateDirectory(parent.string(), "history outbox directory");
        !s.ok())
      return s;
  }
  // It names users, queues and apps: 0600, as the state store.
  if (absl::Status s = EnsurePrivateSqliteFile(path, "history outbox"); !s.ok()) return s;
  // One RM per outbox: two would drain it twice and forget each other's deliveries.
  absl::StatusOr<int> lock = sq::LockExclusively(
      path, absl::StrCat("history outbox '", path, "'"), "another ResourceManager");
  if (!lock.ok()) return lock.status();
  box->lock_fd_ = *lock;
  int rc = sqlite3_open_v2(path.c_str(), &box->db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) return box->Error("opening", rc);
  sqlite3_busy_timeout(box->db_, kBusyTimeoutMs);
  if (absl::Status s = box->Exec("PRAGMA journal_mode = WAL", "enabling WAL"); !s.ok()) return s;
  if (absl::Status s = box->Exec("PRAGMA synchronous = FULL", "setting synchronous=FULL");
      !s.ok())
    return s;
  if (absl::Status s = box->Exec(kSchema, "creating its tables"); !s.ok()) return s;
  if (absl::Status s = EnsurePrivateSqliteFile(path, "history outbox"); !s.ok()) return s;
  if (!parent.empty()) {
    if (absl::Status s = SyncDirectory(parent); !s.ok()) return s;
  }
  return box;
}

HistoryOutbox::~HistoryOutbox() {
  if (db_ != nullptr) sqlite3_close_v2(db_);
  if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock
}

absl::Status HistoryOutbox::Error(const char* what, int rc) const {
  return absl::Status(sq::CodeForSqlite(rc),
                      absl::StrCat("history outbox '", path_, "': ", what, ": ",
                                   db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc)));
}

absl::Status HistoryOutbox::Exec(const char* sql, const char* what) {
  char* message = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string text = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return absl::Status(sq::CodeForSqlite(rc),
                      absl::StrCat("history outbox '", path_, "': ", what, ": ", text));
}

namespace {

// A prepared statement, or the error naming what it was for.
absl::StatusOr<sq::StatementPtr> Prepare(sqlite3* db, const char* sql, const std::string& path,
                                         const char* what) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr);
  if (rc != SQLITE_OK)
    return absl::Status(sq::CodeForSqlite(rc), absl::StrCat("history outbox '", path, "': ", what,
                                                            ": ", sqlite3_errmsg(db)));
  return sq::StatementPtr(stmt);
}

}  // namespace

absl::Status HistoryOutbox::Append(const std::vector<OutboxEntry>& entries) {
  if (entries.empty()) return absl::OkStatus();
  absl::StatusOr<sq::StatementPtr> insert =
      Prepare(db_, "INSERT INTO outbox (kind, id, payload) VALUES (?, ?, ?)", path_, "appending");
  if (!insert.ok()) return insert.status();
  if (absl::Status s = Exec("BEGIN IMMEDIATE", "appending"); !s.ok()) return s;
  for (const OutboxEntry& e : entries) {
    sq::ScopedReset reset(insert->get());
    int rc = sq::BindAll(insert->get(), {sq::Int(static_cast<int>(e.kind)), sq::Text(e.id),
                                         sq::Blob(e.payload)});
    if (rc == SQLITE_OK) rc = sqlite3_step(insert->get());
    if (rc != SQLITE_DONE && rc != SQLITE_OK) {
      absl::Status error = Error("appending", rc);
      Exec("ROLLBACK", "rolling back").IgnoreError();
      return error;
    }
  }
  return Exec("COMMIT", "committing an append");
}

absl::StatusOr<std::vector<OutboxEntry>> HistoryOutbox::Peek(int limit) {
  absl::StatusOr<sq::StatementPtr> select = Prepare(
      db_, "SELECT seq, kind, id, payload FROM outbox ORDER BY seq LIMIT ?", path_, "reading");
  if (!select.ok()) return select.status();
  sq::BindAll(select->get(), {sq::Int(limit)});
  std::vector<OutboxEntry> out;
  int rc;
  while ((rc = sqlite3_step(select->get())) == SQLITE_ROW) {
    sq::RowReader row(select->get(), "outbox");
    OutboxEntry e;
    e.seq = row.Int64(0);
    const int kind = row.Int32(1);
    e.id = row.Bytes(2);
    e.payload = row.Bytes(3, /*want_blob=*/true);
    if (!row.problem().empty() || kind < 1 || kind > 3)
      return absl::DataLossError(absl::StrCat("history outbox '", path_, "': a bad row (seq ",
                                              e.seq, "): ", row.problem(), " kind ", kind));
    e.kind = static_cast<OutboxEntry::Kind>(kind);
    out.push_back(std::move(e));
  }
  if (rc != SQLITE_DONE) return Error("reading", rc);
  return out;
}

absl::Status HistoryOutbox::Remove(const std::vector<OutboxEntry>& delivered) {
  if (delivered.empty()) return absl::OkStatus();
  absl::StatusOr<sq::StatementPtr> remove =
      Prepare(db_, "DELETE FROM outbox WHERE seq = ?", path_, "removing");
  if (!remove.ok()) return remove.status();
  absl::StatusOr<sq::StatementPtr> mark = Prepare(
      db_, "INSERT OR IGNORE INTO delivered_applications (application_id) VALUES (?)", path_,
      "marking delivered");
  if (!mark.ok()) return mark.status();
  if (absl::Status s = Exec("BEGIN IMMEDIATE", "removing"); !s.ok()) return s;
  for (const OutboxEntry& e : delivered) {
    int rc;
    {
      sq::ScopedReset reset(remove->get());
      rc = sq::BindAll(remove->get(), {sq::Int(e.seq)});
      if (rc == SQLITE_OK) rc = sqlite3_step(remove->get());
    }
    if (rc == SQLITE_DONE && e.kind == OutboxEntry::Kind::kApplication) {
      sq::ScopedReset reset(mark->get());
      rc = sq::BindAll(mark->get(), {sq::Text(e.id)});
      if (rc == SQLITE_OK) rc = sqlite3_step(mark->get());
    }
    if (rc != SQLITE_DONE) {
      absl::Status error = Error("removing", rc);
      Exec("ROLLBACK", "rolling back").IgnoreError();
      return error;
    }
  }
  return Exec("COMMIT", "committing a removal");
}

absl::StatusOr<std::vector<std::string>> HistoryOutbox::DeliveredApplications() {
  absl::StatusOr<sq::StatementPtr> select =
      Prepare(db_, "SELECT application_id FROM delivered_applications", path_, "reading");
  if (!select.ok()) return select.status();
  std::vector<std::string> out;
  int rc;
  while ((rc = sqlite3_step(select->get())) == SQLITE_ROW) out.push_back(sq::ColumnBytes(select->get(), 0));
  if (rc != SQLITE_DONE) return Error("reading delivered applications", rc);
  return out;
}

absl::Status HistoryOutbox::ForgetApplications(const std::vector<std::string>& app_ids) {
  if (app_ids.empty()) return absl::OkStatus();
  absl::StatusOr<sq::StatementPtr> remove = Prepare(
      db_, "DELETE FROM delivered_applications WHERE application_id = ?", path_, "forgetting");
  if (!remove.ok()) return remove.status();
  if (absl::Status s = Exec("BEGIN IMMEDIATE", "forgetting"); !s.ok()) return s;
  for (const std::string& id : app_ids) {
    sq::ScopedReset reset(remove->get());
    int rc = sq::BindAll(remove->get(), {sq::Text(id)});
    if (rc == SQLITE_OK) rc = sqlite3_step(remove->get());
    if (rc != SQLITE_DONE) {
      absl::Status error = Error("forgetting", rc);
      Exec("ROLLBACK", "rolling back").IgnoreError();
      return error;
    }
  }
  return Exec("COMMIT", "committing");
}

absl::StatusOr<int64_t> HistoryOutbox::Count() {
  absl::StatusOr<sq::StatementPtr> select =
      Prepare(db_, "SELECT COUNT(*) FROM outbox", path_, "counting");
  if (!select.ok()) return select.status();
  int rc = sqlite3_step(select->get());
  if (rc != SQLITE_ROW) return Error("counting", rc);
  return static_cast<int64_t>(sqlite3_column_int64(select->get(), 0));
}

}  // namespace weft::rm
