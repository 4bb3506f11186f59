// Copyright Weft authors. The simulated cluster: which nodes, with what capacity, on which rack.
#ifndef WEFT_SIM_CLUSTER_SPEC_H_
#define WEFT_SIM_CLUSTER_SPEC_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource_types.h"
#include "scheduler/types.h"

namespace weft::sim {

// `count` nodes named node0001.., spread round-robin over `racks` racks /rack01..
// Fails on count < 1, racks < 1, or a capacity with a negative or all-zero memory/vcores.
absl::StatusOr<std::vector<scheduler::NodeSpec>> UniformCluster(int count, const Resource& capacity,
                                                                int racks);

// A YAML cluster file:
//   node-groups:
//     - count: 500                                  # required, >= 1
//       resources: "memory-mb=65536,vcores=16"      # required
//       racks: 10                                   # default 1
//       prefix: big                                 # node name prefix, default "node"
// Node names are <prefix><4-digit index>, unique across groups; racks /<prefix>-rackNN.
// Errors name the file and the key.
absl::StatusOr<std::vector<scheduler::NodeSpec>> LoadClusterFile(absl::string_view path,
                                                                 const ResourceTypeRegistry& reg);

}  // namespace weft::sim

#endif  // WEFT_SIM_CLUSTER_SPEC_H_
