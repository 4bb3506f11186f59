// Copyright Weft authors. A small synchronous C++ API for ApplicationMasters: AmRmClient
// speaks AmService to the RM, NmClient ContainerService to NodeManagers.
#ifndef WEFT_AM_AM_CLIENT_H_
#define WEFT_AM_AM_CLIENT_H_

#include <grpcpp/security/credentials.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"

namespace weft::am {

// What an AM container finds in its environment (set by the RM's AM launcher).
struct AmEnvironment {
  std::string rm_address;      // WEFT_RM_ADDRESS
  std::string application_id;  // WEFT_APPLICATION_ID
  std::string attempt_id;      // WEFT_APP_ATTEMPT_ID
  v1::Token amrm_token;        // the file WEFT_TOKEN_FILE_AMRM names (the serialized token)
  // The cluster CA certificate (PEM) from the file WEFT_TLS_CA_FILE names: the AM then speaks
  // TLS to the RM and the NMs and verifies them. "" when the variable is unset (a cluster
  // without TLS): plaintext.
  std::string tls_ca_pem;
};
// Channel credentials for `env`: TLS verified against env.tls_ca_pem, or plaintext without it.
std::shared_ptr<grpc::ChannelCredentials> AmChannelCredentials(const AmEnvironment& env);
// Reads the variables above; the error names the missing or malformed one.
absl::StatusOr<AmEnvironment> ReadAmEnvironment();

// Synchronous AmService client for one attempt. Not thread-safe: one AM thread uses it.
// Allocate() follows YARN's response_id protocol, retrying a lost reply with the same id.
class AmRmClient {
 public:
  static absl::StatusOr<std::unique_ptr<AmRmClient>> Connect(const AmEnvironment& env);

  absl::StatusOr<v1::RegisterApplicationMasterResponse> Register(const std::string& host);
  // Sends the asks/releases/blacklist changes queued since the last call, and progress.
  absl::StatusOr<v1::AllocateResponse> Allocate(float progress);
  absl::Status Finish(v1::FinalApplicationStatus status, const std::string& diagnostics);

  // Queues an ask (absolute count, as YARN's ResourceRequest) for the next Allocate.
  void Ask(const v1::ResourceRequest& request) { asks_.push_back(request); }
  void Release(const std::string& container_id) { releases_.push_back(container_id); }

 private:
  AmRmClient() = default;
  grpc::Status Call(const std::function<grpc::Status(grpc::ClientContext*)>& rpc);

  AmEnvironment env_;
  std::unique_ptr<v1::AmService::Stub> stub_;
  int32_t response_id_ = 0;
  std::vector<v1::ResourceRequest> asks_;
  std::vector<std::string> releases_;
};

// Synchronous ContainerService client; one channel per node, created on first use.
class NmClient {
 public:
  // `credentials`: for every NM's ContainerService (AmChannelCredentials()).
  explicit NmClient(std::shared_ptr<grpc::ChannelCredentials> credentials)
      : credentials_(std::move(credentials)) {}
  // Starts `container` (with its token) running `command` (one shell string) and `env`.
  absl::Status Start(const v1::Container& container, const std::string& command,
                     const std::map<std::string, std::string>& env);
  absl::Status Stop(const v1::Container& container);
  absl::StatusOr<v1::ContainerStatus> Status(const v1::Container& container);

 private:
  v1::ContainerService::Stub* StubFor(const std::string& node_id);
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::map<std::string, std::unique_ptr<v1::ContainerService::Stub>> stubs_;
};

// The distributed shell (YARN's example AM): runs `num_containers` containers of `command`,
// each with `resource`, retrying a failed container up to `max_retries` times; finishes
// SUCCEEDED only when every container exited 0.
struct ShellAmOptions {
  int32_t num_containers = 1;
  std::string command;
  int64_t memory_mb = 256;
  int32_t vcores = 1;
  int64_t network_mbps = 0;
  int32_t max_retries = 3;
  int64_t poll_interval_ms = 200;  // between Allocate calls
  int64_t timeout_ms = 0;          // 0 = none; then the AM finishes FAILED
};
// Runs the AM in this process using ReadAmEnvironment(); returns the process exit code
// (0 when the application SUCCEEDED). Progress and errors go to stderr.
int RunShellAm(const ShellAmOptions& options);

}  // namespace weft::am

#endif  // WEFT_AM_AM_CLIENT_H_
