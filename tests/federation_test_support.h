// Copyright Weft authors. What the in-process federation tests share (tests/federation_*_test.cc):
// a guard for gRPC's callback completion queue and an NM that starts every container.
#ifndef WEFT_TESTS_FEDERATION_TEST_SUPPORT_H_
#define WEFT_TESTS_FEDERATION_TEST_SUPPORT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::federation::testing_support {

// gRPC 1.51 runs callback-API calls (the RM's services and its AM launcher) on a shared
// completion queue whose threads stop when its last user goes. When that last user is an AM
// launch's channel released inside its own callback - after every RmServer of a test is gone -
// a thread of the queue tries to join itself and the process aborts (grpc/grpc#32584). A
// channel that made one callback call and lives until main() returns keeps the queue alive.
class KeepGrpcCallbackQueue final : public ::testing::Environment {
 public:
  void SetUp() override {
    channel_ = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
    auto stub = v1::ClientService::NewStub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(1));
    v1::GetClusterMetricsRequest req;
    v1::GetClusterMetricsResponse resp;
    absl::Notification done;
    stub->async()->GetClusterMetrics(&ctx, &req, &resp, [&](grpc::Status) { done.Notify(); });
    done.WaitForNotification();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
};

// A NodeManager that starts every container it is asked to (nothing runs).
class FakeNm final : public v1::ContainerService::Service {
 public:
  FakeNm() {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(this);
    server_ = b.BuildAndStart();
  }
  ~FakeNm() override { server_->Shutdown(); }
  std::string node_id() const { return absl::StrCat("127.0.0.1:", port_); }
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    for (int i = 0; i < req->requests_size(); ++i) resp->add_succeeded("ok");
    return grpc::Status::OK;
  }

 private:
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Registers `nm` with the RM at `rm_address` as a node of 8192 MB and 8 vcores.
inline grpc::Status RegisterFakeNm(const std::string& rm_address, const FakeNm& nm) {
  auto tracker = v1::TrackerService::NewStub(
      grpc::CreateChannel(rm_address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id(nm.node_id());
  (*reg.mutable_capability()->mutable_values())["memory-mb"] = 8192;
  (*reg.mutable_capability()->mutable_values())["vcores"] = 8;
  v1::RegisterNodeManagerResponse reg_resp;
  return tracker->RegisterNodeManager(&ctx, reg, &reg_resp);
}

}  // namespace weft::federation::testing_support

#endif  // WEFT_TESTS_FEDERATION_TEST_SUPPORT_H_
