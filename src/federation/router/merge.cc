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

namespace {

// What a secondary's unmanaged AM adds to its app's report (YARN's mergeAMWithUAM): the
// containers and resources it holds there.
void AddUsage(const v1::ApplicationReport& uam, v1::ApplicationReport* into) {
  AddResource(into->mutable_allocated(), uam.allocated());
  AddResource(into->mutable_resource_seconds(), uam.resource_seconds());
  into->set_running_containers(into->running_containers() + uam.running_containers());
  into->set_completed_containers(into->completed_containers() + uam.completed_containers());
  into->set_pending_containers(into->pending_containers() + uam.pending_containers());
}

}  // namespace

v1::ListApplicationsResponse MergeApplications(
    const std::vector<std::pair<std::string, v1::ListApplicationsResponse>>& parts, int32_t limit,
    const std::vector<std::pair<std::string, std::string>>& homes) {
  const std::map<std::string, std::string> home_of(homes.begin(), homes.end());
  // Every report of each id, stamped with its sub-cluster.
  std::map<std::string, std::vector<v1::ApplicationReport>> by_id;
  for (const auto& [sub_cluster, resp] : parts) {
    for (const v1::ApplicationReport& app : resp.applications()) {
      v1::ApplicationReport& r = by_id[app.application_id()].emplace_back(app);
      if (r.sub_cluster_id().empty()) r.set_sub_cluster_id(sub_cluster);
    }
  }
  v1::ListApplicationsResponse out;
  for (auto& [id, reports] : by_id) {
    if (limit > 0 && out.applications_size() >= limit) break;
    // The home's report: per `homes` when it names one of them, else the first that is not
    // of an unmanaged AM (a secondary's UAM under the home's id), else the first.
    size_t chosen = 0;
    auto home = home_of.find(id);
    auto is = [&](size_t i) {
      return home != home_of.end() ? reports[i].sub_cluster_id() == home->second
                                   : !reports[i].unmanaged_am();
    };
    for (size_t i = 0; i < reports.size(); ++i) {
      if (is(i)) {
        chosen = i;
        break;
      }
    }
    v1::ApplicationReport merged = reports[chosen];
    for (size_t i = 0; i < reports.size(); ++i) {
      if (i != chosen && reports[i].unmanaged_am()) AddUsage(reports[i], &merged);
    }
    *out.add_applications() = std::move(merged);
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
