// Copyright Weft authors. The GPG over the memory store and fake sub-cluster RMs.
#include "federation/gpg/global_policy_generator.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "federation/router/testing/forwarding_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::federation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr int64_t kNow = 1'800'000'000'000;

v1::SubClusterInfo Member(const std::string& id, int64_t available_mb, int64_t heard_ms = kNow,
                          v1::SubClusterState state = v1::SC_RUNNING) {
  v1::SubClusterInfo sc;
  sc.set_sub_cluster_id(id);
  sc.set_rm_address(absl::StrCat(id, ":8032"));
  sc.set_state(state);
  sc.set_last_start_ms(heard_ms);
  sc.set_last_heartbeat_ms(heard_ms);
  (*sc.mutable_available()->mutable_values())["memory-mb"] = available_mb;
  (*sc.mutable_capability()->mutable_values())["memory-mb"] = 100000;
  return sc;
}

class FakeRms : public SubClusterRms {
 public:
  absl::StatusOr<v1::ApplicationReport> GetApplication(const v1::SubClusterInfo& sc,
                                                       const std::string& user,
                                                       const std::string& app_id) override {
    asked.push_back(absl::StrCat(sc.sub_cluster_id(), "/", user, "/", app_id));
    if (auto f = failing.find(sc.sub_cluster_id()); f != failing.end()) return f->second;
    if (auto at = reports_at.find(absl::StrCat(sc.sub_cluster_id(), "/", app_id));
        at != reports_at.end())
      return at->second;
    auto it = reports.find(app_id);
    if (it == reports.end()) return absl::NotFoundError(app_id);
    return it->second;
  }
  absl::Status SubmitApplication(const v1::SubClusterInfo& sc, const std::string& user,
                                 const v1::ApplicationSubmissionContext& context) override {
    if (!submit_status.ok()) return submit_status;
    submitted.push_back(absl::StrCat(context.application_id(), " -> ", sc.sub_cluster_id(), " as ",
                                     user));
    return absl::OkStatus();
  }
  std::map<std::string, v1::ApplicationReport> reports;     // by app id, at any sub-cluster
  std::map<std::string, v1::ApplicationReport> reports_at;  // by "<sub-cluster>/<app id>"
  std::map<std::string, absl::Status> failing;               // by sub-cluster id: every ask
  std::vector<std::string> asked;
  std::vector<std::string> submitted;
  absl::Status submit_status;
};

class GpgTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenFederationStore("memory:");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }
  void Register(const v1::SubClusterInfo& sc) { ASSERT_TRUE(store_->RegisterSubCluster(sc).ok()); }
  v1::SubClusterPolicyConfiguration Policy(const std::string& queue) {
    auto p = store_->GetPolicyConfiguration(queue);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : v1::SubClusterPolicyConfiguration();
  }
  std::unique_ptr<FederationStateStore> store_;
  FakeRms rms_;
};

TEST(HeadroomWeightsTest, ProportionalToHeadroomZeroForDrainedSilentAndLost) {
  std::vector<v1::SubClusterInfo> m = {Member("a", 3000), Member("b", 1000), Member("c", 5000),
                                       Member("d", 9000, kNow - 60000),
                                       Member("e", 9000, kNow, v1::SC_LOST)};
  auto w = HeadroomWeights(m, kNow, 30000, {"c"});
  EXPECT_DOUBLE_EQ(w["a"], 0.75);
  EXPECT_DOUBLE_EQ(w["b"], 0.25);
  EXPECT_EQ(w["c"], 0);  // drained
  EXPECT_EQ(w["d"], 0);  // silent past the expiry
  EXPECT_EQ(w["e"], 0);  // lost
  EXPECT_EQ(w.size(), 5u);
  // No headroom anywhere: usable ones share equally.
  auto even = HeadroomWeights({Member("a", 0), Member("b", 0)}, kNow, 30000, {});
  EXPECT_DOUBLE_EQ(even["a"], 0.5);
  EXPECT_DOUBLE_EQ(even["b"], 0.5);
  // None usable: all 0.
  auto none = HeadroomWeights({Member("a", 10, kNow - 60000)}, kNow, 30000, {});
  EXPECT_EQ(none["a"], 0);
}

TEST_F(GpgTest, MarksSilentSubClustersLostAndPublishesHeadroomWeights) {
  Register(Member("sc1", 6000));
  Register(Member("sc2", 2000));
  Register(Member("sc3", 2000, kNow - 31000));
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty()) << round.errors.front();
  EXPECT_THAT(round.marked_lost, ElementsAre("sc3"));
  EXPECT_EQ(store_->GetSubCluster("sc3")->state(), v1::SC_LOST);
  // No configuration existed: "*" is written with the default policies and the weights.
  v1::SubClusterPolicyConfiguration all = Policy("*");
  EXPECT_EQ(all.router_policy(), "weighted-random");
  EXPECT_EQ(all.amrm_policy(), "locality-multicast");
  EXPECT_DOUBLE_EQ(all.router_weights().at("sc1"), 0.75);
  EXPECT_DOUBLE_EQ(all.amrm_weights().at("sc2"), 0.25);
  EXPECT_EQ(all.router_weights().at("sc3"), 0);
  EXPECT_EQ(all.published_by(), "gpg/gpg");
  EXPECT_EQ(all.published_ms(), kNow);
  // Nothing moved: nothing is rewritten.
  EXPECT_EQ(gpg.RunOnce(kNow + 1000).policies_published, 0);
  EXPECT_EQ(Policy("*").published_ms(), kNow);
}

// A client that died between NewApplication and SubmitApplication leaves an issued id; the
// GPG forgets it once the routers would refuse it anyway (their issued-id TTL).
TEST_F(GpgTest, IssuedIdsNeverSubmittedAreRemovedAfterTheirTtl) {
  Register(Member("sc1", 8000, kNow));
  for (const auto& [id, issued_ms] : std::vector<std::pair<std::string, int64_t>>{
           {"application_1700000000000_0001", kNow - 7200 * 1000},
           {"application_1700000000000_0002", kNow - 60 * 1000}}) {
    v1::IssuedApplicationId issued;
    issued.set_application_id(id);
    issued.set_user("alice");
    issued.set_issued_ms(issued_ms);
    issued.set_router_id("r1");
    issued.set_sub_cluster_id("sc1");
    ASSERT_TRUE(store_->AddIssuedApplicationId(issued).ok());
  }
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_EQ(round.issued_ids_removed, 1);
  EXPECT_TRUE(absl::IsNotFound(
      store_->GetIssuedApplicationId("application_1700000000000_0001").status()));
  EXPECT_TRUE(store_->GetIssuedApplicationId("application_1700000000000_0002").ok());
}

TEST_F(GpgTest, ADrainedSubClusterGetsWeightZeroUnderEveryPolicyKind) {
  Register(Member("sc1", 4000));
  Register(Member("sc2", 4000));
  v1::SubClusterPolicyConfiguration ranked;
  ranked.set_queue("ranked");
  ranked.set_router_policy("priority");
  ranked.set_amrm_policy("home-only");
  (*ranked.mutable_router_weights())["sc1"] = 5;
  (*ranked.mutable_router_weights())["sc2"] = 9;
  ASSERT_TRUE(store_->SetPolicyConfiguration(ranked).ok());
  GpgOptions o;
  o.drained = {"sc2"};
  GlobalPolicyGenerator gpg(o, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty());
  v1::SubClusterPolicyConfiguration after = Policy("ranked");
  // A ranking keeps the operator's weights, except the drained sub-cluster's.
  EXPECT_EQ(after.router_weights().at("sc1"), 5);
  EXPECT_EQ(after.router_weights().at("sc2"), 0);
  EXPECT_EQ(after.amrm_weights().at("sc1"), 1);  // empty map: every sub-cluster weighed 1
  EXPECT_EQ(after.amrm_weights().at("sc2"), 0);
  EXPECT_EQ(after.router_policy(), "priority");  // the policies themselves are the operator's
}

// Issue 27: the GPG's round replaced the operator's weights with headroom weights, and a
// sub-cluster once gated to 0 (LOST) never got its ranking back.
TEST_F(GpgTest, OperatorWeightsSurviveRoundsAndALostSubClusterGetsItsWeightBack) {
  Register(Member("sc1", 6000));
  Register(Member("sc2", 2000));
  v1::SubClusterPolicyConfiguration weighted;  // as `weft federation policy set` writes it
  weighted.set_queue("weighted");
  weighted.set_router_policy("weighted-random");
  weighted.set_amrm_policy("home-only");
  (*weighted.mutable_operator_router_weights())["sc1"] = 1;
  (*weighted.mutable_operator_router_weights())["sc2"] = 3;
  *weighted.mutable_router_weights() = weighted.operator_router_weights();
  weighted.set_published_by("admin/ops");
  ASSERT_TRUE(store_->SetPolicyConfiguration(weighted).ok());
  v1::SubClusterPolicyConfiguration ranked;  // written before operator weights existed
  ranked.set_queue("ranked");
  ranked.set_router_policy("priority");
  ranked.set_amrm_policy("home-only");
  (*ranked.mutable_router_weights())["sc1"] = 5;
  (*ranked.mutable_router_weights())["sc2"] = 9;
  ranked.set_published_by("admin/ops");
  ASSERT_TRUE(store_->SetPolicyConfiguration(ranked).ok());

  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  ASSERT_TRUE(round.errors.empty()) << round.errors.front();
  // Headroom 0.75 / 0.25 times the operator's 1 / 3: even.
  v1::SubClusterPolicyConfiguration w = Policy("weighted");
  EXPECT_DOUBLE_EQ(w.router_weights().at("sc1"), 0.5);
  EXPECT_DOUBLE_EQ(w.router_weights().at("sc2"), 0.5);
  EXPECT_EQ(w.operator_router_weights().at("sc1"), 1);
  EXPECT_EQ(w.operator_router_weights().at("sc2"), 3);
  EXPECT_EQ(Policy("ranked").operator_router_weights().at("sc2"), 9);  // adopted, kept

  // sc2 falls silent and is LOST: gated to 0 in both.
  ASSERT_TRUE(store_->SubClusterHeartbeat(Member("sc1", 6000, kNow + 40000)).ok());
  round = gpg.RunOnce(kNow + 40000);
  EXPECT_THAT(round.marked_lost, ElementsAre("sc2"));
  EXPECT_EQ(Policy("ranked").router_weights().at("sc2"), 0);
  EXPECT_EQ(Policy("weighted").router_weights().at("sc2"), 0);
  // It returns: the operator's ranking is back, not stuck at 0.
  ASSERT_TRUE(store_->SubClusterHeartbeat(Member("sc1", 6000, kNow + 50000)).ok());
  ASSERT_TRUE(store_->SubClusterHeartbeat(Member("sc2", 2000, kNow + 50000)).ok());
  round = gpg.RunOnce(kNow + 50000);
  ASSERT_TRUE(round.errors.empty()) << round.errors.front();
  v1::SubClusterPolicyConfiguration r = Policy("ranked");
  EXPECT_EQ(r.router_weights().at("sc1"), 5);
  EXPECT_EQ(r.router_weights().at("sc2"), 9);
  EXPECT_EQ(r.operator_router_weights().at("sc1"), 5);
  EXPECT_DOUBLE_EQ(Policy("weighted").router_weights().at("sc2"), 0.5);
  EXPECT_EQ(Policy("weighted").operator_router_weights().at("sc2"), 3);
}

// A GPG round that read a configuration before an operator changed it loses its write.
TEST_F(GpgTest, AnOperatorsWriteBetweenTheGpgsReadAndWriteWins) {
  Register(Member("sc1", 6000));
  Register(Member("sc2", 2000));
  v1::SubClusterPolicyConfiguration q;
  q.set_queue("q");
  q.set_router_policy("weighted-random");
  q.set_amrm_policy("home-only");
  ASSERT_TRUE(store_->SetPolicyConfiguration(q).ok());
  v1::SubClusterPolicyConfiguration stale = Policy("q");  // what a GPG read
  v1::SubClusterPolicyConfiguration op = stale;
  (*op.mutable_operator_router_weights())["sc1"] = 7;
  ASSERT_TRUE(store_->SetPolicyConfiguration(op).ok());
  (*stale.mutable_router_weights())["sc1"] = 0.75;
  EXPECT_TRUE(absl::IsAborted(store_->SetPolicyConfiguration(stale)));
  EXPECT_EQ(Policy("q").operator_router_weights().at("sc1"), 7);
}

TEST_F(GpgTest, RemovesHomesOfAppsThatEndedLongerAgoThanTheRetention) {
  Register(Member("sc1", 4000));
  for (const char* app : {"application_1_0001", "application_1_0002", "application_1_0003",
                          "application_1_0004"}) {
    v1::ApplicationHomeSubCluster home;
    home.set_application_id(app);
    home.set_home_sub_cluster_id("sc1");
    home.set_user("alice");
    home.set_create_time_ms(kNow - 3'600'000);
    ASSERT_TRUE(store_->AddApplicationHomeSubCluster(home).ok());
  }
  v1::ApplicationReport old_done;
  old_done.set_state(v1::APP_FINISHED);
  old_done.set_finish_time_ms(kNow - 700'000);
  v1::ApplicationReport new_done = old_done;
  new_done.set_finish_time_ms(kNow - 1000);
  v1::ApplicationReport running;
  running.set_state(v1::APP_RUNNING);
  rms_.reports["application_1_0001"] = old_done;
  rms_.reports["application_1_0002"] = new_done;
  rms_.reports["application_1_0003"] = running;
  // application_1_0004: its RM does not know it (never forwarded), an hour ago.
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_EQ(round.mappings_removed, 2);
  auto left = store_->GetApplicationsHomeSubCluster("");
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 2u);
  EXPECT_EQ((*left)[0].application_id(), "application_1_0002");
  EXPECT_EQ((*left)[1].application_id(), "application_1_0003");
  EXPECT_THAT(rms_.asked.front(), HasSubstr("sc1/alice/"));  // asked as the app's user
}

TEST_F(GpgTest, AppsOfALostHomeAreResubmittedOnlyWhenTheirQueueSaysSo) {
  Register(Member("sc1", 4000, kNow - 60000));  // goes silent: LOST this round
  Register(Member("sc2", 4000));
  v1::SubClusterPolicyConfiguration resubmit;
  resubmit.set_queue("prod");
  resubmit.set_router_policy("uniform");
  resubmit.set_amrm_policy("home-only");
  resubmit.set_resubmit_on_sub_cluster_loss(true);
  ASSERT_TRUE(store_->SetPolicyConfiguration(resubmit).ok());
  for (const auto& [app, queue] : std::vector<std::pair<std::string, std::string>>{
           {"application_1_0001", "prod"}, {"application_1_0002", "adhoc"}}) {
    v1::ApplicationHomeSubCluster home;
    home.set_application_id(app);
    home.set_home_sub_cluster_id("sc1");
    home.set_queue(queue);
    home.set_user("alice");
    home.set_create_time_ms(kNow);
    home.mutable_submission_context()->set_application_id(app);
    home.mutable_submission_context()->set_queue(queue);
    ASSERT_TRUE(store_->AddApplicationHomeSubCluster(home).ok());
  }
  // The new home refuses at first: the home has moved (compare-and-set first), and the next
  // round, finding that its new home's RM does not know it, submits it there.
  rms_.submit_status = absl::UnavailableError("sc2 is restarting");
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound first = gpg.RunOnce(kNow);
  EXPECT_THAT(first.marked_lost, ElementsAre("sc1"));
  EXPECT_TRUE(first.resubmitted.empty());
  ASSERT_FALSE(first.errors.empty());
  EXPECT_THAT(first.errors.back(), HasSubstr("sc2 is restarting"));
  EXPECT_THAT(first.errors.back(), HasSubstr("retried next round"));
  auto moved = store_->GetApplicationHomeSubCluster("application_1_0001");
  ASSERT_TRUE(moved.ok());
  EXPECT_EQ(moved->home_sub_cluster_id(), "sc2");
  EXPECT_EQ(moved->generation(), 2);
  rms_.submit_status = absl::OkStatus();
  GpgRound second = gpg.RunOnce(kNow + 1000);
  EXPECT_THAT(second.resubmitted, ElementsAre("application_1_0001 -> sc2"));
  EXPECT_THAT(rms_.submitted, ElementsAre("application_1_0001 -> sc2 as alice"));
  EXPECT_EQ(store_->GetApplicationHomeSubCluster("application_1_0001")->generation(), 2);
  // Once its new home knows it, nothing more is submitted.
  v1::ApplicationReport running;
  running.set_state(v1::APP_RUNNING);
  rms_.reports["application_1_0001"] = running;
  EXPECT_TRUE(gpg.RunOnce(kNow + 2000).resubmitted.empty());
  EXPECT_EQ(rms_.submitted.size(), 1u);
  // Queue adhoc has no policy of its own and "*" does not resubmit: it stays where it was.
  EXPECT_EQ(store_->GetApplicationHomeSubCluster("application_1_0002")->home_sub_cluster_id(),
            "sc1");
}

v1::ApplicationHomeSubCluster ResubmittableHome(const std::string& app, const std::string& sc) {
  v1::ApplicationHomeSubCluster home;
  home.set_application_id(app);
  home.set_home_sub_cluster_id(sc);
  home.set_queue("prod");
  home.set_user("alice");
  home.set_create_time_ms(kNow);
  home.mutable_submission_context()->set_application_id(app);
  home.mutable_submission_context()->set_queue("prod");
  return home;
}

void SetResubmittingPolicy(FederationStateStore* store) {
  v1::SubClusterPolicyConfiguration p;
  p.set_queue("prod");
  p.set_router_policy("uniform");
  p.set_amrm_policy("home-only");
  p.set_resubmit_on_sub_cluster_loss(true);
  ASSERT_TRUE(store->SetPolicyConfiguration(p).ok());
}

// Issue 27: the GPG submitted before it moved the home, so two movers (two GPGs, or a GPG and
// a router) could both submit. The home moves first, by compare-and-set; the winner submits.
TEST_F(GpgTest, ALostSubClustersAppIsMovedByCompareAndSetAndThenSubmitted) {
  Register(Member("sc1", 4000, kNow - 60000));
  Register(Member("sc2", 4000));
  SetResubmittingPolicy(store_.get());
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0001", "sc1"))
                  .ok());
  // What the store says when the RM is asked to submit: the home has moved already.
  class OrderRms : public FakeRms {
   public:
    explicit OrderRms(FederationStateStore* store) : store_(store) {}
    absl::Status SubmitApplication(const v1::SubClusterInfo& sc, const std::string& user,
                                   const v1::ApplicationSubmissionContext& context) override {
      auto home = store_->GetApplicationHomeSubCluster(context.application_id());
      home_at_submit = home.ok() ? absl::StrCat(home->home_sub_cluster_id(), "@",
                                                home->generation())
                                 : std::string(home.status().message());
      return FakeRms::SubmitApplication(sc, user, context);
    }
    std::string home_at_submit;

   private:
    FederationStateStore* store_;
  } rms(store_.get());
  GlobalPolicyGenerator gpg({}, store_.get(), &rms);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty()) << round.errors.front();
  EXPECT_THAT(round.resubmitted, ElementsAre("application_1_0001 -> sc2"));
  EXPECT_THAT(rms.submitted, ElementsAre("application_1_0001 -> sc2 as alice"));
  EXPECT_EQ(rms.home_at_submit, "sc2@2");  // moved (generation 1 -> 2) before submitting
  EXPECT_TRUE(round.moves_lost.empty());
}

// A store in which another writer (a second GPG, a CAS-won router) moves the app to sc3 just
// before this GPG's compare-and-set reaches it.
class RacingStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::Status UpdateApplicationHomeSubCluster(const v1::ApplicationHomeSubCluster& h) override {
    if (!raced_) {
      raced_ = true;
      auto current = inner_->GetApplicationHomeSubCluster(h.application_id());
      if (!current.ok()) return current.status();
      current->set_home_sub_cluster_id("sc3");
      if (absl::Status s = inner_->UpdateApplicationHomeSubCluster(*current); !s.ok()) return s;
    }
    return inner_->UpdateApplicationHomeSubCluster(h);
  }

 private:
  bool raced_ = false;
};

TEST_F(GpgTest, AConcurrentMoverWinsAndTheGpgDoesNotSubmit) {
  Register(Member("sc1", 4000, kNow - 60000));
  Register(Member("sc2", 4000));
  Register(Member("sc3", 4000));
  SetResubmittingPolicy(store_.get());
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0001", "sc1"))
                  .ok());
  RacingStore racing(store_.get());
  GlobalPolicyGenerator gpg({}, &racing, &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty()) << round.errors.front();
  EXPECT_THAT(round.moves_lost, ElementsAre("application_1_0001"));
  EXPECT_TRUE(round.resubmitted.empty());
  EXPECT_TRUE(rms_.submitted.empty());  // the winner submits, not this GPG
  auto home = store_->GetApplicationHomeSubCluster("application_1_0001");
  ASSERT_TRUE(home.ok());
  EXPECT_EQ(home->home_sub_cluster_id(), "sc3");
  EXPECT_EQ(home->generation(), 2);
}

// An app moved by another writer that died before submitting it is submitted by the GPG; an
// app never moved whose RM does not know it is not (its router never forwarded it).
TEST_F(GpgTest, AMovedAppItsNewHomeDoesNotKnowIsSubmittedThere) {
  Register(Member("sc1", 4000));
  Register(Member("sc2", 4000));
  SetResubmittingPolicy(store_.get());
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0001", "sc1"))
                  .ok());
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0002", "sc1"))
                  .ok());
  v1::ApplicationHomeSubCluster moved = ResubmittableHome("application_1_0001", "sc2");
  moved.set_generation(1);
  ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(moved).ok());
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty()) << round.errors.front();
  EXPECT_THAT(rms_.submitted, ElementsAre("application_1_0001 -> sc2 as alice"));
  EXPECT_THAT(round.resubmitted, ElementsAre("application_1_0001 -> sc2"));
}

// The old copy's unmanaged AM in a secondary holds the app's id there (UAMs run under the home
// app's id): that sub-cluster cannot take the app, another one does.
TEST_F(GpgTest, ASubClusterHoldingTheAppsIdIsNotChosenAsItsNewHome) {
  Register(Member("sc1", 4000, kNow - 60000));
  Register(Member("sc2", 4000));
  Register(Member("sc3", 4000));
  SetResubmittingPolicy(store_.get());
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0001", "sc1"))
                  .ok());
  v1::ApplicationReport uam;
  uam.set_state(v1::APP_RUNNING);
  rms_.reports_at["sc2/application_1_0001"] = uam;
  for (uint64_t seed = 1; seed <= 4; ++seed) {  // whichever the uniform policy picks first
    ASSERT_TRUE(store_->DeleteApplicationHomeSubCluster("application_1_0001").ok());
    ASSERT_TRUE(
        store_->AddApplicationHomeSubCluster(ResubmittableHome("application_1_0001", "sc1")).ok());
    rms_.submitted.clear();
    GpgOptions o;
    o.seed = seed;
    GlobalPolicyGenerator gpg(o, store_.get(), &rms_);
    GpgRound round = gpg.RunOnce(kNow);
    EXPECT_THAT(round.resubmitted, ElementsAre("application_1_0001 -> sc3")) << seed;
    EXPECT_THAT(rms_.submitted, ElementsAre("application_1_0001 -> sc3 as alice"));
  }
}

// Chaos finding (issue 27): an app that ended in a sub-cluster lost later (its record kept for
// the retention) was resubmitted and ran again. The GPG marks the record when it sees the app
// ended, and never resubmits a marked one.
TEST_F(GpgTest, AnAppThatEndedInASubClusterLostLaterIsNotResubmitted) {
  constexpr int64_t kLater = kNow + 31000;  // sc1 silent past the expiry by then
  Register(Member("sc1", 4000, kNow));
  Register(Member("sc2", 4000, kLater));
  SetResubmittingPolicy(store_.get());
  const std::string app = "application_1_0001";
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(ResubmittableHome(app, "sc1")).ok());
  v1::ApplicationReport done;
  done.set_state(v1::APP_FINISHED);
  done.set_finish_time_ms(kNow - 1000);
  rms_.reports[app] = done;
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound first = gpg.RunOnce(kNow);
  EXPECT_TRUE(first.errors.empty()) << first.errors.front();
  EXPECT_EQ(first.mappings_removed, 0);  // within the retention
  auto marked = store_->GetApplicationHomeSubCluster(app);
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(marked->finished_ms(), kNow);
  EXPECT_EQ(marked->home_sub_cluster_id(), "sc1");
  EXPECT_EQ(marked->generation(), 2);  // written by compare-and-set over generation 1
  // sc1 goes silent; no RM knows the app any more (sc2 would take it).
  rms_.reports.clear();
  GpgRound lost = gpg.RunOnce(kLater);
  EXPECT_THAT(lost.marked_lost, ElementsAre("sc1"));
  EXPECT_TRUE(lost.resubmitted.empty());
  EXPECT_TRUE(rms_.submitted.empty());
  auto kept = store_->GetApplicationHomeSubCluster(app);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->home_sub_cluster_id(), "sc1");
  // Removed once the retention has passed since it was seen ended, its home lost or not.
  GpgRound after = gpg.RunOnce(kNow + GpgOptions().finished_app_retention_ms + 1);
  EXPECT_EQ(after.mappings_removed, 1);
  EXPECT_TRUE(absl::IsNotFound(store_->GetApplicationHomeSubCluster(app).status()));
  EXPECT_TRUE(rms_.submitted.empty());
}

// Chaos finding (issue 27): a sub-cluster whose RM stopped answering, not yet past the expiry,
// was asked about each of its apps in turn (one RM deadline each), so the round, and the next
// round's LOST mark, came later with every app homed there. It is asked once per round.
TEST_F(GpgTest, ASubClusterWhoseRmTimesOutIsAskedOncePerRound) {
  Register(Member("sc1", 4000));
  Register(Member("sc2", 4000));
  for (const char* app : {"application_1_0001", "application_1_0002",
                                 "application_1_0003"}) {
    v1::ApplicationHomeSubCluster home = ResubmittableHome(app, "sc1");
    ASSERT_TRUE(store_->AddApplicationHomeSubCluster(home).ok());
  }
  v1::ApplicationHomeSubCluster other = ResubmittableHome("application_1_0004", "sc2");
  ASSERT_TRUE(store_->AddApplicationHomeSubCluster(other).ok());
  v1::ApplicationReport running;
  running.set_state(v1::APP_RUNNING);
  rms_.reports["application_1_0004"] = running;
  rms_.failing["sc1"] = absl::DeadlineExceededError("sc1 did not answer in 5000 ms");
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_THAT(rms_.asked, ElementsAre("sc1/alice/application_1_0001",
                                      "sc2/alice/application_1_0004"));
  ASSERT_EQ(round.errors.size(), 1u);
  EXPECT_THAT(round.errors[0], HasSubstr("not asked again until the next round"));
  // The next round asks it again, once.
  rms_.asked.clear();
  gpg.RunOnce(kNow + 1000);
  EXPECT_THAT(rms_.asked, ElementsAre("sc1/alice/application_1_0001",
                                      "sc2/alice/application_1_0004"));
  // Past the expiry it is not asked at all (and is marked LOST).
  rms_.asked.clear();
  GpgRound later = gpg.RunOnce(kNow + 31000);
  EXPECT_THAT(later.marked_lost, ElementsAre("sc1", "sc2"));
  EXPECT_TRUE(rms_.asked.empty());
}

TEST_F(GpgTest, AnEmptyFederationIsAQuietRound) {
  // A store with nothing in it and no RMs: a quiet round.
  GlobalPolicyGenerator gpg({}, store_.get(), &rms_);
  GpgRound round = gpg.RunOnce(kNow);
  EXPECT_TRUE(round.errors.empty());
  EXPECT_EQ(round.policies_published, 0);
  EXPECT_TRUE(rms_.asked.empty());
}

}  // namespace
}  // namespace weft::federation
