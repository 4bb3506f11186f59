// Copyright Weft authors. The GPU device plugin (issue 32; docs/gpu-nm.md): NVIDIA GPUs found
// by `nvidia-smi -q -x` or listed by the operator, their device nodes' numbers from stat(),
// and CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES / WEFT_GPU_SHARES for containers.
#ifndef WEFT_NM_DEVICES_GPU_PLUGIN_H_
#define WEFT_NM_DEVICES_GPU_PLUGIN_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/command_runner.h"
#include "nm/devices/device_plugin.h"

namespace weft::nm {

// One GPU as `nvidia-smi -q -x` describes it (the fields the plugin uses).
struct NvidiaSmiGpu {
  int32_t smi_index = 0;     // nvidia-smi's number for it (<gpu> order; GPU<n> in topo -m)
  int32_t minor_number = 0;  // its device node is /dev/nvidia<minor_number>
  std::string uuid;          // "GPU-..."
  std::string product_name;  // e.g. "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;    // the <gpu id="..."> attribute, e.g. "00000000:00:06.0"
  int64_t memory_mb = 0;     // fb_memory_usage/total, MiB; 0 when "N/A"
  // Why the GPU itself reports it unusable ("" = nothing): remapped_rows/remapped_row_failure
  // "Yes" (a row could not be remapped: YARN and DCGM treat it as a failed GPU).
  std::string fault;
};

// Parses `nvidia-smi -q -x` output. Errors (InvalidArgument) name what is wrong: not XML (with
// pugixml's reason and offset), no <nvidia_smi_log> root, a <gpu> without a numeric
// <minor_number> (its bus id named), two GPUs with one minor number.
absl::StatusOr<std::vector<NvidiaSmiGpu>> ParseNvidiaSmiXml(absl::string_view xml);

// One entry of a configured device list.
struct GpuListEntry {
  int32_t index = 0;   // the id containers see (CUDA_VISIBLE_DEVICES)
  std::string path;    // its device node, absolute
  std::string group;   // its topology group ("" = unknown)
};

// Parses --gpus LIST: "index:path[@group],..." e.g. "0:/dev/nvidia0@nvl0,1:/dev/nvidia1@nvl0".
// Indexes are >= 0 and distinct, paths absolute and distinct, groups [A-Za-z0-9_.-]*.
// InvalidArgument naming the bad item.
absl::StatusOr<std::vector<GpuListEntry>> ParseGpuList(absl::string_view text);

// Where the GPU plugin looks; see GpuPlugin.
struct GpuPluginOptions {
  // "auto": run `<nvidia_smi> -q -x`; "list": use `list`.
  enum class Mode { kAuto, kList } mode = Mode::kAuto;
  std::string nvidia_smi = "nvidia-smi";  // a path, or a name found on PATH
  std::vector<GpuListEntry> list;
  // auto: the device node of minor number N is <device_dir>/nvidiaN.
  std::string device_dir = "/dev";
  // auto: only these GPUs (by index, the minor number) are the NM's; empty = every GPU
  // nvidia-smi reports (YARN's allowed-gpu-devices). One nvidia-smi does not report is kept,
  // unhealthy, as a listed GPU whose node is missing is.
  std::set<int32_t> allowed;
};

// "0,2,5" -> {0, 2, 5}. Errors (InvalidArgument): an item that is not a number >= 0, an index
// given twice, an empty list.
absl::StatusOr<std::set<int32_t>> ParseGpuIndexes(absl::string_view text);

// What the plugin needs of the system, injectable for tests.
struct GpuPluginEnv {
  // Runs a command (CommandRunner::Run's contract). Default: CommandRunner::Default(), with a
  // PATH search of the caller's PATH for a bare name, under `timeout` (coreutils): killed after
  // 10 s, which fails the discovery (exit 124 or 137, "no answer within 10 s").
  std::function<absl::StatusOr<CommandResult>(const std::vector<std::string>& argv)> run;
  // stat() of a device node: {major, minor} of a character device; NotFound when missing,
  // FailedPrecondition when it is not a character device. Default: ::stat.
  std::function<absl::StatusOr<std::pair<int32_t, int32_t>>(const std::string& path)> stat;
  static GpuPluginEnv Real();
};

// Discovery: auto mode runs nvidia-smi and takes each GPU's minor number as its index and
// device node <device_dir>/nvidia<minor>; list mode takes the list. Either way the device
// node's major:minor come from stat() (so tests may use the numbers of harmless devices), and
// a GPU is healthy when its node is a character device and (auto) nvidia-smi reports no fault.
// A GPU whose node is missing is reported unhealthy (its numbers 0:0), not left out.
class GpuPlugin final : public DevicePlugin {
 public:
  explicit GpuPlugin(GpuPluginOptions options, GpuPluginEnv env = GpuPluginEnv::Real());
  std::string type() const override { return "gpu"; }
  // auto: with two GPUs or more, `nvidia-smi topo -m` gives their topology groups
  // (TopologyGroups), run at the first discovery and again only when nvidia-smi reports another
  // set of GPUs; when it fails or disagrees with -q -x the groups stay "" and a warning says why
  // (gpu_topology_unknown): the GPUs are usable, only gpu_same_group asks cannot use them
  // together. Errors: nvidia-smi -q -x could not run, exited non-zero (its stderr in the
  // message) or printed what ParseNvidiaSmiXml refuses.
  absl::StatusOr<std::vector<v1::Device>> Discover() override;
  // NVIDIA_VISIBLE_DEVICES: the node's indexes of the GPUs, comma-separated, increasing;
  // WEFT_GPU_SHARES: "index=milli,..." (e.g. "2=500"); CUDA_DEVICE_ORDER=PCI_BUS_ID;
  // CUDA_VISIBLE_DEVICES: isolated, "0,...,k-1" (CUDA numbers the k GPUs the cgroup lets it
  // open from 0, as under Slurm's ConstrainDevices and LSF's GPU enforcement), else the node's
  // indexes. Without shares: isolated, nothing (the cgroup denies every GPU), else
  // CUDA_VISIBLE_DEVICES="" (CUDA then uses none).
  std::map<std::string, std::string> ContainerEnv(const std::vector<DeviceShare>& shares,
                                                  bool isolated) const override;

 private:
  v1::Device Describe(int32_t index, const std::string& path) const;
  // `nvidia-smi ARGS...`'s stdout; errors name the command and say why (it could not run, or
  // exited non-zero with its stderr).
  absl::StatusOr<std::string> RunNvidiaSmi(const std::vector<std::string>& args) const;
  // The topology group of each of `gpus` (same order); an error says why there are none.
  absl::StatusOr<std::vector<std::string>> Groups(const std::vector<NvidiaSmiGpu>& gpus) const;

  const GpuPluginOptions options_;
  const GpuPluginEnv env_;
  // auto: the GPUs (nvidia-smi number, minor) whose topology groups_ holds, same order.
  // Discover's own (never called twice at once; ContainerEnv does not read them).
  std::vector<std::pair<int32_t, int32_t>> topology_gpus_;
  std::vector<std::string> topology_groups_;
};

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_GPU_PLUGIN_H_
