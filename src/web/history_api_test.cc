#include "web/history_api.h"

#include <set>
#include <string>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "history/memory_history_store.h"
#include "scheduler/config.h"

namespace weft::web {
namespace {

constexpr char kApp1[] = "application_1700000000000_0001";  // alice, default, FINISHED
constexpr char kApp2[] = "application_1700000000000_0002";  // bob, prod, FAILED, view ACL carol
constexpr char kApp3[] = "application_1700000000000_0003";  // alice, prod, KILLED, MAPREDUCE
constexpr char kAttempt1[] = "appattempt_1700000000000_0001_000001";
constexpr char kAttempt2[] = "appattempt_1700000000000_0002_000001";
constexpr char kAm1[] = "container_1700000000000_0001_01_000001";
constexpr char kWorker1[] = "container_1700000000000_0001_01_000002";
constexpr char kAm2[] = "container_1700000000000_0002_01_000001";

v1::ApplicationHistoryRecord App(const std::string& id, const std::string& user,
                                 const std::string& queue, v1::ApplicationState state,
                                 int64_t start_ms, int64_t finish_ms) {
  v1::ApplicationHistoryRecord a;
  a.set_application_id(id);
  a.set_user(user);
  a.set_queue(queue);
  a.set_name("job-" + id.substr(id.size() - 4));
  a.set_final_state(state);
  a.set_submit_time_ms(start_ms - 100);
  a.set_start_time_ms(start_ms);
  a.set_finish_time_ms(finish_ms);
  return a;
}

class HistoryApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    v1::ApplicationHistoryRecord a1 = App(kApp1, "alice", "default", v1::APP_FINISHED, 1000, 5000);
    a1.set_application_type("YARN");
    a1.add_application_tags("etl");
    a1.add_application_tags("nightly");
    a1.set_final_status(v1::FINAL_SUCCEEDED);
    a1.set_diagnostics("all good");
    a1.set_current_attempt_id(kAttempt1);
    a1.set_host("node1.example");
    a1.set_rpc_port(4321);
    a1.set_tracking_url("http://node1.example:8080/ui");
    a1.set_priority(3);
    a1.set_unmanaged(false);
    // Its aggregates are the store's, derived from its containers below.
    ASSERT_TRUE(store_.PutApplication(a1).ok());

    v1::ApplicationHistoryRecord a2 = App(kApp2, "bob", "prod", v1::APP_FAILED, 2000, 6000);
    a2.set_final_status(v1::FINAL_FAILED);
    a2.set_diagnostics("bob's secret stack trace");
    a2.set_host("node2.example");
    a2.set_view_acl("carol");
    a2.set_current_attempt_id(kAttempt2);
    ASSERT_TRUE(store_.PutApplication(a2).ok());

    v1::ApplicationHistoryRecord a3 = App(kApp3, "alice", "prod", v1::APP_KILLED, 3000, 7000);
    a3.set_application_type("MAPREDUCE");
    a3.set_final_status(v1::FINAL_KILLED);
    ASSERT_TRUE(store_.PutApplication(a3).ok());

    v1::AttemptHistoryRecord t1;
    t1.set_attempt_id(kAttempt1);
    t1.set_application_id(kApp1);
    t1.set_host("node1.example");
    t1.set_rpc_port(4321);
    t1.set_tracking_url("http://node1.example:8080/ui");
    t1.set_am_container_id(kAm1);
    t1.set_start_time_ms(1100);
    t1.set_finish_time_ms(4900);
    t1.set_state(v1::ATTEMPT_FINISHED);
    t1.set_diagnostics("attempt ok");
    ASSERT_TRUE(store_.PutAttempt(t1).ok());
    v1::AttemptHistoryRecord t2;
    t2.set_attempt_id(kAttempt2);
    t2.set_application_id(kApp2);
    t2.set_state(v1::ATTEMPT_FAILED);
    ASSERT_TRUE(store_.PutAttempt(t2).ok());

    // app 1: AM 2048 MB, 1 vcore for 3 s; worker 1024 MB, 2 vcores, 2 gpus for 1 s -> 7168
    // MB-seconds, 5 vcore-seconds, 2 gpu-seconds; measured 4000 MB-s, 7000 ms CPU, 12345 bytes.
    v1::ContainerHistoryRecord c1;
    c1.set_container_id(kAm1);
    c1.set_application_id(kApp1);
    c1.set_attempt_id(kAttempt1);
    c1.set_node_id("node1.example:45454");
    c1.set_node_http_address("node1.example:8042");
    c1.set_user("alice");
    (*c1.mutable_allocated())["memory-mb"] = 2048;
    (*c1.mutable_allocated())["vcores"] = 1;
    c1.set_priority(0);
    c1.set_start_time_ms(1200);
    c1.set_finish_time_ms(4200);
    c1.set_exit_status(0);
    c1.set_state(v1::CONTAINER_COMPLETE);
    c1.set_memory_mb_seconds(3000);
    c1.set_vcore_seconds(3);
    c1.set_max_rss_bytes(1 << 20);
    c1.set_cpu_time_ms(6000);
    c1.set_network_tx_bytes(12000);
    ASSERT_TRUE(store_.PutContainer(c1).ok());
    v1::ContainerHistoryRecord c2 = c1;
    c2.set_container_id(kWorker1);
    (*c2.mutable_allocated())["memory-mb"] = 1024;
    (*c2.mutable_allocated())["vcores"] = 2;
    (*c2.mutable_allocated())["gpu"] = 2;
    c2.set_start_time_ms(2000);
    c2.set_finish_time_ms(3000);
    c2.set_exit_status(-105);
    c2.set_diagnostics("Container killed by the ApplicationMaster.");
    c2.set_memory_mb_seconds(1000);
    c2.set_max_rss_bytes(2 << 20);
    c2.set_cpu_time_ms(1000);
    c2.set_network_tx_bytes(345);
    ASSERT_TRUE(store_.PutContainer(c2).ok());
    // app 2: 1000 MB, 1 vcore for 1 s; 500 ms CPU, 10 bytes.
    v1::ContainerHistoryRecord c3;
    c3.set_container_id(kAm2);
    c3.set_application_id(kApp2);
    c3.set_attempt_id(kAttempt2);
    (*c3.mutable_allocated())["memory-mb"] = 1000;
    (*c3.mutable_allocated())["vcores"] = 1;
    c3.set_start_time_ms(3000);
    c3.set_finish_time_ms(4000);
    c3.set_cpu_time_ms(500);
    c3.set_network_tx_bytes(10);
    c3.set_state(v1::CONTAINER_COMPLETE);
    ASSERT_TRUE(store_.PutContainer(c3).ok());
  }

  // The "credential" names the user (the real one is MUNGE's, tested in rm/); "root" is a
  // cluster admin.
  HistoryApi Api(bool anonymous_view = false, const WebSessions* sessions = nullptr) {
    HistoryApiOptions o;
    o.anonymous_view = anonymous_view;
    o.sessions = sessions;
    o.started_ms = 42;
    o.authenticate = [](const rm::Presented& p) -> absl::StatusOr<rm::Caller> {
      static const std::set<std::string> kKnown = {"alice", "bob", "carol", "dave", "root", "erin"};
      if (!kKnown.contains(p.munge_credential))
        return absl::UnauthenticatedError("bad MUNGE credential");
      rm::Caller c;
      c.user = p.munge_credential;
      c.real_user = c.user;
      c.admin = c.user == "root";
      return c;
    };
    // erin administers queue prod.
    o.queue_config = [] {
      scheduler::SchedulerConfig config;
      config.root.name = "root";
      scheduler::QueueConfig prod;
      prod.name = "prod";
      prod.acl_administer_queue = *AccessControlList::Parse("erin");
      config.root.children.push_back(prod);
      scheduler::QueueConfig def;
      def.name = "default";
      config.root.children.push_back(def);
      return config;
    };
    return HistoryApi(o, &store_);
  }

  static HttpRequest Req(const std::string& path, const std::string& who = "",
                         std::multimap<std::string, std::string> params = {}) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    r.params = std::move(params);
    if (!who.empty()) r.headers["x-weft-munge-credential"] = who;
    return r;
  }

  static Json Body(const HttpResponse& r) {
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.content_type, "application/json");
    return Json::parse(r.body);
  }

  static void ExpectError(const HttpResponse& r, int status, const std::string& fragment) {
    EXPECT_EQ(r.status, status) << r.body;
    Json j = Json::parse(r.body);
    ASSERT_TRUE(j.contains("RemoteException")) << r.body;
    EXPECT_TRUE(absl::StrContains(j["RemoteException"]["message"].get<std::string>(), fragment))
        << r.body;
  }

  static std::vector<std::string> Ids(const Json& list) {
    std::vector<std::string> ids;
    for (const Json& a : list["app"]) ids.push_back(a["appId"]);
    return ids;
  }

  history::MemoryHistoryStore store_;
};

constexpr char kBase[] = "/ws/v1/applicationhistory";

TEST_F(HistoryApiTest, AboutHasYarnsNames) {
  HistoryApi api = Api();
  for (const char* path : {"/ws/v1/applicationhistory", "/ws/v1/applicationhistory/about/"}) {
    Json about = Body(api.Handle(Req(path)));
    EXPECT_EQ(about["About"], "Generic History Service API");
    EXPECT_TRUE(about.contains("timeline-service-version"));
    EXPECT_TRUE(about.contains("timeline-service-build-version"));
    EXPECT_TRUE(about.contains("hadoop-version"));
    EXPECT_EQ(about["startedOn"], 42);
    EXPECT_EQ(about["store"], "memory");
  }
}

TEST_F(HistoryApiTest, AppFieldsAreYarnsAppInfo) {
  HistoryApi api = Api();
  Json app = Body(api.Handle(Req(std::string(kBase) + "/apps/" + kApp1, "alice")));
  EXPECT_EQ(app["appId"], kApp1);  // not wrapped: YARN's AHS answers the bare object
  EXPECT_EQ(app["currentAppAttemptId"], kAttempt1);
  EXPECT_EQ(app["user"], "alice");
  EXPECT_EQ(app["name"], "job-0001");
  EXPECT_EQ(app["queue"], "default");
  EXPECT_EQ(app["type"], "YARN");
  EXPECT_EQ(app["host"], "node1.example");
  EXPECT_EQ(app["rpcPort"], 4321);
  EXPECT_EQ(app["appState"], "FINISHED");
  EXPECT_EQ(app["runningContainers"], 0);
  EXPECT_EQ(app["progress"], 100.0);
  EXPECT_EQ(app["diagnosticsInfo"], "all good");
  EXPECT_EQ(app["originalTrackingUrl"], "http://node1.example:8080/ui");
  EXPECT_EQ(app["trackingUrl"], "http://node1.example:8080/ui");
  EXPECT_EQ(app["finalAppStatus"], "SUCCEEDED");
  EXPECT_EQ(app["submittedTime"], 900);
  EXPECT_EQ(app["startedTime"], 1000);
  EXPECT_EQ(app["launchTime"], 1000);
  EXPECT_EQ(app["finishedTime"], 5000);
  EXPECT_EQ(app["elapsedTime"], 4000);
  EXPECT_EQ(app["applicationTags"], "etl,nightly");
  EXPECT_EQ(app["priority"], 3);
  EXPECT_EQ(app["allocatedCpuVcores"], 0);
  EXPECT_EQ(app["allocatedMemoryMB"], 0);
  EXPECT_EQ(app["reservedCpuVcores"], 0);
  EXPECT_EQ(app["reservedMemoryMB"], 0);
  EXPECT_EQ(app["unmanagedApplication"], false);
  EXPECT_EQ(app["aggregateResourceAllocation"], "7168 MB-seconds, 5 vcore-seconds, 2 gpu-seconds");
  // Weft's extras.
  EXPECT_EQ(app["memorySeconds"], 7168);
  EXPECT_EQ(app["vcoreSeconds"], 5);
  EXPECT_EQ(app["resourceSeconds"]["gpu"], 2);
  EXPECT_EQ(app["memoryMbSecondsUsed"], 4000);
  EXPECT_EQ(app["cpuTimeMs"], 7000);
  EXPECT_EQ(app["networkTxBytes"], 12345);
  EXPECT_EQ(app["peakMemoryBytes"], 2 << 20);
  // An app without tags has no applicationTags (YARN leaves it out); no AM host is "N/A".
  Json a3 = Body(api.Handle(Req(std::string(kBase) + "/apps/" + kApp3, "alice")));
  EXPECT_FALSE(a3.contains("applicationTags"));
  EXPECT_EQ(a3["host"], "N/A");
  EXPECT_EQ(a3["type"], "MAPREDUCE");
  EXPECT_EQ(a3["appState"], "KILLED");
}

TEST_F(HistoryApiTest, AttemptAndContainerFieldsAreYarns) {
  HistoryApi api = Api();
  const std::string app = std::string(kBase) + "/apps/" + kApp1;
  Json attempts = Body(api.Handle(Req(app + "/appattempts", "alice")));
  ASSERT_EQ(attempts["appAttempt"].size(), 1u);
  Json a = attempts["appAttempt"][0];
  EXPECT_EQ(a["appAttemptId"], kAttempt1);
  EXPECT_EQ(a["host"], "node1.example");
  EXPECT_EQ(a["rpcPort"], 4321);
  EXPECT_EQ(a["trackingUrl"], "http://node1.example:8080/ui");
  EXPECT_EQ(a["originalTrackingUrl"], "http://node1.example:8080/ui");
  EXPECT_EQ(a["diagnosticsInfo"], "attempt ok");
  EXPECT_EQ(a["appAttemptState"], "FINISHED");
  EXPECT_EQ(a["amContainerId"], kAm1);
  EXPECT_EQ(a["startedTime"], 1100);
  EXPECT_EQ(a["finishedTime"], 4900);
  EXPECT_EQ(Body(api.Handle(Req(app + "/appattempts/" + kAttempt1, "alice"))), a);

  Json containers =
      Body(api.Handle(Req(app + "/appattempts/" + kAttempt1 + "/containers", "alice")));
  ASSERT_EQ(containers["container"].size(), 2u);
  Json c = containers["container"][0];
  EXPECT_EQ(c["containerId"], kAm1);
  EXPECT_EQ(c["allocatedMB"], 2048);
  EXPECT_EQ(c["allocatedVCores"], 1);
  EXPECT_EQ(c["assignedNodeId"], "node1.example:45454");
  EXPECT_EQ(c["priority"], 0);
  EXPECT_EQ(c["startedTime"], 1200);
  EXPECT_EQ(c["finishedTime"], 4200);
  EXPECT_EQ(c["elapsedTime"], 3000);
  EXPECT_EQ(c["diagnosticsInfo"], "");
  EXPECT_EQ(c["logUrl"],
            std::string("http://node1.example:8042/node/containerlogs/") + kAm1 + "/alice");
  EXPECT_EQ(c["containerExitStatus"], 0);
  EXPECT_EQ(c["containerState"], "COMPLETE");
  EXPECT_EQ(c["nodeHttpAddress"], "http://node1.example:8042");
  EXPECT_EQ(c["memoryMbSecondsUsed"], 3000);
  EXPECT_EQ(c["maxRssBytes"], 1 << 20);
  EXPECT_EQ(c["cpuTimeMs"], 6000);
  EXPECT_EQ(c["networkTxBytes"], 12000);
  EXPECT_EQ(containers["container"][1]["containerExitStatus"], -105);
  // One container, under its attempt and on its own.
  EXPECT_EQ(
      Body(api.Handle(Req(app + "/appattempts/" + kAttempt1 + "/containers/" + kAm1, "alice"))), c);
  EXPECT_EQ(Body(api.Handle(Req(std::string(kBase) + "/containers/" + kAm1, "alice"))), c);
}

TEST_F(HistoryApiTest, AppListFilters) {
  HistoryApi api = Api(/*anonymous_view=*/true);
  const std::string apps = std::string(kBase) + "/apps";
  // Newest finish first.
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps)))), (std::vector<std::string>{kApp3, kApp2, kApp1}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"states", "finished,KILLED"}})))),
            (std::vector<std::string>{kApp3, kApp1}));
  EXPECT_TRUE(Body(api.Handle(Req(apps, "", {{"states", "RUNNING"}})))["app"].empty());
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"finalStatus", "failed"}})))),
            (std::vector<std::string>{kApp2}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"user", "alice"}})))),
            (std::vector<std::string>{kApp3, kApp1}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"queue", "prod"}})))),
            (std::vector<std::string>{kApp3, kApp2}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"limit", "2"}})))),
            (std::vector<std::string>{kApp3, kApp2}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"limit", "1"}, {"user", "alice"}})))),
            (std::vector<std::string>{kApp3}));
  // Time windows are inclusive at both ends.
  EXPECT_EQ(Ids(Body(api.Handle(
                Req(apps, "", {{"startedTimeBegin", "2000"}, {"startedTimeEnd", "3000"}})))),
            (std::vector<std::string>{kApp3, kApp2}));
  EXPECT_EQ(Ids(Body(api.Handle(
                Req(apps, "", {{"finishedTimeBegin", "5000"}, {"finishedTimeEnd", "6000"}})))),
            (std::vector<std::string>{kApp2, kApp1}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"applicationTypes", "mapreduce"}})))),
            (std::vector<std::string>{kApp3}));
  EXPECT_EQ(Ids(Body(api.Handle(Req(apps, "", {{"applicationTypes", "yarn"}, {"limit", "1"}})))),
            (std::vector<std::string>{kApp2}));  // no type is YARN's
}

TEST_F(HistoryApiTest, BadParametersAre400) {
  HistoryApi api = Api(true);
  const std::string apps = std::string(kBase) + "/apps";
  ExpectError(api.Handle(Req(apps, "", {{"states", "DONE"}})), 400, "Invalid application-state");
  ExpectError(api.Handle(Req(apps, "", {{"finalStatus", "GREAT"}})), 400, "Invalid final status");
  ExpectError(api.Handle(Req(apps, "", {{"limit", "0"}})), 400, "limit");
  ExpectError(api.Handle(Req(apps, "", {{"limit", "ten"}})), 400, "limit");
  ExpectError(api.Handle(Req(apps, "", {{"startedTimeBegin", "-1"}})), 400, "startedTimeBegin");
  ExpectError(api.Handle(Req(apps, "", {{"finishedTimeBegin", "9"}, {"finishedTimeEnd", "8"}})),
              400, "finishedTimeEnd");
  ExpectError(api.Handle(Req(std::string(kBase) + "/apps/app_1")), 400, "Invalid ApplicationId");
  ExpectError(api.Handle(Req(std::string(kBase) + "/apps/" + kApp1 + "/appattempts/x")), 400,
              "Invalid AppAttemptId");
  ExpectError(api.Handle(Req(std::string(kBase) + "/containers/c;1")), 400, "Invalid ContainerId");
  ExpectError(api.Handle(Req(std::string(kBase) + "/accounting", "alice", {{"by", "host"}})), 400,
              "one of user, queue");
  ExpectError(api.Handle(Req(std::string(kBase) + "/accounting", "alice", {{"since", "x"}})), 400,
              "since");
  HttpRequest post = Req(apps);
  post.method = "POST";
  EXPECT_EQ(api.Handle(post).status, 405);
}

TEST_F(HistoryApiTest, UnknownThingsAre404) {
  HistoryApi api = Api(true);
  const std::string app = std::string(kBase) + "/apps/" + kApp1;
  ExpectError(api.Handle(Req(std::string(kBase) + "/apps/application_1_9")), 404,
              "app with id: application_1_9 not found");
  ExpectError(api.Handle(Req(app + "/appattempts/appattempt_1_9_000001")), 404, "not found");
  // An attempt of another app is not this app's.
  ExpectError(api.Handle(Req(app + "/appattempts/" + kAttempt2)), 404, "not found");
  ExpectError(api.Handle(Req(app + "/appattempts/" + kAttempt1 + "/containers/" + kAm2)), 404,
              "not found");
  ExpectError(api.Handle(Req(std::string(kBase) + "/containers/container_1_9_01_000001")), 404,
              "not found");
  ExpectError(api.Handle(Req(std::string(kBase) + "/nodes")), 404, "no such resource");
  ExpectError(api.Handle(Req(app + "/state")), 404, "no such resource");
  ExpectError(api.Handle(Req("/ws/v1/cluster/apps")), 404, "no such resource");
  EXPECT_TRUE(HistoryApi::Handles(Req(std::string(kBase) + "/apps")));
  EXPECT_FALSE(HistoryApi::Handles(Req("/ws/v1/applicationhistoryX")));
  EXPECT_FALSE(HistoryApi::Handles(Req("/ws/v1/cluster")));
}

TEST_F(HistoryApiTest, ViewAcls) {
  HistoryApi api = Api();
  const std::string app = std::string(kBase) + "/apps/" + kApp2;  // bob's, view ACL carol, prod
  const std::string attempts = app + "/appattempts";
  const std::string container = std::string(kBase) + "/containers/" + kAm2;
  // Owner, cluster admin, view-ACL user, queue admin: everything.
  for (const char* who : {"bob", "root", "carol", "erin"}) {
    SCOPED_TRACE(who);
    Json full = Body(api.Handle(Req(app, who)));
    EXPECT_EQ(full["diagnosticsInfo"], "bob's secret stack trace");
    EXPECT_EQ(full["host"], "node2.example");
    EXPECT_EQ(api.Handle(Req(attempts, who)).status, 200);
    EXPECT_EQ(api.Handle(Req(attempts + "/" + kAttempt2 + "/containers", who)).status, 200);
    EXPECT_EQ(api.Handle(Req(container, who)).status, 200);
  }
  // A stranger and an anonymous reader: the app redacted, its attempts and containers 403.
  for (const char* who : {"dave", ""}) {
    SCOPED_TRACE(who);
    Json redacted = Body(api.Handle(Req(app, who)));
    EXPECT_EQ(redacted["user"], "bob");  // that the app exists is no secret
    EXPECT_EQ(redacted["diagnosticsInfo"], "N/A");
    EXPECT_EQ(redacted["host"], "N/A");
    EXPECT_EQ(redacted["rpcPort"], -1);
    EXPECT_EQ(redacted["trackingUrl"], "N/A");
    EXPECT_EQ(redacted["aggregateResourceAllocation"], "N/A");
    EXPECT_EQ(redacted["cpuTimeMs"], -1);
    EXPECT_EQ(redacted["networkTxBytes"], -1);
    ExpectError(api.Handle(Req(attempts, who)), 403, "may not view the attempts");
    ExpectError(api.Handle(Req(attempts + "/" + kAttempt2, who)), 403, "may not view");
    ExpectError(api.Handle(Req(attempts + "/" + kAttempt2 + "/containers", who)), 403,
                "may not view");
    ExpectError(api.Handle(Req(container, who)), 403, "may not view the containers");
  }
  // In the list, each app as its reader may see it.
  Json list = Body(api.Handle(Req(std::string(kBase) + "/apps", "alice")));
  for (const Json& a : list["app"])
    EXPECT_EQ(a["diagnosticsInfo"] == "N/A", a["user"] != "alice") << a.dump();
  // A bad credential is refused, not read as anonymous.
  ExpectError(api.Handle(Req(app, "mallory")), 401, "bad MUNGE credential");
  // anonymous_view shows everything to everyone.
  HistoryApi open = Api(/*anonymous_view=*/true);
  EXPECT_EQ(Body(open.Handle(Req(app)))["diagnosticsInfo"], "bob's secret stack trace");
  EXPECT_EQ(open.Handle(Req(attempts)).status, 200);
}

// A browser signed in to the RM's UI (web/web_sessions.h) reads history as its user.
TEST_F(HistoryApiTest, ABrowsersSessionReadsAsItsUser) {
  WebSessions sessions;
  rm::Caller bob;
  bob.user = "bob";
  bob.real_user = "bob";
  const std::string id = *sessions.Redeem(*sessions.IssueTicket(bob));
  HistoryApi api = Api(/*anonymous_view=*/false, &sessions);
  const std::string app = std::string(kBase) + "/apps/" + kApp2;  // bob's
  HttpRequest r = Req(app);
  EXPECT_EQ(Body(api.Handle(r))["diagnosticsInfo"], "N/A");
  r.headers["x-weft-session"] = id;
  EXPECT_EQ(Body(api.Handle(r))["diagnosticsInfo"], "bob's secret stack trace");
  r.path = app + "/appattempts";
  EXPECT_EQ(api.Handle(r).status, 200);
  // An ended (or unknown) session is anonymous, not an error.
  sessions.End(id);
  ExpectError(api.Handle(r), 403, "may not view the attempts");
}

TEST_F(HistoryApiTest, AccountingByUserAndQueue) {
  HistoryApi api = Api();
  const std::string path = std::string(kBase) + "/accounting";
  // Admin, by user: every user's line.
  Json all = Body(api.Handle(Req(path, "root", {{"by", "user"}})))["accounting"];
  EXPECT_EQ(all["by"], "user");
  EXPECT_EQ(all["complete"], true);
  ASSERT_EQ(all["line"].size(), 2u);
  Json alice = all["line"][0];
  EXPECT_EQ(alice["user"], "alice");
  EXPECT_EQ(alice["applications"], 2);
  EXPECT_EQ(alice["memorySeconds"], 7168);
  EXPECT_EQ(alice["vcoreSeconds"], 5);
  EXPECT_EQ(alice["resourceSeconds"]["gpu"], 2);
  EXPECT_EQ(alice["memoryMbSecondsUsed"], 4000);
  EXPECT_EQ(alice["cpuTimeMs"], 7000);
  EXPECT_EQ(alice["networkTxBytes"], 12345);
  EXPECT_EQ(all["line"][1]["user"], "bob");
  EXPECT_EQ(all["line"][1]["applications"], 1);
  // A non-admin by user: only their own line.
  Json own = Body(api.Handle(Req(path, "bob", {{"by", "user"}})))["accounting"];
  EXPECT_EQ(own["complete"], false);
  ASSERT_EQ(own["line"].size(), 1u);
  EXPECT_EQ(own["line"][0]["user"], "bob");
  EXPECT_EQ(own["line"][0]["cpuTimeMs"], 500);
  // By queue, over a window: [since, until) of finish times.
  Json queues = Body(api.Handle(
      Req(path, "bob", {{"by", "queue"}, {"since", "5500"}, {"until", "7000"}})))["accounting"];
  ASSERT_EQ(queues["line"].size(), 1u);
  EXPECT_EQ(queues["line"][0]["queue"], "prod");
  EXPECT_EQ(queues["line"][0]["applications"], 1);  // app 3 finished at 7000: outside
  EXPECT_EQ(queues["since"], 5500);
  EXPECT_EQ(queues["until"], 7000);
  // For authenticated readers only.
  ExpectError(api.Handle(Req(path)), 403, "authenticated readers");
}

}  // namespace
}  // namespace weft::web
