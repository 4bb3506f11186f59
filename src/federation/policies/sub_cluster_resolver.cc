// Copyright Weft authors. SubClusterResolver (policy.h): YARN's DefaultSubClusterResolverImpl.
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "federation/policies/policy.h"

namespace weft::federation {
namespace {

// Racks are keyed without a leading '/' and in lower case: "/Rack1" and "rack1" are one rack.
std::string RackKey(absl::string_view rack) {
  rack = absl::StripAsciiWhitespace(rack);
  if (absl::StartsWith(rack, "/")) rack.remove_prefix(1);
  return absl::AsciiStrToLower(rack);
}

// The host of "host:port" (or `node` itself when it has no port).
absl::string_view HostOf(absl::string_view node) {
  size_t colon = node.rfind(':');
  if (colon == absl::string_view::npos) return node;
  absl::string_view port = node.substr(colon + 1);
  if (port.empty() ||
      !std::all_of(port.begin(), port.end(), [](char c) { return absl::ascii_isdigit(c); })) {
    return node;
  }
  return node.substr(0, colon);
}

bool IsValidSubClusterId(absl::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '.' || c == '_' || c == '-';
  });
}

}  // namespace

absl::StatusOr<SubClusterResolver> SubClusterResolver::FromMachineList(absl::string_view text) {
  SubClusterResolver resolver;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line.front() == '#') continue;
    std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    auto error = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("machine list line ", line_number, " '", line, "': ", what));
    };
    if (fields.size() != 3) {
      return error(absl::StrCat("want 'node,sub-cluster,rack', got ", fields.size(),
                                fields.size() == 1 ? " field" : " fields"));
    }
    absl::string_view node = absl::StripAsciiWhitespace(fields[0]);
    absl::string_view sub_cluster = absl::StripAsciiWhitespace(fields[1]);
    absl::string_view rack = absl::StripAsciiWhitespace(fields[2]);
    if (node.empty()) return error("empty node");
    if (!IsValidSubClusterId(sub_cluster)) {
      return error(absl::StrCat("sub-cluster id '", sub_cluster,
                                "' is not 1..64 characters of [A-Za-z0-9._-]"));
    }
    if (RackKey(rack).empty()) return error("empty rack");
    if (resolver.node_to_sub_cluster_.contains(HostOf(node))) {
      return error(absl::StrCat("node '", node, "' is listed twice"));
    }
    resolver.AddNode(node, sub_cluster, rack);
  }
  return resolver;
}

void SubClusterResolver::AddNode(absl::string_view node, absl::string_view sub_cluster_id,
                                 absl::string_view rack) {
  std::string host(HostOf(absl::StripAsciiWhitespace(node)));
  std::string rack_key = RackKey(rack);
  if (auto it = node_to_rack_.find(host); it != node_to_rack_.end()) {
    // Moving: the node no longer counts for its old (rack, sub-cluster).
    auto rack_it = rack_to_sub_clusters_.find(it->second);
    auto& counts = rack_it->second;
    auto count_it = counts.find(node_to_sub_cluster_[host]);
    if (--count_it->second == 0) counts.erase(count_it);
    if (counts.empty()) rack_to_sub_clusters_.erase(rack_it);
  }
  node_to_sub_cluster_[host] = std::string(sub_cluster_id);
  node_to_rack_[host] = rack_key;
  ++rack_to_sub_clusters_[rack_key][std::string(sub_cluster_id)];
}

std::optional<std::string> SubClusterResolver::SubClusterForNode(absl::string_view node) const {
  auto it = node_to_sub_cluster_.find(HostOf(node));
  if (it == node_to_sub_cluster_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> SubClusterResolver::SubClustersForRack(absl::string_view rack) const {
  std::vector<std::string> ids;
  auto it = rack_to_sub_clusters_.find(RackKey(rack));
  if (it == rack_to_sub_clusters_.end()) return ids;
  for (const auto& [id, nodes] : it->second) ids.push_back(id);
  return ids;
}

}  // namespace weft::federation
