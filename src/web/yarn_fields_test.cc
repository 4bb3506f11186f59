// The REST API's JSON against the field names and types YARN documents for its ResourceManager
// REST API (hadoop-yarn-site, ResourceManagerRest.md: "Elements of the ... object" tables).
// Every documented field must be present with its type, except the few listed as not provided
// (each with the reason); every other field must be a declared Weft extension, so the shape
// cannot drift silently.
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "web/rest_api.h"
#include "web/test_cluster.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

// "name:t" with t = s (string), i (integer), n (number), b (boolean), o (object), a (array).
using Fields = std::vector<std::string>;

// ResourceManagerRest: Elements of the clusterInfo object.
const Fields kClusterInfo = {"id:i",
                             "startedOn:i",
                             "state:s",
                             "haState:s",
                             "rmStateStoreName:s",
                             "resourceManagerVersion:s",
                             "resourceManagerBuildVersion:s",
                             "resourceManagerVersionBuiltOn:s",
                             "hadoopVersion:s",
                             "hadoopBuildVersion:s",
                             "hadoopVersionBuiltOn:s",
                             "haZooKeeperConnectionState:s"};
const Fields kClusterInfoWeft = {"schedulerPolicy", "snapshotGeneration"};

// Elements of the clusterMetrics object.
const Fields kClusterMetrics = {"appsSubmitted:i",
                                "appsCompleted:i",
                                "appsPending:i",
                                "appsRunning:i",
                                "appsFailed:i",
                                "appsKilled:i",
                                "reservedMB:i",
                                "availableMB:i",
                                "allocatedMB:i",
                                "pendingMB:i",
                                "totalMB:i",
                                "reservedVirtualCores:i",
                                "availableVirtualCores:i",
                                "allocatedVirtualCores:i",
                                "pendingVirtualCores:i",
                                "totalVirtualCores:i",
                                "containersAllocated:i",
                                "containersReserved:i",
                                "containersPending:i",
                                "totalNodes:i",
                                "activeNodes:i",
                                "lostNodes:i",
                                "unhealthyNodes:i",
                                "decommissioningNodes:i",
                                "decommissionedNodes:i",
                                "rebootedNodes:i",
                                "shutdownNodes:i",
                                "containerAssignedPerSecond:i"};
const Fields kClusterMetricsWeft = {"reservedNetworkMbps",  "availableNetworkMbps",
                                    "allocatedNetworkMbps", "pendingNetworkMbps",
                                    "totalNetworkMbps",     "resources"};

// Capacity Scheduler API: schedulerInfo, and the queues objects (parent, then leaf).
const Fields kSchedulerInfo = {"type:s",        "capacity:n",  "usedCapacity:n",
                               "maxCapacity:n", "queueName:s", "queues:o"};
const Fields kParentQueue = {"capacity:n",
                             "usedCapacity:n",
                             "maxCapacity:n",
                             "absoluteCapacity:n",
                             "absoluteMaxCapacity:n",
                             "absoluteUsedCapacity:n",
                             "numApplications:i",
                             "usedResources:s",
                             "queueName:s",
                             "state:s",
                             "queues:o",
                             "resourcesUsed:o"};
// A leaf: the parent's fields except queues, plus these.
const Fields kLeafQueueExtra = {"type:s", "numActiveApplications:i", "numPendingApplications:i",
                                "numContainers:i"};
// Documented leaf fields Weft does not provide: its capacity policy has no per-queue
// application caps (only max-running-apps) nor YARN's minimum-user-limit-percent, and it does
// not report per-user usage in queues yet.
const std::set<std::string> kLeafQueueNotProvided = {"maxApplications",
                                                     "maxApplicationsPerUser",
                                                     "maxActiveApplications",
                                                     "maxActiveApplicationsPerUser",
                                                     "userLimit",
                                                     "userLimitFactor",
                                                     "users"};
const Fields kQueueWeft = {"queuePath",
                           "numActiveApplications",
                           "numPendingApplications",
                           "numContainers",
                           "pendingContainers",
                           "weight",
                           "used",
                           "pending",
                           "guaranteed",
                           "maximum",
                           "type",
                           "weftPolicy"};

// Elements of the app (Application) object.
const Fields kApp = {"id:s",
                     "user:s",
                     "name:s",
                     "applicationType:s",
                     "queue:s",
                     "state:s",
                     "finalStatus:s",
                     "progress:n",
                     "trackingUI:s",
                     "trackingUrl:s",
                     "diagnostics:s",
                     "clusterId:i",
                     "startedTime:i",
                     "finishedTime:i",
                     "elapsedTime:i",
                     "amContainerLogs:s",
                     "amHostHttpAddress:s",
                     "allocatedMB:i",
                     "allocatedVCores:i",
                     "runningContainers:i",
                     "memorySeconds:i",
                     "vcoreSeconds:i",
                     "clusterUsagePercentage:n",
                     "preemptedResourceMB:i",
                     "preemptedResourceVCores:i",
                     "numNonAMContainerPreempted:i",
                     "numAMContainerPreempted:i",
                     "logAggregationStatus:s",
                     "unmanagedApplication:b",
                     "applicationPriority:i",
                     "appNodeLabelExpression:s",
                     "amNodeLabelExpression:s",
                     "applicationTags:s",
                     "priority:i",
                     "launchTime:i"};
// Documented, not provided: the share of the app's queue (YARN computes it against the queue's
// capacity scheduler guarantee; Weft reports clusterUsagePercentage only).
const std::set<std::string> kAppNotProvided = {"queueUsagePercentage"};
const Fields kAppWeft = {"allocatedNetworkMbps", "networkMbpsSeconds", "allocatedResources",
                         "resourceSeconds",      "amResource",         "amContainerId",
                         "currentAttempt",       "amSizingDecisions",  "completionGoalMs"};

// Elements of the appAttempt object.
const Fields kAppAttempt = {
    "id:i",        "nodeId:s",       "nodeHttpAddress:s", "logsLink:s",        "containerId:s",
    "startTime:i", "finishedTime:i", "appAttemptState:s", "diagnosticsInfo:s", "appAttemptId:s"};

// Elements of the node object.
const Fields kNode = {"rack:s",
                      "state:s",
                      "id:s",
                      "nodeHostName:s",
                      "nodeHTTPAddress:s",
                      "healthStatus:s",
                      "healthReport:s",
                      "lastHealthUpdate:i",
                      "version:s",
                      "usedMemoryMB:i",
                      "availMemoryMB:i",
                      "usedVirtualCores:i",
                      "availableVirtualCores:i",
                      "numContainers:i",
                      "nodeLabels:a",
                      "nodeAttributesInfo:o"};
const Fields kNodeWeft = {"usedNetworkMbps",  "availNetworkMbps", "totalResource", "usedResource",
                          "networkIsolation", "missingFeatures",  "usage",         "containers",
                          "devices"};

// Elements of the NewApplication object, and of maximum-resource-capability.
const Fields kNewApplication = {"application-id:s", "maximum-resource-capability:o"};
const Fields kMaxCapability = {"memory:i", "vCores:i"};

// Elements of the appstate object.
const Fields kAppState = {"state:s"};

bool HasType(const Json& v, char t) {
  switch (t) {
    case 's':
      return v.is_string();
    case 'i':
      return v.is_number_integer();
    case 'n':
      return v.is_number();
    case 'b':
      return v.is_boolean();
    case 'o':
      return v.is_object();
    case 'a':
      return v.is_array();
  }
  return false;
}

// Documented fields present with their types; the rest declared as extensions.
void CheckObject(const std::string& what, const Json& j, const Fields& documented,
                 const Fields& extensions, const std::set<std::string>& not_provided = {}) {
  ASSERT_TRUE(j.is_object()) << what << ": " << Dump(j);
  std::set<std::string> known(extensions.begin(), extensions.end());
  for (const std::string& f : documented) {
    const std::string name = f.substr(0, f.find(':'));
    const char type = f.back();
    known.insert(name);
    ASSERT_TRUE(j.contains(name)) << what << " lacks YARN's field '" << name << "'";
    EXPECT_TRUE(HasType(j[name], type))
        << what << "." << name << " has the wrong type: " << Dump(j[name]);
  }
  for (const std::string& name : not_provided) {
    EXPECT_FALSE(j.contains(name)) << what << "." << name << " is now provided: update the test";
  }
  for (const auto& [name, value] : j.items()) {
    EXPECT_TRUE(known.contains(name))
        << what << " has field '" << name << "', neither YARN's nor a declared Weft extension";
  }
}

Fields Concat(Fields a, const Fields& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(YarnFieldsTest, EveryEndpointHasYarnsDocumentedFields) {
  TestCluster c;
  DirectWriter writer(&c);
  RestApiOptions o;
  o.writes_enabled = true;
  o.client_secret = "s";
  o.anonymous_view = true;  // the fields of every app, as YARN without ACLs
  RestApi api(o, &c.snapshots_, &writer);
  auto get = [&](const std::string& path) {
    HttpResponse r = api.Handle(Req("GET", path));
    EXPECT_EQ(r.status, 200) << path << ": " << r.body;
    return Json::parse(r.body);
  };

  Json info = get("/ws/v1/cluster/info");
  CheckObject("clusterInfo", info["clusterInfo"], kClusterInfo, kClusterInfoWeft);
  CheckObject("clusterMetrics", get("/ws/v1/cluster/metrics")["clusterMetrics"], kClusterMetrics,
              kClusterMetricsWeft);

  Json sched = get("/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"];
  Fields root_fields = kSchedulerInfo;
  CheckObject("schedulerInfo", sched, root_fields,
              Concat(kQueueWeft, {"absoluteCapacity", "absoluteMaxCapacity", "absoluteUsedCapacity",
                                  "numApplications", "usedResources", "state", "resourcesUsed"}));
  ASSERT_FALSE(sched["queues"]["queue"].empty());
  Fields leaf = Concat(kLeafQueueExtra, {});
  for (const std::string& f : kParentQueue) {
    if (f != "queues:o") leaf.push_back(f);
  }
  CheckObject("leaf queue", sched["queues"]["queue"][0], leaf, kQueueWeft, kLeafQueueNotProvided);

  Json apps = get("/ws/v1/cluster/apps")["apps"]["app"];
  ASSERT_EQ(apps.size(), 2u);
  for (const Json& app : apps) CheckObject("app (in apps)", app, kApp, kAppWeft, kAppNotProvided);
  CheckObject("app", get("/ws/v1/cluster/apps/" + c.running_)["app"], kApp, kAppWeft,
              kAppNotProvided);
  Json attempts = get("/ws/v1/cluster/apps/" + c.running_ + "/appattempts")["appAttempts"];
  ASSERT_EQ(attempts["appAttempt"].size(), 1u);
  CheckObject("appAttempt", attempts["appAttempt"][0], kAppAttempt, {});
  CheckObject("appstate", get("/ws/v1/cluster/apps/" + c.running_ + "/state"), kAppState, {});

  Json nodes = get("/ws/v1/cluster/nodes")["nodes"]["node"];
  ASSERT_EQ(nodes.size(), 2u);
  for (const Json& n : nodes) CheckObject("node (in nodes)", n, kNode, kNodeWeft);
  CheckObject("node", get("/ws/v1/cluster/nodes/h1:1")["node"], kNode, kNodeWeft);

  HttpRequest fresh = Req("POST", "/ws/v1/cluster/apps/new-application");
  fresh.headers["x-weft-secret"] = "s";
  Json app_id = Json::parse(api.Handle(fresh).body);
  CheckObject("NewApplication", app_id, kNewApplication, {});
  CheckObject("maximum-resource-capability", app_id["maximum-resource-capability"], kMaxCapability,
              {});

  // Collections are YARN's wrappers: {"apps": {"app": [...]}} and the like.
  EXPECT_TRUE(get("/ws/v1/cluster/apps")["apps"]["app"].is_array());
  EXPECT_TRUE(get("/ws/v1/cluster/nodes")["nodes"]["node"].is_array());
  EXPECT_TRUE(attempts["appAttempt"].is_array());
}

}  // namespace
}  // namespace weft::web
