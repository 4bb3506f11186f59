// Copyright Weft authors. TEST ONLY: writers of the formats the state stores wrote before
// issue 28, so that tests can build an old store and check that the new code reads (and
// migrates) it. Production code never writes these formats (store/zk_legacy_format.h only
// reads them).
#ifndef WEFT_STORE_LEGACY_STORE_TEST_UTIL_H_
#define WEFT_STORE_LEGACY_STORE_TEST_UTIL_H_

#include <sqlite3.h>
#include <zookeeper/zookeeper.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "store/state_store.h"
#include "store/zk_client.h"
#include "store/zk_names.h"

namespace weft::store::legacy_test {

// The pre-proto ZooKeeper record encoding (see store/zk_legacy_format.h): a format byte (1), a
// kind byte, then every field in declaration order, strings as a 4-byte big-endian length and
// the bytes, integers as 8 bytes big-endian two's complement.
class OldZkRecord {
 public:
  explicit OldZkRecord(char kind) : out_({'\x01', kind}) {}
  OldZkRecord& Bytes(absl::string_view value) {
    const uint32_t size = static_cast<uint32_t>(value.size());
    for (int shift = 24; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(size >> shift));
    out_.append(value.data(), value.size());
    return *this;
  }
  OldZkRecord& Int(int64_t value) {
    const uint64_t bits = static_cast<uint64_t>(value);
    for (int shift = 56; shift >= 0; shift -= 8) out_.push_back(static_cast<char>(bits >> shift));
    return *this;
  }
  std::string Finish() const { return out_; }

 private:
  std::string out_;
};

inline std::string OldZkApplication(const ApplicationRecord& a) {
  return OldZkRecord('A')
      .Bytes(a.app_id)
      .Bytes(a.name)
      .Bytes(a.queue)
      .Bytes(a.user)
      .Int(a.priority)
      .Bytes(a.state)
      .Bytes(a.final_status)
      .Bytes(a.diagnostics)
      .Int(a.submit_ms)
      .Int(a.start_ms)
      .Int(a.finish_ms)
      .Int(a.max_attempts)
      .Bytes(a.submission)
      .Finish();
}

inline std::string OldZkAttempt(const AttemptRecord& t) {
  return OldZkRecord('T')
      .Bytes(t.app_id)
      .Int(t.attempt_id)
      .Bytes(t.state)
      .Bytes(t.am_container_id)
      .Bytes(t.node)
      .Int(t.exit_status)
      .Bytes(t.diagnostics)
      .Int(t.start_ms)
      .Int(t.finish_ms)
      .Finish();
}

inline std::string OldZkMasterKey(const MasterKeyRecord& k) {
  return OldZkRecord('K')
      .Bytes(k.purpose)
      .Int(k.key_id)
      .Bytes(k.secret)
      .Int(k.created_ms)
      .Int(k.expires_ms)
      .Finish();
}

// Writes `state` as a ZooKeeper state store of the pre-proto format ("weft-rm-state 1", epoch
// in decimal, records as above) at `root`, which must not exist; its parent is created if
// missing. One transaction.
inline absl::Status WriteOldZkStore(zk::ZkClient& client, const std::string& root,
                                    const RmState& state) {
  using Op = zk::ZkClient::Op;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  if (absl::Status s = client.Connect(deadline); !s.ok()) return s;
  for (size_t slash = root.find('/', 1); slash != std::string::npos;
       slash = root.find('/', slash + 1)) {
    absl::StatusOr<zk::ZkClient::MultiResult> r =
        client.Multi({Op::Create(root.substr(0, slash), "")}, deadline);
    if (!r.ok()) return r.status();
    if (r->rc != ZOK && r->rc != ZNODEEXISTS) return absl::InternalError(zerror(r->rc));
  }
  std::vector<Op> ops = {Op::Create(root, "weft-rm-state 1"), Op::Create(root + "/apps", ""),
                         Op::Create(root + "/keys", ""),
                         Op::Create(root + "/epoch", absl::StrCat(state.epoch)),
                         Op::Create(root + "/fence", "")};
  auto app_path = [&](absl::string_view app_id) {
    return absl::StrCat(root, "/apps/", zk::EscapeNodeName(app_id));
  };
  for (const ApplicationRecord& app : state.apps) {
    ops.push_back(Op::Create(app_path(app.app_id), OldZkApplication(app)));
  }
  for (const AttemptRecord& attempt : state.attempts) {
    ops.push_back(Op::Create(absl::StrCat(app_path(attempt.app_id), "/", attempt.attempt_id),
                             OldZkAttempt(attempt)));
  }
  for (const MasterKeyRecord& key : state.keys) {
    ops.push_back(
        Op::Create(absl::StrCat(root, "/keys/", zk::EscapeNodeName(key.purpose), ".", key.key_id),
                   OldZkMasterKey(key)));
  }
  absl::StatusOr<zk::ZkClient::MultiResult> r = client.Multi(ops, deadline);
  if (!r.ok()) return r.status();
  if (r->rc != ZOK) {
    return absl::InternalError(absl::StrCat(zerror(r->rc), " at ", ops[r->failed_op].path));
  }
  return absl::OkStatus();
}

// The SQLite state store's schema version 1, as the first version created it.
inline constexpr const char* kSqliteSchemaV1 = R"sql(
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
INSERT INTO schema_version (version) VALUES (1);
)sql";

// Writes `state` as a SQLite state store of schema version 1 at `path` (a new file), the way the
// first version stored it: text columns as TEXT, submission and secret as BLOB.
inline absl::Status WriteSqliteStoreV1(const std::string& path, const RmState& state) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    sqlite3_close(db);
    return absl::InternalError(absl::StrCat("opening ", path));
  }
  absl::Status status;
  auto fail = [&](absl::string_view what) {
    if (status.ok()) status = absl::InternalError(absl::StrCat(what, ": ", sqlite3_errmsg(db)));
  };
  // Binds text (T), blobs (B) or integers (I) and runs one statement.
  struct Value {
    char type;
    std::string bytes;
    int64_t number = 0;
  };
  auto run = [&](const char* sql, const std::vector<Value>& values) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return fail(sql);
    for (size_t i = 0; i < values.size(); ++i) {
      const Value& v = values[i];
      const int at = static_cast<int>(i) + 1;
      if (v.type == 'I') {
        sqlite3_bind_int64(stmt, at, v.number);
      } else if (v.type == 'B') {
        sqlite3_bind_blob(stmt, at, v.bytes.data(), static_cast<int>(v.bytes.size()),
                          SQLITE_TRANSIENT);
      } else {
        sqlite3_bind_text(stmt, at, v.bytes.data(), static_cast<int>(v.bytes.size()),
                          SQLITE_TRANSIENT);
      }
    }
    if (sqlite3_step(stmt) != SQLITE_DONE) fail(sql);
    sqlite3_finalize(stmt);
  };
  auto text = [](const std::string& s) { return Value{'T', s}; };
  auto blob = [](const std::string& s) { return Value{'B', s}; };
  auto integer = [](int64_t n) { return Value{'I', "", n}; };
  if (sqlite3_exec(db, kSqliteSchemaV1, nullptr, nullptr, nullptr) != SQLITE_OK) fail("schema");
  if (state.epoch != 0) run("INSERT INTO epoch (id, value) VALUES (0, ?1)", {integer(state.epoch)});
  for (const ApplicationRecord& a : state.apps) {
    run("INSERT INTO applications VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
        {text(a.app_id), text(a.name), text(a.queue), text(a.user), integer(a.priority),
         text(a.state), text(a.final_status), text(a.diagnostics), integer(a.submit_ms),
         integer(a.start_ms), integer(a.finish_ms), integer(a.max_attempts), blob(a.submission)});
  }
  for (const AttemptRecord& t : state.attempts) {
    run("INSERT INTO attempts VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        {text(t.app_id), integer(t.attempt_id), text(t.state), text(t.am_container_id),
         text(t.node), integer(t.exit_status), text(t.diagnostics), integer(t.start_ms),
         integer(t.finish_ms)});
  }
  for (const MasterKeyRecord& k : state.keys) {
    run("INSERT INTO master_keys VALUES (?1, ?2, ?3, ?4, ?5)",
        {text(k.purpose), integer(k.key_id), blob(k.secret), integer(k.created_ms),
         integer(k.expires_ms)});
  }
  sqlite3_close(db);
  return status;
}

}  // namespace weft::store::legacy_test

#endif  // WEFT_STORE_LEGACY_STORE_TEST_UTIL_H_
