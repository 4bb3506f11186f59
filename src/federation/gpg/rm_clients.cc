// Copyright Weft authors.
#include "federation/gpg/rm_clients.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/rm_failover.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::federation {
namespace {

absl::Status FromGrpc(const grpc::Status& s, absl::string_view what) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

}  // namespace

GrpcSubClusterRms::GrpcSubClusterRms(std::optional<security::TlsFiles> tls, int64_t deadline_ms)
    : tls_(std::move(tls)), deadline_ms_(deadline_ms) {}

std::shared_ptr<grpc::Channel> GrpcSubClusterRms::ChannelTo(const std::string& address) {
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  auto creds = tls_.has_value() ? security::TlsChannelCredentials(*tls_)
                                : grpc::InsecureChannelCredentials();
  auto channel = grpc::CreateCustomChannel(address, creds, FastReconnectChannelArgs());
  channels_[address] = channel;
  return channel;
}

template <typename Call>
grpc::Status GrpcSubClusterRms::OnActive(const v1::SubClusterInfo& sc, const std::string& user,
                                         Call call) {
  absl::StatusOr<std::vector<std::string>> addresses = ParseRmAddresses(sc.rm_address());
  if (!addresses.ok())
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("sub-cluster ", sc.sub_cluster_id(), ": ",
                                     addresses.status().message()));
  grpc::Status last;
  for (const std::string& address : *addresses) {
    auto stub = v1::ClientService::NewStub(ChannelTo(address));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms_));
    ctx.AddMetadata("weft-user", user);
    last = call(*stub, ctx);
    if (!IsRmFailoverCode(last)) return last;
  }
  return last;
}

absl::StatusOr<v1::ApplicationReport> GrpcSubClusterRms::GetApplication(
    const v1::SubClusterInfo& sc, const std::string& user, const std::string& app_id) {
  v1::GetApplicationRequest req;
  req.set_application_id(app_id);
  v1::GetApplicationResponse resp;
  grpc::Status s = OnActive(sc, user, [&](v1::ClientService::Stub& stub, grpc::ClientContext& ctx) {
    return stub.GetApplication(&ctx, req, &resp);
  });
  if (!s.ok())
    return FromGrpc(s, absl::StrCat("sub-cluster ", sc.sub_cluster_id(), " GetApplication ", app_id));
  return resp.report();
}

absl::Status GrpcSubClusterRms::SubmitApplication(const v1::SubClusterInfo& sc,
                                                  const std::string& user,
                                                  const v1::ApplicationSubmissionContext& context) {
  v1::SubmitApplicationRequest req;
  *req.mutable_context() = context;
  v1::SubmitApplicationResponse resp;
  grpc::Status s = OnActive(sc, user, [&](v1::ClientService::Stub& stub, grpc::ClientContext& ctx) {
    return stub.SubmitApplication(&ctx, req, &resp);
  });
  if (!s.ok())
    return FromGrpc(s, absl::StrCat("sub-cluster ", sc.sub_cluster_id(), " SubmitApplication ",
                                    context.application_id()));
  return absl::OkStatus();
}

}  // namespace weft::federation
