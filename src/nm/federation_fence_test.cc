// Copyright Weft authors. The NodeManager's federation fence (issue 27,
// NodeManagerOptions::federation_fence_ms): an NM that has had no answer from its RM for the
// fence kills its containers, and reports them when the RM answers again. Real gRPC on
// 127.0.0.1 port 0 against the fake RM behind a switch that makes it silent; real processes.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/fake_rm_test_util.h"
#include "nm/node_manager.h"
#include "nm/node_manager_internal.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using testing::FakeRm;
using testing::FindStatus;
using ::testing::HasSubstr;
using testing::kWait;

// The fake RM's TrackerService behind a switch: answering (forwarded to the fake RM), silent
// as a stopped process is (calls held unanswered until the switch turns back or the test
// ends), or refusing at once as an RM that is down.
class SwitchedRm final : public v1::TrackerService::CallbackService {
 public:
  enum class Mode { kAnswer, kHang, kRefuse };
  explicit SwitchedRm(FakeRm* rm) : rm_(rm) {}

  grpc::ServerUnaryReactor* RegisterNodeManager(
      grpc::CallbackServerContext* context, const v1::RegisterNodeManagerRequest* request,
      v1::RegisterNodeManagerResponse* response) override {
    if (grpc::ServerUnaryReactor* r = Intercept(context, nullptr)) return r;
    AddLease(response);
    return rm_->RegisterNodeManager(context, request, response);
  }
  grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* context,
                                          const v1::NodeHeartbeatRequest* request,
                                          v1::NodeHeartbeatResponse* response) override {
    if (grpc::ServerUnaryReactor* r = Intercept(context, request)) return r;
    AddLease(response);
    return rm_->NodeHeartbeat(context, request, response);
  }

  // Answers as a federation sub-cluster's RM that last renewed its lease at `renewed` and
  // renews it every `renewal_ms` (tracker.proto federation_lease_*); nullopt: as none.
  void SetLease(std::optional<absl::Time> renewed, int64_t renewal_ms) {
    absl::MutexLock lock(&mu_);
    lease_renewed_ = renewed;
    lease_renewal_ms_ = renewal_ms;
  }

  void Set(Mode mode) {
    std::vector<grpc::ServerUnaryReactor*> release;
    {
      absl::MutexLock lock(&mu_);
      mode_ = mode;
      if (mode != Mode::kHang) release.swap(held_);
    }
    for (grpc::ServerUnaryReactor* r : release)
      r->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "switched RM: released"));
  }
  // Waits (up to kWait) until a heartbeat the RM did not answer reports `container_id`
  // completed; returns that status.
  std::optional<v1::ContainerStatus> WaitUnansweredCompletion(const std::string& container_id) {
    absl::MutexLock lock(&mu_);
    std::optional<v1::ContainerStatus> found;
    auto seen = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      for (const v1::NodeHeartbeatRequest& hb : unanswered_)
        if (const v1::ContainerStatus* s = FindStatus(hb, container_id, v1::CONTAINER_COMPLETE)) {
          found = *s;
          return true;
        }
      return false;
    };
    mu_.AwaitWithTimeout(absl::Condition(&seen), kWait);
    return found;
  }
  size_t unanswered() {
    absl::MutexLock lock(&mu_);
    return unanswered_calls_;
  }
  // Waits (up to kWait) until at least `n` calls went unanswered.
  bool WaitUnanswered(size_t n) {
    absl::MutexLock lock(&mu_);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return unanswered_calls_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kWait);
  }

 private:
  template <typename Response>
  void AddLease(Response* response) {
    absl::MutexLock lock(&mu_);
    if (!lease_renewed_.has_value()) return;
    response->set_federation_lease_age_ms(absl::ToInt64Milliseconds(absl::Now() - *lease_renewed_));
    response->set_federation_lease_renewal_ms(lease_renewal_ms_);
  }
  // The reactor of a call the switch answers itself, or null to forward it.
  grpc::ServerUnaryReactor* Intercept(grpc::CallbackServerContext* context,
                                      const v1::NodeHeartbeatRequest* heartbeat) {
    absl::MutexLock lock(&mu_);
    if (mode_ == Mode::kAnswer) return nullptr;
    ++unanswered_calls_;
    if (heartbeat != nullptr) unanswered_.push_back(*heartbeat);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (mode_ == Mode::kHang) {
      held_.push_back(reactor);
    } else {
      reactor->Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE, "switched RM: down"));
    }
    return reactor;
  }

  FakeRm* const rm_;
  absl::Mutex mu_;
  Mode mode_ ABSL_GUARDED_BY(mu_) = Mode::kAnswer;
  std::vector<grpc::ServerUnaryReactor*> held_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::NodeHeartbeatRequest> unanswered_ ABSL_GUARDED_BY(mu_);
  size_t unanswered_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::optional<absl::Time> lease_renewed_ ABSL_GUARDED_BY(mu_);
  int64_t lease_renewal_ms_ ABSL_GUARDED_BY(mu_) = 0;
};

class FederationFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    loop_.Start();
    rm_ = std::make_unique<FakeRm>(loop_.NowMs());
    switched_ = std::make_unique<SwitchedRm>(rm_.get());
    rm_server_ = testing::ServeOnLoopback(switched_.get(), &rm_port_);
    ASSERT_NE(rm_server_, nullptr);
    static std::atomic<int> counter{0};
    work_root_ = std::filesystem::path(::testing::TempDir()) /
                 absl::StrCat("weft_fence_test_", getpid(), "_", counter++);
  }

  void TearDown() override {
    if (switched_ != nullptr) switched_->Set(SwitchedRm::Mode::kAnswer);  // releases held calls
    if (nm_ != nullptr) nm_->Shutdown();
    nm_.reset();
    if (rm_server_ != nullptr) rm_server_->Shutdown();
    loop_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(work_root_, ignored);
  }

  void StartNm(int64_t fence_ms) {
    NodeManagerOptions options;
    options.rm_tracker_address = absl::StrCat("127.0.0.1:", rm_port_);
    options.capability = Resource::Of(4096, 4);
    options.work_root = work_root_.string();
    options.stop_grace_ms = 500;
    options.use_cgroups = false;
    options.cgroup_hierarchy = absl::StrCat("weft_fence_test_", getpid());
    options.run_as = ContainerRunAs::kNmUser;
    options.federation_fence_ms = fence_ms;
    auto nm = NodeManager::Start(options, &loop_);
    ASSERT_TRUE(nm.ok()) << nm.status();
    nm_ = *std::move(nm);
    ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return !rm.heartbeats_.empty(); }));
    stub_ = v1::ContainerService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", nm_->port()), grpc::InsecureChannelCredentials()));
  }

  v1::Token TokenFor(const std::string& id) {
    security::ContainerTokenData data;
    data.container_id = id;
    data.node_id = nm_->node_id();
    data.user = "alice";
    data.resource = "memory-mb=128,vcores=1";
    data.expiry_ms = loop_.NowMs() + 600'000;
    data.rm_epoch = 1;
    data.app_id = "application_1_0001";
    return rm_->IssueToken(data);
  }

  // Starts `sleep 100` as `id` and waits until a heartbeat reports it running.
  void StartSleeper(const std::string& id) {
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    *one->mutable_container_token() = TokenFor(id);
    one->mutable_launch_context()->add_command("sleep 100");
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->StartContainers(&context, request, &response).ok());
    ASSERT_THAT(response.succeeded(), ElementsAre(id));
    ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) {
      return !rm.heartbeats_.empty() &&
             FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING) != nullptr;
    }));
  }

  ThreadEventLoop loop_;
  std::unique_ptr<FakeRm> rm_;
  std::unique_ptr<SwitchedRm> switched_;
  std::unique_ptr<grpc::Server> rm_server_;
  int rm_port_ = 0;
  std::filesystem::path work_root_;
  std::unique_ptr<NodeManager> nm_;
  std::unique_ptr<v1::ContainerService::Stub> stub_;
};

// A stopped RM (SIGSTOP) answers nothing: its NM kills its containers once the fence passes,
// although its heartbeat call would wait 10 s, and reports them when the RM answers again.
TEST_F(FederationFenceTest, ASilentRmsContainersAreKilledAndReportedWhenItAnswersAgain) {
  StartNm(/*fence_ms=*/400);
  const std::string id = "container_e1_1_0001_01_000001";
  StartSleeper(id);
  switched_->Set(SwitchedRm::Mode::kHang);
  std::optional<v1::ContainerStatus> killed = switched_->WaitUnansweredCompletion(id);
  ASSERT_TRUE(killed.has_value()) << "the container was not killed while the RM was silent";
  EXPECT_EQ(killed->exit_status(), v1::CONTAINER_EXIT_ABORTED);
  EXPECT_THAT(killed->diagnostics(), HasSubstr("no answer from the ResourceManager"));
  EXPECT_THAT(killed->diagnostics(), HasSubstr("federation fence 400 ms"));
  const size_t answered_before = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  switched_->Set(SwitchedRm::Mode::kAnswer);
  // The RM hears of it in an answered heartbeat.
  ASSERT_TRUE(
      rm_->WaitUntil([&](FakeRm& rm) { return rm.CompletedIndex(id, answered_before) >= 0; }));
  rm_->With([&](FakeRm& rm) {
    const v1::ContainerStatus* s = FindStatus(
        rm.heartbeats_[rm.CompletedIndex(id, answered_before)], id, v1::CONTAINER_COMPLETE);
    EXPECT_THAT(s->diagnostics(), HasSubstr("federation fence"));
  });
}

// Without a fence (the default) an RM that refuses every call for longer than a fence would
// be leaves the containers running: outside a federation, the RM decides what lives.
TEST_F(FederationFenceTest, WithoutAFenceContainersOutliveASilentRm) {
  StartNm(/*fence_ms=*/0);
  const std::string id = "container_e1_1_0001_01_000002";
  StartSleeper(id);
  switched_->Set(SwitchedRm::Mode::kRefuse);
  ASSERT_TRUE(switched_->WaitUnanswered(30));  // 30 heartbeats of 20 ms: well past 400 ms
  v1::GetContainerStatusesRequest request;
  request.add_container_ids(id);
  *request.add_container_tokens() = TokenFor(id);
  v1::GetContainerStatusesResponse response;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->GetContainerStatuses(&context, request, &response).ok());
  ASSERT_EQ(response.statuses_size(), 1);
  EXPECT_EQ(response.statuses(0).state(), v1::CONTAINER_RUNNING);
}

// An RM that answers every heartbeat but last renewed its federation lease longer ago than
// the fence (it cannot reach the federation store, and the GPG may declare its sub-cluster
// LOST): its NM kills its containers as for a silent RM, and reports them; a renewed lease
// lifts the fence.
TEST_F(FederationFenceTest, AnRmThatAnswersWithAStaleLeaseHasItsContainersKilled) {
  switched_->SetLease(absl::Now(), /*renewal_ms=*/100);
  StartNm(/*fence_ms=*/400);
  const std::string id = "container_e1_1_0001_01_000003";
  StartSleeper(id);
  // No renewal from here on: the age grows past 400 ms while every heartbeat is answered.
  switched_->SetLease(absl::Now(), /*renewal_ms=*/100);
  const size_t answered_before = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  ASSERT_TRUE(
      rm_->WaitUntil([&](FakeRm& rm) { return rm.CompletedIndex(id, answered_before) >= 0; }))
      << "the container outlived a lease older than the fence";
  rm_->With([&](FakeRm& rm) {
    const v1::ContainerStatus* s = FindStatus(
        rm.heartbeats_[rm.CompletedIndex(id, answered_before)], id, v1::CONTAINER_COMPLETE);
    EXPECT_EQ(s->exit_status(), v1::CONTAINER_EXIT_ABORTED);
    EXPECT_THAT(s->diagnostics(), HasSubstr("last renewed its federation lease"));
    EXPECT_THAT(s->diagnostics(), HasSubstr("federation fence 400 ms"));
  });
  EXPECT_EQ(switched_->unanswered(), 0u);  // every call was answered
  // Renewed again: a container started now runs on.
  switched_->SetLease(absl::Now() + absl::Hours(1), /*renewal_ms=*/100);  // age 0 from now on
  const size_t lifted = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) { return rm.heartbeats_.size() >= lifted + 3; }));
  const std::string next = "container_e1_1_0001_01_000004";
  StartSleeper(next);
  const size_t seen = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) { return rm.heartbeats_.size() >= seen + 40; }));
  rm_->With([&](FakeRm& rm) {
    EXPECT_NE(FindStatus(rm.heartbeats_.back(), next, v1::CONTAINER_RUNNING), nullptr);
  });
}

// A lease renewed less often than the fence cannot run the fence (it would fire between two
// renewals of a healthy RM): the NM says so and fences on unanswered calls only.
TEST_F(FederationFenceTest, ALeaseRenewedLessOftenThanTheFenceIsNotUsed) {
  switched_->SetLease(absl::Now(), /*renewal_ms=*/5000);
  StartNm(/*fence_ms=*/400);
  const std::string id = "container_e1_1_0001_01_000005";
  StartSleeper(id);
  const size_t seen = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) { return rm.heartbeats_.size() >= seen + 40; }));
  rm_->With([&](FakeRm& rm) {
    EXPECT_NE(FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING), nullptr);
  });
}

TEST(RmAnswerFenceTest, ExpiresAfterTheFenceAndShortensCallsToIt) {
  internal::RmAnswerFence off(0);
  off.Start(0);
  EXPECT_FALSE(off.Expired(1'000'000));
  EXPECT_EQ(off.CallDeadlineMs(5, 10'000), 10'000);

  internal::RmAnswerFence fence(1000);
  EXPECT_FALSE(fence.Expired(5000));  // not started
  fence.Start(100);
  fence.Start(900);  // the clock runs from the first start
  EXPECT_EQ(fence.CallDeadlineMs(600, 10'000), 501);
  EXPECT_EQ(fence.CallDeadlineMs(100, 200), 200);
  EXPECT_FALSE(fence.Expired(1100));
  EXPECT_TRUE(fence.Expired(1101));
  EXPECT_EQ(fence.CallDeadlineMs(1101, 10'000), 10'000);  // fired: calls wait as usual
  EXPECT_TRUE(fence.Fire());
  EXPECT_FALSE(fence.Fire());
  EXPECT_TRUE(fence.fenced());
  EXPECT_TRUE(fence.Answered(1500));  // lifts it
  EXPECT_FALSE(fence.Answered(1600));
  EXPECT_FALSE(fence.Expired(2600));
  EXPECT_TRUE(fence.Expired(2601));
}

TEST(RmAnswerFenceTest, RunsFromTheRmsLeaseWhenItIsRenewedMoreOftenThanTheFence) {
  using Lease = internal::RmAnswerFence::Lease;
  internal::RmAnswerFence fence(1000);
  fence.Start(0);
  EXPECT_TRUE(fence.Usable(Lease{0, 999}));
  EXPECT_FALSE(fence.Usable(Lease{0, 1000}));
  EXPECT_FALSE(fence.Usable(Lease{0, 0}));  // renewal not known yet
  // Sent at 500, answered at 520, renewed 300 ms before the reply: from 200 at the latest.
  EXPECT_FALSE(fence.Answered(520, 500, Lease{300, 250}));
  EXPECT_TRUE(fence.from_lease());
  EXPECT_EQ(fence.last_answer_ms(), 200);
  EXPECT_FALSE(fence.Expired(1200));
  EXPECT_TRUE(fence.Expired(1201));
  // An answer whose lease is older than the fence fences: nothing is lifted.
  EXPECT_TRUE(fence.Fire());
  EXPECT_FALSE(fence.Answered(3000, 2990, Lease{1500, 250}));
  EXPECT_TRUE(fence.Expired(3000));
  EXPECT_TRUE(fence.fenced());
  // Renewed again: lifted.
  EXPECT_TRUE(fence.Answered(3100, 3090, Lease{10, 250}));
  EXPECT_FALSE(fence.fenced());
  // An unusable lease counts the answer itself.
  EXPECT_FALSE(fence.Answered(4000, 3990, Lease{5000, 1000}));
  EXPECT_FALSE(fence.from_lease());
  EXPECT_EQ(fence.last_answer_ms(), 4000);
  EXPECT_TRUE(fence.FirstUnusableLease());
  EXPECT_FALSE(fence.FirstUnusableLease());
}

}  // namespace
}  // namespace weft::nm
