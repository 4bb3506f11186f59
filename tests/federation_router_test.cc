// Federation end to end, in process: three sub-cluster RMs (real RmServers on port 0, each with
// a fake NodeManager and the membership heartbeat into one memory federation store) behind
// real routers (RouterServer and RouterWebServer on port 0), users authenticated by a private
// munged. Spoken to over gRPC and HTTP as `weft app ...` and REST clients would.
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "common/test_poll.h"
#include "federation/membership/sub_cluster_heartbeater.h"
#include "federation/router/router_server.h"
#include "federation/router/router_web_server.h"
#include "federation/router/testing/forwarding_store.h"
#include "federation/store/federation_store.h"
#include "federation_test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "rm/rm_server.h"
#include "security/munge.h"
#include "security/test_munged.h"
#include "security/tls.h"
#include "security/user_identity.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kHourMs = 3600 * 1000;  // heartbeat interval: the test drives heartbeats

using testing_support::FakeNm;
const ::testing::Environment* const kKeepGrpcCallbackQueue =
    ::testing::AddGlobalTestEnvironment(new testing_support::KeepGrpcCallbackQueue);

// One sub-cluster: an RM, its NM, its membership heartbeat.
struct SubCluster {
  std::string id;
  std::unique_ptr<rm::RmServer> rm;
  std::unique_ptr<FakeNm> nm;
  std::unique_ptr<SubClusterHeartbeater> heartbeater;
};

class FederationRouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto munged = security::TestMunged::Start();
    ASSERT_TRUE(munged.ok()) << munged.status();
    munged_ = *std::move(munged);
    auto store = OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    watched_ = std::make_unique<CountingStore>(store_.get());
    for (int i = 1; i <= 3; ++i) StartSubCluster(absl::StrCat("sc", i), i);
    router_ = StartRouter("r1");
  }

  void TearDown() override {
    web_.reset();
    router_.reset();
    for (SubCluster& sc : scs_) {
      if (sc.heartbeater) sc.heartbeater->Stop();
      sc.rm.reset();
    }
  }

  void StartSubCluster(const std::string& id, int index) {
    SubCluster sc;
    sc.id = id;
    rm::RmServerOptions o;
    // Plaintext: these RMs believe the user the router names in weft-user (the TLS test below
    // has them believe it from the router's certificate); the router authenticates by MUNGE.
    o.auth.mode = rm::UserAuthentication::kDeclared;
    o.rm.pass_interval_ms = 20;
    o.rm.cluster_timestamp_ms = 1700000000000 + index;  // distinct application ids
    o.rm.sub_cluster_id = id;
    auto rm = rm::RmServer::Start(std::move(o));
    ASSERT_TRUE(rm.ok()) << rm.status();
    sc.rm = *std::move(rm);
    sc.nm = std::make_unique<FakeNm>();
    ASSERT_TRUE(testing_support::RegisterFakeNm(sc.rm->address(), *sc.nm).ok());
    HeartbeaterOptions h;
    h.sub_cluster_id = id;
    h.rm_address = sc.rm->address();
    h.rm_http_address = absl::StrCat(id, ".example:8088");
    h.heartbeat_interval_ms = kHourMs;
    rm::RmServer* raw = sc.rm.get();
    auto hb = SubClusterHeartbeater::Start(h, store_.get(), FiguresFromRmServer(raw),
                                           [raw] { return raw->NowMs(); });
    ASSERT_TRUE(hb.ok()) << hb.status();
    sc.heartbeater = *std::move(hb);
    ASSERT_TRUE(sc.heartbeater->AwaitHeartbeats(1, absl::Seconds(20)));
    scs_.push_back(std::move(sc));
  }

  std::unique_ptr<RouterServer> StartRouter(const std::string& id) {
    RouterServerOptions o;
    o.router.router_id = id;
    o.router.cache_ttl_ms = 1000;
    o.router.call_timeout_ms = 5000;
    o.router.seed = 42;
    o.auth.mode = rm::UserAuthentication::kMunge;
    o.auth.munge_socket = munged_->socket();
    auto r = RouterServer::Start(std::move(o), watched_.get());
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : nullptr;
  }

  std::unique_ptr<v1::ClientService::Stub> ClientOf(const RouterServer& router) {
    return v1::ClientService::NewStub(
        grpc::CreateChannel(router.address(), grpc::InsecureChannelCredentials()));
  }

  // A context proving the test's own Unix user (MUNGE), as `weft app` sends.
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    auto cred = security::MungeEncode(munged_->socket(), rm::kMungePayload);
    EXPECT_TRUE(cred.ok()) << cred.status();
    ctx->AddMetadata("weft-munge-cred", cred.ok() ? *cred : "");
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return ctx;
  }

  // NewApplication + SubmitApplication through `router`; the app id and the submit status.
  std::pair<std::string, grpc::Status> Submit(const RouterServer& router,
                                              const std::string& queue = "default") {
    auto client = ClientOf(router);
    v1::NewApplicationResponse app;
    grpc::Status st = client->NewApplication(Ctx().get(), {}, &app);
    if (!st.ok()) return {"", st};
    v1::SubmitApplicationRequest req;
    req.mutable_context()->set_application_id(app.application_id());
    req.mutable_context()->set_queue(queue);
    req.mutable_context()->set_name("federated");
    req.mutable_context()->mutable_am_container_spec()->add_command("sleep 100");
    v1::SubmitApplicationResponse resp;
    st = client->SubmitApplication(Ctx().get(), req, &resp);
    return {app.application_id(), st};
  }

  std::string HomeInStore(const std::string& app) {
    auto h = store_->GetApplicationHomeSubCluster(app);
    return h.ok() ? h->home_sub_cluster_id() : "";
  }

  SubCluster& Sc(const std::string& id) {
    for (SubCluster& sc : scs_)
      if (sc.id == id) return sc;
    ADD_FAILURE() << "no sub-cluster " << id;
    return scs_.front();
  }

  // Whether the sub-cluster's RM itself has the app (asked directly, not through a router).
  bool RmHas(const std::string& sc, const std::string& app) {
    bool found = false;
    Sc(sc).rm->RunOnLoop([&](rm::ResourceManager& r) { found = r.GetApplication(app).ok(); });
    return found;
  }

  std::unique_ptr<security::TestMunged> munged_;
  std::unique_ptr<FederationStateStore> store_;
  // What the routers use, over store_ (the sub-clusters' heartbeats go to store_ directly).
  std::unique_ptr<CountingStore> watched_;
  std::vector<SubCluster> scs_;
  std::unique_ptr<RouterServer> router_;
  std::unique_ptr<RouterWebServer> web_;
};

TEST_F(FederationRouterTest, TheAppIsHomedPerTheQueuesPolicyAndServedFromThere) {
  v1::SubClusterPolicyConfiguration policy;
  policy.set_queue("default");
  policy.set_router_policy("weighted-random");
  policy.set_amrm_policy("home-only");
  (*policy.mutable_router_weights())["sc2"] = 1;
  ASSERT_TRUE(store_->SetPolicyConfiguration(policy).ok());
  auto [app, st] = Submit(*router_);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(HomeInStore(app), "sc2");
  EXPECT_TRUE(RmHas("sc2", app));
  EXPECT_FALSE(RmHas("sc1", app));
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  ASSERT_TRUE(ClientOf(*router_)->GetApplication(Ctx().get(), get, &report).ok());
  EXPECT_EQ(report.report().sub_cluster_id(), "sc2");
}

TEST_F(FederationRouterTest, GetListAndKillGoThroughTheRouterToTheHome) {
  // When the router records an app's home, no RM has heard of the app yet.
  std::atomic<int> mapped{0}, known_before_mapping{0};
  watched_->on_add = [&](const v1::ApplicationHomeSubCluster& home) {
    ++mapped;
    for (const char* sc : {"sc1", "sc2", "sc3"})
      if (RmHas(sc, home.application_id())) ++known_before_mapping;
  };
  std::set<std::string> homes;
  std::vector<std::string> apps;
  for (int i = 0; i < 30 && homes.size() < 2; ++i) {
    auto [app, st] = Submit(*router_);
    ASSERT_TRUE(st.ok()) << st.error_message();
    apps.push_back(app);
    homes.insert(HomeInStore(app));
  }
  ASSERT_GE(homes.size(), 2u);
  EXPECT_EQ(mapped, static_cast<int>(apps.size()));
  EXPECT_EQ(known_before_mapping, 0);
  watched_->on_add = nullptr;
  auto client = ClientOf(*router_);
  for (const std::string& app : apps) {
    const std::string home = HomeInStore(app);
    EXPECT_TRUE(RmHas(home, app)) << app << " at " << home;
    v1::GetApplicationRequest get;
    get.set_application_id(app);
    v1::GetApplicationResponse report;
    grpc::Status st = client->GetApplication(Ctx().get(), get, &report);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(report.report().sub_cluster_id(), home);
    EXPECT_EQ(report.report().name(), "federated");
    EXPECT_EQ(report.report().user(), security::CurrentUser()->name);
    v1::GetApplicationAttemptsRequest attempts_req;
    attempts_req.set_application_id(app);
    v1::GetApplicationAttemptsResponse attempts;
    st = client->GetApplicationAttempts(Ctx().get(), attempts_req, &attempts);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(attempts.attempts_size(), 1);
  }
  v1::ListApplicationsResponse list;
  ASSERT_TRUE(client->ListApplications(Ctx().get(), {}, &list).ok());
  ASSERT_EQ(list.applications_size(), static_cast<int>(apps.size()));
  std::set<std::string> listed_homes;
  for (const auto& a : list.applications()) listed_homes.insert(a.sub_cluster_id());
  EXPECT_EQ(listed_homes, homes);

  v1::KillApplicationRequest kill;
  kill.set_application_id(apps[0]);
  v1::KillApplicationResponse killed;
  grpc::Status st;
  // As YARN's client does: asked again until the kill completed (a home RM with a federation
  // store completes it once the app's home record says it ended; these RMs have none).
  ASSERT_TRUE(PollUntil(
      [&] {
        st = client->KillApplication(Ctx().get(), kill, &killed);
        return !st.ok() || killed.kill_completed();
      },
      absl::Seconds(10), absl::Milliseconds(20)));
  ASSERT_TRUE(st.ok()) << st.error_message();
  v1::GetApplicationRequest get;
  get.set_application_id(apps[0]);
  v1::GetApplicationResponse report;
  ASSERT_TRUE(client->GetApplication(Ctx().get(), get, &report).ok());
  EXPECT_EQ(report.report().state(), v1::APP_KILLED);

  v1::GetClusterMetricsResponse metrics;
  ASSERT_TRUE(client->GetClusterMetrics(Ctx().get(), {}, &metrics).ok());
  EXPECT_EQ(metrics.active_nodes(), 3);
  EXPECT_EQ(metrics.total().values().at("memory-mb"), 3 * 8192);
  EXPECT_EQ(metrics.apps_submitted(), static_cast<int>(apps.size()));
  v1::ListNodesResponse nodes;
  ASSERT_TRUE(client->ListNodes(Ctx().get(), {}, &nodes).ok());
  ASSERT_EQ(nodes.nodes_size(), 3);
  std::set<std::string> node_scs;
  for (const auto& n : nodes.nodes()) node_scs.insert(n.sub_cluster_id());
  EXPECT_EQ(node_scs, (std::set<std::string>{"sc1", "sc2", "sc3"}));
  v1::GetQueueRequest queue_req;
  queue_req.set_queue("default");
  v1::GetQueueResponse queue;
  ASSERT_TRUE(client->GetQueue(Ctx().get(), queue_req, &queue).ok());
  // Summed over the sub-clusters; the killed app has left its queue.
  EXPECT_EQ(queue.queue().num_applications(), static_cast<int>(apps.size()) - 1);
}

TEST_F(FederationRouterTest, ARouterStartedOnTheSameStoreServesWhatAnotherSubmitted) {
  auto [app, st] = Submit(*router_);
  ASSERT_TRUE(st.ok()) << st.error_message();
  const std::string home = HomeInStore(app);
  router_.reset();  // killed: it kept nothing the federation needs
  auto second = StartRouter("r2");
  ASSERT_NE(second, nullptr);
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  grpc::Status got = ClientOf(*second)->GetApplication(Ctx().get(), get, &report);
  ASSERT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(report.report().application_id(), app);
  EXPECT_EQ(report.report().sub_cluster_id(), home);
}

TEST_F(FederationRouterTest, ASubClusterThatStoppedHeartbeatingIsNotChosen) {
  // sc3 last heartbeated a minute ago (beyond the 30 s expiry): its heartbeater is stopped
  // without deregistering, as when its RM host dies.
  Sc("sc3").heartbeater.reset();
  auto info = store_->GetSubCluster("sc3");
  ASSERT_TRUE(info.ok());
  info->set_last_heartbeat_ms(absl::ToUnixMillis(absl::Now()) - 60000);
  ASSERT_TRUE(store_->SubClusterHeartbeat(*info).ok());
  auto fresh = StartRouter("r-fresh");  // no cached membership
  for (int i = 0; i < 12; ++i) {
    auto [app, st] = Submit(*fresh);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_NE(HomeInStore(app), "sc3");
    EXPECT_FALSE(RmHas("sc3", app));
  }
}

TEST_F(FederationRouterTest, TheRestApiAggregatesEverySubCluster) {
  std::set<std::string> homes;
  std::vector<std::string> apps;
  for (int i = 0; i < 30 && homes.size() < 2; ++i) {
    auto [app, st] = Submit(*router_);
    ASSERT_TRUE(st.ok()) << st.error_message();
    apps.push_back(app);
    homes.insert(HomeInStore(app));
  }
  ASSERT_GE(homes.size(), 2u);
  RouterServer* r = router_.get();
  auto web = RouterWebServer::Start(
      &r->router(), [r](const rm::Presented& p) { return r->Authenticate(p); },
      RouterWebOptions{.port = 0, .anonymous_user = "nobody"});
  ASSERT_TRUE(web.ok()) << web.status();
  web_ = *std::move(web);
  httplib::Client http("127.0.0.1", web_->port());
  auto res = http.Get("/ws/v1/cluster/apps");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  auto j = nlohmann::json::parse(res->body);
  ASSERT_EQ(j["apps"]["app"].size(), apps.size());
  std::set<std::string> rest_homes;
  for (const auto& a : j["apps"]["app"]) {
    rest_homes.insert(a["subClusterId"].get<std::string>());
    EXPECT_THAT(a["trackingUrl"].get<std::string>(), HasSubstr(".example:8088/cluster/app/"));
  }
  EXPECT_EQ(rest_homes, homes);
  res = http.Get("/ws/v1/cluster/nodes");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(nlohmann::json::parse(res->body)["nodes"]["node"].size(), 3u);
  res = http.Get("/ws/v1/cluster/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(nlohmann::json::parse(res->body)["clusterMetrics"]["totalMB"], 3 * 8192);
  EXPECT_EQ(nlohmann::json::parse(res->body)["clusterMetrics"]["activeNodes"], 3);
  res = http.Get("/ws/v1/cluster/apps/" + apps[0]);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(nlohmann::json::parse(res->body)["app"]["subClusterId"], HomeInStore(apps[0]));
  res = http.Get("/ws/v1/federation/subclusters");
  ASSERT_TRUE(res);
  j = nlohmann::json::parse(res->body);
  ASSERT_EQ(j["subClusters"]["subCluster"].size(), 3u);
  for (const auto& sc : j["subClusters"]["subCluster"]) {
    EXPECT_EQ(sc["state"], "RUNNING");
    EXPECT_EQ(sc["activeNodes"], 1);
    EXPECT_EQ(sc["capability"]["memory-mb"], 8192);
  }
  res = http.Get("/federation");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("sc3"));
  res = http.Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_THAT(res->body, HasSubstr("weft_router_submissions_total"));
  EXPECT_THAT(res->body, HasSubstr("weft_router_forwards_total"));
}

// YARN's REST writes through the router: an id the federation issues, a submission homed by
// policy, a kill at the home; writers prove who they are (MUNGE), anonymous callers never write.
TEST_F(FederationRouterTest, RestWritesGoThroughTheRouterAsTheAuthenticatedUser) {
  RouterServer* r = router_.get();
  RouterWebOptions wo;
  wo.port = 0;
  wo.writes_enabled = true;
  auto web = RouterWebServer::Start(
      &r->router(), [r](const rm::Presented& p) { return r->Authenticate(p); }, wo);
  ASSERT_TRUE(web.ok()) << web.status();
  web_ = *std::move(web);
  httplib::Client http("127.0.0.1", web_->port());
  auto munge = [&] {
    auto cred = security::MungeEncode(munged_->socket(), rm::kMungePayload);
    EXPECT_TRUE(cred.ok()) << cred.status();
    return httplib::Headers{{"X-Weft-Munge-Credential", cred.ok() ? *cred : ""}};
  };
  // Anonymous: refused, nothing issued.
  auto res = http.Post("/ws/v1/cluster/apps/new-application", "", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401) << res->body;
  EXPECT_EQ(watched_->writes.load(), 0);

  res = http.Post("/ws/v1/cluster/apps/new-application", munge(), "", "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string id = nlohmann::json::parse(res->body)["application-id"];
  const nlohmann::json submission = {
      {"application-id", id},
      {"application-name", "from-rest"},
      {"queue", "default"},
      {"am-container-spec", {{"commands", {{"command", "sleep 100"}}}}}};
  // Anonymous submission of that id: refused, no home.
  res = http.Post("/ws/v1/cluster/apps", submission.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401) << res->body;
  EXPECT_EQ(HomeInStore(id), "");
  res = http.Post("/ws/v1/cluster/apps", munge(), submission.dump(), "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string home = HomeInStore(id);
  ASSERT_NE(home, "");
  EXPECT_TRUE(RmHas(home, id));
  // A caller-chosen id is refused as on gRPC.
  nlohmann::json chosen = submission;
  chosen["application-id"] = "application_1700000000002_0042";
  res = http.Post("/ws/v1/cluster/apps", munge(), chosen.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(HomeInStore("application_1700000000002_0042"), "");
  // Kill: anonymous refused; the owner's reaches the home.
  res =
      http.Put("/ws/v1/cluster/apps/" + id + "/state", R"({"state":"KILLED"})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 401) << res->body;
  res = http.Put("/ws/v1/cluster/apps/" + id + "/state", munge(), R"({"state":"KILLED"})",
                 "application/json");
  ASSERT_TRUE(res);
  EXPECT_TRUE(res->status == 200 || res->status == 202) << res->body;
  v1::ApplicationState state = v1::APP_NEW;
  PollUntil(
      [&] {
        Sc(home).rm->RunOnLoop([&](rm::ResourceManager& rm) {
          auto app = rm.GetApplication(id);
          if (app.ok()) state = app->state();
        });
        return state == v1::APP_KILLED;
      },
      absl::Seconds(20), absl::Milliseconds(50));
  EXPECT_EQ(state, v1::APP_KILLED) << v1::ApplicationState_Name(state);
}

TEST_F(FederationRouterTest, ACallerWithoutCredentialsIsRefused) {
  auto client = ClientOf(*router_);
  grpc::ClientContext bare;
  v1::NewApplicationResponse app;
  grpc::Status st = client->NewApplication(&bare, {}, &app);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(st.error_message(), HasSubstr("MUNGE"));
  grpc::ClientContext declared;
  declared.AddMetadata("weft-user", "mallory");  // declaring a user proves nothing
  v1::ListApplicationsResponse list;
  st = client->ListApplications(&declared, {}, &list);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext forged;
  forged.AddMetadata("weft-munge-cred", "MUNGE:AwQFAAC5forged:");
  st = client->ListApplications(&forged, {}, &list);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

TEST_F(FederationRouterTest, ACallerChosenApplicationIdIsRefused) {
  auto client = ClientOf(*router_);
  // sc2's next id before sc2 handed it out: sc2 would refuse it and the others take it as a
  // foreign id - the router must not offer it around.
  const std::string chosen = "application_1700000000002_0001";
  v1::SubmitApplicationRequest req;
  req.mutable_context()->set_application_id(chosen);
  req.mutable_context()->mutable_am_container_spec()->add_command("sleep 100");
  v1::SubmitApplicationResponse resp;
  grpc::Status st = client->SubmitApplication(Ctx().get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
  EXPECT_THAT(st.error_message(), HasSubstr(chosen));
  EXPECT_EQ(HomeInStore(chosen), "");
  for (const char* sc : {"sc1", "sc2", "sc3"}) EXPECT_FALSE(RmHas(sc, chosen)) << sc;
  EXPECT_EQ(watched_->writes.load(), 0);
  // An id the router issued works; the same submission again is idempotent; a different one
  // under that id is refused.
  v1::NewApplicationResponse app;
  ASSERT_TRUE(client->NewApplication(Ctx().get(), {}, &app).ok());
  req.mutable_context()->set_application_id(app.application_id());
  st = client->SubmitApplication(Ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  st = client->SubmitApplication(Ctx().get(), req, &resp);
  EXPECT_TRUE(st.ok()) << st.error_message();
  req.mutable_context()->set_name("another job");
  st = client->SubmitApplication(Ctx().get(), req, &resp);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS) << st.error_message();
  int homes = 0;
  for (const char* sc : {"sc1", "sc2", "sc3"}) homes += RmHas(sc, app.application_id()) ? 1 : 0;
  EXPECT_EQ(homes, 1);
}

TEST_F(FederationRouterTest, ReadsOfAnAppWhoseHomeLooksLostWriteNothing) {
  v1::SubClusterPolicyConfiguration policy;
  policy.set_queue("*");
  policy.set_router_policy("weighted-random");
  policy.set_amrm_policy("home-only");
  (*policy.mutable_router_weights())["sc1"] = 1;
  policy.set_resubmit_on_sub_cluster_loss(true);
  ASSERT_TRUE(store_->SetPolicyConfiguration(policy).ok());
  auto reader = StartRouter("r-reader");  // reads the policy afresh
  ASSERT_NE(reader, nullptr);
  auto [app, st] = Submit(*reader);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_EQ(HomeInStore(app), "sc1");
  (*policy.mutable_router_weights())["sc2"] = 1;
  (*policy.mutable_router_weights())["sc3"] = 1;
  ASSERT_TRUE(store_->SetPolicyConfiguration(policy).ok());
  // sc1's RM is fine, but its last heartbeat looks a minute old (the stale window).
  auto info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  info->set_last_heartbeat_ms(absl::ToUnixMillis(absl::Now()) - 60000);
  ASSERT_TRUE(store_->SubClusterHeartbeat(*info).ok());
  auto fresh = StartRouter("r-fresh");  // no cached membership
  ASSERT_NE(fresh, nullptr);
  RouterServer* r = fresh.get();
  auto web = RouterWebServer::Start(
      &r->router(), [r](const rm::Presented& p) { return r->Authenticate(p); },
      RouterWebOptions{.port = 0, .anonymous_user = "nobody"});
  ASSERT_TRUE(web.ok()) << web.status();
  web_ = *std::move(web);
  const int writes_before = watched_->writes.load();

  httplib::Client http("127.0.0.1", web_->port());
  auto res = http.Get("/ws/v1/cluster/apps/" + app);  // anonymous
  ASSERT_TRUE(res);
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  grpc::Status got = ClientOf(*fresh)->GetApplication(Ctx().get(), get, &report);
  ASSERT_TRUE(got.ok()) << got.error_message();
  EXPECT_EQ(report.report().sub_cluster_id(), "sc1");
  v1::ListApplicationsResponse list;
  EXPECT_TRUE(ClientOf(*fresh)->ListApplications(Ctx().get(), {}, &list).ok());

  EXPECT_EQ(watched_->writes.load(), writes_before);
  EXPECT_EQ(HomeInStore(app), "sc1");
  EXPECT_FALSE(RmHas("sc2", app));
  EXPECT_FALSE(RmHas("sc3", app));
}

TEST_F(FederationRouterTest, ACleanlyStoppedSubClusterIsUnregistered) {
  Sc("sc1").heartbeater->Stop();
  auto info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state(), v1::SC_UNREGISTERED);
  auto fresh = StartRouter("r-fresh");
  for (int i = 0; i < 6; ++i) {
    auto [app, st] = Submit(*fresh);
    ASSERT_TRUE(st.ok()) << st.error_message();
    EXPECT_NE(HomeInStore(app), "sc1");
  }
}

}  // namespace
}  // namespace weft::federation

namespace weft::federation {
namespace {

// The daemons' real transport: the RM serves mutual TLS with its certificate and authenticates
// users by MUNGE; the router presents router/<id> to it (so the RM believes the user it names)
// and serves its own clients over TLS; users prove themselves to the router by MUNGE.
TEST(FederationRouterTlsTest, TheRouterSpeaksMutualTlsBothWays) {
  char dir_template[] = "/tmp/weft-federation-tls-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  absl::Cleanup remove_dir = [&] { std::filesystem::remove_all(dir); };
  auto layout = security::EnsureDevTls(dir, {});
  ASSERT_TRUE(layout.ok()) << layout.status();
  ASSERT_TRUE(
      security::IssueCertificate(dir, dir, security::DaemonRole::kRouter, "r-tls", {}).ok());
  auto rm_files = security::LoadTlsFiles(layout->rm);
  auto router_files =
      security::LoadTlsFiles(security::DaemonTlsPaths(dir, security::DaemonRole::kRouter, "r-tls"));
  ASSERT_TRUE(rm_files.ok() && router_files.ok());
  auto munged = security::TestMunged::Start();
  ASSERT_TRUE(munged.ok()) << munged.status();
  auto store = OpenFederationStore("memory:");
  ASSERT_TRUE(store.ok());

  rm::RmServerOptions rm_options;
  rm_options.auth.mode = rm::UserAuthentication::kMunge;
  rm_options.auth.munge_socket = (*munged)->socket();
  rm_options.tls = *rm_files;
  rm_options.rm.sub_cluster_id = "sc-tls";
  rm_options.federation_proxies = true;
  auto rm = rm::RmServer::Start(std::move(rm_options));
  ASSERT_TRUE(rm.ok()) << rm.status();
  HeartbeaterOptions h;
  h.sub_cluster_id = "sc-tls";
  h.rm_address = (*rm)->address();
  h.heartbeat_interval_ms = kHourMs;
  rm::RmServer* raw = rm->get();
  auto hb = SubClusterHeartbeater::Start(h, store->get(), FiguresFromRmServer(raw),
                                         [raw] { return raw->NowMs(); });
  ASSERT_TRUE(hb.ok());
  ASSERT_TRUE((*hb)->AwaitHeartbeats(1, absl::Seconds(20)));

  RouterServerOptions o;
  o.router.router_id = "r-tls";
  o.auth.mode = rm::UserAuthentication::kMunge;
  o.auth.munge_socket = (*munged)->socket();
  o.tls = *router_files;
  auto router = RouterServer::Start(std::move(o), store->get());
  ASSERT_TRUE(router.ok()) << router.status();
  auto client = v1::ClientService::NewStub(grpc::CreateChannel(
      (*router)->address(), security::TlsChannelCredentials(router_files->ca_pem)));
  auto ctx = [&] {
    auto c = std::make_unique<grpc::ClientContext>();
    c->AddMetadata("weft-munge-cred",
                   *security::MungeEncode((*munged)->socket(), rm::kMungePayload));
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    return c;
  };
  v1::NewApplicationResponse app;
  grpc::Status st = client->NewApplication(ctx().get(), {}, &app);
  ASSERT_TRUE(st.ok()) << st.error_message();
  v1::SubmitApplicationRequest req;
  req.mutable_context()->set_application_id(app.application_id());
  req.mutable_context()->mutable_am_container_spec()->add_command("sleep 100");
  v1::SubmitApplicationResponse resp;
  st = client->SubmitApplication(ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  v1::GetApplicationRequest get;
  get.set_application_id(app.application_id());
  v1::GetApplicationResponse report;
  st = client->GetApplication(ctx().get(), get, &report);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(report.report().sub_cluster_id(), "sc-tls");
  EXPECT_EQ(report.report().user(), security::CurrentUser()->name);
  (*hb)->Stop();
}

}  // namespace
}  // namespace weft::federation
