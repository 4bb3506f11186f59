// Copyright Weft authors. Container resource updates on the NodeManager (YARN's container
// increase/decrease): ContainerService.UpdateContainers from the AM and
// NodeHeartbeatResponse.containers_to_update from the RM, against an in-process fake RM over
// real gRPC, with real container processes and (as root) real cgroups. NM restart keeping an
// update is in nm_recovery_test.cc; the HTB rate change in traffic_controller_test.cc.
#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/event_loop.h"
#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/cgroups.h"
#include "nm/fake_rm_test_util.h"
#include "nm/nm_test_fixture.h"
#include "nm/node_manager.h"
#include "security/tokens.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

using testing::FakeRm;
using testing::FindStatus;

constexpr char kApp[] = "application_1_0001";

bool RunningAsRoot() { return geteuid() == 0; }

std::string ReadFirstWord(const std::string& path) {
  std::ifstream in(path);
  std::string value;
  in >> value;
  return value;
}

class ContainerUpdateTest : public testing::NmTestFixture {
 protected:
  ContainerUpdateTest() : NmTestFixture("weft_container_update_test") {}
  // Starts the NM (NmTestFixture::StartNm) and, with cgroups, a view of its hierarchy.
  void StartNm(bool use_cgroups) {
    NmTestFixture::StartNm(BaseOptions(use_cgroups));
    if (HasFatalFailure()) return;
    if (use_cgroups) {
      absl::StatusOr<std::unique_ptr<CgroupsHandler>> view =
          DetectCgroups("/sys/fs/cgroup", cgroup_hierarchy_);
      ASSERT_TRUE(view.ok()) << view.status();
      cgroups_ = *std::move(view);
    }
  }

  // Skips (saying why) unless this is root with a memory and a cpu controller; starts the NM.
  bool StartNmWithCgroups() {
    if (!RunningAsRoot()) {
      skip_reason_ = "needs root to create cgroups";
      return false;
    }
    StartNm(/*use_cgroups=*/true);
    if (cgroups_ == nullptr) {
      skip_reason_ = "no cgroups";
      return false;
    }
    if (!cgroups_->HasController("memory") || !cgroups_->HasController("cpu")) {
      skip_reason_ = absl::StrCat("no memory or cpu controller: ",
                                  absl::StrJoin(cgroups_->missing_features(), "; "));
      return false;
    }
    return true;
  }

  security::ContainerTokenData TokenData(const std::string& container_id,
                                         const std::string& resource, int32_t version = 0) {
    security::ContainerTokenData data;
    data.container_id = container_id;
    data.node_id = nm_->node_id();
    data.user = "alice";
    data.resource = resource;
    data.expiry_ms = loop_.NowMs() + 600'000;
    data.rm_epoch = 1;
    data.app_id = kApp;
    data.version = version;
    return data;
  }

  // Starts `command` as container `id` with `resource`; true when the NM said so.
  bool StartContainer(const std::string& id, const std::string& resource,
                      const std::string& command) {
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    *one->mutable_container_token() = rm_->IssueToken(TokenData(id, resource));
    one->mutable_launch_context()->add_command(command);
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    EXPECT_THAT(response.failed(), IsEmpty())
        << (response.failed_size() > 0 ? response.failed(0).message() : "");
    return response.succeeded_size() == 1 && response.succeeded(0) == id;
  }

  v1::UpdateContainersResponse Update(std::vector<v1::Token> tokens) {
    v1::UpdateContainersRequest request;
    for (v1::Token& token : tokens) *request.add_container_tokens() = std::move(token);
    v1::UpdateContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->UpdateContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // One token, expected to succeed.
  void UpdateOk(const std::string& id, const std::string& resource, int32_t version) {
    v1::UpdateContainersResponse response =
        Update({rm_->IssueToken(TokenData(id, resource, version))});
    EXPECT_THAT(response.succeeded(), ElementsAre(id));
    EXPECT_THAT(response.failed(), IsEmpty())
        << (response.failed_size() > 0 ? response.failed(0).message() : "");
  }

  // One token, expected to fail with `code` and a message containing `message`.
  void UpdateFails(const v1::Token& token, const std::string& id, absl::StatusCode code,
                   const std::string& message) {
    v1::UpdateContainersResponse response = Update({token});
    EXPECT_THAT(response.succeeded(), IsEmpty());
    ASSERT_EQ(response.failed_size(), 1);
    EXPECT_EQ(response.failed(0).container_id(), id);
    EXPECT_EQ(response.failed(0).code(), static_cast<int32_t>(code))
        << response.failed(0).message();
    EXPECT_THAT(response.failed(0).message(), HasSubstr(message));
  }

  std::string MemoryLimit(const std::string& id) {
    const std::string dir = cgroups_->Path("memory", id);
    return ReadFirstWord(dir +
                         (cgroups_->version() == "v1" ? "/memory.limit_in_bytes" : "/memory.max"));
  }
  std::string CpuShares(const std::string& id) {
    const std::string dir = cgroups_->Path("cpu", id);
    return ReadFirstWord(dir + (cgroups_->version() == "v1" ? "/cpu.shares" : "/cpu.weight"));
  }
  std::string ExpectedCpu(int64_t vcores) {
    const int64_t shares = vcores * kCpuSharesPerVcore;
    return cgroups_->version() == "v1" ? absl::StrCat(shares)
                                       : absl::StrCat(internal::CpuSharesToWeight(shares));
  }

  // Waits for a heartbeat the RM acknowledged after the first `after` that reports `id`
  // running at `version` (absent from container_versions: 0).
  bool WaitForReportedVersion(const std::string& id, int32_t version, size_t after = 0) {
    return rm_->WaitUntil([&](FakeRm& rm) {
      for (size_t i = after; i < rm.heartbeats_.size(); ++i) {
        const v1::NodeHeartbeatRequest& h = rm.heartbeats_[i];
        if (FindStatus(h, id, v1::CONTAINER_RUNNING) == nullptr) continue;
        auto v = h.container_versions().find(id);
        if ((v == h.container_versions().end() ? 0 : v->second) == version) return true;
      }
      return false;
    });
  }
  size_t HeartbeatCount() {
    return rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  }

  std::unique_ptr<CgroupsHandler> cgroups_;  // the test's view of the NM's hierarchy
  std::string skip_reason_;
};

TEST_F(ContainerUpdateTest, IncreaseThenDecreaseReachTheRunningContainersCgroup) {
  if (!StartNmWithCgroups()) GTEST_SKIP() << skip_reason_;
  const std::string id = "container_e1_1_0001_01_000001";
  ASSERT_TRUE(StartContainer(id, "memory-mb=128,vcores=1", "exec sleep 100"));
  EXPECT_EQ(MemoryLimit(id), "134217728");
  EXPECT_EQ(CpuShares(id), ExpectedCpu(1));

  // Increase (the AM's call): memory, CPU and the pids limit follow, while it runs.
  UpdateOk(id, "memory-mb=256,vcores=2", 1);
  EXPECT_EQ(MemoryLimit(id), "268435456");
  EXPECT_EQ(CpuShares(id), ExpectedCpu(2));
  if (cgroups_->HasController("pids")) {
    EXPECT_EQ(ReadFirstWord(cgroups_->Path("pids", id) + "/pids.max"), "1024");
  }
  if (cgroups_->version() == "v1" &&
      std::filesystem::exists(cgroups_->Path("memory", id) + "/memory.memsw.limit_in_bytes")) {
    EXPECT_EQ(ReadFirstWord(cgroups_->Path("memory", id) + "/memory.memsw.limit_in_bytes"),
              "268435456");
  }
  // Decrease below where it started: a sleeping shell fits.
  UpdateOk(id, "memory-mb=64,vcores=1", 2);
  EXPECT_EQ(MemoryLimit(id), "67108864");
  EXPECT_EQ(CpuShares(id), ExpectedCpu(1));

  // Replayed and older versions are refused and change nothing.
  UpdateFails(rm_->IssueToken(TokenData(id, "memory-mb=512,vcores=1", 2)), id,
              absl::StatusCode::kFailedPrecondition,
              "version 2 is not above the container's version 2");
  UpdateFails(rm_->IssueToken(TokenData(id, "memory-mb=512,vcores=1", 1)), id,
              absl::StatusCode::kFailedPrecondition,
              "version 1 is not above the container's version 2");
  EXPECT_EQ(MemoryLimit(id), "67108864");
  // It still runs, and the RM hears its version.
  EXPECT_TRUE(WaitForReportedVersion(id, 2, HeartbeatCount()));
}

TEST_F(ContainerUpdateTest, RefusedUpdatesChangeNothing) {
  StartNm(/*use_cgroups=*/false);
  const std::string id = "container_e1_1_0001_01_000002";
  const std::string done = "container_e1_1_0001_01_000003";
  ASSERT_TRUE(StartContainer(id, "memory-mb=128,vcores=1", "exec sleep 100"));
  ASSERT_TRUE(StartContainer(done, "memory-mb=128,vcores=1", "exit 0"));
  ASSERT_TRUE(WaitCompleted(done).has_value());
  const std::string bigger = "memory-mb=256,vcores=1";

  security::MasterKey forged_key = rm_->current_key();
  forged_key.secret[0] ^= 0x5a;
  UpdateFails(rm_->IssueToken(TokenData(id, bigger, 1), forged_key), id,
              absl::StatusCode::kPermissionDenied, "bad signature");
  security::MasterKey unknown_key = rm_->current_key();
  unknown_key.id = 999;
  UpdateFails(rm_->IssueToken(TokenData(id, bigger, 1), unknown_key), id,
              absl::StatusCode::kPermissionDenied, "unknown master key 999");
  security::ContainerTokenData other_node = TokenData(id, bigger, 1);
  other_node.node_id = "127.0.0.1:1";
  UpdateFails(rm_->IssueToken(other_node), id, absl::StatusCode::kPermissionDenied,
              "issued for node 127.0.0.1:1, this is node");
  security::ContainerTokenData expired = TokenData(id, bigger, 1);
  expired.expiry_ms = loop_.NowMs() - 1;
  UpdateFails(rm_->IssueToken(expired), id, absl::StatusCode::kPermissionDenied, "expired at");
  security::ContainerTokenData other_app = TokenData(id, bigger, 1);
  other_app.app_id = "application_1_0002";
  UpdateFails(rm_->IssueToken(other_app), id, absl::StatusCode::kPermissionDenied,
              "issued for application application_1_0002 user alice, the container runs for "
              "application application_1_0001 user alice");
  security::ContainerTokenData other_user = TokenData(id, bigger, 1);
  other_user.user = "mallory";
  UpdateFails(rm_->IssueToken(other_user), id, absl::StatusCode::kPermissionDenied, "user mallory");
  UpdateFails(rm_->IssueToken(TokenData(id, bigger, 0)), id, absl::StatusCode::kFailedPrecondition,
              "version 0 is not above");
  UpdateFails(rm_->IssueToken(TokenData(id, "memory-mb=lots", 1)), id,
              absl::StatusCode::kInvalidArgument, "bad item");
  const std::string unknown = "container_e1_1_0001_01_000099";
  UpdateFails(rm_->IssueToken(TokenData(unknown, bigger, 1)), unknown, absl::StatusCode::kNotFound,
              "is not running on this node");
  UpdateFails(rm_->IssueToken(TokenData(done, bigger, 1)), done, absl::StatusCode::kNotFound,
              "is not running on this node");
  UpdateFails(v1::Token(), "", absl::StatusCode::kInvalidArgument, "missing container token");

  // None of it counted: version 1 is still to come, and it applies.
  const size_t now = HeartbeatCount();
  EXPECT_TRUE(WaitForReportedVersion(id, 0, now));
  UpdateOk(id, bigger, 1);
  EXPECT_TRUE(WaitForReportedVersion(id, 1, HeartbeatCount()));
}

TEST_F(ContainerUpdateTest, SeveralTokensInOneCallSucceedOrFailEachOnItsOwn) {
  StartNm(/*use_cgroups=*/false);
  const std::string a = "container_e1_1_0001_01_000004";
  const std::string b = "container_e1_1_0001_01_000005";
  ASSERT_TRUE(StartContainer(a, "memory-mb=128,vcores=1", "exec sleep 100"));
  ASSERT_TRUE(StartContainer(b, "memory-mb=128,vcores=1", "exec sleep 100"));
  v1::UpdateContainersResponse response =
      Update({rm_->IssueToken(TokenData(a, "memory-mb=256,vcores=1", 1)),
              rm_->IssueToken(TokenData(b, "memory-mb=256,vcores=1", 0)),
              rm_->IssueToken(TokenData(b, "memory-mb=256,vcores=1", 3))});
  EXPECT_THAT(response.succeeded(), ElementsAre(a, b));
  ASSERT_EQ(response.failed_size(), 1);
  EXPECT_EQ(response.failed(0).container_id(), b);
  EXPECT_EQ(response.failed(0).code(), static_cast<int32_t>(absl::StatusCode::kFailedPrecondition));
  const size_t now = HeartbeatCount();
  EXPECT_TRUE(WaitForReportedVersion(a, 1, now));
  EXPECT_TRUE(WaitForReportedVersion(b, 3, now));
}

TEST_F(ContainerUpdateTest, TheRmsHeartbeatDecreaseTakesTheSamePath) {
  const bool with_cgroups = StartNmWithCgroups();
  if (nm_ == nullptr) StartNm(/*use_cgroups=*/false);
  const std::string id = "container_e1_1_0001_01_000006";
  ASSERT_TRUE(StartContainer(id, "memory-mb=256,vcores=2", "exec sleep 100"));
  if (with_cgroups) {
    EXPECT_EQ(MemoryLimit(id), "268435456");
  }
  // A forged one is refused (logged), the RM's own applies.
  security::MasterKey forged_key = rm_->current_key();
  forged_key.secret[0] ^= 0x5a;
  const v1::Token forged = rm_->IssueToken(TokenData(id, "memory-mb=32,vcores=1", 5), forged_key);
  const v1::Token decrease = rm_->IssueToken(TokenData(id, "memory-mb=128,vcores=1", 1));
  rm_->With([&](FakeRm& rm) {
    rm.containers_to_update_ = {forged, decrease};
    return 0;
  });
  ASSERT_TRUE(WaitForReportedVersion(id, 1));
  if (with_cgroups) {
    EXPECT_EQ(MemoryLimit(id), "134217728");
    EXPECT_EQ(CpuShares(id), ExpectedCpu(1));
  }
  // A re-sent decrease (the RM lost the reply) changes nothing.
  const v1::Token resent = rm_->IssueToken(TokenData(id, "memory-mb=64,vcores=1", 1));
  rm_->With([&](FakeRm& rm) {
    rm.containers_to_update_ = {resent};
    return 0;
  });
  const size_t sent = HeartbeatCount();
  ASSERT_TRUE(rm_->WaitUntil([&](FakeRm& rm) { return rm.heartbeats_.size() >= sent + 3; }));
  EXPECT_TRUE(WaitForReportedVersion(id, 1, sent + 2));
  if (with_cgroups) {
    EXPECT_EQ(MemoryLimit(id), "134217728");
  }
  if (!with_cgroups) {
    std::cout << "cgroup limits not checked: " << skip_reason_ << "\n";
  }
}

TEST_F(ContainerUpdateTest, AMemoryDecreaseBelowTheUsageKillsTheContainer) {
  if (!StartNmWithCgroups()) GTEST_SKIP() << skip_reason_;
  const std::string id = "container_e1_1_0001_01_000007";
  // About 100 MB of anonymous memory held by the shell while it sleeps (no swap to push it to
  // on most test machines: then the kernel cannot reclaim it).
  ASSERT_TRUE(StartContainer(
      id, "memory-mb=512,vcores=1",
      "x=$(head -c 100000000 /dev/zero | tr '\\0' a); touch ready; sleep 100; echo ${#x}"));
  const std::string ready = (work_root_ / kApp / id / "ready").string();
  ASSERT_TRUE(PollUntil([&] { return std::filesystem::exists(ready); }, absl::Seconds(30)));
  v1::UpdateContainersResponse response =
      Update({rm_->IssueToken(TokenData(id, "memory-mb=32,vcores=1", 1))});
  std::optional<v1::ContainerStatus> completed;
  if (cgroups_->version() == "v1") {
    if (response.succeeded_size() == 1) {
      GTEST_SKIP() << "the kernel reclaimed the container's memory down to 32 MB (swap?)";
    }
    ASSERT_EQ(response.failed_size(), 1);
    EXPECT_EQ(response.failed(0).code(),
              static_cast<int32_t>(absl::StatusCode::kResourceExhausted));
    EXPECT_THAT(response.failed(0).message(), HasSubstr("its memory was decreased to 32 MB"));
    completed = WaitCompleted(id);
    ASSERT_TRUE(completed.has_value());
    EXPECT_THAT(completed->diagnostics(),
                HasSubstr("Container killed: its memory was decreased to 32 MB (resource update "
                          "to version 1, from UpdateContainers) while it used more"));
  } else {
    // v2 takes the limit and the kernel OOM-kills in the group.
    EXPECT_THAT(response.succeeded(), ElementsAre(id));
    completed = WaitCompleted(id);
    ASSERT_TRUE(completed.has_value());
  }
  EXPECT_EQ(completed->exit_status(), v1::CONTAINER_EXIT_KILLED_EXCEEDED_PMEM)
      << completed->diagnostics();
}

}  // namespace
}  // namespace weft::nm
