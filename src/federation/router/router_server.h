// Copyright Weft authors. `weft router`'s gRPC side: the same ClientService an RM serves, so
// that every client (`weft app ...`) works against a router unchanged. Callers are
// authenticated exactly as by an RM (rm/client_auth.h: MUNGE, proxy users, the admin secret);
// the Router then calls the sub-cluster RMs as the authenticated user.
#ifndef WEFT_FEDERATION_ROUTER_ROUTER_SERVER_H_
#define WEFT_FEDERATION_ROUTER_ROUTER_SERVER_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "federation/router/router.h"
#include "federation/store/federation_store.h"
#include "rm/client_auth.h"
#include "security/tls.h"

namespace grpc {
class Server;
}

namespace weft::federation {

struct RouterServerOptions {
  RouterOptions router;
  std::string bind_host = "127.0.0.1";  // any other address is an explicit choice
  int port = 0;                         // 0 = a free port (see port())
  // How callers are authenticated, as an RM's (MUNGE by default). `auth.rm_user` (always an
  // admin) defaults to the router process's user.
  rm::ClientAuthOptions auth;
  // The router's certificate (security::DaemonTlsPaths(dir, kRouter, id)) and the federation's
  // CA: it serves its port with it (client certificates requested, verified when presented)
  // and presents it to the sub-cluster RMs, which then believe the user it names. Unset:
  // plaintext both ways - FOR IN-PROCESS TESTS only.
  std::optional<security::TlsFiles> tls;
};

// Owns the Router and one gRPC server (sync API: the Router blocks on the store and the RMs,
// on gRPC's own threads). Thread-safe.
class RouterServer {
 public:
  // `store` is not owned and must outlive the server. Errors: bad options, munged unreachable
  // (with MUNGE authentication), Unavailable when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<RouterServer>> Start(RouterServerOptions options,
                                                             FederationStateStore* store);
  ~RouterServer();  // Shutdown()

  std::string address() const;  // host:port actually bound
  int port() const { return port_; }
  Router& router() { return *router_; }
  // Authenticates a caller as ClientService does (for the REST API). Thread-safe.
  absl::StatusOr<rm::Caller> Authenticate(const rm::Presented& presented) const;
  void Shutdown();  // idempotent

 private:
  class Service;
  RouterServer() = default;

  RouterServerOptions options_;
  std::unique_ptr<Router> router_;
  std::unique_ptr<Service> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_ROUTER_SERVER_H_
