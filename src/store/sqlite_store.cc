// Copyright Weft authors.
#include "store/sqlite_store.h"

#include <errno.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <system_error>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/private_files.h"
#include "store/sqlite_util.h"
#include "store/state_backend.h"
#include "store/state_records.h"

namespace weft::store {
namespace {

using sqlite::BindAll;
using sqlite::Blob;
using sqlite::CodeForSqlite;
using sqlite::Int;
using sqlite::Param;
using sqlite::RowReader;
using sqlite::ScopedReset;
using sqlite::StatementPtr;
using sqlite::Text;

// Version of the schema below. Bump it, and teach Open() to migrate, when the schema changes.
// 2 added node_admin (kMigrateToVersion2).
constexpr int64_t kSchemaVersion = 2;

// Admin decisions about nodes (store::NodeAdminRecord), each its encoded StoredNodeAdmin.
constexpr const char* kCreateNodeAdmin = R"sql(
CREATE TABLE IF NOT EXISTS node_admin (
  node TEXT NOT NULL PRIMARY KEY,
  record BLOB NOT NULL
);
)sql";
// A version 1 store becomes version 2 in the transaction that checks it.
constexpr const char* kMigrateToVersion2 = "UPDATE schema_version SET version = 2";

// Table definitions. Text columns hold TEXT values and byte columns BLOB values; ReadAll()
// rejects anything else. Attempts go away with their application (the store also deletes them
// explicitly, so this does not rest on foreign_keys alone).
constexpr const char* kCreateTables = R"sql(
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE epoch (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  value INTEGER NOT NULL
);
CREATE TABLE applications (
  app_id TEXT NOT NULL PRIMARY KEY,
  name TEXT NOT NULL,
  queue TEXT NOT NULL,
  user TEXT NOT NULL,
  priority INTEGER NOT NULL,
  state TEXT NOT NULL,
  final_status TEXT NOT NULL,
  diagnostics TEXT NOT NULL,
  submit_ms INTEGER NOT NULL,
  start_ms INTEGER NOT NULL,
  finish_ms INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL CHECK (max_attempts >= 1),
  submission BLOB NOT NULL
);
CREATE TABLE attempts (
  app_id TEXT NOT NULL REFERENCES applications (app_id) ON DELETE CASCADE,
  attempt_id INTEGER NOT NULL CHECK (attempt_id >= 1),
  state TEXT NOT NULL,
  am_container_id TEXT NOT NULL,
  node TEXT NOT NULL,
  exit_status INTEGER NOT NULL,
  diagnostics TEXT NOT NULL,
  start_ms INTEGER NOT NULL,
  finish_ms INTEGER NOT NULL,
  PRIMARY KEY (app_id, attempt_id)
);
CREATE TABLE master_keys (
  purpose TEXT NOT NULL CHECK (purpose IN ('container', 'amrm')),
  key_id INTEGER NOT NULL,
  secret BLOB NOT NULL,
  created_ms INTEGER NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (purpose, key_id)
);
)sql";

// An application is updated in place (not INSERT OR REPLACE, whose delete would cascade to the
// application's attempts).
constexpr const char* kPutApplication = R"sql(
INSERT INTO applications (app_id, name, queue, user, priority, state, final_status, diagnostics,
                          submit_ms, start_ms, finish_ms, max_attempts, submission)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
ON CONFLICT (app_id) DO UPDATE SET
  name = excluded.name, queue = excluded.queue, user = excluded.user,
  priority = excluded.priority, state = excluded.state, final_status = excluded.final_status,
  diagnostics = excluded.diagnostics, submit_ms = excluded.submit_ms,
  start_ms = excluded.start_ms, finish_ms = excluded.finish_ms,
  max_attempts = excluded.max_attempts, submission = excluded.submission
)sql";

constexpr const char* kPutAttempt = R"sql(
INSERT OR REPLACE INTO attempts (app_id, attempt_id, state, am_container_id, node, exit_status,
                                 diagnostics, start_ms, finish_ms)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
)sql";

constexpr const char* kPutMasterKey = R"sql(
INSERT OR REPLACE INTO master_keys (purpose, key_id, secret, created_ms, expires_ms)
VALUES (?1, ?2, ?3, ?4, ?5)
)sql";

constexpr const char* kPutNodeAdmin =
    "INSERT OR REPLACE INTO node_admin (node, record) VALUES (?1, ?2)";
constexpr const char* kDeleteNodeAdmin = "DELETE FROM node_admin WHERE node = ?1";
constexpr const char* kLoadNodeAdmin = "SELECT node, record FROM node_admin ORDER BY node";

constexpr const char* kBumpEpoch =
    "INSERT INTO epoch (id, value) VALUES (0, 1) ON CONFLICT (id) DO UPDATE SET value = value + 1";
constexpr const char* kGetEpoch = "SELECT value FROM epoch WHERE id = 0";
constexpr const char* kDeleteAttempts = "DELETE FROM attempts WHERE app_id = ?1";
constexpr const char* kDeleteApplication = "DELETE FROM applications WHERE app_id = ?1";
constexpr const char* kDeleteMasterKey =
    "DELETE FROM master_keys WHERE purpose = ?1 AND key_id = ?2";

constexpr const char* kLoadApplications = R"sql(
SELECT app_id, name, queue, user, priority, state, final_status, diagnostics, submit_ms,
       start_ms, finish_ms, max_attempts, submission
FROM applications ORDER BY app_id
)sql";
constexpr const char* kLoadAttempts = R"sql(
SELECT app_id, attempt_id, state, am_container_id, node, exit_status, diagnostics, start_ms,
       finish_ms
FROM attempts ORDER BY app_id, attempt_id
)sql";
constexpr const char* kLoadMasterKeys = R"sql(
SELECT purpose, key_id, secret, created_ms, expires_ms FROM master_keys ORDER BY purpose, key_id
)sql";

// The primitives over one SQLite connection; each one transaction (BEGIN IMMEDIATE, so a
// commit's precondition checks and writes see no other writer in between).
class SqliteBackend final : public StateBackend {
 public:
  // Takes ownership of `lock_fd`, which holds the flock on "<path>.lock".
  SqliteBackend(std::string path, int lock_fd)
      : StateBackend(absl::StrCat("state store '", path, "'")),
        path_(std::move(path)),
        lock_fd_(lock_fd) {}
  ~SqliteBackend() override { Close().IgnoreError(); }

  // Opens the database, configures the connection, creates or checks the schema and prepares
  // the statements. On error the caller destroys the back-end.
  absl::Status Init();

  absl::StatusOr<RmState> ReadAll() override;
  absl::StatusOr<int64_t> BumpEpoch() override;
  absl::StatusOr<bool> Commit(absl::string_view what, const std::vector<StateOp>& ops) override;
  absl::Status Close() override;

 private:
  // Keeps the connection's message for an error `rc` (before a reset can clobber it) and
  // returns `rc`.
  int Check(int rc) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) {
      last_error_ = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    }
    return rc;
  }

  // "state store '<path>': <what>: <SQLite's message>", with a code mapped from `rc`.
  absl::Status Error(absl::string_view what, int rc) const {
    if ((rc & 0xff) == SQLITE_NOTADB) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store '", path_, "': file is not a database"));
    }
    return absl::Status(CodeForSqlite(rc),
                        absl::StrCat("state store '", path_, "': ", what, ": ", last_error_));
  }

  // Runs SQL without parameters or results (pragmas, schema) via sqlite3_exec.
  absl::Status Exec(const char* sql, absl::string_view what) {
    int rc = Check(sqlite3_exec(db_, sql, nullptr, nullptr, nullptr));
    return rc == SQLITE_OK ? absl::OkStatus() : Error(what, rc);
  }

  absl::StatusOr<StatementPtr> Prepare(const char* sql, bool persistent) {
    sqlite3_stmt* stmt = nullptr;
    int rc = Check(sqlite3_prepare_v3(db_, sql, -1, persistent ? SQLITE_PREPARE_PERSISTENT : 0,
                                      &stmt, nullptr));
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt);
      return Error(absl::StrCat("preparing '", sql, "'"), rc);
    }
    return StatementPtr(stmt);
  }

  // Binds `params`, steps a statement that returns no rows to completion and resets it.
  // Returns SQLITE_DONE or an error code (message kept for Error()).
  int Run(sqlite3_stmt* stmt, std::initializer_list<Param> params) {
    ScopedReset reset(stmt);
    int rc = Check(BindAll(stmt, params));
    if (rc == SQLITE_OK) rc = Check(sqlite3_step(stmt));
    return rc;
  }

  // Steps a query, calling `on_row(stmt)` (returning absl::Status) for each row; stops at the
  // first error.
  template <typename OnRow>
  absl::Status ForEachRow(sqlite3_stmt* stmt, absl::string_view what, OnRow&& on_row) {
    ScopedReset reset(stmt);
    int rc;
    while ((rc = Check(sqlite3_step(stmt))) == SQLITE_ROW) {
      if (absl::Status s = on_row(stmt); !s.ok()) return s;
    }
    return rc == SQLITE_DONE ? absl::OkStatus() : Error(what, rc);
  }

  // Runs `body` (returning absl::Status) inside BEGIN IMMEDIATE ... COMMIT; rolls back if
  // either fails, so a failed call changes nothing.
  template <typename Body>
  absl::Status InTransaction(absl::string_view what, Body&& body) {
    int rc = Run(begin_.get(), {});
    if (rc != SQLITE_DONE) return Error(absl::StrCat(what, ": beginning transaction"), rc);
    absl::Status status = body();
    if (status.ok()) {
      rc = Run(commit_.get(), {});
      if (rc != SQLITE_DONE) status = Error(absl::StrCat(what, ": committing"), rc);
    }
    if (!status.ok() && sqlite3_get_autocommit(db_) == 0) {
      rc = Run(rollback_.get(), {});
      if (rc != SQLITE_DONE) {
        status = absl::Status(
            status.code(),
            absl::StrCat(status.message(), "; then rolling back failed: ", last_error_));
      }
    }
    return status;
  }

  absl::Status CheckOrCreateSchema();
  // Applies one op inside the caller's transaction; sets `*missing` (and fails, so that the
  // transaction rolls back) when its precondition does not hold.
  absl::Status Apply(absl::string_view what, const StateOp& op, bool* missing);

  const std::string path_;
  int lock_fd_;
  sqlite3* db_ = nullptr;
  std::string last_error_;
  StatementPtr begin_, begin_read_, commit_, rollback_;
  StatementPtr put_application_, put_attempt_, put_master_key_, put_node_admin_;
  StatementPtr delete_application_, delete_attempts_, delete_master_key_, delete_node_admin_;
  StatementPtr bump_epoch_, get_epoch_;
  StatementPtr load_applications_, load_attempts_, load_master_keys_, load_node_admin_;
};

absl::Status SqliteBackend::Init() {
  // The store holds the master keys and every submission: the file is 0600 in a directory
  // others cannot read, or the store does not open (common/private_files.h).
  if (absl::Status s = EnsurePrivateSqliteFile(path_, "state store"); !s.ok()) return s;
  int rc =
      sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Check(rc);
    return Error("opening database", rc);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kSqliteBusyTimeoutMs);

  // The first statement that reads the file: a file that is not SQLite fails here.
  std::string journal_mode;
  {
    absl::StatusOr<StatementPtr> stmt = Prepare("PRAGMA journal_mode = WAL", false);
    if (!stmt.ok()) return stmt.status();
    absl::Status s = ForEachRow(stmt->get(), "enabling WAL", [&](sqlite3_stmt* row) {
      const unsigned char* text = sqlite3_column_text(row, 0);
      journal_mode = text != nullptr ? reinterpret_cast<const char*>(text) : "";
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
  }
  if (journal_mode != "wal") {
    return absl::FailedPreconditionError(absl::StrCat(
        "state store '", path_, "': cannot use WAL journal mode (got '", journal_mode, "')"));
  }
  if (absl::Status s = Exec("PRAGMA synchronous = FULL", "setting synchronous=FULL"); !s.ok()) {
    return s;
  }
  if (absl::Status s = Exec("PRAGMA foreign_keys = ON", "enabling foreign keys"); !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckOrCreateSchema(); !s.ok()) return s;

  struct {
    StatementPtr* stmt;
    const char* sql;
  } statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&begin_read_, "BEGIN"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&put_application_, kPutApplication},
      {&put_attempt_, kPutAttempt},
      {&put_master_key_, kPutMasterKey},
      {&delete_application_, kDeleteApplication},
      {&delete_attempts_, kDeleteAttempts},
      {&delete_master_key_, kDeleteMasterKey},
      {&bump_epoch_, kBumpEpoch},
      {&get_epoch_, kGetEpoch},
      {&load_applications_, kLoadApplications},
      {&load_attempts_, kLoadAttempts},
      {&load_master_keys_, kLoadMasterKeys},
      {&put_node_admin_, kPutNodeAdmin},
      {&delete_node_admin_, kDeleteNodeAdmin},
      {&load_node_admin_, kLoadNodeAdmin},
  };
  for (auto& [stmt, sql] : statements) {
    absl::StatusOr<StatementPtr> prepared = Prepare(sql, /*persistent=*/true);
    if (!prepared.ok()) return prepared.status();
    *stmt = *std::move(prepared);
  }
  return absl::OkStatus();
}

absl::Status SqliteBackend::CheckOrCreateSchema() {
  if (absl::Status s = Exec("BEGIN IMMEDIATE", "checking schema"); !s.ok()) return s;
  std::vector<std::string> tables;
  std::vector<int64_t> versions;
  absl::Status status = [&]() -> absl::Status {
    absl::StatusOr<StatementPtr> list = Prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
        "ORDER BY name",
        false);
    if (!list.ok()) return list.status();
    absl::Status s = ForEachRow(list->get(), "listing tables", [&](sqlite3_stmt* row) {
      tables.push_back(RowReader(row, "sqlite_schema").Bytes(0));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;

    if (tables.empty()) {  // A new database.
      if (s = Exec(kCreateTables, "creating tables"); !s.ok()) return s;
      if (s = Exec(kCreateNodeAdmin, "creating tables"); !s.ok()) return s;
      return Exec(absl::StrCat("INSERT INTO schema_version (version) VALUES (", kSchemaVersion, ")")
                      .c_str(),
                  "creating tables");
    }
    if (std::find(tables.begin(), tables.end(), "schema_version") == tables.end()) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store '", path_, "': file is not a Weft state store (it has tables ",
                       absl::StrJoin(tables, ", "), " but no schema_version)"));
    }
    absl::StatusOr<StatementPtr> version = Prepare("SELECT version FROM schema_version", false);
    if (!version.ok()) return version.status();
    std::string problem;
    s = ForEachRow(version->get(), "reading schema_version", [&](sqlite3_stmt* row) {
      RowReader reader(row, "schema_version");
      versions.push_back(reader.Int64(0));
      if (problem.empty()) problem = reader.problem();
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (!problem.empty() || versions.size() != 1) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store '", path_, "': unknown schema (schema_version holds ",
                       versions.size(), " rows", problem.empty() ? "" : "; ", problem, ")"));
    }
    if (versions[0] > kSchemaVersion) {
      return absl::FailedPreconditionError(absl::StrCat(
          "state store '", path_, "': schema version ", versions[0],
          " is newer than this binary supports (", kSchemaVersion, "); use a newer weft"));
    }
    if (versions[0] == 1) {  // before node_admin
      if (s = Exec(kCreateNodeAdmin, "migrating to schema version 2"); !s.ok()) return s;
      return Exec(kMigrateToVersion2, "migrating to schema version 2");
    }
    if (versions[0] != kSchemaVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("state store '", path_, "': unknown schema version ", versions[0]));
    }
    return absl::OkStatus();
  }();
  if (status.ok()) {
    status = Exec("COMMIT", "checking schema");
  }
  if (!status.ok()) {
    if (sqlite3_get_autocommit(db_) == 0) Exec("ROLLBACK", "checking schema").IgnoreError();
    return status;
  }
  if (tables.empty()) {
    // Make the new database file's directory entry durable too.
    if (absl::Status s = SyncDirectory(std::filesystem::path(path_).parent_path()); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("state store '", path_, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RmState> SqliteBackend::ReadAll() {
  RmState state;
  const std::string prefix = absl::StrCat("state store '", path_, "': ");
  auto corrupt = [&](absl::string_view what) {
    return absl::DataLossError(absl::StrCat(prefix, what));
  };

  int rc = Run(begin_read_.get(), {});
  if (rc != SQLITE_DONE) return Error("loading: beginning transaction", rc);
  absl::Status status = [&]() -> absl::Status {
    absl::Status s = ForEachRow(get_epoch_.get(), "loading epoch", [&](sqlite3_stmt* row) {
      RowReader r(row, "epoch");
      state.epoch = r.Int64(0);
      return r.problem().empty() ? absl::OkStatus() : corrupt(r.problem());
    });
    if (!s.ok()) return s;

    s = ForEachRow(load_applications_.get(), "loading applications", [&](sqlite3_stmt* row) {
      RowReader r(row, "applications");
      ApplicationRecord app;
      app.app_id = r.Bytes(0);
      app.name = r.Bytes(1);
      app.queue = r.Bytes(2);
      app.user = r.Bytes(3);
      app.priority = r.Int32(4);
      app.state = r.Bytes(5);
      app.final_status = r.Bytes(6);
      app.diagnostics = r.Bytes(7);
      app.submit_ms = r.Int64(8);
      app.start_ms = r.Int64(9);
      app.finish_ms = r.Int64(10);
      app.max_attempts = r.Int32(11);
      app.submission = r.Bytes(12, /*want_blob=*/true);
      if (!r.problem().empty()) {
        return corrupt(absl::StrCat("application '", app.app_id, "': ", r.problem()));
      }
      state.apps.push_back(std::move(app));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;

    s = ForEachRow(load_attempts_.get(), "loading attempts", [&](sqlite3_stmt* row) {
      RowReader r(row, "attempts");
      AttemptRecord attempt;
      attempt.app_id = r.Bytes(0);
      attempt.attempt_id = r.Int32(1);
      attempt.state = r.Bytes(2);
      attempt.am_container_id = r.Bytes(3);
      attempt.node = r.Bytes(4);
      attempt.exit_status = r.Int32(5);
      attempt.diagnostics = r.Bytes(6);
      attempt.start_ms = r.Int64(7);
      attempt.finish_ms = r.Int64(8);
      if (!r.problem().empty()) {
        return corrupt(
            absl::StrCat("attempt of application '", attempt.app_id, "': ", r.problem()));
      }
      state.attempts.push_back(std::move(attempt));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;

    s = ForEachRow(load_master_keys_.get(), "loading master keys", [&](sqlite3_stmt* row) {
      RowReader r(row, "master_keys");
      MasterKeyRecord key;
      key.purpose = r.Bytes(0);
      key.key_id = r.Int32(1);
      key.secret = r.Bytes(2, /*want_blob=*/true);
      key.created_ms = r.Int64(3);
      key.expires_ms = r.Int64(4);
      if (!r.problem().empty()) return corrupt(absl::StrCat("master key: ", r.problem()));
      state.keys.push_back(std::move(key));
      return absl::OkStatus();
    });
    if (!s.ok()) return s;

    return ForEachRow(load_node_admin_.get(), "loading node admin", [&](sqlite3_stmt* row) {
      RowReader r(row, "node_admin");
      const std::string node = r.Bytes(0);
      const std::string record = r.Bytes(1, /*want_blob=*/true);
      if (!r.problem().empty()) return corrupt(absl::StrCat("node admin: ", r.problem()));
      absl::StatusOr<NodeAdminRecord> decoded = DecodeNodeAdmin(record);
      if (!decoded.ok())
        return corrupt(absl::StrCat("node '", node, "': ", decoded.status().message()));
      if (decoded->node != node)
        return corrupt(
            absl::StrCat("node admin row '", node, "' holds node '", decoded->node, "'"));
      state.node_admin.push_back(*std::move(decoded));
      return absl::OkStatus();
    });
  }();
  // The read transaction changed nothing; end it either way.
  rc = Run(commit_.get(), {});
  if (status.ok() && rc != SQLITE_DONE) status = Error("loading: ending transaction", rc);
  if (sqlite3_get_autocommit(db_) == 0) Run(rollback_.get(), {});
  if (!status.ok()) return status;
  return state;
}

absl::StatusOr<int64_t> SqliteBackend::BumpEpoch() {
  int64_t epoch = 0;
  absl::Status status = InTransaction("bumping epoch", [&]() -> absl::Status {
    int rc = Run(bump_epoch_.get(), {});
    if (rc != SQLITE_DONE) return Error("bumping epoch", rc);
    bool found = false;
    absl::Status s = ForEachRow(get_epoch_.get(), "bumping epoch", [&](sqlite3_stmt* row) {
      RowReader r(row, "epoch");
      epoch = r.Int64(0);
      found = r.problem().empty();
      return absl::OkStatus();
    });
    if (!s.ok()) return s;
    if (!found) {
      return absl::DataLossError(
          absl::StrCat("state store '", path_, "': bumping epoch: epoch is not an integer"));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return epoch;
}

absl::Status SqliteBackend::Apply(absl::string_view what, const StateOp& op, bool* missing) {
  int rc = SQLITE_DONE;
  // For a precondition that does not hold: fails the transaction, which rolls it back.
  auto precondition_failed = [&] {
    *missing = true;
    return absl::AbortedError(absl::StrCat(what, ": precondition does not hold"));
  };
  if (const auto* put = std::get_if<PutApplicationOp>(&op)) {
    const ApplicationRecord& app = put->app;
    rc = Run(put_application_.get(),
             {Text(app.app_id), Text(app.name), Text(app.queue), Text(app.user), Int(app.priority),
              Text(app.state), Text(app.final_status), Text(app.diagnostics), Int(app.submit_ms),
              Int(app.start_ms), Int(app.finish_ms), Int(app.max_attempts), Blob(app.submission)});
  } else if (const auto* put = std::get_if<PutAttemptOp>(&op)) {
    // The application's existence is the attempt's foreign key, checked by this insert.
    const AttemptRecord& attempt = put->attempt;
    rc = Run(put_attempt_.get(),
             {Text(attempt.app_id), Int(attempt.attempt_id), Text(attempt.state),
              Text(attempt.am_container_id), Text(attempt.node), Int(attempt.exit_status),
              Text(attempt.diagnostics), Int(attempt.start_ms), Int(attempt.finish_ms)});
    if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) return precondition_failed();
  } else if (const auto* remove = std::get_if<RemoveApplicationOp>(&op)) {
    rc = Run(delete_attempts_.get(), {Text(remove->app_id)});
    if (rc != SQLITE_DONE) return Error(absl::StrCat(what, ": removing its attempts"), rc);
    rc = Run(delete_application_.get(), {Text(remove->app_id)});
    if (rc == SQLITE_DONE && sqlite3_changes(db_) == 0) return precondition_failed();
  } else if (const auto* put = std::get_if<PutMasterKeyOp>(&op)) {
    const MasterKeyRecord& key = put->key;
    rc = Run(put_master_key_.get(), {Text(key.purpose), Int(key.key_id), Blob(key.secret),
                                     Int(key.created_ms), Int(key.expires_ms)});
  } else if (const auto* remove = std::get_if<RemoveMasterKeyOp>(&op)) {
    rc = Run(delete_master_key_.get(), {Text(remove->purpose), Int(remove->key_id)});
    if (rc == SQLITE_DONE && sqlite3_changes(db_) == 0) return precondition_failed();
  } else if (const auto* put = std::get_if<PutNodeAdminOp>(&op)) {
    rc = Run(put_node_admin_.get(), {Text(put->node.node), Blob(EncodeNodeAdmin(put->node))});
  } else if (const auto* remove = std::get_if<RemoveNodeAdminOp>(&op)) {
    rc = Run(delete_node_admin_.get(), {Text(remove->node)});
  }
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(what, rc);
}

absl::StatusOr<bool> SqliteBackend::Commit(absl::string_view what,
                                           const std::vector<StateOp>& ops) {
  bool missing = false;
  absl::Status status = InTransaction(what, [&]() -> absl::Status {
    for (const StateOp& op : ops) {
      if (absl::Status s = Apply(what, op, &missing); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
  if (missing) return false;
  if (!status.ok()) return status;
  return true;
}

absl::Status SqliteBackend::Close() {
  absl::Status status;
  if (db_ != nullptr) {
    for (StatementPtr* stmt :
         {&begin_, &begin_read_, &commit_, &rollback_, &put_application_, &put_attempt_,
          &put_master_key_, &delete_application_, &delete_attempts_, &delete_master_key_,
          &bump_epoch_, &get_epoch_, &load_applications_, &load_attempts_, &load_master_keys_,
          &put_node_admin_, &delete_node_admin_, &load_node_admin_}) {
      stmt->reset();
    }
    int rc = Check(sqlite3_close(db_));
    if (rc != SQLITE_OK) {
      status = Error("closing", rc);
      sqlite3_close_v2(db_);  // Frees the connection once its last statement is finalized.
    }
    db_ = nullptr;
  }
  if (lock_fd_ >= 0) {
    ::close(lock_fd_);  // Releases the flock.
    lock_fd_ = -1;
  }
  return status;
}

}  // namespace

absl::StatusOr<std::unique_ptr<StateStore>> OpenSqliteStore(absl::string_view path) {
  if (path.empty()) return absl::InvalidArgumentError("state store path is empty");
  const std::string file(path);
  if (absl::Status s = CreateParentDirectories(file); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("state store '", file, "': ", s.message()));
  }
  // Checked before anything is written: a directory others can read is refused as it is.
  std::string parent = std::filesystem::path(file).parent_path().string();
  if (parent.empty()) parent = ".";
  if (absl::Status s = EnsurePrivateDirectory(parent, "state store directory"); !s.ok()) return s;

  absl::StatusOr<int> lock_fd =
      sqlite::LockExclusively(file, absl::StrCat("state store '", file, "'"), "another process");
  if (!lock_fd.ok()) return lock_fd.status();

  auto backend = std::make_unique<SqliteBackend>(file, *lock_fd);
  if (absl::Status s = backend->Init(); !s.ok()) return s;  // ~SqliteBackend releases all.
  return NewBackedStateStore(std::move(backend));
}

}  // namespace weft::store
