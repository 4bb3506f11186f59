#include "sim/cluster_spec.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "yaml-cpp/yaml.h"

namespace weft::sim {

absl::StatusOr<std::vector<scheduler::NodeSpec>> UniformCluster(int count, const Resource& capacity,
                                                                int racks) {
  if (count < 1)
    return absl::InvalidArgumentError(absl::StrCat("node count ", count, " must be >= 1"));
  if (racks < 1)
    return absl::InvalidArgumentError(absl::StrCat("rack count ", racks, " must be >= 1"));
  if (capacity.AnyNegative() || capacity[kMemoryMb] <= 0 || capacity[kVcores] <= 0)
    return absl::InvalidArgumentError(absl::StrCat("node resources ", capacity.DebugString(),
                                                   " need positive memory-mb and vcores"));
  std::vector<scheduler::NodeSpec> nodes;
  nodes.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    nodes.push_back({absl::StrFormat("node%04d", i + 1),
                     absl::StrFormat("/rack%02d", i % racks + 1), capacity});
  }
  return nodes;
}

absl::StatusOr<std::vector<scheduler::NodeSpec>> LoadClusterFile(absl::string_view path,
                                                                 const ResourceTypeRegistry& reg) {
  auto err = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  };
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(std::string(path));
  } catch (const YAML::BadFile&) {
    return absl::NotFoundError(absl::StrCat("cannot open cluster file '", path, "'"));
  } catch (const YAML::Exception& e) {
    return err(absl::StrCat("not valid YAML: ", e.what()));
  }
  if (!doc.IsMap() || !doc["node-groups"] || !doc["node-groups"].IsSequence())
    return err("expected a mapping with a 'node-groups' list");
  for (const auto& kv : doc) {
    if (kv.first.as<std::string>() != "node-groups")
      return err(absl::StrCat("unknown key '", kv.first.as<std::string>(), "'"));
  }
  std::vector<scheduler::NodeSpec> nodes;
  std::set<std::string> prefixes;
  int index = 0;
  for (const YAML::Node& g : doc["node-groups"]) {
    std::string where = absl::StrCat("node-groups[", index++, "]");
    if (!g.IsMap()) return err(absl::StrCat(where, ": expected a mapping"));
    for (const auto& kv : g) {
      std::string k = kv.first.as<std::string>();
      if (k != "count" && k != "resources" && k != "racks" && k != "prefix")
        return err(absl::StrCat(where, ": unknown key '", k,
                                "' (allowed: count, resources, racks, prefix)"));
    }
    if (!g["count"] || !g["resources"])
      return err(absl::StrCat(where, ": 'count' and 'resources' are required"));
    int count = 0, racks = 1;
    std::string prefix = "node", resources;
    try {
      count = g["count"].as<int>();
      if (g["racks"]) racks = g["racks"].as<int>();
      if (g["prefix"]) prefix = g["prefix"].as<std::string>();
      resources = g["resources"].as<std::string>();
    } catch (const YAML::Exception&) {
      return err(absl::StrCat(where, ": count and racks must be integers, resources a string"));
    }
    if (!prefixes.insert(prefix).second)
      return err(absl::StrCat(where, ": prefix '", prefix, "' is used by another group"));
    auto capacity = reg.Parse(resources);
    if (!capacity.ok())
      return err(absl::StrCat(where, ".resources: ", capacity.status().message()));
    auto group = UniformCluster(count, *capacity, racks);
    if (!group.ok()) return err(absl::StrCat(where, ": ", group.status().message()));
    for (auto& n : *group) {
      n.name = prefix + n.name.substr(4);
      n.rack = absl::StrCat("/", prefix, "-", n.rack.substr(1));
      nodes.push_back(std::move(n));
    }
  }
  if (nodes.empty()) return err("no nodes");
  return nodes;
}

}  // namespace weft::sim
