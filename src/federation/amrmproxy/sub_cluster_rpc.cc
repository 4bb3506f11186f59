// Copyright Weft authors.
#include "federation/amrmproxy/sub_cluster_rpc.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::amrmproxy {

GrpcSubClusterRpc::GrpcSubClusterRpc(GrpcSubClusterRpcOptions options)
    : options_(std::move(options)) {}

absl::Status GrpcSubClusterRpc::Call(
    const char* method, const std::string& rm,
    const std::function<void(grpc::ClientContext*)>& setup,
    const std::function<grpc::Status(const std::shared_ptr<grpc::Channel>&, grpc::ClientContext*)>&
        call) {
  size_t tries = 1;
  {
    absl::MutexLock lock(&mu_);
    Channels& list = lists_[rm];
    if (list.failover == nullptr) {
      absl::StatusOr<RmFailover> failover = RmFailover::Create(rm);
      if (!failover.ok()) {
        lists_.erase(rm);
        return absl::InvalidArgumentError(
            absl::StrCat(method, ": RM address list '", rm, "': ", failover.status().message()));
      }
      list.failover = std::make_unique<RmFailover>(*std::move(failover));
    }
    tries = list.failover->addresses().size();
  }
  absl::Status last;
  for (size_t i = 0; i < tries; ++i) {
    std::shared_ptr<grpc::Channel> channel;
    std::string address;
    {
      absl::MutexLock lock(&mu_);
      Channels& list = lists_[rm];
      address = list.failover->current();
      std::shared_ptr<grpc::Channel>& c = list.by_address[address];
      if (c == nullptr) {
        c = grpc::CreateCustomChannel(address, options_.credentials, FastReconnectChannelArgs());
      }
      channel = c;
    }
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(options_.call_timeout_ms));
    setup(&context);
    grpc::Status status = call(channel, &context);
    if (status.ok()) return absl::OkStatus();
    last = absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                        absl::StrCat(method, " at ", address, ": ", status.error_message()));
    absl::MutexLock lock(&mu_);
    if (lists_[rm].failover->OnFailure(status, ActiveRmHint(context)) == RmFailoverAction::kNone) {
      break;
    }
  }
  return last;
}

namespace {

auto TokenSetup(const v1::Token& token) {
  return [&token](grpc::ClientContext* c) {
    c->AddMetadata("weft-amrm-token-bin", token.SerializeAsString());
  };
}
auto UserSetup(const std::string& user) {
  return [&user](grpc::ClientContext* c) { c->AddMetadata("weft-user", user); };
}

}  // namespace

absl::StatusOr<v1::RegisterApplicationMasterResponse> GrpcSubClusterRpc::RegisterApplicationMaster(
    const std::string& rm, const v1::Token& token,
    const v1::RegisterApplicationMasterRequest& request) {
  v1::RegisterApplicationMasterResponse response;
  absl::Status s =
      Call("RegisterApplicationMaster", rm, TokenSetup(token),
           [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
             return v1::AmService::NewStub(ch)->RegisterApplicationMaster(c, request, &response);
           });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<v1::AllocateResponse> GrpcSubClusterRpc::Allocate(
    const std::string& rm, const v1::Token& token, const v1::AllocateRequest& request) {
  v1::AllocateResponse response;
  // A long poll: the RM may hold the call up to wait_ms before it answers.
  auto setup = [&token, &request, this](grpc::ClientContext* c) {
    TokenSetup(token)(c);
    if (request.wait_ms() > 0)
      c->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(options_.call_timeout_ms + request.wait_ms()));
  };
  absl::Status s = Call("Allocate", rm, setup,
                        [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
                          return v1::AmService::NewStub(ch)->Allocate(c, request, &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> GrpcSubClusterRpc::FinishApplicationMaster(
    const std::string& rm, const v1::Token& token,
    const v1::FinishApplicationMasterRequest& request) {
  v1::FinishApplicationMasterResponse response;
  absl::Status s =
      Call("FinishApplicationMaster", rm, TokenSetup(token),
           [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
             return v1::AmService::NewStub(ch)->FinishApplicationMaster(c, request, &response);
           });
  if (!s.ok()) return s;
  return response;
}

absl::StatusOr<v1::NewApplicationResponse> GrpcSubClusterRpc::NewApplication(
    const std::string& rm, const std::string& user) {
  v1::NewApplicationResponse response;
  absl::Status s = Call("NewApplication", rm, UserSetup(user),
                        [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
                          return v1::ClientService::NewStub(ch)->NewApplication(
                              c, v1::NewApplicationRequest(), &response);
                        });
  if (!s.ok()) return s;
  return response;
}

absl::Status GrpcSubClusterRpc::SubmitApplication(const std::string& rm, const std::string& user,
                                                  const v1::ApplicationSubmissionContext& context) {
  v1::SubmitApplicationRequest request;
  *request.mutable_context() = context;
  v1::SubmitApplicationResponse response;
  return Call("SubmitApplication", rm, UserSetup(user),
              [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
                return v1::ClientService::NewStub(ch)->SubmitApplication(c, request, &response);
              });
}

absl::StatusOr<v1::ApplicationReport> GrpcSubClusterRpc::GetApplication(
    const std::string& rm, const std::string& user, const std::string& application_id) {
  v1::GetApplicationRequest request;
  request.set_application_id(application_id);
  v1::GetApplicationResponse response;
  absl::Status s =
      Call("GetApplication", rm, UserSetup(user),
           [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
             return v1::ClientService::NewStub(ch)->GetApplication(c, request, &response);
           });
  if (!s.ok()) return s;
  return response.report();
}

absl::Status GrpcSubClusterRpc::KillApplication(const std::string& rm, const std::string& user,
                                                const std::string& application_id,
                                                const std::string& diagnostics) {
  v1::KillApplicationRequest request;
  request.set_application_id(application_id);
  request.set_diagnostics(diagnostics);
  v1::KillApplicationResponse response;
  return Call("KillApplication", rm, UserSetup(user),
              [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
                return v1::ClientService::NewStub(ch)->KillApplication(c, request, &response);
              });
}

absl::StatusOr<std::vector<v1::NodeReport>> GrpcSubClusterRpc::ListNodes(const std::string& rm,
                                                                         const std::string& user) {
  v1::ListNodesResponse response;
  absl::Status s =
      Call("ListNodes", rm, UserSetup(user),
           [&](const std::shared_ptr<grpc::Channel>& ch, grpc::ClientContext* c) {
             return v1::ClientService::NewStub(ch)->ListNodes(c, v1::ListNodesRequest(), &response);
           });
  if (!s.ok()) return s;
  return std::vector<v1::NodeReport>(response.nodes().begin(), response.nodes().end());
}

}  // namespace weft::amrmproxy
