// Copyright Weft authors. What every federation state store back-end shares: the
// FederationStateStore contract (validation, record merging, NotFound/AlreadyExists, ordering,
// error context) implemented once over six primitive operations on tables of serialized records,
// which each back-end (memory, SQLite, ZooKeeper, PostgreSQL) implements. Internal to
// federation/store; callers use FederationStateStore.
#ifndef WEFT_FEDERATION_STORE_RECORD_STORE_H_
#define WEFT_FEDERATION_STORE_RECORD_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "federation/store/federation_store.h"
#include "google/protobuf/message_lite.h"

namespace weft::federation {

// The tables of the store. Each holds records (serialized protos) by a unique key.
enum class Table {
  kSubClusters,
  kApplications,
  kReservations,
  kPolicies,
  kMasterKeys,
  kTokens,
  kClusterTimestamps,
  kIssuedApplicationIds,
};
inline constexpr Table kAllTables[] = {Table::kSubClusters,       Table::kApplications,
                                       Table::kReservations,      Table::kPolicies,
                                       Table::kMasterKeys,        Table::kTokens,
                                       Table::kClusterTimestamps, Table::kIssuedApplicationIds};

// How back-ends spell a table.
struct TableInfo {
  const char* sql_name;    // SQL table name
  const char* key_column;  // SQL primary-key column
  bool integer_key;        // the key is a decimal integer (key id, sequence number)
  bool has_home;           // rows carry a home sub-cluster id (SQL column home_sub_cluster_id)
  const char* zk_dir;      // directory under the ZooKeeper root
};
const TableInfo& InfoOf(Table table);

// One record with its indexed columns.
struct Row {
  std::string key;     // the record's id; decimal for master key ids, token sequence numbers and
                       // cluster timestamps
  std::string home;    // home_sub_cluster_id for applications and reservations; "" otherwise
  std::string record;  // the serialized proto
};

// Serializes deterministically (map fields in key order), so equal records have equal bytes.
std::string SerializeRecord(const google::protobuf::MessageLite& message);

// Implements FederationStateStore over the primitives below. Subclasses add no behaviour to the
// public methods; they only store rows. Every primitive must be atomic, thread-safe and, except
// in the memory store, durable when it returns OK. A primitive's errors carry the back-end's
// description and message; this class adds what the call was doing.
class RecordFederationStore : public FederationStateStore {
 public:
  absl::Status RegisterSubCluster(const v1::SubClusterInfo& info) final;
  absl::Status DeregisterSubCluster(absl::string_view sub_cluster_id,
                                    v1::SubClusterState state) final;
  absl::Status SubClusterHeartbeat(const v1::SubClusterInfo& load) final;
  absl::StatusOr<v1::SubClusterInfo> GetSubCluster(absl::string_view sub_cluster_id) final;
  absl::StatusOr<std::vector<v1::SubClusterInfo>> GetSubClusters(bool only_active) final;

  absl::StatusOr<std::string> AddApplicationHomeSubCluster(
      const v1::ApplicationHomeSubCluster& home) final;
  absl::Status UpdateApplicationHomeSubCluster(const v1::ApplicationHomeSubCluster& home) final;
  absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHomeSubCluster(
      absl::string_view application_id) final;
  absl::StatusOr<std::vector<v1::ApplicationHomeSubCluster>> GetApplicationsHomeSubCluster(
      absl::string_view home_sub_cluster_id) final;
  absl::Status DeleteApplicationHomeSubCluster(absl::string_view application_id) final;

  absl::StatusOr<std::string> AddReservationHomeSubCluster(
      const v1::ReservationHomeSubCluster& home) final;
  absl::Status UpdateReservationHomeSubCluster(const v1::ReservationHomeSubCluster& home) final;
  absl::StatusOr<v1::ReservationHomeSubCluster> GetReservationHomeSubCluster(
      absl::string_view reservation_id) final;
  absl::StatusOr<std::vector<v1::ReservationHomeSubCluster>> GetReservationsHomeSubCluster() final;
  absl::Status DeleteReservationHomeSubCluster(absl::string_view reservation_id) final;

  absl::Status SetPolicyConfiguration(const v1::SubClusterPolicyConfiguration& config) final;
  absl::StatusOr<v1::SubClusterPolicyConfiguration> GetPolicyConfiguration(
      absl::string_view queue) final;
  absl::StatusOr<std::vector<v1::SubClusterPolicyConfiguration>> GetPoliciesConfigurations() final;
  absl::Status DeletePolicyConfiguration(absl::string_view queue) final;

  absl::Status StoreMasterKey(const v1::RouterMasterKey& key) final;
  absl::Status RemoveMasterKey(int32_t key_id) final;
  absl::StatusOr<v1::RouterMasterKey> GetMasterKey(int32_t key_id) final;
  absl::Status StoreToken(const v1::RouterStoredToken& token) final;
  absl::Status UpdateToken(const v1::RouterStoredToken& token) final;
  absl::Status RemoveToken(int64_t sequence_number) final;
  absl::StatusOr<v1::RouterStoredToken> GetToken(int64_t sequence_number) final;

  absl::StatusOr<int64_t> ClaimClusterTimestamp(absl::string_view sub_cluster_id,
                                                int64_t wanted_ms) final;
  absl::StatusOr<std::vector<v1::ClusterTimestampClaim>> GetClusterTimestampClaims() final;
  absl::StatusOr<int64_t> ClaimContainerEpoch(absl::string_view sub_cluster_id,
                                              int64_t at_least) final;

  absl::Status AddIssuedApplicationId(const v1::IssuedApplicationId& issued) final;
  absl::StatusOr<v1::IssuedApplicationId> GetIssuedApplicationId(
      absl::string_view application_id) final;
  absl::Status DeleteIssuedApplicationId(absl::string_view application_id) final;
  absl::StatusOr<int> DeleteIssuedApplicationIdsBefore(int64_t before_ms) final;

 protected:
  struct InsertResult {
    std::string record;  // the record stored under the key after the call
    bool inserted;       // whether it is the caller's (false: an existing record was kept)
  };
  // Computes a row's replacement from its current record. May be called more than once (a
  // back-end retries when the row changed under it); must not have side effects.
  using Updater = absl::FunctionRef<absl::StatusOr<Row>(absl::string_view old_record)>;

  // Inserts the row or replaces the row with its key.
  virtual absl::Status PutRecord(Table table, const Row& row) = 0;
  // Inserts the row unless one with its key exists, and returns what is stored now.
  virtual absl::StatusOr<InsertResult> InsertRecord(Table table, const Row& row) = 0;
  // Atomically replaces the row with `key` by update(its record); false when there is none.
  // The updater's Row has the same key.
  virtual absl::StatusOr<bool> ModifyRecord(Table table, absl::string_view key, Updater update) = 0;
  // The record with `key`, nullopt when there is none.
  virtual absl::StatusOr<std::optional<std::string>> GetRecord(Table table,
                                                               absl::string_view key) = 0;
  // The table's records in any order. With a non-empty `home` (tables with has_home only) a
  // back-end may leave out rows with another home; the caller filters again.
  virtual absl::StatusOr<std::vector<std::string>> ListRecords(Table table,
                                                               absl::string_view home) = 0;
  // Deletes the row with `key`; false when there was none.
  virtual absl::StatusOr<bool> DeleteRecord(Table table, absl::string_view key) = 0;

 private:
  class Homes;  // application and reservation homes, implemented once
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_RECORD_STORE_H_
