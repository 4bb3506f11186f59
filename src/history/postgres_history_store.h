// Copyright Weft authors. The PostgreSQL HistoryStore, through libpq: for clusters whose history
// outgrows one file, or that keep it beside the federation store. Holds the same contract as
// the other back-ends (history_store_conformance_test.cc).
#ifndef WEFT_HISTORY_POSTGRES_HISTORY_STORE_H_
#define WEFT_HISTORY_POSTGRES_HISTORY_STORE_H_

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "history/history_store.h"
#include "store/postgres_util.h"

namespace weft::history {

// Layout: the tables of the SQLite store (applications, attempts, containers,
// container_resource_seconds; the user column is user_name), ids and names COLLATE "C" so that
// they sort bytewise as in the other back-ends, records as BYTEA beside the columns the queries
// and reports read (aggregates included, recomputed in the transaction of every write that
// touches an application or its containers), created by Weft in the connection's current schema
// (search_path). Schema changes are versioned migrations, applied in order in one transaction
// under an advisory lock (several RMs may start at once) and recorded in weft_history_schema.
// Every query is parameterised (PQexecParams). PutBatch writes multi-row statements in one
// transaction. The connection, the URL rules and the migrations are store/postgres_util.h's.
//
// Failures: when the server cannot be reached, calls return Unavailable naming the store (its
// URL, password redacted) and the operation, with libpq's message; each call first reconnects
// (once) if the connection is bad, and repeats itself once on a connection that broke under it.
// After Unavailable a write may or may not have been applied; every Put is idempotent, so the
// caller retries it. Thread-safe: one connection behind a mutex. Unlike the federation store, it
// does not refuse a server that admits it without a password (trust authentication).
class PostgresHistoryStore final : public HistoryStore {
 public:
  // The schema version this binary migrates to and understands.
  static constexpr int kSchemaVersion = 1;

  // Connects (libpq URI "postgresql://user@host:port/db?..." or "postgres://...", default
  // connect_timeout 10 s) and migrates the schema. InvalidArgument naming the (redacted) URI
  // when libpq cannot parse it or it holds a password (use ?passfile=); Unavailable with libpq's
  // message when the server cannot be reached; FailedPrecondition when the schema is newer than
  // kSchemaVersion.
  static absl::StatusOr<std::unique_ptr<PostgresHistoryStore>> Open(absl::string_view uri);

  ~PostgresHistoryStore() override = default;
  PostgresHistoryStore(const PostgresHistoryStore&) = delete;
  PostgresHistoryStore& operator=(const PostgresHistoryStore&) = delete;

  std::string Describe() const override { return redacted_uri_; }

 protected:
  absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& record) override;
  absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& record) override;
  absl::Status DoPutContainer(const v1::ContainerHistoryRecord& record) override;
  absl::Status DoPutBatch(const HistoryBatch& batch) override;
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
  absl::StatusOr<std::vector<UsageLine>> DoReport(ReportKey key, int64_t since_ms,
                                                  int64_t until_ms) override;

 private:
  using Result = store::pg::Result;
  // A query parameter: text, or binary (BYTEA) bytes. Owns its value: batches build them from
  // temporaries.
  struct Param {
    std::string value;
    bool binary = false;
  };

  explicit PostgresHistoryStore(std::string uri);

  // Runs one statement on conn_ (store::pg::Connection::Exec), its parameters viewed in place.
  absl::StatusOr<Result> Exec(absl::string_view what, const std::string& sql,
                              const std::vector<Param>& params) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A batch's writes, inside a transaction.
  absl::Status WriteBatch(const HistoryBatch& batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applications from a query yielding kPgApplicationColumns (see the .cc), with their other
  // resource types; DataLoss if a record does not parse.
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> Applications(
      absl::string_view what, const std::string& sql, const std::vector<Param>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Parses the records (column 0) of a query's rows.
  template <typename T>
  absl::StatusOr<std::vector<T>> Records(absl::string_view what, const std::string& sql,
                                         const std::vector<Param>& params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs `read` under WithConnection and returns what it produced.
  template <typename T>
  absl::StatusOr<T> Read(absl::string_view what, absl::FunctionRef<absl::StatusOr<T>()> read)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string redacted_uri_;
  absl::Mutex mu_;
  store::pg::Connection conn_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::history

#endif  // WEFT_HISTORY_POSTGRES_HISTORY_STORE_H_
