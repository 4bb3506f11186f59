// Copyright Weft authors.
#include "nm/nm_state_store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/errors.h"
#include "store/sqlite_util.h"

namespace weft::nm {
namespace {

using store::sqlite::Blob;
using store::sqlite::CodeForSqlite;
using store::sqlite::Int;
using store::sqlite::Param;
using store::sqlite::RowReader;
using store::sqlite::StatementPtr;
using store::sqlite::Text;

// Bumped when the tables change; a database from a newer NM is refused.
// 2: the AMRMProxy's attempts (amrmproxy_attempts, amrmproxy_uams).
// 3: containers.version (container resource updates); added to a version-2 table on open.
// 4: containers.allocation_tags (reported at registration for the RM's recovery); added to a
//    version-2 or -3 table on open.
// 5: the containers' accounting (application history, issue 31): launched_ms, finished_ms,
//    memory_mb_ms (memory_mb_seconds x 1000, rounded), usage_sample_ms,
//    usage_sample_rss_bytes, cpu_time_ms, peak_memory_bytes, network_tx_bytes; added, as
//    zeros, to an older table on open.
// 6: containers.devices (issue 32: the device shares of its token); added, empty, to an older
//    table on open.
constexpr int kSchemaVersion = 6;

constexpr char kTokenKeyValue[] = "amrmproxy_token_key";
constexpr char kContainerKeyValue[] = "container_key_current";
constexpr char kNextContainerKeyValue[] = "container_key_next";

constexpr char kSchema[] = R"sql(
CREATE TABLE IF NOT EXISTS containers (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  user TEXT NOT NULL,
  resource TEXT NOT NULL,
  network_mbps INTEGER NOT NULL,
  state INTEGER NOT NULL,
  monitor_pid INTEGER NOT NULL,
  monitor_start_time INTEGER NOT NULL,
  pid INTEGER NOT NULL,
  start_time INTEGER NOT NULL,
  cgroup_dirs TEXT NOT NULL,
  state_dir TEXT NOT NULL,
  work_dir TEXT NOT NULL,
  stop_exit_status INTEGER,
  stop_reason TEXT NOT NULL,
  exit_status INTEGER NOT NULL,
  diagnostics TEXT NOT NULL,
  acknowledged INTEGER NOT NULL,
  version INTEGER NOT NULL DEFAULT 0,
  allocation_tags TEXT NOT NULL DEFAULT '',
  launched_ms INTEGER NOT NULL DEFAULT 0,
  finished_ms INTEGER NOT NULL DEFAULT 0,
  memory_mb_ms INTEGER NOT NULL DEFAULT 0,
  usage_sample_ms INTEGER NOT NULL DEFAULT 0,
  usage_sample_rss_bytes INTEGER NOT NULL DEFAULT 0,
  cpu_time_ms INTEGER NOT NULL DEFAULT 0,
  peak_memory_bytes INTEGER NOT NULL DEFAULT 0,
  network_tx_bytes INTEGER NOT NULL DEFAULT 0,
  devices TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS finished_apps (
  app_id TEXT PRIMARY KEY,
  finished_ms INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS kv (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS amrmproxy_attempts (
  attempt_id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  user TEXT NOT NULL,
  am_container_id TEXT NOT NULL,
  home_rm TEXT NOT NULL,
  amrm_token BLOB NOT NULL,
  registered INTEGER NOT NULL,
  registration BLOB NOT NULL,
  queue TEXT NOT NULL,
  app_name TEXT NOT NULL,
  ended INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS amrmproxy_uams (
  attempt_id TEXT NOT NULL,
  sub_cluster_id TEXT NOT NULL,
  rm TEXT NOT NULL,
  application_id TEXT NOT NULL,
  amrm_token BLOB NOT NULL,
  registered INTEGER NOT NULL,
  finished INTEGER NOT NULL,
  PRIMARY KEY (attempt_id, sub_cluster_id));
)sql";

// "<what> (<path>): <SQLite's message>", with store/sqlite_util.h's code for `rc`.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what, absl::string_view path) {
  const char* message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return absl::Status(CodeForSqlite(rc), absl::StrCat(what, " (", path, "): ", message));
}

absl::StatusOr<StatementPtr> Prepare(sqlite3* db, absl::string_view sql, absl::string_view what,
                                     absl::string_view path) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  StatementPtr owned(stmt);
  if (rc != SQLITE_OK) return SqliteError(db, rc, what, path);
  return owned;
}

// Prepares `sql`, binds `params` (valid until it returns) and runs it to the end: for
// statements without results.
absl::Status Run(sqlite3* db, absl::string_view sql, std::initializer_list<Param> params,
                 absl::string_view what, absl::string_view path) {
  absl::StatusOr<StatementPtr> stmt = Prepare(db, sql, what, path);
  if (!stmt.ok()) return stmt.status();
  if (int rc = store::sqlite::BindAll(stmt->get(), params); rc != SQLITE_OK) {
    return SqliteError(db, rc, what, path);
  }
  if (int rc = sqlite3_step(stmt->get()); rc != SQLITE_DONE) {
    return SqliteError(db, rc, what, path);
  }
  return absl::OkStatus();
}

// DataLoss naming the first ill-typed column `reader` met, or OK.
absl::Status RowProblem(const RowReader& reader, absl::string_view path) {
  if (reader.problem().empty()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("NodeManager state ", path, ": ", reader.problem()));
}

// Takes the lock that makes one NodeManager the user of the state at `path`, held by the
// returned descriptor.
absl::StatusOr<int> LockState(const std::string& path) {
  return store::sqlite::LockExclusively(path, absl::StrCat("NodeManager state ", path),
                                        "another NodeManager on this work root");
}

// OK for a missing or empty file and for one that starts as SQLite's do; DataLoss otherwise.
// Read before SQLite opens it (the lock is held: no connection of this process has it open).
absl::Status CheckIsSqliteFile(const std::string& path) {
  static constexpr char kMagic[] = "SQLite format 3";  // 16 bytes with its NUL
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::OkStatus();  // missing (created below) or unreadable (said below)
  char header[sizeof(kMagic)] = {};
  ssize_t n;
  do {
    n = ::read(fd, header, sizeof(header));
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n == 0 || (n == static_cast<ssize_t>(sizeof(header)) &&
                 std::memcmp(header, kMagic, sizeof(kMagic)) == 0)) {
    return absl::OkStatus();
  }
  return absl::DataLossError(
      absl::StrCat("NodeManager state ", path, " is not an SQLite database"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<NmStateStore>> NmStateStore::Open(const std::string& path) {
  absl::StatusOr<int> lock_fd = LockState(path);
  if (!lock_fd.ok()) return lock_fd.status();
  if (absl::Status s = CheckIsSqliteFile(path); !s.ok()) {
    ::close(*lock_fd);
    return s;
  }
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status error = SqliteError(db, rc, "opening the NodeManager state", path);
    sqlite3_close(db);
    ::close(*lock_fd);
    return error;
  }
  // From here the store owns the connection and the lock.
  std::unique_ptr<NmStateStore> store(new NmStateStore(db, path, *lock_fd));
  absl::MutexLock lock(&store->mu_);
  // Containers' records are the NM's business only (SQLite gives the WAL file these modes).
  if (chmod(path.c_str(), 0600) < 0) {
    return ErrnoError(errno, absl::StrCat("chmod 0600 '", path, "'"));
  }
  // SQLite's own exclusive lock is taken by the first transaction and kept until the store
  // closes.
  if (absl::Status s = store->Exec(
          "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
          "BEGIN EXCLUSIVE; COMMIT;",
          "locking the NodeManager state");
      !s.ok()) {
    return s;
  }
  const char* reading_version = "reading the NodeManager state's version";
  absl::StatusOr<StatementPtr> version = Prepare(db, "PRAGMA user_version", reading_version, path);
  if (!version.ok()) return version.status();
  if (rc = sqlite3_step(version->get()); rc != SQLITE_ROW) {
    return SqliteError(db, rc, reading_version, path);
  }
  const int64_t found = sqlite3_column_int64(version->get(), 0);
  if (found > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("NodeManager state ", path, " has schema version ", found,
                     ", newer than this NodeManager's ", kSchemaVersion));
  }
  // A table an NM before schema 3 created lacks the version column: its containers are at
  // version 0. One before schema 4 lacks allocation_tags: its containers have none recorded
  // (started before tokens carried them).
  std::string upgrade;
  if (found > 0 && found < 3)
    upgrade += "ALTER TABLE containers ADD COLUMN version INTEGER NOT NULL DEFAULT 0; ";
  if (found > 0 && found < 4)
    upgrade += "ALTER TABLE containers ADD COLUMN allocation_tags TEXT NOT NULL DEFAULT ''; ";
  // One before schema 5 lacks the accounting: its containers' figures are 0 (not measured).
  if (found > 0 && found < 5) {
    for (const char* column :
         {"launched_ms INTEGER", "finished_ms INTEGER", "memory_mb_ms INTEGER",
          "usage_sample_ms INTEGER", "usage_sample_rss_bytes INTEGER", "cpu_time_ms INTEGER",
          "peak_memory_bytes INTEGER", "network_tx_bytes INTEGER"})
      absl::StrAppend(&upgrade, "ALTER TABLE containers ADD COLUMN ", column,
                      " NOT NULL DEFAULT 0; ");
  }
  if (found > 0 && found < 6)
    upgrade += "ALTER TABLE containers ADD COLUMN devices TEXT NOT NULL DEFAULT ''; ";
  if (absl::Status s = store->Exec(absl::StrCat("BEGIN; ", kSchema, upgrade, "PRAGMA user_version=",
                                                kSchemaVersion, "; COMMIT;"),
                                   "creating the NodeManager state's tables");
      !s.ok()) {
    return s;
  }
  return store;
}

NmStateStore::~NmStateStore() {
  sqlite3_close(db_);
  ::close(lock_fd_);  // releases the flock, after SQLite let go of the database
}

absl::Status NmStateStore::Exec(absl::string_view sql, absl::string_view what) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string message = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // no-op without a transaction
  return absl::Status(CodeForSqlite(rc), absl::StrCat(what, " (", path_, "): ", message));
}

absl::Status NmStateStore::InTransaction(absl::string_view what,
                                         absl::FunctionRef<absl::Status()> body) {
  if (absl::Status s = Exec("BEGIN", what); !s.ok()) return s;
  if (absl::Status s = body(); !s.ok()) {
    (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return s;
  }
  return Exec("COMMIT", what);
}

absl::StatusOr<std::vector<NmContainerRecord>> NmStateStore::LoadContainers() {
  absl::MutexLock lock(&mu_);
  const char* what = "reading container records";
  absl::StatusOr<StatementPtr> q =
      Prepare(db_,
              "SELECT id, app_id, user, resource, network_mbps, state, monitor_pid, "
              "monitor_start_time, pid, start_time, cgroup_dirs, state_dir, work_dir, "
              "stop_exit_status, stop_reason, exit_status, diagnostics, acknowledged, version, "
              "allocation_tags, launched_ms, finished_ms, memory_mb_ms, usage_sample_ms, "
              "usage_sample_rss_bytes, cpu_time_ms, peak_memory_bytes, network_tx_bytes, "
              "devices FROM containers ORDER BY id",
              what, path_);
  if (!q.ok()) return q.status();
  std::vector<NmContainerRecord> records;
  int rc;
  while ((rc = sqlite3_step(q->get())) == SQLITE_ROW) {
    RowReader row(q->get(), "containers");
    NmContainerRecord r;
    r.container_id = row.Bytes(0);
    r.app_id = row.Bytes(1);
    r.user = row.Bytes(2);
    r.resource = row.Bytes(3);
    r.network_mbps = row.Int64(4);
    const int64_t state = row.Int64(5);
    r.monitor_pid = row.Int64(6);
    r.monitor_start_time = static_cast<uint64_t>(row.Int64(7));
    r.pid = row.Int64(8);
    r.start_time = static_cast<uint64_t>(row.Int64(9));
    const std::string dirs = row.Bytes(10);
    if (!dirs.empty()) r.cgroup_dirs = absl::StrSplit(dirs, '\n');
    r.state_dir = row.Bytes(11);
    r.work_dir = row.Bytes(12);
    if (!row.IsNull(13)) r.stop_exit_status = row.Int32(13);
    r.stop_reason = row.Bytes(14);
    r.exit_status = row.Int32(15);
    r.diagnostics = row.Bytes(16);
    r.acknowledged = row.Int64(17) != 0;
    r.version = row.Int32(18);
    const std::string tags = row.Bytes(19);
    if (!tags.empty()) r.allocation_tags = absl::StrSplit(tags, '\n');
    r.launched_ms = row.Int64(20);
    r.finished_ms = row.Int64(21);
    r.memory_mb_seconds = static_cast<double>(row.Int64(22)) / 1000;
    r.usage_sample_ms = row.Int64(23);
    r.usage_sample_rss_bytes = row.Int64(24);
    r.cpu_time_ms = row.Int64(25);
    r.peak_memory_bytes = row.Int64(26);
    r.network_tx_bytes = row.Int64(27);
    const std::string devices = row.Bytes(28);
    if (!devices.empty()) r.devices = absl::StrSplit(devices, '\n');
    if (absl::Status s = RowProblem(row, path_); !s.ok()) return s;
    if (state < 0 || state > static_cast<int64_t>(NmContainerRecord::State::kCompleted)) {
      return absl::DataLossError(absl::StrCat("container record ", r.container_id, " in ", path_,
                                              " has unknown state ", state));
    }
    r.state = static_cast<NmContainerRecord::State>(state);
    records.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return records;
}

absl::Status NmStateStore::PutContainer(const NmContainerRecord& r) {
  absl::MutexLock lock(&mu_);
  const std::string dirs = absl::StrJoin(r.cgroup_dirs, "\n");
  return Run(
      db_,
      "INSERT OR REPLACE INTO containers (id, app_id, user, resource, network_mbps, "
      "state, monitor_pid, monitor_start_time, pid, start_time, cgroup_dirs, state_dir, "
      "work_dir, stop_exit_status, stop_reason, exit_status, diagnostics, acknowledged, "
      "version, allocation_tags, launched_ms, finished_ms, memory_mb_ms, "
      "usage_sample_ms, usage_sample_rss_bytes, cpu_time_ms, peak_memory_bytes, "
      "network_tx_bytes, devices) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
      "?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29)",
      {Text(r.container_id), Text(r.app_id), Text(r.user), Text(r.resource), Int(r.network_mbps),
       Int(static_cast<int64_t>(r.state)), Int(r.monitor_pid),
       Int(static_cast<int64_t>(r.monitor_start_time)), Int(r.pid),
       Int(static_cast<int64_t>(r.start_time)), Text(dirs), Text(r.state_dir), Text(r.work_dir),
       r.stop_exit_status.has_value() ? Int(*r.stop_exit_status) : store::sqlite::Null(),
       Text(r.stop_reason), Int(r.exit_status), Text(r.diagnostics), Int(r.acknowledged ? 1 : 0),
       Int(r.version), Text(absl::StrJoin(r.allocation_tags, "\n")), Int(r.launched_ms),
       Int(r.finished_ms), Int(std::llround(r.memory_mb_seconds * 1000)),
       Int(r.usage_sample_ms), Int(r.usage_sample_rss_bytes), Int(r.cpu_time_ms),
       Int(r.peak_memory_bytes), Int(r.network_tx_bytes), Text(absl::StrJoin(r.devices, "\n"))},
      absl::StrCat("recording container ", r.container_id), path_);
}

absl::Status NmStateStore::RemoveContainer(absl::string_view container_id) {
  absl::MutexLock lock(&mu_);
  return Run(db_, "DELETE FROM containers WHERE id = ?1", {Text(container_id)},
             absl::StrCat("removing the record of container ", container_id), path_);
}

absl::StatusOr<std::map<std::string, int64_t>> NmStateStore::LoadFinishedApps() {
  absl::MutexLock lock(&mu_);
  const char* what = "reading finished applications";
  absl::StatusOr<StatementPtr> q =
      Prepare(db_, "SELECT app_id, finished_ms FROM finished_apps", what, path_);
  if (!q.ok()) return q.status();
  std::map<std::string, int64_t> apps;
  int rc;
  while ((rc = sqlite3_step(q->get())) == SQLITE_ROW) {
    RowReader row(q->get(), "finished_apps");
    std::string app = row.Bytes(0);
    const int64_t finished_ms = row.Int64(1);
    if (absl::Status s = RowProblem(row, path_); !s.ok()) return s;
    apps[std::move(app)] = finished_ms;
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return apps;
}

absl::Status NmStateStore::FinishApplication(absl::string_view app_id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("recording application ", app_id, " as finished");
  return InTransaction(what, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    if (absl::Status s =
            Run(db_, "DELETE FROM containers WHERE app_id = ?1", {Text(app_id)}, what, path_);
        !s.ok()) {
      return s;
    }
    return Run(db_, "INSERT OR REPLACE INTO finished_apps (app_id, finished_ms) VALUES (?1, ?2)",
               {Text(app_id), Int(now_ms)}, what, path_);
  });
}

absl::Status NmStateStore::PruneFinishedApps(int64_t before_ms) {
  absl::MutexLock lock(&mu_);
  return Run(db_, "DELETE FROM finished_apps WHERE finished_ms < ?1", {Int(before_ms)},
             "pruning finished applications", path_);
}

absl::StatusOr<std::optional<std::string>> NmStateStore::GetValue(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  return GetValueLocked(key);
}

absl::Status NmStateStore::SetValue(absl::string_view key, absl::string_view value) {
  absl::MutexLock lock(&mu_);
  return SetValueLocked(key, value);
}

absl::StatusOr<std::optional<std::string>> NmStateStore::GetValueLocked(absl::string_view key) {
  const std::string what = absl::StrCat("reading '", key, "'");
  absl::StatusOr<StatementPtr> q = Prepare(db_, "SELECT value FROM kv WHERE key = ?1", what, path_);
  if (!q.ok()) return q.status();
  if (int rc = store::sqlite::BindAll(q->get(), {Text(key)}); rc != SQLITE_OK) {
    return SqliteError(db_, rc, what, path_);
  }
  const int rc = sqlite3_step(q->get());
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, what, path_);
  RowReader row(q->get(), "kv");
  std::string value = row.Bytes(0);
  if (absl::Status s = RowProblem(row, path_); !s.ok()) return s;
  return std::optional<std::string>(std::move(value));
}

absl::Status NmStateStore::SetValueLocked(absl::string_view key, absl::string_view value) {
  return Run(db_, "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)",
             {Text(key), Text(value)}, absl::StrCat("recording '", key, "'"), path_);
}

absl::Status NmStateStore::Clear() {
  absl::MutexLock lock(&mu_);
  return Exec(
      "BEGIN; DELETE FROM containers; DELETE FROM finished_apps; DELETE FROM kv; "
      "DELETE FROM amrmproxy_attempts; DELETE FROM amrmproxy_uams; COMMIT;",
      "clearing the NodeManager state");
}

absl::Status NmStateStore::PutAttempt(const amrmproxy::AttemptState& state) {
  absl::MutexLock lock(&mu_);
  const amrmproxy::AttemptContext& a = state.attempt;
  const std::string what = absl::StrCat("recording AMRMProxy attempt ", a.attempt_id);
  return InTransaction(what, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    const std::string token = a.amrm_token.SerializeAsString();
    const std::string registration = state.registration.SerializeAsString();
    if (absl::Status s = Run(
            db_,
            "INSERT OR REPLACE INTO amrmproxy_attempts (attempt_id, app_id, user, "
            "am_container_id, home_rm, amrm_token, registered, registration, queue, app_name, "
            "ended) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            {Text(a.attempt_id), Text(a.application_id), Text(a.user), Text(a.am_container_id),
             Text(a.home_rm_address), Blob(token), Int(state.registered ? 1 : 0),
             Blob(registration), Text(state.queue), Text(state.app_name), Int(state.ended ? 1 : 0)},
            what, path_);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = Run(db_, "DELETE FROM amrmproxy_uams WHERE attempt_id = ?1",
                             {Text(a.attempt_id)}, what, path_);
        !s.ok()) {
      return s;
    }
    for (const amrmproxy::UamState& u : state.uams) {
      const std::string uam_token = u.amrm_token.SerializeAsString();
      if (absl::Status s =
              Run(db_,
                  "INSERT INTO amrmproxy_uams (attempt_id, sub_cluster_id, rm, application_id, "
                  "amrm_token, registered, finished) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                  {Text(a.attempt_id), Text(u.sub_cluster_id), Text(u.rm), Text(u.application_id),
                   Blob(uam_token), Int(u.registered ? 1 : 0), Int(u.finished ? 1 : 0)},
                  what, path_);
          !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  });
}

absl::Status NmStateStore::RemoveAttempt(absl::string_view attempt_id) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("removing AMRMProxy attempt ", attempt_id);
  return InTransaction(what, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    for (const char* sql : {"DELETE FROM amrmproxy_uams WHERE attempt_id = ?1",
                            "DELETE FROM amrmproxy_attempts WHERE attempt_id = ?1"}) {
      if (absl::Status s = Run(db_, sql, {Text(attempt_id)}, what, path_); !s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<amrmproxy::AttemptState>> NmStateStore::LoadAttempts() {
  absl::MutexLock lock(&mu_);
  const char* what = "reading AMRMProxy attempts";
  std::vector<amrmproxy::AttemptState> states;
  std::map<std::string, size_t> index;
  {
    absl::StatusOr<StatementPtr> q =
        Prepare(db_,
                "SELECT attempt_id, app_id, user, am_container_id, home_rm, amrm_token, "
                "registered, registration, queue, app_name, ended FROM amrmproxy_attempts "
                "ORDER BY attempt_id",
                what, path_);
    if (!q.ok()) return q.status();
    int rc;
    while ((rc = sqlite3_step(q->get())) == SQLITE_ROW) {
      RowReader row(q->get(), "amrmproxy_attempts");
      amrmproxy::AttemptState state;
      amrmproxy::AttemptContext& a = state.attempt;
      a.attempt_id = row.Bytes(0);
      a.application_id = row.Bytes(1);
      a.user = row.Bytes(2);
      a.am_container_id = row.Bytes(3);
      a.home_rm_address = row.Bytes(4);
      const std::string token = row.Bytes(5, /*want_blob=*/true);
      state.registered = row.Int64(6) != 0;
      const std::string registration = row.Bytes(7, /*want_blob=*/true);
      state.queue = row.Bytes(8);
      state.app_name = row.Bytes(9);
      state.ended = row.Int64(10) != 0;
      if (absl::Status s = RowProblem(row, path_); !s.ok()) return s;
      if (!a.amrm_token.ParseFromString(token) ||
          !state.registration.ParseFromString(registration)) {
        return absl::DataLossError(absl::StrCat("AMRMProxy attempt ", a.attempt_id, " in ", path_,
                                                ": its token or registration does not "
                                                "parse"));
      }
      index[a.attempt_id] = states.size();
      states.push_back(std::move(state));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  }
  absl::StatusOr<StatementPtr> q =
      Prepare(db_,
              "SELECT attempt_id, sub_cluster_id, rm, application_id, amrm_token, registered, "
              "finished FROM amrmproxy_uams ORDER BY attempt_id, sub_cluster_id",
              what, path_);
  if (!q.ok()) return q.status();
  int rc;
  while ((rc = sqlite3_step(q->get())) == SQLITE_ROW) {
    RowReader row(q->get(), "amrmproxy_uams");
    const std::string attempt_id = row.Bytes(0);
    amrmproxy::UamState u;
    u.sub_cluster_id = row.Bytes(1);
    u.rm = row.Bytes(2);
    u.application_id = row.Bytes(3);
    const std::string token = row.Bytes(4, /*want_blob=*/true);
    u.registered = row.Int64(5) != 0;
    u.finished = row.Int64(6) != 0;
    if (absl::Status s = RowProblem(row, path_); !s.ok()) return s;
    auto it = index.find(attempt_id);
    if (it == index.end()) continue;  // not written by PutAttempt: ignored
    if (!u.amrm_token.ParseFromString(token)) {
      return absl::DataLossError(absl::StrCat("AMRMProxy attempt ", it->first, " in ", path_,
                                              ": the token of its UAM in ", u.sub_cluster_id,
                                              " does not parse"));
    }
    states[it->second].uams.push_back(std::move(u));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return states;
}

absl::StatusOr<std::optional<std::string>> NmStateStore::GetBytesLocked(absl::string_view key,
                                                                     absl::string_view what) {
  absl::StatusOr<std::optional<std::string>> hex = GetValueLocked(key);
  if (!hex.ok() || !hex->has_value()) return hex;
  const std::string& text = **hex;
  if (text.size() % 2 != 0 || !std::all_of(text.begin(), text.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c));
      })) {
    return absl::DataLossError(absl::StrCat(what, " in ", path_, " is not hexadecimal"));
  }
  return std::optional<std::string>(absl::HexStringToBytes(text));
}

absl::StatusOr<std::optional<std::string>> NmStateStore::GetTokenKey() {
  absl::MutexLock lock(&mu_);
  return GetBytesLocked(kTokenKeyValue, "the AMRMProxy's token key");
}

absl::Status NmStateStore::SetTokenKey(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  return SetValueLocked(kTokenKeyValue, absl::BytesToHexString(key));
}

absl::StatusOr<std::optional<std::pair<std::string, std::string>>>
NmStateStore::GetContainerKeys() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<std::string>> current =
      GetBytesLocked(kContainerKeyValue, "the current container master key");
  if (!current.ok()) return current.status();
  absl::StatusOr<std::optional<std::string>> next =
      GetBytesLocked(kNextContainerKeyValue, "the next container master key");
  if (!next.ok()) return next.status();
  if (!current->has_value() || !next->has_value())
    return std::optional<std::pair<std::string, std::string>>();
  return std::optional<std::pair<std::string, std::string>>(
      std::make_pair(**std::move(current), **std::move(next)));
}

absl::Status NmStateStore::SetContainerKeys(absl::string_view current, absl::string_view next) {
  absl::MutexLock lock(&mu_);
  return InTransaction("writing the container master keys",
                       [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
    if (absl::Status s = SetValueLocked(kContainerKeyValue, absl::BytesToHexString(current));
        !s.ok())
      return s;
    return SetValueLocked(kNextContainerKeyValue, absl::BytesToHexString(next));
  });
}

}  // namespace weft::nm
