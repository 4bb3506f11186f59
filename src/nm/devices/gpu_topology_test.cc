// Copyright Weft authors. Tests of `nvidia-smi topo -m` parsing (the real 1-GPU H100 sample and
// a 4-GPU variant with two NVLink pairs and a NIC) and of topology groups.
#include "nm/devices/gpu_topology.h"

#include <string>
#include <vector>

#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/devices/testdata_util.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(NvidiaSmiTopoTest, ParsesTheRealH100Sample) {
  absl::StatusOr<std::vector<std::vector<std::string>>> links =
      ParseNvidiaSmiTopo(DevicesTestdata("h100-1gpu-topo.txt"));
  ASSERT_TRUE(links.ok()) << links.status();
  EXPECT_THAT(*links, ElementsAre(ElementsAre("X")));
  EXPECT_THAT(TopologyGroups(*links, {0}), ElementsAre("g0"));
}

TEST(NvidiaSmiTopoTest, TwoNvlinkPairsAreTwoGroupsAndNicsAreSkipped) {
  absl::StatusOr<std::vector<std::vector<std::string>>> links =
      ParseNvidiaSmiTopo(DevicesTestdata("h100-4gpu-topo.txt"));
  ASSERT_TRUE(links.ok()) << links.status();
  ASSERT_EQ(links->size(), 4u);
  EXPECT_THAT((*links)[2], ElementsAre("SYS", "SYS", "X", "NV4"));
  EXPECT_THAT(TopologyGroups(*links, {0, 1, 2, 3}), ElementsAre("g0", "g0", "g2", "g2"));
  // Groups are named by the Weft index (minor number) of their lowest GPU.
  EXPECT_THAT(TopologyGroups(*links, {7, 6, 5, 4}), ElementsAre("g6", "g6", "g4", "g4"));
}

TEST(NvidiaSmiTopoTest, PcieSwitchesJoinAndHostBridgesSeparate) {
  // GPU0-GPU1 behind one switch (PIX), GPU1-GPU2 through several (PXB): one group,
  // transitively; GPU3 reaches them only through the host bridge or the CPUs.
  const std::vector<std::vector<std::string>> links = {{"X", "PIX", "PHB", "SYS"},
                                                       {"PIX", "X", "PXB", "NODE"},
                                                       {"PHB", "PXB", "X", "SYS"},
                                                       {"SYS", "NODE", "SYS", "X"}};
  EXPECT_THAT(TopologyGroups(links, {0, 1, 2, 3}), ElementsAre("g0", "g0", "g0", "g3"));
}

TEST(NvidiaSmiTopoTest, MalformedMatricesAreRefusedNamingTheLine) {
  const std::string good = DevicesTestdata("h100-4gpu-topo.txt");
  struct Case {
    std::string text;
    std::string says;
  };
  const std::vector<Case> cases = {
      {"", "no header naming GPU0"},
      {"Legend:\n  X = Self\n", "no header naming GPU0"},
      {absl::StrReplaceAll(good, {{"GPU2\tSYS\tSYS\t X ", "GPU2\tSYS\tSYS\tQQQ"}}),
       "'QQQ' is not a known link"},
      {absl::StrReplaceAll(good, {{"GPU1\tNV4\t X ", "GPU1\tNV4\tNV4"}}), "GPU1 to GPU1 is 'NV4'"},
      {absl::StrReplaceAll(good, {{"GPU3\tSYS", "GPU5\tSYS"}}), "expected the row of GPU3"},
      {absl::StrReplaceAll(good, {{"GPU3\tSYS\tSYS\tNV4\t X \tSYS\t16-31\t1\t\tN/A\n", ""}}),
       "names 4 GPU(s) but has 3 row(s)"},
      {"\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV2\t X\n", "line 2"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::vector<std::vector<std::string>>> links = ParseNvidiaSmiTopo(c.text);
    EXPECT_EQ(links.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(links.status().message(), HasSubstr(c.says)) << c.text;
  }
}

}  // namespace
}  // namespace weft::nm
