// Copyright Weft authors. NodeHeartbeat calls reach the RM loop in batches
// (RmServerOptions::heartbeat_batch_ms): every heartbeat of a batch gets its own answer, a
// heartbeat waits for its batch, and an RM shut down while a batch waits still answers it.
// Also the loop's polling (RmServerOptions::loop_poll_us).
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_server.h"
#include "rm/rm_test_util.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

RmServerOptions Options(int batch_ms, int64_t loop_poll_us = 0) {
  RmServerOptions o;
  o.loop_poll_us = loop_poll_us;
  o.auth.mode = UserAuthentication::kDeclared;
  o.launcher = std::make_unique<FakeLauncher>();
  o.heartbeat_batch_ms = batch_ms;
  return o;
}

std::string Node(int i) { return absl::StrCat("127.0.0.1:", 7000 + i); }

// Heartbeats sent at once, one per node, and their answers as they come.
class Heartbeats {
 public:
  Heartbeats(v1::TrackerService::Stub* stub, const std::vector<std::string>& nodes) {
    calls_.reserve(nodes.size());
    const auto sent = Clock::now();
    for (const std::string& node : nodes) {
      calls_.push_back(std::make_unique<Call>());
      Call* c = calls_.back().get();
      c->request.set_node_id(node);
      c->request.mutable_health()->set_healthy(true);
      c->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      stub->async()->NodeHeartbeat(&c->context, &c->request, &c->response,
                                   [this, c, sent](grpc::Status s) {
                                     absl::MutexLock l(&mu_);
                                     c->status = std::move(s);
                                     c->waited = Clock::now() - sent;
                                     ++done_;
                                   });
    }
  }
  struct Call {
    grpc::ClientContext context;
    v1::NodeHeartbeatRequest request;
    v1::NodeHeartbeatResponse response;
    grpc::Status status;
    Clock::duration waited{};
  };
  // Waits (30 s at most) for every answer; the calls, in the order sent.
  const std::vector<std::unique_ptr<Call>>& Wait() {
    absl::MutexLock l(&mu_);
    auto all = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ == calls_.size(); };
    EXPECT_TRUE(mu_.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)));
    return calls_;
  }

 private:
  absl::Mutex mu_;
  size_t done_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Call>> calls_;
};

class RmServerHeartbeatTest : public ::testing::Test {
 protected:
  void Start(int batch_ms, int nodes, int64_t loop_poll_us = 0) {
    auto rm = RmServer::Start(Options(batch_ms, loop_poll_us));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = *std::move(rm);
    rm_->RunOnLoop([&](ResourceManager& rm) {
      for (int i = 0; i < nodes; ++i) EXPECT_TRUE(rm.RegisterNode(NodeRequest(Node(i))).ok());
    });
    stub_ = v1::TrackerService::NewStub(
        grpc::CreateChannel(rm_->address(), grpc::InsecureChannelCredentials()));
  }
  std::unique_ptr<RmServer> rm_;
  std::unique_ptr<v1::TrackerService::Stub> stub_;
};

// 20 registered nodes and one the RM does not know heartbeat at once into 50 ms batches: each
// gets its own answer (the known ones response id 1, the stranger RESYNC), none before its
// batch's time, and the loop counts each heartbeat as one event.
TEST_F(RmServerHeartbeatTest, EachHeartbeatOfABatchGetsItsOwnAnswer) {
  Start(/*batch_ms=*/50, 20);
  const LoopStats before = rm_->LoopStatistics();
  std::vector<std::string> nodes;
  for (int i = 0; i < 20; ++i) nodes.push_back(Node(i));
  nodes.push_back("127.0.0.1:7999");
  Heartbeats hb(stub_.get(), nodes);
  const auto& calls = hb.Wait();
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& c = *calls[i];
    ASSERT_TRUE(c.status.ok()) << nodes[i] << ": " << c.status.error_message();
    if (i < 20) {
      EXPECT_EQ(c.response.response_id(), 1) << nodes[i];
      EXPECT_EQ(c.response.action(), v1::NODE_ACTION_NORMAL) << nodes[i];
      EXPECT_TRUE(c.response.has_container_key()) << nodes[i];
    } else {
      EXPECT_EQ(c.response.action(), v1::NODE_ACTION_RESYNC);
    }
    // Its batch's task ran 50 ms after the batch's first heartbeat (the loop's clock is in ms).
    EXPECT_GE(c.waited, std::chrono::milliseconds(45)) << nodes[i];
  }
  const LoopStats after = rm_->LoopStatistics();
  EXPECT_EQ(after.Since(before, "TrackerService/NodeHeartbeat").count, 21);
}

// Without batching each heartbeat is posted to the loop at once; the answers are the same.
TEST_F(RmServerHeartbeatTest, ZeroPostsEachHeartbeatAtOnce) {
  Start(/*batch_ms=*/0, 5);
  std::vector<std::string> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back(Node(i));
  Heartbeats hb(stub_.get(), nodes);
  for (const auto& c : hb.Wait()) {
    ASSERT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_EQ(c->response.response_id(), 1);
  }
}

// A server shut down while a batch waits for its time still answers every heartbeat of it:
// the server's shutdown waits for the calls, and the loop runs the batch meanwhile.
TEST_F(RmServerHeartbeatTest, ShutdownAnswersTheBatchWaiting) {
  Start(/*batch_ms=*/100, 10);
  std::vector<std::string> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back(Node(i));
  Heartbeats hb(stub_.get(), nodes);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // they reach the server
  rm_->Shutdown();
  for (const auto& c : hb.Wait()) {
    EXPECT_TRUE(c->status.ok()) << c->status.error_message();
    EXPECT_EQ(c->response.response_id(), 1);
  }
}

// A loop that never sleeps (-1) or polls a while (500 µs) serves as one that sleeps at once.
TEST_F(RmServerHeartbeatTest, APollingLoopAnswersAsASleepingOne) {
  for (int64_t poll_us : {-1, 500}) {
    Start(/*batch_ms=*/1, 5, poll_us);
    std::vector<std::string> nodes;
    for (int i = 0; i < 5; ++i) nodes.push_back(Node(i));
    for (int round = 1; round <= 3; ++round) {
      Heartbeats hb(stub_.get(), nodes);
      for (const auto& c : hb.Wait()) {
        ASSERT_TRUE(c->status.ok()) << poll_us << ": " << c->status.error_message();
        EXPECT_EQ(c->response.response_id(), round) << poll_us;
      }
    }
    rm_->Shutdown();
    rm_.reset();
  }
}

TEST(RmServerHeartbeatOptionsTest, ALoopPollOutsideMinusOneToOneSecondIsRefused) {
  for (int64_t bad : {int64_t{-2}, int64_t{1'000'001}}) {
    auto rm = RmServer::Start(Options(1, bad));
    ASSERT_FALSE(rm.ok()) << bad;
    EXPECT_EQ(rm.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(rm.status().message(), HasSubstr(absl::StrCat("loop poll ", bad, " µs")));
  }
}

TEST(RmServerHeartbeatOptionsTest, ABatchOutsideZeroToOneHundredMsIsRefused) {
  for (int bad : {-1, 101}) {
    auto rm = RmServer::Start(Options(bad));
    ASSERT_FALSE(rm.ok()) << bad;
    EXPECT_EQ(rm.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(rm.status().message(), HasSubstr(absl::StrCat("heartbeat batch ", bad, " ms")));
  }
}

}  // namespace
}  // namespace weft::rm
