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

// How long a server keeps a connection that carries no call (60 min): NMs heartbeat every
// second, AMs allocate every few seconds, so only a vanished or idle client's connection is
// closed.
inline constexpr int kServerMaxConnectionIdleMs = 60 * 60 * 1000;

// The largest TLS record a server sends, bytes of its frame (gRPC's default: 16 KiB). NM
// heartbeats and their replies are a few hundred bytes to a few KiB, and the buffer is kept per
// connection: 4 KiB saves the RM about 10 KiB per NM (docs/performance.md).
inline constexpr int kServerTlsMaxFrameBytes = 4096;

// The connection settings of every Weft gRPC server (StartGrpcServer sets them): no keepalive
// pings (a connection without a call for `max_connection_idle_ms` is closed instead), no
// server-side deadline timer per call (the client's deadline still cancels the call, and the
// server sees the cancellation), no channelz, TLS records of at most kServerTlsMaxFrameBytes.
void SetServerConnectionArgs(grpc::ServerBuilder* builder,
                             int max_connection_idle_ms = kServerMaxConnectionIdleMs);

// Listens on `bind_host`:`port` (0: a free port) with `tls` (from LoadTlsFiles; nullopt:
// plaintext, for development) and serves `services`, which must outlive the server.
// Unavailable naming `what` and the address when the port cannot be bound.
absl::StatusOr<StartedGrpcServer> StartGrpcServer(absl::string_view what,
                                                   absl::string_view bind_host, int port,
                                                   const std::optional<TlsFiles>& tls,
                                                   std::initializer_list<grpc::Service*> services);

}  // namespace weft::security

#endif  // WEFT_SECURITY_GRPC_SERVER_H_
