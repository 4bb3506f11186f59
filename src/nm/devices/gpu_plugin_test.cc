// Copyright Weft authors. Tests of the GPU plugin: nvidia-smi XML from a real H100 host (and a
// 4-GPU variant of it), malformed XML, device lists, discovery with fake stat() and commands.
#include "nm/devices/gpu_plugin.h"

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/devices/testdata_util.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

TEST(NvidiaSmiXmlTest, ParsesTheRealH100Sample) {
  absl::StatusOr<std::vector<NvidiaSmiGpu>> gpus = ParseNvidiaSmiXml(DevicesTestdata("h100-1gpu.xml"));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 1u);
  const NvidiaSmiGpu& gpu = (*gpus)[0];
  EXPECT_EQ(gpu.minor_number, 0);
  EXPECT_EQ(gpu.uuid, "GPU-00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(gpu.product_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(gpu.pci_bus_id, "00000000:00:06.0");
  EXPECT_EQ(gpu.memory_mb, 81559);
  EXPECT_EQ(gpu.fault, "");
}

TEST(NvidiaSmiXmlTest, ParsesFourGpusSortedByMinor) {
  absl::StatusOr<std::vector<NvidiaSmiGpu>> gpus = ParseNvidiaSmiXml(DevicesTestdata("h100-4gpu.xml"));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  ASSERT_EQ(gpus->size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*gpus)[i].minor_number, i);
    EXPECT_EQ((*gpus)[i].uuid, absl::StrCat("GPU-00000000-1111-2222-3333-44444444444", i));
  }
}

TEST(NvidiaSmiXmlTest, RemappedRowFailureIsAFault) {
  std::string xml = DevicesTestdata("h100-1gpu.xml");
  const std::string no = "<remapped_row_failure>No</remapped_row_failure>";
  size_t at = xml.find(no);
  ASSERT_NE(at, std::string::npos);
  xml.replace(at, no.size(), "<remapped_row_failure>Yes</remapped_row_failure>");
  absl::StatusOr<std::vector<NvidiaSmiGpu>> gpus = ParseNvidiaSmiXml(xml);
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_THAT((*gpus)[0].fault, HasSubstr("remapped_row_failure"));
}

TEST(NvidiaSmiXmlTest, MalformedInputGetsClearErrors) {
  absl::StatusOr<std::vector<NvidiaSmiGpu>> truncated =
      ParseNvidiaSmiXml(DevicesTestdata("h100-1gpu.xml").substr(0, 500));
  EXPECT_EQ(truncated.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(truncated.status().message(), HasSubstr("is not XML"));

  absl::StatusOr<std::vector<NvidiaSmiGpu>> wrong_root = ParseNvidiaSmiXml("<foo/>");
  EXPECT_THAT(wrong_root.status().message(), HasSubstr("no <nvidia_smi_log>"));

  absl::StatusOr<std::vector<NvidiaSmiGpu>> no_minor = ParseNvidiaSmiXml(
      "<nvidia_smi_log><gpu id=\"00:01\"><minor_number>N/A</minor_number></gpu>"
      "</nvidia_smi_log>");
  EXPECT_EQ(no_minor.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(no_minor.status().message(), HasSubstr("GPU '00:01' has minor_number 'N/A'"));

  absl::StatusOr<std::vector<NvidiaSmiGpu>> twice = ParseNvidiaSmiXml(
      "<nvidia_smi_log><gpu id=\"a\"><minor_number>1</minor_number></gpu>"
      "<gpu id=\"b\"><minor_number>1</minor_number></gpu></nvidia_smi_log>");
  EXPECT_THAT(twice.status().message(), HasSubstr("two GPUs have minor_number 1"));

  absl::StatusOr<std::vector<NvidiaSmiGpu>> none =
      ParseNvidiaSmiXml("<nvidia_smi_log><attached_gpus>0</attached_gpus></nvidia_smi_log>");
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(*none, IsEmpty());
}

TEST(GpuListTest, ParsesAndRefuses) {
  absl::StatusOr<std::vector<GpuListEntry>> list =
      ParseGpuList("1:/dev/nvidia1@nvl0, 0:/dev/nvidia0@nvl0,3:/dev/x");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 3u);
  EXPECT_EQ((*list)[0].index, 0);
  EXPECT_EQ((*list)[0].path, "/dev/nvidia0");
  EXPECT_EQ((*list)[0].group, "nvl0");
  EXPECT_EQ((*list)[2].index, 3);
  EXPECT_EQ((*list)[2].group, "");
  for (const char* bad : {"x:/dev/a", "-1:/dev/a", "0:dev/a", "0:/dev/a,0:/dev/b",
                          "0:/dev/a,1:/dev/a", "0:/dev/a@bad group", ""}) {
    absl::StatusOr<std::vector<GpuListEntry>> parsed = ParseGpuList(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(parsed.status().message(), HasSubstr("GPU list item")) << bad;
  }
}

// A fake system: `nvidia-smi -q -x` prints `xml`, `nvidia-smi topo -m` prints `topo` (and fails
// when it is empty), device nodes are `nodes`.
GpuPluginEnv FakeEnv(std::string xml, std::map<std::string, std::pair<int32_t, int32_t>> nodes,
                     std::vector<std::vector<std::string>>* ran = nullptr, std::string topo = "") {
  GpuPluginEnv env;
  env.run = [xml, topo, ran](
                const std::vector<std::string>& argv) -> absl::StatusOr<CommandResult> {
    if (ran != nullptr) ran->push_back(argv);
    CommandResult result;
    if (argv.size() >= 2 && argv[1] == "topo") {
      result.stdout_text = topo;
      if (topo.empty()) {
        result.exit_code = 2;
        result.stderr_text = "topo: not supported\n";
      }
      return result;
    }
    result.stdout_text = xml;
    return result;
  };
  env.stat = [nodes](const std::string& path) -> absl::StatusOr<std::pair<int32_t, int32_t>> {
    auto it = nodes.find(path);
    if (it == nodes.end()) return absl::NotFoundError(absl::StrCat("stat ", path));
    return it->second;
  };
  return env;
}

TEST(GpuPluginTest, AutoDiscoversFromNvidiaSmiWithNumbersFromStat) {
  GpuPluginOptions options;
  options.nvidia_smi = "/opt/fake/nvidia-smi";
  options.device_dir = "/tmp/fakedev";
  std::vector<std::vector<std::string>> ran;
  GpuPlugin plugin(options, FakeEnv(DevicesTestdata("h100-4gpu.xml"),
                                    {{"/tmp/fakedev/nvidia0", {1, 5}},
                                     {"/tmp/fakedev/nvidia1", {1, 7}},
                                     {"/tmp/fakedev/nvidia2", {1, 8}}},
                                    &ran, DevicesTestdata("h100-4gpu-topo.txt")));
  absl::StatusOr<std::vector<v1::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_THAT(ran, ElementsAre(ElementsAre("/opt/fake/nvidia-smi", "-q", "-x"),
                               ElementsAre("/opt/fake/nvidia-smi", "topo", "-m")));
  ASSERT_EQ(devices->size(), 4u);
  EXPECT_EQ((*devices)[1].type(), "gpu");
  EXPECT_EQ((*devices)[1].index(), 1);
  EXPECT_EQ((*devices)[1].path(), "/tmp/fakedev/nvidia1");
  EXPECT_EQ((*devices)[1].device_major(), 1);
  EXPECT_EQ((*devices)[1].device_minor(), 7);
  EXPECT_EQ((*devices)[1].model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*devices)[1].memory_mb(), 81559);
  EXPECT_TRUE((*devices)[1].healthy());
  EXPECT_FALSE((*devices)[3].healthy());  // no device node
  // Two NVLink pairs (topo -m): 0-1 and 2-3.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*devices)[i].topology_group(), i < 2 ? "g0" : "g2") << i;
  }
  // A health check of the same GPUs runs -q -x only: the topology is kept.
  devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(ran.size(), 3u);
  EXPECT_EQ(ran.back(), (std::vector<std::string>{"/opt/fake/nvidia-smi", "-q", "-x"}));
  EXPECT_EQ((*devices)[3].topology_group(), "g2");
}

TEST(GpuPluginTest, TopologyIsLearnedAgainWhenTheGpusChange) {
  GpuPluginOptions options;
  options.device_dir = "/tmp/fakedev";
  // What the fake nvidia-smi prints; the test changes it between discoveries.
  auto xml = std::make_shared<std::string>(DevicesTestdata("h100-4gpu.xml"));
  auto topo = std::make_shared<std::string>(DevicesTestdata("h100-4gpu-topo.txt"));
  auto topo_runs = std::make_shared<int>(0);
  GpuPluginEnv env = FakeEnv("", {});
  env.run = [xml, topo, topo_runs](
                const std::vector<std::string>& argv) -> absl::StatusOr<CommandResult> {
    CommandResult result;
    if (argv[1] == "topo") {
      ++*topo_runs;
      result.stdout_text = *topo;
      if (topo->empty()) result.exit_code = 2;
    } else {
      result.stdout_text = *xml;
    }
    return result;
  };
  GpuPlugin plugin(options, env);
  ASSERT_TRUE(plugin.Discover().ok());
  EXPECT_EQ(*topo_runs, 1);
  // topo -m now fails, the GPUs are the same: not run, the groups stay.
  topo->clear();
  absl::StatusOr<std::vector<v1::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(*topo_runs, 1);
  EXPECT_EQ((*devices)[0].topology_group(), "g0");
  // GPU 3 is gone from nvidia-smi: another set, so topo -m runs again (and fails: no groups).
  const size_t last_gpu = xml->rfind("<gpu id=");
  ASSERT_NE(last_gpu, std::string::npos);
  xml->erase(last_gpu, xml->find("</gpu>", last_gpu) + 6 - last_gpu);
  devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  EXPECT_EQ(*topo_runs, 2);
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].topology_group(), "");
}

TEST(GpuPluginTest, AllowedGpusOnlyAndOneNotReportedStaysUnhealthy) {
  GpuPluginOptions options;
  options.device_dir = "/tmp/fakedev";
  options.allowed = {1, 3, 7};
  GpuPlugin plugin(options, FakeEnv(DevicesTestdata("h100-4gpu.xml"),
                                    {{"/tmp/fakedev/nvidia1", {1, 7}},
                                     {"/tmp/fakedev/nvidia3", {1, 9}},
                                     {"/tmp/fakedev/nvidia7", {1, 8}}},
                                    nullptr, DevicesTestdata("h100-4gpu-topo.txt")));
  absl::StatusOr<std::vector<v1::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 3u);
  EXPECT_EQ((*devices)[0].index(), 1);
  EXPECT_TRUE((*devices)[0].healthy());
  EXPECT_EQ((*devices)[0].model(), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ((*devices)[0].topology_group(), "g0");  // groups come from every GPU's links
  EXPECT_EQ((*devices)[1].index(), 3);
  EXPECT_EQ((*devices)[1].topology_group(), "g2");
  // GPU 7: its node exists, but nvidia-smi does not report it.
  EXPECT_EQ((*devices)[2].index(), 7);
  EXPECT_FALSE((*devices)[2].healthy());

  EXPECT_THAT(*ParseGpuIndexes("2, 0"), ElementsAre(0, 2));
  for (const char* bad : {"", "x", "-1", "1,1", "0,,2"}) {
    EXPECT_EQ(ParseGpuIndexes(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(ParseGpuIndexes("1,1").status().message(), HasSubstr("GPU index 1 is given twice"));
}

TEST(GpuPluginTest, WithoutTopologyTheGpusAreStillDiscovered) {
  GpuPluginOptions options;
  options.device_dir = "/tmp/fakedev";
  // topo -m fails: no groups, the GPUs as before.
  GpuPlugin failing(options, FakeEnv(DevicesTestdata("h100-4gpu.xml"), {{"/tmp/fakedev/nvidia0", {1, 5}}}));
  absl::StatusOr<std::vector<v1::Device>> devices = failing.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 4u);
  EXPECT_TRUE((*devices)[0].healthy());
  for (const v1::Device& d : *devices) EXPECT_EQ(d.topology_group(), "") << d.index();
  // topo -m shows another number of GPUs than -q -x: no groups either.
  GpuPlugin disagreeing(options, FakeEnv(DevicesTestdata("h100-4gpu.xml"), {}, nullptr,
                                         DevicesTestdata("h100-1gpu-topo.txt")));
  devices = disagreeing.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  for (const v1::Device& d : *devices) EXPECT_EQ(d.topology_group(), "") << d.index();
  // One GPU: topo -m is not run.
  std::vector<std::vector<std::string>> ran;
  GpuPlugin one(options, FakeEnv(DevicesTestdata("h100-1gpu.xml"), {}, &ran));
  ASSERT_TRUE(one.Discover().ok());
  EXPECT_EQ(ran.size(), 1u);
}

TEST(GpuPluginTest, NvidiaSmiFailureIsAnError) {
  GpuPluginEnv env = FakeEnv("", {});
  env.run = [](const std::vector<std::string>&) -> absl::StatusOr<CommandResult> {
    CommandResult result;
    result.exit_code = 9;
    result.stderr_text = "NVIDIA-SMI has failed because it couldn't communicate\n";
    return result;
  };
  GpuPlugin plugin(GpuPluginOptions{}, env);
  absl::StatusOr<std::vector<v1::Device>> devices = plugin.Discover();
  EXPECT_EQ(devices.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(devices.status().message(),
              HasSubstr("nvidia-smi -q -x exited with 9: NVIDIA-SMI has failed"));

  GpuPlugin garbage(GpuPluginOptions{}, FakeEnv("not xml <", {}));
  EXPECT_THAT(garbage.Discover().status().message(), HasSubstr("discovering GPUs"));
}

TEST(GpuPluginTest, ListModeAndContainerEnv) {
  GpuPluginOptions options;
  options.mode = GpuPluginOptions::Mode::kList;
  options.list = *ParseGpuList("0:/d/a@g0,1:/d/b@g0");
  GpuPlugin plugin(options, FakeEnv("", {{"/d/a", {1, 7}}, {"/d/b", {1, 8}}}));
  absl::StatusOr<std::vector<v1::Device>> devices = plugin.Discover();
  ASSERT_TRUE(devices.ok()) << devices.status();
  ASSERT_EQ(devices->size(), 2u);
  EXPECT_EQ((*devices)[1].device_minor(), 8);
  EXPECT_EQ((*devices)[1].topology_group(), "g0");
  EXPECT_TRUE((*devices)[1].healthy());

  // Isolated (the cgroup lets it open only its GPUs): CUDA numbers them from 0.
  EXPECT_THAT(plugin.ContainerEnv({}, /*isolated=*/true), IsEmpty());
  std::map<std::string, std::string> env =
      plugin.ContainerEnv({{"gpu", 10, 1000}, {"gpu", 2, 1000}}, /*isolated=*/true);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(env["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "2,10");
  EXPECT_EQ(env["WEFT_GPU_SHARES"], "2=1000,10=1000");
  EXPECT_EQ(plugin.ContainerEnv({{"gpu", 3, 500}}, true)["CUDA_VISIBLE_DEVICES"], "0");
  // Not isolated: CUDA sees every GPU, so the node's indexes, and none without shares.
  env = plugin.ContainerEnv({{"gpu", 10, 1000}, {"gpu", 2, 1000}}, /*isolated=*/false);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2,10");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "2,10");
  EXPECT_EQ(plugin.ContainerEnv({{"gpu", 0, 500}}, false)["WEFT_GPU_SHARES"], "0=500");
  env = plugin.ContainerEnv({}, /*isolated=*/false);
  ASSERT_EQ(env.count("CUDA_VISIBLE_DEVICES"), 1u);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
}

}  // namespace
}  // namespace weft::nm
