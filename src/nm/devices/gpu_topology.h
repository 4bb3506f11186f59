// Copyright Weft authors. GPU topology from `nvidia-smi topo -m` (issue 32): which GPUs of a
// node are close (NVLink, or one PCIe switch), as the topology groups that gpu_same_group asks
// are placed within (v1::Device::topology_group; docs/gpu-nm.md).
#ifndef WEFT_NM_DEVICES_GPU_TOPOLOGY_H_
#define WEFT_NM_DEVICES_GPU_TOPOLOGY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft::nm {

// The GPU-to-GPU part of `nvidia-smi topo -m`'s matrix: links[i][j] is how GPU i reaches GPU j
// ("X" for itself, "NV<n>", "PIX", "PXB", "PHB", "NODE", "SYS"), i and j being nvidia-smi's
// GPU numbers (the order of `nvidia-smi -q -x`'s <gpu> elements). NIC columns and rows, the
// affinity columns, the legend and the terminal's escape codes are skipped.
// Errors (InvalidArgument, naming the line): no GPU0 header, a row that is not GPU<k> in order,
// a row with fewer cells than GPUs, a cell that is not a known link, a diagonal that is not X.
absl::StatusOr<std::vector<std::vector<std::string>>> ParseNvidiaSmiTopo(absl::string_view text);

// One group per GPU (same indexing): GPUs joined by NVLink or by PCIe switches only (PIX, PXB)
// are one group, transitively. A GPU that reaches every other only through a host bridge or
// the CPUs is a group of its own. A group is named "g<n>", n the lowest of its GPUs' `names`
// (names[i]: the Weft index of nvidia-smi's GPU i, its minor number; `links.size()` of them).
std::vector<std::string> TopologyGroups(const std::vector<std::vector<std::string>>& links,
                                        const std::vector<int32_t>& names);

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_GPU_TOPOLOGY_H_
