// Copyright Weft authors. The federation state store in an SQLite file: one host's routers,
// RMs and tools share it (SQLite's file locking orders their writes).
#ifndef WEFT_FEDERATION_STORE_SQLITE_FEDERATION_STORE_H_
#define WEFT_FEDERATION_STORE_SQLITE_FEDERATION_STORE_H_

#include <sqlite3.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "federation/store/record_store.h"

namespace weft::federation {

// Layout: one table per record kind (sub_clusters, application_homes, reservation_homes,
// policies, router_master_keys, router_tokens, cluster_timestamps, issued_application_ids), each with its key column, the home sub-cluster
// where the record has one (indexed), and the record as a serialized proto (BLOB). Schema
// migrations are recorded in weft_federation_schema (one row per applied version).
//
// Durability: WAL journal with synchronous=FULL, so an OK write survives a crash of the process
// or the host. Thread-safe: one connection behind a mutex. Another process's long transaction
// makes calls wait up to 10 s and then fail with Unavailable.
class SqliteFederationStore final : public RecordFederationStore {
 public:
  // The schema version this binary creates and understands.
  static constexpr int kSchemaVersion = 2;

  // Opens the database at `path`, creating it (and missing parent directories) with its schema
  // on first use and applying pending migrations. FailedPrecondition when the file is not an
  // SQLite database or its schema is newer than kSchemaVersion; the SQLite error otherwise.
  static absl::StatusOr<std::unique_ptr<SqliteFederationStore>> Open(const std::string& path);

  ~SqliteFederationStore() override;
  SqliteFederationStore(const SqliteFederationStore&) = delete;
  SqliteFederationStore& operator=(const SqliteFederationStore&) = delete;

  std::string Describe() const override { return "sqlite:" + path_; }

 protected:
  absl::Status PutRecord(Table table, const Row& row) override;
  absl::StatusOr<InsertResult> InsertRecord(Table table, const Row& row) override;
  absl::StatusOr<bool> ModifyRecord(Table table, absl::string_view key, Updater update) override;
  absl::StatusOr<std::optional<std::string>> GetRecord(Table table, absl::string_view key) override;
  absl::StatusOr<std::vector<std::string>> ListRecords(Table table,
                                                       absl::string_view home) override;
  absl::StatusOr<bool> DeleteRecord(Table table, absl::string_view key) override;

 private:
  explicit SqliteFederationStore(std::string path) : path_(std::move(path)) {}

  absl::Status Init();
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "federation store 'sqlite:<path>': <what>: <SQLite's message>".
  absl::Status Error(absl::string_view what, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs SQL without parameters or results.
  absl::Status Exec(const std::string& sql, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A cached prepared statement for `sql`.
  absl::StatusOr<sqlite3_stmt*> Statement(const std::string& sql)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs the statement for `sql` with `key`, `home` and `record` bound to ?1, ?2, ?3 (those it
  // has), calling on_row(stmt) for each result row. Returns the number of rows it changed.
  absl::StatusOr<int> Run(const std::string& sql, const Row& row, absl::string_view what,
                          absl::FunctionRef<void(sqlite3_stmt*)> on_row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `body` in BEGIN IMMEDIATE ... COMMIT, rolling back if anything fails.
  absl::Status InTransaction(absl::string_view what, absl::FunctionRef<absl::Status()> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  mutable absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::map<std::string, sqlite3_stmt*> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_SQLITE_FEDERATION_STORE_H_
