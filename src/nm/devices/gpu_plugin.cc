// Copyright Weft authors. The GPU device plugin: nvidia-smi XML, device lists, stat().
#include "nm/devices/gpu_plugin.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/log.h"
#include "nm/devices/gpu_topology.h"
#include "pugixml.hpp"

namespace weft::nm {
namespace {

// How long nvidia-smi may take before it is killed, s.
constexpr int kNvidiaSmiTimeoutS = 10;

std::string Trimmed(const pugi::xml_node& node) {
  return std::string(absl::StripAsciiWhitespace(node.text().as_string("")));
}

// "81559 MiB" -> 81559; "N/A" and anything else -> 0.
int64_t MemoryMb(absl::string_view text) {
  absl::string_view rest = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumeSuffix(&rest, "MiB")) return 0;
  int64_t mb = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &mb) || mb < 0) return 0;
  return mb;
}

bool ValidGroup(absl::string_view group) {
  return std::all_of(group.begin(), group.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
}

// A bare program name found on $PATH; a name with a slash as it is.
std::string FindOnPath(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return program;
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", program);
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return program;
}

}  // namespace

absl::StatusOr<std::vector<NvidiaSmiGpu>> ParseNvidiaSmiXml(absl::string_view xml) {
  pugi::xml_document doc;
  // No DTD processing: the DOCTYPE line nvidia-smi prints is skipped, nothing is fetched.
  pugi::xml_parse_result parsed =
      doc.load_buffer(xml.data(), xml.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    return absl::InvalidArgumentError(absl::StrCat("nvidia-smi -q -x output is not XML: ",
                                                   parsed.description(), " at offset ",
                                                   parsed.offset));
  }
  pugi::xml_node root = doc.child("nvidia_smi_log");
  if (!root) {
    return absl::InvalidArgumentError(
        "nvidia-smi -q -x output has no <nvidia_smi_log> element");
  }
  std::vector<NvidiaSmiGpu> gpus;
  std::set<int32_t> seen;
  for (pugi::xml_node node : root.children("gpu")) {
    NvidiaSmiGpu gpu;
    gpu.smi_index = static_cast<int32_t>(gpus.size());
    gpu.pci_bus_id = node.attribute("id").as_string("");
    const std::string minor = Trimmed(node.child("minor_number"));
    if (!absl::SimpleAtoi(minor, &gpu.minor_number) || gpu.minor_number < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("nvidia-smi -q -x: GPU '", gpu.pci_bus_id, "' has minor_number '", minor,
                       "', not a number >= 0"));
    }
    if (!seen.insert(gpu.minor_number).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "nvidia-smi -q -x: two GPUs have minor_number ", gpu.minor_number, " (the second is '",
          gpu.pci_bus_id, "')"));
    }
    gpu.uuid = Trimmed(node.child("uuid"));
    gpu.product_name = Trimmed(node.child("product_name"));
    gpu.memory_mb = MemoryMb(node.child("fb_memory_usage").child("total").text().as_string(""));
    if (Trimmed(node.child("remapped_rows").child("remapped_row_failure")) == "Yes") {
      gpu.fault = "remapped_row_failure: a memory row could not be remapped";
    }
    gpus.push_back(std::move(gpu));
  }
  std::sort(gpus.begin(), gpus.end(), [](const NvidiaSmiGpu& a, const NvidiaSmiGpu& b) {
    return a.minor_number < b.minor_number;
  });
  return gpus;
}

absl::StatusOr<std::set<int32_t>> ParseGpuIndexes(absl::string_view text) {
  std::set<int32_t> indexes;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int32_t index = 0;
    if (!absl::SimpleAtoi(item, &index) || index < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU index '", item, "' is not a number >= 0 (want e.g. 0,2)"));
    }
    if (!indexes.insert(index).second) {
      return absl::InvalidArgumentError(absl::StrCat("GPU index ", index, " is given twice"));
    }
  }
  return indexes;
}

absl::StatusOr<std::vector<GpuListEntry>> ParseGpuList(absl::string_view text) {
  std::vector<GpuListEntry> entries;
  std::set<int32_t> indexes;
  std::set<std::string> paths;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(absl::StrCat(
          "GPU list item '", item, "': ", why, " (want index:path[@group], e.g. 0:/dev/nvidia0)"));
    };
    std::pair<absl::string_view, absl::string_view> index_rest =
        absl::StrSplit(item, absl::MaxSplits(':', 1));
    GpuListEntry entry;
    if (!absl::SimpleAtoi(index_rest.first, &entry.index) || entry.index < 0) {
      return bad("the index is not a number >= 0");
    }
    std::pair<absl::string_view, absl::string_view> path_group =
        absl::StrSplit(index_rest.second, absl::MaxSplits('@', 1));
    entry.path = std::string(path_group.first);
    entry.group = std::string(path_group.second);
    if (entry.path.empty() || entry.path.front() != '/') return bad("the path is not absolute");
    if (!ValidGroup(entry.group)) return bad("the group is not [A-Za-z0-9_.-]*");
    if (!indexes.insert(entry.index).second) return bad("the index is listed twice");
    if (!paths.insert(entry.path).second) return bad("the path is listed twice");
    entries.push_back(std::move(entry));
  }
  std::sort(entries.begin(), entries.end(),
            [](const GpuListEntry& a, const GpuListEntry& b) { return a.index < b.index; });
  return entries;
}

GpuPluginEnv GpuPluginEnv::Real() {
  GpuPluginEnv env;
  env.run = [](const std::vector<std::string>& argv) -> absl::StatusOr<CommandResult> {
    // Under coreutils' timeout: a hung nvidia-smi (a wedged driver) must not hang the NM,
    // whose loop runs the health checks. Exit 124 (or 137 after the kill) reports it.
    std::vector<std::string> wrapped = {"timeout", "-k", "2", absl::StrCat(kNvidiaSmiTimeoutS)};
    for (const std::string& arg : argv) wrapped.push_back(arg);
    if (!argv.empty()) wrapped[4] = FindOnPath(argv[0]);
    absl::StatusOr<CommandResult> result = CommandRunner::Default()->Run(wrapped);
    if (result.ok() && (result->exit_code == 124 || result->exit_code == 137)) {
      result->stderr_text = absl::StrCat("no answer within ", kNvidiaSmiTimeoutS, " s (killed) ",
                                         result->stderr_text);
    }
    return result;
  };
  env.stat = [](const std::string& path) -> absl::StatusOr<std::pair<int32_t, int32_t>> {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      int err = errno;
      std::string message = absl::StrCat("stat ", path, ": ", std::strerror(err));
      return err == ENOENT ? absl::NotFoundError(message) : absl::FailedPreconditionError(message);
    }
    if (!S_ISCHR(st.st_mode)) {
      return absl::FailedPreconditionError(absl::StrCat(path, " is not a character device"));
    }
    return std::make_pair(static_cast<int32_t>(major(st.st_rdev)),
                          static_cast<int32_t>(minor(st.st_rdev)));
  };
  return env;
}

GpuPlugin::GpuPlugin(GpuPluginOptions options, GpuPluginEnv env)
    : options_(std::move(options)), env_(std::move(env)) {}

v1::Device GpuPlugin::Describe(int32_t index, const std::string& path) const {
  v1::Device device;
  device.set_type("gpu");
  device.set_index(index);
  device.set_path(path);
  absl::StatusOr<std::pair<int32_t, int32_t>> numbers = env_.stat(path);
  device.set_healthy(numbers.ok());
  if (numbers.ok()) {
    device.set_device_major(numbers->first);
    device.set_device_minor(numbers->second);
  }
  return device;
}

absl::StatusOr<std::string> GpuPlugin::RunNvidiaSmi(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {options_.nvidia_smi};
  argv.insert(argv.end(), args.begin(), args.end());
  absl::StatusOr<CommandResult> result = env_.run(argv);
  if (!result.ok()) {
    return absl::Status(result.status().code(), absl::StrCat("running ", CommandLine(argv), ": ",
                                                             result.status().message()));
  }
  if (result->exit_code != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(CommandLine(argv), " exited with ", result->exit_code, ": ",
                     absl::StripAsciiWhitespace(result->stderr_text)));
  }
  return std::move(result->stdout_text);
}

absl::StatusOr<std::vector<std::string>> GpuPlugin::Groups(
    const std::vector<NvidiaSmiGpu>& gpus) const {
  absl::StatusOr<std::string> topo = RunNvidiaSmi({"topo", "-m"});
  if (!topo.ok()) return topo.status();
  absl::StatusOr<std::vector<std::vector<std::string>>> links = ParseNvidiaSmiTopo(*topo);
  if (!links.ok()) return links.status();
  if (links->size() != gpus.size()) {
    return absl::FailedPreconditionError(absl::StrCat("nvidia-smi topo -m shows ", links->size(),
                                                      " GPU(s), nvidia-smi -q -x ", gpus.size()));
  }
  // -q -x's GPUs are sorted by minor number; topo -m's rows are in nvidia-smi's order.
  std::vector<int32_t> minor_of_row(gpus.size());
  for (const NvidiaSmiGpu& gpu : gpus) {
    if (gpu.smi_index < 0 || gpu.smi_index >= static_cast<int32_t>(gpus.size())) {
      return absl::InternalError(absl::StrCat("nvidia-smi number ", gpu.smi_index));
    }
    minor_of_row[gpu.smi_index] = gpu.minor_number;
  }
  const std::vector<std::string> by_row = TopologyGroups(*links, minor_of_row);
  std::vector<std::string> groups;
  for (const NvidiaSmiGpu& gpu : gpus) groups.push_back(by_row[gpu.smi_index]);
  return groups;
}

absl::StatusOr<std::vector<v1::Device>> GpuPlugin::Discover() {
  std::vector<v1::Device> devices;
  if (options_.mode == GpuPluginOptions::Mode::kList) {
    for (const GpuListEntry& entry : options_.list) {
      v1::Device device = Describe(entry.index, entry.path);
      device.set_topology_group(entry.group);
      devices.push_back(std::move(device));
    }
    return devices;
  }
  absl::StatusOr<std::string> xml = RunNvidiaSmi({"-q", "-x"});
  if (!xml.ok()) {
    return absl::Status(xml.status().code(),
                        absl::StrCat("discovering GPUs: ", xml.status().message()));
  }
  absl::StatusOr<std::vector<NvidiaSmiGpu>> gpus = ParseNvidiaSmiXml(*xml);
  if (!gpus.ok()) {
    return absl::Status(gpus.status().code(),
                        absl::StrCat("discovering GPUs: ",
                                     CommandLine({options_.nvidia_smi, "-q", "-x"}), ": ",
                                     gpus.status().message()));
  }
  // The topology is the hardware's: learned again only when nvidia-smi reports another set of
  // GPUs (numbers and minors), so a health check runs topo -m only then, and a topo -m that
  // fails later does not take the groups away.
  std::vector<std::pair<int32_t, int32_t>> gpu_set;
  for (const NvidiaSmiGpu& gpu : *gpus) gpu_set.emplace_back(gpu.smi_index, gpu.minor_number);
  if (gpu_set != topology_gpus_) {
    topology_gpus_ = gpu_set;
    topology_groups_.assign(gpus->size(), "");
    if (gpus->size() >= 2) {
      absl::StatusOr<std::vector<std::string>> found = Groups(*gpus);
      if (found.ok()) {
        topology_groups_ = *std::move(found);
      } else {
        log::Warn("gpu_topology_unknown", {{"error", found.status()}});
      }
    }
  }
  const std::vector<std::string>& groups = topology_groups_;
  std::set<int32_t> reported;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const NvidiaSmiGpu& gpu = (*gpus)[i];
    reported.insert(gpu.minor_number);
    if (!options_.allowed.empty() && !options_.allowed.contains(gpu.minor_number)) continue;
    v1::Device device = Describe(
        gpu.minor_number, absl::StrCat(options_.device_dir, "/nvidia", gpu.minor_number));
    device.set_uuid(gpu.uuid);
    device.set_model(gpu.product_name);
    device.set_memory_mb(gpu.memory_mb);
    device.set_topology_group(groups[i]);
    if (!gpu.fault.empty()) device.set_healthy(false);
    devices.push_back(std::move(device));
  }
  // An allowed GPU nvidia-smi does not report: the NM's, but unusable until it is seen.
  for (int32_t index : options_.allowed) {
    if (reported.contains(index)) continue;
    v1::Device device = Describe(index, absl::StrCat(options_.device_dir, "/nvidia", index));
    device.set_healthy(false);
    devices.push_back(std::move(device));
  }
  std::sort(devices.begin(), devices.end(),
            [](const v1::Device& a, const v1::Device& b) { return a.index() < b.index(); });
  return devices;
}

std::map<std::string, std::string> GpuPlugin::ContainerEnv(const std::vector<DeviceShare>& shares,
                                                            bool isolated) const {
  std::map<std::string, std::string> env;
  if (shares.empty()) {
    if (!isolated) env["CUDA_VISIBLE_DEVICES"] = "";
    return env;
  }
  std::vector<DeviceShare> sorted = shares;
  std::sort(sorted.begin(), sorted.end(),
            [](const DeviceShare& a, const DeviceShare& b) { return a.index < b.index; });
  std::vector<int32_t> indexes;
  std::vector<std::string> milli;
  std::vector<int32_t> ordinals;  // what CUDA calls them when it sees only these
  for (const DeviceShare& share : sorted) {
    ordinals.push_back(static_cast<int32_t>(indexes.size()));
    indexes.push_back(share.index);
    milli.push_back(absl::StrCat(share.index, "=", share.milli));
  }
  env["NVIDIA_VISIBLE_DEVICES"] = absl::StrJoin(indexes, ",");
  env["CUDA_VISIBLE_DEVICES"] = absl::StrJoin(isolated ? ordinals : indexes, ",");
  env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  env["WEFT_GPU_SHARES"] = absl::StrJoin(milli, ",");
  return env;
}

}  // namespace weft::nm
