// Copyright Weft authors. The federation state store in PostgreSQL (YARN's
// SQLFederationStateStore), through libpq: for federations with many routers on many hosts.
#ifndef WEFT_FEDERATION_STORE_POSTGRES_FEDERATION_STORE_H_
#define WEFT_FEDERATION_STORE_POSTGRES_FEDERATION_STORE_H_

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "federation/store/record_store.h"
#include "store/postgres_util.h"

namespace weft::federation {

// `uri` with the password (in the user info or a password= parameter) replaced by "***", for
// logs and error messages (store/postgres_util.h).
using store::pg::RedactPostgresUri;

// Layout: the tables of the SQLite store (sub_clusters, application_homes, reservation_homes,
// policies, router_master_keys, router_tokens, cluster_timestamps, issued_application_ids: key
// column, home sub-cluster where the record has
// one, record BYTEA), created by Weft in the connection's current schema (search_path). Schema
// changes are versioned migrations, applied in order in one transaction under an advisory lock
// (so that several routers may start at once) and recorded in weft_federation_schema (one row
// per applied version). Every query is parameterised (PQexecParams). The connection, the URI
// rules and the migrations are store/postgres_util.h's.
//
// Durability: an OK write is committed (with the server's default synchronous_commit, flushed
// to its WAL). Failures: when the server cannot be reached, calls return Unavailable with
// libpq's message; each call first reconnects (once) if the connection is bad, and repeats
// itself once on a connection that broke under it. After Unavailable, a write may or may not
// have been applied. Thread-safe: one connection behind a mutex.
class PostgresFederationStore final : public RecordFederationStore {
 public:
  // The schema version this binary migrates to and understands.
  static constexpr int kSchemaVersion = 3;

  // Connects (libpq URI "postgresql://user@host:port/db?..." or "postgres://...", default
  // connect_timeout 10 s) and migrates the schema. InvalidArgument naming the (redacted) URI when
  // libpq cannot parse it; Unavailable with libpq's message when the server cannot be reached;
  // FailedPrecondition when the schema is newer than kSchemaVersion.
  static absl::StatusOr<std::unique_ptr<PostgresFederationStore>> Open(absl::string_view uri);

  ~PostgresFederationStore() override = default;
  PostgresFederationStore(const PostgresFederationStore&) = delete;
  PostgresFederationStore& operator=(const PostgresFederationStore&) = delete;

  std::string Describe() const override { return redacted_uri_; }

 protected:
  absl::Status PutRecord(Table table, const Row& row) override;
  absl::StatusOr<InsertResult> InsertRecord(Table table, const Row& row) override;
  absl::StatusOr<bool> ModifyRecord(Table table, absl::string_view key, Updater update) override;
  absl::StatusOr<std::optional<std::string>> GetRecord(Table table, absl::string_view key) override;
  absl::StatusOr<std::vector<std::string>> ListRecords(Table table,
                                                       absl::string_view home) override;
  absl::StatusOr<bool> DeleteRecord(Table table, absl::string_view key) override;

 private:
  using Result = store::pg::Result;

  explicit PostgresFederationStore(std::string uri);

  // The records (column 0) of a query's rows.
  static std::vector<std::string> Records(const PGresult* result);

  const std::string redacted_uri_;
  absl::Mutex mu_;
  store::pg::Connection conn_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_POSTGRES_FEDERATION_STORE_H_
