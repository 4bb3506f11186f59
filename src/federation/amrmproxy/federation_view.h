// Copyright Weft authors. What an NM's AMRMProxy knows of the federation: the usable
// sub-clusters, each queue's policy configuration and where nodes are, read from the state
// store and cached (YARN's FederationStateStoreFacade with its cache TTL).
#ifndef WEFT_FEDERATION_AMRMPROXY_FEDERATION_VIEW_H_
#define WEFT_FEDERATION_AMRMPROXY_FEDERATION_VIEW_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "federation/amrmproxy/sub_cluster_rpc.h"
#include "federation/policies/policy.h"
#include "federation/store/federation_store.h"
#include "weft/v1/federation.pb.h"

namespace weft::amrmproxy {

struct FederationViewOptions {
  federation::FederationStateStore* store = nullptr;  // not owned; never null
  // Where nodes are: YARN's machine list (--federation-machine-list). Unset: built from the
  // usable sub-clusters' node lists (ListNodes, NodeReport rack), refreshed with the cache.
  std::optional<federation::SubClusterResolver> machine_list;
  SubClusterRpc* rpc = nullptr;  // for the node lists; not owned
  // How long store reads and node lists are reused, ms.
  int64_t cache_ttl_ms = 10'000;
  // A sub-cluster not heard from for this long is not usable (IsSubClusterUsable), ms.
  int64_t membership_expiry_ms = 30000;  // as the routers' (ms): not usable when silent longer
  std::function<int64_t()> now_ms;  // ms since the Unix epoch
};

// One consistent view for one split.
struct FederationSnapshot {
  std::vector<v1::SubClusterInfo> active;           // usable, ordered by id
  std::map<std::string, v1::SubClusterInfo> known;  // every registered one, by id
  v1::SubClusterPolicyConfiguration config;         // the queue's, else "*", else the default
  std::shared_ptr<const federation::SubClusterResolver> resolver;  // null: no locality known
};

// Thread-safe (one mutex; store reads and node lists happen under it, at most once per TTL).
class FederationView {
 public:
  explicit FederationView(FederationViewOptions options);

  // The view for `queue`; node lists are read acting for `user`. A store that cannot be read
  // leaves the last view in use (logged); Unavailable when there never was one.
  absl::StatusOr<FederationSnapshot> Get(const std::string& queue, const std::string& user);

 private:
  struct CachedConfig {
    v1::SubClusterPolicyConfiguration config;
    int64_t read_ms = 0;
  };
  absl::Status RefreshSubClusters(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RefreshResolver(const std::string& user, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::SubClusterPolicyConfiguration ConfigFor(const std::string& queue, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const FederationViewOptions options_;
  absl::Mutex mu_;
  std::optional<std::vector<v1::SubClusterInfo>> sub_clusters_ ABSL_GUARDED_BY(mu_);
  int64_t sub_clusters_read_ms_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<std::string, CachedConfig> configs_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const federation::SubClusterResolver> resolver_ ABSL_GUARDED_BY(mu_);
  int64_t resolver_read_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_FEDERATION_VIEW_H_
