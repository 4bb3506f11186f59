// Copyright Weft authors. SubClusterRms over gRPC: the GPG calls sub-cluster RMs' ClientService
// over mutual TLS with its own certificate (gpg/<id>) and names the user it acts for in
// "weft-user" (an RM in a federation accepts that from the federation's daemons,
// rm/client_auth.h). Follows each sub-cluster's RM address list (HA pairs).
#ifndef WEFT_FEDERATION_GPG_RM_CLIENTS_H_
#define WEFT_FEDERATION_GPG_RM_CLIENTS_H_

#include <map>
#include <memory>
#include <string>

#include "federation/gpg/global_policy_generator.h"
#include "grpcpp/grpcpp.h"
#include "security/tls.h"

namespace weft::federation {

class GrpcSubClusterRms final : public SubClusterRms {
 public:
  // `tls`: the GPG's certificate and the federation's CA; nullopt = plaintext (in-process
  // tests whose RMs run without TLS). `deadline_ms` bounds each call.
  GrpcSubClusterRms(std::optional<security::TlsFiles> tls, int64_t deadline_ms = 5000);

  absl::StatusOr<v1::ApplicationReport> GetApplication(const v1::SubClusterInfo& sc,
                                                       const std::string& user,
                                                       const std::string& app_id) override;
  absl::Status SubmitApplication(const v1::SubClusterInfo& sc, const std::string& user,
                                 const v1::ApplicationSubmissionContext& context) override;

 private:
  // Runs `call` against each of the sub-cluster's RM addresses in turn until one answers with
  // anything but a failover code (rm_failover.h); that answer, or the last failure.
  template <typename Call>
  grpc::Status OnActive(const v1::SubClusterInfo& sc, const std::string& user, Call call);
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address);

  std::optional<security::TlsFiles> tls_;
  int64_t deadline_ms_;
  std::map<std::string, std::shared_ptr<grpc::Channel>> channels_;  // by address
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_GPG_RM_CLIENTS_H_
