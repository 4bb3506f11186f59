// The RM's gRPC services end to end: a real RmServer on port 0, a fake NodeManager serving
// ContainerService, and the client and AM protocols over the wire.
#include "rm/rm_server.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/escaping.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

// Records the containers the RM asks it to start.
class FakeContainerService final : public v1::ContainerService::Service {
 public:
  grpc::Status StartContainers(grpc::ServerContext*, const v1::StartContainersRequest* req,
                               v1::StartContainersResponse* resp) override {
    absl::MutexLock l(&mu_);
    for (const auto& r : req->requests()) {
      started_.push_back(r);
      resp->add_succeeded("ok");
    }
    return grpc::Status::OK;
  }
  // Waits (bounded) until `n` containers were started; returns them.
  std::vector<v1::StartContainerRequest> WaitFor(size_t n) {
    absl::MutexLock l(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return started_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(20));
    return started_;
  }

 private:
  absl::Mutex mu_;
  std::vector<v1::StartContainerRequest> started_ ABSL_GUARDED_BY(mu_);
};

class RmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    RmServerOptions o;
    o.rm.pass_interval_ms = 20;
    auto s = RmServer::Start(std::move(o));
    ASSERT_TRUE(s.ok()) << s.status();
    rm_ = std::move(*s);
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &nm_port_);
    b.RegisterService(&nm_);
    nm_server_ = b.BuildAndStart();
    ASSERT_NE(nm_port_, 0);
    auto ch = grpc::CreateChannel(rm_->address(), grpc::InsecureChannelCredentials());
    client_ = v1::ClientService::NewStub(ch);
    am_ = v1::AmService::NewStub(ch);
    tracker_ = v1::TrackerService::NewStub(ch);
  }
  void TearDown() override {
    if (nm_server_) nm_server_->Shutdown();
    rm_.reset();
  }
  std::string NodeId() const { return "127.0.0.1:" + std::to_string(nm_port_); }

  std::unique_ptr<RmServer> rm_;
  FakeContainerService nm_;
  std::unique_ptr<grpc::Server> nm_server_;
  int nm_port_ = 0;
  std::unique_ptr<v1::ClientService::Stub> client_;
  std::unique_ptr<v1::AmService::Stub> am_;
  std::unique_ptr<v1::TrackerService::Stub> tracker_;
};

TEST_F(RmServerTest, SubmitLaunchesTheAmWhichRegistersAndAllocates) {
  grpc::ClientContext c1;
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id(NodeId());
  (*reg.mutable_capability()->mutable_values())["memory-mb"] = 8192;
  (*reg.mutable_capability()->mutable_values())["vcores"] = 8;
  v1::RegisterNodeManagerResponse reg_resp;
  ASSERT_TRUE(tracker_->RegisterNodeManager(&c1, reg, &reg_resp).ok());
  EXPECT_EQ(reg_resp.rm_epoch(), 1);
  EXPECT_FALSE(reg_resp.container_key().secret().empty());

  grpc::ClientContext c2;
  v1::NewApplicationResponse app;
  ASSERT_TRUE(client_->NewApplication(&c2, {}, &app).ok());
  grpc::ClientContext c3;
  c3.AddMetadata("weft-user", "alice");
  v1::SubmitApplicationRequest sub;
  sub.mutable_context()->set_application_id(app.application_id());
  sub.mutable_context()->mutable_am_container_spec()->add_command("sleep 100");
  v1::SubmitApplicationResponse sub_resp;
  ASSERT_TRUE(client_->SubmitApplication(&c3, sub, &sub_resp).ok());

  auto started = nm_.WaitFor(1);
  ASSERT_EQ(started.size(), 1u);
  const auto& env = started[0].launch_context().environment();
  EXPECT_EQ(env.at("WEFT_APPLICATION_ID"), app.application_id());
  EXPECT_EQ(env.at("WEFT_RM_ADDRESS"), rm_->address());

  std::string token;
  ASSERT_TRUE(absl::Base64Unescape(env.at("WEFT_AMRM_TOKEN"), &token));
  grpc::ClientContext c4;
  c4.AddMetadata("weft-amrm-token-bin", token);
  v1::RegisterApplicationMasterResponse am_reg;
  grpc::Status st = am_->RegisterApplicationMaster(&c4, {}, &am_reg);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(am_reg.queue(), "default");

  grpc::ClientContext c5;
  c5.AddMetadata("weft-amrm-token-bin", token);
  v1::AllocateResponse alloc;
  ASSERT_TRUE(am_->Allocate(&c5, {}, &alloc).ok());
  EXPECT_EQ(alloc.response_id(), 1);
  EXPECT_EQ(alloc.num_cluster_nodes(), 1);

  grpc::ClientContext c6;
  v1::GetApplicationRequest get;
  get.set_application_id(app.application_id());
  v1::GetApplicationResponse report;
  ASSERT_TRUE(client_->GetApplication(&c6, get, &report).ok());
  EXPECT_EQ(report.report().state(), v1::APP_RUNNING);
  EXPECT_EQ(report.report().user(), "alice");
}

TEST_F(RmServerTest, ErrorsMapToGrpcCodes) {
  grpc::ClientContext c1;
  v1::GetApplicationRequest get;
  get.set_application_id("application_0_0001");
  v1::GetApplicationResponse resp;
  grpc::Status st = client_->GetApplication(&c1, get, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("not found"));

  grpc::ClientContext c2;
  v1::NewApplicationResponse app;
  ASSERT_TRUE(client_->NewApplication(&c2, {}, &app).ok());
  grpc::ClientContext c3;
  v1::SubmitApplicationRequest sub;
  sub.mutable_context()->set_application_id(app.application_id());
  sub.mutable_context()->set_queue("nosuch");
  sub.mutable_context()->mutable_am_container_spec()->add_command("true");
  v1::SubmitApplicationResponse sub_resp;
  st = client_->SubmitApplication(&c3, sub, &sub_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(st.error_message(), HasSubstr("unknown queue 'nosuch'"));

  grpc::ClientContext c4;
  v1::AllocateResponse alloc;
  st = am_->Allocate(&c4, {}, &alloc);  // no token at all
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);

  grpc::ClientContext c5;
  v1::RegisterNodeManagerRequest bad;
  bad.set_node_id("no-port");
  v1::RegisterNodeManagerResponse reg_resp;
  st = tracker_->RegisterNodeManager(&c5, bad, &reg_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
}

TEST(RmServerSecretTest, ClientAndAdminCallsNeedTheSecretWhenConfigured) {
  RmServerOptions o;
  o.client_secret = "s3cret";
  auto rm = RmServer::Start(std::move(o));
  ASSERT_TRUE(rm.ok()) << rm.status();
  auto ch = grpc::CreateChannel((*rm)->address(), grpc::InsecureChannelCredentials());
  auto client = v1::ClientService::NewStub(ch);
  v1::NewApplicationResponse app;
  grpc::ClientContext none;
  grpc::Status st = client->NewApplication(&none, {}, &app);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("requires a client secret"));
  grpc::ClientContext wrong;
  wrong.AddMetadata("weft-secret", "guess");
  EXPECT_EQ(client->NewApplication(&wrong, {}, &app).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext right;
  right.AddMetadata("weft-secret", "s3cret");
  EXPECT_TRUE(client->NewApplication(&right, {}, &app).ok());
  // NodeManagers are not clients: TrackerService does not take the secret.
  auto tracker = v1::TrackerService::NewStub(ch);
  grpc::ClientContext nm;
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id("127.0.0.1:1");
  v1::RegisterNodeManagerResponse reg_resp;
  EXPECT_TRUE(tracker->RegisterNodeManager(&nm, reg, &reg_resp).ok());
  // Writes need it too: submitting and killing without the secret are refused.
  grpc::ClientContext submit_none;
  v1::SubmitApplicationRequest submit;
  submit.mutable_context()->set_application_id(app.application_id());
  v1::SubmitApplicationResponse submit_resp;
  EXPECT_EQ(client->SubmitApplication(&submit_none, submit, &submit_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext kill_none;
  v1::KillApplicationRequest kill;
  kill.set_application_id(app.application_id());
  v1::KillApplicationResponse kill_resp;
  EXPECT_EQ(client->KillApplication(&kill_none, kill, &kill_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext attempts_none;
  v1::GetApplicationAttemptsRequest attempts;
  v1::GetApplicationAttemptsResponse attempts_resp;
  EXPECT_EQ(client->GetApplicationAttempts(&attempts_none, attempts, &attempts_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Refusals and successes are counted per method and code.
  const std::string text = (*rm)->metrics().Render();
  EXPECT_THAT(text, HasSubstr("weft_rm_rpc_requests_total{method=\"ClientService/NewApplication\","
                              "code=\"UNAUTHENTICATED\"} 2"));
  EXPECT_THAT(text, HasSubstr("weft_rm_rpc_duration_seconds_count{method=\"ClientService/"
                              "NewApplication\"} 3"));
  EXPECT_THAT(text, HasSubstr("weft_rm_scheduler_passes_total"));
}

}  // namespace
}  // namespace weft::rm
