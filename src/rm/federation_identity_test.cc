// Copyright Weft authors. What each federation daemon may do at a sub-cluster RM (issue 27,
// "narrow federation identities"): the rules by role (CheckPeerCall), an NM's and the GPG's
// claims judged against the store's home record and the home RM's word (JudgeAppClaim, over a
// fake directory), and the grant checked again against the RM's own state (CheckGrantOnLoop).
// Each refusal says who, which call and why. The same rules over gRPC and mutual TLS:
// federation_rm_server_test.cc.
#include "rm/federation_identity.h"

#include <map>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using security::DaemonIdentity;
using security::DaemonRole;
using ::testing::AllOf;
using ::testing::HasSubstr;

const DaemonIdentity kRouter{DaemonRole::kRouter, "r1"};
const DaemonIdentity kGpg{DaemonRole::kGpg, "g1"};
const DaemonIdentity kNm1{DaemonRole::kNodeManager, "n1.sc1:8041"};  // a node of sc1
const DaemonIdentity kNm2{DaemonRole::kNodeManager, "n1.sc2:8041"};  // a node of sc2
const DaemonIdentity kRm{DaemonRole::kResourceManager, "sc1"};

// The store's home records and what each sub-cluster's RM says, as a test sets them.
class FakeDirectory final : public FederationDirectory {
 public:
  absl::StatusOr<v1::ApplicationHomeSubCluster> GetApplicationHome(
      const std::string& app_id) override {
    if (!store_error.ok()) return store_error;
    auto it = homes.find(app_id);
    if (it == homes.end()) return absl::NotFoundError(absl::StrCat("no home for ", app_id));
    return it->second;
  }
  absl::StatusOr<HomeAppFacts> AskHome(const std::string& sub_cluster_id,
                                       const std::string& app_id) override {
    asked.push_back(sub_cluster_id);
    auto it = facts.find({sub_cluster_id, app_id});
    if (it == facts.end()) return absl::NotFoundError(absl::StrCat(app_id, " is not known"));
    return it->second;
  }

  void Home(const std::string& app, const std::string& sc, const std::string& user,
            int64_t generation = 1) {
    v1::ApplicationHomeSubCluster h;
    h.set_application_id(app);
    h.set_home_sub_cluster_id(sc);
    h.set_user(user);
    h.set_generation(generation);
    *h.mutable_submission_context() = Managed(app);
    homes[app] = h;
  }
  void Runs(const std::string& sc, const std::string& app, const std::string& user,
            const std::string& am_node) {
    facts[{sc, app}] = HomeAppFacts{user, false, false, am_node};
  }
  static v1::ApplicationSubmissionContext Managed(const std::string& app) {
    v1::ApplicationSubmissionContext c;
    c.set_application_id(app);
    c.set_queue("default");
    c.mutable_am_container_spec()->add_command("sleep 100");
    return c;
  }

  std::map<std::string, v1::ApplicationHomeSubCluster> homes;
  std::map<std::pair<std::string, std::string>, HomeAppFacts> facts;
  absl::Status store_error;
  std::vector<std::string> asked;
};

v1::ApplicationSubmissionContext Uam(const std::string& app, const std::string& home) {
  v1::ApplicationSubmissionContext c;
  c.set_application_id(app);
  c.set_unmanaged_am(true);
  c.set_max_app_attempts(1);
  c.set_federation_home_sub_cluster_id(home);
  return c;
}

Caller As(const std::string& user, const DaemonIdentity& peer) {
  Caller c;
  c.user = user;
  c.real_user = peer.ToString();
  c.root = user == "root";
  return c;
}

AppClaim Claim(const DaemonIdentity& peer, RmCall call, const std::string& app,
               const std::string& user, const std::string& self,
               const v1::ApplicationSubmissionContext* submission = nullptr) {
  AppClaim c;
  c.peer = peer;
  c.call = call;
  c.app_id = app;
  c.caller = As(user, peer);
  c.submission = submission;
  c.self_sub_cluster_id = self;
  c.local_uam_home = [] { return std::string(); };
  return c;
}

void ExpectDenied(const absl::Status& s, const std::string& peer, absl::string_view call,
                  const std::string& why) {
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied) << s;
  EXPECT_THAT(s.message(), AllOf(HasSubstr(absl::StrCat("federation daemon ", peer)),
                                 HasSubstr(std::string(call)), HasSubstr(why)));
}

TEST(CheckPeerCallTest, EachRoleGetsOnlyWhatItNeeds) {
  // A router acts for users on ClientService, nowhere else.
  for (RmCall call : {RmCall::kNewApplication, RmCall::kSubmitApplication, RmCall::kKillApplication,
                      RmCall::kListApplications, RmCall::kGetQueue}) {
    EXPECT_EQ(*CheckPeerCall(kRouter, call), PeerAccess::kActsForUser) << RmCallName(call);
  }
  ExpectDenied(CheckPeerCall(kRouter, RmCall::kAdminService).status(), "router/r1", "AdminService",
               "ClientService only");
  ExpectDenied(CheckPeerCall(kRouter, RmCall::kAmService).status(), "router/r1", "AmService",
               "ClientService only");
  // The GPG reads, and its submissions are judged against the home record.
  EXPECT_EQ(*CheckPeerCall(kGpg, RmCall::kGetApplication), PeerAccess::kActsForUser);
  EXPECT_EQ(*CheckPeerCall(kGpg, RmCall::kGetClusterMetrics), PeerAccess::kActsForUser);
  EXPECT_EQ(*CheckPeerCall(kGpg, RmCall::kSubmitApplication), PeerAccess::kAppCheck);
  for (RmCall call : {RmCall::kKillApplication, RmCall::kNewApplication, RmCall::kAdminService,
                      RmCall::kAmService}) {
    ExpectDenied(CheckPeerCall(kGpg, call).status(), "gpg/g1", RmCallName(call),
                 "only reads and resubmits");
  }
  // An NM: its AMRMProxy's AmService calls (token), node lists, and claims about one app.
  EXPECT_EQ(*CheckPeerCall(kNm1, RmCall::kAmService), PeerAccess::kPlainClient);
  EXPECT_EQ(*CheckPeerCall(kNm1, RmCall::kListNodes), PeerAccess::kActsForUser);
  for (RmCall call :
       {RmCall::kSubmitApplication, RmCall::kGetApplication, RmCall::kKillApplication})
    EXPECT_EQ(*CheckPeerCall(kNm1, call), PeerAccess::kAppCheck) << RmCallName(call);
  for (RmCall call : {RmCall::kNewApplication, RmCall::kListApplications,
                      RmCall::kGetApplicationAttempts, RmCall::kGetQueue, RmCall::kAdminService}) {
    ExpectDenied(CheckPeerCall(kNm1, call).status(), "nm/n1.sc1:8041", RmCallName(call),
                 "acts only for the app whose AM it runs");
  }
  // Another RM reads apps (to check an NM's claim); anything else is a plain client's.
  EXPECT_EQ(*CheckPeerCall(kRm, RmCall::kGetApplication), PeerAccess::kFederationReader);
  EXPECT_EQ(*CheckPeerCall(kRm, RmCall::kGetApplicationAttempts), PeerAccess::kFederationReader);
  EXPECT_EQ(*CheckPeerCall(kRm, RmCall::kKillApplication), PeerAccess::kPlainClient);
}

class JudgeAppClaimTest : public ::testing::Test {
 protected:
  JudgeAppClaimTest() {
    // Alice's app A is homed in sc1, its AM on sc1's node n1; bob's B in sc2, AM on sc2's n1.
    dir_.Home("A", "sc1", "alice");
    dir_.Runs("sc1", "A", "alice", kNm1.name);
    dir_.Home("B", "sc2", "bob");
    dir_.Runs("sc2", "B", "bob", kNm2.name);
  }
  FakeDirectory dir_;
};

TEST_F(JudgeAppClaimTest, TheNmOfAnAppsAmRunsItsUnmanagedAmInASecondary) {
  const v1::ApplicationSubmissionContext uam = Uam("A", "sc1");
  for (RmCall call :
       {RmCall::kSubmitApplication, RmCall::kGetApplication, RmCall::kKillApplication}) {
    absl::StatusOr<FederationGrant> g =
        JudgeAppClaim(Claim(kNm1, call, "A", "alice", "sc2", &uam), dir_);
    ASSERT_TRUE(g.ok()) << RmCallName(call) << ": " << g.status();
    EXPECT_EQ(g->scope, FederationGrant::Scope::kUam);
    EXPECT_EQ(g->home_sub_cluster_id, "sc1");
    EXPECT_EQ(g->user, "alice");
  }
  EXPECT_THAT(dir_.asked, ::testing::Each("sc1"));  // the home is asked, every time
}

TEST_F(JudgeAppClaimTest, AnNmActingForAnotherUserIsRefused) {
  // On another sub-cluster's RM, for alice's app as bob (the attack: another user's name).
  const v1::ApplicationSubmissionContext uam = Uam("A", "sc1");
  ExpectDenied(JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "bob", "sc2", &uam), dir_)
                   .status(),
               "nm/n1.sc1:8041", "SubmitApplication", "its home record names user 'alice'");
  // Without a home record the home RM's word decides, and it names the owner.
  dir_.homes.erase("A");
  ExpectDenied(JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "bob", "sc2", &uam), dir_)
                   .status(),
               "nm/n1.sc1:8041", "SubmitApplication", "says it is user 'alice''s");
}

TEST_F(JudgeAppClaimTest, AnNmActsForNoAppWhoseAmRunsElsewhere) {
  // bob's B, homed in sc2 and its AM on sc2's node: sc1's NM may not run, read or kill its UAM
  // in sc3, even claiming the right home and user.
  const v1::ApplicationSubmissionContext uam = Uam("B", "sc2");
  for (RmCall call :
       {RmCall::kSubmitApplication, RmCall::kGetApplication, RmCall::kKillApplication}) {
    ExpectDenied(JudgeAppClaim(Claim(kNm1, call, "B", "bob", "sc3", &uam), dir_).status(),
                 "nm/n1.sc1:8041", RmCallName(call),
                 "its current AM runs on node 'n1.sc2:8041' of 'sc2', not on this NM");
  }
  // Claiming another home than the record's.
  const v1::ApplicationSubmissionContext lie = Uam("B", "sc1");
  ExpectDenied(JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "B", "bob", "sc3", &lie), dir_)
                   .status(),
               "nm/n1.sc1:8041", "SubmitApplication",
               "names 'sc1' as the app's home but its home record names 'sc2'");
  // An app its claimed home does not know.
  const v1::ApplicationSubmissionContext ghost = Uam("C", "sc1");
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "C", "alice", "sc2", &ghost), dir_)
          .status(),
      "nm/n1.sc1:8041", "SubmitApplication", "its home sub-cluster 'sc1' does not know it");
  // An attempt with no AM node yet, an app that ended (no new UAM), an unmanaged "home".
  dir_.Runs("sc1", "A", "alice", "");
  const v1::ApplicationSubmissionContext a = Uam("A", "sc1");
  ExpectDenied(JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &a), dir_)
                   .status(),
               "nm/n1.sc1:8041", "SubmitApplication", "has no AM node yet");
  dir_.facts[{"sc1", "A"}] = HomeAppFacts{"alice", false, true, kNm1.name};
  ExpectDenied(JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &a), dir_)
                   .status(),
               "nm/n1.sc1:8041", "SubmitApplication", "it has ended");
  dir_.facts[{"sc1", "A"}] = HomeAppFacts{"alice", true, false, kNm1.name};
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kGetApplication, "A", "alice", "sc2"), dir_).status(),
      "nm/n1.sc1:8041", "GetApplication", "runs it as an unmanaged AM");
}

TEST_F(JudgeAppClaimTest, AnNmSubmitsOnlyUnmanagedAmsOfItsAppUnderItsId) {
  v1::ApplicationSubmissionContext managed = FakeDirectory::Managed("A");
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &managed), dir_)
          .status(),
      "nm/n1.sc1:8041", "SubmitApplication", "only the unmanaged AMs");
  v1::ApplicationSubmissionContext no_home = Uam("A", "");
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &no_home), dir_)
          .status(),
      "nm/n1.sc1:8041", "SubmitApplication", "names no federation_home_sub_cluster_id");
  // The claim's app is the submission's.
  v1::ApplicationSubmissionContext other = Uam("B", "sc1");
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &other), dir_)
          .status(),
      "nm/n1.sc1:8041", "SubmitApplication", "names application 'B'");
}

TEST_F(JudgeAppClaimTest, OnItsOwnSubClustersRmAnNmOnlyReadsItsAmsApp) {
  // sc1 is A's home: its NM may read A (checked against the RM's own state on the loop) but
  // neither kill it nor submit anything there.
  absl::StatusOr<FederationGrant> read =
      JudgeAppClaim(Claim(kNm1, RmCall::kGetApplication, "A", "alice", "sc1"), dir_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->scope, FederationGrant::Scope::kHomeRead);
  EXPECT_TRUE(dir_.asked.empty());
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kKillApplication, "A", "alice", "sc1"), dir_).status(),
      "nm/n1.sc1:8041", "KillApplication", "this sub-cluster is the app's home");
  const v1::ApplicationSubmissionContext self = Uam("A", "sc1");
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc1", &self), dir_)
          .status(),
      "nm/n1.sc1:8041", "SubmitApplication", "names this sub-cluster as the app's home");
  // Acting for another user on its own RM: the record's user decides first.
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kKillApplication, "A", "bob", "sc1"), dir_).status(),
      "nm/n1.sc1:8041", "KillApplication", "names user 'alice'");
  // Without a record or a UAM here, a kill is refused; a read is the home read.
  ExpectDenied(
      JudgeAppClaim(Claim(kNm1, RmCall::kKillApplication, "X", "bob", "sc1"), dir_).status(),
      "nm/n1.sc1:8041", "KillApplication", "this sub-cluster is the app's home");
}

TEST_F(JudgeAppClaimTest, AUamWithoutAHomeRecordIsJudgedByTheHomeItNamed) {
  // Submitted straight to sc1's RM (no router, no record): the UAM in sc2 names sc1.
  dir_.homes.erase("A");
  AppClaim kill = Claim(kNm1, RmCall::kKillApplication, "A", "alice", "sc2");
  kill.local_uam_home = [] { return std::string("sc1"); };
  absl::StatusOr<FederationGrant> g = JudgeAppClaim(kill, dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->home_sub_cluster_id, "sc1");
  AppClaim by_nm2 = kill;
  by_nm2.peer = kNm2;
  ExpectDenied(JudgeAppClaim(by_nm2, dir_).status(), "nm/n1.sc2:8041", "KillApplication",
               "not on this NM");
}

TEST_F(JudgeAppClaimTest, RootOnlyWhereTheRmAllowsRootApps) {
  dir_.Home("R", "sc1", "root");
  dir_.Runs("sc1", "R", "root", kNm1.name);
  const v1::ApplicationSubmissionContext uam = Uam("R", "sc1");
  AppClaim claim = Claim(kNm1, RmCall::kKillApplication, "R", "root", "sc2", &uam);
  ExpectDenied(JudgeAppClaim(claim, dir_).status(), "nm/n1.sc1:8041", "KillApplication",
               "never act as root unless the RM allows root apps");
  claim.root_allowed = true;
  EXPECT_TRUE(JudgeAppClaim(claim, dir_).ok());
  // Allowed or not, only for root's own apps.
  claim.app_id = "A";
  ExpectDenied(JudgeAppClaim(claim, dir_).status(), "nm/n1.sc1:8041", "KillApplication",
               "names user 'alice'");
}

TEST_F(JudgeAppClaimTest, StoreAndHomeFailuresAreUnavailableNotAnAnswer) {
  const v1::ApplicationSubmissionContext uam = Uam("A", "sc1");
  dir_.store_error = absl::UnavailableError("database is locked");
  absl::Status s =
      JudgeAppClaim(Claim(kNm1, RmCall::kSubmitApplication, "A", "alice", "sc2", &uam), dir_)
          .status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("database is locked"));
}

TEST_F(JudgeAppClaimTest, TheGpgResubmitsOnlyWhatTheHomeRecordHolds) {
  // A moved from lost sc1 to sc2 (generation 2): the GPG submits the recorded context there.
  dir_.Home("A", "sc2", "alice", /*generation=*/2);
  const v1::ApplicationSubmissionContext recorded = FakeDirectory::Managed("A");
  AppClaim claim = Claim(kGpg, RmCall::kSubmitApplication, "A", "alice", "sc2", &recorded);
  absl::StatusOr<FederationGrant> g = JudgeAppClaim(claim, dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->scope, FederationGrant::Scope::kAsUser);
  // Another command, user, home or a home that never moved: refused.
  v1::ApplicationSubmissionContext changed = recorded;
  changed.mutable_am_container_spec()->set_command(0, "id > /tmp/owned");
  AppClaim c1 = claim;
  c1.submission = &changed;
  ExpectDenied(JudgeAppClaim(c1, dir_).status(), "gpg/g1", "SubmitApplication",
               "not the one its home record holds");
  AppClaim c2 = claim;
  c2.caller = As("bob", kGpg);
  ExpectDenied(JudgeAppClaim(c2, dir_).status(), "gpg/g1", "SubmitApplication",
               "names user 'alice'");
  AppClaim c3 = claim;
  c3.self_sub_cluster_id = "sc3";
  ExpectDenied(JudgeAppClaim(c3, dir_).status(), "gpg/g1", "SubmitApplication",
               "names sub-cluster 'sc2', not this one ('sc3')");
  dir_.Home("A", "sc2", "alice", /*generation=*/1);
  ExpectDenied(JudgeAppClaim(claim, dir_).status(), "gpg/g1", "SubmitApplication",
               "its home never moved");
  dir_.homes.erase("A");
  ExpectDenied(JudgeAppClaim(claim, dir_).status(), "gpg/g1", "SubmitApplication",
               "no home record");
}

TEST(FederationCallerTest, TheActingUsersRootnessComesFromItsUid) {
  ClientAuthOptions o;
  o.mode = UserAuthentication::kMunge;
  o.rm_user = "weft";
  Presented p;
  p.federation_peer = "nm/n1.sc1:8041";
  p.declared_user = "root";
  absl::StatusOr<Caller> root = AuthenticateClient(o, p);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_TRUE(root->root);
  EXPECT_EQ(root->real_user, "nm/n1.sc1:8041");
  p.declared_user = "nobody";
  absl::StatusOr<Caller> nobody = AuthenticateClient(o, p);
  ASSERT_TRUE(nobody.ok()) << nobody.status();
  EXPECT_FALSE(nobody->root);
  // Where users are declared (tests), the name says it.
  o.mode = UserAuthentication::kDeclared;
  p.declared_user = "root";
  EXPECT_TRUE(AuthenticateClient(o, p)->root);
}

// Step 3 against a real RM's state: the grant holds only for what the RM runs now.
TEST(CheckGrantOnLoopTest, TheRmsOwnStateHasTheLastWord) {
  RmHarness h;
  h.AddNode(kNm1.name);
  const std::string managed = h.Submit("alice");
  h.loop.Advance(500);  // its AM is placed on the only node
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  auto grant = [&](FederationGrant::Scope scope, RmCall call, const std::string& app,
                   const std::string& user, const DaemonIdentity& peer) {
    FederationGrant g;
    g.scope = scope;
    g.peer = peer;
    g.call = call;
    g.app_id = app;
    g.user = user;
    return g;
  };
  using Scope = FederationGrant::Scope;
  // The home read: the NM that runs the AM, for the app's owner.
  EXPECT_TRUE(CheckGrantOnLoop(
                  grant(Scope::kHomeRead, RmCall::kGetApplication, managed, "alice", kNm1), h.rm())
                  .ok());
  ExpectDenied(
      CheckGrantOnLoop(grant(Scope::kHomeRead, RmCall::kGetApplication, managed, "alice", kNm2),
                       h.rm()),
      "nm/n1.sc2:8041", "GetApplication",
      "its current AM runs on node 'n1.sc1:8041', not on this NM");
  ExpectDenied(CheckGrantOnLoop(
                   grant(Scope::kHomeRead, RmCall::kGetApplication, managed, "bob", kNm1), h.rm()),
               "nm/n1.sc1:8041", "GetApplication", "it is user 'alice''s");
  // A UAM grant never reaches a managed app of the same id (an NM killing a managed app).
  ExpectDenied(CheckGrantOnLoop(
                   grant(Scope::kUam, RmCall::kKillApplication, managed, "alice", kNm1), h.rm()),
               "nm/n1.sc1:8041", "KillApplication", "it is a managed app here");
  // The unmanaged AM of its user: yes; another user's: no; a new one: yes; unknown: NotFound.
  auto id = h.rm().NewApplication();
  v1::ApplicationSubmissionContext uam = Uam(id->application_id(), "sc9");
  Caller alice;
  alice.user = alice.real_user = "alice";
  ASSERT_TRUE(h.rm().SubmitApplication(uam, alice).ok());
  EXPECT_TRUE(
      CheckGrantOnLoop(
          grant(Scope::kUam, RmCall::kKillApplication, id->application_id(), "alice", kNm1), h.rm())
          .ok());
  ExpectDenied(
      CheckGrantOnLoop(
          grant(Scope::kUam, RmCall::kKillApplication, id->application_id(), "bob", kNm1), h.rm()),
      "nm/n1.sc1:8041", "KillApplication", "is user 'alice''s");
  EXPECT_TRUE(
      CheckGrantOnLoop(
          grant(Scope::kUam, RmCall::kSubmitApplication, "application_1_9", "alice", kNm1), h.rm())
          .ok());
  EXPECT_EQ(
      CheckGrantOnLoop(
          grant(Scope::kUam, RmCall::kGetApplication, "application_1_9", "alice", kNm1), h.rm())
          .code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::rm
