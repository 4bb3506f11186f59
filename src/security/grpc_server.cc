// Copyright Weft authors.
#include "security/grpc_server.h"

#include <climits>

#include "absl/strings/str_cat.h"
#include "common/reachable_host.h"

namespace weft::security {

void SetServerConnectionArgs(grpc::ServerBuilder* builder, int max_connection_idle_ms) {
  // gRPC's default server keepalive (a ping after 2 h without reads) cancels and re-arms a timer
  // on every read of every connection; Debian's gRPC keeps its timers in a debug hash table of
  // 1,009 chains, so each of those costs a walk that grows with the number of connections.
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);  // INT_MAX: none
  // A connection with no call for this long is closed (GOAWAY), which is what the keepalive
  // was for: the connection of a peer that vanished without a FIN does not stay forever.
  builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS, max_connection_idle_ms);
  // Each client enforces its own deadline (and cancels the call when it passes); a server-side
  // timer per call would only repeat that.
  builder->AddChannelArgument(GRPC_ARG_ENABLE_DEADLINE_CHECKS, 0);
  // No channelz service is served, so its per-call counters and socket registry are not kept.
  builder->AddChannelArgument(GRPC_ARG_ENABLE_CHANNELZ, 0);
  // Each TLS connection keeps a buffer of this size for the records it sends (16 KiB by
  // default); a bigger message goes out in more records.
  builder->AddChannelArgument(GRPC_ARG_TSI_MAX_FRAME_SIZE, kServerTlsMaxFrameBytes);
  // No bandwidth-delay-product probing: it sent a PING (and its peer an ACK) along with about
  // every other small call, doubling the TLS records and syscalls of a heartbeat on both ends.
  // Each stream keeps gRPC's fixed 64 KiB window instead, ample for the RM's and NM's calls.
  builder->AddChannelArgument(GRPC_ARG_HTTP2_BDP_PROBE, 0);
}

absl::StatusOr<StartedGrpcServer> StartGrpcServer(absl::string_view what,
                                                   absl::string_view bind_host, int port,
                                                   const std::optional<TlsFiles>& tls,
                                                   std::initializer_list<grpc::Service*> services) {
  const std::string address = HostPort(bind_host, port);
  StartedGrpcServer started;
  grpc::ServerBuilder builder;
  SetServerConnectionArgs(&builder);
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
