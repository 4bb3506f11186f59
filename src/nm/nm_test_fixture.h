// Copyright Weft authors. The fixture of the NodeManager's daemon tests (node_manager_test.cc,
// container_update_test.cc, node_manager_devices_test.cc): a real NodeManager on 127.0.0.1
// port 0 against an in-process FakeRm (fake_rm_test_util.h) on its own port, a work root and a
// cgroup hierarchy name unique to the test, and the ContainerService stub. Test-only.
#ifndef WEFT_NM_NM_TEST_FIXTURE_H_
#define WEFT_NM_NM_TEST_FIXTURE_H_

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/event_loop.h"
#include "common/resource.h"
#include "gtest/gtest.h"
#include "nm/fake_rm_test_util.h"
#include "nm/node_manager.h"
#include "weft/v1/container.grpc.pb.h"

namespace weft::nm::testing {

class NmTestFixture : public ::testing::Test {
 protected:
  // `name` starts the work root's and the cgroup hierarchy's names (with the pid and a count).
  explicit NmTestFixture(std::string name) : name_(std::move(name)) {}

  void SetUp() override {
    loop_.Start();
    rm_ = std::make_unique<FakeRm>(loop_.NowMs());
    rm_server_ = ServeOnLoopback(rm_.get(), &rm_port_);
    ASSERT_NE(rm_server_, nullptr);
    ASSERT_NE(rm_port_, 0);
    static std::atomic<int> counter{0};
    work_root_ = std::filesystem::path(::testing::TempDir()) /
                 absl::StrCat(name_, "_", getpid(), "_", counter++);
    cgroup_hierarchy_ = absl::StrCat(name_, "_", getpid(), "_", counter++);
  }

  void TearDown() override {
    if (nm_ != nullptr) nm_->Shutdown();
    nm_.reset();
    if (rm_server_ != nullptr) rm_server_->Shutdown();
    loop_.Stop();
    std::error_code ignored;
    std::filesystem::remove_all(work_root_, ignored);
  }

  // <memory-mb=4096, vcores=4>, the fixture's work root and hierarchy, a 500 ms stop grace,
  // containers as the NM's user (the tokens' users, "alice" and others, are not Unix users).
  NodeManagerOptions BaseOptions(bool use_cgroups) const {
    NodeManagerOptions options;
    options.rm_tracker_address = absl::StrCat("127.0.0.1:", rm_port_);
    options.capability = Resource::Of(4096, 4);
    options.work_root = work_root_.string();
    options.stop_grace_ms = 500;
    options.use_cgroups = use_cgroups;
    options.cgroup_hierarchy = cgroup_hierarchy_;
    options.run_as = ContainerRunAs::kNmUser;
    return options;
  }

  // Starts the NM and waits for its first heartbeat: from then on it knows the RM's keys.
  void StartNm(NodeManagerOptions options) {
    absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
    ASSERT_TRUE(nm.ok()) << nm.status();
    nm_ = *std::move(nm);
    ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) { return !rm.heartbeats_.empty(); }));
    stub_ = v1::ContainerService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", nm_->port()), grpc::InsecureChannelCredentials()));
  }

  // FakeRm::WaitCompleted.
  std::optional<v1::ContainerStatus> WaitCompleted(const std::string& container_id) {
    return rm_->WaitCompleted(container_id);
  }

  // The container's log file `name` ("" when there is none).
  std::string ReadLog(const std::string& container_id, const std::string& name = "stdout") const {
    std::ifstream in(work_root_ / "logs" / container_id / name);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
  }

  ThreadEventLoop loop_;
  std::unique_ptr<FakeRm> rm_;
  int rm_port_ = 0;
  std::unique_ptr<grpc::Server> rm_server_;
  std::filesystem::path work_root_;
  std::string cgroup_hierarchy_;
  std::unique_ptr<NodeManager> nm_;
  std::unique_ptr<v1::ContainerService::Stub> stub_;

 private:
  std::string name_;
};

}  // namespace weft::nm::testing

#endif  // WEFT_NM_NM_TEST_FIXTURE_H_
