// Copyright Weft authors. The CLI's RmClient against fake ClientServices on 127.0.0.1 (real
// gRPC, plaintext, the admin secret as credentials): following a standby's hint, round robin
// past a stopped RM, the RM's own answers not failing over, one RM tried once as before HA,
// the error naming every RM tried, and a retried submission found already applied.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cli/cli_common.h"
#include "common/rm_failover.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::cli {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// An RM's ClientService as far as these tests go: ListNodes and SubmitApplication.
class FakeClientService final : public v1::ClientService::Service {
 public:
  // An active RM answers; a standby answers UNAVAILABLE naming `active` ("" = none known).
  static std::unique_ptr<FakeClientService> Active() {
    return std::unique_ptr<FakeClientService>(new FakeClientService(false, ""));
  }
  static std::unique_ptr<FakeClientService> Standby(std::string active) {
    return std::unique_ptr<FakeClientService>(new FakeClientService(true, std::move(active)));
  }

  grpc::Status ListNodes(grpc::ServerContext* ctx, const v1::ListNodesRequest*,
                         v1::ListNodesResponse* resp) override {
    absl::MutexLock lock(&mu);
    ++calls;
    if (standby_) return Refuse(ctx);
    if (answer.error_code() != grpc::StatusCode::OK) return answer;
    resp->add_nodes()->set_node_id("n1:1");
    return grpc::Status::OK;
  }
  grpc::Status SubmitApplication(grpc::ServerContext* ctx, const v1::SubmitApplicationRequest* req,
                                 v1::SubmitApplicationResponse*) override {
    absl::MutexLock lock(&mu);
    ++calls;
    if (standby_) return Refuse(ctx);
    if (!submitted.insert(req->context().application_id()).second)
      return grpc::Status(grpc::StatusCode::ALREADY_EXISTS, "application was already submitted");
    return grpc::Status::OK;
  }

  absl::Mutex mu;
  int calls ABSL_GUARDED_BY(mu) = 0;
  grpc::Status answer ABSL_GUARDED_BY(mu);  // what an active's ListNodes answers, if not OK
  std::set<std::string> submitted ABSL_GUARDED_BY(mu);

 private:
  FakeClientService(bool standby, std::string active)
      : standby_(standby), active_(std::move(active)) {}
  grpc::Status Refuse(grpc::ServerContext* ctx) {
    if (!active_.empty()) ctx->AddTrailingMetadata(kActiveRmMetadata, active_);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("ResourceManager rm2 is standby; the active is rm1 at ",
                                     active_.empty() ? "(unknown)" : active_));
  }
  const bool standby_;
  const std::string active_;
};

struct Served {
  std::unique_ptr<FakeClientService> service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
};

Served Serve(std::unique_ptr<FakeClientService> service) {
  Served s;
  s.service = std::move(service);
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(s.service.get());
  s.server = builder.BuildAndStart();
  s.address = absl::StrCat("127.0.0.1:", port);
  return s;
}

// An address nothing listens on (a server started and stopped).
std::string StoppedAddress() {
  Served s = Serve(FakeClientService::Active());
  s.server->Shutdown();
  return s.address;
}

class RmClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::filesystem::exists(kSystemCaPath))
      GTEST_SKIP() << kSystemCaPath << " exists: the client would speak TLS to the fakes";
    dir_ = std::filesystem::path(::testing::TempDir()) / absl::StrCat("rm_client_test_", getpid());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "secret") << "s3cret\n";
    // Plaintext (no cluster CA) and the admin secret instead of MUNGE.
    setenv("HOME", dir_.c_str(), 1);
    setenv("WEFT_TLS_CA", "", 1);
    setenv("WEFT_SECRET_FILE", (dir_ / "secret").c_str(), 1);
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // A client of `list` whose waits are recorded, not slept.
  std::unique_ptr<RmClient> Client(const std::string& list) {
    auto client = std::make_unique<RmClient>(list, "");
    client->set_sleep_for_testing([this](int64_t ms) { waits_.push_back(ms); });
    return client;
  }

  absl::Status ListNodes(RmClient& client) {
    v1::ListNodesResponse resp;
    return client.Call(&v1::ClientService::Stub::ListNodes, v1::ListNodesRequest(), &resp);
  }

  std::filesystem::path dir_;
  std::vector<int64_t> waits_;
};

TEST_F(RmClientTest, TheStandbysHintLeadsToTheActiveAtOnce) {
  Served active = Serve(FakeClientService::Active());
  Served standby = Serve(FakeClientService::Standby(active.address));
  auto client = Client(absl::StrCat(standby.address, ",", active.address));
  ASSERT_TRUE(ListNodes(*client).ok());
  EXPECT_EQ(client->address(), active.address);
  EXPECT_THAT(waits_, IsEmpty());
  // The client stays with the active.
  ASSERT_TRUE(ListNodes(*client).ok());
  absl::MutexLock lock(&standby.service->mu);
  EXPECT_EQ(standby.service->calls, 1);
}

TEST_F(RmClientTest, AStoppedRmIsPassedRoundRobin) {
  Served active = Serve(FakeClientService::Active());
  auto client = Client(absl::StrCat(StoppedAddress(), ",", active.address));
  ASSERT_TRUE(ListNodes(*client).ok());
  EXPECT_EQ(client->address(), active.address);
  EXPECT_THAT(waits_, ElementsAre(RmClient::kRetryInitialMs));
}

TEST_F(RmClientTest, AnRmThatComesBackIsReachedAtOnce) {
  // One RM by two names; it is down, and back (on its port) during the third wait.
  Served first = Serve(FakeClientService::Active());
  const int port = std::stoi(first.address.substr(first.address.rfind(':') + 1));
  first.server->Shutdown();
  std::unique_ptr<grpc::Server> again;
  auto client =
      std::make_unique<RmClient>(absl::StrCat("127.0.0.1:", port, ",localhost:", port), "");
  client->set_sleep_for_testing([&](int64_t ms) {
    waits_.push_back(ms);
    if (waits_.size() != 3) return;
    grpc::ServerBuilder builder;
    int bound = 0;
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                             &bound);
    builder.RegisterService(first.service.get());
    again = builder.BuildAndStart();
    ASSERT_EQ(bound, port);
  });
  ASSERT_TRUE(ListNodes(*client).ok());
  // Its channel was made anew: the try after the third wait reached it.
  EXPECT_THAT(waits_, ElementsAre(100, 200, RmClient::kRetryMaxMs));
  again->Shutdown();
}

TEST_F(RmClientTest, TheRmsOwnAnswerIsNotFailedOver) {
  Served first = Serve(FakeClientService::Active());
  Served second = Serve(FakeClientService::Active());
  {
    absl::MutexLock lock(&first.service->mu);
    first.service->answer = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours");
  }
  auto client = Client(absl::StrCat(first.address, ",", second.address));
  absl::Status s = ListNodes(*client);
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(s.message(), "not yours");
  absl::MutexLock lock(&second.service->mu);
  EXPECT_EQ(second.service->calls, 0);
}

TEST_F(RmClientTest, OneUnreachableRmIsTriedAgainBrieflyThenNamed) {
  const std::string gone = StoppedAddress();
  auto client = std::make_unique<RmClient>(gone, "");  // real (short) waits
  const absl::Time start = absl::Now();
  absl::Status s = ListNodes(*client);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("cannot reach the ResourceManager at ", gone,
                                                  " (is it running?")));
  // Tried again for kSingleRmRetryBudgetMs, not for the HA failover budget.
  EXPECT_GE(took, absl::Milliseconds(RmClient::kSingleRmRetryBudgetMs) - absl::Milliseconds(300));
  EXPECT_LT(took, absl::Milliseconds(RmClient::kFailoverBudgetMs));
}

TEST_F(RmClientTest, WhenNoRmServesTheErrorNamesEveryRmTried) {
  const std::string gone = StoppedAddress();
  Served standby = Serve(FakeClientService::Standby(""));
  auto client = std::make_unique<RmClient>(absl::StrCat(gone, ",", standby.address), "");
  client->set_failover_budget_ms(300);  // real (short) waits
  absl::Status s = ListNodes(*client);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("cannot reach the ResourceManager at ", gone,
                                                  " or ", standby.address)));
  EXPECT_THAT(s.message(), HasSubstr("tried for 0.3 s"));
  EXPECT_THAT(s.message(),
              HasSubstr(absl::StrCat(standby.address, ": ResourceManager rm2 is standby")));
}

TEST_F(RmClientTest, ARetriedSubmissionFoundAppliedIsSubmitted) {
  // The first try reached rm1, which applied it and went down before answering; rm2, active
  // now, recovered the application. Here: rm1 answers UNAVAILABLE naming rm2, which has it.
  Served rm2 = Serve(FakeClientService::Active());
  Served rm1 = Serve(FakeClientService::Standby(rm2.address));
  {
    absl::MutexLock lock(&rm2.service->mu);
    rm2.service->submitted.insert("application_1_0001");
  }
  v1::SubmitApplicationRequest req;
  req.mutable_context()->set_application_id("application_1_0001");
  auto client = Client(absl::StrCat(rm1.address, ",", rm2.address));
  EXPECT_TRUE(client->SubmitApplication(req).ok());
  // A first try answered AlreadyExists is an error: someone else submitted that id.
  auto direct = Client(rm2.address);
  EXPECT_EQ(direct->SubmitApplication(req).code(), absl::StatusCode::kAlreadyExists);
}

TEST_F(RmClientTest, ABadAddressListIsEveryCallsError) {
  auto client = Client("127.0.0.1:8032,,127.0.0.1:8033");
  absl::Status s = ListNodes(*client);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--rm / $WEFT_RM"));
  EXPECT_THAT(s.message(), HasSubstr("entry 2 is empty"));
}

}  // namespace
}  // namespace weft::cli
