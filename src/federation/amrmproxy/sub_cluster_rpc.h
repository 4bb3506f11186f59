// Copyright Weft authors. How the AMRMProxy talks to sub-cluster RMs: AmService with an
// attempt's AMRM token, ClientService acting for the app's user. One interface, a real gRPC
// implementation and fakes in tests (the interceptors never see a stub).
#ifndef WEFT_FEDERATION_AMRMPROXY_SUB_CLUSTER_RPC_H_
#define WEFT_FEDERATION_AMRMPROXY_SUB_CLUSTER_RPC_H_

#include <grpcpp/security/credentials.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/rm_failover.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::amrmproxy {

// Talk to "sub-cluster X's AmService/ClientService". `rm` is always an RM address list,
// "host:port[,host:port...]" (common/rm_failover.h): a sub-cluster's rm_address, or the
// WEFT_RM_ADDRESS the home RM gave its AM. Thread-safe: the federation interceptor calls
// sub-clusters in parallel.
//
// Errors are the RM's (its gRPC code, message prefixed "<method> at <rm>: "), or the
// transport's (Unavailable, DeadlineExceeded) once every RM of the list failed.
class SubClusterRpc {
 public:
  virtual ~SubClusterRpc() = default;

  // AmService as the attempt `token` (an AMRM token, metadata "weft-amrm-token-bin").
  virtual absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::RegisterApplicationMasterRequest& request) = 0;
  virtual absl::StatusOr<v1::AllocateResponse> Allocate(const std::string& rm,
                                                        const v1::Token& token,
                                                        const v1::AllocateRequest& request) = 0;
  virtual absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::FinishApplicationMasterRequest& request) = 0;

  // ClientService acting for `user` (metadata "weft-user"; the RM believes it from a daemon
  // certificate of a federation proxy, or in its declared-user test mode).
  virtual absl::StatusOr<v1::NewApplicationResponse> NewApplication(const std::string& rm,
                                                                    const std::string& user) = 0;
  virtual absl::Status SubmitApplication(const std::string& rm, const std::string& user,
                                         const v1::ApplicationSubmissionContext& context) = 0;
  virtual absl::StatusOr<v1::ApplicationReport> GetApplication(
      const std::string& rm, const std::string& user, const std::string& application_id) = 0;
  virtual absl::Status KillApplication(const std::string& rm, const std::string& user,
                                       const std::string& application_id,
                                       const std::string& diagnostics) = 0;
  virtual absl::StatusOr<std::vector<v1::NodeReport>> ListNodes(const std::string& rm,
                                                                const std::string& user) = 0;
};

struct GrpcSubClusterRpcOptions {
  // TLS presenting the NM's certificate (security::TlsChannelCredentials(files)), or plaintext
  // for in-process tests. Never null.
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  int64_t call_timeout_ms = 10'000;  // deadline of one try, ms
};

// The real one: one channel per RM address, following the active RM of each list as every RM
// client does (a standby's hint, else the next RM), each RM of the list tried at most once per
// call. It does not wait and retry an RM that is down: the AM's own client does that with the
// proxy (it retries Unavailable).
class GrpcSubClusterRpc final : public SubClusterRpc {
 public:
  explicit GrpcSubClusterRpc(GrpcSubClusterRpcOptions options);

  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::RegisterApplicationMasterRequest& request) override;
  absl::StatusOr<v1::AllocateResponse> Allocate(const std::string& rm, const v1::Token& token,
                                                const v1::AllocateRequest& request) override;
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const std::string& rm, const v1::Token& token,
      const v1::FinishApplicationMasterRequest& request) override;
  absl::StatusOr<v1::NewApplicationResponse> NewApplication(const std::string& rm,
                                                            const std::string& user) override;
  absl::Status SubmitApplication(const std::string& rm, const std::string& user,
                                 const v1::ApplicationSubmissionContext& context) override;
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& rm,
                                                       const std::string& user,
                                                       const std::string& application_id) override;
  absl::Status KillApplication(const std::string& rm, const std::string& user,
                               const std::string& application_id,
                               const std::string& diagnostics) override;
  absl::StatusOr<std::vector<v1::NodeReport>> ListNodes(const std::string& rm,
                                                        const std::string& user) override;

 private:
  struct Channels {
    std::unique_ptr<RmFailover> failover;
    std::map<std::string, std::shared_ptr<grpc::Channel>> by_address;
  };
  // Runs `call` against the current RM of the list `rm`, failing over as described above.
  // `setup` adds the call's metadata to each try's context.
  absl::Status Call(const char* method, const std::string& rm,
                    const std::function<void(grpc::ClientContext*)>& setup,
                    const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&,
                                                     grpc::ClientContext*)>& call);

  const GrpcSubClusterRpcOptions options_;
  absl::Mutex mu_;
  std::map<std::string, Channels> lists_ ABSL_GUARDED_BY(mu_);  // by address list
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_SUB_CLUSTER_RPC_H_
