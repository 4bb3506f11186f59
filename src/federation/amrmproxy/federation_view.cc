// Copyright Weft authors.
#include "federation/amrmproxy/federation_view.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/log.h"
#include "federation/policies/registry.h"

namespace weft::amrmproxy {

FederationView::FederationView(FederationViewOptions options) : options_(std::move(options)) {
  if (options_.machine_list.has_value()) {
    resolver_ = std::make_shared<const federation::SubClusterResolver>(*options_.machine_list);
  }
}

absl::Status FederationView::RefreshSubClusters(int64_t now) {
  if (sub_clusters_.has_value() && now - sub_clusters_read_ms_ < options_.cache_ttl_ms) {
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<v1::SubClusterInfo>> all =
      options_.store->GetSubClusters(/*only_active=*/false);
  if (!all.ok()) {
    if (sub_clusters_.has_value()) {
      log::Warn("amrmproxy_store_unreadable", {{"store", options_.store->Describe()},
                                               {"error", all.status()},
                                               {"using", "the last view"}});
      return absl::OkStatus();
    }
    return absl::UnavailableError(
        absl::StrCat("reading the sub-clusters from the federation store ",
                     options_.store->Describe(), ": ", all.status().message()));
  }
  sub_clusters_ = *std::move(all);
  sub_clusters_read_ms_ = now;
  return absl::OkStatus();
}

void FederationView::RefreshResolver(const std::string& user, int64_t now) {
  if (options_.machine_list.has_value() || options_.rpc == nullptr) return;
  if (resolver_ != nullptr && now - resolver_read_ms_ < options_.cache_ttl_ms) return;
  auto resolver = std::make_shared<federation::SubClusterResolver>();
  for (const v1::SubClusterInfo& info : *sub_clusters_) {
    if (!federation::IsSubClusterUsable(info, now, options_.membership_expiry_ms)) continue;
    absl::StatusOr<std::vector<v1::NodeReport>> nodes =
        options_.rpc->ListNodes(info.rm_address(), user);
    if (!nodes.ok()) {
      log::Warn("amrmproxy_node_list_failed",
                {{"sub_cluster", info.sub_cluster_id()}, {"error", nodes.status()}});
      continue;
    }
    for (const v1::NodeReport& node : *nodes) {
      resolver->AddNode(node.node_id(), info.sub_cluster_id(), node.rack());
    }
  }
  resolver_ = std::move(resolver);
  resolver_read_ms_ = now;
}

v1::SubClusterPolicyConfiguration FederationView::ConfigFor(const std::string& queue, int64_t now) {
  auto cached = configs_.find(queue);
  if (cached != configs_.end() && now - cached->second.read_ms < options_.cache_ttl_ms) {
    return cached->second.config;
  }
  v1::SubClusterPolicyConfiguration config;
  bool found = false;
  bool failed = false;
  for (const std::string& name : {queue, std::string("*")}) {
    absl::StatusOr<v1::SubClusterPolicyConfiguration> read =
        options_.store->GetPolicyConfiguration(name);
    if (read.ok()) {
      config = *std::move(read);
      found = true;
      break;
    }
    if (!absl::IsNotFound(read.status())) {
      log::Warn("amrmproxy_policy_unreadable", {{"queue", name}, {"error", read.status()}});
      failed = true;
      break;
    }
  }
  if (failed && cached != configs_.end()) return cached->second.config;
  if (!found) config = federation::DefaultPolicyConfiguration();
  configs_[queue] = CachedConfig{config, now};
  return config;
}

absl::StatusOr<FederationSnapshot> FederationView::Get(const std::string& queue,
                                                       const std::string& user) {
  absl::MutexLock lock(&mu_);
  const int64_t now = options_.now_ms();
  if (absl::Status s = RefreshSubClusters(now); !s.ok()) return s;
  RefreshResolver(user, now);
  FederationSnapshot snapshot;
  for (const v1::SubClusterInfo& info : *sub_clusters_) {
    snapshot.known[info.sub_cluster_id()] = info;
    if (federation::IsSubClusterUsable(info, now, options_.membership_expiry_ms)) {
      snapshot.active.push_back(info);
    }
  }
  snapshot.config = ConfigFor(queue, now);
  snapshot.resolver = resolver_;
  return snapshot;
}

}  // namespace weft::amrmproxy
