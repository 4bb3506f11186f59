// Copyright Weft authors.
#include "history/sqlite_history_store.h"

#include <filesystem>
#include <limits>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/private_files.h"

namespace weft::history {
namespace {

using store::sqlite::Blob;
using store::sqlite::CodeForSqlite;
using store::sqlite::ColumnBytes;
using store::sqlite::Int;
using store::sqlite::Param;
using store::sqlite::StatementPtr;
using store::sqlite::Text;

constexpr int kHistoryBusyTimeoutMs = 10000;

// Migration n (1-based) brings the schema from version n-1 to n. Append; never edit.
constexpr const char* kHistoryMigrations[] = {
    R"sql(
CREATE TABLE applications (
  application_id TEXT NOT NULL PRIMARY KEY,
  user TEXT NOT NULL,
  queue TEXT NOT NULL,
  final_state INTEGER NOT NULL,
  finish_ms INTEGER NOT NULL,
  record BLOB NOT NULL
);
CREATE INDEX applications_by_user ON applications (user, finish_ms);
CREATE INDEX applications_by_queue ON applications (queue, finish_ms);
CREATE INDEX applications_by_finish ON applications (finish_ms);
CREATE TABLE attempts (
  attempt_id TEXT NOT NULL PRIMARY KEY,
  application_id TEXT NOT NULL,
  record BLOB NOT NULL
);
CREATE INDEX attempts_by_application ON attempts (application_id);
CREATE TABLE containers (
  container_id TEXT NOT NULL PRIMARY KEY,
  application_id TEXT NOT NULL,
  attempt_id TEXT NOT NULL,
  record BLOB NOT NULL
);
CREATE INDEX containers_by_application ON containers (application_id, container_id);
CREATE INDEX containers_by_attempt ON containers (attempt_id, container_id);
)sql",
};
static_assert(std::size(kHistoryMigrations) == SqliteHistoryStore::kSchemaVersion);

// ListApplications' order in SQL (history_store.h).
constexpr const char* kHistoryListOrder = " ORDER BY finish_ms DESC, application_id ASC";

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> SqliteHistoryStore::Open(
    const std::string& path) {
  std::unique_ptr<SqliteHistoryStore> store(new SqliteHistoryStore(path));
  if (absl::Status s = store->Init(); !s.ok()) return s;
  return store;
}

SqliteHistoryStore::~SqliteHistoryStore() {
  absl::MutexLock lock(&mu_);
  sqlite3_close(db_);
}

absl::Status SqliteHistoryStore::Error(absl::string_view what, int rc) const {
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  return absl::Status(CodeForSqlite(rc),
                      absl::StrCat("history store '", Describe(), "': ", what, ": ", message));
}

absl::Status SqliteHistoryStore::Exec(const std::string& sql, absl::string_view what) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(what, rc);
}

absl::StatusOr<int> SqliteHistoryStore::Run(const std::string& sql,
                                            const std::vector<Param>& params,
                                            absl::string_view what,
                                            absl::FunctionRef<void(sqlite3_stmt*)> on_row) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.c_str(), -1, &raw, nullptr);
  StatementPtr stmt(raw);
  if (rc != SQLITE_OK) return Error(absl::StrCat(what, " (preparing)"), rc);
  for (size_t i = 0; i < params.size() && rc == SQLITE_OK; ++i) {
    rc = store::sqlite::Bind(stmt.get(), static_cast<int>(i + 1), params[i]);
  }
  if (rc != SQLITE_OK) return Error(absl::StrCat(what, " (binding)"), rc);
  while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) on_row(stmt.get());
  if (rc != SQLITE_DONE) return Error(what, rc);
  return sqlite3_changes(db_);
}

absl::Status SqliteHistoryStore::InTransaction(absl::string_view what,
                                               absl::FunctionRef<absl::Status()> body) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE", what); !s.ok()) return s;
  absl::Status status = body();
  if (status.ok()) status = Exec("COMMIT", what);
  if (!status.ok() && sqlite3_get_autocommit(db_) == 0) Exec("ROLLBACK", what).IgnoreError();
  return status;
}

template <typename T>
absl::StatusOr<std::vector<T>> SqliteHistoryStore::Records(const std::string& sql,
                                                           const std::vector<Param>& params,
                                                           absl::string_view what) {
  std::vector<T> out;
  std::string bad;
  absl::StatusOr<int> ran = Run(sql, params, what, [&](sqlite3_stmt* stmt) {
    T record;
    if (!record.ParseFromString(ColumnBytes(stmt, 0)) && bad.empty()) {
      bad = absl::StrCat("history store '", Describe(), "': ", what, ": a stored ",
                         T::descriptor()->name(), " does not parse");
    }
    out.push_back(std::move(record));
  });
  if (!ran.ok()) return ran.status();
  if (!bad.empty()) return absl::DataLossError(bad);
  return out;
}

absl::Status SqliteHistoryStore::Init() {
  absl::MutexLock lock(&mu_);
  const std::string prefix = absl::StrCat("history store '", Describe(), "': ");
  const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) {
    if (absl::Status s = MakePrivateDirectories(parent.string()); !s.ok()) {
      return absl::Status(s.code(), prefix + std::string(s.message()));
    }
  }
  std::error_code ec;
  const bool existed =
      std::filesystem::exists(path_, ec) && std::filesystem::file_size(path_, ec) > 0;
  // The history names every user, queue and app: 0600 in a private directory, or no open.
  if (absl::Status s = EnsurePrivateSqliteFile(path_, "history store"); !s.ok()) {
    return absl::Status(s.code(), prefix + std::string(s.message()));
  }
  int rc = sqlite3_open_v2(path_.c_str(), &db_,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) return Error("opening", rc);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kHistoryBusyTimeoutMs);
  std::string journal_mode;
  absl::StatusOr<int> changed =
      Run("PRAGMA journal_mode = WAL", {}, "enabling WAL", [&](sqlite3_stmt* stmt) {
        journal_mode = ColumnBytes(stmt, 0);
      });
  if (!changed.ok()) return changed.status();
  if (journal_mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "cannot use the WAL journal (got '", journal_mode, "')"));
  }
  if (absl::Status s = Exec("PRAGMA synchronous = FULL", "setting synchronous=FULL"); !s.ok()) {
    return s;
  }
  if (absl::Status s = Migrate(); !s.ok()) return s;
  if (!existed && !parent.empty()) {  // Make the new file's directory entry durable too.
    if (absl::Status s = SyncDirectory(parent); !s.ok()) {
      return absl::Status(s.code(), prefix + std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteHistoryStore::Migrate() {
  return InTransaction(
      "migrating the schema", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        if (absl::Status s = Exec("CREATE TABLE IF NOT EXISTS weft_history_schema ("
                                  "version INTEGER NOT NULL PRIMARY KEY, "
                                  "applied_ms INTEGER NOT NULL)",
                                  "creating weft_history_schema");
            !s.ok()) {
          return s;
        }
        int64_t version = 0;
        absl::StatusOr<int> read =
            Run("SELECT coalesce(max(version), 0) FROM weft_history_schema", {},
                "reading the schema version",
                [&](sqlite3_stmt* stmt) { version = sqlite3_column_int64(stmt, 0); });
        if (!read.ok()) return read.status();
        if (version > kSchemaVersion) {
          return absl::FailedPreconditionError(absl::StrCat(
              "history store '", Describe(), "': its schema version ", version,
              " is newer than this binary's (", kSchemaVersion, "); use a newer weft"));
        }
        for (int64_t next = version + 1; next <= kSchemaVersion; ++next) {
          if (absl::Status s = Exec(kHistoryMigrations[next - 1],
                                    absl::StrCat("migrating to version ", next));
              !s.ok()) {
            return s;
          }
          absl::StatusOr<int> recorded =
              Run("INSERT INTO weft_history_schema (version, applied_ms) VALUES (?1, ?2)",
                  {Int(next), Int(absl::ToUnixMillis(absl::Now()))},
                  "recording the schema version", [](sqlite3_stmt*) {});
          if (!recorded.ok()) return recorded.status();
        }
        return absl::OkStatus();
      });
}

absl::Status SqliteHistoryStore::DoPutApplication(const v1::ApplicationHistoryRecord& record) {
  const std::string blob = record.SerializeAsString();
  absl::MutexLock lock(&mu_);
  return Run("INSERT INTO applications (application_id, user, queue, final_state, finish_ms, "
             "record) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (application_id) DO UPDATE "
             "SET user = excluded.user, queue = excluded.queue, final_state = "
             "excluded.final_state, finish_ms = excluded.finish_ms, record = excluded.record",
             {Text(record.application_id()), Text(record.user()), Text(record.queue()),
              Int(record.final_state()), Int(record.finish_time_ms()), Blob(blob)},
             absl::StrCat("writing application '", record.application_id(), "'"),
             [](sqlite3_stmt*) {})
      .status();
}

absl::Status SqliteHistoryStore::DoPutAttempt(const v1::AttemptHistoryRecord& record) {
  const std::string blob = record.SerializeAsString();
  absl::MutexLock lock(&mu_);
  return Run("INSERT INTO attempts (attempt_id, application_id, record) VALUES (?1, ?2, ?3) "
             "ON CONFLICT (attempt_id) DO UPDATE SET application_id = excluded.application_id, "
             "record = excluded.record",
             {Text(record.attempt_id()), Text(record.application_id()), Blob(blob)},
             absl::StrCat("writing attempt '", record.attempt_id(), "'"), [](sqlite3_stmt*) {})
      .status();
}

absl::Status SqliteHistoryStore::DoPutContainer(const v1::ContainerHistoryRecord& record) {
  const std::string blob = record.SerializeAsString();
  absl::MutexLock lock(&mu_);
  return Run("INSERT INTO containers (container_id, application_id, attempt_id, record) VALUES "
             "(?1, ?2, ?3, ?4) ON CONFLICT (container_id) DO UPDATE SET application_id = "
             "excluded.application_id, attempt_id = excluded.attempt_id, record = "
             "excluded.record",
             {Text(record.container_id()), Text(record.application_id()),
              Text(record.attempt_id()), Blob(blob)},
             absl::StrCat("writing container '", record.container_id(), "'"),
             [](sqlite3_stmt*) {})
      .status();
}

namespace {

template <typename T>
absl::StatusOr<std::optional<T>> HistoryFirst(absl::StatusOr<std::vector<T>> records) {
  if (!records.ok()) return records.status();
  if (records->empty()) return std::optional<T>();
  return std::optional<T>(std::move(records->front()));
}

}  // namespace

absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> SqliteHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return HistoryFirst(Records<v1::ApplicationHistoryRecord>(
      "SELECT record FROM applications WHERE application_id = ?1", {Text(id)},
      "reading an application"));
}

absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> SqliteHistoryStore::DoGetAttempt(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return HistoryFirst(Records<v1::AttemptHistoryRecord>(
      "SELECT record FROM attempts WHERE attempt_id = ?1", {Text(id)}, "reading an attempt"));
}

absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> SqliteHistoryStore::DoGetContainer(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return HistoryFirst(Records<v1::ContainerHistoryRecord>(
      "SELECT record FROM containers WHERE container_id = ?1", {Text(id)},
      "reading a container"));
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> SqliteHistoryStore::DoListApplications(
    const ApplicationFilter& filter) {
  std::string sql = "SELECT record FROM applications WHERE 1";
  std::vector<Param> params;
  auto next = [&]() { return absl::StrCat("?", params.size()); };
  if (!filter.user.empty()) {
    params.push_back(Text(filter.user));
    absl::StrAppend(&sql, " AND user = ", next());
  }
  if (!filter.queue.empty()) {
    params.push_back(Text(filter.queue));
    absl::StrAppend(&sql, " AND queue = ", next());
  }
  if (!filter.states.empty()) {
    absl::StrAppend(&sql, " AND final_state IN (");
    for (size_t i = 0; i < filter.states.size(); ++i) {
      params.push_back(Int(filter.states[i]));
      absl::StrAppend(&sql, i == 0 ? "" : ", ", next());
    }
    absl::StrAppend(&sql, ")");
  }
  if (filter.finished_since_ms) {
    params.push_back(Int(*filter.finished_since_ms));
    absl::StrAppend(&sql, " AND finish_ms >= ", next());
  }
  if (filter.finished_until_ms) {
    params.push_back(Int(*filter.finished_until_ms));
    absl::StrAppend(&sql, " AND finish_ms < ", next());
  }
  absl::StrAppend(&sql, kHistoryListOrder);
  if (filter.limit > 0) {
    params.push_back(Int(filter.limit));
    absl::StrAppend(&sql, " LIMIT ", next());
  }
  absl::MutexLock lock(&mu_);
  return Records<v1::ApplicationHistoryRecord>(sql, params, "listing applications");
}

absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> SqliteHistoryStore::DoListAttempts(
    const std::string& application_id) {
  absl::MutexLock lock(&mu_);
  return Records<v1::AttemptHistoryRecord>(
      "SELECT record FROM attempts WHERE application_id = ?1 ORDER BY attempt_id",
      {Text(application_id)}, "listing attempts");
}

absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> SqliteHistoryStore::DoListContainers(
    const std::string& application_id, const std::string& attempt_id) {
  absl::MutexLock lock(&mu_);
  if (attempt_id.empty()) {
    return Records<v1::ContainerHistoryRecord>(
        "SELECT record FROM containers WHERE application_id = ?1 ORDER BY container_id",
        {Text(application_id)}, "listing containers");
  }
  if (application_id.empty()) {
    return Records<v1::ContainerHistoryRecord>(
        "SELECT record FROM containers WHERE attempt_id = ?1 ORDER BY container_id",
        {Text(attempt_id)}, "listing containers");
  }
  return Records<v1::ContainerHistoryRecord>(
      "SELECT record FROM containers WHERE application_id = ?1 AND attempt_id = ?2 "
      "ORDER BY container_id",
      {Text(application_id), Text(attempt_id)}, "listing containers");
}

absl::StatusOr<int64_t> SqliteHistoryStore::DoPrune(int64_t older_than_ms,
                                                    std::optional<int64_t> keep_at_most) {
  // OFFSET keep_at_most skips the newest ones; with no cap, nothing is over it.
  const int64_t offset = keep_at_most.value_or(std::numeric_limits<int64_t>::max());
  absl::MutexLock lock(&mu_);
  int64_t removed = 0;
  absl::Status status =
      InTransaction("pruning", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        std::vector<std::string> doomed;
        absl::StatusOr<int> found = Run(
            absl::StrCat("SELECT application_id FROM applications WHERE finish_ms < ?1 UNION "
                         "SELECT application_id FROM (SELECT application_id FROM applications",
                         kHistoryListOrder, " LIMIT -1 OFFSET ?2)"),
            {Int(older_than_ms), Int(offset)}, "choosing applications to prune",
            [&](sqlite3_stmt* stmt) { doomed.push_back(ColumnBytes(stmt, 0)); });
        if (!found.ok()) return found.status();
        for (const std::string& id : doomed) {
          for (const char* table : {"containers", "attempts", "applications"}) {
            absl::StatusOr<int> deleted =
                Run(absl::StrCat("DELETE FROM ", table, " WHERE application_id = ?1"),
                    {Text(id)}, absl::StrCat("pruning application '", id, "' from ", table),
                    [](sqlite3_stmt*) {});
            if (!deleted.ok()) return deleted.status();
          }
        }
        removed = static_cast<int64_t>(doomed.size());
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return removed;
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> SqliteHistoryStore::DoFinishedBetween(
    int64_t since_ms, int64_t until_ms) {
  absl::MutexLock lock(&mu_);
  return Records<v1::ApplicationHistoryRecord>(
      "SELECT record FROM applications WHERE finish_ms >= ?1 AND finish_ms < ?2",
      {Int(since_ms), Int(until_ms)}, "reading applications for the queue report");
}

}  // namespace weft::history
