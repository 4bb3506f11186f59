// Copyright Weft authors. AmRmClient against a fake AmService on 127.0.0.1: riding out an RM
// that cannot be reached (bounded backoff, no real sleeping), YARN's resync (register again,
// send the whole ask table and the queued releases), and following the active RM among several
// (a standby's hint, the next RM of the list, the new active's resync).
#include "am/am_client.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/rm_failover.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::am {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Answers like an RM; RESYNCs the next Allocate when told to.
class FakeAmService final : public v1::AmService::Service {
 public:
  grpc::Status RegisterApplicationMaster(grpc::ServerContext*,
                                         const v1::RegisterApplicationMasterRequest*,
                                         v1::RegisterApplicationMasterResponse* resp) override {
    absl::MutexLock lock(&mu);
    ++registrations;
    for (const std::string& id : previous)
      resp->add_containers_from_previous_attempts()->set_container_id(id);
    return grpc::Status::OK;
  }
  grpc::Status Allocate(grpc::ServerContext*, const v1::AllocateRequest* req,
                        v1::AllocateResponse* resp) override {
    absl::MutexLock lock(&mu);
    requests.push_back(*req);
    if (resync_next) {
      resync_next = false;
      resp->set_am_command(v1::AM_RESYNC);
      return grpc::Status::OK;
    }
    resp->set_response_id(req->response_id() + 1);
    return grpc::Status::OK;
  }
  grpc::Status FinishApplicationMaster(grpc::ServerContext*,
                                       const v1::FinishApplicationMasterRequest*,
                                       v1::FinishApplicationMasterResponse* resp) override {
    resp->set_is_unregistered(true);
    return grpc::Status::OK;
  }

  absl::Mutex mu;
  int registrations ABSL_GUARDED_BY(mu) = 0;
  std::vector<v1::AllocateRequest> requests ABSL_GUARDED_BY(mu);
  bool resync_next ABSL_GUARDED_BY(mu) = false;
  std::vector<std::string> previous ABSL_GUARDED_BY(mu);  // containers a registration lists
};

// The fake RM's server, on `port` (0: any).
std::unique_ptr<grpc::Server> Serve(FakeAmService* service, int port, int* bound) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(),
                           bound);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

AmEnvironment Env(int port) {
  AmEnvironment env;
  env.rm_address = absl::StrCat("127.0.0.1:", port);
  env.application_id = "application_1_0001";
  env.attempt_id = "appattempt_1_0001_000001";
  env.amrm_token.set_identifier("id");
  env.amrm_token.set_password("pw");
  return env;
}

v1::ResourceRequest Ask(int32_t priority, int32_t n) {
  v1::ResourceRequest ask;
  ask.set_priority(priority);
  ask.set_resource_name("*");
  (*ask.mutable_capability()->mutable_values())["memory-mb"] = 1024;
  ask.set_num_containers(n);
  return ask;
}

TEST(AmRmClientTest, OnResyncItRegistersAgainAndSendsTheWholeAskTable) {
  FakeAmService rm;
  int port = 0;
  auto server = Serve(&rm, 0, &port);
  ASSERT_NE(server, nullptr);
  auto client = AmRmClient::Connect(Env(port));
  ASSERT_TRUE(client.ok());
  ASSERT_TRUE((*client)->Register("host").ok());
  (*client)->Ask(Ask(1, 3));
  (*client)->Ask(Ask(2, 1));
  ASSERT_EQ((*client)->Allocate(0)->response_id(), 1);
  (*client)->Ask(Ask(1, 2));  // the latest count of an ask replaces the earlier one
  (*client)->Release("container_e1_1_0001_01_000009");
  {
    absl::MutexLock lock(&rm.mu);
    rm.resync_next = true;
    rm.previous = {"container_e1_1_0001_01_000002"};
  }
  auto r = (*client)->Allocate(0.5f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*client)->resyncs(), 1);
  ASSERT_EQ(r->containers_from_previous_attempts_size(), 1);
  EXPECT_EQ(r->containers_from_previous_attempts(0).container_id(),
            "container_e1_1_0001_01_000002");
  EXPECT_EQ(r->response_id(), 1);  // a new sequence after registering again
  absl::MutexLock lock(&rm.mu);
  EXPECT_EQ(rm.registrations, 2);
  ASSERT_EQ(rm.requests.size(), 3u);
  const v1::AllocateRequest& again = rm.requests[2];
  EXPECT_EQ(again.response_id(), 0);
  std::vector<std::pair<int32_t, int32_t>> asks;
  for (const v1::ResourceRequest& a : again.asks())
    asks.emplace_back(a.priority(), a.num_containers());
  EXPECT_THAT(asks, UnorderedElementsAre(std::pair(1, 2), std::pair(2, 1)));
  EXPECT_THAT(again.releases(), ElementsAre("container_e1_1_0001_01_000009"));
}

TEST(AmRmClientTest, AnUnreachableRmIsWaitedForWithBackoff) {
  FakeAmService rm;
  int port = 0;
  auto first = Serve(&rm, 0, &port);
  ASSERT_NE(first, nullptr);
  first->Shutdown();
  first.reset();  // the RM is down; it comes back, on the same port, during the third wait
  std::unique_ptr<grpc::Server> second;
  std::vector<int64_t> waits;
  AmRmClientOptions options;
  options.retry_initial_ms = 100;
  options.retry_max_ms = 5000;
  options.sleep_ms = [&](int64_t ms) {
    waits.push_back(ms);
    if (waits.size() == 3) {
      int bound = 0;
      second = Serve(&rm, port, &bound);
      ASSERT_EQ(bound, port);
    }
  };
  auto client = AmRmClient::Connect(Env(port), options);
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Register("host");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(waits, ElementsAre(100, 200, 400));
  absl::MutexLock lock(&rm.mu);
  EXPECT_EQ(rm.registrations, 1);
}

TEST(AmRmClientTest, TheOutageBoundEndsTheWait) {
  FakeAmService rm;
  int port = 0;
  auto gone = Serve(&rm, 0, &port);
  ASSERT_NE(gone, nullptr);
  gone->Shutdown();
  gone.reset();
  std::vector<int64_t> waits;
  AmRmClientOptions options;
  options.retry_initial_ms = 100;
  options.retry_max_ms = 400;
  options.max_outage_ms = 1000;
  options.sleep_ms = [&](int64_t ms) { waits.push_back(ms); };
  auto client = AmRmClient::Connect(Env(port), options);
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Allocate(0);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(waits, ElementsAre(100, 200, 400, 300));  // capped by what is left of the bound
}

// A standby RM: every AmService call answers UNAVAILABLE, naming the active in the trailing
// metadata when it knows one.
class StandbyAmService final : public v1::AmService::Service {
 public:
  explicit StandbyAmService(std::string active) : active_(std::move(active)) {}
  grpc::Status RegisterApplicationMaster(grpc::ServerContext* ctx,
                                         const v1::RegisterApplicationMasterRequest*,
                                         v1::RegisterApplicationMasterResponse*) override {
    return Refuse(ctx);
  }
  grpc::Status Allocate(grpc::ServerContext* ctx, const v1::AllocateRequest*,
                        v1::AllocateResponse*) override {
    return Refuse(ctx);
  }
  grpc::Status FinishApplicationMaster(grpc::ServerContext* ctx,
                                       const v1::FinishApplicationMasterRequest*,
                                       v1::FinishApplicationMasterResponse*) override {
    return Refuse(ctx);
  }

  absl::Mutex mu;
  int calls ABSL_GUARDED_BY(mu) = 0;

 private:
  grpc::Status Refuse(grpc::ServerContext* ctx) {
    absl::MutexLock lock(&mu);
    ++calls;
    if (!active_.empty()) ctx->AddTrailingMetadata(kActiveRmMetadata, active_);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("ResourceManager rm2 is standby; the active is rm1 at ",
                                     active_.empty() ? "?" : active_));
  }
  const std::string active_;
};

std::unique_ptr<grpc::Server> ServeStandby(StandbyAmService* service, int* bound) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), bound);
  builder.RegisterService(service);
  return builder.BuildAndStart();
}

TEST(AmRmClientTest, TheStandbysHintLeadsToTheActiveAtOnce) {
  FakeAmService active;
  int active_port = 0;
  auto active_server = Serve(&active, 0, &active_port);
  ASSERT_NE(active_server, nullptr);
  const std::string active_address = absl::StrCat("127.0.0.1:", active_port);
  StandbyAmService standby(active_address);
  int standby_port = 0;
  auto standby_server = ServeStandby(&standby, &standby_port);
  ASSERT_NE(standby_server, nullptr);

  std::vector<int64_t> waits;
  AmRmClientOptions options;
  options.sleep_ms = [&](int64_t ms) { waits.push_back(ms); };
  AmEnvironment env = Env(0);
  // The standby first: the client starts there.
  env.rm_address = absl::StrCat("127.0.0.1:", standby_port, ",", active_address);
  auto client = AmRmClient::Connect(env, options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto r = (*client)->Register("host");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*client)->rm_address(), active_address);
  ASSERT_TRUE((*client)->Allocate(0).ok());
  EXPECT_THAT(waits, ::testing::IsEmpty());  // a hint is followed without waiting
  {
    absl::MutexLock lock(&standby.mu);
    EXPECT_EQ(standby.calls, 1);
  }
  absl::MutexLock lock(&active.mu);
  EXPECT_EQ(active.registrations, 1);
  EXPECT_EQ(active.requests.size(), 1u);
}

TEST(AmRmClientTest, WithoutAHintTheNextRmIsTriedAfterTheWait) {
  // The first RM is down (its port refuses), the second is the active.
  FakeAmService gone_rm;
  int gone_port = 0;
  auto gone = Serve(&gone_rm, 0, &gone_port);
  ASSERT_NE(gone, nullptr);
  gone->Shutdown();
  gone.reset();
  FakeAmService active;
  int active_port = 0;
  auto active_server = Serve(&active, 0, &active_port);
  ASSERT_NE(active_server, nullptr);

  std::vector<int64_t> waits;
  AmRmClientOptions options;
  options.sleep_ms = [&](int64_t ms) { waits.push_back(ms); };
  AmEnvironment env = Env(0);
  env.rm_address = absl::StrCat("127.0.0.1:", gone_port, ", 127.0.0.1:", active_port);
  auto client = AmRmClient::Connect(env, options);
  ASSERT_TRUE(client.ok()) << client.status();
  auto r = (*client)->Register("host");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*client)->rm_address(), absl::StrCat("127.0.0.1:", active_port));
  EXPECT_THAT(waits, ElementsAre(100));
}

TEST(AmRmClientTest, AfterAFailoverTheNewActiveResyncsTheAm) {
  // rm1 is active; then it dies and rm2, which has recovered the application but not this
  // attempt's registration, answers the next Allocate with AM_RESYNC.
  FakeAmService rm1;
  int port1 = 0;
  auto server1 = Serve(&rm1, 0, &port1);
  ASSERT_NE(server1, nullptr);
  FakeAmService rm2;
  int port2 = 0;
  auto server2 = Serve(&rm2, 0, &port2);
  ASSERT_NE(server2, nullptr);
  {
    absl::MutexLock lock(&rm2.mu);
    rm2.resync_next = true;
  }
  std::vector<int64_t> waits;
  AmRmClientOptions options;
  options.sleep_ms = [&](int64_t ms) { waits.push_back(ms); };
  AmEnvironment env = Env(0);
  env.rm_address = absl::StrCat("127.0.0.1:", port1, ",127.0.0.1:", port2);
  auto client = AmRmClient::Connect(env, options);
  ASSERT_TRUE(client.ok()) << client.status();
  ASSERT_TRUE((*client)->Register("host").ok());
  (*client)->Ask(Ask(1, 2));
  ASSERT_EQ((*client)->Allocate(0)->response_id(), 1);
  server1->Shutdown();
  server1.reset();

  auto r = (*client)->Allocate(0.5f);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*client)->rm_address(), absl::StrCat("127.0.0.1:", port2));
  EXPECT_EQ((*client)->resyncs(), 1);
  EXPECT_EQ(r->response_id(), 1);
  absl::MutexLock lock(&rm2.mu);
  EXPECT_EQ(rm2.registrations, 1);
  ASSERT_EQ(rm2.requests.size(), 2u);  // the resynced Allocate, then the one with the ask table
  std::vector<std::pair<int32_t, int32_t>> asks;
  for (const v1::ResourceRequest& a : rm2.requests[1].asks())
    asks.emplace_back(a.priority(), a.num_containers());
  EXPECT_THAT(asks, ElementsAre(std::pair(1, 2)));
}

TEST(AmRmClientTest, ABadRmAddressListIsRefused) {
  AmEnvironment env = Env(1);
  env.rm_address = "127.0.0.1:1,,127.0.0.1:2";
  auto client = AmRmClient::Connect(env);
  EXPECT_EQ(client.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(client.status().message(), ::testing::HasSubstr("WEFT_RM_ADDRESS"));
}

}  // namespace
}  // namespace weft::am
