// Copyright Weft authors. Tests of the NodeManager's devices (issue 32; docs/gpu-nm.md): real
// gRPC against the fake RM, real containers; GPUs from the GPU plugin in list mode. Without
// root the device nodes are faked (stat) and cgroups are off; as root the nodes are made with
// mknod (the numbers of /dev/zero, full, random, urandom) and the containers' cgroups deny
// the GPUs they were not given.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/event_loop.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/devices/gpu_plugin.h"
#include "nm/fake_rm_test_util.h"
#include "nm/nm_test_fixture.h"
#include "nm/node_manager.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::FakeRm;
using testing::FindStatus;

// The numbers of harmless character devices: the fake GPUs' nodes share them.
const std::pair<int32_t, int32_t> kFakeNumbers[] = {{1, 5}, {1, 7}, {1, 8}, {1, 9}};

class NodeManagerDevicesTest : public testing::NmTestFixture {
 protected:
  NodeManagerDevicesTest() : NmTestFixture("weft_nm_devices_test") {}
  void SetUp() override {
    NmTestFixture::SetUp();
    dev_dir_ = work_root_.string() + "-dev";
    std::filesystem::create_directories(dev_dir_);
  }
  void TearDown() override {
    NmTestFixture::TearDown();
    std::error_code ignored;
    std::filesystem::remove_all(dev_dir_, ignored);
  }

  // Four GPUs 0..3 at <dev_dir>/nvidiaN; `healthy[i]` false leaves GPU i's node out.
  std::shared_ptr<DevicePlugin> FourGpus(bool real_nodes, std::vector<bool> healthy = {}) {
    GpuPluginOptions options;
    options.mode = GpuPluginOptions::Mode::kList;
    std::map<std::string, std::pair<int32_t, int32_t>> nodes;
    for (int i = 0; i < 4; ++i) {
      const std::string path = absl::StrCat(dev_dir_, "/nvidia", i);
      options.list.push_back({i, path, "g0"});
      if (!healthy.empty() && !healthy[i]) continue;
      nodes[path] = kFakeNumbers[i];
      if (real_nodes) {
        EXPECT_EQ(mknod(path.c_str(), S_IFCHR | 0666,
                        makedev(kFakeNumbers[i].first, kFakeNumbers[i].second)),
                  0)
            << path;
      }
    }
    if (real_nodes) return std::make_shared<GpuPlugin>(options);
    GpuPluginEnv env = GpuPluginEnv::Real();
    env.stat = [nodes](const std::string& path) -> absl::StatusOr<std::pair<int32_t, int32_t>> {
      auto it = nodes.find(path);
      if (it == nodes.end()) return absl::NotFoundError(path);
      return it->second;
    };
    return std::make_shared<GpuPlugin>(options, env);
  }

  NodeManagerOptions Options(std::shared_ptr<DevicePlugin> plugin, bool use_cgroups) {
    NodeManagerOptions options = BaseOptions(use_cgroups);
    options.device_plugins.push_back(std::move(plugin));
    return options;
  }

  // Starts `id` holding `devices` ("gpu:1=1000", ...) with gpu-milli `gpu_milli`; returns ""
  // or the failure's message.
  std::string StartWith(const std::string& id, std::vector<std::string> devices,
                        int64_t gpu_milli, const std::string& command) {
    security::ContainerTokenData data;
    data.container_id = id;
    data.node_id = nm_->node_id();
    data.user = "alice";
    data.resource = absl::StrCat("memory-mb=128,vcores=1",
                                 gpu_milli > 0 ? absl::StrCat(",gpu-milli=", gpu_milli) : "");
    data.expiry_ms = loop_.NowMs() + 600'000;
    data.rm_epoch = 1;
    data.app_id = "application_1_0001";
    data.devices = std::move(devices);
    v1::StartContainersRequest request;
    v1::StartContainerRequest* one = request.add_requests();
    *one->mutable_container_token() = rm_->IssueToken(data);
    one->mutable_launch_context()->add_command(command);
    v1::StartContainersResponse response;
    grpc::ClientContext context;
    grpc::Status status = stub_->StartContainers(&context, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    if (response.failed_size() > 0) return response.failed(0).message();
    return "";
  }

  // The devices the last acknowledged heartbeat reports `id` running with, after one exists.
  std::vector<std::string> RunningDevices(const std::string& id) {
    std::vector<std::string> out;
    rm_->WaitUntil([&](FakeRm& rm) {
      const v1::ContainerStatus* s =
          rm.heartbeats_.empty() ? nullptr
                                 : FindStatus(rm.heartbeats_.back(), id, v1::CONTAINER_RUNNING);
      if (s == nullptr) return false;
      out.clear();
      for (const v1::DeviceAssignment& a : s->devices())
        out.push_back(absl::StrCat(a.type(), ":", a.index(), "=", a.milli()));
      return true;
    });
    return out;
  }

  std::string dev_dir_;
};

TEST_F(NodeManagerDevicesTest, RegistersDevicesAndGpuMilliOfTheHealthyOnes) {
  StartNm(Options(FourGpus(false, {true, true, true, false}), /*use_cgroups=*/false));
  EXPECT_EQ(nm_->capability()[kGpuMilli], 3000);
  v1::RegisterNodeManagerRequest registration = rm_->With([](FakeRm& rm) {
    return rm.registrations_.front();
  });
  EXPECT_EQ(registration.capability().values().at("gpu-milli"), 3000);
  ASSERT_EQ(registration.devices_size(), 4);
  EXPECT_EQ(registration.devices(1).index(), 1);
  EXPECT_EQ(registration.devices(1).device_minor(), 7);
  EXPECT_EQ(registration.devices(1).topology_group(), "g0");
  EXPECT_TRUE(registration.devices(1).healthy());
  EXPECT_FALSE(registration.devices(3).healthy());
  EXPECT_THAT(nm_->missing_features(), ::testing::Contains(HasSubstr("device isolation off")));
}

TEST_F(NodeManagerDevicesTest, ConfiguredGpuMilliThatDisagreesFailsStart) {
  NodeManagerOptions options = Options(FourGpus(false), false);
  options.capability[kGpuMilli] = 2000;
  absl::StatusOr<std::unique_ptr<NodeManager>> nm = NodeManager::Start(options, &loop_);
  ASSERT_FALSE(nm.ok());
  EXPECT_THAT(nm.status().message(), HasSubstr("gpu-milli=2000 but 4 healthy GPU(s)"));
}

TEST_F(NodeManagerDevicesTest, GivesTheTokensDevicesAndRefusesWhatItCannot) {
  StartNm(Options(FourGpus(false, {true, true, true, false}), /*use_cgroups=*/false));
  EXPECT_EQ(StartWith("container_1_0001_01_000001", {"gpu:1=1000"}, 1000,
                      "echo \"$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES|$WEFT_GPU_SHARES\"; "
                      "sleep 30"),
            "");
  EXPECT_THAT(RunningDevices("container_1_0001_01_000001"), ElementsAre("gpu:1=1000"));
  // Held: no one else gets it; unknown, unhealthy and miscounted grants are refused.
  EXPECT_THAT(StartWith("container_1_0001_01_000002", {"gpu:1=500"}, 500, "true"),
              HasSubstr("container container_1_0001_01_000002: its token grants 500 milli of "
                        "device gpu:1, of which running containers hold 1000"));
  EXPECT_THAT(StartWith("container_1_0001_01_000003", {"gpu:7=1000"}, 1000, "true"),
              HasSubstr("grants device gpu:7, which this node does not have"));
  EXPECT_THAT(StartWith("container_1_0001_01_000004", {"gpu:3=1000"}, 1000, "true"),
              HasSubstr("which is unhealthy"));
  EXPECT_THAT(StartWith("container_1_0001_01_000005", {"gpu:2=1000"}, 2000, "true"),
              HasSubstr("asks for gpu-milli=2000 but grants devices totalling 1000"));
  // Two halves share GPU 0.
  EXPECT_EQ(StartWith("container_1_0001_01_000006", {"gpu:0=500"}, 500,
                      "echo \"$CUDA_VISIBLE_DEVICES $WEFT_GPU_SHARES\""),
            "");
  EXPECT_EQ(StartWith("container_1_0001_01_000007", {"gpu:0=500"}, 500, "sleep 30"), "");
  ASSERT_TRUE(WaitCompleted("container_1_0001_01_000006").has_value());
  EXPECT_EQ(ReadLog("container_1_0001_01_000006"), "0 0=500\n");
  EXPECT_EQ(ReadLog("container_1_0001_01_000001"), "1|1|1=1000\n");
  // A container without devices sees none (no isolation here: CUDA_VISIBLE_DEVICES is empty).
  EXPECT_EQ(StartWith("container_1_0001_01_000008", {}, 0,
                      "echo \"[${CUDA_VISIBLE_DEVICES-unset}]\""),
            "");
  ASSERT_TRUE(WaitCompleted("container_1_0001_01_000008").has_value());
  EXPECT_EQ(ReadLog("container_1_0001_01_000008"), "[]\n");
  // The half GPU 0 freed is given again.
  EXPECT_EQ(StartWith("container_1_0001_01_000009", {"gpu:0=500"}, 500, "true"), "");
}

// A plugin whose devices the test changes: GPUs 0 and 1, healthy unless the test says not.
class SwitchablePlugin : public DevicePlugin {
 public:
  std::string type() const override { return "gpu"; }
  absl::StatusOr<std::vector<v1::Device>> Discover() override {
    std::vector<v1::Device> out;
    for (int i = 0; i < 2; ++i) {
      v1::Device d;
      d.set_type("gpu");
      d.set_index(i);
      d.set_path(absl::StrCat("/dev/nvidia", i));
      d.set_device_major(1);
      d.set_device_minor(kFakeNumbers[i].second);
      d.set_healthy(!(i == 1 && gpu1_failed.load()));
      out.push_back(d);
    }
    return out;
  }
  std::map<std::string, std::string> ContainerEnv(const std::vector<DeviceShare>&,
                                                  bool) const override {
    return {};
  }
  std::atomic<bool> gpu1_failed{false};
};

TEST_F(NodeManagerDevicesTest, AGpuThatTurnsUnhealthyIsReportedAndRefused) {
  auto plugin = std::make_shared<SwitchablePlugin>();
  NodeManagerOptions options = Options(plugin, /*use_cgroups=*/false);
  options.device_health_interval_ms = 1;  // every heartbeat
  StartNm(options);
  EXPECT_EQ(nm_->capability()[kGpuMilli], 2000);
  plugin->gpu1_failed = true;
  // The next heartbeats carry the change, once.
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) {
    for (const v1::NodeHeartbeatRequest& h : rm.heartbeats_) {
      for (const v1::Device& d : h.devices()) {
        if (d.index() == 1 && !d.healthy()) return true;
      }
    }
    return false;
  }));
  EXPECT_THAT(StartWith("container_1_0001_01_000001", {"gpu:1=1000"}, 1000, "true"),
              HasSubstr("gpu:1 (/dev/nvidia1), which is unhealthy"));
  EXPECT_EQ(StartWith("container_1_0001_01_000002", {"gpu:0=1000"}, 1000, "true"), "");
  const size_t reports = rm_->With([](FakeRm& rm) {
    size_t n = 0;
    for (const v1::NodeHeartbeatRequest& h : rm.heartbeats_) n += h.devices_size();
    return n;
  });
  EXPECT_EQ(reports, 1u);  // only the change, only once
}

// A plugin whose health discoveries block until the test lets them go, as a hung nvidia-smi
// does until its timeout; the discovery at Start answers at once.
class StuckPlugin : public SwitchablePlugin {
 public:
  absl::StatusOr<std::vector<v1::Device>> Discover() override {
    if (calls.fetch_add(1) > 0) release.WaitForNotification();
    return SwitchablePlugin::Discover();
  }
  std::atomic<int> calls{0};
  absl::Notification release;
};

TEST_F(NodeManagerDevicesTest, AHungHealthDiscoveryDoesNotStopHeartbeats) {
  auto plugin = std::make_shared<StuckPlugin>();
  // Lets a hung discovery go however the test ends (Shutdown waits for it).
  absl::Cleanup let_go = [&plugin] {
    if (!plugin->release.HasBeenNotified()) plugin->release.Notify();
  };
  NodeManagerOptions options = Options(plugin, /*use_cgroups=*/false);
  options.device_health_interval_ms = 1;  // every heartbeat
  StartNm(options);
  plugin->gpu1_failed = true;
  ASSERT_TRUE(rm_->WaitUntil([&plugin](FakeRm&) { return plugin->calls.load() >= 2; }));
  const size_t before = rm_->With([](FakeRm& rm) { return rm.heartbeats_.size(); });
  // Heartbeats go on while the discovery hangs, without the change and without a second
  // discovery beside the hung one.
  ASSERT_TRUE(rm_->WaitUntil(
      [before](FakeRm& rm) { return rm.heartbeats_.size() >= before + 3; }));
  EXPECT_EQ(plugin->calls.load(), 2);
  EXPECT_EQ(rm_->With([](FakeRm& rm) {
    size_t n = 0;
    for (const v1::NodeHeartbeatRequest& h : rm.heartbeats_) n += h.devices_size();
    return n;
  }),
            0u);
  // Once it answers, the change goes out in a heartbeat.
  plugin->release.Notify();
  ASSERT_TRUE(rm_->WaitUntil([](FakeRm& rm) {
    for (const v1::NodeHeartbeatRequest& h : rm.heartbeats_) {
      for (const v1::Device& d : h.devices()) {
        if (d.index() == 1 && !d.healthy()) return true;
      }
    }
    return false;
  }));
}

TEST_F(NodeManagerDevicesTest, CgroupDeniesTheGpusNotGiven) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (mknod, cgroups)";
  StartNm(Options(FourGpus(true), /*use_cgroups=*/true));
  // Its CUDA and NVIDIA variables, then opens every fake GPU node: "ok" or "denied" for each.
  std::string probe = "echo \"$CUDA_VISIBLE_DEVICES|$NVIDIA_VISIBLE_DEVICES\"; ";
  for (int i = 0; i < 4; ++i) {
    absl::StrAppend(&probe, "if (exec 3<", dev_dir_, "/nvidia", i, ") 2>/dev/null; then echo ", i,
                    ":ok; else echo ", i, ":denied; fi; ");
  }
  EXPECT_EQ(StartWith("container_1_0001_01_000001", {"gpu:1=1000"}, 1000, probe), "");
  ASSERT_TRUE(WaitCompleted("container_1_0001_01_000001").has_value());
  // CUDA sees only GPU 1, as its device 0.
  EXPECT_EQ(ReadLog("container_1_0001_01_000001"), "0|1\n0:denied\n1:ok\n2:denied\n3:denied\n");
  EXPECT_EQ(StartWith("container_1_0001_01_000002", {}, 0, probe), "");
  ASSERT_TRUE(WaitCompleted("container_1_0001_01_000002").has_value());
  EXPECT_EQ(ReadLog("container_1_0001_01_000002"),
            "|\n0:denied\n1:denied\n2:denied\n3:denied\n");
}

}  // namespace
}  // namespace weft::nm
