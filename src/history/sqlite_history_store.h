// Copyright Weft authors. The SQLite HistoryStore: one database file (0600, in a directory
// others cannot read; common/private_files.h), WAL journal, synchronous=FULL. Each record is
// kept as its serialized proto plus the columns the queries need (ids, user, queue, final
// state, finish time), indexed for the list filters. Each container row also carries its
// contribution to its application's aggregates (history_store.h) as columns (memory-mb and
// vcores resource-seconds, measured usage; other resource types in container_resource_seconds),
// and each application row their sums, recomputed in the same transaction as every Put that
// touches its containers or itself: reports read columns, never parse records. The schema is
// versioned (weft_history_schema) and brought up to date by an append-only list of migrations
// on open.
#ifndef WEFT_HISTORY_SQLITE_HISTORY_STORE_H_
#define WEFT_HISTORY_SQLITE_HISTORY_STORE_H_

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "history/history_store.h"
#include "store/sqlite_util.h"

namespace weft::history {

class SqliteHistoryStore : public HistoryStore {
 public:
  static constexpr int64_t kSchemaVersion = 2;

  // Opens (creating it and its private parent directories if missing) the store at `path`.
  static absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> Open(const std::string& path);
  ~SqliteHistoryStore() override;

  std::string Describe() const override { return "sqlite:" + path_; }

 protected:
  absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& record) override;
  absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& record) override;
  absl::Status DoPutContainer(const v1::ContainerHistoryRecord& record) override;
  absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> DoGetApplication(
      const std::string& id) override;
  absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> DoGetAttempt(
      const std::string& id) override;
  absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> DoGetContainer(
      const std::string& id) override;
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> DoListApplications(
      const ApplicationFilter& filter) override;
  absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> DoListAttempts(
      const std::string& application_id) override;
  absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> DoListContainers(
      const std::string& application_id, const std::string& attempt_id) override;
  absl::StatusOr<int64_t> DoPrune(int64_t older_than_ms,
                                  std::optional<int64_t> keep_at_most) override;
  absl::Status DoPutBatch(const HistoryBatch& batch) override;
  absl::StatusOr<std::vector<UsageLine>> DoReport(ReportKey key, int64_t since_ms,
                                                  int64_t until_ms) override;

 private:
  explicit SqliteHistoryStore(std::string path) : path_(std::move(path)) {}

  absl::Status Init();
  absl::Status Migrate() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(absl::string_view what, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Exec(const std::string& sql, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `sql` with `params` bound to ?1..?n, calling `on_row` for each result row. Returns the
  // number of rows changed.
  absl::StatusOr<int> Run(const std::string& sql, const std::vector<store::sqlite::Param>& params,
                          absl::string_view what, absl::FunctionRef<void(sqlite3_stmt*)> on_row)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status InTransaction(absl::string_view what, absl::FunctionRef<absl::Status()> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The parts of a Put, inside a transaction. WriteContainer and WriteApplication add the
  // application ids whose aggregates must be recomputed to `dirty`.
  absl::Status WriteContainer(const v1::ContainerHistoryRecord& record,
                              std::set<std::string>* dirty) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteApplication(const v1::ApplicationHistoryRecord& record,
                                std::set<std::string>* dirty) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteAttempt(const v1::AttemptHistoryRecord& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Recompute(const std::set<std::string>& application_ids)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applications (`select` yields kApplicationColumns, see the .cc) with their aggregates;
  // `ids_sql` selects the same applications' ids, for the other resource types.
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> Applications(
      const std::string& select, const std::string& ids_sql,
      const std::vector<store::sqlite::Param>& params, absl::string_view what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs a query whose first column is a serialized T, parsing each row.
  template <typename T>
  absl::StatusOr<std::vector<T>> Records(const std::string& sql,
                                         const std::vector<store::sqlite::Param>& params,
                                         absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Prepared statements by SQL text, reused (the number of distinct texts is bounded).
  std::map<std::string, store::sqlite::StatementPtr> statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::history

#endif  // WEFT_HISTORY_SQLITE_HISTORY_STORE_H_
