// Copyright Weft authors.
#include "nm/nm_state_store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace weft::nm {
namespace {

// Bumped when the tables change; a database from a newer NM is refused.
// 2: the AMRMProxy's attempts (amrmproxy_attempts, amrmproxy_uams).
constexpr int kSchemaVersion = 2;

constexpr char kTokenKeyValue[] = "amrmproxy_token_key";

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
  acknowledged INTEGER NOT NULL);
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

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::StatusCode::kDataLoss;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_FULL:
      return absl::StatusCode::kResourceExhausted;
    default:
      return absl::StatusCode::kInternal;
  }
}

absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what, absl::string_view path) {
  std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
    absl::StrAppend(&message, " (in use by another NodeManager on this work root?)");
  }
  return absl::Status(CodeFor(rc), absl::StrCat(what, " (", path, "): ", message));
}

// A prepared statement, finalized on destruction.
class Statement {
 public:
  Statement(sqlite3* db, absl::string_view sql) {
    rc_ = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  int prepare_rc() const { return rc_; }
  sqlite3_stmt* get() { return stmt_; }

  // Binds parameter `i` (1-based).
  void Bind(int i, int64_t value) { Keep(sqlite3_bind_int64(stmt_, i, value)); }
  void Bind(int i, absl::string_view text) {
    Keep(sqlite3_bind_text(stmt_, i, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
  }
  void BindNull(int i) { Keep(sqlite3_bind_null(stmt_, i)); }
  void BindBlob(int i, absl::string_view bytes) {
    Keep(sqlite3_bind_blob(stmt_, i, bytes.data(), static_cast<int>(bytes.size()),
                           SQLITE_TRANSIENT));
  }
  // The first failed bind, or SQLITE_OK.
  int bind_rc() const { return bind_rc_; }

  std::string Text(int col) {
    const unsigned char* text = sqlite3_column_text(stmt_, col);
    return text == nullptr ? std::string()
                           : std::string(reinterpret_cast<const char*>(text),
                                         static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  int64_t Int(int col) { return sqlite3_column_int64(stmt_, col); }
  std::string Blob(int col) {
    const void* bytes = sqlite3_column_blob(stmt_, col);
    return bytes == nullptr ? std::string()
                            : std::string(static_cast<const char*>(bytes),
                                          static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }
  bool IsNull(int col) { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }

 private:
  void Keep(int rc) {
    if (bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_OK;
  int bind_rc_ = SQLITE_OK;
};

}  // namespace

absl::StatusOr<std::unique_ptr<NmStateStore>> NmStateStore::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    absl::Status error = SqliteError(db, rc, "opening the NodeManager state", path);
    sqlite3_close(db);
    return error;
  }
  std::unique_ptr<NmStateStore> store(new NmStateStore(db, path));
  absl::MutexLock lock(&store->mu_);
  // Containers' records are the NM's business only (SQLite gives the WAL file these modes).
  if (chmod(path.c_str(), 0600) < 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("chmod 0600 '", path, "'"));
  }
  // The exclusive lock is taken by the first transaction and kept until the store closes.
  if (absl::Status s = store->Exec(
          "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; "
          "BEGIN EXCLUSIVE; COMMIT;",
          "locking the NodeManager state");
      !s.ok()) {
    return s;
  }
  Statement version(db, "PRAGMA user_version");
  if (version.prepare_rc() != SQLITE_OK || sqlite3_step(version.get()) != SQLITE_ROW) {
    return SqliteError(db, sqlite3_errcode(db), "reading the NodeManager state's version", path);
  }
  const int64_t found = version.Int(0);
  if (found > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("NodeManager state ", path, " has schema version ", found,
                     ", newer than this NodeManager's ", kSchemaVersion));
  }
  if (absl::Status s = store->Exec(
          absl::StrCat("BEGIN; ", kSchema, "PRAGMA user_version=", kSchemaVersion, "; COMMIT;"),
          "creating the NodeManager state's tables");
      !s.ok()) {
    return s;
  }
  return store;
}

NmStateStore::~NmStateStore() { sqlite3_close(db_); }

absl::Status NmStateStore::Exec(absl::string_view sql, absl::string_view what) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, std::string(sql).c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return absl::OkStatus();
  std::string message = error != nullptr ? error : sqlite3_errstr(rc);
  sqlite3_free(error);
  (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);  // no-op without a transaction
  if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) {
    absl::StrAppend(&message, " (in use by another NodeManager on this work root?)");
  }
  return absl::Status(CodeFor(rc), absl::StrCat(what, " (", path_, "): ", message));
}

absl::StatusOr<std::vector<NmContainerRecord>> NmStateStore::LoadContainers() {
  absl::MutexLock lock(&mu_);
  Statement q(db_,
              "SELECT id, app_id, user, resource, network_mbps, state, monitor_pid, "
              "monitor_start_time, pid, start_time, cgroup_dirs, state_dir, work_dir, "
              "stop_exit_status, stop_reason, exit_status, diagnostics, acknowledged "
              "FROM containers ORDER BY id");
  if (q.prepare_rc() != SQLITE_OK) {
    return SqliteError(db_, q.prepare_rc(), "reading container records", path_);
  }
  std::vector<NmContainerRecord> records;
  int rc;
  while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
    NmContainerRecord r;
    r.container_id = q.Text(0);
    r.app_id = q.Text(1);
    r.user = q.Text(2);
    r.resource = q.Text(3);
    r.network_mbps = q.Int(4);
    const int64_t state = q.Int(5);
    if (state < 0 || state > static_cast<int64_t>(NmContainerRecord::State::kCompleted)) {
      return absl::DataLossError(absl::StrCat("container record ", r.container_id, " in ", path_,
                                              " has unknown state ", state));
    }
    r.state = static_cast<NmContainerRecord::State>(state);
    r.monitor_pid = q.Int(6);
    r.monitor_start_time = static_cast<uint64_t>(q.Int(7));
    r.pid = q.Int(8);
    r.start_time = static_cast<uint64_t>(q.Int(9));
    const std::string dirs = q.Text(10);
    if (!dirs.empty()) r.cgroup_dirs = absl::StrSplit(dirs, '\n');
    r.state_dir = q.Text(11);
    r.work_dir = q.Text(12);
    if (!q.IsNull(13)) r.stop_exit_status = static_cast<int>(q.Int(13));
    r.stop_reason = q.Text(14);
    r.exit_status = static_cast<int>(q.Int(15));
    r.diagnostics = q.Text(16);
    r.acknowledged = q.Int(17) != 0;
    records.push_back(std::move(r));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, "reading container records", path_);
  return records;
}

absl::Status NmStateStore::PutContainer(const NmContainerRecord& r) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("recording container ", r.container_id);
  Statement q(db_,
              "INSERT OR REPLACE INTO containers (id, app_id, user, resource, network_mbps, "
              "state, monitor_pid, monitor_start_time, pid, start_time, cgroup_dirs, state_dir, "
              "work_dir, stop_exit_status, stop_reason, exit_status, diagnostics, acknowledged) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, "
              "?17, ?18)");
  if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
  const std::string dirs = absl::StrJoin(r.cgroup_dirs, "\n");
  q.Bind(1, r.container_id);
  q.Bind(2, r.app_id);
  q.Bind(3, r.user);
  q.Bind(4, r.resource);
  q.Bind(5, r.network_mbps);
  q.Bind(6, static_cast<int64_t>(r.state));
  q.Bind(7, r.monitor_pid);
  q.Bind(8, static_cast<int64_t>(r.monitor_start_time));
  q.Bind(9, r.pid);
  q.Bind(10, static_cast<int64_t>(r.start_time));
  q.Bind(11, absl::string_view(dirs));
  q.Bind(12, r.state_dir);
  q.Bind(13, r.work_dir);
  if (r.stop_exit_status.has_value()) {
    q.Bind(14, static_cast<int64_t>(*r.stop_exit_status));
  } else {
    q.BindNull(14);
  }
  q.Bind(15, r.stop_reason);
  q.Bind(16, static_cast<int64_t>(r.exit_status));
  q.Bind(17, r.diagnostics);
  q.Bind(18, static_cast<int64_t>(r.acknowledged ? 1 : 0));
  if (q.bind_rc() != SQLITE_OK) return SqliteError(db_, q.bind_rc(), what, path_);
  int rc = sqlite3_step(q.get());
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return absl::OkStatus();
}

absl::Status NmStateStore::RemoveContainer(absl::string_view container_id) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("removing the record of container ", container_id);
  Statement q(db_, "DELETE FROM containers WHERE id = ?1");
  if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
  q.Bind(1, container_id);
  int rc = sqlite3_step(q.get());
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, int64_t>> NmStateStore::LoadFinishedApps() {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "SELECT app_id, finished_ms FROM finished_apps");
  if (q.prepare_rc() != SQLITE_OK) {
    return SqliteError(db_, q.prepare_rc(), "reading finished applications", path_);
  }
  std::map<std::string, int64_t> apps;
  int rc;
  while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) apps[q.Text(0)] = q.Int(1);
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, "reading finished applications", path_);
  return apps;
}

absl::Status NmStateStore::FinishApplication(absl::string_view app_id, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("recording application ", app_id, " as finished");
  if (absl::Status s = Exec("BEGIN", what); !s.ok()) return s;
  auto fail = [&](int rc) {
    absl::Status error = SqliteError(db_, rc, what, path_);
    (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return error;
  };
  {
    Statement q(db_, "DELETE FROM containers WHERE app_id = ?1");
    if (q.prepare_rc() != SQLITE_OK) return fail(q.prepare_rc());
    q.Bind(1, app_id);
    if (int rc = sqlite3_step(q.get()); rc != SQLITE_DONE) return fail(rc);
  }
  {
    Statement q(db_, "INSERT OR REPLACE INTO finished_apps (app_id, finished_ms) VALUES (?1, ?2)");
    if (q.prepare_rc() != SQLITE_OK) return fail(q.prepare_rc());
    q.Bind(1, app_id);
    q.Bind(2, now_ms);
    if (int rc = sqlite3_step(q.get()); rc != SQLITE_DONE) return fail(rc);
  }
  return Exec("COMMIT", what);
}

absl::Status NmStateStore::PruneFinishedApps(int64_t before_ms) {
  absl::MutexLock lock(&mu_);
  Statement q(db_, "DELETE FROM finished_apps WHERE finished_ms < ?1");
  if (q.prepare_rc() != SQLITE_OK) {
    return SqliteError(db_, q.prepare_rc(), "pruning finished applications", path_);
  }
  q.Bind(1, before_ms);
  int rc = sqlite3_step(q.get());
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, "pruning finished applications", path_);
  return absl::OkStatus();
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
  Statement q(db_, "SELECT value FROM kv WHERE key = ?1");
  if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
  q.Bind(1, key);
  int rc = sqlite3_step(q.get());
  if (rc == SQLITE_DONE) return std::optional<std::string>();
  if (rc != SQLITE_ROW) return SqliteError(db_, rc, what, path_);
  return std::optional<std::string>(q.Text(0));
}

absl::Status NmStateStore::SetValueLocked(absl::string_view key, absl::string_view value) {
  const std::string what = absl::StrCat("recording '", key, "'");
  Statement q(db_, "INSERT OR REPLACE INTO kv (key, value) VALUES (?1, ?2)");
  if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
  q.Bind(1, key);
  q.Bind(2, value);
  int rc = sqlite3_step(q.get());
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return absl::OkStatus();
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
  if (absl::Status s = Exec("BEGIN", what); !s.ok()) return s;
  auto fail = [&](int rc) {
    absl::Status error = SqliteError(db_, rc, what, path_);
    (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    return error;
  };
  {
    Statement q(db_,
                "INSERT OR REPLACE INTO amrmproxy_attempts (attempt_id, app_id, user, "
                "am_container_id, home_rm, amrm_token, registered, registration, queue, app_name, "
                "ended) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    if (q.prepare_rc() != SQLITE_OK) return fail(q.prepare_rc());
    q.Bind(1, a.attempt_id);
    q.Bind(2, a.application_id);
    q.Bind(3, a.user);
    q.Bind(4, a.am_container_id);
    q.Bind(5, a.home_rm_address);
    q.BindBlob(6, a.amrm_token.SerializeAsString());
    q.Bind(7, static_cast<int64_t>(state.registered ? 1 : 0));
    q.BindBlob(8, state.registration.SerializeAsString());
    q.Bind(9, state.queue);
    q.Bind(10, state.app_name);
    q.Bind(11, static_cast<int64_t>(state.ended ? 1 : 0));
    if (q.bind_rc() != SQLITE_OK) return fail(q.bind_rc());
    if (int rc = sqlite3_step(q.get()); rc != SQLITE_DONE) return fail(rc);
  }
  {
    Statement q(db_, "DELETE FROM amrmproxy_uams WHERE attempt_id = ?1");
    if (q.prepare_rc() != SQLITE_OK) return fail(q.prepare_rc());
    q.Bind(1, a.attempt_id);
    if (int rc = sqlite3_step(q.get()); rc != SQLITE_DONE) return fail(rc);
  }
  for (const amrmproxy::UamState& u : state.uams) {
    Statement q(db_,
                "INSERT INTO amrmproxy_uams (attempt_id, sub_cluster_id, rm, application_id, "
                "amrm_token, registered, finished) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (q.prepare_rc() != SQLITE_OK) return fail(q.prepare_rc());
    q.Bind(1, a.attempt_id);
    q.Bind(2, u.sub_cluster_id);
    q.Bind(3, u.rm);
    q.Bind(4, u.application_id);
    q.BindBlob(5, u.amrm_token.SerializeAsString());
    q.Bind(6, static_cast<int64_t>(u.registered ? 1 : 0));
    q.Bind(7, static_cast<int64_t>(u.finished ? 1 : 0));
    if (q.bind_rc() != SQLITE_OK) return fail(q.bind_rc());
    if (int rc = sqlite3_step(q.get()); rc != SQLITE_DONE) return fail(rc);
  }
  return Exec("COMMIT", what);
}

absl::Status NmStateStore::RemoveAttempt(absl::string_view attempt_id) {
  absl::MutexLock lock(&mu_);
  const std::string what = absl::StrCat("removing AMRMProxy attempt ", attempt_id);
  if (absl::Status s = Exec("BEGIN", what); !s.ok()) return s;
  for (const char* sql : {"DELETE FROM amrmproxy_uams WHERE attempt_id = ?1",
                          "DELETE FROM amrmproxy_attempts WHERE attempt_id = ?1"}) {
    Statement q(db_, sql);
    int rc = q.prepare_rc();
    if (rc == SQLITE_OK) {
      q.Bind(1, attempt_id);
      rc = sqlite3_step(q.get());
    }
    if (rc != SQLITE_DONE && rc != SQLITE_OK) {
      absl::Status error = SqliteError(db_, rc, what, path_);
      (void)sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return error;
    }
  }
  return Exec("COMMIT", what);
}

absl::StatusOr<std::vector<amrmproxy::AttemptState>> NmStateStore::LoadAttempts() {
  absl::MutexLock lock(&mu_);
  const char* what = "reading AMRMProxy attempts";
  std::vector<amrmproxy::AttemptState> states;
  std::map<std::string, size_t> index;
  {
    Statement q(db_,
                "SELECT attempt_id, app_id, user, am_container_id, home_rm, amrm_token, "
                "registered, registration, queue, app_name, ended FROM amrmproxy_attempts "
                "ORDER BY attempt_id");
    if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
    int rc;
    while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
      amrmproxy::AttemptState state;
      amrmproxy::AttemptContext& a = state.attempt;
      a.attempt_id = q.Text(0);
      a.application_id = q.Text(1);
      a.user = q.Text(2);
      a.am_container_id = q.Text(3);
      a.home_rm_address = q.Text(4);
      if (!a.amrm_token.ParseFromString(q.Blob(5)) ||
          !state.registration.ParseFromString(q.Blob(7))) {
        return absl::DataLossError(absl::StrCat("AMRMProxy attempt ", a.attempt_id, " in ",
                                                path_, ": its token or registration does not "
                                                       "parse"));
      }
      state.registered = q.Int(6) != 0;
      state.queue = q.Text(8);
      state.app_name = q.Text(9);
      state.ended = q.Int(10) != 0;
      index[a.attempt_id] = states.size();
      states.push_back(std::move(state));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  }
  Statement q(db_,
              "SELECT attempt_id, sub_cluster_id, rm, application_id, amrm_token, registered, "
              "finished FROM amrmproxy_uams ORDER BY attempt_id, sub_cluster_id");
  if (q.prepare_rc() != SQLITE_OK) return SqliteError(db_, q.prepare_rc(), what, path_);
  int rc;
  while ((rc = sqlite3_step(q.get())) == SQLITE_ROW) {
    auto it = index.find(q.Text(0));
    if (it == index.end()) continue;  // not written by PutAttempt: ignored
    amrmproxy::UamState u;
    u.sub_cluster_id = q.Text(1);
    u.rm = q.Text(2);
    u.application_id = q.Text(3);
    if (!u.amrm_token.ParseFromString(q.Blob(4))) {
      return absl::DataLossError(absl::StrCat("AMRMProxy attempt ", it->first, " in ", path_,
                                              ": the token of its UAM in ", u.sub_cluster_id,
                                              " does not parse"));
    }
    u.registered = q.Int(5) != 0;
    u.finished = q.Int(6) != 0;
    states[it->second].uams.push_back(std::move(u));
  }
  if (rc != SQLITE_DONE) return SqliteError(db_, rc, what, path_);
  return states;
}

absl::StatusOr<std::optional<std::string>> NmStateStore::GetTokenKey() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<std::string>> hex = GetValueLocked(kTokenKeyValue);
  if (!hex.ok() || !hex->has_value()) return hex;
  const std::string& text = **hex;
  if (text.size() % 2 != 0 || !std::all_of(text.begin(), text.end(), [](char c) {
        return absl::ascii_isxdigit(static_cast<unsigned char>(c));
      })) {
    return absl::DataLossError(
        absl::StrCat("the AMRMProxy's token key in ", path_, " is not hexadecimal"));
  }
  return std::optional<std::string>(absl::HexStringToBytes(text));
}

absl::Status NmStateStore::SetTokenKey(absl::string_view key) {
  absl::MutexLock lock(&mu_);
  return SetValueLocked(kTokenKeyValue, absl::BytesToHexString(key));
}

}  // namespace weft::nm
