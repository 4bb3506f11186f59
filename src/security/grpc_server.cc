// Copyright Weft authors.
#include "security/grpc_server.h"

#include "absl/strings/str_cat.h"
#include "common/reachable_host.h"

namespace weft::security {

absl::StatusOr<StartedGrpcServer> StartGrpcServer(absl::string_view what,
                                                   absl::string_view bind_host, int port,
                                                   const std::optional<TlsFiles>& tls,
                                                   std::initializer_list<grpc::Service*> services) {
  const std::string address = HostPort(bind_host, port);
  StartedGrpcServer started;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(
      address,
      tls.has_value()
          ? MutualTlsServerCredentials(*tls, ClientCertMode::kRequestAndVerifyIfPresent)
          : grpc::InsecureServerCredentials(),
      &started.port);
  for (grpc::Service* service : services) {
    if (service != nullptr) builder.RegisterService(service);
  }
  started.server = builder.BuildAndStart();
  if (started.server == nullptr || started.port == 0)
    return absl::UnavailableError(absl::StrCat(what, ": cannot listen on ", address));
  return started;
}

}  // namespace weft::security
