// Copyright Weft authors. Narrow federation identities over gRPC and mutual TLS (issue 27): two
// sub-cluster RmServers (sc1, sc2) with one node each, a memory federation store naming both,
// and certificates of the federation's CA for two NMs, a router and the GPG. Alice's app A is
// homed in sc1 (its AM on sc1's node), bob's B in sc2. The issue's attack - sc1's NM
// certificate on sc2's RM acting for another user, or as root - is refused; what the
// AMRMProxy needs (A's unmanaged AM in sc2: submit, read, kill) still works, checked by sc2's
// RM against the store and against sc1's RM, which it asks with its own certificate.
#include <grpcpp/grpcpp.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/test_poll.h"
#include "federation/store/federation_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_server.h"
#include "rm/rm_test_util.h"
#include "security/tls.h"
#include "weft/v1/admin.grpc.pb.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::rm {
namespace {

using security::DaemonRole;
using ::testing::HasSubstr;

constexpr char kNode1[] = "127.0.0.1:7001";  // sc1's node: A's AM runs there
constexpr char kNode2[] = "127.0.0.1:7002";  // sc2's node: B's AM runs there

class FederationRmServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/weft-fed-identity-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    ASSERT_TRUE(security::CreateCa(dir_, "weft test CA").ok());
    rm_tls_ = Tls(DaemonRole::kResourceManager, "rm");
    nm1_ = Tls(DaemonRole::kNodeManager, kNode1);
    nm2_ = Tls(DaemonRole::kNodeManager, kNode2);
    router_ = Tls(DaemonRole::kRouter, "r1");
    gpg_ = Tls(DaemonRole::kGpg, "g1");
    auto store = federation::OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    for (int i = 0; i < 2; ++i) {
      const std::string id = absl::StrCat("sc", i + 1);
      RmServerOptions o;
      o.auth.mode = UserAuthentication::kDeclared;
      o.rm.pass_interval_ms = 20;
      o.rm.sub_cluster_id = id;
      o.rm.cluster_timestamp_ms = 1'000'000 + i;  // distinct application ids
      o.tls = rm_tls_;
      o.federation_proxies = true;
      o.federation_store = store_.get();
      auto launcher = std::make_unique<FakeLauncher>();
      launchers_[i] = launcher.get();
      o.launcher = std::move(launcher);
      auto rm = RmServer::Start(std::move(o));
      ASSERT_TRUE(rm.ok()) << rm.status();
      rms_[i] = *std::move(rm);
      v1::SubClusterInfo info;
      info.set_sub_cluster_id(id);
      info.set_rm_address(rms_[i]->address());
      info.set_state(v1::SC_RUNNING);
      ASSERT_TRUE(store_->RegisterSubCluster(info).ok());
      rms_[i]->RunOnLoop([&](ResourceManager& rm) {
        EXPECT_TRUE(rm.RegisterNode(NodeRequest(i == 0 ? kNode1 : kNode2)).ok());
      });
    }
    app_a_ = SubmitThroughRouter(0, "alice");
    app_b_ = SubmitThroughRouter(1, "bob");
    WaitForAm(0, app_a_, kNode1);
    WaitForAm(1, app_b_, kNode2);
  }

  void TearDown() override {
    for (auto& rm : rms_) rm.reset();
    std::filesystem::remove_all(dir_);
  }

  security::TlsFiles Tls(DaemonRole role, const std::string& name) {
    EXPECT_TRUE(security::IssueCertificate(dir_, dir_, role, name, {}).ok());
    auto files = security::LoadTlsFiles(security::DaemonTlsPaths(dir_, role, name));
    EXPECT_TRUE(files.ok()) << files.status();
    return *files;
  }

  // ClientService of sub-cluster `sc` (0: sc1) as the daemon `as`.
  std::unique_ptr<v1::ClientService::Stub> Client(int sc, const security::TlsFiles& as) {
    return v1::ClientService::NewStub(
        grpc::CreateChannel(rms_[sc]->address(), security::TlsChannelCredentials(as)));
  }

  static void ActFor(grpc::ClientContext* ctx, const std::string& user) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    ctx->AddMetadata("weft-user", user);
  }

  // What a router does: an id, the home in the store, then the submission as the user.
  std::string SubmitThroughRouter(int sc, const std::string& user) {
    auto router = Client(sc, router_);
    grpc::ClientContext c1;
    ActFor(&c1, user);
    v1::NewApplicationResponse app;
    grpc::Status s = router->NewApplication(&c1, {}, &app);
    EXPECT_TRUE(s.ok()) << s.error_message();
    v1::ApplicationHomeSubCluster home;
    home.set_application_id(app.application_id());
    home.set_home_sub_cluster_id(absl::StrCat("sc", sc + 1));
    home.set_user(user);
    *home.mutable_submission_context() = Managed(app.application_id());
    EXPECT_TRUE(store_->AddApplicationHomeSubCluster(home).ok());
    grpc::ClientContext c2;
    ActFor(&c2, user);
    v1::SubmitApplicationRequest req;
    *req.mutable_context() = Managed(app.application_id());
    v1::SubmitApplicationResponse resp;
    s = router->SubmitApplication(&c2, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return app.application_id();
  }

  static v1::ApplicationSubmissionContext Managed(const std::string& id) {
    v1::ApplicationSubmissionContext c;
    c.set_application_id(id);
    c.set_max_app_attempts(1);
    c.mutable_am_container_spec()->add_command("sleep 100");
    return c;
  }
  static v1::ApplicationSubmissionContext Uam(const std::string& id, const std::string& home) {
    v1::ApplicationSubmissionContext c;
    c.set_application_id(id);
    c.set_unmanaged_am(true);
    c.set_max_app_attempts(1);
    c.set_federation_home_sub_cluster_id(home);
    return c;
  }

  // Bounded wait (10 s) until the app's current AM is placed on `node`.
  void WaitForAm(int sc, const std::string& app, const std::string& node) {
    std::string on;
    for (int i = 0; i < 500 && on != node; ++i) {
      rms_[sc]->RunOnLoop([&](ResourceManager& rm) {
        auto attempts = rm.GetApplicationAttempts(app);
        if (attempts.ok() && attempts->attempts_size() > 0)
          on = attempts->attempts(attempts->attempts_size() - 1).am_node_id();
      });
      if (on != node) usleep(20 * 1000);
    }
    ASSERT_EQ(on, node) << app;
  }

  grpc::Status Submit(int sc, const security::TlsFiles& as, const std::string& user,
                      const v1::ApplicationSubmissionContext& context) {
    grpc::ClientContext ctx;
    ActFor(&ctx, user);
    v1::SubmitApplicationRequest req;
    *req.mutable_context() = context;
    v1::SubmitApplicationResponse resp;
    return Client(sc, as)->SubmitApplication(&ctx, req, &resp);
  }
  grpc::Status Get(int sc, const security::TlsFiles& as, const std::string& user,
                   const std::string& app, v1::ApplicationReport* report = nullptr) {
    grpc::ClientContext ctx;
    ActFor(&ctx, user);
    v1::GetApplicationRequest req;
    req.set_application_id(app);
    v1::GetApplicationResponse resp;
    grpc::Status s = Client(sc, as)->GetApplication(&ctx, req, &resp);
    if (report != nullptr) *report = resp.report();
    return s;
  }
  grpc::Status Kill(int sc, const security::TlsFiles& as, const std::string& user,
                    const std::string& app) {
    grpc::ClientContext ctx;
    ActFor(&ctx, user);
    v1::KillApplicationRequest req;
    req.set_application_id(app);
    v1::KillApplicationResponse resp;
    return Client(sc, as)->KillApplication(&ctx, req, &resp);
  }
  bool Exists(int sc, const std::string& app) {
    bool exists = false;
    rms_[sc]->RunOnLoop([&](ResourceManager& rm) { exists = rm.GetApplication(app).ok(); });
    return exists;
  }
  v1::ApplicationState StateOf(int sc, const std::string& app) {
    v1::ApplicationState state = v1::APP_NEW;
    rms_[sc]->RunOnLoop([&](ResourceManager& rm) {
      auto r = rm.GetApplication(app);
      if (r.ok()) state = r->state();
    });
    return state;
  }

  // The AMRM token sub-cluster `sc`'s RM handed to the AM of `app` it launched last.
  v1::Token AmToken(int sc, const std::string& app) {
    v1::Token token;
    rms_[sc]->RunOnLoop([&](ResourceManager&) {
      for (const auto& [node, start] : launchers_[sc]->launches) {
        auto env = start.launch_context().environment().find("WEFT_APPLICATION_ID");
        if (env != start.launch_context().environment().end() && env->second == app) {
          EXPECT_TRUE(token.ParseFromString(start.launch_context().tokens().at("amrm")));
        }
      }
    });
    return token;
  }
  // An AM call at sub-cluster `sc`'s RM presenting `token` (as the AM library does).
  std::unique_ptr<grpc::ClientContext> AmCall(const v1::Token& token) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
    c->AddMetadata("weft-amrm-token-bin", token.SerializeAsString());
    return c;
  }
  std::unique_ptr<v1::AmService::Stub> Am(int sc) {
    return v1::AmService::NewStub(
        grpc::CreateChannel(rms_[sc]->address(), security::TlsChannelCredentials(nm1_)));
  }
  // Unregisters SUCCEEDED at sub-cluster `sc`'s RM with `token`.
  grpc::Status Finish(int sc, const v1::Token& token) {
    v1::FinishApplicationMasterRequest req;
    req.set_final_status(v1::FINAL_SUCCEEDED);
    v1::FinishApplicationMasterResponse resp;
    return Am(sc)->FinishApplicationMaster(AmCall(token).get(), req, &resp);
  }
  // The AM of `app` (its token) registers at sub-cluster `sc`'s RM and unregisters SUCCEEDED.
  grpc::Status RegisterAndFinish(int sc, const std::string& app) {
    const v1::Token token = AmToken(sc, app);
    v1::RegisterApplicationMasterResponse registered;
    grpc::Status s = Am(sc)->RegisterApplicationMaster(AmCall(token).get(), {}, &registered);
    if (!s.ok()) return s;
    return Finish(sc, token);
  }

  static void ExpectDenied(const grpc::Status& s, const std::string& peer, const std::string& call,
                           const std::string& why) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(absl::StrCat("federation daemon ", peer)));
    EXPECT_THAT(s.error_message(), HasSubstr(call));
    EXPECT_THAT(s.error_message(), HasSubstr(why));
  }

  std::string dir_;
  security::TlsFiles rm_tls_, nm1_, nm2_, router_, gpg_;
  std::unique_ptr<federation::FederationStateStore> store_;
  std::unique_ptr<RmServer> rms_[2];
  FakeLauncher* launchers_[2] = {nullptr, nullptr};  // owned by rms_; read on their loops
  std::string app_a_, app_b_;
};

TEST_F(FederationRmServerTest, TheNmOfAnAppsAmRunsItsUnmanagedAmInAnotherSubCluster) {
  // sc1's NM submits A's unmanaged AM to sc2 under A's id, reads it (with its token) and kills
  // it: what the AMRMProxy does. sc2 asked the store and sc1's RM.
  grpc::Status s = Submit(1, nm1_, "alice", Uam(app_a_, "sc1"));
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::ApplicationReport uam;
  s = Get(1, nm1_, "alice", app_a_, &uam);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(uam.unmanaged_am());
  EXPECT_EQ(uam.user(), "alice");
  EXPECT_FALSE(uam.amrm_token().identifier().empty());
  // The GPG reads it too, for alice, but never gets the token.
  v1::ApplicationReport read_by_gpg;
  s = Get(1, gpg_, "alice", app_a_, &read_by_gpg);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_TRUE(read_by_gpg.unmanaged_am());
  EXPECT_TRUE(read_by_gpg.amrm_token().identifier().empty());
  // At A's home, the NM running its AM reads A (the AMRMProxy reads its name and its end).
  s = Get(0, nm1_, "alice", app_a_);
  EXPECT_TRUE(s.ok()) << s.error_message();
  // The NM lists nodes (its locality resolver).
  grpc::ClientContext lc;
  ActFor(&lc, "alice");
  v1::ListNodesResponse nodes;
  EXPECT_TRUE(Client(1, nm1_)->ListNodes(&lc, {}, &nodes).ok());
  EXPECT_EQ(nodes.nodes_size(), 1);
  s = Kill(1, nm1_, "alice", app_a_);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(StateOf(1, app_a_), v1::APP_KILLED);
  EXPECT_NE(StateOf(0, app_a_), v1::APP_KILLED);  // the home app runs on
}

TEST_F(FederationRmServerTest, AnNmCertificateOnAnotherSubClustersRmIsNotEveryUser) {
  // The issue's attack: sc1's NM on sc2's RM kills bob's app as root, or as bob.
  ExpectDenied(Kill(1, nm1_, "root", app_b_), "nm/127.0.0.1:7001", "KillApplication",
               "never act as root");
  ExpectDenied(Kill(1, nm1_, "bob", app_b_), "nm/127.0.0.1:7001", "KillApplication",
               "this sub-cluster is the app's home");
  EXPECT_NE(StateOf(1, app_b_), v1::APP_KILLED);
  // ... or submits a UAM of alice's app as bob (a container as another user).
  ExpectDenied(Submit(1, nm1_, "bob", Uam(app_a_, "sc1")), "nm/127.0.0.1:7001", "SubmitApplication",
               "its home record names user 'alice'");
  // ... or a managed app of its own choosing, as anyone.
  v1::ApplicationSubmissionContext managed = Managed(app_a_);
  ExpectDenied(Submit(1, nm1_, "alice", managed), "nm/127.0.0.1:7001", "SubmitApplication",
               "only the unmanaged AMs");
  // sc2's own NM for alice's app: its AM is not there.
  ExpectDenied(Submit(1, nm2_, "alice", Uam(app_a_, "sc1")), "nm/127.0.0.1:7002",
               "SubmitApplication", "its current AM runs on node '127.0.0.1:7001' of 'sc1'");
  // An app homed elsewhere than where the NM claims, and whose AM is not on it: bob's B in
  // sc1 through sc1's NM.
  ExpectDenied(Submit(0, nm1_, "bob", Uam(app_b_, "sc2")), "nm/127.0.0.1:7001", "SubmitApplication",
               "its current AM runs on node '127.0.0.1:7002' of 'sc2'");
  ExpectDenied(Submit(0, nm1_, "bob", Uam(app_b_, "sc3")), "nm/127.0.0.1:7001", "SubmitApplication",
               "its home record names 'sc2'");
  // Reading bob's app at sc2 as bob: not its AM's NM.
  ExpectDenied(Get(1, nm1_, "bob", app_b_), "nm/127.0.0.1:7001", "GetApplication",
               "its current AM runs on node '127.0.0.1:7002', not on this NM");
  EXPECT_NE(StateOf(1, app_b_), v1::APP_KILLED);
  EXPECT_FALSE(Exists(1, app_a_));  // no UAM of A was made in sc2
}

TEST_F(FederationRmServerTest, OnItsOwnRmAnNmGetsNothingButItsAmsReport) {
  ExpectDenied(Kill(0, nm1_, "alice", app_a_), "nm/127.0.0.1:7001", "KillApplication",
               "this sub-cluster is the app's home");
  ExpectDenied(Get(0, nm1_, "bob", app_a_), "nm/127.0.0.1:7001", "GetApplication",
               "names user 'alice'");
  ExpectDenied(Submit(0, nm1_, "alice", Uam(app_a_, "sc1")), "nm/127.0.0.1:7001",
               "SubmitApplication", "names this sub-cluster as the app's home");
  grpc::ClientContext c1;
  ActFor(&c1, "alice");
  v1::NewApplicationResponse id;
  ExpectDenied(Client(0, nm1_)->NewApplication(&c1, {}, &id), "nm/127.0.0.1:7001", "NewApplication",
               "acts only for the app whose AM it runs");
  grpc::ClientContext c2;
  ActFor(&c2, "alice");
  v1::ListApplicationsResponse list;
  ExpectDenied(Client(0, nm1_)->ListApplications(&c2, {}, &list), "nm/127.0.0.1:7001",
               "ListApplications", "acts only for the app whose AM it runs");
  EXPECT_NE(StateOf(0, app_a_), v1::APP_KILLED);
}

TEST_F(FederationRmServerTest, RoutersAndTheGpgStayInTheirLanes) {
  // A router: ClientService for the users it authenticated, never AdminService or AmService.
  EXPECT_TRUE(Get(0, router_, "alice", app_a_).ok());
  auto admin = v1::AdminService::NewStub(
      grpc::CreateChannel(rms_[0]->address(), security::TlsChannelCredentials(router_)));
  grpc::ClientContext a1;
  ActFor(&a1, "weft");
  v1::RefreshQueuesResponse refreshed;
  ExpectDenied(admin->RefreshQueues(&a1, {}, &refreshed), "router/r1", "AdminService",
               "ClientService only");
  auto am = v1::AmService::NewStub(
      grpc::CreateChannel(rms_[0]->address(), security::TlsChannelCredentials(router_)));
  grpc::ClientContext a2;
  a2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  v1::AllocateResponse allocated;
  ExpectDenied(am->Allocate(&a2, {}, &allocated), "router/r1", "AmService", "ClientService only");
  // The GPG reads; it kills nothing and submits only moved apps as their records hold them.
  EXPECT_TRUE(Get(0, gpg_, "alice", app_a_).ok());
  ExpectDenied(Kill(0, gpg_, "alice", app_a_), "gpg/g1", "KillApplication",
               "only reads and resubmits");
  ExpectDenied(Submit(0, gpg_, "alice", Managed(app_a_)), "gpg/g1", "SubmitApplication",
               "its home never moved");
  EXPECT_NE(StateOf(0, app_a_), v1::APP_KILLED);
}

TEST_F(FederationRmServerTest, TheGpgResubmitsAMovedAppAtItsNewHomeAsItsRecordHoldsIt) {
  // sc1 was lost and the GPG moved A's home to sc2 (compare-and-set: generation 2).
  absl::StatusOr<v1::ApplicationHomeSubCluster> home = store_->GetApplicationHomeSubCluster(app_a_);
  ASSERT_TRUE(home.ok()) << home.status();
  v1::ApplicationHomeSubCluster moved = *home;
  moved.set_home_sub_cluster_id("sc2");
  ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(moved).ok());
  // Not as another user, not with another command, not at a sub-cluster that is not its home.
  ExpectDenied(Submit(1, gpg_, "bob", home->submission_context()), "gpg/g1", "SubmitApplication",
               "names user 'alice'");
  v1::ApplicationSubmissionContext changed = home->submission_context();
  changed.mutable_am_container_spec()->set_command(0, "id > /tmp/owned-by-gpg");
  ExpectDenied(Submit(1, gpg_, "alice", changed), "gpg/g1", "SubmitApplication",
               "not the one its home record holds");
  ExpectDenied(Submit(0, gpg_, "alice", home->submission_context()), "gpg/g1", "SubmitApplication",
               "names sub-cluster 'sc2', not this one ('sc1')");
  EXPECT_FALSE(Exists(1, app_a_));
  // As recorded, at its new home: submitted, as alice.
  grpc::Status s = Submit(1, gpg_, "alice", home->submission_context());
  ASSERT_TRUE(s.ok()) << s.error_message();
  v1::ApplicationReport report;
  rms_[1]->RunOnLoop([&](ResourceManager& rm) { report = *rm.GetApplication(app_a_); });
  EXPECT_EQ(report.user(), "alice");
  EXPECT_FALSE(report.unmanaged_am());
}

// A router's submission reaches an RM that is not (or no longer) the app's home - it waited in
// a stopped RM's socket while the GPG moved the app: refused there, so the app never runs in
// two sub-clusters.
TEST_F(FederationRmServerTest, ARoutersSubmissionIsTakenOnlyAtTheAppsHome) {
  auto router = Client(0, router_);
  auto new_id = [&] {
    grpc::ClientContext c;
    ActFor(&c, "alice");
    v1::NewApplicationResponse app;
    EXPECT_TRUE(router->NewApplication(&c, {}, &app).ok());
    return app.application_id();
  };
  const std::string moved = new_id();
  v1::ApplicationHomeSubCluster home;
  home.set_application_id(moved);
  home.set_home_sub_cluster_id("sc2");
  home.set_user("alice");
  *home.mutable_submission_context() = Managed(moved);
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(home).ok());
  grpc::Status s = Submit(0, router_, "alice", Managed(moved));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("homed at sub-cluster 'sc2' now, not at 'sc1'"));
  EXPECT_FALSE(Exists(0, moved));
  // No home record at all: a router writes it before it forwards, so none is a stale call.
  const std::string unrecorded = new_id();
  s = Submit(0, router_, "alice", Managed(unrecorded));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("no home record"));
  EXPECT_FALSE(Exists(0, unrecorded));
}

// An AM that unregisters at its app's home has the end written into the home record before it
// hears back, so that the GPG never resubmits an app that ended (were its sub-cluster lost
// right after); the AM of a copy whose app moved away meanwhile is refused.
TEST_F(FederationRmServerTest, AnAmsEndIsRecordedAtItsHomeAndAFencedCopysIsRefused) {
  // B moved to sc1 (sc2 was lost) while its AM in sc2 ran on: that copy may not end as done.
  absl::StatusOr<v1::ApplicationHomeSubCluster> b = store_->GetApplicationHomeSubCluster(app_b_);
  ASSERT_TRUE(b.ok()) << b.status();
  b->set_home_sub_cluster_id("sc1");
  ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(*b).ok());
  grpc::Status s = RegisterAndFinish(1, app_b_);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION) << s.error_message();
  EXPECT_THAT(s.error_message(), HasSubstr("this copy is fenced"));
  EXPECT_EQ(StateOf(1, app_b_), v1::APP_RUNNING);
  EXPECT_EQ(store_->GetApplicationHomeSubCluster(app_b_)->finished_ms(), 0);
  // A token naming A's attempt that does not verify ends nothing, in the store either.
  v1::Token forged = AmToken(0, app_a_);
  forged.set_password("forged");
  s = Finish(0, forged);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(store_->GetApplicationHomeSubCluster(app_a_)->finished_ms(), 0);
  EXPECT_NE(StateOf(0, app_a_), v1::APP_FINISHED);
  // A, at its home: the record says it ended, then the RM does.
  ASSERT_EQ(store_->GetApplicationHomeSubCluster(app_a_)->finished_ms(), 0);
  s = RegisterAndFinish(0, app_a_);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(store_->GetApplicationHomeSubCluster(app_a_)->finished_ms(), 0);
  EXPECT_EQ(StateOf(0, app_a_), v1::APP_FINISHED);
}

// A kill at an app's home is written into its home record before it completes, so that the
// GPG never resubmits an app its user killed (were the sub-cluster lost right after); a copy
// whose app moved away is killed without touching the record; a refused kill writes nothing.
TEST_F(FederationRmServerTest, AKillIsRecordedAtTheAppsHomeBeforeItCompletes) {
  // Kills as `user` through the router at sub-cluster `sc` until it completed (as YARN's
  // client asks again); the last answer.
  auto kill = [&](int sc, const std::string& user, const std::string& app) {
    grpc::Status s;
    v1::KillApplicationResponse resp;
    PollUntil(
        [&] {
          grpc::ClientContext ctx;
          ActFor(&ctx, user);
          v1::KillApplicationRequest req;
          req.set_application_id(app);
          s = Client(sc, router_)->KillApplication(&ctx, req, &resp);
          return !s.ok() || resp.kill_completed();
        },
        absl::Seconds(10), absl::Milliseconds(10));
    EXPECT_TRUE(!s.ok() || resp.kill_completed()) << "the kill never completed";
    return s;
  };
  // Bob may not kill alice's app: refused before anything is written.
  grpc::Status s = kill(0, "bob", app_a_);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(store_->GetApplicationHomeSubCluster(app_a_)->finished_ms(), 0);
  EXPECT_NE(StateOf(0, app_a_), v1::APP_KILLED);
  // Alice's kill at its home: the record says it ended, then the app does.
  s = kill(0, "alice", app_a_);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_GT(store_->GetApplicationHomeSubCluster(app_a_)->finished_ms(), 0);
  EXPECT_EQ(StateOf(0, app_a_), v1::APP_KILLED);
  // B moved to sc1 while its copy in sc2 ran on: that copy is killed as a copy, and the
  // record (B's, at its new home) keeps saying it runs.
  absl::StatusOr<v1::ApplicationHomeSubCluster> b = store_->GetApplicationHomeSubCluster(app_b_);
  ASSERT_TRUE(b.ok()) << b.status();
  b->set_home_sub_cluster_id("sc1");
  ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(*b).ok());
  s = kill(1, "bob", app_b_);
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(StateOf(1, app_b_), v1::APP_KILLED);
  v1::ApplicationReport report;
  rms_[1]->RunOnLoop([&](ResourceManager& rm) { report = *rm.GetApplication(app_b_); });
  EXPECT_THAT(report.diagnostics(), HasSubstr("homed at sub-cluster 'sc1' now"));
  b = store_->GetApplicationHomeSubCluster(app_b_);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->finished_ms(), 0);
  EXPECT_EQ(b->home_sub_cluster_id(), "sc1");
}

}  // namespace
}  // namespace weft::rm
