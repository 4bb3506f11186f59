// Copyright Weft authors. The core's GPUs (scheduler_gpu.cc): shares of one GPU, whole GPUs,
// topology groups, health, recovery and release; every allocation names its GPUs.
#include <map>

#include "gtest/gtest.h"
#include "scheduler/test_util.h"

namespace weft::scheduler {
namespace {

using testing::App;
using testing::Ask;
using testing::Asks;
using testing::MakeScheduler;

GpuDevice G(int32_t index, std::string group = "", bool healthy = true) {
  GpuDevice d;
  d.index = index;
  d.group = std::move(group);
  d.healthy = healthy;
  return d;
}

Resource Gpu(int64_t milli) {
  Resource r = Resource::Of(1024, 1);
  r[kGpuMilli] = milli;
  return r;
}

NodeSpec GpuNode(const std::string& name, std::vector<GpuDevice> gpus) {
  NodeSpec n;
  n.name = name;
  n.capacity = Resource::Of(64 * 1024, 64);
  int64_t healthy = 0;
  for (const GpuDevice& g : gpus) healthy += g.healthy ? 1 : 0;
  n.capacity[kGpuMilli] = healthy * 1000;
  n.gpus = std::move(gpus);
  return n;
}

// GPU index -> milli held, over the allocations.
std::map<int32_t, int32_t> Held(const std::vector<Allocation>& allocs) {
  std::map<int32_t, int32_t> held;
  for (const Allocation& a : allocs) {
    for (const DeviceShare& d : a.devices) held[d.index] += d.milli;
  }
  return held;
}

TEST(SchedulerGpuTest, SharesFillOneGpuBeforeBreakingAnother) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0), G(1)})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(4, Gpu(500))})).ok());
  const std::vector<Allocation> got = s->Schedule(0).allocations;
  ASSERT_EQ(got.size(), 4u);
  for (const Allocation& a : got) {
    ASSERT_EQ(a.devices.size(), 1u);
    EXPECT_EQ(a.devices[0].type, "gpu");
    EXPECT_EQ(a.devices[0].milli, 500);
  }
  EXPECT_EQ(Held(got), (std::map<int32_t, int32_t>{{0, 1000}, {1, 1000}}));
  // Two 500s share GPU 0 first (best fit), so a whole-GPU ask still fits after the first two.
  EXPECT_EQ(got[0].devices[0].index, got[1].devices[0].index);
}

TEST(SchedulerGpuTest, AWholeGpuAskWaitsForAWhollyFreeGpu) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0), G(1)})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  // 600 on one GPU and 600 on the other: 800 free in all, no whole GPU, no room for 500.
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Gpu(600))})).ok());
  std::vector<Allocation> first = s->Schedule(0).allocations;
  ASSERT_EQ(first.size(), 2u);
  EXPECT_NE(first[0].devices[0].index, first[1].devices[0].index);
  ASSERT_TRUE(s->AddApp(App(2), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(2, Asks({Ask(1, Gpu(1000)), Ask(1, Gpu(500), "*", 2)})).ok());
  EXPECT_TRUE(s->Schedule(1).allocations.empty());
  // One 600 ends: its GPU is whole again and the 1000 takes it.
  ASSERT_TRUE(s->ContainerCompleted(first[0].container).ok());
  std::vector<Allocation> second = s->Schedule(2).allocations;
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].resource[kGpuMilli], 1000);
  ASSERT_EQ(second[0].devices.size(), 1u);
  EXPECT_EQ(second[0].devices[0].index, first[0].devices[0].index);
  EXPECT_EQ(second[0].devices[0].milli, 1000);
}

TEST(SchedulerGpuTest, SeveralWholeGpusAndTopologyGroups) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0, "nvl0"), G(1, "nvl0"), G(2, "nvl1"), G(3, "nvl1")})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Gpu(1000))})).ok());
  std::vector<Allocation> one = s->Schedule(0).allocations;
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].devices[0].index, 0);
  // 2 GPUs of one group: nvl0 has only GPU 1 left, so both come from nvl1.
  ResourceRequest pair = Ask(1, Gpu(2000), "*", 2);
  pair.gpu_same_group = true;
  ASSERT_TRUE(s->UpdateRequests(1, Asks({pair})).ok());
  std::vector<Allocation> two = s->Schedule(1).allocations;
  ASSERT_EQ(two.size(), 1u);
  ASSERT_EQ(two[0].devices.size(), 2u);
  EXPECT_EQ(two[0].devices[0].index, 2);
  EXPECT_EQ(two[0].devices[1].index, 3);
  // Another same-group pair cannot be placed (GPU 1 is alone in nvl0), a plain single can.
  ASSERT_TRUE(s->UpdateRequests(1, Asks({pair, Ask(1, Gpu(1000), "*", 3)})).ok());
  std::vector<Allocation> three = s->Schedule(2).allocations;
  ASSERT_EQ(three.size(), 1u);
  EXPECT_EQ(three[0].resource[kGpuMilli], 1000);
  EXPECT_EQ(three[0].devices[0].index, 1);
}

TEST(SchedulerGpuTest, AnUnhealthyGpuIsOfferedToNoNewContainer) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0), G(1)})).ok());
  EXPECT_EQ(s->cluster_total()[kGpuMilli], 2000);
  ASSERT_TRUE(s->SetNodeGpus("g1", {G(0, "", false), G(1)}).ok());
  EXPECT_EQ(s->cluster_total()[kGpuMilli], 1000);
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(3, Gpu(400))})).ok());
  std::vector<Allocation> got = s->Schedule(0).allocations;
  ASSERT_EQ(got.size(), 2u);  // 400 + 400 on GPU 1; a third does not fit in its 200
  EXPECT_EQ(Held(got), (std::map<int32_t, int32_t>{{1, 800}}));
  // Reporting other GPUs than it registered is refused, naming the node.
  absl::Status bad = s->SetNodeGpus("g1", {G(0), G(7)});
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("g1"), std::string::npos) << bad;
}

TEST(SchedulerGpuTest, ANodeMustReportAsMuchGpuMilliAsHealthyGpus) {
  auto s = MakeScheduler("", "fifo");
  NodeSpec n = GpuNode("g1", {G(0), G(1)});
  n.capacity[kGpuMilli] = 3000;
  absl::StatusOr<NodeId> r = s->AddNode(n);
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("gpu-milli=3000"), std::string::npos) << r.status();
  n = GpuNode("g1", {G(0), G(0)});
  EXPECT_NE(s->AddNode(n).status().message().find("given twice"), std::string::npos);
  // Without a list, whole GPUs of gpu-milli are anonymous GPUs 0..k-1; a fraction is refused.
  NodeSpec sim;
  sim.name = "sim1";
  sim.capacity = Gpu(1500);
  EXPECT_FALSE(s->AddNode(sim).ok());
  sim.capacity = Gpu(3000);
  ASSERT_TRUE(s->AddNode(sim).ok());
  EXPECT_EQ(s->node(s->FindNode("sim1"))->gpus.size(), 3u);
}

TEST(SchedulerGpuTest, ReleaseAndRecoveryKeepTheSharesExact) {
  auto s = MakeScheduler("", "fifo", 100);
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0), G(1)})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  const NodeId g1 = s->FindNode("g1");
  RecoveredContainer rc;
  rc.container = 7;
  rc.app = 1;
  rc.node = g1;
  rc.resource = Gpu(300);
  rc.devices = {DeviceShare{"gpu", 1, 300}};
  ASSERT_TRUE(s->RecoverContainer(rc).ok());
  EXPECT_EQ(s->ContainerDevices(7), rc.devices);
  EXPECT_EQ(s->node(g1)->gpus[1].free_milli, 700);
  // A second claim past the GPU's room is refused and changes nothing.
  rc.container = 8;
  rc.resource = Gpu(800);
  rc.devices = {DeviceShare{"gpu", 1, 800}};
  absl::Status over = s->RecoverContainer(rc);
  EXPECT_FALSE(over.ok());
  EXPECT_NE(over.message().find("gpu:1=800"), std::string::npos) << over;
  EXPECT_EQ(s->node(g1)->gpus[1].free_milli, 700);
  // Shares that do not add up to the resource are refused too.
  rc.resource = Gpu(500);
  rc.devices = {DeviceShare{"gpu", 0, 400}};
  EXPECT_FALSE(s->RecoverContainer(rc).ok());
  ASSERT_TRUE(s->ContainerCompleted(7).ok());
  EXPECT_EQ(s->node(g1)->gpus[1].free_milli, 1000);
  EXPECT_TRUE(s->ContainerDevices(7).empty());
}

TEST(SchedulerGpuTest, AContainersGpusCannotBeResized) {
  auto s = MakeScheduler("", "fifo");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0)})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Gpu(500))})).ok());
  std::vector<Allocation> got = s->Schedule(0).allocations;
  ASSERT_EQ(got.size(), 1u);
  RequestUpdate u;
  u.updates.push_back({got[0].container, Gpu(1000)});
  absl::Status s1 = s->UpdateRequests(1, u);
  EXPECT_FALSE(s1.ok());
  EXPECT_NE(s1.message().find("gpu-milli 500 -> 1000"), std::string::npos) << s1;
}

TEST(SchedulerGpuTest, RemovingTheNodeDropsItsShares) {
  auto s = MakeScheduler("", "fair");
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0)})).ok());
  ASSERT_TRUE(s->AddApp(App(1), 0).ok());
  ASSERT_TRUE(s->UpdateRequests(1, Asks({Ask(2, Gpu(500))})).ok());
  std::vector<Allocation> got = s->Schedule(0).allocations;
  ASSERT_EQ(got.size(), 2u);
  auto lost = s->RemoveNode("g1");
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->size(), 2u);
  EXPECT_TRUE(s->ContainerDevices(got[0].container).empty());
  // The same node back: all of its GPU free again.
  ASSERT_TRUE(s->AddNode(GpuNode("g1", {G(0)})).ok());
  EXPECT_EQ(s->node(s->FindNode("g1"))->gpus[0].free_milli, 1000);
}

// Node "whole" (added first, so first in the fit index) has a free GPU; node "half" a GPU with
// 500 held. A 500 ask, beside a later whole-GPU one (so that fgd's target workload has both):
// first-fit breaks the whole GPU, fgd (and the packing baselines) fill the half one.
std::string PlaceShareBesideAHalfUsedGpu(const std::string& placement) {
  auto s = MakeScheduler("gpu-placement: " + placement, "fifo", 100);
  EXPECT_TRUE(s->AddNode(GpuNode("whole", {G(0)})).ok());
  EXPECT_TRUE(s->AddNode(GpuNode("half", {G(0)})).ok());
  EXPECT_TRUE(s->AddApp(App(1), 0).ok());
  RecoveredContainer rc;
  rc.container = 7;
  rc.app = 1;
  rc.node = s->FindNode("half");
  rc.resource = Gpu(500);
  rc.devices = {DeviceShare{"gpu", 0, 500}};
  EXPECT_TRUE(s->RecoverContainer(rc).ok());
  EXPECT_TRUE(s->UpdateRequests(1, Asks({Ask(1, Gpu(500)), Ask(1, Gpu(1000), "*", 2)})).ok());
  for (const Allocation& a : s->Schedule(0).allocations) {
    if (a.resource[kGpuMilli] == 500) return s->node(a.node)->name;
  }
  return "none";
}

TEST(SchedulerGpuTest, FragmentationAwarePlacementKeepsAWholeGpuFree) {
  EXPECT_EQ(PlaceShareBesideAHalfUsedGpu("first-fit"), "whole");
  EXPECT_EQ(PlaceShareBesideAHalfUsedGpu("fgd"), "half");
  EXPECT_EQ(PlaceShareBesideAHalfUsedGpu("best-fit"), "half");
  EXPECT_EQ(PlaceShareBesideAHalfUsedGpu("gpu-packing"), "half");
}

TEST(SchedulerGpuTest, AnUnknownGpuPlacementIsRefusedNamingTheKnownOnes) {
  ResourceTypeRegistry reg;
  auto config = ParseSchedulerConfig("gpu-placement: tightest", reg, "test");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("tightest"), std::string::npos) << config.status();
  EXPECT_NE(config.status().message().find("fgd"), std::string::npos) << config.status();
  EXPECT_FALSE(ParseSchedulerConfig("gpu-placement-candidates: 0", reg, "test").ok());
}

}  // namespace
}  // namespace weft::scheduler
