// The RM's gRPC services end to end: a real RmServer on port 0, a fake NodeManager serving
// ContainerService, and the client and AM protocols over the wire.
#include "rm/rm_server.h"

#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/munge.h"
#include "security/test_munged.h"
#include "security/tls.h"
#include "security/user_identity.h"
#include "weft/v1/admin.grpc.pb.h"
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
    o.auth.mode = UserAuthentication::kDeclared;
    o.rm.pass_interval_ms = 20;
    o.bind_host = bind_host_;
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

  std::string bind_host_ = "127.0.0.1";  // set by a subclass's constructor
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

  const std::string token = started[0].launch_context().tokens().at("amrm");
  EXPECT_FALSE(env.contains("WEFT_AMRM_TOKEN"));  // never in the environment
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

  // The token is verified on the gRPC thread; one with a flipped password bit is refused,
  // with the loop's own reason.
  v1::Token forged;
  ASSERT_TRUE(forged.ParseFromString(token));
  forged.mutable_password()->at(0) ^= 1;
  grpc::ClientContext c5b;
  c5b.AddMetadata("weft-amrm-token-bin", forged.SerializeAsString());
  v1::AllocateResponse refused;
  st = am_->Allocate(&c5b, {}, &refused);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("bad signature"));

  grpc::ClientContext c6;
  v1::GetApplicationRequest get;
  get.set_application_id(app.application_id());
  v1::GetApplicationResponse report;
  ASSERT_TRUE(client_->GetApplication(&c6, get, &report).ok());
  EXPECT_EQ(report.report().state(), v1::APP_RUNNING);
  EXPECT_EQ(report.report().user(), "alice");
}

// An RM listening on every address (0.0.0.0) tells its AMs, which run on other hosts, this
// machine's host name, never the wildcard: an AM dialling 0.0.0.0 would reach its own host.
class RmServerOnEveryAddressTest : public RmServerTest {
 protected:
  RmServerOnEveryAddressTest() { bind_host_ = "0.0.0.0"; }
};

TEST_F(RmServerOnEveryAddressTest, AmsAreToldTheHostNameNotTheWildcard) {
  grpc::ClientContext c1;
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id(NodeId());
  (*reg.mutable_capability()->mutable_values())["memory-mb"] = 8192;
  (*reg.mutable_capability()->mutable_values())["vcores"] = 8;
  v1::RegisterNodeManagerResponse reg_resp;
  ASSERT_TRUE(tracker_->RegisterNodeManager(&c1, reg, &reg_resp).ok());
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
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_EQ(started[0].launch_context().environment().at("WEFT_RM_ADDRESS"),
            absl::StrCat(host, ":", rm_->port()));
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


// With TLS, TrackerService believes only the node its caller's certificate names: no
// certificate, or another node's, gets neither a registration nor the master keys.
TEST(RmServerTlsTest, NodesAreWhoTheirCertificatesSay) {
  char dir_template[] = "/tmp/weft-rm-tls-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  auto layout = security::EnsureDevTls(dir, {"127.0.0.1:1"});
  ASSERT_TRUE(layout.ok()) << layout.status();
  auto rm_files = security::LoadTlsFiles(layout->rm);
  auto nm_files = security::LoadTlsFiles(layout->nodes.at("127.0.0.1:1"));
  ASSERT_TRUE(rm_files.ok() && nm_files.ok());
  RmServerOptions o;
  o.auth.mode = UserAuthentication::kDeclared;
  o.tls = *rm_files;
  auto rm = RmServer::Start(std::move(o));
  ASSERT_TRUE(rm.ok()) << rm.status();
  const std::string address = absl::StrCat("127.0.0.1:", (*rm)->port());
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id("127.0.0.1:1");
  reg.mutable_capability();
  auto register_with = [&](std::shared_ptr<grpc::ChannelCredentials> credentials,
                           const std::string& node_id, v1::RegisterNodeManagerResponse* resp) {
    auto tracker = v1::TrackerService::NewStub(grpc::CreateChannel(address, credentials));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::RegisterNodeManagerRequest r = reg;
    r.set_node_id(node_id);
    return tracker->RegisterNodeManager(&ctx, r, resp);
  };
  // A plaintext caller cannot even connect.
  v1::RegisterNodeManagerResponse resp;
  EXPECT_EQ(register_with(grpc::InsecureChannelCredentials(), "127.0.0.1:1", &resp).error_code(),
            grpc::StatusCode::UNAVAILABLE);
  // TLS without a client certificate (what any local user can do): no node, no key.
  grpc::Status st = register_with(security::TlsChannelCredentials(nm_files->ca_pem), "127.0.0.1:1",
                                  &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("no client certificate"));
  EXPECT_FALSE(resp.has_container_key());
  // Node 1's certificate does not speak for node 2 (registration or heartbeat).
  st = register_with(security::TlsChannelCredentials(*nm_files), "127.0.0.1:2", &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("nm/127.0.0.1:1 may not speak for node '127.0.0.1:2'"));
  EXPECT_FALSE(resp.has_container_key());
  // Its own node: registered, with the keys.
  st = register_with(security::TlsChannelCredentials(*nm_files), "127.0.0.1:1", &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(resp.container_key().secret().empty());
  auto tracker =
      v1::TrackerService::NewStub(grpc::CreateChannel(address, security::TlsChannelCredentials(*nm_files)));
  grpc::ClientContext hb_ctx;
  v1::NodeHeartbeatRequest hb;
  hb.set_node_id("127.0.0.1:2");
  v1::NodeHeartbeatResponse hb_resp;
  st = tracker->NodeHeartbeat(&hb_ctx, hb, &hb_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // The RM's own certificate is no node's either.
  st = register_with(security::TlsChannelCredentials(*rm_files), "127.0.0.1:1", &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  (*rm)->Shutdown();
  std::filesystem::remove_all(dir);
}

// Users are authenticated by MUNGE (a private munged here); the admin secret makes an admin.
TEST(RmServerAuthTest, CallersAreAuthenticatedByMungeOrTheAdminSecret) {
  auto munged = security::TestMunged::Start();
  ASSERT_TRUE(munged.ok()) << munged.status();
  RmServerOptions o;
  o.client_secret = "s3cret";
  o.auth.munge_socket = (*munged)->socket();
  o.auth.rm_user = "weft-test-rm";  // so that this process's user is no admin
  auto rm = RmServer::Start(std::move(o));
  ASSERT_TRUE(rm.ok()) << rm.status();
  auto ch = grpc::CreateChannel((*rm)->address(), grpc::InsecureChannelCredentials());
  auto client = v1::ClientService::NewStub(ch);
  auto admin = v1::AdminService::NewStub(ch);
  auto munge = [&](grpc::ClientContext* ctx) {
    auto cred = security::MungeEncode((*munged)->socket(), kMungePayload);
    ASSERT_TRUE(cred.ok()) << cred.status();
    ctx->AddMetadata("weft-munge-cred", *cred);
  };
  const std::string me = security::CurrentUser()->name;
  v1::NewApplicationResponse app;
  grpc::ClientContext none;
  grpc::Status st = client->NewApplication(&none, {}, &app);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("carried no credential"));
  grpc::ClientContext wrong;
  wrong.AddMetadata("weft-secret", "guess");
  EXPECT_EQ(client->NewApplication(&wrong, {}, &app).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext forged;
  forged.AddMetadata("weft-munge-cred", "MUNGE:AwQFAAC5forged:");
  EXPECT_EQ(client->NewApplication(&forged, {}, &app).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext right;
  right.AddMetadata("weft-secret", "s3cret");
  ASSERT_TRUE(client->NewApplication(&right, {}, &app).ok());
  // The secret holder submits as "alice".
  grpc::ClientContext as_alice;
  as_alice.AddMetadata("weft-secret", "s3cret");
  as_alice.AddMetadata("weft-user", "alice");
  v1::SubmitApplicationRequest submit;
  submit.mutable_context()->set_application_id(app.application_id());
  submit.mutable_context()->mutable_am_container_spec()->add_command("true");
  v1::SubmitApplicationResponse submit_resp;
  st = client->SubmitApplication(&as_alice, submit, &submit_resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  // A MUNGE-authenticated user is who MUNGE says: declaring another is for proxy users only.
  grpc::ClientContext impersonate;
  munge(&impersonate);
  impersonate.AddMetadata("weft-user", "alice");
  v1::KillApplicationRequest kill;
  kill.set_application_id(app.application_id());
  v1::KillApplicationResponse kill_resp;
  st = client->KillApplication(&impersonate, kill, &kill_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("may not act as 'alice'"));
  // ... and may not kill alice's app as itself either.
  grpc::ClientContext cross;
  munge(&cross);
  st = client->KillApplication(&cross, kill, &kill_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("of user 'alice'"));
  // A replayed credential is refused.
  grpc::ClientContext first, replay;
  auto cred = security::MungeEncode((*munged)->socket(), kMungePayload);
  ASSERT_TRUE(cred.ok());
  first.AddMetadata("weft-munge-cred", *cred);
  replay.AddMetadata("weft-munge-cred", *cred);
  v1::GetApplicationRequest get;
  get.set_application_id(app.application_id());
  v1::GetApplicationResponse get_resp;
  ASSERT_TRUE(client->GetApplication(&first, get, &get_resp).ok());
  EXPECT_EQ(get_resp.report().user(), "alice");
  st = client->GetApplication(&replay, get, &get_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("Replayed"));
  // Admin calls: not for an ordinary user, fine for the secret holder.
  grpc::ClientContext refresh_user, refresh_admin;
  munge(&refresh_user);
  v1::RefreshNodesResponse refresh_resp;
  st = admin->RefreshNodes(&refresh_user, {}, &refresh_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("'" + me + "' is not a cluster admin"));
  refresh_admin.AddMetadata("weft-secret", "s3cret");
  st = admin->RefreshNodes(&refresh_admin, {}, &refresh_resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  // Node attributes steer placement: an admin call too (refused before it reads the request).
  grpc::ClientContext attrs_user;
  munge(&attrs_user);
  v1::NodeAttributesRequest attrs;
  (*attrs.add_mappings()->mutable_attributes())["os"] = "linux";
  v1::NodeAttributesResponse attrs_resp;
  st = admin->NodeAttributes(&attrs_user, attrs, &attrs_resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(st.error_message(), HasSubstr("'" + me + "' is not a cluster admin"));
  // The secret holder (an admin) may kill alice's app.
  grpc::ClientContext kill_admin;
  kill_admin.AddMetadata("weft-secret", "s3cret");
  EXPECT_TRUE(client->KillApplication(&kill_admin, kill, &kill_resp).ok());
  // NodeManagers are not clients: TrackerService takes no user credential.
  auto tracker = v1::TrackerService::NewStub(ch);
  grpc::ClientContext nm;
  v1::RegisterNodeManagerRequest reg;
  reg.set_node_id("127.0.0.1:1");
  v1::RegisterNodeManagerResponse reg_resp;
  EXPECT_TRUE(tracker->RegisterNodeManager(&nm, reg, &reg_resp).ok());
  grpc::ClientContext attempts_none;
  v1::GetApplicationAttemptsRequest attempts;
  v1::GetApplicationAttemptsResponse attempts_resp;
  EXPECT_EQ(client->GetApplicationAttempts(&attempts_none, attempts, &attempts_resp).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Refusals and successes are counted per method and code.
  const std::string text = (*rm)->metrics().Render();
  EXPECT_THAT(text, HasSubstr("weft_rm_rpc_requests_total{method=\"ClientService/NewApplication\","
                              "code=\"UNAUTHENTICATED\"} 3"));
  EXPECT_THAT(text, HasSubstr("weft_rm_rpc_duration_seconds_count{method=\"ClientService/"
                              "NewApplication\"} 4"));
  EXPECT_THAT(text, HasSubstr("weft_rm_scheduler_passes_total"));
}

// The finisher threads' count: refused outside -1 (auto) .. 64, naming the bound; 0 (the loop
// finishes its calls itself) serves calls as the default does.
TEST(RmServerFinishersTest, CountIsCheckedAndZeroStillServes) {
  for (int bad : {-2, 65}) {
    RmServerOptions o;
    o.auth.mode = UserAuthentication::kDeclared;
    o.call_finishers = bad;
    auto s = RmServer::Start(std::move(o));
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("must be -1 (auto), 0 (the loop) .. 64"));
  }
  RmServerOptions o;
  o.auth.mode = UserAuthentication::kDeclared;
  o.call_finishers = 0;
  auto s = RmServer::Start(std::move(o));
  ASSERT_TRUE(s.ok()) << s.status();
  auto client = v1::ClientService::NewStub(
      grpc::CreateChannel((*s)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("weft-user", "alice");
  v1::NewApplicationResponse app;
  grpc::Status st = client->NewApplication(&ctx, {}, &app);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(app.application_id().empty());
}

}  // namespace
}  // namespace weft::rm
