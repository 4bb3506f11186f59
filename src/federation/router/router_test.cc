// Copyright Weft authors. The Router against fake sub-cluster RMs: ClientService servers on
// port 0 that record what reaches them, over a memory federation store.
#include "federation/router/router.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "federation/gpg/global_policy_generator.h"
#include "federation/gpg/rm_clients.h"
#include "federation/policies/registry.h"
#include "federation/router/router_web_server.h"
#include "federation/router/testing/fake_sub_cluster_rm.h"
#include "federation/router/testing/forwarding_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

using FakeRm = testing_util::FakeSubClusterRm;

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok());
    store_ = *std::move(store);
    for (int i = 1; i <= 3; ++i) {
      const std::string id = absl::StrCat("sc", i);
      rms_[id] = std::make_unique<FakeRm>(id, 1000 * i, store_.get());
      Register(id, NowMs());
    }
    router_ = NewRouter();
  }

  void Register(const std::string& id, int64_t heartbeat_ms,
                v1::SubClusterState state = v1::SC_RUNNING) {
    v1::SubClusterInfo info;
    info.set_sub_cluster_id(id);
    info.set_rm_address(rms_[id]->address());
    info.set_rm_http_address(absl::StrCat(id, ".example:8088"));
    info.set_state(state);
    info.set_last_start_ms(heartbeat_ms);
    info.set_last_heartbeat_ms(heartbeat_ms);
    ASSERT_TRUE(store_->RegisterSubCluster(info).ok());
  }

  std::unique_ptr<Router> NewRouter(int64_t cache_ttl_ms = 0,
                                    FederationStateStore* store = nullptr) {
    RouterOptions o;
    o.router_id = "r1";
    o.cache_ttl_ms = cache_ttl_ms;
    o.call_timeout_ms = 5000;
    o.seed = 7;
    auto r = Router::Create(o, store != nullptr ? store : store_.get());
    EXPECT_TRUE(r.ok()) << r.status();
    return *std::move(r);
  }

  void SetPolicy(const std::string& queue, std::map<std::string, double> weights,
                 bool resubmit = false) {
    v1::SubClusterPolicyConfiguration c;
    c.set_queue(queue);
    c.set_router_policy("weighted-random");
    c.set_amrm_policy("home-only");
    for (const auto& [id, w] : weights) (*c.mutable_router_weights())[id] = w;
    c.set_resubmit_on_sub_cluster_loss(resubmit);
    ASSERT_TRUE(store_->SetPolicyConfiguration(c).ok());
  }

  static v1::ApplicationSubmissionContext Context(const std::string& app,
                                                  const std::string& queue = "default") {
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(app);
    ctx.set_queue(queue);
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    return ctx;
  }

  // NewApplication + SubmitApplication through `router`; the app id.
  std::string Submit(Router& router, const std::string& queue = "default",
                     absl::Status* status = nullptr) {
    auto id = router.NewApplication("alice");
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return "";
    v1::ApplicationSubmissionContext ctx = Context(id->application_id(), queue);
    absl::Status s = router.SubmitApplication(ctx, "alice");
    if (status != nullptr) {
      *status = s;
    } else {
      EXPECT_TRUE(s.ok()) << s;
    }
    return id->application_id();
  }

  std::string HomeInStore(const std::string& app) {
    auto h = store_->GetApplicationHomeSubCluster(app);
    return h.ok() ? h->home_sub_cluster_id() : "";
  }

  std::unique_ptr<FederationStateStore> store_;
  std::map<std::string, std::unique_ptr<FakeRm>> rms_;
  std::unique_ptr<Router> router_;
};

TEST_F(RouterTest, TheQueuesPolicyChoosesTheHomeWhichIsStoredBeforeTheRmHearsOfIt) {
  SetPolicy("default", {{"sc2", 1}});
  for (int i = 0; i < 5; ++i) {
    const std::string app = Submit(*router_);
    EXPECT_EQ(HomeInStore(app), "sc2");
    EXPECT_TRUE(rms_["sc2"]->has_app(app));
    absl::MutexLock l(&rms_["sc2"]->mu_);
    EXPECT_EQ(rms_["sc2"]->mapped_before_submit[app], "sc2");
  }
  EXPECT_EQ(rms_["sc1"]->num_apps() + rms_["sc3"]->num_apps(), 0u);
}

TEST_F(RouterTest, WithoutAPolicyTheStarQueueOrTheDefaultIsUsed) {
  SetPolicy("*", {{"sc3", 1}});
  EXPECT_EQ(HomeInStore(Submit(*router_, "other")), "sc3");
  ASSERT_TRUE(store_
                  ->SetPolicyConfiguration([] {
                    v1::SubClusterPolicyConfiguration c;
                    c.set_queue("*");
                    c.set_router_policy("uniform");
                    c.set_amrm_policy("home-only");
                    return c;
                  }())
                  .ok());
  std::set<std::string> homes;
  for (int i = 0; i < 30; ++i) homes.insert(HomeInStore(Submit(*router_)));
  EXPECT_EQ(homes.size(), 3u);  // uniform over the three
}

TEST_F(RouterTest, AFailedForwardIsRetriedOnAnotherSubClusterAndTheMappingFollows) {
  for (const char* id : {"sc1", "sc2"}) {
    absl::MutexLock l(&rms_[id]->mu_);
    rms_[id]->submit_error = grpc::Status(grpc::StatusCode::UNAVAILABLE, "RM overloaded");
  }
  const std::string app = Submit(*router_);
  EXPECT_EQ(HomeInStore(app), "sc3");
  EXPECT_TRUE(rms_["sc3"]->has_app(app));
  auto report = router_->GetApplication(app, "alice");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sub_cluster_id(), "sc3");
}

TEST_F(RouterTest, SubmitRetriesBoundTheTries) {
  for (auto& [id, rm] : rms_) {
    absl::MutexLock l(&rm->mu_);
    rm->submit_error = grpc::Status(grpc::StatusCode::UNAVAILABLE, "RM overloaded");
  }
  absl::Status s;
  Submit(*router_, "default", &s);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("RM overloaded"));
  int calls = 0;
  for (auto& [id, rm] : rms_) {
    absl::MutexLock l(&rm->mu_);
    calls += rm->submit_calls;
  }
  EXPECT_EQ(calls, 3);  // submit_retries
}

TEST_F(RouterTest, TheCallersMistakeIsNotRetriedAndLeavesNoMapping) {
  for (auto& [id, rm] : rms_) {
    absl::MutexLock l(&rm->mu_);
    rm->submit_error = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad AM command");
  }
  absl::Status s;
  const std::string app = Submit(*router_, "default", &s);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_EQ(HomeInStore(app), "");
}

TEST_F(RouterTest, ASubClusterThatStoppedHeartbeatingIsNotChosen) {
  Register("sc1", NowMs() - 60000);  // silent for a minute; expiry 30 s
  Register("sc3", NowMs(), v1::SC_UNHEALTHY);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(HomeInStore(Submit(*router_)), "sc2");
  EXPECT_EQ(rms_["sc1"]->num_apps(), 0u);
  Register("sc2", NowMs() - 60000);
  auto id = router_->NewApplication("alice");
  EXPECT_TRUE(absl::IsUnavailable(id.status())) << id.status();
  EXPECT_THAT(id.status().message(), HasSubstr("no usable sub-cluster"));
}

TEST_F(RouterTest, ASecondRouterOverTheSameStoreServesTheApps) {
  SetPolicy("default", {{"sc1", 1}});
  const std::string app = Submit(*router_);
  router_.reset();  // the router is soft state
  auto second = NewRouter(kDefaultRouterCacheTtlMs);
  auto report = second->GetApplication(app, "alice");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sub_cluster_id(), "sc1");
  EXPECT_EQ(report->user(), "alice");
  v1::KillApplicationRequest kill;
  kill.set_application_id(app);
  auto killed = second->KillApplication(kill, "alice");
  ASSERT_TRUE(killed.ok()) << killed.status();
  report = second->GetApplication(app, "alice");
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->state(), v1::APP_KILLED);
  EXPECT_TRUE(absl::IsNotFound(second->GetApplication("application_9_0001", "alice").status()));
}

TEST_F(RouterTest, FanOutsMergeAndSkipASubClusterThatDoesNotAnswer) {
  for (int i = 0; i < 12; ++i) Submit(*router_);
  rms_["sc3"]->Stop();  // registered and heartbeating, but its RM is gone
  auto list = router_->ListApplications({}, "alice");
  ASSERT_TRUE(list.ok()) << list.status();
  for (const auto& a : list->applications()) {
    EXPECT_NE(a.sub_cluster_id(), "sc3");
    EXPECT_EQ(a.sub_cluster_id(), HomeInStore(a.application_id()));
  }
  EXPECT_EQ(list->applications_size(),
            static_cast<int>(rms_["sc1"]->num_apps() + rms_["sc2"]->num_apps()));
  auto metrics = router_->GetClusterMetrics("alice");
  ASSERT_TRUE(metrics.ok());
  EXPECT_EQ(metrics->active_nodes(), 2);
  EXPECT_EQ(metrics->total().values().at("memory-mb"), 8192);
  auto nodes = router_->ListNodes({}, "alice");
  ASSERT_TRUE(nodes.ok());
  ASSERT_EQ(nodes->nodes_size(), 2);
  EXPECT_EQ(nodes->nodes(0).sub_cluster_id(), "sc1");
  EXPECT_EQ(nodes->nodes(1).sub_cluster_id(), "sc2");
  v1::GetQueueRequest q;
  auto queue = router_->GetQueue(q, "alice");
  ASSERT_TRUE(queue.ok());
  EXPECT_EQ(queue->queue().num_applications(), 2);
  q.set_queue("nosuch");
  EXPECT_TRUE(absl::IsNotFound(router_->GetQueue(q, "alice").status()));
}

TEST_F(RouterTest, ReadingAnAppWhoseHomeLooksLostWritesNothingAndResubmitsNothing) {
  SetPolicy("default", {{"sc1", 1}}, /*resubmit=*/true);
  const std::string app = Submit(*router_);
  ASSERT_EQ(HomeInStore(app), "sc1");
  SetPolicy("default", {{"sc1", 1}, {"sc2", 1}, {"sc3", 1}}, /*resubmit=*/true);
  CountingStore counting(store_.get());
  auto reader = NewRouter(kDefaultRouterCacheTtlMs, &counting);
  auto web = RouterWebServer::Start(
      reader.get(), [](const rm::Presented&) { return absl::StatusOr<rm::Caller>(rm::Caller{}); },
      RouterWebOptions{.port = 0});
  ASSERT_TRUE(web.ok()) << web.status();
  auto rest_get = [&] {
    web::HttpRequest req;  // anonymous
    req.method = "GET";
    req.path = "/ws/v1/cluster/apps/" + app;
    return (*web)->Handle(req);
  };
  auto submits_elsewhere = [&] {
    int calls = 0;
    for (const char* id : {"sc2", "sc3"}) {
      absl::MutexLock l(&rms_[id]->mu_);
      calls += rms_[id]->submit_calls;
    }
    return calls;
  };

  // The stale window: sc1 looks silent beyond the expiry, yet its RM is fine and answers.
  Register("sc1", NowMs() - 60000);
  auto report = reader->GetApplication(app, "alice");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sub_cluster_id(), "sc1");
  web::HttpResponse r = rest_get();
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(reader->ListApplications({}, "alice").ok());

  // Marked LOST and really gone: reads say so, and still write nothing.
  ASSERT_TRUE(store_->DeregisterSubCluster("sc1", v1::SC_LOST).ok());
  rms_["sc1"]->Stop();
  report = reader->GetApplication(app, "alice");
  ASSERT_FALSE(report.ok());
  EXPECT_THAT(report.status().message(), HasSubstr("sub-cluster 'sc1' of " + app + " is lost"));
  r = rest_get();
  EXPECT_NE(r.status, 200);
  EXPECT_FALSE(reader->GetApplicationAttempts(app, "alice").ok());

  EXPECT_EQ(counting.writes.load(), 0);
  EXPECT_EQ(submits_elsewhere(), 0);
  EXPECT_EQ(HomeInStore(app), "sc1");
  EXPECT_FALSE(rms_["sc2"]->has_app(app));
  EXPECT_FALSE(rms_["sc3"]->has_app(app));
}

TEST_F(RouterTest, AReadFollowsAnAppTheGpgMoved) {
  SetPolicy("default", {{"sc1", 1}});
  const std::string app = Submit(*router_);
  auto reader = NewRouter(kDefaultRouterCacheTtlMs);
  ASSERT_TRUE(reader->GetApplication(app, "alice").ok());  // caches the home sc1
  // The GPG marks sc1 LOST and resubmits the app to sc2 (as its round does).
  ASSERT_TRUE(store_->DeregisterSubCluster("sc1", v1::SC_LOST).ok());
  auto home = store_->GetApplicationHomeSubCluster(app);
  ASSERT_TRUE(home.ok());
  home->set_home_sub_cluster_id("sc2");
  ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(*home).ok());
  rms_["sc1"]->Stop();
  v1::SubmitApplicationRequest req;
  *req.mutable_context() = home->submission_context();
  auto stub = v1::ClientService::NewStub(
      grpc::CreateChannel(rms_["sc2"]->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::SubmitApplicationResponse resp;
  ASSERT_TRUE(stub->SubmitApplication(&ctx, req, &resp).ok());
  auto report = reader->GetApplication(app, "alice");
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->sub_cluster_id(), "sc2");
}

TEST_F(RouterTest, ACallerChosenApplicationIdIsRefused) {
  // The next id of sc2's own clock, and one of a cluster timestamp no RM has.
  for (const std::string& id :
       {std::string("application_2000_0001"), std::string("application_424242_0007")}) {
    absl::Status s = router_->SubmitApplication(Context(id), "mallory");
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(id));
    EXPECT_THAT(s.message(), HasSubstr("not issued"));
    EXPECT_EQ(HomeInStore(id), "");
  }
  for (auto& [id, rm] : rms_) {
    absl::MutexLock l(&rm->mu_);
    EXPECT_EQ(rm->submit_calls, 0) << id;
  }
  // An id issued to alice is hers.
  auto issued = router_->NewApplication("alice");
  ASSERT_TRUE(issued.ok()) << issued.status();
  absl::Status s = router_->SubmitApplication(Context(issued->application_id()), "mallory");
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(issued->application_id()));
  EXPECT_TRUE(router_->SubmitApplication(Context(issued->application_id()), "alice").ok());
  // Its issued record went when its home was written: the home guards the id now.
  EXPECT_TRUE(absl::IsNotFound(store_->GetIssuedApplicationId(issued->application_id()).status()));
}

TEST_F(RouterTest, AnIdIssuedThroughOneRouterIsSubmittedThroughAnother) {
  auto other = NewRouter();
  auto id = router_->NewApplication("alice");
  ASSERT_TRUE(id.ok()) << id.status();
  auto issued = store_->GetIssuedApplicationId(id->application_id());
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(issued->user(), "alice");
  EXPECT_EQ(issued->router_id(), "r1");
  EXPECT_THAT(id->application_id(),
              HasSubstr(absl::StrCat("_", 1000 * (issued->sub_cluster_id().back() - '0'), "_")));
  // Issued to alice, whichever router is asked.
  absl::Status s = other->SubmitApplication(Context(id->application_id()), "mallory");
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  ASSERT_TRUE(other->SubmitApplication(Context(id->application_id()), "alice").ok());
  EXPECT_NE(HomeInStore(id->application_id()), "");
  // Retried through the first router: the same home, still one app.
  EXPECT_TRUE(router_->SubmitApplication(Context(id->application_id()), "alice").ok());
  size_t apps = 0;
  for (auto& [sc, rm] : rms_) apps += rm->num_apps();
  EXPECT_EQ(apps, 1u);
}

TEST_F(RouterTest, AnIssueExpiresAfterItsTtlAndTheGpgsCleanupRemovesIt) {
  std::atomic<int64_t> now{NowMs()};
  RouterOptions o;
  o.router_id = "r-clock";
  o.cache_ttl_ms = 0;
  o.issued_id_ttl_ms = 60000;
  o.now_ms = [&] { return now.load(); };
  auto router = Router::Create(o, store_.get());
  ASSERT_TRUE(router.ok()) << router.status();
  auto id = (*router)->NewApplication("alice");
  ASSERT_TRUE(id.ok()) << id.status();
  now += 60001;
  absl::Status s = (*router)->SubmitApplication(Context(id->application_id()), "alice");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr(id->application_id()));
  EXPECT_THAT(s.message(), HasSubstr("expired"));
  EXPECT_EQ(HomeInStore(id->application_id()), "");
  // What the GPG does each round: ids issued more than the TTL ago go.
  auto deleted = store_->DeleteIssuedApplicationIdsBefore(now - o.issued_id_ttl_ms);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1);
  s = (*router)->SubmitApplication(Context(id->application_id()), "alice");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("not issued"));
}

TEST_F(RouterTest, AnIdAnotherRouterIssuedIsNotHandedOutAgain) {
  // sc4's RM has sc1's cluster timestamp (as if it had not claimed one): it hands out the ids
  // sc1 does.
  rms_["sc4"] = std::make_unique<FakeRm>("sc4", 1000, store_.get());
  Register("sc4", NowMs());
  for (const char* id : {"sc2", "sc3", "sc4"}) Register(id, NowMs() - 60000);
  auto first = router_->NewApplication("alice");  // from sc1, only usable one
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->application_id(), "application_1000_0001");
  Register("sc1", NowMs() - 60000);
  Register("sc4", NowMs());
  auto other = NewRouter();
  auto second = other->NewApplication("bob");  // from sc4, which hands out _0001 first
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->application_id(), "application_1000_0002");
  EXPECT_EQ(store_->GetIssuedApplicationId("application_1000_0001")->user(), "alice");
}

TEST_F(RouterTest, AKillReachesTheHomeAndTheAppsUnmanagedAmsElsewhere) {
  SetPolicy("default", {{"sc1", 1}});
  const std::string app = Submit(*router_);
  ASSERT_EQ(HomeInStore(app), "sc1");
  // Its AMRMProxy's unmanaged AM in sc2 carries the app's id.
  auto sc2 = v1::ClientService::NewStub(
      grpc::CreateChannel(rms_["sc2"]->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  v1::SubmitApplicationRequest uam;
  *uam.mutable_context() = Context(app);
  uam.mutable_context()->set_unmanaged_am(true);
  uam.mutable_context()->set_federation_home_sub_cluster_id("sc1");
  v1::SubmitApplicationResponse resp;
  ASSERT_TRUE(sc2->SubmitApplication(&ctx, uam, &resp).ok());
  v1::KillApplicationRequest kill;
  kill.set_application_id(app);
  auto killed = router_->KillApplication(kill, "alice");
  ASSERT_TRUE(killed.ok()) << killed.status();
  EXPECT_TRUE(killed->kill_completed());
  EXPECT_EQ(rms_["sc1"]->state_of(app), v1::APP_KILLED);
  EXPECT_EQ(rms_["sc2"]->state_of(app), v1::APP_KILLED);
  EXPECT_FALSE(rms_["sc3"]->has_app(app));
  // The reply is the home's: a home that refuses is the answer, and nothing else is killed.
  const std::string second = Submit(*router_);
  {
    absl::MutexLock l(&rms_["sc1"]->mu_);
    rms_["sc1"]->kill_error = grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "not yours");
  }
  kill.set_application_id(second);
  killed = router_->KillApplication(kill, "alice");
  EXPECT_TRUE(absl::IsPermissionDenied(killed.status())) << killed.status();
  EXPECT_EQ(rms_["sc1"]->state_of(second), v1::APP_ACCEPTED);
}

TEST_F(RouterTest, ARetriedSubmissionIsIdempotentAndADifferentOneIsAnError) {
  SetPolicy("default", {{"sc2", 1}});
  auto id = router_->NewApplication("alice");
  ASSERT_TRUE(id.ok());
  const v1::ApplicationSubmissionContext ctx = Context(id->application_id());
  ASSERT_TRUE(router_->SubmitApplication(ctx, "alice").ok());
  // The same submission again (its answer was lost), through this router or another.
  EXPECT_TRUE(router_->SubmitApplication(ctx, "alice").ok());
  EXPECT_TRUE(NewRouter()->SubmitApplication(ctx, "alice").ok());
  EXPECT_EQ(rms_["sc2"]->num_apps(), 1u);
  // A different submission, or another user's, under the same id.
  v1::ApplicationSubmissionContext different = ctx;
  different.mutable_am_container_spec()->set_command(0, "rm -rf ~");
  absl::Status s = router_->SubmitApplication(different, "alice");
  EXPECT_TRUE(absl::IsAlreadyExists(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("different submission"));
  EXPECT_TRUE(absl::IsAlreadyExists(router_->SubmitApplication(ctx, "mallory")));
  auto stored = store_->GetApplicationHomeSubCluster(id->application_id());
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->user(), "alice");
  EXPECT_EQ(stored->submission_context().am_container_spec().command(0), "sleep 100");
}

TEST_F(RouterTest, AnIdTheRmRefusesIsNotOfferedToAnotherSubCluster) {
  for (const auto& [code, message] : std::vector<std::pair<grpc::StatusCode, std::string>>{
           {grpc::StatusCode::NOT_FOUND, "not handed out by NewApplication on this RM"},
           {grpc::StatusCode::ALREADY_EXISTS, "application was already submitted"}}) {
    for (auto& [id, rm] : rms_) {
      absl::MutexLock l(&rm->mu_);
      rm->submit_error = grpc::Status(code, message);
      rm->submit_calls = 0;
    }
    absl::Status s;
    const std::string app = Submit(*router_, "default", &s);
    EXPECT_EQ(static_cast<int>(s.code()), static_cast<int>(code)) << s;
    EXPECT_THAT(s.message(), HasSubstr(message));
    EXPECT_THAT(s.message(), HasSubstr("refused " + app));
    int calls = 0;
    for (auto& [id, rm] : rms_) {
      absl::MutexLock l(&rm->mu_);
      calls += rm->submit_calls;
    }
    EXPECT_EQ(calls, 1);  // never retried elsewhere; AlreadyExists is no success
    EXPECT_EQ(HomeInStore(app), "");
  }
}

// A submission that reaches its home's RM after the GPG moved the app (it waited in a stopped
// RM's socket while its sub-cluster was LOST) is refused there; the router follows the home
// and the app is submitted once, where it is homed, and its home record stays.
TEST_F(RouterTest, ASubmissionWhoseHomeMovedOnItsWayFollowsTheHome) {
  SetPolicy("default", {{"sc1", 1}});
  for (auto& [id, rm] : rms_) rm->check_home = true;
  rms_["sc1"]->on_submit = [this](const std::string& app) {
    auto home = store_->GetApplicationHomeSubCluster(app);
    ASSERT_TRUE(home.ok()) << home.status();
    if (home->home_sub_cluster_id() != "sc1") return;
    home->set_home_sub_cluster_id("sc2");  // what the GPG does, over the generation read
    ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(*home).ok());
  };
  const std::string app = Submit(*router_);
  EXPECT_EQ(HomeInStore(app), "sc2");
  absl::MutexLock l1(&rms_["sc1"]->mu_);
  absl::MutexLock l2(&rms_["sc2"]->mu_);
  EXPECT_EQ(rms_["sc1"]->submit_calls, 1);
  EXPECT_FALSE(rms_["sc1"]->mapped_before_submit.contains(app));  // refused there
  EXPECT_EQ(rms_["sc2"]->mapped_before_submit.at(app), "sc2");    // taken at its home
}

TEST_F(RouterTest, AnIdTheFederationHasIssuedAlreadyIsNotHandedOutAgain) {
  // sc1's RM restarted with the same cluster timestamp: it hands out its first ids again.
  SetPolicy("default", {{"sc1", 1}});
  const std::string app = Submit(*router_);
  rms_["sc1"]->RestartIds();
  // Only sc1 is usable.
  Register("sc2", NowMs() - 60000);
  Register("sc3", NowMs() - 60000);
  auto id = router_->NewApplication("alice");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_NE(id->application_id(), app);
}

TEST_F(RouterTest, CallsFollowASubClustersRmAddressList) {
  // sc1 is an HA pair whose first RM is down: calls move on to the second.
  FakeRm dead("dead", 9, store_.get());
  const std::string dead_address = dead.address();
  dead.Stop();
  v1::SubClusterInfo info = *store_->GetSubCluster("sc1");
  info.set_rm_address(absl::StrCat(dead_address, ",", rms_["sc1"]->address()));
  ASSERT_TRUE(store_->RegisterSubCluster(info).ok());
  SetPolicy("default", {{"sc1", 1}});
  for (int i = 0; i < 3; ++i) {
    const std::string app = Submit(*router_);
    EXPECT_TRUE(rms_["sc1"]->has_app(app));
    auto report = router_->GetApplication(app, "alice");
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->sub_cluster_id(), "sc1");
  }
}

TEST_F(RouterTest, TheLocalityPolicyLearnsWhichSubClusterHasANodeFromTheNodeLists) {
  if (!MakeRouterPolicy("locality").ok()) GTEST_SKIP() << "no locality policy in this build";
  v1::SubClusterPolicyConfiguration c;
  c.set_queue("default");
  c.set_router_policy("locality");
  c.set_amrm_policy("home-only");
  ASSERT_TRUE(store_->SetPolicyConfiguration(c).ok());
  for (int i = 0; i < 5; ++i) {
    auto id = router_->NewApplication("alice");
    ASSERT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.add_preferred_nodes("sc3-host");  // FakeRm sc3's only node
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    ASSERT_TRUE(router_->SubmitApplication(ctx, "alice").ok());
    EXPECT_EQ(HomeInStore(id->application_id()), "sc3");
  }
}

TEST_F(RouterTest, TheWebServerAggregatesTheSubClusters) {
  SetPolicy("default", {{"sc1", 1}, {"sc2", 1}});
  std::vector<std::string> apps;
  for (int i = 0; i < 6; ++i) apps.push_back(Submit(*router_));
  auto web = RouterWebServer::Start(
      router_.get(), [](const rm::Presented&) { return absl::StatusOr<rm::Caller>(rm::Caller{}); },
      RouterWebOptions{.port = 0});
  ASSERT_TRUE(web.ok()) << web.status();
  auto get = [&](const std::string& path) {
    web::HttpRequest req;
    req.method = "GET";
    req.path = path;
    return (*web)->Handle(req);
  };
  web::HttpResponse r = get("/ws/v1/cluster/apps");
  ASSERT_EQ(r.status, 200) << r.body;
  auto j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["apps"]["app"].size(), apps.size());
  for (const auto& a : j["apps"]["app"])
    EXPECT_EQ(a["subClusterId"], HomeInStore(a["id"].get<std::string>()));
  r = get("/ws/v1/cluster/apps/" + apps[0]);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["app"]["id"], apps[0]);
  r = get("/ws/v1/cluster/nodes");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["nodes"]["node"].size(), 3u);
  r = get("/ws/v1/cluster/metrics");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(nlohmann::json::parse(r.body)["clusterMetrics"]["totalMB"], 3 * 4096);
  r = get("/ws/v1/federation/subclusters");
  ASSERT_EQ(r.status, 200) << r.body;
  j = nlohmann::json::parse(r.body);
  ASSERT_EQ(j["subClusters"]["subCluster"].size(), 3u);
  EXPECT_EQ(j["subClusters"]["subCluster"][0]["state"], "RUNNING");
  EXPECT_EQ(j["subClusters"]["subCluster"][0]["usable"], true);
  r = get("/federation");
  EXPECT_EQ(r.status, 200);
  EXPECT_THAT(r.body, HasSubstr("sc2"));
  r = get("/metrics");
  EXPECT_THAT(r.body, HasSubstr("weft_router_submissions_total{sub_cluster=\"sc"));
  EXPECT_THAT(r.body, HasSubstr("weft_router_sub_cluster_usable{sub_cluster=\"sc3\"} 1"));
  EXPECT_EQ(get("/ws/v1/cluster/apps/application_1_9").status, 404);
  EXPECT_EQ(get("/nope").status, 404);
}

TEST_F(RouterTest, RoutersKeepUsingTheLastPublishedPoliciesWhileTheGpgIsDown) {
  {
    // The GPG publishes once, draining sc1 for maintenance, then goes away.
    GrpcSubClusterRms rms(std::nullopt);
    GpgOptions o;
    o.drained = {"sc1"};
    GlobalPolicyGenerator gpg(o, store_.get(), &rms);
    GpgRound round = gpg.RunOnce(NowMs());
    ASSERT_TRUE(round.errors.empty()) << round.errors.front();
    ASSERT_EQ(round.policies_published, 1);
  }
  auto published = store_->GetPolicyConfiguration("*");
  ASSERT_TRUE(published.ok());
  EXPECT_EQ(published->router_weights().at("sc1"), 0);
  // Without the GPG every router homes apps by what it published: never on the drained sc1.
  std::map<std::string, int> homes;
  for (int i = 0; i < 30; ++i) ++homes[HomeInStore(Submit(*router_))];
  EXPECT_EQ(homes.count("sc1"), 0u);
  EXPECT_GT(homes["sc2"], 0);
  EXPECT_GT(homes["sc3"], 0);
  // A sub-cluster that goes silent is left out by the routers themselves, GPG or not.
  Register("sc3", NowMs() - 120000);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(HomeInStore(Submit(*router_)), "sc2");
}

TEST(RouterOptionsTest, ACacheThatOutlivesHalfTheMembershipExpiryIsRefusedNamingBothFlags) {
  RouterOptions o;  // the defaults
  EXPECT_TRUE(ValidateRouterOptions(o).ok()) << ValidateRouterOptions(o);
  EXPECT_LE(o.cache_ttl_ms * 2, o.membership_expiry_ms);
  o.cache_ttl_ms = 60000;  // the old default
  o.membership_expiry_ms = 30000;
  absl::Status s = ValidateRouterOptions(o);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("--cache-ttl-ms 60000"));
  EXPECT_THAT(s.message(), HasSubstr("--membership-expiry-ms 30000"));
  o.cache_ttl_ms = 15001;
  EXPECT_FALSE(ValidateRouterOptions(o).ok());
  o.cache_ttl_ms = 15000;
  EXPECT_TRUE(ValidateRouterOptions(o).ok());
  o.cache_ttl_ms = 0;
  EXPECT_TRUE(ValidateRouterOptions(o).ok());
}

// Acceptance (issue 27): the router with its default flags stays available across 3 minutes of
// idle time while the sub-clusters heartbeat normally - no stale-cache window. Simulated time:
// the router and the heartbeats read one fake clock.
TEST_F(RouterTest, WithDefaultFlagsTheRouterStaysAvailableAcross3MinutesOfIdleTime) {
  std::atomic<int64_t> clock_ms{1'800'000'000'000};
  RouterOptions o;  // the defaults, but for the clock and the seed
  o.router_id = "r-defaults";
  o.now_ms = [&clock_ms] { return clock_ms.load(); };
  o.seed = 11;
  auto created = Router::Create(o, store_.get());
  ASSERT_TRUE(created.ok()) << created.status();
  Router& router = **created;
  // Each sub-cluster heartbeats every kDefaultHeartbeatIntervalMs (5 s), at its own phase.
  std::map<std::string, int64_t> next_heartbeat;
  int phase = 0;
  for (const char* id : {"sc1", "sc2", "sc3"}) {
    Register(id, clock_ms.load());
    next_heartbeat[id] = clock_ms.load() + 1700 * ++phase;
  }
  auto heartbeat_due = [&] {
    for (auto& [id, due] : next_heartbeat) {
      while (due <= clock_ms.load()) {
        v1::SubClusterInfo load;
        load.set_sub_cluster_id(id);
        load.set_state(v1::SC_RUNNING);
        load.set_last_heartbeat_ms(due);
        ASSERT_TRUE(store_->SubClusterHeartbeat(load).ok());
        due += 5000;
      }
    }
  };
  auto id = router.NewApplication("alice");
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(router.SubmitApplication(Context(id->application_id()), "alice").ok());
  const std::string app = id->application_id();
  // Idle gaps of every length from 1 s to 20 s, then every call of a client, for 3 minutes.
  const int64_t end = clock_ms.load() + 180'000;
  int calls = 0;
  for (int64_t gap = 1000; clock_ms.load() < end; gap = gap % 20000 + 1000) {
    clock_ms += gap;
    heartbeat_due();
    const int64_t t = clock_ms.load();
    auto report = router.GetApplication(app, "alice");
    EXPECT_TRUE(report.ok()) << "at +" << (t - end + 180'000) << " ms: " << report.status();
    auto list = router.ListApplications({}, "alice");
    EXPECT_TRUE(list.ok()) << "at +" << (t - end + 180'000) << " ms: " << list.status();
    auto fresh = router.NewApplication("alice");
    ASSERT_TRUE(fresh.ok()) << "at +" << (t - end + 180'000) << " ms: " << fresh.status();
    absl::Status submitted = router.SubmitApplication(Context(fresh->application_id()), "alice");
    EXPECT_TRUE(submitted.ok()) << "at +" << (t - end + 180'000) << " ms: " << submitted;
    ++calls;
  }
  EXPECT_GT(calls, 15);
}

// A burst of submissions reads one membership snapshot (the sub-clusters heartbeat every 5 s):
// load-based placement counts what this router homed since, so the burst spreads instead of
// all going to the sub-cluster that looked least loaded (herding).
TEST_F(RouterTest, LoadBasedPlacementCountsItsOwnInFlightHomes) {
  const int64_t now = NowMs();
  for (const auto& [id, available_mb] : std::vector<std::pair<std::string, int64_t>>{
           {"sc1", 60000}, {"sc2", 55000}, {"sc3", 50000}}) {
    v1::SubClusterInfo info;
    info.set_sub_cluster_id(id);
    info.set_rm_address(rms_[id]->address());
    info.set_state(v1::SC_RUNNING);
    info.set_last_start_ms(now);
    info.set_last_heartbeat_ms(now);  // and no heartbeat after: every read sees this snapshot
    (*info.mutable_capability()->mutable_values())["memory-mb"] = 100000;
    (*info.mutable_available()->mutable_values())["memory-mb"] = available_mb;
    (*info.mutable_used()->mutable_values())["memory-mb"] = 100000 - available_mb;
    ASSERT_TRUE(store_->RegisterSubCluster(info).ok());
  }
  v1::SubClusterPolicyConfiguration c;
  c.set_queue("default");
  c.set_router_policy("load-based");
  c.set_amrm_policy("home-only");
  ASSERT_TRUE(store_->SetPolicyConfiguration(c).ok());
  std::map<std::string, int> homes;
  for (int i = 0; i < 9; ++i) {
    auto id = router_->NewApplication("alice");
    ASSERT_TRUE(id.ok()) << id.status();
    v1::ApplicationSubmissionContext ctx = Context(id->application_id());
    (*ctx.mutable_am_resource()->mutable_values())["memory-mb"] = 5000;
    ASSERT_TRUE(router_->SubmitApplication(ctx, "alice").ok());
    ++homes[HomeInStore(id->application_id())];
  }
  // Without the in-flight homes all 9 would go to sc1 (the snapshot never changes).
  EXPECT_EQ(homes.size(), 3u);
  for (const auto& [id, n] : homes) EXPECT_LE(n, 5) << id;
  EXPECT_GE(homes["sc1"], homes["sc3"]);
}

// An old copy killed after its app moved (or a UAM) lists the app in a second sub-cluster under
// the same id: the router lists it once, as its home in the store reports it.
TEST_F(RouterTest, AnAppInTwoSubClustersIsListedAsItsHomeReportsIt) {
  SetPolicy("default", {{"sc3", 1}});  // the last sub-cluster: the copies come first
  const std::string app = Submit(*router_);
  const std::string home = HomeInStore(app);
  ASSERT_EQ(home, "sc3");
  for (const auto& [id, rm] : rms_) {
    if (id == home) continue;
    v1::ApplicationReport copy;
    copy.set_application_id(app);
    copy.set_user("alice");
    copy.set_state(v1::APP_KILLED);
    copy.set_sub_cluster_id(id);
    rm->PutApp(copy);  // ordered before the home or after it: the home wins either way
  }
  auto list = router_->ListApplications({}, "alice");
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->applications_size(), 1);
  EXPECT_EQ(list->applications(0).sub_cluster_id(), home);
  EXPECT_EQ(list->applications(0).state(), v1::APP_ACCEPTED);
}

}  // namespace
}  // namespace weft::federation
