// Copyright Weft authors. Starting a daemon's gRPC server: one listening port, plaintext or
// mutual TLS (a certificate requested, verified when presented), and its services. The RM, the
// NodeManager and the federation router start theirs through it.
#ifndef WEFT_SECURITY_GRPC_SERVER_H_
#define WEFT_SECURITY_GRPC_SERVER_H_

#include <grpcpp/grpcpp.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "security/tls.h"

namespace weft::security {

struct StartedGrpcServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // the port it listens on (the one chosen when 0 was asked for)
};

// Listens on `bind_host`:`port` (0: a free port) with `tls` (from LoadTlsFiles; nullopt:
// plaintext, for development) and serves `services`, which must outlive the server.
// Unavailable naming `what` and the address when the port cannot be bound.
absl::StatusOr<StartedGrpcServer> StartGrpcServer(absl::string_view what,
                                                   absl::string_view bind_host, int port,
                                                   const std::optional<TlsFiles>& tls,
                                                   std::initializer_list<grpc::Service*> services);

}  // namespace weft::security

#endif  // WEFT_SECURITY_GRPC_SERVER_H_
