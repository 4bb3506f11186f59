// Copyright Weft authors.
#include "federation/store/postgres_federation_store.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::federation {
namespace {

// The advisory lock that serialises migrations of one database ("WeftFed\0" as an int64).
constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock(6297641796018758656)";
// How often an add-if-absent re-reads when the conflicting row vanished meanwhile.
constexpr int kInsertAttempts = 3;

// Migration n (1-based) brings the schema from version n-1 to n: its statements run in order.
// Append; never edit. Keys sort bytewise (COLLATE "C"), as in the other back-ends.
const store::pg::Migrations& Migrations() {
  static const auto* migrations = new store::pg::Migrations{
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

// The column list and parameters of a row: $1 the key, then $2 the home (tables with one),
// then the record.
std::string Columns(const TableInfo& t) {
  return absl::StrCat(t.key_column, t.has_home ? ", home_sub_cluster_id" : "", ", record");
}
std::string Placeholders(const TableInfo& t) { return t.has_home ? "$1, $2, $3" : "$1, $2"; }
std::string RecordParam(const TableInfo& t) { return t.has_home ? "$3" : "$2"; }

}  // namespace

PostgresFederationStore::PostgresFederationStore(std::string uri)
    : redacted_uri_(RedactPostgresUri(uri)),
      conn_(std::move(uri), {.store = "federation store",
                             .refuse_trust_authentication = true,
                             .secrets = "the routers' master keys"}) {}

absl::StatusOr<std::unique_ptr<PostgresFederationStore>> PostgresFederationStore::Open(
    absl::string_view uri) {
  if (absl::Status s = store::pg::CheckUri(uri, "federation store URI"); !s.ok()) return s;
  std::unique_ptr<PostgresFederationStore> store(new PostgresFederationStore(std::string(uri)));
  absl::MutexLock lock(&store->mu_);
  if (absl::Status s = store->conn_.Connect(); !s.ok()) return s;
  if (absl::Status s = store->conn_.Migrate({.version_table = "weft_federation_schema",
                                             .lock_sql = kMigrationLock,
                                             .version = kSchemaVersion,
                                             .migrations = &Migrations()});
      !s.ok()) {
    return s;
  }
  return store;
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
  return conn_.WithConnection("writing", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return (t.has_home ? conn_.Exec("upserting", sql, {{row.key}, {row.home}, {row.record, true}})
                       : conn_.Exec("upserting", sql, {{row.key}, {row.record, true}}))
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
  absl::Status status = conn_.WithConnection(
      "inserting", [&](bool resuming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        for (int attempt = 0; attempt < kInsertAttempts; ++attempt) {
          absl::StatusOr<Result> inserted =
              t.has_home
                  ? conn_.Exec("inserting", insert, {{row.key}, {row.home}, {row.record, true}})
                  : conn_.Exec("inserting", insert, {{row.key}, {row.record, true}});
          if (!inserted.ok()) return inserted.status();
          if (absl::string_view(PQcmdTuples(inserted->get())) == "1") return absl::OkStatus();
          // Another writer's row is there: read it (a new snapshot, which sees it).
          absl::StatusOr<Result> read = conn_.Exec("reading the existing row", select, {{row.key}});
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
  absl::Status status =
      conn_.WithConnection("updating", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return conn_.InTransaction([&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
          absl::StatusOr<Result> read = conn_.Exec("reading", select, {{key}});
          if (!read.ok()) return read.status();
          std::vector<std::string> records = Records(read->get());
          found = !records.empty();
          if (!found) return absl::OkStatus();
          absl::StatusOr<Row> row = update(records[0]);
          if (!row.ok()) return row.status();
          return (t.has_home
                      ? conn_.Exec("writing", write, {{row->key}, {row->home}, {row->record, true}})
                      : conn_.Exec("writing", write, {{row->key}, {row->record, true}}))
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
      conn_.WithConnection("reading", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> read = conn_.Exec("reading", select, {{key}});
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
      conn_.WithConnection("listing", [&](bool) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> read =
            by_home ? conn_.Exec("listing", select, {{home}}) : conn_.Exec("listing", select, {});
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
  absl::Status status = conn_.WithConnection(
      "deleting", [&](bool resuming) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> absl::Status {
        absl::StatusOr<Result> deleted = conn_.Exec("deleting", sql, {{key}});
        if (!deleted.ok()) return deleted.status();
        // After a lost answer, nothing to delete may mean that the first attempt deleted it.
        found = absl::string_view(PQcmdTuples(deleted->get())) == "1" || resuming;
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return found;
}

}  // namespace weft::federation
