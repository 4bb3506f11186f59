#include "web/rest_api.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "web/rm_metrics.h"
#include "web/test_cluster.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

using ::testing::HasSubstr;

Json Body(const HttpResponse& r) {
  Json j = Json::parse(r.body, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.body;
  return j;
}

// An error: its status and YARN's RemoteException body.
void ExpectError(const HttpResponse& r, int status, const std::string& message_part) {
  EXPECT_EQ(r.status, status) << r.body;
  Json j = Body(r);
  ASSERT_TRUE(j.contains("RemoteException")) << r.body;
  EXPECT_THAT(j["RemoteException"]["message"].get<std::string>(), HasSubstr(message_part));
  EXPECT_TRUE(j["RemoteException"]["exception"].is_string());
}

// A "credential" that names its user, alice or mallory (the real one is MUNGE's, tested in rm/).
absl::StatusOr<rm::Caller> NamedUser(const rm::Presented& p) {
  if (p.munge_credential != "alice" && p.munge_credential != "mallory")
    return absl::UnauthenticatedError("bad credential");
  rm::Caller c;
  c.user = p.munge_credential;
  c.real_user = c.user;
  return c;
}

class RestApiTest : public ::testing::Test {
 protected:
  RestApiTest() : writer_(&c_) {}

  RestApi Api(bool writes, const std::string& secret = "", bool anonymous_view = true) {
    RestApiOptions o;
    o.writes_enabled = writes;
    o.anonymous_view = anonymous_view;
    o.client_secret = secret;
    o.max_body_bytes = 4096;
    return RestApi(o, &c_.snapshots_, &writer_);
  }

  TestCluster c_;
  DirectWriter writer_;
};

TEST_F(RestApiTest, ClusterInfoAndMetrics) {
  RestApi api = Api(false);
  for (const char* path : {"/ws/v1/cluster", "/ws/v1/cluster/", "/ws/v1/cluster/info"}) {
    HttpResponse r = api.Handle(Req("GET", path));
    ASSERT_EQ(r.status, 200) << path;
    Json j = Body(r)["clusterInfo"];
    EXPECT_EQ(j["id"], c_.rm_->cluster_timestamp_ms());
    EXPECT_EQ(j["state"], "STARTED");
    EXPECT_EQ(j["haState"], "ACTIVE");
  }
  Json m = Body(api.Handle(Req("GET", "/ws/v1/cluster/metrics")))["clusterMetrics"];
  EXPECT_EQ(m["appsSubmitted"], 2);
  EXPECT_EQ(m["appsKilled"], 1);
  EXPECT_EQ(m["totalMB"], 8192 + 4096);
  EXPECT_EQ(m["totalVirtualCores"], 12);
  EXPECT_EQ(m["totalNetworkMbps"], 1000);
  EXPECT_EQ(m["allocatedMB"].get<int64_t>() + m["availableMB"].get<int64_t>(), 8192 + 4096);
  EXPECT_EQ(m["containersAllocated"], 1);  // the running app's AM
  EXPECT_EQ(m["activeNodes"], 2);
  EXPECT_EQ(m["totalNodes"], 2);
  EXPECT_EQ(m["resources"]["network-mbps"]["total"], 1000);
}

TEST_F(RestApiTest, AppsWithFilters) {
  RestApi api = Api(false);
  Json all = Body(api.Handle(Req("GET", "/ws/v1/cluster/apps")))["apps"]["app"];
  ASSERT_EQ(all.size(), 2u);
  auto ids = [&](std::multimap<std::string, std::string> params) {
    std::vector<std::string> out;
    HttpResponse r = api.Handle(Req("GET", "/ws/v1/cluster/apps", params));
    EXPECT_EQ(r.status, 200) << r.body;
    const Json body = Body(r);
    for (const Json& a : body["apps"]["app"]) out.push_back(a["id"]);
    return out;
  };
  EXPECT_EQ(ids({{"states", "killed"}}), std::vector<std::string>{c_.killed_});
  EXPECT_EQ(ids({{"states", "ACCEPTED,RUNNING"}}), std::vector<std::string>{c_.running_});
  EXPECT_EQ(ids({{"states", "KILLED"}, {"states", "ACCEPTED"}}).size(), 2u);
  EXPECT_EQ(ids({{"user", "bob"}}), std::vector<std::string>{c_.killed_});
  EXPECT_EQ(ids({{"queue", "default"}}).size(), 2u);
  EXPECT_EQ(ids({{"queue", "root.default"}}).size(), 2u);
  EXPECT_TRUE(ids({{"queue", "other"}}).empty());
  EXPECT_EQ(ids({{"limit", "1"}}).size(), 1u);
  EXPECT_EQ(ids({{"finalStatus", "KILLED"}}), std::vector<std::string>{c_.killed_});
  EXPECT_EQ(ids({{"finishedTimeBegin", "1"}}), std::vector<std::string>{c_.killed_});
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps", {{"states", "SLEEPING"}})), 400,
              "Invalid application-state");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps", {{"limit", "0"}})), 400, "limit");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps", {{"limit", "x"}})), 400, "limit");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps", {{"startedTimeBegin", "-5"}})), 400,
              "startedTimeBegin");
}

TEST_F(RestApiTest, OneAppItsAttemptsAndState) {
  RestApi api = Api(false);
  HttpResponse r = api.Handle(Req("GET", "/ws/v1/cluster/apps/" + c_.running_));
  ASSERT_EQ(r.status, 200) << r.body;
  Json app = Body(r)["app"];
  EXPECT_EQ(app["id"], c_.running_);
  EXPECT_EQ(app["user"], "alice");
  EXPECT_EQ(app["name"], "sleepy");
  EXPECT_EQ(app["state"], "ACCEPTED");
  EXPECT_EQ(app["finalStatus"], "UNDEFINED");
  EXPECT_EQ(app["runningContainers"], 1);
  EXPECT_GT(app["allocatedMB"].get<int64_t>(), 0);
  EXPECT_EQ(app["trackingUrl"], "http://rm.example:8088/cluster/app/" + c_.running_);
  EXPECT_THAT(app["amContainerLogs"].get<std::string>(),
              HasSubstr(":8042/node/containerlogs/container_e"));
  Json attempts = Body(api.Handle(Req(
      "GET", "/ws/v1/cluster/apps/" + c_.running_ + "/appattempts")))["appAttempts"]["appAttempt"];
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0]["id"], 1);
  EXPECT_THAT(attempts[0]["containerId"].get<std::string>(), HasSubstr("container_e"));
  EXPECT_THAT(attempts[0]["nodeHttpAddress"].get<std::string>(), HasSubstr(":8042"));
  Json state = Body(api.Handle(Req("GET", "/ws/v1/cluster/apps/" + c_.killed_ + "/state")));
  EXPECT_EQ(state["state"], "KILLED");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps/application_1_99999")), 404, "not found");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps/app_../../etc")), 400,
              "Invalid ApplicationId");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps/bogus")), 400, "Invalid ApplicationId");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/apps/" + c_.running_ + "/nope")), 404,
              "no such resource");
}

TEST_F(RestApiTest, NodesWithFilter) {
  // The NM reports a container with network usage: it reaches the node JSON.
  v1::NodeHeartbeatRequest hb;
  hb.set_node_id("h1:1");
  v1::ContainerStatus* st = hb.add_container_statuses();
  st->set_container_id("container_e1_5_0001_01_000001");
  st->set_state(v1::CONTAINER_RUNNING);
  st->mutable_usage()->set_network_tx_bytes(12345);
  st->mutable_usage()->set_network_tx_rate_mbps(42);
  ASSERT_TRUE(c_.rm_->NodeHeartbeat(hb).ok());
  c_.Publish();
  RestApi api = Api(false);
  Json nodes = Body(api.Handle(Req("GET", "/ws/v1/cluster/nodes")))["nodes"]["node"];
  ASSERT_EQ(nodes.size(), 2u);
  Json h1 = Body(api.Handle(Req("GET", "/ws/v1/cluster/nodes/h1:1")))["node"];
  EXPECT_EQ(h1["id"], "h1:1");
  EXPECT_EQ(h1["nodeHostName"], "h1");
  EXPECT_EQ(h1["nodeHTTPAddress"], "h1:8042");
  EXPECT_EQ(h1["state"], "RUNNING");
  EXPECT_EQ(h1["healthStatus"], "Healthy");
  EXPECT_EQ(h1["usedMemoryMB"].get<int64_t>() + h1["availMemoryMB"].get<int64_t>(), 8192);
  EXPECT_EQ(h1["availNetworkMbps"], 1000);
  ASSERT_EQ(h1["containers"].size(), 1u);
  EXPECT_EQ(h1["containers"][0]["appId"], "application_5_0001");
  EXPECT_EQ(h1["containers"][0]["networkTxRateMbps"], 42);
  EXPECT_EQ(
      Body(api.Handle(Req("GET", "/ws/v1/cluster/nodes", {{"states", "LOST"}})))["nodes"]["node"]
          .size(),
      0u);
  EXPECT_EQ(
      Body(api.Handle(Req("GET", "/ws/v1/cluster/nodes", {{"states", "running"}})))["nodes"]["node"]
          .size(),
      2u);
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/nodes", {{"states", "ASLEEP"}})), 400,
              "Invalid node state");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/nodes/h9:1")), 404, "not found");
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/nodes/h<1>")), 400, "Invalid NodeId");
}

TEST_F(RestApiTest, SchedulerQueueTree) {
  RestApi api = Api(false);
  Json info =
      Body(api.Handle(Req("GET", "/ws/v1/cluster/scheduler")))["scheduler"]["schedulerInfo"];
  EXPECT_EQ(info["type"], "capacityScheduler");
  EXPECT_EQ(info["queueName"], "root");
  EXPECT_EQ(info["capacity"], 100);
  ASSERT_TRUE(info["queues"]["queue"].is_array());
  Json def = info["queues"]["queue"][0];
  EXPECT_EQ(def["queueName"], "default");
  EXPECT_EQ(def["type"], "capacitySchedulerLeafQueueInfo");
  EXPECT_EQ(def["numApplications"], 1);  // the killed one left the scheduler
  EXPECT_EQ(def["numContainers"], 1);
  EXPECT_GT(def["usedCapacity"].get<double>(), 0);
  EXPECT_GT(def["absoluteCapacity"].get<double>(), 0);
}

TEST_F(RestApiTest, ClusterHistoryServesTheSamplesAfterSince) {
  RestApi api = Api(false);
  // Nothing sampled yet: the first sample comes one interval (10 s by default) after the start.
  Json empty = Body(api.Handle(Req("GET", "/ws/v1/cluster/history")))["clusterHistory"];
  EXPECT_EQ(empty["sampleIntervalMs"], 10000);
  EXPECT_EQ(empty["retentionSeconds"], 86400);
  EXPECT_TRUE(empty["samples"].empty());
  c_.loop_.Advance(30'000);
  c_.Publish();
  Json h = Body(api.Handle(Req("GET", "/ws/v1/cluster/history")))["clusterHistory"];
  ASSERT_EQ(h["samples"].size(), 3u) << h.dump();
  EXPECT_EQ(h["resourceTypes"][0]["name"], "memory-mb");
  const Json& last = h["samples"][2];
  EXPECT_EQ(last["time"], c_.rm_->started_ms() + 30'000);
  EXPECT_EQ(last["total"]["memory-mb"], 8192 + 4096);
  EXPECT_EQ(last["total"]["network-mbps"], 1000);
  EXPECT_GT(last["used"]["memory-mb"].get<int64_t>(), 0);  // the running app's AM
  EXPECT_EQ(last["containersRunning"], 1);
  EXPECT_EQ(last["appsRunning"].get<int64_t>() + last["appsPending"].get<int64_t>(), 1);
  ASSERT_EQ(last["queues"].size(), 1u);
  EXPECT_EQ(last["queues"][0]["queue"], "root.default");
  EXPECT_GT(last["queues"][0]["usedPct"].get<double>(), 0);
  EXPECT_EQ(h["queues"], Json::array({"root.default"}));
  // since is exclusive: the samples after the second one.
  const int64_t second = h["samples"][1]["time"];
  Json after = Body(api.Handle(Req("GET", "/ws/v1/cluster/history",
                                   {{"since", std::to_string(second)}})))["clusterHistory"];
  ASSERT_EQ(after["samples"].size(), 1u);
  EXPECT_EQ(after["samples"][0]["time"], last["time"]);
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/history", {{"since", "yesterday"}})), 400,
              "since");
  ExpectError(api.Handle(Req("POST", "/ws/v1/cluster/history")), 405, "GET");
}

TEST_F(RestApiTest, UnknownPathsAndMethods) {
  RestApi api = Api(false);
  ExpectError(api.Handle(Req("GET", "/ws/v1/cluster/bogus")), 404, "no such resource");
  ExpectError(api.Handle(Req("GET", "/ws/v2/x")), 404, "no such resource");
  ExpectError(api.Handle(Req("GET", "/ws/v1/clusterfoo")), 404, "no such resource");
  HttpResponse r = api.Handle(Req("DELETE", "/ws/v1/cluster/apps"));
  ExpectError(r, 405, "not allowed");
  ExpectError(api.Handle(Req("POST", "/ws/v1/cluster/metrics")), 405, "not allowed");
  HttpResponse big = api.Handle(Req("POST", "/ws/v1/cluster/apps", {}, std::string(5000, 'x')));
  ExpectError(big, 413, "at most 4096");
}

TEST_F(RestApiTest, WritesAreRefusedWhenDisabledOrUnauthenticated) {
  const std::string body = R"({"application-id":"application_1_1","am-container-spec":)"
                           R"({"commands":{"command":"true"}}})";
  ExpectError(Api(false, "s3cret").Handle(Req("POST", "/ws/v1/cluster/apps/new-application")), 403,
              "disabled");
  // Enabled but the RM has no secret: still refused.
  ExpectError(Api(true, "").Handle(Req("POST", "/ws/v1/cluster/apps", {}, body)), 403,
              "need a client secret");
  RestApi api = Api(true, "s3cret");
  HttpResponse none = api.Handle(Req("POST", "/ws/v1/cluster/apps/new-application"));
  ExpectError(none, 401, "X-Weft-Secret");
  HttpRequest wrong =
      Req("PUT", "/ws/v1/cluster/apps/" + c_.running_ + "/state", {}, R"({"state":"KILLED"})");
  wrong.headers["x-weft-secret"] = "s3creT";
  ExpectError(api.Handle(wrong), 401, "wrong client secret");
  HttpRequest almost = wrong;
  almost.headers["x-weft-secret"] = "s3cret-and-more";
  ExpectError(api.Handle(almost), 401, "wrong client secret");
  // Nothing changed.
  EXPECT_EQ(c_.rm_->GetApplication(c_.running_)->state(), v1::APP_ACCEPTED);
  EXPECT_EQ(c_.rm_->ListApplications({}).applications_size(), 2);
}

TEST_F(RestApiTest, AuthenticatedWritesWorkEndToEnd) {
  RestApi api = Api(true, "s3cret");
  HttpRequest fresh = Req("POST", "/ws/v1/cluster/apps/new-application");
  fresh.headers["authorization"] = "Bearer s3cret";
  HttpResponse r = api.Handle(fresh);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = Body(r)["application-id"];
  EXPECT_GT(Body(r)["maximum-resource-capability"]["memory"].get<int64_t>(), 0);

  Json submission = {
      {"application-id", id},
      {"application-name", "from-rest"},
      {"queue", "default"},
      {"max-app-attempts", 1},
      {"unmanaged-AM", false},
      {"resource", {{"memory", 512}, {"vCores", 1}}},
      {"am-container-spec",
       {{"commands", {{"command", "echo hi"}}},
        {"environment", {{"entry", Json::array({{{"key", "A"}, {"value", "1"}}})}}}}}};
  HttpRequest submit = Req("POST", "/ws/v1/cluster/apps", {}, Dump(submission));
  submit.headers["x-weft-secret"] = "s3cret";
  submit.headers["x-weft-user"] = "carol";
  r = api.Handle(submit);
  ASSERT_EQ(r.status, 202) << r.body;
  ASSERT_EQ(r.headers.size(), 1u);
  EXPECT_EQ(r.headers[0].second, "http://rm.example:8088/ws/v1/cluster/apps/" + id);
  Json app = Body(api.Handle(Req("GET", "/ws/v1/cluster/apps/" + id)))["app"];
  EXPECT_EQ(app["user"], "carol");
  EXPECT_EQ(app["name"], "from-rest");
  EXPECT_EQ(app["state"], "ACCEPTED");
  // The same submission again: the RM refuses it, the error comes back as JSON.
  HttpResponse again = api.Handle(submit);
  EXPECT_EQ(again.status, 409);
  EXPECT_TRUE(Body(again).contains("RemoteException"));

  HttpRequest kill = Req("PUT", "/ws/v1/cluster/apps/" + id + "/state", {},
                         R"({"state":"KILLED","diagnostics":"no longer needed"})");
  kill.headers["x-weft-secret"] = "s3cret";
  r = api.Handle(kill);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Body(r)["state"], "KILLED");
  EXPECT_EQ(c_.rm_->GetApplication(id)->diagnostics(), "no longer needed");
  HttpRequest revive = kill;
  revive.body = R"({"state":"RUNNING"})";
  ExpectError(api.Handle(revive), 400, "Only 'KILLED'");
  HttpRequest unknown = kill;
  unknown.path = "/ws/v1/cluster/apps/application_1_424242/state";
  ExpectError(api.Handle(unknown), 404, "not found");
  HttpRequest xml = submit;
  xml.headers["content-type"] = "application/xml";
  ExpectError(api.Handle(xml), 415, "JSON");
  HttpRequest bad_user = submit;
  bad_user.headers["x-weft-user"] = "../root";
  ExpectError(api.Handle(bad_user), 400, "user");
}

TEST(ParseSubmissionTest, RefusesBadBodiesNamingTheField) {
  auto err = [](const std::string& body) {
    auto r = ParseSubmission(body);
    EXPECT_FALSE(r.ok()) << body;
    return std::string(r.status().message());
  };
  const std::string spec = R"("am-container-spec":{"commands":{"command":"true"}})";
  EXPECT_THAT(err(""), HasSubstr("empty"));
  EXPECT_THAT(err("{"), HasSubstr("not valid JSON"));
  EXPECT_THAT(err("[1]"), HasSubstr("expected an object"));
  EXPECT_THAT(err(std::string(100, '[') + std::string(100, ']')), HasSubstr("nests deeper"));
  EXPECT_THAT(err("{" + spec + "}"), HasSubstr("application-id is required"));
  EXPECT_THAT(err(R"({"application-id":5,)" + spec + "}"),
              HasSubstr("application-id: expected a string"));
  EXPECT_THAT(err(R"({"application-id":"app_1",)" + spec + "}"),
              HasSubstr("not an application id"));
  const std::string id = R"("application-id":"application_1_1",)";
  EXPECT_THAT(err("{" + id + R"("am-container-spec":{}})"), HasSubstr("command is required"));
  EXPECT_THAT(err("{" + id + spec + R"(,"priority":"high"})"),
              HasSubstr("priority: expected an integer"));
  EXPECT_THAT(err("{" + id + spec + R"(,"priority":1e40})"),
              HasSubstr("priority: expected an integer"));
  EXPECT_THAT(err("{" + id + spec + R"(,"max-app-attempts":-1})"), HasSubstr("out of range"));
  EXPECT_THAT(err("{" + id + spec + R"(,"resource":{"memory":-5}})"), HasSubstr("resource.memory"));
  EXPECT_THAT(err("{" + id + spec + R"(,"resource":{"memory":18446744073709551615}})"),
              HasSubstr("out of range"));
  EXPECT_THAT(err("{" + id + spec + R"(,"resource":{"Bad Type":1}})"), HasSubstr("unknown field"));
  EXPECT_THAT(err("{" + id + spec + R"(,"unmanaged-AM":true})"), HasSubstr("not supported"));
  EXPECT_THAT(err("{" + id + spec + R"(,"surprise":1})"), HasSubstr("unknown field 'surprise'"));
  EXPECT_THAT(
      err("{" + id +
          R"("am-container-spec":{"commands":{"command":"x"},"local-resources":{"a":{}}}})"),
      HasSubstr("local-resources is not supported"));
  EXPECT_THAT(err("{" + id + R"("am-container-spec":{"commands":{"command":[1]}}})"),
              HasSubstr("command[0]: expected a string"));
  EXPECT_THAT(
      err("{" + id +
          R"("am-container-spec":{"commands":{"command":"x"},"environment":{"entry":[{"key":1}]}}})"),
      HasSubstr("entry[0].key"));

  auto ok = ParseSubmission("{" + id + spec +
                            R"(,"resource":{"memory":1024,"vCores":2,"network-mbps":50},)"
                            R"("application-tags":{"tag":["a"]},"priority":3})");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->am_resource().values().at("memory-mb"), 1024);
  EXPECT_EQ(ok->am_resource().values().at("network-mbps"), 50);
  EXPECT_EQ(ok->priority(), 3);
  EXPECT_EQ(ok->am_container_spec().command(0), "true");
}

TEST(RmMetricsTest, RendersClusterFamilies) {
  TestCluster c;
  metrics::TextWriter out;
  RenderClusterMetrics(*c.snapshots_.Get(), c.loop_.NowMs(), &out);
  const std::string& text = out.text();
  EXPECT_THAT(text, HasSubstr("weft_rm_cluster_resource{resource=\"memory-mb\",kind=\"capacity\"} "
                              "12288"));
  EXPECT_THAT(text, HasSubstr("weft_rm_applications{state=\"KILLED\"} 1"));
  EXPECT_THAT(text, HasSubstr("weft_rm_queue_resource{queue=\"root.default\",resource=\"vcores\","
                              "kind=\"allocated\"}"));
  EXPECT_THAT(text, HasSubstr("weft_rm_nodes{state=\"RUNNING\"} 2"));
  EXPECT_THAT(text, HasSubstr("weft_rm_containers_allocated_total 2"));
}

// The cluster families parse and lint clean under `promtool check metrics` (when installed;
// tests/web_test.sh checks a live RM's whole /metrics the same way).
TEST(RmMetricsTest, ClusterFamiliesPassPromtool) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "promtool is not installed";
  TestCluster c;
  metrics::TextWriter out;
  RenderClusterMetrics(*c.snapshots_.Get(), c.loop_.NowMs(), &out);
  const std::string path = ::testing::TempDir() + "/rm_metrics_test.prom";
  std::ofstream(path) << out.text();
  FILE* p = popen(("promtool check metrics <" + path + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string output;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) output.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << output << "\n" << out.text();
}

// Without anonymous_view, an app's details are for its owner, its queue's admins, cluster
// admins and its view ACL; others see it with "N/A" in their place and no attempts.
TEST_F(RestApiTest, ReadsHonourViewAcls) {
  RestApi api = Api(false, "s3cret", /*anonymous_view=*/false);
  const std::string path = "/ws/v1/cluster/apps/" + c_.running_;
  Json anonymous = Body(api.Handle(Req("GET", path)))["app"];
  EXPECT_EQ(anonymous["user"], "alice");  // that the app exists is no secret
  EXPECT_EQ(anonymous["diagnostics"], "N/A");
  EXPECT_EQ(anonymous["amContainerLogs"], "N/A");
  EXPECT_EQ(anonymous["amHostHttpAddress"], "N/A");
  const Json list = Body(api.Handle(Req("GET", "/ws/v1/cluster/apps")));
  for (const Json& app : list["apps"]["app"]) EXPECT_EQ(app["diagnostics"], "N/A");
  ExpectError(api.Handle(Req("GET", path + "/appattempts")), 403, "may not view the attempts");
  // The admin secret's holder sees everything.
  HttpRequest admin = Req("GET", path);
  admin.headers["x-weft-secret"] = "s3cret";
  Json full = Body(api.Handle(admin))["app"];
  EXPECT_NE(full["diagnostics"], "N/A");
  EXPECT_NE(full["amHostHttpAddress"], "N/A");
  admin.path = path + "/appattempts";
  EXPECT_EQ(api.Handle(admin).status, 200);
  // A wrong credential is refused, not read as anonymous.
  HttpRequest wrong = Req("GET", path);
  wrong.headers["x-weft-secret"] = "guess";
  ExpectError(api.Handle(wrong), 401, "wrong client secret");
}

// Aggregated container logs: the app's view ACL decides, even with anonymous_view on.
TEST_F(RestApiTest, AggregatedLogsFollowTheViewAclNotAnonymousView) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / "rest_api_test_aggregated";
  std::filesystem::remove_all(dir);
  const std::string app = c_.running_;  // alice's
  const std::string container =
      "container_" + app.substr(std::string("application_").size()) + "_01_000002";
  const std::filesystem::path cdir = dir / "alice" / "logs" / app / "127.0.0.1:4545" / container;
  std::filesystem::create_directories(cdir);
  std::ofstream(cdir / "stdout") << "hello from alice's container\n";
  RestApiOptions o;
  o.anonymous_view = true;
  o.log_aggregation_dir = dir.string();
  o.authenticate = NamedUser;
  RestApi api(o, &c_.snapshots_, &writer_);
  auto get = [&](const std::string& who, std::multimap<std::string, std::string> params = {}) {
    HttpRequest r = Req("GET", "/ws/v1/cluster/apps/" + app + "/logs", params);
    if (!who.empty()) r.headers["x-weft-munge-credential"] = who;
    return api.Handle(r);
  };
  ExpectError(get(""), 401, "need an authenticated reader");
  ExpectError(get("mallory"), 403, "may not read the logs");
  ExpectError(get("forged"), 401, "bad credential");
  HttpResponse list = get("alice");
  ASSERT_EQ(list.status, 200) << list.body;
  const Json info = Body(list)["containerLogsInfo"];
  ASSERT_EQ(info.size(), 1u);
  EXPECT_EQ(info[0]["containerId"], container);
  EXPECT_EQ(info[0]["nodeId"], "127.0.0.1:4545");
  EXPECT_EQ(info[0]["logAggregationType"], "AGGREGATED");
  HttpResponse file = get("alice", {{"containerid", container}, {"filename", "stdout"}});
  ASSERT_EQ(file.status, 200) << file.body;
  EXPECT_EQ(file.body, "hello from alice's container\n");
  EXPECT_EQ(get("mallory", {{"containerid", container}, {"filename", "stdout"}}).status, 403);
  EXPECT_EQ(get("alice", {{"containerid", container}, {"filename", "../../etc/passwd"}}).status,
            400);
  EXPECT_EQ(get("alice", {{"containerid", "container_1_9_01_000001"}, {"filename", "stdout"}})
                .status,
            400);
  // Nothing aggregated for another app.
  HttpRequest other = Req("GET", "/ws/v1/cluster/apps/" + c_.killed_ + "/logs");
  other.headers["x-weft-munge-credential"] = "alice";
  EXPECT_EQ(api.Handle(other).status / 100, 4);
  std::filesystem::remove_all(dir);
}


// What the federation router uses: the writes alone, without a snapshot to read.
TEST_F(RestApiTest, HandleWriteAnswersOnlyWritesAndNeedsNoSnapshot) {
  RestApiOptions o;
  o.writes_enabled = true;
  o.client_secret = "s3cret";
  RestApi writes(o, /*snapshots=*/nullptr, &writer_);
  EXPECT_FALSE(writes.HandleWrite(Req("GET", "/ws/v1/cluster/apps")).has_value());
  EXPECT_FALSE(writes.HandleWrite(Req("POST", "/ws/v1/cluster/metrics")).has_value());
  EXPECT_FALSE(writes.HandleWrite(Req("POST", "/ws/v1/clusterx/apps")).has_value());
  EXPECT_FALSE(writes.HandleWrite(Req("DELETE", "/ws/v1/cluster/apps")).has_value());
  std::optional<HttpResponse> unauthenticated =
      writes.HandleWrite(Req("POST", "/ws/v1/cluster/apps/new-application"));
  ASSERT_TRUE(unauthenticated.has_value());
  ExpectError(*unauthenticated, 401, "X-Weft-Secret");
  HttpRequest fresh = Req("POST", "/ws/v1/cluster/apps/new-application/");
  fresh.headers["x-weft-secret"] = "s3cret";
  std::optional<HttpResponse> r = writes.HandleWrite(fresh);
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->status, 200) << r->body;
  EXPECT_THAT(Body(*r)["application-id"].get<std::string>(), HasSubstr("application_"));
  o.writes_enabled = false;
  o.writes_disabled_message = "writes are off here";
  RestApi off(o, nullptr, &writer_);
  std::optional<HttpResponse> refused = off.HandleWrite(fresh);
  ASSERT_TRUE(refused.has_value());
  ExpectError(*refused, 403, "writes are off here");
}

// Browser sign-in: a MUNGE credential gets a single-use link; the session its ticket opens reads
// as that user (view ACLs apply), never writes, and never makes another link.
TEST_F(RestApiTest, ABrowsersSessionReadsAsItsUserButNeverWritesOrSignsIn) {
  WebSessions sessions;
  RestApiOptions o;
  o.writes_enabled = true;
  o.anonymous_view = false;
  o.sessions = &sessions;
  o.authenticate = NamedUser;
  RestApi api(o, &c_.snapshots_, &writer_);
  // Anyone may ask who they are; a browser without a session is no one.
  Json who = Body(api.Handle(Req("GET", "/ws/v1/cluster/session")))["session"];
  EXPECT_EQ(who["signedIn"], false);
  EXPECT_EQ(who["signInServed"], true);
  // A sign-in link needs a MUNGE credential (or the secret).
  ExpectError(api.Handle(Req("POST", "/ws/v1/cluster/session")), 401, "bad credential");
  HttpRequest ask = Req("POST", "/ws/v1/cluster/session");
  ask.headers["x-weft-munge-credential"] = "forged";
  ExpectError(api.Handle(ask), 401, "bad credential");
  ask.headers["x-weft-munge-credential"] = "alice";
  HttpResponse link = api.Handle(ask);
  ASSERT_EQ(link.status, 200) << link.body;
  const Json sign_in = Body(link)["signIn"];
  EXPECT_EQ(sign_in["user"], "alice");
  const std::string url = sign_in["url"];
  const std::string prefix = "http://rm.example:8088/cluster#sign-in=";
  ASSERT_EQ(url.rfind(prefix, 0), 0u) << url;
  // The page redeems the ticket: once.
  HttpRequest redeem = Req("POST", "/ws/v1/cluster/session");
  redeem.headers["x-weft-sign-in-ticket"] = url.substr(prefix.size());
  HttpResponse opened = api.Handle(redeem);
  ASSERT_EQ(opened.status, 200) << opened.body;
  const std::string session = Body(opened)["session"]["id"];
  EXPECT_EQ(Body(opened)["session"]["user"], "alice");
  ExpectError(api.Handle(redeem), 401, "not valid");

  auto as_browser = [&](HttpRequest r) {
    r.headers["x-weft-session"] = session;
    return api.Handle(r);
  };
  who = Body(as_browser(Req("GET", "/ws/v1/cluster/session")))["session"];
  EXPECT_EQ(who["signedIn"], true);
  EXPECT_EQ(who["user"], "alice");
  EXPECT_GT(who["expiresMs"].get<int64_t>(), 0);
  // Alice's app in full, with its attempts, as her browser.
  const std::string path = "/ws/v1/cluster/apps/" + c_.running_;
  EXPECT_EQ(Body(api.Handle(Req("GET", path)))["app"]["diagnostics"], "N/A");
  EXPECT_NE(Body(as_browser(Req("GET", path)))["app"]["amHostHttpAddress"], "N/A");
  EXPECT_EQ(as_browser(Req("GET", path + "/appattempts")).status, 200);
  // A session reads only: no write and no new link.
  ExpectError(as_browser(Req("PUT", path + "/state", {}, R"({"state":"KILLED"})")), 401,
              "bad credential");
  ExpectError(as_browser(Req("POST", "/ws/v1/cluster/apps/new-application")), 401,
              "bad credential");
  ExpectError(as_browser(Req("POST", "/ws/v1/cluster/session")), 401, "bad credential");
  // A MUNGE credential wins over the session: mallory's reads as mallory.
  HttpRequest both = Req("GET", path + "/appattempts");
  both.headers["x-weft-munge-credential"] = "mallory";
  EXPECT_EQ(as_browser(both).status, 403);
  // Sign-out ends the session; the browser is anonymous again.
  ASSERT_EQ(as_browser(Req("DELETE", "/ws/v1/cluster/session")).status, 200);
  EXPECT_EQ(Body(as_browser(Req("GET", "/ws/v1/cluster/session")))["session"]["signedIn"], false);
  EXPECT_EQ(Body(as_browser(Req("GET", path)))["app"]["diagnostics"], "N/A");
  ExpectError(api.Handle(Req("PATCH", "/ws/v1/cluster/session")), 405, "PATCH");
}

TEST_F(RestApiTest, WithoutASessionStoreNoBrowserSignsIn) {
  RestApi api = Api(false, "s3cret");
  HttpRequest ask = Req("POST", "/ws/v1/cluster/session");
  ask.headers["x-weft-secret"] = "s3cret";
  ExpectError(api.Handle(ask), 404, "does not sign in browsers");
  EXPECT_EQ(Body(api.Handle(Req("GET", "/ws/v1/cluster/session")))["session"]["signInServed"],
            false);
}

}  // namespace
}  // namespace weft::web
