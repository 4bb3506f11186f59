#include "web/yarn_json.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "store/state_names.h"

#ifndef WEFT_VERSION
#define WEFT_VERSION "unknown"
#endif

namespace weft::web {
namespace {

constexpr char kMemory[] = "memory-mb";
constexpr char kVcores[] = "vcores";
constexpr char kNetwork[] = "network-mbps";

// Every resource type of the cluster as {name: amount}.
Json ResourceMap(const ClusterSnapshot& s, const v1::Resource& r) {
  Json out = Json::object();
  for (const auto& [name, unit] : s.resource_types) out[name] = ResourceValue(r, name);
  return out;
}

// YARN's resource object: {"memory": MB, "vCores": n}.
Json YarnResource(const v1::Resource& r) {
  return {{"memory", ResourceValue(r, kMemory)}, {"vCores", ResourceValue(r, kVcores)}};
}

v1::Resource Minus(const v1::Resource& a, const v1::Resource& b) {
  v1::Resource out = a;
  for (const auto& [k, v] : b.values()) (*out.mutable_values())[k] -= v;
  for (auto& [k, v] : *out.mutable_values()) v = std::max<int64_t>(v, 0);
  return out;
}

// The largest share of the cluster's total `r` takes over any resource type, in [0, 1+].
double DominantShare(const ClusterSnapshot& s, const v1::Resource& r) {
  double share = 0;
  for (const auto& [name, value] : r.values()) {
    const int64_t total = ResourceValue(s.metrics.total(), name);
    if (total > 0) share = std::max(share, static_cast<double>(value) / static_cast<double>(total));
  }
  return share;
}

double Round3(double v) { return static_cast<double>(static_cast<int64_t>(v * 1000 + 0.5)) / 1000; }

// A queue and its subtree. The capacities are the scheduler policy's (QueueInfo.capacities);
// the used ones are measured against them.
Json QueueJson(const ClusterSnapshot& s, const v1::QueueInfo& q, bool is_root) {
  const v1::QueueCapacities& caps = q.capacities();
  const double abs_used = DominantShare(s, q.used()) * 100;
  Json j;
  j["queueName"] = q.name();
  j["queuePath"] = q.path();
  j["state"] = q.state();
  j["capacity"] = Round3(caps.capacity());
  j["maxCapacity"] = Round3(caps.maximum_capacity());
  j["absoluteCapacity"] = Round3(caps.absolute_capacity());
  j["absoluteMaxCapacity"] = Round3(caps.absolute_maximum_capacity());
  j["absoluteUsedCapacity"] = Round3(abs_used);
  j["usedCapacity"] =
      Round3(caps.absolute_capacity() > 0 ? abs_used / caps.absolute_capacity() * 100 : 0);
  j["numApplications"] = q.num_applications();
  j["usedResources"] = absl::StrCat("<memory:", ResourceValue(q.used(), kMemory),
                                    ", vCores:", ResourceValue(q.used(), kVcores), ">");
  j["resourcesUsed"] = YarnResource(q.used());
  auto counts = s.queue_counts.find(q.path());
  const QueueCounts c = counts == s.queue_counts.end() ? QueueCounts() : counts->second;
  j["numActiveApplications"] = c.active_apps;
  j["numPendingApplications"] = c.pending_apps;
  j["numContainers"] = c.containers;
  // Weft: every resource type, the guarantee now and the limit, the policy's weight.
  j["pendingContainers"] = c.pending_containers;
  j["weight"] = q.weight();
  j["used"] = ResourceMap(s, q.used());
  j["pending"] = ResourceMap(s, q.pending());
  j["guaranteed"] = ResourceMap(s, q.entitlement());
  j["maximum"] = ResourceMap(s, q.limit());
  if (q.children().empty() && !is_root) {
    j["type"] = "capacitySchedulerLeafQueueInfo";
    return j;
  }
  Json list = Json::array();
  for (const auto& child : q.children()) list.push_back(QueueJson(s, child, false));
  j["queues"] = {{"queue", list}};
  return j;
}

}  // namespace

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

const char* WeftVersion() { return WEFT_VERSION; }

int64_t ResourceValue(const v1::Resource& r, absl::string_view type) {
  auto it = r.values().find(std::string(type));
  return it == r.values().end() ? 0 : it->second;
}

Json ClusterInfoJson(const ClusterSnapshot& s) {
  const std::string version = WeftVersion();
  return {{"clusterInfo",
           {{"id", s.cluster_id},
            {"startedOn", s.started_ms},
            {"state", "STARTED"},
            {"haState", "ACTIVE"},
            {"snapshotGeneration", s.generation},  // Weft's: see ClusterSnapshot
            {"rmStateStoreName", s.store_name},
            {"resourceManagerVersion", version},
            {"resourceManagerBuildVersion", absl::StrCat("weft ", version)},
            {"resourceManagerVersionBuiltOn", __DATE__},
            {"hadoopVersion", absl::StrCat("weft-", version)},
            {"hadoopBuildVersion", absl::StrCat("weft ", version)},
            {"hadoopVersionBuiltOn", __DATE__},
            {"haZooKeeperConnectionState", s.ha_description},
            {"schedulerPolicy", s.policy}}}};
}

Json ClusterMetricsJson(const ClusterSnapshot& s) {
  const v1::GetClusterMetricsResponse& m = s.metrics;
  const v1::Resource available = Minus(m.total(), m.allocated());
  const int total_nodes = static_cast<int>(s.nodes().size());
  Json resources = Json::object();
  for (const auto& [name, unit] : s.resource_types) {
    resources[name] = {{"unit", unit},
                       {"total", ResourceValue(m.total(), name)},
                       {"allocated", ResourceValue(m.allocated(), name)},
                       {"available", ResourceValue(available, name)},
                       {"pending", ResourceValue(m.pending(), name)}};
  }
  int shutdown = 0;
  for (const auto& n : s.nodes()) shutdown += n.state() == v1::NODE_SHUTDOWN ? 1 : 0;
  return {{"clusterMetrics",
           {{"appsSubmitted", m.apps_submitted()},
            {"appsCompleted", m.apps_completed()},
            {"appsPending", m.apps_pending()},
            {"appsRunning", m.apps_running()},
            {"appsFailed", m.apps_failed()},
            {"appsKilled", m.apps_killed()},
            {"reservedMB", 0},
            {"availableMB", ResourceValue(available, kMemory)},
            {"allocatedMB", ResourceValue(m.allocated(), kMemory)},
            {"pendingMB", ResourceValue(m.pending(), kMemory)},
            {"totalMB", ResourceValue(m.total(), kMemory)},
            {"reservedVirtualCores", 0},
            {"availableVirtualCores", ResourceValue(available, kVcores)},
            {"allocatedVirtualCores", ResourceValue(m.allocated(), kVcores)},
            {"pendingVirtualCores", ResourceValue(m.pending(), kVcores)},
            {"totalVirtualCores", ResourceValue(m.total(), kVcores)},
            {"reservedNetworkMbps", 0},
            {"availableNetworkMbps", ResourceValue(available, kNetwork)},
            {"allocatedNetworkMbps", ResourceValue(m.allocated(), kNetwork)},
            {"pendingNetworkMbps", ResourceValue(m.pending(), kNetwork)},
            {"totalNetworkMbps", ResourceValue(m.total(), kNetwork)},
            {"containersAllocated", s.containers_running},
            {"containersReserved", 0},
            {"containersPending", s.containers_pending},
            {"totalNodes", total_nodes},
            {"activeNodes", m.active_nodes()},
            {"lostNodes", m.lost_nodes()},
            {"unhealthyNodes", m.unhealthy_nodes()},
            {"decommissioningNodes", 0},
            {"decommissionedNodes", m.decommissioned_nodes()},
            {"rebootedNodes", 0},
            {"shutdownNodes", shutdown},
            {"containerAssignedPerSecond", static_cast<int64_t>(s.allocations_per_second + 0.5)},
            {"resources", resources}}}};
}

Json SchedulerJson(const ClusterSnapshot& s) {
  Json info = QueueJson(s, s.root_queue, true);
  info["type"] = "capacityScheduler";
  info["weftPolicy"] = s.policy;
  return {{"scheduler", {{"schedulerInfo", info}}}};
}

Json AppJson(const ClusterSnapshot& s, const v1::ApplicationReport& app,
             absl::string_view http_address) {
  const bool finished = app.finish_time_ms() > 0;
  const int64_t started = app.submit_time_ms();
  const int64_t elapsed =
      started == 0 ? 0 : (finished ? app.finish_time_ms() : s.taken_ms) - started;
  // The current attempt's AM container and its node's web address, for the logs link.
  std::string am_container, am_http;
  auto attempts = s.attempts.find(app.application_id());
  if (attempts != s.attempts.end() && !attempts->second.empty()) {
    am_container = attempts->second.back().am_container_id();
    am_http = attempts->second.back().am_node_http_address();
  }
  Json j;
  j["id"] = app.application_id();
  j["user"] = app.user();
  j["name"] = app.name();
  j["queue"] = app.queue();
  j["state"] = store::ReportedAppState(app.state());
  j["finalStatus"] = store::ReportedFinalStatus(app.final_status());
  j["progress"] = Round3(app.progress() * 100);
  j["trackingUI"] = finished ? "History" : "ApplicationMaster";
  j["trackingUrl"] = absl::StrCat("http://", http_address, "/cluster/app/", app.application_id());
  j["diagnostics"] = app.diagnostics();
  j["clusterId"] = s.cluster_id;
  j["applicationType"] = "YARN";
  j["applicationTags"] = "";
  j["priority"] = app.priority();
  j["startedTime"] = started;
  j["launchTime"] = app.start_time_ms();
  j["finishedTime"] = app.finish_time_ms();
  j["elapsedTime"] = std::max<int64_t>(elapsed, 0);
  j["amContainerLogs"] =
      am_container.empty() || am_http.empty()
          ? ""
          : absl::StrCat("http://", am_http, "/node/containerlogs/", am_container, "/", app.user());
  j["amHostHttpAddress"] = am_http;
  j["allocatedMB"] = ResourceValue(app.allocated(), kMemory);
  j["allocatedVCores"] = ResourceValue(app.allocated(), kVcores);
  j["runningContainers"] = app.running_containers();
  j["memorySeconds"] = ResourceValue(app.resource_seconds(), kMemory);
  j["vcoreSeconds"] = ResourceValue(app.resource_seconds(), kVcores);
  const double cluster_share = DominantShare(s, app.allocated()) * 100;
  j["clusterUsagePercentage"] = Round3(cluster_share);
  j["preemptedResourceMB"] = 0;
  j["preemptedResourceVCores"] = 0;
  j["numNonAMContainerPreempted"] = 0;
  j["numAMContainerPreempted"] = 0;
  j["logAggregationStatus"] = "DISABLED";
  j["unmanagedApplication"] = app.unmanaged_am();
  j["applicationPriority"] = app.priority();
  j["appNodeLabelExpression"] = "";
  j["amNodeLabelExpression"] = "";
  // Weft: network and every resource type, the AM container and how it was sized, the goal.
  j["allocatedNetworkMbps"] = ResourceValue(app.allocated(), kNetwork);
  j["networkMbpsSeconds"] = ResourceValue(app.resource_seconds(), kNetwork);
  j["allocatedResources"] = ResourceMap(s, app.allocated());
  j["resourceSeconds"] = ResourceMap(s, app.resource_seconds());
  j["amResource"] = ResourceMap(s, app.am_resource());
  j["amContainerId"] = am_container;
  j["currentAttempt"] = app.current_attempt();
  j["amSizingDecisions"] = Json::array();
  for (const auto& d : app.am_sizing_decisions()) j["amSizingDecisions"].push_back(d);
  j["completionGoalMs"] = app.completion_goal_ms();
  return j;
}

Json AppAttemptJson(const ClusterSnapshot&, const v1::ApplicationReport& app,
                    const v1::ApplicationAttemptReport& a) {
  Json j;
  j["id"] = a.attempt();
  j["appAttemptId"] = a.attempt_id();
  j["nodeId"] = a.am_node_id();
  j["nodeHttpAddress"] = a.am_node_http_address();
  j["logsLink"] = a.am_container_id().empty() || a.am_node_http_address().empty()
                      ? ""
                      : absl::StrCat("http://", a.am_node_http_address(), "/node/containerlogs/",
                                     a.am_container_id(), "/", app.user());
  j["containerId"] = a.am_container_id();
  j["startTime"] = a.start_time_ms();
  j["finishedTime"] = a.finish_time_ms();
  j["appAttemptState"] = a.state();
  j["diagnosticsInfo"] = a.diagnostics();
  return j;
}

Json NodeJson(const ClusterSnapshot& s, const v1::NodeReport& n) {
  const v1::Resource avail = Minus(n.capability(), n.used());
  absl::string_view host = n.node_id();
  if (size_t colon = host.rfind(':'); colon != absl::string_view::npos)
    host = host.substr(0, colon);
  Json containers = Json::array();
  for (const v1::ContainerStatus& c : n.containers()) {
    containers.push_back({{"id", c.container_id()},
                          {"appId", AppOfContainer(c.container_id())},
                          {"memoryRssBytes", c.usage().memory_rss_bytes()},
                          {"cpuTimeMs", c.usage().cpu_time_ms()},
                          {"networkTxBytes", c.usage().network_tx_bytes()},
                          {"networkTxRateMbps", c.usage().network_tx_rate_mbps()}});
  }
  Json missing = Json::array();
  for (const auto& f : n.missing_features()) missing.push_back(f);
  const bool healthy = n.state() != v1::NODE_UNHEALTHY;
  Json j;
  j["rack"] = n.rack().empty() ? "/default-rack" : n.rack();
  j["state"] = store::ReportedNodeState(n.state());
  j["id"] = n.node_id();
  j["nodeHostName"] = std::string(host);
  j["nodeHTTPAddress"] = n.http_address();
  j["healthStatus"] = healthy ? "Healthy" : "Unhealthy";
  j["healthReport"] = n.health_report();
  j["lastHealthUpdate"] = n.last_health_update_ms();
  j["version"] = WeftVersion();
  j["numContainers"] = n.num_containers();
  j["usedMemoryMB"] = ResourceValue(n.used(), kMemory);
  j["availMemoryMB"] = ResourceValue(avail, kMemory);
  j["usedVirtualCores"] = ResourceValue(n.used(), kVcores);
  j["availableVirtualCores"] = ResourceValue(avail, kVcores);
  // Weft: network and every resource type, isolation, running containers' usage.
  j["usedNetworkMbps"] = ResourceValue(n.used(), kNetwork);
  j["availNetworkMbps"] = ResourceValue(avail, kNetwork);
  j["totalResource"] = ResourceMap(s, n.capability());
  j["usedResource"] = ResourceMap(s, n.used());
  j["networkIsolation"] = n.network_isolation();
  j["missingFeatures"] = missing;
  j["usage"] = {{"memoryRssBytes", n.usage().memory_rss_bytes()},
                {"cpuTimeMs", n.usage().cpu_time_ms()},
                {"networkTxBytes", n.usage().network_tx_bytes()},
                {"networkTxRateMbps", n.usage().network_tx_rate_mbps()}};
  j["containers"] = containers;
  // YARN's node labels and node attributes (attributes as YARN's nodeAttributesInfo, prefix
  // "rm.yarn.io" for Weft's one namespace).
  Json labels = Json::array();
  if (!n.node_label().empty()) labels.push_back(n.node_label());
  j["nodeLabels"] = labels;
  Json attributes = Json::array();
  std::map<std::string, std::string> sorted(n.attributes().begin(), n.attributes().end());
  for (const auto& [k, v] : sorted)
    attributes.push_back({{"prefix", "rm.yarn.io"}, {"name", k}, {"type", "STRING"}, {"value", v}});
  j["nodeAttributesInfo"] = {{"nodeAttributeInfo", attributes}};
  // Weft: the node's devices (docs/gpu.md), each with its free share as the scheduler accounts
  // it and the running containers holding it, as of the node's last heartbeat.
  Json gpus = Json::array();
  for (const v1::Device& d : n.devices()) {
    Json held = Json::array();
    for (const v1::ContainerStatus& c : n.containers()) {
      for (const v1::DeviceAssignment& a : c.devices()) {
        if (a.type() == d.type() && a.index() == d.index())
          held.push_back({{"containerId", c.container_id()}, {"milli", a.milli()}});
      }
    }
    auto free = n.device_free_milli().find(d.index());
    gpus.push_back({{"type", d.type()},
                    {"index", d.index()},
                    {"uuid", d.uuid()},
                    {"model", d.model()},
                    {"path", d.path()},
                    {"memoryMB", d.memory_mb()},
                    {"healthy", d.healthy()},
                    {"topologyGroup", d.topology_group()},
                    {"freeMilli", free == n.device_free_milli().end() ? 0 : free->second},
                    {"containers", held}});
  }
  j["devices"] = gpus;
  return j;
}

Json ClusterHistoryJson(const ClusterSnapshot& s, int64_t since_ms) {
  Json types = Json::array();
  for (const auto& [name, unit] : s.resource_types)
    types.push_back({{"name", name}, {"unit", unit}});
  Json samples = Json::array();
  Json queues = Json::array();
  int64_t sample_ms = 0;
  int64_t retention_s = 0;
  if (s.history != nullptr) {
    sample_ms = s.history->options().sample_ms;
    retention_s = s.history->options().retention_s;
    rm::ClusterHistory::Slice slice = s.history->Since(since_ms);
    const std::vector<std::string>& names = s.history->resource_names();
    for (const std::string& q : slice.queue_names) queues.push_back(q);
    for (const rm::HistorySample& h : slice.samples) {
      Json used = Json::object();
      Json total = Json::object();
      for (size_t i = 0; i < names.size() && i < static_cast<size_t>(kMaxResourceTypes); ++i) {
        used[names[i]] = h.used[static_cast<int>(i)];
        total[names[i]] = h.total[static_cast<int>(i)];
      }
      Json qs = Json::array();
      for (int32_t i = 0; i < h.num_queues; ++i) {
        const rm::HistoryQueue& q = h.queues[static_cast<size_t>(i)];
        if (q.name < 0 || static_cast<size_t>(q.name) >= slice.queue_names.size()) continue;
        qs.push_back({{"queue", slice.queue_names[static_cast<size_t>(q.name)]},
                      {"usedPct", Round3(q.used_pct)},
                      {"guaranteedPct", Round3(q.guaranteed_pct)}});
      }
      samples.push_back({{"time", h.time_ms},
                         {"used", used},
                         {"total", total},
                         {"containersRunning", h.containers_running},
                         {"containersPending", h.containers_pending},
                         {"appsRunning", h.apps_running},
                         {"appsPending", h.apps_pending},
                         {"queues", qs}});
    }
  }
  return {{"clusterHistory",
           {{"sampleIntervalMs", sample_ms},
            {"retentionSeconds", retention_s},
            {"since", since_ms},
            {"resourceTypes", types},
            {"queues", queues},
            {"samples", samples}}}};
}

}  // namespace weft::web
