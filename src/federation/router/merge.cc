// Copyright Weft authors.
#include "federation/router/merge.h"

#include <algorithm>
#include <map>
#include <set>

namespace weft::federation {

void AddResource(v1::Resource* into, const v1::Resource& r) {
  for (const auto& [name, value] : r.values()) (*into->mutable_values())[name] += value;
}

v1::GetClusterMetricsResponse SumClusterMetrics(
    const std::vector<v1::GetClusterMetricsResponse>& parts) {
  v1::GetClusterMetricsResponse out;
  for (const v1::GetClusterMetricsResponse& m : parts) {
    out.set_active_nodes(out.active_nodes() + m.active_nodes());
    out.set_lost_nodes(out.lost_nodes() + m.lost_nodes());
    out.set_unhealthy_nodes(out.unhealthy_nodes() + m.unhealthy_nodes());
    out.set_decommissioned_nodes(out.decommissioned_nodes() + m.decommissioned_nodes());
    AddResource(out.mutable_total(), m.total());
    AddResource(out.mutable_allocated(), m.allocated());
    AddResource(out.mutable_pending(), m.pending());
    out.set_apps_submitted(out.apps_submitted() + m.apps_submitted());
    out.set_apps_running(out.apps_running() + m.apps_running());
    out.set_apps_pending(out.apps_pending() + m.apps_pending());
    out.set_apps_completed(out.apps_completed() + m.apps_completed());
    out.set_apps_failed(out.apps_failed() + m.apps_failed());
    out.set_apps_killed(out.apps_killed() + m.apps_killed());
    out.set_containers_allocated(out.containers_allocated() + m.containers_allocated());
  }
  return out;
}

v1::ListApplicationsResponse MergeApplications(
    const std::vector<std::pair<std::string, v1::ListApplicationsResponse>>& parts, int32_t limit,
    const std::vector<std::pair<std::string, std::string>>& homes) {
  const std::map<std::string, std::string> home_of(homes.begin(), homes.end());
  std::map<std::string, v1::ApplicationReport> by_id;
  for (const auto& [sub_cluster, resp] : parts) {
    for (const v1::ApplicationReport& app : resp.applications()) {
      v1::ApplicationReport r = app;
      if (r.sub_cluster_id().empty()) r.set_sub_cluster_id(sub_cluster);
      auto home = home_of.find(r.application_id());
      auto [it, inserted] = by_id.emplace(r.application_id(), r);
      if (inserted) continue;
      // The home's report wins over a secondary's (an AMRMProxy's unmanaged AM there): known
      // from the mapping when given, else the report that is not of an unmanaged AM.
      const bool is_home = home != home_of.end() ? home->second == r.sub_cluster_id()
                                                 : it->second.unmanaged_am() && !r.unmanaged_am();
      if (is_home) it->second = std::move(r);
    }
  }
  v1::ListApplicationsResponse out;
  for (auto& [id, app] : by_id) {
    if (limit > 0 && out.applications_size() >= limit) break;
    *out.add_applications() = std::move(app);
  }
  return out;
}

v1::ListNodesResponse MergeNodes(
    const std::vector<std::pair<std::string, v1::ListNodesResponse>>& parts) {
  std::vector<v1::NodeReport> nodes;
  for (const auto& [sub_cluster, resp] : parts) {
    for (const v1::NodeReport& n : resp.nodes()) {
      nodes.push_back(n);
      if (nodes.back().sub_cluster_id().empty()) nodes.back().set_sub_cluster_id(sub_cluster);
    }
  }
  std::stable_sort(
      nodes.begin(), nodes.end(),
      [](const v1::NodeReport& a, const v1::NodeReport& b) { return a.node_id() < b.node_id(); });
  v1::ListNodesResponse out;
  for (v1::NodeReport& n : nodes) *out.add_nodes() = std::move(n);
  return out;
}

void MergeQueue(v1::QueueInfo* into, const v1::QueueInfo& q) {
  AddResource(into->mutable_used(), q.used());
  AddResource(into->mutable_pending(), q.pending());
  AddResource(into->mutable_entitlement(), q.entitlement());
  AddResource(into->mutable_limit(), q.limit());
  into->set_num_applications(into->num_applications() + q.num_applications());
  into->set_num_running_applications(into->num_running_applications() +
                                     q.num_running_applications());
  for (const v1::QueueInfo& child : q.children()) {
    auto it = std::find_if(into->mutable_children()->begin(), into->mutable_children()->end(),
                           [&](const v1::QueueInfo& c) { return c.path() == child.path(); });
    if (it == into->mutable_children()->end()) {
      *into->add_children() = child;
    } else {
      MergeQueue(&*it, child);
    }
  }
}

}  // namespace weft::federation
