// Copyright Weft authors. The federation state store in ZooKeeper (YARN's
// ZookeeperFederationStateStore): for federations that already run a ZooKeeper ensemble.
#ifndef WEFT_FEDERATION_STORE_ZK_FEDERATION_STORE_H_
#define WEFT_FEDERATION_STORE_ZK_FEDERATION_STORE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "federation/store/record_store.h"
#include "store/zk_client.h"

namespace weft::federation {

// Layout: every record is a serialized proto in the data of one persistent node:
//   <root>/membership/<sub-cluster id>     SubClusterInfo
//   <root>/apps/<application id>           ApplicationHomeSubCluster
//   <root>/reservations/<reservation id>   ReservationHomeSubCluster
//   <root>/policies/<queue>                SubClusterPolicyConfiguration
//   <root>/router/keys/<key id>            RouterMasterKey (decimal id)
//   <root>/router/tokens/<sequence number> RouterStoredToken (decimal)
//   <root>/cluster-timestamps/<ms>         ClusterTimestampClaim (decimal)
//   <root>/issued-apps/<application id>    IssuedApplicationId
// (directories missing from a store made by an older binary are created when it is opened),
// where every name is escaped by store::zk::EscapeNodeName() (e.g. "sc.1" is "sc%2E1").
// Add-if-absent is a create; the loser of a race gets NodeExists and reads the winner's record.
// Read-modify-write (heartbeats, deregistration) sets the node at the version it read, retrying
// when another writer came first.
//
// Durability: ZooKeeper commits each write to a quorum's fsynced log before it answers.
// Failures: when the ensemble cannot be reached a call retries (reconnecting, with a new session
// if the old one expired) for up to `session_timeout_ms`, then returns Unavailable with the
// client's reason. After Unavailable, a write may or may not have been applied.
// Thread-safe: one session behind a mutex.
class ZkFederationStore final : public RecordFederationStore {
 public:
  struct Options {
    std::string connect;  // "host:port[,host:port]"
    std::string root;     // absolute, not "/", no trailing '/'; missing nodes are created
    int session_timeout_ms = 10000;
    // ZooKeeper digest credential "user:password": the store's nodes carry the creator-only
    // ACL (store/zk_client.h). Empty: open to every client (tests only; OpenFederationStore,
    // which the daemons use, requires one).
    std::string auth;
  };

  // Connects and creates the layout's missing nodes. InvalidArgument for bad options; the
  // connection's error (Unavailable, ...) otherwise.
  static absl::StatusOr<std::unique_ptr<ZkFederationStore>> Open(const Options& options);

  std::string Describe() const override {
    return absl::StrCat("zk://", options_.connect, options_.root);
  }

 protected:
  absl::Status PutRecord(Table table, const Row& row) override;
  absl::StatusOr<InsertResult> InsertRecord(Table table, const Row& row) override;
  absl::StatusOr<bool> ModifyRecord(Table table, absl::string_view key, Updater update) override;
  absl::StatusOr<std::optional<std::string>> GetRecord(Table table, absl::string_view key) override;
  absl::StatusOr<std::vector<std::string>> ListRecords(Table table,
                                                       absl::string_view home) override;
  absl::StatusOr<bool> DeleteRecord(Table table, absl::string_view key) override;

 private:
  using ZkClient = store::zk::ZkClient;

  ZkFederationStore(Options options, std::unique_ptr<ZkClient> client)
      : options_(std::move(options)), client_(std::move(client)) {}

  // Runs `attempt` until it returns something other than Unavailable or the call's deadline
  // passes, connecting before each attempt. `resuming` tells an attempt that an earlier one's
  // outcome is unknown (its write may have been applied). Errors get the store's description.
  absl::Status Retrying(absl::string_view what,
                        absl::FunctionRef<absl::Status(bool resuming, absl::Time deadline)> attempt)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies one operation; the ZooKeeper result code, or Unavailable when the answer was lost.
  absl::StatusOr<int> Apply(ZkClient::Op op, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An error for result code `rc` of an operation on `path`.
  absl::Status ZkError(absl::string_view path, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status EnsureLayout(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  std::string Dir(Table table) const;
  std::string Path(Table table, absl::string_view key) const;

  const Options options_;
  absl::Mutex mu_;
  const std::unique_ptr<ZkClient> client_ ABSL_PT_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_STORE_ZK_FEDERATION_STORE_H_
