// Copyright Weft authors.
#include "federation/store/sqlite_federation_store.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/private_files.h"
#include "store/sqlite_util.h"

namespace weft::federation {
namespace {

using store::sqlite::CodeForSqlite;
using store::sqlite::ColumnBytes;
using store::sqlite::Param;
using store::sqlite::ScopedReset;

constexpr int kBusyTimeoutMs = 10000;

// Migration n (1-based) brings the schema from version n-1 to n. Append; never edit.
constexpr const char* kMigrations[] = {
    R"sql(
CREATE TABLE sub_clusters (
  sub_cluster_id TEXT NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
CREATE TABLE application_homes (
  application_id TEXT NOT NULL PRIMARY KEY,
  home_sub_cluster_id TEXT NOT NULL,
  record BLOB NOT NULL
);
CREATE INDEX application_homes_by_home ON application_homes (home_sub_cluster_id);
CREATE TABLE reservation_homes (
  reservation_id TEXT NOT NULL PRIMARY KEY,
  home_sub_cluster_id TEXT NOT NULL,
  record BLOB NOT NULL
);
CREATE TABLE policies (
  queue TEXT NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
CREATE TABLE router_master_keys (
  key_id INTEGER NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
CREATE TABLE router_tokens (
  sequence_number INTEGER NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
)sql",
    // 2: one id space for the federation (issue 27): cluster timestamps claimed by RMs, and
    // application ids issued by routers and not homed yet.
    R"sql(
CREATE TABLE cluster_timestamps (
  cluster_timestamp_ms INTEGER NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
CREATE TABLE issued_application_ids (
  application_id TEXT NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
)sql",
};
static_assert(std::size(kMigrations) == SqliteFederationStore::kSchemaVersion);

// ?1 the key, ?2 the home (tables with one), ?3 the record.
std::string HomeColumn(const TableInfo& t, absl::string_view prefix) {
  return t.has_home ? absl::StrCat(prefix, "home_sub_cluster_id") : "";
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteFederationStore>> SqliteFederationStore::Open(
    const std::string& path) {
  std::unique_ptr<SqliteFederationStore> store(new SqliteFederationStore(path));
  if (absl::Status s = store->Init(); !s.ok()) return s;
  return store;
}

SqliteFederationStore::~SqliteFederationStore() {
  absl::MutexLock lock(&mu_);
  for (auto& [sql, stmt] : statements_) sqlite3_finalize(stmt);
  sqlite3_close(db_);
}

absl::Status SqliteFederationStore::Error(absl::string_view what, int rc) const {
  const char* message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  return absl::Status(CodeForSqlite(rc),
                      absl::StrCat("federation store '", Describe(), "': ", what, ": ", message));
}

absl::Status SqliteFederationStore::Exec(const std::string& sql, absl::string_view what) {
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(what, rc);
}

absl::Status SqliteFederationStore::Init() {
  absl::MutexLock lock(&mu_);
  const std::string prefix = absl::StrCat("federation store '", Describe(), "': ");
  if (absl::Status s = CreateParentDirectories(path_); !s.ok()) {
    return absl::Status(s.code(), prefix + std::string(s.message()));
  }
  std::error_code ec;
  const bool existed = std::filesystem::exists(path_, ec) && std::filesystem::file_size(path_, ec) > 0;
  // The store holds the routers' master keys and every app's home: the file is 0600 in a
  // directory others cannot read, or the store does not open (common/private_files.h).
  if (absl::Status s = EnsurePrivateSqliteFile(path_, "federation store"); !s.ok()) {
    return absl::Status(s.code(), prefix + std::string(s.message()));
  }
  int rc =
      sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return Error("opening", rc);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kBusyTimeoutMs);

  // The first statement that reads the file: a file that is not SQLite fails here.
  std::string journal_mode;
  absl::StatusOr<int> changed =
      Run("PRAGMA journal_mode = WAL", {}, "enabling WAL", [&](sqlite3_stmt* stmt) {
        const unsigned char* text = sqlite3_column_text(stmt, 0);
        journal_mode = text != nullptr ? reinterpret_cast<const char*>(text) : "";
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
  if (!existed) {  // Make the new file's directory entry durable too.
    if (absl::Status s = SyncDirectory(std::filesystem::path(path_).parent_path());
        !s.ok()) {
      return absl::Status(s.code(), prefix + std::string(s.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SqliteFederationStore::Migrate() {
  return InTransaction(
      "migrating the schema", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        if (absl::Status s =
                Exec("CREATE TABLE IF NOT EXISTS weft_federation_schema ("
                     "version INTEGER NOT NULL PRIMARY KEY, applied_ms INTEGER NOT NULL)",
                     "creating weft_federation_schema");
            !s.ok()) {
          return s;
        }
        int64_t version = 0;
        absl::StatusOr<int> read =
            Run("SELECT coalesce(max(version), 0) FROM weft_federation_schema", {},
                "reading the schema version",
                [&](sqlite3_stmt* stmt) { version = sqlite3_column_int64(stmt, 0); });
        if (!read.ok()) return read.status();
        if (version > kSchemaVersion) {
          return absl::FailedPreconditionError(absl::StrCat(
              "federation store '", Describe(), "': its schema version ", version,
              " is newer than this binary's (", kSchemaVersion, "); use a newer weft"));
        }
        for (int64_t next = version + 1; next <= kSchemaVersion; ++next) {
          if (absl::Status s =
                  Exec(kMigrations[next - 1], absl::StrCat("migrating to version ", next));
              !s.ok()) {
            return s;
          }
          if (absl::Status s = Exec(absl::StrCat("INSERT INTO weft_federation_schema (version, "
                                                 "applied_ms) VALUES (",
                                                 next, ", ", absl::ToUnixMillis(absl::Now()), ")"),
                                    "recording the schema version");
              !s.ok()) {
            return s;
          }
        }
        return absl::OkStatus();
      });
}

absl::StatusOr<sqlite3_stmt*> SqliteFederationStore::Statement(const std::string& sql) {
  auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  sqlite3_stmt* stmt = nullptr;
  const int rc =
      sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return Error(absl::StrCat("preparing '", sql, "'"), rc);
  }
  statements_.emplace(sql, stmt);
  return stmt;
}

absl::StatusOr<int> SqliteFederationStore::Run(const std::string& sql, const Row& row,
                                               absl::string_view what,
                                               absl::FunctionRef<void(sqlite3_stmt*)> on_row) {
  absl::StatusOr<sqlite3_stmt*> stmt = Statement(sql);
  if (!stmt.ok()) return stmt.status();
  ScopedReset reset(*stmt);
  // Decimal keys (master key ids, token sequence numbers) are bound as integers for the INTEGER
  // key columns; a TEXT key column turns such a value back into the same text (type affinity).
  int64_t integer_key = 0;
  const bool bind_integer =
      absl::SimpleAtoi(row.key, &integer_key) && absl::StrCat(integer_key) == row.key;
  const Param params[] = {
      bind_integer ? store::sqlite::Int(integer_key) : store::sqlite::Text(row.key),
      store::sqlite::Text(row.home), store::sqlite::Blob(row.record)};
  const int count = sqlite3_bind_parameter_count(*stmt);
  int rc = SQLITE_OK;
  for (int i = 0; i < count && i < 3 && rc == SQLITE_OK; ++i) {
    rc = store::sqlite::Bind(*stmt, i + 1, params[i]);
  }
  if (rc != SQLITE_OK) return Error(what, rc);
  while ((rc = sqlite3_step(*stmt)) == SQLITE_ROW) on_row(*stmt);
  if (rc != SQLITE_DONE) return Error(what, rc);
  return sqlite3_changes(db_);
}

absl::Status SqliteFederationStore::InTransaction(absl::string_view what,
                                                  absl::FunctionRef<absl::Status()> body) {
  if (absl::Status s = Exec("BEGIN IMMEDIATE", what); !s.ok()) return s;
  absl::Status status = body();
  if (status.ok()) status = Exec("COMMIT", what);
  if (!status.ok() && sqlite3_get_autocommit(db_) == 0) {
    Exec("ROLLBACK", what).IgnoreError();
  }
  return status;
}

absl::Status SqliteFederationStore::PutRecord(Table table, const Row& row) {
  const TableInfo& t = InfoOf(table);
  absl::MutexLock lock(&mu_);
  return Run(absl::StrCat("INSERT INTO ", t.sql_name, " (", t.key_column, HomeColumn(t, ", "),
                          ", record) VALUES (?1", t.has_home ? ", ?2" : "", ", ?3) ON CONFLICT (",
                          t.key_column, ") DO UPDATE SET ",
                          t.has_home ? "home_sub_cluster_id = excluded.home_sub_cluster_id, " : "",
                          "record = excluded.record"),
             row, "writing", [](sqlite3_stmt*) {})
      .status();
}

absl::StatusOr<RecordFederationStore::InsertResult> SqliteFederationStore::InsertRecord(
    Table table, const Row& row) {
  const TableInfo& t = InfoOf(table);
  absl::MutexLock lock(&mu_);
  InsertResult result{row.record, true};
  absl::Status status =
      InTransaction("inserting", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<int> inserted =
            Run(absl::StrCat("INSERT INTO ", t.sql_name, " (", t.key_column, HomeColumn(t, ", "),
                             ", record) VALUES (?1", t.has_home ? ", ?2" : "",
                             ", ?3) ON CONFLICT (", t.key_column, ") DO NOTHING"),
                row, "inserting", [](sqlite3_stmt*) {});
        if (!inserted.ok()) return inserted.status();
        if (*inserted == 1) return absl::OkStatus();
        result.inserted = false;
        return Run(absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column,
                                " = ?1"),
                   row, "reading the existing record",
                   [&](sqlite3_stmt* stmt) { result.record = ColumnBytes(stmt, 0); })
            .status();
      });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<bool> SqliteFederationStore::ModifyRecord(Table table, absl::string_view key,
                                                         Updater update) {
  const TableInfo& t = InfoOf(table);
  absl::MutexLock lock(&mu_);
  bool found = false;
  absl::Status status =
      InTransaction("updating", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        std::string old;
        absl::StatusOr<int> read =
            Run(absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column, " = ?1"),
                Row{std::string(key), "", ""}, "reading", [&](sqlite3_stmt* stmt) {
                  found = true;
                  old = ColumnBytes(stmt, 0);
                });
        if (!read.ok() || !found) return read.status();
        absl::StatusOr<Row> row = update(old);
        if (!row.ok()) return row.status();
        return Run(absl::StrCat("UPDATE ", t.sql_name, " SET ",
                                t.has_home ? "home_sub_cluster_id = ?2, " : "",
                                "record = ?3 WHERE ", t.key_column, " = ?1"),
                   *row, "writing", [](sqlite3_stmt*) {})
            .status();
      });
  if (!status.ok()) return status;
  return found;
}

absl::StatusOr<std::optional<std::string>> SqliteFederationStore::GetRecord(Table table,
                                                                            absl::string_view key) {
  const TableInfo& t = InfoOf(table);
  absl::MutexLock lock(&mu_);
  std::optional<std::string> record;
  absl::StatusOr<int> read =
      Run(absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column, " = ?1"),
          Row{std::string(key), "", ""}, "reading",
          [&](sqlite3_stmt* stmt) { record = ColumnBytes(stmt, 0); });
  if (!read.ok()) return read.status();
  return record;
}

absl::StatusOr<std::vector<std::string>> SqliteFederationStore::ListRecords(
    Table table, absl::string_view home) {
  const TableInfo& t = InfoOf(table);
  const bool by_home = t.has_home && !home.empty();
  absl::MutexLock lock(&mu_);
  std::vector<std::string> records;
  absl::StatusOr<int> read = Run(
      absl::StrCat("SELECT record FROM ", t.sql_name,
                   by_home ? " WHERE home_sub_cluster_id = ?2" : "", " ORDER BY ", t.key_column),
      Row{"", std::string(home), ""}, "listing",
      [&](sqlite3_stmt* stmt) { records.push_back(ColumnBytes(stmt, 0)); });
  if (!read.ok()) return read.status();
  return records;
}

absl::StatusOr<bool> SqliteFederationStore::DeleteRecord(Table table, absl::string_view key) {
  const TableInfo& t = InfoOf(table);
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int> deleted =
      Run(absl::StrCat("DELETE FROM ", t.sql_name, " WHERE ", t.key_column, " = ?1"),
          Row{std::string(key), "", ""}, "deleting", [](sqlite3_stmt*) {});
  if (!deleted.ok()) return deleted.status();
  return *deleted > 0;
}

}  // namespace weft::federation
