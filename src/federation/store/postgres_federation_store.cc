// Copyright Weft authors.
#include "federation/store/postgres_federation_store.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace weft::federation {
namespace {

// The advisory lock that serialises migrations of one database ("WeftFed\0" as an int64).
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(6297641796018758656)";
// How often an add-if-absent re-reads when the conflicting row vanished meanwhile.
constexpr int kInsertAttempts = 3;

// Migration n (1-based) brings the schema from version n-1 to n: its statements run in order.
// Append; never edit. Keys sort bytewise (COLLATE "C"), as in the other back-ends.
const std::vector<std::vector<const char*>>& Migrations() {
  static const auto* migrations = new std::vector<std::vector<const char*>>{
      {
          R"sql(CREATE TABLE sub_clusters (
                  sub_cluster_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE TABLE application_homes (
                  application_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  home_sub_cluster_id TEXT COLLATE "C" NOT NULL,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE INDEX application_homes_by_home
                  ON application_homes (home_sub_cluster_id))sql",
          R"sql(CREATE TABLE reservation_homes (
                  reservation_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  home_sub_cluster_id TEXT COLLATE "C" NOT NULL,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE TABLE policies (
                  queue TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE TABLE router_master_keys (
                  key_id INTEGER NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE TABLE router_tokens (
                  sequence_number BIGINT NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
      },
      {
          // Secrets at rest: only the store's own role (the tables' owner) reads them, whatever
          // default privileges the database had.
          R"sql(REVOKE ALL ON sub_clusters, application_homes, reservation_homes, policies,
                  router_master_keys, router_tokens, weft_federation_schema FROM PUBLIC)sql",
      },
      {
          // One id space for the federation (issue 27): cluster timestamps claimed by RMs, and
          // application ids issued by routers and not homed yet.
          R"sql(CREATE TABLE cluster_timestamps (
                  cluster_timestamp_ms BIGINT NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
          R"sql(CREATE TABLE issued_application_ids (
                  application_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
                  record BYTEA NOT NULL))sql",
          R"sql(REVOKE ALL ON cluster_timestamps, issued_application_ids FROM PUBLIC)sql",
      },
  };
  return *migrations;
}

// The absl code for a failed statement, from its SQLSTATE.
absl::StatusCode CodeForSqlState(absl::string_view state) {
  if (absl::StartsWith(state, "08") || absl::StartsWith(state, "57P")) {
    return absl::StatusCode::kUnavailable;  // connection exception, server shutting down
  }
  if (absl::StartsWith(state, "53")) return absl::StatusCode::kResourceExhausted;
  if (absl::StartsWith(state, "40")) return absl::StatusCode::kAborted;  // deadlock, serialization
  if (absl::StartsWith(state, "28") || state == "42501") {
    return absl::StatusCode::kPermissionDenied;
  }
  if (absl::StartsWith(state, "23")) return absl::StatusCode::kFailedPrecondition;
  return absl::StatusCode::kInternal;
}

// The column list and parameters of a row: $1 the key, then $2 the home (tables with one),
// then the record.
std::string Columns(const TableInfo& t) {
  return absl::StrCat(t.key_column, t.has_home ? ", home_sub_cluster_id" : "", ", record");
}
std::string Placeholders(const TableInfo& t) { return t.has_home ? "$1, $2, $3" : "$1, $2"; }
std::string RecordParam(const TableInfo& t) { return t.has_home ? "$3" : "$2"; }

}  // namespace

std::string RedactPostgresUri(absl::string_view uri) {
  std::string out(uri);
  // The user info: scheme://user:password@host...
  const size_t authority = out.find("://");
  if (authority != std::string::npos) {
    const size_t start = authority + 3;
    const size_t end = out.find_first_of("/?", start);
    const size_t at = out.rfind('@', end == std::string::npos ? out.size() : end);
    if (at != std::string::npos && at >= start) {
      const size_t colon = out.find(':', start);
      if (colon != std::string::npos && colon < at) out.replace(colon + 1, at - colon - 1, "***");
    }
  }
  // A password= parameter.
  for (size_t pos = out.find("password="); pos != std::string::npos;
       pos = out.find("password=", pos + 1)) {
    if (pos > 0 && out[pos - 1] != '?' && out[pos - 1] != '&') continue;
    const size_t value = pos + 9;
    const size_t end = out.find('&', value);
    out.replace(value, (end == std::string::npos ? out.size() : end) - value, "***");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PostgresFederationStore>> PostgresFederationStore::Open(
    absl::string_view uri) {
  std::string redacted = RedactPostgresUri(uri);
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(std::string(uri).c_str(), &error);
  if (options == nullptr) {
    std::string why = error != nullptr ? error : "out of memory";
    PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat("federation store URI '", redacted, "': ", absl::StripAsciiWhitespace(why)));
  }
  // A password in the URI would be in every daemon's argv (/proc/PID/cmdline), which any
  // local user reads: the password comes from a passfile (?passfile=PATH, mode 0600, libpq's
  // format) or ~/.pgpass instead.
  bool has_password = false;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (absl::string_view(o->keyword) == "password" && o->val != nullptr && *o->val != '\0') {
      has_password = true;
    }
  }
  PQconninfoFree(options);
  if (has_password) {
    return absl::InvalidArgumentError(absl::StrCat(
        "federation store URI '", redacted,
        "': holds a password, which every local user could read in the daemon's command line; "
        "put it in a passfile (?passfile=/etc/weft/pgpass, mode 0600, "
        "host:port:database:user:password) instead"));
  }
  std::unique_ptr<PostgresFederationStore> store(
      new PostgresFederationStore(std::string(uri), std::move(redacted)));
  absl::MutexLock lock(&store->mu_);
  if (absl::Status s = store->Connect(); !s.ok()) return s;
  if (absl::Status s = store->Migrate(); !s.ok()) return s;
  return store;
}

PostgresFederationStore::~PostgresFederationStore() {
  absl::MutexLock lock(&mu_);
  PQfinish(conn_);
}

absl::Status PostgresFederationStore::Connect() {
  if (conn_ == nullptr) {
    // The URI's own connect_timeout, if any, overrides the default (later values win).
    const char* keywords[] = {"connect_timeout", "dbname", nullptr};
    const char* values[] = {"10", uri_.c_str(), nullptr};
    conn_ = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
    if (conn_ == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("federation store '", redacted_uri_, "': connecting: out of memory"));
    }
    // Notices (e.g. "relation already exists, skipping") are not errors: drop them.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  } else {
    PQreset(conn_);
  }
  if (PQstatus(conn_) != CONNECTION_OK) {
    return absl::UnavailableError(
        absl::StrCat("federation store '", redacted_uri_,
                     "': connecting: ", absl::StripAsciiWhitespace(PQerrorMessage(conn_))));
  }
  // A server that let us in over TCP without asking for a password (trust authentication) lets
  // every local user in: the routers' master keys would be anyone's. Peer authentication over
  // the Unix socket asks for none and is fine.
  const char* host = PQhost(conn_);
  const bool unix_socket = host != nullptr && host[0] == '/';
  if (!unix_socket && !PQconnectionUsedPassword(conn_) && !PQsslInUse(conn_)) {
    PQfinish(conn_);
    conn_ = nullptr;
    return absl::FailedPreconditionError(absl::StrCat(
        "federation store '", redacted_uri_,
        "': the server let this connection in without a password (trust authentication in "
        "pg_hba.conf), so any local user could read the routers' master keys; use "
        "scram-sha-256 with a role and a passfile, or peer authentication over the Unix "
        "socket"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PostgresFederationStore::Result> PostgresFederationStore::Exec(
    absl::string_view what, const std::string& sql, std::initializer_list<Param> params) {
  std::vector<const char*> values;
  std::vector<int> lengths, formats;
  for (const Param& p : params) {
    values.push_back(p.value.empty() ? "" : p.value.data());  // null would be SQL NULL
    lengths.push_back(static_cast<int>(p.value.size()));
    formats.push_back(p.binary ? 1 : 0);
  }
  // Text parameters must be NUL-terminated: copy them.
  std::vector<std::string> texts;
  texts.reserve(params.size());
  size_t i = 0;
  for (const Param& p : params) {
    if (!p.binary) values[i] = texts.emplace_back(p.value).c_str();
    ++i;
  }
  Result result(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()),
                             /*paramTypes=*/nullptr, values.data(), lengths.data(), formats.data(),
                             /*resultFormat=*/1));
  const ExecStatusType status =
      result != nullptr ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return result;
  const char* state =
      result != nullptr ? PQresultErrorField(result.get(), PG_DIAG_SQLSTATE) : nullptr;
  const absl::StatusCode code = PQstatus(conn_) != CONNECTION_OK || state == nullptr
                                    ? absl::StatusCode::kUnavailable
                                    : CodeForSqlState(state);
  const char* message =
      result != nullptr ? PQresultErrorMessage(result.get()) : PQerrorMessage(conn_);
  if (message == nullptr || *message == '\0') message = PQerrorMessage(conn_);
  return absl::Status(code, absl::StrCat(what, ": ", absl::StripAsciiWhitespace(message)));
}

absl::Status PostgresFederationStore::InTransaction(absl::FunctionRef<absl::Status()> body) {
  absl::StatusOr<Result> begin = Exec("beginning a transaction", "BEGIN", {});
  if (!begin.ok()) return begin.status();
  absl::Status status = body();
  if (status.ok()) status = Exec("committing", "COMMIT", {}).status();
  if (!status.ok() && PQstatus(conn_) == CONNECTION_OK &&
      PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    Exec("rolling back", "ROLLBACK", {}).IgnoreError();
  }
  return status;
}

absl::Status PostgresFederationStore::WithConnection(
    absl::string_view what, absl::FunctionRef<absl::Status(bool resuming)> attempt) {
  absl::Status status;
  for (int round = 0; round < 2; ++round) {
    if (PQstatus(conn_) != CONNECTION_OK) {
      if (absl::Status s = Connect(); !s.ok()) {
        return absl::Status(s.code(), absl::StrCat(s.message(), " (", what, ")"));
      }
    }
    status = attempt(/*resuming=*/round > 0);
    // Repeat only on a connection that broke under the attempt.
    if (status.ok() || PQstatus(conn_) == CONNECTION_OK) break;
  }
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat("federation store '", redacted_uri_, "': ", what,
                                                  ": ", status.message()));
}

absl::Status PostgresFederationStore::Migrate() {
  return WithConnection("migrating the schema", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      if (absl::Status s = Exec("locking", kMigrationLock, {}).status(); !s.ok()) return s;
      if (absl::Status s = Exec("creating weft_federation_schema",
                                "CREATE TABLE IF NOT EXISTS weft_federation_schema ("
                                "version INTEGER NOT NULL PRIMARY KEY, "
                                "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
                                {})
                               .status();
          !s.ok()) {
        return s;
      }
      absl::StatusOr<Result> read =
          Exec("reading the schema version",
               "SELECT coalesce(max(version), 0)::text FROM weft_federation_schema", {});
      if (!read.ok()) return read.status();
      int64_t version = 0;
      if (!absl::SimpleAtoi(PQgetvalue(read->get(), 0, 0), &version)) {
        return absl::DataLossError(absl::StrCat("weft_federation_schema holds version '",
                                                PQgetvalue(read->get(), 0, 0), "'"));
      }
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(absl::StrCat("its schema version ", version,
                                                          " is newer than this binary's (",
                                                          kSchemaVersion, "); use a newer weft"));
      }
      const auto& migrations = Migrations();
      for (int64_t next = version + 1; next <= kSchemaVersion; ++next) {
        const std::string what = absl::StrCat("migrating to version ", next);
        for (const char* statement : migrations[next - 1]) {
          if (absl::Status s = Exec(what, statement, {}).status(); !s.ok()) return s;
        }
        const std::string text = absl::StrCat(next);
        if (absl::Status s =
                Exec(what, "INSERT INTO weft_federation_schema (version) VALUES ($1)", {{text}})
                    .status();
            !s.ok()) {
          return s;
        }
      }
      return absl::OkStatus();
    });
  });
}

std::vector<std::string> PostgresFederationStore::Records(const PGresult* result) {
  std::vector<std::string> records;
  const int rows = PQntuples(result);
  records.reserve(rows);
  for (int row = 0; row < rows; ++row) {
    records.emplace_back(PQgetvalue(result, row, 0), PQgetlength(result, row, 0));
  }
  return records;
}

absl::Status PostgresFederationStore::PutRecord(Table table, const Row& row) {
  const TableInfo& t = InfoOf(table);
  const std::string sql =
      absl::StrCat("INSERT INTO ", t.sql_name, " (", Columns(t), ") VALUES (", Placeholders(t),
                   ") ON CONFLICT (", t.key_column, ") DO UPDATE SET ",
                   t.has_home ? "home_sub_cluster_id = EXCLUDED.home_sub_cluster_id, " : "",
                   "record = EXCLUDED.record");
  absl::MutexLock lock(&mu_);
  return WithConnection("writing", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return (t.has_home ? Exec("upserting", sql, {{row.key}, {row.home}, {row.record, true}})
                       : Exec("upserting", sql, {{row.key}, {row.record, true}}))
        .status();
  });
}

absl::StatusOr<RecordFederationStore::InsertResult> PostgresFederationStore::InsertRecord(
    Table table, const Row& row) {
  const TableInfo& t = InfoOf(table);
  const std::string insert =
      absl::StrCat("INSERT INTO ", t.sql_name, " (", Columns(t), ") VALUES (", Placeholders(t),
                   ") ON CONFLICT (", t.key_column, ") DO NOTHING");
  const std::string select =
      absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column, " = $1");
  absl::MutexLock lock(&mu_);
  InsertResult result{row.record, true};
  absl::Status status = WithConnection(
      "inserting", [&](bool resuming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        for (int attempt = 0; attempt < kInsertAttempts; ++attempt) {
          absl::StatusOr<Result> inserted =
              t.has_home ? Exec("inserting", insert, {{row.key}, {row.home}, {row.record, true}})
                         : Exec("inserting", insert, {{row.key}, {row.record, true}});
          if (!inserted.ok()) return inserted.status();
          if (absl::string_view(PQcmdTuples(inserted->get())) == "1") return absl::OkStatus();
          // Another writer's row is there: read it (a new snapshot, which sees it).
          absl::StatusOr<Result> read = Exec("reading the existing row", select, {{row.key}});
          if (!read.ok()) return read.status();
          std::vector<std::string> records = Records(read->get());
          if (records.empty()) continue;  // Deleted meanwhile: try again.
          result.record = std::move(records[0]);
          // A first attempt whose answer was lost may have inserted it.
          result.inserted = resuming && result.record == row.record;
          return absl::OkStatus();
        }
        return absl::AbortedError(
            absl::StrCat("the row kept appearing and vanishing ", kInsertAttempts, " times"));
      });
  if (!status.ok()) return status;
  return result;
}

absl::StatusOr<bool> PostgresFederationStore::ModifyRecord(Table table, absl::string_view key,
                                                           Updater update) {
  const TableInfo& t = InfoOf(table);
  const std::string select =
      absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column, " = $1 FOR UPDATE");
  const std::string write =
      absl::StrCat("UPDATE ", t.sql_name, " SET ", t.has_home ? "home_sub_cluster_id = $2, " : "",
                   "record = ", RecordParam(t), " WHERE ", t.key_column, " = $1");
  absl::MutexLock lock(&mu_);
  bool found = false;
  absl::Status status = WithConnection("updating", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
      absl::StatusOr<Result> read = Exec("reading", select, {{key}});
      if (!read.ok()) return read.status();
      std::vector<std::string> records = Records(read->get());
      found = !records.empty();
      if (!found) return absl::OkStatus();
      absl::StatusOr<Row> row = update(records[0]);
      if (!row.ok()) return row.status();
      return (t.has_home ? Exec("writing", write, {{row->key}, {row->home}, {row->record, true}})
                         : Exec("writing", write, {{row->key}, {row->record, true}}))
          .status();
    });
  });
  if (!status.ok()) return status;
  return found;
}

absl::StatusOr<std::optional<std::string>> PostgresFederationStore::GetRecord(
    Table table, absl::string_view key) {
  const TableInfo& t = InfoOf(table);
  const std::string select =
      absl::StrCat("SELECT record FROM ", t.sql_name, " WHERE ", t.key_column, " = $1");
  absl::MutexLock lock(&mu_);
  std::optional<std::string> record;
  absl::Status status =
      WithConnection("reading", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> read = Exec("reading", select, {{key}});
        if (!read.ok()) return read.status();
        std::vector<std::string> records = Records(read->get());
        if (!records.empty()) record = std::move(records[0]);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return record;
}

absl::StatusOr<std::vector<std::string>> PostgresFederationStore::ListRecords(
    Table table, absl::string_view home) {
  const TableInfo& t = InfoOf(table);
  const bool by_home = t.has_home && !home.empty();
  const std::string select =
      absl::StrCat("SELECT record FROM ", t.sql_name,
                   by_home ? " WHERE home_sub_cluster_id = $1" : "", " ORDER BY ", t.key_column);
  absl::MutexLock lock(&mu_);
  std::vector<std::string> records;
  absl::Status status =
      WithConnection("listing", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> read =
            by_home ? Exec("listing", select, {{home}}) : Exec("listing", select, {});
        if (!read.ok()) return read.status();
        records = Records(read->get());
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return records;
}

absl::StatusOr<bool> PostgresFederationStore::DeleteRecord(Table table, absl::string_view key) {
  const TableInfo& t = InfoOf(table);
  const std::string sql =
      absl::StrCat("DELETE FROM ", t.sql_name, " WHERE ", t.key_column, " = $1");
  absl::MutexLock lock(&mu_);
  bool found = false;
  absl::Status status = WithConnection(
      "deleting", [&](bool resuming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> deleted = Exec("deleting", sql, {{key}});
        if (!deleted.ok()) return deleted.status();
        // After a lost answer, nothing to delete may mean that the first attempt deleted it.
        found = absl::string_view(PQcmdTuples(deleted->get())) == "1" || resuming;
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return found;
}

}  // namespace weft::federation
