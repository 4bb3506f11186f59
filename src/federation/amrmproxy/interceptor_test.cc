// Copyright Weft authors. The AMRMProxy's chain, its default and throttle interceptors, the
// proxy token and the AmService it serves, against fake RMs.
#include "federation/amrmproxy/interceptor.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "federation/amrmproxy/amrm_proxy_service.h"
#include "federation/amrmproxy/default_interceptor.h"
#include "federation/amrmproxy/fake_sub_cluster_rpc_test_util.h"
#include "federation/amrmproxy/proxy_token.h"
#include "federation/amrmproxy/throttle_interceptor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::amrmproxy {
namespace {

using ::testing::ElementsAre;
using testing::FakeSubClusterRpc;
using ::testing::HasSubstr;
using testing::MakeAsk;
using testing::MakeContainer;

constexpr char kHomeRm[] = "127.0.0.1:8032";
constexpr char kAttempt[] = "appattempt_1700000000000_0001_000001";
constexpr char kApp[] = "application_1700000000000_0001";

v1::Token RealAmrmToken(const std::string& attempt = kAttempt) {
  security::MasterKey key;
  key.id = 1;
  key.secret = std::string(32, 'k');
  key.expires_ms = 1LL << 50;
  security::Token t = security::IssueAmRmToken({attempt, 0, 1LL << 50}, key);
  v1::Token token;
  token.set_identifier(t.identifier);
  token.set_password(t.password);
  token.set_kind("AMRMToken");
  return token;
}

AttemptContext Attempt() {
  AttemptContext a;
  a.application_id = kApp;
  a.attempt_id = kAttempt;
  a.user = "alice";
  a.am_container_id = "container_e0_1700000000000_0001_01_000001";
  a.home_rm_address = kHomeRm;
  a.amrm_token = RealAmrmToken();
  return a;
}

// --- The chain.

TEST(InterceptorListTest, ValidListsAndTheDefaults) {
  EXPECT_TRUE(ValidateInterceptorList({"default"}, false).ok());
  EXPECT_TRUE(ValidateInterceptorList({"throttle", "default"}, false).ok());
  EXPECT_TRUE(ValidateInterceptorList({"throttle", "federation"}, true).ok());
  EXPECT_THAT(DefaultInterceptorList(false), ElementsAre("default"));
  EXPECT_THAT(DefaultInterceptorList(true), ElementsAre("throttle", "federation"));
}

TEST(InterceptorListTest, BadListsAreRefusedNamingTheEntry) {
  auto refused = [](std::vector<std::string> names, bool federation, const char* says) {
    absl::Status s = ValidateInterceptorList(names, federation);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(says));
  };
  refused({}, false, "empty");
  refused({"bogus", "default"}, false, "unknown interceptor 'bogus'");
  refused({"throttle", "throttle", "default"}, false, "listed twice");
  refused({"default", "throttle"}, false, "must be the last step");
  refused({"throttle"}, false, "the last step must be default or federation");
  refused({"default", "federation"}, true, "must be the last step");
  refused({"federation"}, false, "needs a federation");
}

TEST(InterceptorChainTest, BuildsInOrderAndForwards) {
  FakeSubClusterRpc rpc;
  InterceptorEnvironment env;
  env.rpc = &rpc;
  env.now_ms = [] { return int64_t{0}; };
  auto chain = BuildInterceptorChain({"throttle", "default"}, Attempt(), env);
  ASSERT_TRUE(chain.ok()) << chain.status();
  EXPECT_EQ((*chain)->name(), "throttle");
  ASSERT_NE((*chain)->next(), nullptr);
  EXPECT_EQ((*chain)->next()->name(), "default");
  EXPECT_EQ((*chain)->next()->next(), nullptr);
  ASSERT_TRUE((*chain)->RegisterApplicationMaster({}).ok());
  v1::AllocateRequest req;
  *req.add_asks() = MakeAsk(2);
  auto reply = (*chain)->Allocate(req);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->response_id(), 1);
  ASSERT_EQ(rpc.rm(kHomeRm).allocates.size(), 1u);
  EXPECT_EQ(rpc.rm(kHomeRm).allocates[0].asks(0).num_containers(), 2);
  // With the RM's real token, never the proxy's.
  EXPECT_EQ(rpc.rm(kHomeRm).tokens_used.back(), Attempt().amrm_token.identifier());
}

// --- The default interceptor.

TEST(DefaultInterceptorTest, PassesThroughAndKeepsARolledToken) {
  FakeSubClusterRpc rpc;
  DefaultInterceptor step(Attempt(), &rpc);
  ASSERT_TRUE(step.RegisterApplicationMaster({}).ok());
  v1::AllocateResponse rolled;
  rolled.mutable_amrm_token()->set_identifier("rolled");
  *rolled.add_allocated_containers() = MakeContainer("c1", "n1:1", kHomeRm);
  rpc.rm(kHomeRm).replies.push_back(rolled);
  v1::AllocateRequest req;
  auto reply = step.Allocate(req);
  ASSERT_TRUE(reply.ok());
  EXPECT_FALSE(reply->has_amrm_token()) << "the AM keeps its proxy token";
  EXPECT_EQ(reply->allocated_containers_size(), 1);
  EXPECT_EQ(step.amrm_token().identifier(), "rolled");
  req.set_response_id(reply->response_id());
  ASSERT_TRUE(step.Allocate(req).ok());
  EXPECT_EQ(rpc.rm(kHomeRm).tokens_used.back(), "rolled");
  // The RM's response_id protocol reaches the AM as it is: a repeated id, the same reply.
  auto again = step.Allocate(req);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->response_id(), 2);
  EXPECT_EQ(rpc.rm(kHomeRm).allocates.size(), 2u);
  v1::FinishApplicationMasterRequest finish;
  finish.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(step.FinishApplicationMaster(finish).ok());
  EXPECT_EQ(rpc.rm(kHomeRm).finishes.size(), 1u);
}

TEST(DefaultInterceptorTest, TheRmsErrorIsTheAmsError) {
  FakeSubClusterRpc rpc;
  DefaultInterceptor step(Attempt(), &rpc);
  rpc.rm(kHomeRm).fail_allocates = 1;
  auto reply = step.Allocate({});
  EXPECT_TRUE(absl::IsUnavailable(reply.status())) << reply.status();
}

// --- The throttle.

class ThrottleTest : public ::testing::Test {
 protected:
  std::unique_ptr<ThrottleInterceptor> Make(ThrottleOptions options) {
    auto throttle =
        std::make_unique<ThrottleInterceptor>(Attempt(), options, [this] { return now_ms_; });
    throttle->SetNext(std::make_unique<DefaultInterceptor>(Attempt(), &rpc_));
    EXPECT_TRUE(throttle->RegisterApplicationMaster({}).ok());
    return throttle;
  }
  // One Allocate continuing the AM's sequence.
  v1::AllocateResponse Call(ThrottleInterceptor& t, std::vector<v1::ResourceRequest> asks) {
    v1::AllocateRequest req;
    req.set_response_id(response_id_);
    for (auto& a : asks) *req.add_asks() = a;
    auto reply = t.Allocate(req);
    EXPECT_TRUE(reply.ok()) << reply.status();
    response_id_ = reply->response_id();
    return *reply;
  }
  const v1::AllocateRequest& LastSent() { return rpc_.rm(kHomeRm).allocates.back(); }

  FakeSubClusterRpc rpc_;
  int64_t now_ms_ = 1'000'000;
  int32_t response_id_ = 0;
};

TEST_F(ThrottleTest, WithoutLimitsEverythingPasses) {
  auto t = Make({});
  v1::AllocateResponse reply = Call(*t, {MakeAsk(1000), MakeAsk(3, "node1")});
  EXPECT_EQ(reply.diagnostics_size(), 0);
  ASSERT_EQ(LastSent().asks_size(), 2);
  EXPECT_EQ(t->violations(), 0);
}

TEST_F(ThrottleTest, OutstandingAsksAreTrimmedInPriorityOrderWithADiagnostic) {
  ThrottleOptions options;
  options.max_outstanding_containers = 5;
  auto t = Make(options);
  v1::AllocateResponse reply =
      Call(*t, {MakeAsk(4, "*", 1024, /*priority=*/2), MakeAsk(3, "*", 1024, /*priority=*/1),
                MakeAsk(3, "node1", 1024, 1)});
  ASSERT_EQ(reply.diagnostics_size(), 1);
  EXPECT_THAT(reply.diagnostics(0), HasSubstr("trimmed from 7 containers"));
  EXPECT_THAT(reply.diagnostics(0), HasSubstr("to 5 containers"));
  std::map<int, int> any_counts;
  int node_count = 0;
  for (const auto& a : LastSent().asks()) {
    if (a.resource_name() == "*") any_counts[a.priority()] = a.num_containers();
    if (a.resource_name() == "node1") node_count = a.num_containers();
  }
  EXPECT_EQ(any_counts[1], 3);  // the most urgent whole
  EXPECT_EQ(any_counts[2], 2);  // the rest of the room
  EXPECT_EQ(node_count, 3);     // node asks pass: the `*` count bounds them
  EXPECT_EQ(t->violations(), 1);
  // Room frees when the AM asks for less: the trimmed ask grows back.
  reply = Call(*t, {MakeAsk(1, "*", 1024, 1)});
  EXPECT_EQ(reply.diagnostics_size(), 0);
  any_counts.clear();
  for (const auto& a : LastSent().asks()) any_counts[a.priority()] = a.num_containers();
  EXPECT_EQ(any_counts[1], 1);
  EXPECT_EQ(any_counts[2], 4);
  EXPECT_EQ(t->violations(), 0);
}

TEST_F(ThrottleTest, MemoryAndLifeQuotas) {
  ThrottleOptions options;
  options.max_outstanding_memory_mb = 4096;
  options.max_total_containers = 3;
  auto t = Make(options);
  Call(*t, {MakeAsk(10, "*", 2048)});
  EXPECT_EQ(LastSent().asks(0).num_containers(), 2);  // 4096 MB / 2048
  // Two are allocated: one more may ever be.
  v1::AllocateResponse two;
  *two.add_allocated_containers() = MakeContainer("c1", "n:1", kHomeRm);
  *two.add_allocated_containers() = MakeContainer("c2", "n:1", kHomeRm);
  rpc_.rm(kHomeRm).replies.push_back(two);
  Call(*t, {});
  Call(*t, {MakeAsk(10, "*", 2048)});
  EXPECT_EQ(LastSent().asks(0).num_containers(), 1);
}

TEST_F(ThrottleTest, CallsAboveTheRateAreHeldAndSentWithTheNextOne) {
  ThrottleOptions options;
  options.max_allocates_per_second = 1;
  auto t = Make(options);
  Call(*t, {MakeAsk(1)});
  ASSERT_EQ(rpc_.rm(kHomeRm).allocates.size(), 1u);
  // Same instant: held, answered here with the AM's own id.
  const int32_t before = response_id_;
  v1::AllocateRequest req;
  req.set_response_id(response_id_);
  *req.add_asks() = MakeAsk(4);
  req.add_releases("c9");
  auto held = t->Allocate(req);
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->response_id(), before);
  ASSERT_EQ(held->diagnostics_size(), 1);
  EXPECT_THAT(held->diagnostics(0), HasSubstr("held"));
  EXPECT_EQ(rpc_.rm(kHomeRm).allocates.size(), 1u);
  // A second later the next call carries what was held.
  now_ms_ += 1000;
  Call(*t, {MakeAsk(2, "node7")});
  ASSERT_EQ(rpc_.rm(kHomeRm).allocates.size(), 2u);
  const v1::AllocateRequest& sent = LastSent();
  EXPECT_EQ(sent.response_id(), before);
  EXPECT_THAT(sent.releases(), ElementsAre("c9"));
  EXPECT_EQ(sent.asks_size(), 2);
}

TEST_F(ThrottleTest, APersistentlyMisbehavingAmIsShutDownAndItsAppFinishedFailed) {
  ThrottleOptions options;
  options.max_outstanding_containers = 2;
  options.max_violations = 3;
  auto t = Make(options);
  Call(*t, {MakeAsk(100)});
  Call(*t, {MakeAsk(100)});
  EXPECT_EQ(rpc_.rm(kHomeRm).finishes.size(), 0u);
  v1::AllocateResponse last = Call(*t, {MakeAsk(100)});
  EXPECT_EQ(last.am_command(), v1::AM_SHUTDOWN);
  EXPECT_TRUE(t->killed());
  ASSERT_EQ(rpc_.rm(kHomeRm).finishes.size(), 1u);
  EXPECT_EQ(rpc_.rm(kHomeRm).finishes[0].final_status(), v1::FINAL_FAILED);
  EXPECT_THAT(rpc_.rm(kHomeRm).finishes[0].diagnostics(), HasSubstr("throttle"));
  EXPECT_EQ(Call(*t, {}).am_command(), v1::AM_SHUTDOWN);
  EXPECT_EQ(rpc_.rm(kHomeRm).allocates.size(), 2u);  // the killing call was not forwarded
}

// --- The proxy token.

TEST(ProxyTokenTest, ValidOnlyAtItsOwnNm) {
  ProxyTokenSecretManager mine(std::string(32, 'a'), "node1:45454");
  ProxyTokenSecretManager other(std::string(32, 'b'), "node2:45454");
  v1::Token token = mine.Issue(kAttempt);
  EXPECT_EQ(token.kind(), kProxyTokenKind);
  auto attempt = mine.Verify(token);
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  EXPECT_EQ(*attempt, kAttempt);
  auto elsewhere = other.Verify(token);
  EXPECT_TRUE(absl::IsPermissionDenied(elsewhere.status()));
  EXPECT_THAT(std::string(elsewhere.status().message()), HasSubstr("node1:45454"));
  // Same node id, another key (a restarted NM, or a forger).
  ProxyTokenSecretManager forger(std::string(32, 'c'), "node1:45454");
  EXPECT_TRUE(absl::IsPermissionDenied(forger.Verify(token).status()));
  v1::Token changed = token;
  changed.set_identifier(
      absl::StrCat("weft-amrmproxy/1\nnode1:45454\n", "appattempt_1_0002_000001"));
  EXPECT_THAT(std::string(mine.Verify(changed).status().message()), HasSubstr("bad signature"));
  EXPECT_TRUE(absl::IsUnauthenticated(mine.Verify(v1::Token()).status()));
  EXPECT_TRUE(absl::IsPermissionDenied(mine.Verify(RealAmrmToken()).status()));
}

// --- The service on a real gRPC server.

class AmrmProxyServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rpc_ = std::make_shared<FakeSubClusterRpc>();
    AmrmProxyOptions options;
    options.rpc = rpc_;
    auto proxy = AmrmProxyService::Create(options, nullptr);
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    proxy_ = *std::move(proxy);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(proxy_->service());
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    address_ = absl::StrCat("127.0.0.1:", port);
    proxy_->Start(address_);
    stub_ =
        v1::AmService::NewStub(grpc::CreateChannel(address_, grpc::InsecureChannelCredentials()));
  }
  void TearDown() override {
    server_->Shutdown();
    proxy_->Shutdown();
  }
  grpc::Status Register(const v1::Token* token) {
    grpc::ClientContext ctx;
    if (token != nullptr) ctx.AddMetadata("weft-amrm-token-bin", token->SerializeAsString());
    v1::RegisterApplicationMasterResponse resp;
    return stub_->RegisterApplicationMaster(&ctx, {}, &resp);
  }

  std::shared_ptr<FakeSubClusterRpc> rpc_;
  std::unique_ptr<AmrmProxyService> proxy_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<v1::AmService::Stub> stub_;
};

TEST_F(AmrmProxyServiceTest, ServesTheAttemptsItLaunchedAndRefusesOthers) {
  auto token = proxy_->AddAttempt(Attempt());
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(proxy_->num_attempts(), 1u);
  grpc::Status ok = Register(&*token);
  EXPECT_TRUE(ok.ok()) << ok.error_message();
  EXPECT_EQ(rpc_->rm(kHomeRm).registrations.size(), 1u);
  EXPECT_EQ(rpc_->rm(kHomeRm).tokens_used.back(), Attempt().amrm_token.identifier());

  EXPECT_EQ(Register(nullptr).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  v1::Token real = RealAmrmToken();
  EXPECT_EQ(Register(&real).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ProxyTokenSecretManager other_nm(std::string(32, 'x'), "other:1");
  v1::Token foreign = other_nm.Issue(kAttempt);
  EXPECT_EQ(Register(&foreign).error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // A second launch of the same attempt is refused; a token for another app is refused.
  EXPECT_TRUE(absl::IsAlreadyExists(proxy_->AddAttempt(Attempt()).status()));
  AttemptContext wrong = Attempt();
  wrong.application_id = "application_1700000000000_0002";
  EXPECT_TRUE(absl::IsInvalidArgument(proxy_->AddAttempt(wrong).status()));

  // The AM container ended: its token is refused from now on.
  proxy_->RemoveAttemptOfContainer(Attempt().am_container_id);
  EXPECT_EQ(proxy_->num_attempts(), 0u);
  EXPECT_EQ(Register(&*token).error_code(), grpc::StatusCode::PERMISSION_DENIED);
}

// AMRMProxy recovery (YARN-6127): a proxy that dies without a word (its NM killed -9) and a new
// one over the same state store: the AM's proxy token still verifies, its attempt is served
// again with the RM's token (no new attempt), and an attempt whose AM did not outlive the
// restart is ended.
TEST(AmrmProxyRecoveryTest, ARestartedProxyServesTheAttemptsWhoseAmsStillRun) {
  auto rpc = std::make_shared<FakeSubClusterRpc>();
  testing::MemoryAmrmProxyStateStore state;
  AmrmProxyOptions options;
  options.rpc = rpc;
  options.state_store = &state;
  const std::string node_id = "node1:45454";
  AttemptContext gone = Attempt();
  gone.attempt_id = "appattempt_1700000000000_0001_000002";
  gone.am_container_id = "container_e1_1700000000000_0001_02_000001";
  v1::Token token;
  {
    auto first = AmrmProxyService::Create(options, nullptr);
    ASSERT_TRUE(first.ok()) << first.status();
    (*first)->Start(node_id);
    auto issued = (*first)->AddAttempt(Attempt());
    ASSERT_TRUE(issued.ok()) << issued.status();
    token = *issued;
    AttemptContext other = gone;
    other.amrm_token = RealAmrmToken(other.attempt_id);
    ASSERT_TRUE((*first)->AddAttempt(other).ok());
    // Shutdown() drops attempts without a word to the RMs or the store, as a crash does.
  }
  ASSERT_TRUE(state.Get(kAttempt).has_value());

  auto proxy = AmrmProxyService::Create(options, nullptr);
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  ASSERT_TRUE((*proxy)
                  ->Recover([&](const std::string& container) {
                    return container == Attempt().am_container_id;
                  })
                  .ok());
  EXPECT_EQ((*proxy)->num_attempts(), 1u);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService((*proxy)->service());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(port, 0);
  (*proxy)->Start(node_id);
  auto stub = v1::AmService::NewStub(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                                         grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.AddMetadata("weft-amrm-token-bin", token.SerializeAsString());
  v1::RegisterApplicationMasterResponse response;
  grpc::Status registered = stub->RegisterApplicationMaster(&ctx, {}, &response);
  EXPECT_TRUE(registered.ok()) << registered.error_message();
  EXPECT_EQ(rpc->rm(kHomeRm).registrations.size(), 1u);
  EXPECT_EQ(rpc->rm(kHomeRm).tokens_used.back(), Attempt().amrm_token.identifier());
  // The attempt whose AM container is gone was ended (its record goes once its app is cleaned
  // up here).
  (*proxy)->RemoveApplication(Attempt().application_id);
  server->Shutdown();
  (*proxy)->Shutdown();
  EXPECT_FALSE(state.Get(gone.attempt_id).has_value());
  EXPECT_FALSE(state.Get(kAttempt).has_value());
}

TEST(AmrmProxyOptionsTest, BadOptionsAreRefused) {
  AmrmProxyOptions o;
  o.sub_cluster_id = "sc1";
  EXPECT_THAT(std::string(ValidateAmrmProxyOptions(o).message()), HasSubstr("federation store"));
  o = {};
  o.interceptors = {"federation"};
  EXPECT_THAT(std::string(ValidateAmrmProxyOptions(o).message()), HasSubstr("needs a federation"));
  o = {};
  o.throttle.max_outstanding_containers = -1;
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateAmrmProxyOptions(o)));
  EXPECT_TRUE(ValidateAmrmProxyOptions({}).ok());
}

}  // namespace
}  // namespace weft::amrmproxy
