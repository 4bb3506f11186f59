// Copyright Weft authors.
#include "federation/router/router_server.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "security/grpc_server.h"
#include "security/munge.h"
#include "security/user_identity.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::federation {
namespace {

grpc::Status ToGrpc(const absl::Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(s.code()), std::string(s.message()));
}

std::string Metadata(const grpc::ServerContext* ctx, const std::string& key) {
  const auto& md = ctx->client_metadata();
  auto it = md.find(key);
  return it == md.end() ? "" : std::string(it->second.data(), it->second.size());
}

}  // namespace

// ClientService: each call is authenticated, then handed to the Router on this gRPC thread.
class RouterServer::Service final : public v1::ClientService::Service {
 public:
  explicit Service(RouterServer* s) : s_(s) {}

  grpc::Status NewApplication(grpc::ServerContext* ctx, const v1::NewApplicationRequest*,
                              v1::NewApplicationResponse* resp) override {
    return Handle("NewApplication", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->NewApplication(c.user); });
  }
  grpc::Status SubmitApplication(grpc::ServerContext* ctx, const v1::SubmitApplicationRequest* req,
                                 v1::SubmitApplicationResponse* resp) override {
    return Handle("SubmitApplication", ctx, resp,
                  [&](const rm::Caller& c) -> absl::StatusOr<v1::SubmitApplicationResponse> {
                    absl::Status st = s_->router_->SubmitApplication(req->context(), c.user);
                    if (!st.ok()) return st;
                    return v1::SubmitApplicationResponse();
                  });
  }
  grpc::Status GetApplication(grpc::ServerContext* ctx, const v1::GetApplicationRequest* req,
                              v1::GetApplicationResponse* resp) override {
    return Handle("GetApplication", ctx, resp,
                  [&](const rm::Caller& c) -> absl::StatusOr<v1::GetApplicationResponse> {
                    auto r = s_->router_->GetApplication(req->application_id(), c.user);
                    if (!r.ok()) return r.status();
                    v1::GetApplicationResponse out;
                    *out.mutable_report() = *std::move(r);
                    return out;
                  });
  }
  grpc::Status ListApplications(grpc::ServerContext* ctx, const v1::ListApplicationsRequest* req,
                                v1::ListApplicationsResponse* resp) override {
    return Handle("ListApplications", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->ListApplications(*req, c.user); });
  }
  grpc::Status KillApplication(grpc::ServerContext* ctx, const v1::KillApplicationRequest* req,
                               v1::KillApplicationResponse* resp) override {
    return Handle("KillApplication", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->KillApplication(*req, c.user); });
  }
  grpc::Status GetClusterMetrics(grpc::ServerContext* ctx, const v1::GetClusterMetricsRequest*,
                                 v1::GetClusterMetricsResponse* resp) override {
    return Handle("GetClusterMetrics", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->GetClusterMetrics(c.user); });
  }
  grpc::Status ListNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest* req,
                         v1::ListNodesResponse* resp) override {
    return Handle("ListNodes", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->ListNodes(*req, c.user); });
  }
  grpc::Status GetQueue(grpc::ServerContext* ctx, const v1::GetQueueRequest* req,
                        v1::GetQueueResponse* resp) override {
    return Handle("GetQueue", ctx, resp,
                  [&](const rm::Caller& c) { return s_->router_->GetQueue(*req, c.user); });
  }
  grpc::Status GetApplicationAttempts(grpc::ServerContext* ctx,
                                      const v1::GetApplicationAttemptsRequest* req,
                                      v1::GetApplicationAttemptsResponse* resp) override {
    return Handle("GetApplicationAttempts", ctx, resp, [&](const rm::Caller& c) {
      return s_->router_->GetApplicationAttempts(req->application_id(), c.user);
    });
  }

 private:
  // Authenticates the caller, runs `fn`, counts the call and converts its status.
  template <typename Resp, typename Fn>
  grpc::Status Handle(const char* method, grpc::ServerContext* ctx, Resp* resp, Fn fn) {
    rm::Presented p;
    p.munge_credential = Metadata(ctx, "weft-munge-cred");
    p.secret = Metadata(ctx, "weft-secret");
    p.declared_user = Metadata(ctx, "weft-user");
    absl::StatusOr<rm::Caller> caller = s_->Authenticate(p);
    absl::Status st;
    if (!caller.ok()) {
      st = caller.status();
    } else {
      absl::StatusOr<Resp> r = fn(*caller);
      st = r.status();
      if (r.ok()) *resp = *std::move(r);
    }
    s_->router_->metrics()
        .GetCounter("weft_router_rpc_requests_total",
                    "ClientService calls the router answered, by method and status code.",
                    {{"method", method}, {"code", absl::StatusCodeToString(st.code())}})
        ->Increment();
    return ToGrpc(st);
  }

  RouterServer* s_;
};

absl::StatusOr<std::unique_ptr<RouterServer>> RouterServer::Start(RouterServerOptions options,
                                                                  FederationStateStore* store) {
  std::unique_ptr<RouterServer> s(new RouterServer());
  s->options_ = std::move(options);
  if (s->options_.auth.rm_user.empty()) {
    absl::StatusOr<security::UnixUser> me = security::CurrentUser();
    if (!me.ok()) return me.status();
    s->options_.auth.rm_user = me->name;
  }
  if (s->options_.auth.mode == rm::UserAuthentication::kMunge) {
    // Fail at start, not at the first client.
    absl::StatusOr<std::string> probe =
        security::MungeEncode(s->options_.auth.munge_socket, "weft-router-start");
    if (!probe.ok())
      return absl::FailedPreconditionError(
          absl::StrCat("the router authenticates users with MUNGE: ", probe.status().message()));
  }
  if (s->options_.tls.has_value() && s->options_.router.outbound_credentials == nullptr)
    s->options_.router.outbound_credentials = security::TlsChannelCredentials(*s->options_.tls);
  auto router = Router::Create(s->options_.router, store);
  if (!router.ok()) return router.status();
  s->router_ = *std::move(router);
  s->service_ = std::make_unique<Service>(s.get());
  absl::StatusOr<security::StartedGrpcServer> started = security::StartGrpcServer(
      "router", s->options_.bind_host, s->options_.port, s->options_.tls, {s->service_.get()});
  if (!started.ok()) return started.status();
  s->server_ = std::move(started->server);
  s->port_ = started->port;
  log::Info("router_started", {{"router", s->options_.router.router_id},
                               {"address", s->address()},
                               {"store", store->Describe()}});
  return s;
}

RouterServer::~RouterServer() { Shutdown(); }

std::string RouterServer::address() const { return absl::StrCat(options_.bind_host, ":", port_); }

absl::StatusOr<rm::Caller> RouterServer::Authenticate(const rm::Presented& presented) const {
  return rm::AuthenticateClient(options_.auth, presented);
}

void RouterServer::Shutdown() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
}

}  // namespace weft::federation
