// A real RmServer and RmWebServer on 127.0.0.1:0, spoken to over HTTP: the UI, the REST API
// (reads, authenticated writes, errors httplib itself produces) and /metrics.
#include "web/rm_web_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/munge.h"
#include "security/test_munged.h"
#include "web/nm_web_server.h"
#include "web/yarn_json.h"

namespace weft::web {
namespace {

using ::testing::HasSubstr;

class NoLauncher : public rm::AmLauncher {
 public:
  void Launch(const std::string&, const v1::StartContainerRequest&,
              std::function<void(absl::Status)> done) override {
    done(absl::OkStatus());
  }
};

class RmWebServerTest : public ::testing::Test {
 protected:
  // `munge_socket`: authenticate users with this munged (security/test_munged.h); "" = believe
  // declared users (the RM's in-process test mode).
  void Start(bool writes, const std::string& secret, const std::string& munge_socket = "") {
    rm::RmServerOptions o;
    o.auth.mode =
        munge_socket.empty() ? rm::UserAuthentication::kDeclared : rm::UserAuthentication::kMunge;
    o.auth.munge_socket = munge_socket;
    o.client_secret = secret;
    o.launcher = std::make_unique<NoLauncher>();
    auto rm = rm::RmServer::Start(std::move(o));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = std::move(*rm);
    rm_->RunOnLoop([](rm::ResourceManager& rm) {
      v1::RegisterNodeManagerRequest req;
      req.set_node_id("127.0.0.1:1");
      (*req.mutable_capability()->mutable_values())["memory-mb"] = 4096;
      (*req.mutable_capability()->mutable_values())["vcores"] = 4;
      ASSERT_TRUE(rm.RegisterNode(req).ok());
    });
    RmWebOptions w;
    w.port = 0;
    w.writes_enabled = writes;
    w.refresh_ms = 100;
    w.max_body_bytes = 64 * 1024;
    auto web = RmWebServer::Start(rm_.get(), w);
    ASSERT_TRUE(web.ok()) << web.status();
    web_ = std::move(*web);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", web_->port());
    client_->set_read_timeout(10, 0);
  }

  void TearDown() override {
    if (web_) web_->Stop();
    if (rm_) rm_->Shutdown();
  }

  Json GetJson(const std::string& path, int want_status = 200) {
    auto r = client_->Get(path.c_str());
    EXPECT_TRUE(r) << path;
    if (!r) return Json();
    EXPECT_EQ(r->status, want_status) << path << ": " << r->body;
    EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
    Json j = Json::parse(r->body, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << r->body;
    return j;
  }

  std::unique_ptr<rm::RmServer> rm_;
  std::unique_ptr<RmWebServer> web_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(RmWebServerTest, ServesTheUiTheRestApiAndMetrics) {
  Start(false, "");
  auto root = client_->Get("/");
  ASSERT_TRUE(root);
  EXPECT_EQ(root->status, 302);
  EXPECT_EQ(root->get_header_value("Location"), "/cluster");
  for (const char* page : {"/cluster", "/cluster/apps", "/cluster/nodes", "/cluster/scheduler",
                           "/cluster/app/application_1_0001"}) {
    auto r = client_->Get(page);
    ASSERT_TRUE(r) << page;
    EXPECT_EQ(r->status, 200) << page;
    EXPECT_THAT(r->get_header_value("Content-Type"), HasSubstr("text/html"));
    EXPECT_THAT(r->body, HasSubstr("weft.js"));
  }
  auto js = client_->Get("/static/weft.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_THAT(js->get_header_value("Content-Type"), HasSubstr("javascript"));
  EXPECT_EQ(client_->Get("/static/../CMakeLists.txt")->status, 404);
  EXPECT_EQ(client_->Get("/static/nope.js")->status, 404);

  Json info = GetJson("/ws/v1/cluster/info");
  EXPECT_EQ(info["clusterInfo"]["state"], "STARTED");
  Json m = GetJson("/ws/v1/cluster/metrics");
  EXPECT_EQ(m["clusterMetrics"]["activeNodes"], 1);
  EXPECT_EQ(m["clusterMetrics"]["totalMB"], 4096);
  EXPECT_EQ(GetJson("/ws/v1/cluster/nodes")["nodes"]["node"].size(), 1u);
  EXPECT_EQ(GetJson("/ws/v1/cluster/nodes/127.0.0.1:1")["node"]["id"], "127.0.0.1:1");
  Json missing = GetJson("/ws/v1/cluster/apps/application_1_1", 404);
  EXPECT_TRUE(missing.contains("RemoteException"));

  // Writes are off by default.
  auto post = client_->Post("/ws/v1/cluster/apps/new-application", "", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 403);
  EXPECT_THAT(post->body, HasSubstr("disabled"));

  auto metrics = client_->Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_THAT(metrics->get_header_value("Content-Type"), HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(metrics->body, HasSubstr("weft_rm_cluster_resource{resource=\"memory-mb\","
                                       "kind=\"capacity\"} 4096"));
  EXPECT_THAT(metrics->body, HasSubstr("weft_rm_scheduler_pass_duration_seconds_bucket"));
}

TEST_F(RmWebServerTest, HttpLevelErrorsAreJson) {
  Start(true, "s3cret");
  // A body above the limit: 413 before the handler, with a JSON error.
  httplib::Headers auth = {{"X-Weft-Secret", "s3cret"}};
  auto big =
      client_->Post("/ws/v1/cluster/apps", auth, std::string(100 * 1024, 'x'), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  Json j = Json::parse(big->body, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << big->body;
  EXPECT_TRUE(j.contains("RemoteException"));
  auto bad_json =
      client_->Post("/ws/v1/cluster/apps", auth, "{\"application-id\":", "application/json");
  ASSERT_TRUE(bad_json);
  EXPECT_EQ(bad_json->status, 400);
  EXPECT_THAT(bad_json->body, HasSubstr("not valid JSON"));
  // A POST without any body (no Content-Length), as `curl -X POST` sends it: not malformed.
  httplib::Client raw("127.0.0.1", web_->port());
  httplib::Request bare;
  bare.method = "POST";
  bare.path = "/ws/v1/cluster/apps/new-application";
  bare.headers = auth;
  auto fresh = raw.send(bare);
  ASSERT_TRUE(fresh);
  EXPECT_EQ(fresh->status, 200) << fresh->body;
  auto unknown = client_->Get("/nowhere");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_TRUE(Json::parse(unknown->body).contains("RemoteException"));
}

TEST_F(RmWebServerTest, AuthenticatedWritesReachTheRm) {
  auto munged = security::TestMunged::Start();
  ASSERT_TRUE(munged.ok()) << munged.status();
  Start(true, "s3cret", (*munged)->socket());
  auto unauth = client_->Post("/ws/v1/cluster/apps/new-application", "", "application/json");
  ASSERT_TRUE(unauth);
  EXPECT_EQ(unauth->status, 401);
  EXPECT_EQ(unauth->get_header_value("WWW-Authenticate"), "Bearer realm=\"weft\"");

  httplib::Headers auth = {{"X-Weft-Secret", "s3cret"}, {"X-Weft-User", "dora"}};
  auto fresh = client_->Post("/ws/v1/cluster/apps/new-application", auth, "", "application/json");
  ASSERT_TRUE(fresh);
  ASSERT_EQ(fresh->status, 200) << fresh->body;
  const std::string id = Json::parse(fresh->body)["application-id"];
  const std::string body = Dump({{"application-id", id},
                                 {"application-name", "via-http"},
                                 {"resource", {{"memory", 256}, {"vCores", 1}}},
                                 {"am-container-spec", {{"commands", {{"command", "sleep 30"}}}}}});
  auto submit = client_->Post("/ws/v1/cluster/apps", auth, body, "application/json");
  ASSERT_TRUE(submit);
  ASSERT_EQ(submit->status, 202) << submit->body;
  EXPECT_THAT(submit->get_header_value("Location"), HasSubstr("/ws/v1/cluster/apps/" + id));
  // Read-your-write: the snapshot was rebuilt after the submission.
  Json app = GetJson("/ws/v1/cluster/apps/" + id)["app"];
  EXPECT_EQ(app["user"], "dora");
  EXPECT_EQ(app["name"], "via-http");
  auto kill = client_->Put(("/ws/v1/cluster/apps/" + id + "/state").c_str(), auth,
                           R"({"state":"KILLED"})", "application/json");
  ASSERT_TRUE(kill);
  ASSERT_EQ(kill->status, 200) << kill->body;
  EXPECT_EQ(Json::parse(kill->body)["state"], "KILLED");
  EXPECT_EQ(GetJson("/ws/v1/cluster/apps/" + id + "/state")["state"], "KILLED");
  rm_->RunOnLoop(
      [&](rm::ResourceManager& rm) { EXPECT_EQ(rm.GetApplication(id)->state(), v1::APP_KILLED); });
  // The periodic snapshot follows the RM too (refresh_ms 100).
  const int64_t taken = GetJson("/ws/v1/cluster/metrics")["clusterMetrics"]["appsKilled"];
  EXPECT_EQ(taken, 1);
  // A user writes with a MUNGE credential, as the CLI does; a replayed one is refused.
  auto cred = security::MungeEncode((*munged)->socket(), rm::kMungePayload);
  ASSERT_TRUE(cred.ok()) << cred.status();
  httplib::Headers user = {{"X-Weft-Munge-Credential", *cred}};
  auto mine = client_->Post("/ws/v1/cluster/apps/new-application", user, "", "application/json");
  ASSERT_TRUE(mine);
  EXPECT_EQ(mine->status, 200) << mine->body;
  auto replayed =
      client_->Post("/ws/v1/cluster/apps/new-application", user, "", "application/json");
  ASSERT_TRUE(replayed);
  EXPECT_EQ(replayed->status, 401) << replayed->body;
  EXPECT_THAT(replayed->body, HasSubstr("Replayed"));
}

TEST_F(RmWebServerTest, ReadsDoNotWaitForABusyRmLoop) {
  Start(true, "s3cret");
  // Block the RM loop: reads still answer at once, from the last snapshot. The notifications
  // are shared with the loop's task: it may still be leaving WaitForNotification when this
  // test returns (a notification on the stack would be gone under it, and the loop would hang).
  auto release = std::make_shared<absl::Notification>();
  auto blocked = std::make_shared<absl::Notification>();
  rm_->Post([release, blocked](rm::ResourceManager&) {
    blocked->Notify();
    release->WaitForNotification();
  });
  blocked->WaitForNotification();
  // Released however the test ends (a failed ASSERT returns early): TearDown needs the loop.
  absl::Cleanup unblock = [release] { release->Notify(); };
  const auto start = std::chrono::steady_clock::now();
  for (const char* path : {"/ws/v1/cluster/metrics", "/ws/v1/cluster/apps", "/ws/v1/cluster/nodes",
                           "/ws/v1/cluster/scheduler", "/metrics", "/cluster"}) {
    auto r = client_->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// Issue 26's hostile clients: 64 slowloris connections (from 127.0.0.2, another client
// address: the server holds 32 of them, its per-address limit, and refuses the rest) do not
// delay a GET from 127.0.0.1, before or after they send another header byte.
TEST_F(RmWebServerTest, SlowClientsDoNotDelayReads) {
  Start(false, "");
  std::vector<int> slow;
  for (int i = 0; i < 64; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_GE(fd, 0);
    slow.push_back(fd);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    a.sin_port = htons(static_cast<uint16_t>(web_->port()));
    ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    const std::string partial = "GET /ws/v1/cluster/info HTTP/1.1\r\nHost: x\r\nX-Slow: a";
    send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
  }
  for (int round = 0; round < 2; ++round) {
    httplib::Client fresh("127.0.0.1", web_->port());
    fresh.set_connection_timeout(1, 0);
    fresh.set_read_timeout(1, 0);
    const auto start = std::chrono::steady_clock::now();
    auto r = fresh.Get("/ws/v1/cluster/info");
    ASSERT_TRUE(r) << "round " << round << ": " << httplib::to_string(r.error());
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(1));
    for (int fd : slow) send(fd, "b", 1, MSG_NOSIGNAL);  // one more header byte each
  }
  for (int fd : slow) close(fd);
}

// An RM that believes declared users and launches nothing, for the web server's start tests.
absl::StatusOr<std::unique_ptr<rm::RmServer>> StartDeclaredRm() {
  rm::RmServerOptions o;
  o.auth.mode = rm::UserAuthentication::kDeclared;
  o.launcher = std::make_unique<NoLauncher>();
  return rm::RmServer::Start(std::move(o));
}

TEST(RmWebServerStartTest, WritesWithoutASecretAreAConfigurationError) {
  auto rm = StartDeclaredRm();
  ASSERT_TRUE(rm.ok()) << rm.status();
  RmWebOptions w;
  w.port = 0;
  w.writes_enabled = true;
  auto web = RmWebServer::Start(rm->get(), w);
  EXPECT_EQ(web.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(web.status().message()), HasSubstr("client secret"));
}

TEST(RmWebServerStartTest, ATakenPortIsReported) {
  auto rm = StartDeclaredRm();
  ASSERT_TRUE(rm.ok()) << rm.status();
  RmWebOptions w;
  w.port = 0;
  auto first = RmWebServer::Start(rm->get(), w);
  ASSERT_TRUE(first.ok());
  w.port = (*first)->port();
  auto second = RmWebServer::Start(rm->get(), w);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()), HasSubstr("--http-port 0"));
}

// The operator's limits (--http-max-connections-per-ip, ...) reach the server: with one
// connection per address, an idle connection is closed to make room for a new client's request
// from the same address (with the default 32 it would stay open).
TEST(RmWebServerStartTest, OperatorLimitsReachTheServer) {
  auto rm = StartDeclaredRm();
  ASSERT_TRUE(rm.ok()) << rm.status();
  RmWebOptions w;
  w.port = 0;
  w.limits.max_connections_per_ip = 1;
  auto web = RmWebServer::Start(rm->get(), w);
  ASSERT_TRUE(web.ok()) << web.status();
  const int idle = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(idle, 0);
  absl::Cleanup close_idle = [idle] { close(idle); };
  sockaddr_in a{};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  a.sin_port = htons(static_cast<uint16_t>((*web)->port()));
  ASSERT_EQ(connect(idle, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  httplib::Client client("127.0.0.1", (*web)->port());
  client.set_read_timeout(10, 0);
  auto r = client.Get("/ws/v1/cluster/info");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  // The idle one was closed without an answer: end of stream, well before the default 10 s
  // header deadline would close it (bounded: 3 s).
  timeval tv{3, 0};
  ASSERT_EQ(setsockopt(idle, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
  char byte = 0;
  EXPECT_EQ(recv(idle, &byte, 1, 0), 0);
  (*web)->Stop();
  (*rm)->Shutdown();
}

TEST(NmWebServerTest, MetricsAndContainerLogs) {
  char dir_template[] = "/tmp/weft-nm-web-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string root = dir_template;
  const std::string id = "container_e1_5_0001_01_000002";
  std::filesystem::create_directories(root + "/logs/" + id);
  { std::ofstream(root + "/logs/" + id + "/stdout") << "hello from the container\n"; }
  metrics::Registry registry;
  registry.GetCounter("weft_nm_container_launches_total", "Containers started.")->Increment();
  NmWebOptions o;
  o.port = 0;
  o.work_root = root;
  // Readers are who header X-Test-User says (MUNGE's part is tested in web/ and tests/).
  o.authenticate = [](const HttpRequest& r) -> absl::StatusOr<LogReader> {
    return LogReader{r.Header("x-test-user"), {}, false};
  };
  o.app_owner = [](const std::string&) -> absl::StatusOr<LogOwner> {
    return LogOwner{"alice", ""};
  };
  auto nm = NmWebServer::Start(o, &registry);
  ASSERT_TRUE(nm.ok()) << nm.status();
  httplib::Client client("127.0.0.1", (*nm)->port());
  // The logs are alice's: anonymous readers get 401, others 403.
  EXPECT_EQ(client.Get(("/node/containerlogs/" + id + "/alice/stdout").c_str())->status, 401);
  EXPECT_EQ(client
                .Get(("/node/containerlogs/" + id + "/alice/stdout").c_str(),
                     httplib::Headers{{"X-Test-User", "mallory"}})
                ->status,
            403);
  client.set_default_headers({{"X-Test-User", "alice"}});
  auto m = client.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("weft_nm_container_launches_total 1"));
  auto index = client.Get(("/node/containerlogs/" + id + "/alice").c_str());
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_THAT(index->body, HasSubstr("/node/containerlogs/" + id + "/alice/stdout"));
  auto out = client.Get(("/node/containerlogs/" + id + "/alice/stdout").c_str());
  ASSERT_TRUE(out);
  EXPECT_EQ(out->body, "hello from the container\n");
  EXPECT_EQ(client.Get("/node/containerlogs/../../etc/passwd")->status, 400);
  EXPECT_EQ(client.Get(("/node/containerlogs/" + id + "/alice/passwd").c_str())->status, 400);
  EXPECT_EQ(client.Get("/node/containerlogs/container_e1_5_0001_01_000009/x/stdout")->status, 404);
  (*nm)->Stop();
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace weft::web
