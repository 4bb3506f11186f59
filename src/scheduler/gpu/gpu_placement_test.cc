// Copyright Weft authors.
#include "scheduler/gpu/gpu_placement.h"

#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace weft::gpu {
namespace {

GpuNode Node(std::vector<int32_t> devices, int64_t cpu = 32000, std::string model = "T4") {
  GpuNode n;
  n.cpu_milli_free = cpu;
  n.memory_mib_free = 256 * 1024;
  n.device_free_milli = std::move(devices);
  n.model = n.device_free_milli.empty() ? "" : std::move(model);
  return n;
}

GpuAsk Ask(int64_t gpu, int64_t cpu = 1000, std::vector<std::string> models = {}) {
  GpuAsk a;
  a.cpu_milli = cpu;
  a.memory_mib = 1024;
  a.gpu_milli = gpu;
  a.allowed_models = std::move(models);
  return a;
}

TargetWorkload OneType(int64_t cpu, int32_t milli, int32_t devices) {
  TaskType t;
  t.cpu_milli = cpu;
  t.milli_per_device = milli;
  t.devices = devices;
  t.popularity = 1;
  auto w = TargetWorkload::FromTypes({t});
  return *w;
}

std::unique_ptr<GpuPlacement> Make(absl::string_view name, const TargetWorkload* w = nullptr,
                                   uint64_t seed = 1) {
  auto p = MakeGpuPlacement(name, w, seed);
  EXPECT_TRUE(p.ok()) << p.status();
  return std::move(*p);
}

int Pick(GpuPlacement& p, const std::vector<GpuNode>& nodes, const GpuAsk& ask,
         DeviceChoice* devices = nullptr) {
  std::vector<const GpuNode*> c;
  for (const GpuNode& n : nodes) c.push_back(&n);
  PickedNode picked = PickBestNode(p, c, ask, nullptr);
  if (devices != nullptr) *devices = picked.verdict.devices;
  return picked.index;
}

TEST(GpuPlacementTest, AsksAreValidated) {
  EXPECT_TRUE(ValidateAsk(Ask(0)).ok());
  EXPECT_TRUE(ValidateAsk(Ask(1)).ok());
  EXPECT_TRUE(ValidateAsk(Ask(999)).ok());
  EXPECT_TRUE(ValidateAsk(Ask(1000)).ok());
  EXPECT_TRUE(ValidateAsk(Ask(8000)).ok());
  EXPECT_FALSE(ValidateAsk(Ask(1500)).ok());
  EXPECT_FALSE(ValidateAsk(Ask(-1)).ok());
  EXPECT_FALSE(ValidateAsk(Ask(500, -1)).ok());
  auto s = ValidateAsk(Ask(2500));
  EXPECT_NE(s.message().find("gpu_milli=2500"), std::string::npos) << s;
}

TEST(GpuPlacementTest, RegistryRefusesUnknownNamesAndFgdWithoutWorkload) {
  auto p = MakeGpuPlacement("tetris", nullptr, 1);
  ASSERT_FALSE(p.ok());
  for (const std::string& n : GpuPlacementNames())
    EXPECT_NE(p.status().message().find(n), std::string::npos) << p.status();
  EXPECT_FALSE(MakeGpuPlacement("fgd", nullptr, 1).ok());
  TargetWorkload w = OneType(1000, 500, 1);
  for (const std::string& n : GpuPlacementNames()) {
    auto q = MakeGpuPlacement(n, &w, 1);
    ASSERT_TRUE(q.ok()) << n;
    EXPECT_EQ((*q)->name(), n);
  }
}

TEST(GpuPlacementTest, AssignDevicesAlone) {
  GpuNode n = Node({1000, 300, 700, 1000});
  auto share = AssignDevices(n, Ask(250));
  ASSERT_TRUE(share.has_value());
  EXPECT_EQ(share->ToVector(), (std::vector<int32_t>{1}));  // least room that fits
  EXPECT_EQ(share->milli_per_device, 250);
  auto first = AssignDevices(n, Ask(400), /*best_fit=*/false);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->ToVector(), (std::vector<int32_t>{0}));
  auto whole = AssignDevices(n, Ask(2000));
  ASSERT_TRUE(whole.has_value());
  EXPECT_EQ(whole->ToVector(), (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(whole->milli_per_device, 1000);
  EXPECT_FALSE(AssignDevices(n, Ask(3000)).has_value());
  EXPECT_FALSE(AssignDevices(n, Ask(500, 64000)).has_value());  // not enough CPU
  EXPECT_FALSE(AssignDevices(n, Ask(500, 1000, {"A100"})).has_value());
}

TEST(GpuPlacementTest, FgdKeepsRoomForTheCommonTaskWhereBestFitDoesNot) {
  // Every expected task takes 600 milli of one GPU. Node 0 has 700 free on its one GPU (room
  // for one such task); node 1 a whole free GPU. A 300 share on node 0 would leave 400 that no
  // expected task can use; on node 1 it leaves 700, still room for one.
  TargetWorkload w = OneType(1000, 600, 1);
  std::vector<GpuNode> nodes = {Node({700}), Node({1000})};
  EXPECT_EQ(Pick(*Make("best-fit"), nodes, Ask(300)), 0);
  EXPECT_EQ(Pick(*Make("fgd", &w), nodes, Ask(300)), 1);
}

TEST(GpuPlacementTest, FgdKeepsAWholeGpuFreeOnTheNode) {
  // Whole-GPU tasks expected. On [1000, 500] a 400 share on device 1 keeps device 0 whole.
  TargetWorkload w = OneType(1000, 1000, 1);
  std::vector<GpuNode> nodes = {Node({1000, 500})};
  DeviceChoice d;
  ASSERT_EQ(Pick(*Make("fgd", &w), nodes, Ask(400), &d), 0);
  EXPECT_EQ(d.ToVector(), (std::vector<int32_t>{1}));
  // Hand-computed score: fragmentation 500 -> 100, sigmoid(0.4) = 0.5987 -> 59; ours 100 - 59.
  auto fgd = Make("fgd", &w);
  EXPECT_DOUBLE_EQ(fgd->Score(nodes[0], Ask(400)).score, 41);
}

TEST(GpuPlacementTest, BaselinesScoreAsTheSimulatorDoes) {
  // best-fit: left (0.5 * 16000/128000 + 0.5 * 1500/8000) = 0.15625 -> 84; ours 16.
  GpuNode n = Node({1000, 1000}, 17000);
  EXPECT_DOUBLE_EQ(Make("best-fit")->Score(n, Ask(500)).score, 16);
  // dot-product: (17000/128000 * 1000/128000 + 2000/8000 * 500/8000) / 2 -> 100 * (1 - .0083)
  // = 99.17 -> 99; ours 1.
  EXPECT_DOUBLE_EQ(Make("dot-product")->Score(n, Ask(500)).score, 1);
  // gpu-packing: an idle 2-GPU node scores 33 - 2 = 31 (ours 69); a partly used device first
  // (100 - 60/10 = 94, ours 6); a whole device on a used node 50 - 1 (ours 51).
  auto packing = Make("gpu-packing");
  EXPECT_DOUBLE_EQ(packing->Score(n, Ask(500)).score, 69);
  EXPECT_DOUBLE_EQ(packing->Score(Node({600, 1000}), Ask(500)).score, 6);
  EXPECT_DOUBLE_EQ(packing->Score(Node({600, 1000}), Ask(1000)).score, 51);
  // gpu-clustering: tiers by the classes a node hosts, then fullness.
  auto clustering = Make("gpu-clustering");
  GpuNode shares = Node({500, 1000});
  shares.hosted[0] = 1;
  GpuNode wholes = Node({0, 1000});
  wholes.hosted[1] = 1;
  GpuNode idle = Node({1000, 1000});
  std::vector<GpuNode> nodes = {wholes, idle, shares};
  EXPECT_EQ(Pick(*clustering, nodes, Ask(300)), 2);
  EXPECT_EQ(Pick(*clustering, nodes, Ask(1000)), 0);
  // 25 * (8000 - 1500) / 8000 + 75 = 95; ours 5.
  EXPECT_DOUBLE_EQ(clustering->Score(shares, Ask(300)).score, 5);
}

TEST(GpuPlacementTest, PackingFillsAPartlyUsedDevice) {
  std::vector<GpuNode> nodes = {Node({1000, 1000}), Node({1000, 400}), Node({700, 1000})};
  DeviceChoice d;
  EXPECT_EQ(Pick(*Make("gpu-packing"), nodes, Ask(300), &d), 1);
  EXPECT_EQ(d.ToVector(), (std::vector<int32_t>{1}));
}

TEST(GpuPlacementTest, RandomIsSeeded) {
  std::vector<GpuNode> nodes;
  for (int i = 0; i < 50; ++i) nodes.push_back(Node({1000, 1000}));
  auto a = Make("random", nullptr, 7);
  auto b = Make("random", nullptr, 7);
  auto c = Make("random", nullptr, 8);
  std::vector<int> pa, pb, pc;
  for (int i = 0; i < 20; ++i) {
    pa.push_back(Pick(*a, nodes, Ask(500)));
    pb.push_back(Pick(*b, nodes, Ask(500)));
    pc.push_back(Pick(*c, nodes, Ask(500)));
  }
  EXPECT_EQ(pa, pb);
  EXPECT_NE(pa, pc);
  EXPECT_GT(std::set<int>(pa.begin(), pa.end()).size(), 5u);
}

// The conformance loop: on random clusters, every policy places only where the ask fits,
// takes distinct devices with room, respects model constraints, never over-allocates a device,
// and fails an ask only when no node fits it.
TEST(GpuPlacementTest, ConformanceOverAllPolicies) {
  TaskType share{4000, 500, 1, {}, 3}, whole{8000, 1000, 2, {}, 1}, cpu{2000, 0, 0, {}, 1};
  auto w = TargetWorkload::FromTypes({share, whole, cpu});
  ASSERT_TRUE(w.ok());
  const std::vector<std::string> models = {"T4", "V100M32", "A10"};
  for (const std::string& name : GpuPlacementNames()) {
    std::mt19937_64 rng(42);
    std::vector<GpuNode> nodes;
    for (int i = 0; i < 30; ++i) {
      const int devices = std::vector<int>{0, 1, 2, 4, 8}[rng() % 5];
      nodes.push_back(Node(std::vector<int32_t>(devices, 1000), 8000 * (1 + rng() % 12),
                           models[rng() % models.size()]));
    }
    auto policy = Make(name, &*w, 3);
    std::mt19937_64 tie(5);
    int placed = 0, failed = 0;
    for (int t = 0; t < 600; ++t) {
      GpuAsk ask;
      const int kind = static_cast<int>(rng() % 4);
      ask.gpu_milli = kind == 0 ? 0 : kind == 1 ? 50 * (1 + rng() % 19) : 1000 << (rng() % 4);
      ask.cpu_milli = 1000 * (1 + rng() % 8);
      ask.memory_mib = 1024 * (1 + rng() % 16);
      if (ask.gpu_milli > 0 && rng() % 4 == 0) ask.allowed_models = {models[rng() % 3]};
      ASSERT_TRUE(ValidateAsk(ask).ok());
      std::vector<const GpuNode*> c;
      for (const GpuNode& n : nodes) c.push_back(&n);
      PickedNode p = PickBestNode(*policy, c, ask, &tie);
      if (p.index < 0) {
        ++failed;
        for (const GpuNode& n : nodes) ASSERT_FALSE(Fits(n, ask)) << name;
        continue;
      }
      ++placed;
      GpuNode& n = nodes[p.index];
      ASSERT_TRUE(Fits(n, ask)) << name;
      ASSERT_TRUE(ModelAllowed(ask, n.model)) << name;
      const DeviceChoice& d = p.verdict.devices;
      ASSERT_EQ(d.count, ask.DeviceCount()) << name;
      std::set<int32_t> distinct(d.devices().begin(), d.devices().end());
      ASSERT_EQ(static_cast<int>(distinct.size()), d.count) << name;
      for (int32_t dev : d.devices()) ASSERT_GE(n.device_free_milli[dev], d.milli_per_device);
      Apply(ask, d, &n);
      for (int32_t m : n.device_free_milli) ASSERT_TRUE(m >= 0 && m <= 1000) << name;
      ASSERT_GE(n.cpu_milli_free, 0);
      ASSERT_GE(n.memory_mib_free, 0);
    }
    EXPECT_GT(placed, 50) << name;
    EXPECT_GT(failed, 0) << name;  // the cluster fills up
  }
}

}  // namespace
}  // namespace weft::gpu
