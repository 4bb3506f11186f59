// Copyright Weft authors. The router's outbound calls: ClientService on a sub-cluster's RM, as
// the user the router authenticated, following the sub-cluster's RM address list (HA) as every
// RM client does (common/rm_failover.h).
#ifndef WEFT_FEDERATION_ROUTER_SUB_CLUSTER_CLIENT_H_
#define WEFT_FEDERATION_ROUTER_SUB_CLUSTER_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/rm_failover.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/federation.pb.h"

namespace weft::federation {

// The metadata in which the router names the user it acts for (the RM's "weft-user"; the RM
// believes it from a caller with a federation daemon's certificate, rm/client_auth.h).
inline constexpr char kActAsUserMetadata[] = "weft-user";

// One ClientService call on a stub with a prepared context.
using SubClusterRpc =
    std::function<grpc::Status(v1::ClientService::Stub& stub, grpc::ClientContext* ctx)>;

// Channels to the sub-clusters' RMs, created on first use and kept per address. Thread-safe.
class SubClusterClients {
 public:
  // `credentials`: the router's mutual-TLS credentials (security::TlsChannelCredentials with
  // its router certificate); null = plaintext (in-process tests only). `timeout_ms`: deadline
  // of one try.
  SubClusterClients(std::shared_ptr<grpc::ChannelCredentials> credentials, int64_t timeout_ms);

  // Runs `rpc` against `sub_cluster`'s RM acting as `user`. With several RM addresses, a try
  // that fails with UNAVAILABLE or DEADLINE_EXCEEDED (a standby, a dead RM) is made again on
  // the active the standby named or on the next address, each address at most once more; the
  // active found is remembered for the next call. Errors keep the RM's code, with a message
  // naming the sub-cluster and the RM address.
  absl::Status Call(const v1::SubClusterInfo& sub_cluster, const std::string& user,
                    const SubClusterRpc& rpc);

 private:
  struct Target {
    std::string address_list;  // the rm_address it was made from
    absl::Mutex mu;
    std::optional<RmFailover> failover ABSL_GUARDED_BY(mu);
  };
  std::shared_ptr<Target> TargetOf(const v1::SubClusterInfo& sub_cluster, absl::Status* error);
  v1::ClientService::Stub& StubFor(const std::string& address);

  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  const int64_t timeout_ms_;
  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Target>> targets_ ABSL_GUARDED_BY(mu_);  // by sub-cluster
  std::map<std::string, std::unique_ptr<v1::ClientService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_SUB_CLUSTER_CLIENT_H_
