// Copyright Weft authors.
#include "history/sqlite_history_store.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
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
constexpr int kHistoryCacheKib = 64 * 1024;  // SQLite's page cache, at most

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
    // Issue 31: aggregates derived from the containers (history_store.h) as columns. A
    // container's contribution: memory_mb_rs / vcores_rs are its "memory-mb" / "vcores"
    // resource-seconds, other types are rows of container_resource_seconds; an application's
    // columns are its containers' sums (peak_memory_bytes their max_rss_bytes' max). The
    // report index covers QueueReport and UserReport. Existing rows are filled in by Migrate.
    R"sql(
ALTER TABLE applications ADD COLUMN memory_mb_rs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE applications ADD COLUMN vcores_rs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE applications ADD COLUMN memory_mb_seconds_used INTEGER NOT NULL DEFAULT 0;
ALTER TABLE applications ADD COLUMN cpu_time_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE applications ADD COLUMN network_tx_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE applications ADD COLUMN peak_memory_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN memory_mb_rs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN vcores_rs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN memory_mb_seconds INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN cpu_time_ms INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN network_tx_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE containers ADD COLUMN max_rss_bytes INTEGER NOT NULL DEFAULT 0;
CREATE TABLE container_resource_seconds (
  container_id TEXT NOT NULL,
  application_id TEXT NOT NULL,
  resource_type TEXT NOT NULL,
  seconds INTEGER NOT NULL,
  PRIMARY KEY (container_id, resource_type)
);
CREATE INDEX container_resource_seconds_by_application
  ON container_resource_seconds (application_id);
DROP INDEX applications_by_finish;
CREATE INDEX applications_by_finish ON applications (finish_ms, queue, user, memory_mb_rs,
  vcores_rs, memory_mb_seconds_used, cpu_time_ms, network_tx_bytes);
)sql",
};
static_assert(std::size(kHistoryMigrations) == SqliteHistoryStore::kSchemaVersion);

// ListApplications' order in SQL (history_store.h).
constexpr const char* kHistoryListOrder = " ORDER BY finish_ms DESC, application_id ASC";

// The resource types with their own columns; others go to container_resource_seconds.
constexpr absl::string_view kMemoryType = "memory-mb";
constexpr absl::string_view kVcoresType = "vcores";

// What Applications() reads from each row, in this order.
constexpr const char* kApplicationColumns =
    "record, memory_mb_rs, vcores_rs, memory_mb_seconds_used, cpu_time_ms, network_tx_bytes, "
    "peak_memory_bytes, application_id";

// An application's aggregate columns from its containers' rows.
constexpr const char* kRecomputeSql =
    "UPDATE applications SET (memory_mb_rs, vcores_rs, memory_mb_seconds_used, cpu_time_ms, "
    "network_tx_bytes, peak_memory_bytes) = (SELECT coalesce(sum(memory_mb_rs), 0), "
    "coalesce(sum(vcores_rs), 0), coalesce(sum(memory_mb_seconds), 0), "
    "coalesce(sum(cpu_time_ms), 0), coalesce(sum(network_tx_bytes), 0), "
    "coalesce(max(max_rss_bytes), 0) FROM containers c WHERE c.application_id = "
    "applications.application_id)";

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> SqliteHistoryStore::Open(
    const std::string& path) {
  std::unique_ptr<SqliteHistoryStore> store(new SqliteHistoryStore(path));
  if (absl::Status s = store->Init(); !s.ok()) return s;
  return store;
}

SqliteHistoryStore::~SqliteHistoryStore() {
  absl::MutexLock lock(&mu_);
  statements_.clear();  // finalized before the close
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
  StatementPtr& stmt = statements_[sql];
  int rc = SQLITE_OK;
  if (stmt == nullptr) {
    sqlite3_stmt* raw = nullptr;
    rc = sqlite3_prepare_v3(db_, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    if (rc != SQLITE_OK) {
      statements_.erase(sql);
      return Error(absl::StrCat(what, " (preparing)"), rc);
    }
    stmt.reset(raw);
  }
  store::sqlite::ScopedReset reset(stmt.get());
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
  int rc =
      sqlite3_open_v2(path_.c_str(), &db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) return Error("opening", rc);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, kHistoryBusyTimeoutMs);
  std::string journal_mode;
  absl::StatusOr<int> changed =
      Run("PRAGMA journal_mode = WAL", {}, "enabling WAL",
          [&](sqlite3_stmt* stmt) { journal_mode = ColumnBytes(stmt, 0); });
  if (!changed.ok()) return changed.status();
  if (journal_mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "cannot use the WAL journal (got '", journal_mode, "')"));
  }
  if (absl::Status s = Exec("PRAGMA synchronous = FULL", "setting synchronous=FULL"); !s.ok()) {
    return s;
  }
  // Reports read a 7-day slice of the finish-time index (~5 MB per 1M applications over 90
  // days): keep it cached rather than re-read from the OS on every report.
  if (absl::Status s = Exec(absl::StrCat("PRAGMA cache_size = -", kHistoryCacheKib),
                            "setting the page cache size");
      !s.ok()) {
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
        absl::StatusOr<int> read = Run("SELECT coalesce(max(version), 0) FROM weft_history_schema",
                                       {}, "reading the schema version", [&](sqlite3_stmt* stmt) {
                                         version = sqlite3_column_int64(stmt, 0);
                                       });
        if (!read.ok()) return read.status();
        if (version > kSchemaVersion) {
          return absl::FailedPreconditionError(absl::StrCat(
              "history store '", Describe(), "': its schema version ", version,
              " is newer than this binary's (", kSchemaVersion, "); use a newer weft"));
        }
        for (int64_t next = version + 1; next <= kSchemaVersion; ++next) {
          if (absl::Status s =
                  Exec(kHistoryMigrations[next - 1], absl::StrCat("migrating to version ", next));
              !s.ok()) {
            return s;
          }
          if (next == 2) {
            // Fill the new columns of the rows a version-1 store holds.
            absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> containers =
                Records<v1::ContainerHistoryRecord>("SELECT record FROM containers", {},
                                                    "reading containers to migrate");
            if (!containers.ok()) return containers.status();
            std::set<std::string> dirty;
            for (const v1::ContainerHistoryRecord& container : *containers) {
              if (absl::Status s = WriteContainer(container, &dirty); !s.ok()) return s;
            }
            if (absl::Status s = Recompute(dirty); !s.ok()) return s;
          }
          absl::StatusOr<int> recorded =
              Run("INSERT INTO weft_history_schema (version, applied_ms) VALUES (?1, ?2)",
                  {Int(next), Int(absl::ToUnixMillis(absl::Now()))}, "recording the schema version",
                  [](sqlite3_stmt*) {});
          if (!recorded.ok()) return recorded.status();
        }
        return absl::OkStatus();
      });
}

absl::Status SqliteHistoryStore::WriteApplication(const v1::ApplicationHistoryRecord& record,
                                                  std::set<std::string>* dirty) {
  // The aggregate columns are left alone: Recompute derives them.
  const std::string blob = record.SerializeAsString();
  dirty->insert(record.application_id());
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

absl::Status SqliteHistoryStore::WriteAttempt(const v1::AttemptHistoryRecord& record) {
  const std::string blob = record.SerializeAsString();
  return Run("INSERT INTO attempts (attempt_id, application_id, record) VALUES (?1, ?2, ?3) "
             "ON CONFLICT (attempt_id) DO UPDATE SET application_id = excluded.application_id, "
             "record = excluded.record",
             {Text(record.attempt_id()), Text(record.application_id()), Blob(blob)},
             absl::StrCat("writing attempt '", record.attempt_id(), "'"), [](sqlite3_stmt*) {})
      .status();
}

absl::Status SqliteHistoryStore::WriteContainer(const v1::ContainerHistoryRecord& record,
                                                std::set<std::string>* dirty) {
  const std::string what = absl::StrCat("writing container '", record.container_id(), "'");
  // A container put again under another application leaves the old one's sums.
  absl::StatusOr<int> old = Run("SELECT application_id FROM containers WHERE container_id = ?1",
                                {Text(record.container_id())}, what,
                                [&](sqlite3_stmt* stmt) { dirty->insert(ColumnBytes(stmt, 0)); });
  if (!old.ok()) return old.status();
  dirty->insert(record.application_id());
  const ContainerContribution c = ContributionOf(record);
  auto seconds_of = [&](absl::string_view type) -> int64_t {
    auto it = c.resource_seconds.find(std::string(type));
    return it == c.resource_seconds.end() ? 0 : it->second;
  };
  const std::string blob = record.SerializeAsString();
  absl::StatusOr<int> written =
      Run("INSERT INTO containers (container_id, application_id, attempt_id, record, memory_mb_rs, "
          "vcores_rs, memory_mb_seconds, cpu_time_ms, network_tx_bytes, max_rss_bytes) VALUES "
          "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (container_id) DO UPDATE SET "
          "application_id = excluded.application_id, attempt_id = excluded.attempt_id, record = "
          "excluded.record, memory_mb_rs = excluded.memory_mb_rs, vcores_rs = excluded.vcores_rs, "
          "memory_mb_seconds = excluded.memory_mb_seconds, cpu_time_ms = excluded.cpu_time_ms, "
          "network_tx_bytes = excluded.network_tx_bytes, max_rss_bytes = excluded.max_rss_bytes",
          {Text(record.container_id()), Text(record.application_id()), Text(record.attempt_id()),
           Blob(blob), Int(seconds_of(kMemoryType)), Int(seconds_of(kVcoresType)),
           Int(c.memory_mb_seconds_used), Int(c.cpu_time_ms), Int(c.network_tx_bytes),
           Int(c.peak_memory_bytes)},
          what, [](sqlite3_stmt*) {});
  if (!written.ok()) return written.status();
  absl::StatusOr<int> cleared =
      Run("DELETE FROM container_resource_seconds WHERE container_id = ?1",
          {Text(record.container_id())}, what, [](sqlite3_stmt*) {});
  if (!cleared.ok()) return cleared.status();
  for (const auto& [type, seconds] : c.resource_seconds) {
    if (type == kMemoryType || type == kVcoresType || seconds == 0) continue;
    absl::StatusOr<int> other =
        Run("INSERT INTO container_resource_seconds (container_id, application_id, "
            "resource_type, seconds) VALUES (?1, ?2, ?3, ?4)",
            {Text(record.container_id()), Text(record.application_id()), Text(type), Int(seconds)},
            what, [](sqlite3_stmt*) {});
    if (!other.ok()) return other.status();
  }
  return absl::OkStatus();
}

absl::Status SqliteHistoryStore::Recompute(const std::set<std::string>& application_ids) {
  const std::string sql = absl::StrCat(kRecomputeSql, " WHERE application_id = ?1");
  for (const std::string& id : application_ids) {
    absl::StatusOr<int> updated =
        Run(sql, {Text(id)}, absl::StrCat("summing application '", id, "''s containers"),
            [](sqlite3_stmt*) {});
    if (!updated.ok()) return updated.status();
  }
  return absl::OkStatus();
}

absl::Status SqliteHistoryStore::DoPutApplication(const v1::ApplicationHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  return InTransaction("writing an application",
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
                         std::set<std::string> dirty;
                         if (absl::Status s = WriteApplication(record, &dirty); !s.ok()) return s;
                         return Recompute(dirty);
                       });
}

absl::Status SqliteHistoryStore::DoPutAttempt(const v1::AttemptHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  return WriteAttempt(record);
}

absl::Status SqliteHistoryStore::DoPutContainer(const v1::ContainerHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  return InTransaction("writing a container",
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
                         std::set<std::string> dirty;
                         if (absl::Status s = WriteContainer(record, &dirty); !s.ok()) return s;
                         return Recompute(dirty);
                       });
}

absl::Status SqliteHistoryStore::DoPutBatch(const HistoryBatch& batch) {
  absl::MutexLock lock(&mu_);
  return InTransaction("writing a batch", [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    std::set<std::string> dirty;
    for (const v1::ContainerHistoryRecord& container : batch.containers) {
      if (absl::Status s = WriteContainer(container, &dirty); !s.ok()) return s;
    }
    for (const v1::AttemptHistoryRecord& attempt : batch.attempts) {
      if (absl::Status s = WriteAttempt(attempt); !s.ok()) return s;
    }
    for (const v1::ApplicationHistoryRecord& app : batch.applications) {
      if (absl::Status s = WriteApplication(app, &dirty); !s.ok()) return s;
    }
    return Recompute(dirty);
  });
}

namespace {

template <typename T>
absl::StatusOr<std::optional<T>> HistoryFirst(absl::StatusOr<std::vector<T>> records) {
  if (!records.ok()) return records.status();
  if (records->empty()) return std::optional<T>();
  return std::optional<T>(std::move(records->front()));
}

// Sets resource_seconds[type] to `seconds`, or leaves the type out when it is 0.
void SetResourceSeconds(absl::string_view type, int64_t seconds,
                        v1::ApplicationHistoryRecord* app) {
  if (seconds != 0) (*app->mutable_resource_seconds())[std::string(type)] = seconds;
}

}  // namespace

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> SqliteHistoryStore::Applications(
    const std::string& select, const std::string& ids_sql, const std::vector<Param>& params,
    absl::string_view what) {
  std::vector<v1::ApplicationHistoryRecord> out;
  std::map<std::string, size_t> index;
  std::string bad;
  absl::StatusOr<int> ran = Run(select, params, what, [&](sqlite3_stmt* stmt) {
    v1::ApplicationHistoryRecord app;
    if (!app.ParseFromString(ColumnBytes(stmt, 0)) && bad.empty()) {
      bad = absl::StrCat("history store '", Describe(), "': ", what,
                         ": a stored ApplicationHistoryRecord does not parse");
    }
    app.clear_resource_seconds();
    SetResourceSeconds(kMemoryType, sqlite3_column_int64(stmt, 1), &app);
    SetResourceSeconds(kVcoresType, sqlite3_column_int64(stmt, 2), &app);
    app.set_memory_mb_seconds_used(sqlite3_column_int64(stmt, 3));
    app.set_cpu_time_ms(sqlite3_column_int64(stmt, 4));
    app.set_network_tx_bytes(sqlite3_column_int64(stmt, 5));
    app.set_peak_memory_bytes(sqlite3_column_int64(stmt, 6));
    index[ColumnBytes(stmt, 7)] = out.size();
    out.push_back(std::move(app));
  });
  if (!ran.ok()) return ran.status();
  if (!bad.empty()) return absl::DataLossError(bad);
  if (out.empty()) return out;
  // Other resource types, where any container has one.
  bool any_other = false;
  absl::StatusOr<int> probed = Run("SELECT 1 FROM container_resource_seconds LIMIT 1", {}, what,
                                   [&](sqlite3_stmt*) { any_other = true; });
  if (!probed.ok()) return probed.status();
  if (!any_other) return out;
  absl::StatusOr<int> others = Run(
      absl::StrCat("SELECT application_id, resource_type, sum(seconds) FROM "
                   "container_resource_seconds WHERE application_id IN (",
                   ids_sql, ") GROUP BY application_id, resource_type"),
      params, what, [&](sqlite3_stmt* stmt) {
        auto it = index.find(ColumnBytes(stmt, 0));
        if (it == index.end()) return;
        SetResourceSeconds(ColumnBytes(stmt, 1), sqlite3_column_int64(stmt, 2), &out[it->second]);
      });
  if (!others.ok()) return others.status();
  return out;
}

absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> SqliteHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return HistoryFirst(Applications(
      absl::StrCat("SELECT ", kApplicationColumns, " FROM applications WHERE application_id = ?1"),
      "SELECT ?1", {Text(id)}, "reading an application"));
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
      "SELECT record FROM containers WHERE container_id = ?1", {Text(id)}, "reading a container"));
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> SqliteHistoryStore::DoListApplications(
    const ApplicationFilter& filter) {
  std::string where = " FROM applications WHERE 1";
  std::vector<Param> params;
  auto next = [&]() { return absl::StrCat("?", params.size()); };
  if (!filter.user.empty()) {
    params.push_back(Text(filter.user));
    absl::StrAppend(&where, " AND user = ", next());
  }
  if (!filter.queue.empty()) {
    params.push_back(Text(filter.queue));
    absl::StrAppend(&where, " AND queue = ", next());
  }
  if (!filter.states.empty()) {
    absl::StrAppend(&where, " AND final_state IN (");
    for (size_t i = 0; i < filter.states.size(); ++i) {
      params.push_back(Int(filter.states[i]));
      absl::StrAppend(&where, i == 0 ? "" : ", ", next());
    }
    absl::StrAppend(&where, ")");
  }
  if (filter.finished_since_ms) {
    params.push_back(Int(*filter.finished_since_ms));
    absl::StrAppend(&where, " AND finish_ms >= ", next());
  }
  if (filter.finished_until_ms) {
    params.push_back(Int(*filter.finished_until_ms));
    absl::StrAppend(&where, " AND finish_ms < ", next());
  }
  absl::StrAppend(&where, kHistoryListOrder);
  if (filter.limit > 0) {
    params.push_back(Int(filter.limit));
    absl::StrAppend(&where, " LIMIT ", next());
  }
  absl::MutexLock lock(&mu_);
  return Applications(absl::StrCat("SELECT ", kApplicationColumns, where),
                      absl::StrCat("SELECT application_id", where), params, "listing applications");
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
        absl::StatusOr<int> found =
            Run(absl::StrCat("SELECT application_id FROM applications WHERE finish_ms < ?1 UNION "
                             "SELECT application_id FROM (SELECT application_id FROM applications",
                             kHistoryListOrder, " LIMIT -1 OFFSET ?2)"),
                {Int(older_than_ms), Int(offset)}, "choosing applications to prune",
                [&](sqlite3_stmt* stmt) { doomed.push_back(ColumnBytes(stmt, 0)); });
        if (!found.ok()) return found.status();
        for (const std::string& id : doomed) {
          for (const char* table :
               {"container_resource_seconds", "containers", "attempts", "applications"}) {
            absl::StatusOr<int> deleted = Run(
                absl::StrCat("DELETE FROM ", table, " WHERE application_id = ?1"), {Text(id)},
                absl::StrCat("pruning application '", id, "' from ", table), [](sqlite3_stmt*) {});
            if (!deleted.ok()) return deleted.status();
          }
        }
        removed = static_cast<int64_t>(doomed.size());
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return removed;
}

absl::StatusOr<std::vector<UsageLine>> SqliteHistoryStore::DoReport(ReportKey key, int64_t since_ms,
                                                                    int64_t until_ms) {
  const char* column = key == ReportKey::kQueue ? "queue" : "user";
  const std::string what =
      key == ReportKey::kQueue ? "reporting usage by queue" : "reporting usage by user";
  absl::MutexLock lock(&mu_);
  std::vector<UsageLine> report;
  absl::StatusOr<int> ran =
      Run(absl::StrCat("SELECT ", column,
                       ", count(*), sum(memory_mb_rs), sum(vcores_rs), "
                       "sum(memory_mb_seconds_used), sum(cpu_time_ms), sum(network_tx_bytes) FROM "
                       "applications WHERE finish_ms >= ?1 AND finish_ms < ?2 GROUP BY ",
                       column, " ORDER BY ", column),
          {Int(since_ms), Int(until_ms)}, what, [&](sqlite3_stmt* stmt) {
            UsageLine& line = report.emplace_back();
            line.key = ColumnBytes(stmt, 0);
            line.applications = sqlite3_column_int64(stmt, 1);
            if (int64_t v = sqlite3_column_int64(stmt, 2); v != 0) {
              line.resource_seconds[std::string(kMemoryType)] = v;
            }
            if (int64_t v = sqlite3_column_int64(stmt, 3); v != 0) {
              line.resource_seconds[std::string(kVcoresType)] = v;
            }
            line.memory_mb_seconds_used = sqlite3_column_int64(stmt, 4);
            line.cpu_time_ms = sqlite3_column_int64(stmt, 5);
            line.network_tx_bytes = sqlite3_column_int64(stmt, 6);
          });
  if (!ran.ok()) return ran.status();
  // Other resource types: rare, joined from the containers' rows (a table lookup per
  // application in the window), so only where any container has one.
  bool any_other = false;
  absl::StatusOr<int> probed = Run("SELECT 1 FROM container_resource_seconds LIMIT 1", {}, what,
                                   [&](sqlite3_stmt*) { any_other = true; });
  if (!probed.ok()) return probed.status();
  if (!any_other) return report;
  absl::StatusOr<int> others = Run(
      absl::StrCat("SELECT a.", column,
                   ", r.resource_type, sum(r.seconds) FROM "
                   "container_resource_seconds r JOIN applications a ON a.application_id = "
                   "r.application_id WHERE a.finish_ms >= ?1 AND a.finish_ms < ?2 GROUP BY 1, 2"),
      {Int(since_ms), Int(until_ms)}, what, [&](sqlite3_stmt* stmt) {
        const std::string name = ColumnBytes(stmt, 0);
        auto it = std::lower_bound(
            report.begin(), report.end(), name,
            [](const UsageLine& line, const std::string& n) { return line.key < n; });
        if (it == report.end() || it->key != name) return;
        if (int64_t v = sqlite3_column_int64(stmt, 2); v != 0) {
          it->resource_seconds[ColumnBytes(stmt, 1)] = v;
        }
      });
  if (!others.ok()) return others.status();
  return report;
}

}  // namespace weft::history
