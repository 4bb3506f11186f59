// Copyright Weft authors. The federation interceptor against fake sub-cluster RMs, with the real
// policies and the memory federation store: the split, the unmanaged AMs, the merge, releases,
// failures and the end of the attempt.
#include "federation/amrmproxy/federation_interceptor.h"

#include <memory>
#include <string>

#include "federation/amrmproxy/fake_sub_cluster_rpc_test_util.h"
#include "federation/amrmproxy/federation_view.h"
#include "federation/store/federation_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::amrmproxy {
namespace {

using ::testing::ElementsAre;
using testing::FakeSubClusterRpc;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::MakeAsk;
using testing::MakeContainer;

constexpr char kHome[] = "sc-home";
constexpr char kOther[] = "sc-two";
constexpr char kFederationHomeRm[] = "home-rm:8032";
constexpr char kOtherRm[] = "two-rm:8032";
constexpr int64_t kNow = 1'700'000'000'000;

class FederationInterceptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = federation::OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    for (auto [id, rm] : {std::pair{kHome, kFederationHomeRm}, std::pair{kOther, kOtherRm}}) {
      v1::SubClusterInfo info;
      info.set_sub_cluster_id(id);
      info.set_rm_address(rm);
      info.set_state(v1::SC_RUNNING);
      info.set_last_heartbeat_ms(kNow);
      info.set_last_start_ms(kNow);
      ASSERT_TRUE(store_->RegisterSubCluster(info).ok());
    }
    SetPolicy("broadcast");
    FederationViewOptions view;
    view.store = store_.get();
    view.rpc = &rpc_;
    view.cache_ttl_ms = 0;  // every split reads the store
    view.now_ms = [] { return kNow; };
    view_ = std::make_unique<FederationView>(std::move(view));

    attempt_.application_id = "application_1_0001";
    attempt_.attempt_id = "appattempt_1_0001_000001";
    attempt_.user = "alice";
    attempt_.am_container_id = "container_e0_1_0001_01_000001";
    attempt_.home_rm_address = kFederationHomeRm;
    attempt_.amrm_token.set_identifier("home-token");
    env_.rpc = &rpc_;
    env_.federation = view_.get();
    env_.home_sub_cluster_id = kHome;
    env_.now_ms = [this] { return now_; };
    env_.sleep_ms = [](int64_t) {};
    fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
    v1::RegisterApplicationMasterRequest reg;
    reg.set_host("am-host");
    ASSERT_TRUE(fi_->RegisterApplicationMaster(reg).ok());
  }

  void SetPolicy(const std::string& amrm_policy) {
    v1::SubClusterPolicyConfiguration config;
    config.set_queue("*");
    config.set_router_policy("uniform");
    config.set_amrm_policy(amrm_policy);
    absl::Status s = store_->SetPolicyConfiguration(config);
    ASSERT_TRUE(s.ok()) << s;
  }

  absl::StatusOr<v1::AllocateResponse> Allocate(std::vector<v1::ResourceRequest> asks,
                                                std::vector<std::string> releases = {}) {
    v1::AllocateRequest req;
    req.set_response_id(response_id_);
    for (auto& a : asks) *req.add_asks() = a;
    for (auto& r : releases) req.add_releases(r);
    auto reply = fi_->Allocate(req);
    if (reply.ok()) response_id_ = reply->response_id();
    return reply;
  }

  std::unique_ptr<federation::FederationStateStore> store_;
  FakeSubClusterRpc rpc_;
  std::unique_ptr<FederationView> view_;
  AttemptContext attempt_;
  InterceptorEnvironment env_;
  int64_t now_ = kNow;
  std::unique_ptr<FederationInterceptor> fi_;
  int32_t response_id_ = 0;
};

TEST_F(FederationInterceptorTest, RegistersWithTheHomeOnly) {
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).registrations.size(), 1u);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).tokens_used.back(), "home-token");
  EXPECT_TRUE(rpc_.rm(kOtherRm).registrations.empty());
}

TEST_F(FederationInterceptorTest, ASecondaryGetsAnUnmanagedAmAndTheRepliesAreMerged) {
  rpc_.rm(kOtherRm).reports_without_token = 2;  // the UAM's token shows on the third report
  auto reply = Allocate({MakeAsk(4)});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->response_id(), 1);
  // The UAM: submitted unmanaged as the app's user, queue and name, then registered with the
  // secondary's own token.
  FakeSubClusterRpc::Rm& two = rpc_.rm(kOtherRm);
  ASSERT_EQ(two.submissions.size(), 1u);
  EXPECT_TRUE(two.submissions[0].unmanaged_am());
  // Under the home app's id, naming the home (as YARN's FederationInterceptor): one app.
  EXPECT_EQ(two.submissions[0].application_id(), "application_1_0001");
  EXPECT_EQ(two.submissions[0].federation_home_sub_cluster_id(), kHome);
  EXPECT_EQ(two.new_applications, 0);
  EXPECT_EQ(two.submissions[0].queue(), "default");
  EXPECT_EQ(two.submissions[0].name(), "the-app");
  EXPECT_THAT(two.users, ::testing::Each(std::string("alice")));
  ASSERT_EQ(two.registrations.size(), 1u);
  EXPECT_EQ(two.registrations[0].host(), "am-host");
  EXPECT_EQ(two.tokens_used.back(), "uam-token@two-rm:8032");
  // Broadcast: the whole ask to each.
  ASSERT_EQ(two.allocates.size(), 1u);
  EXPECT_EQ(two.allocates[0].asks(0).num_containers(), 4);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks(0).num_containers(), 4);

  // Both allocate; each container keeps its own sub-cluster's token.
  v1::AllocateResponse home_reply, two_reply;
  *home_reply.add_allocated_containers() = MakeContainer("c-home-1", "h1:1", kFederationHomeRm);
  (*home_reply.mutable_available_resources()->mutable_values())["memory-mb"] = 1000;
  home_reply.set_num_cluster_nodes(2);
  home_reply.add_diagnostics("home note");
  *two_reply.add_allocated_containers() = MakeContainer("c-two-1", "t1:1", kOtherRm);
  *two_reply.add_allocated_containers() = MakeContainer("c-two-2", "t2:1", kOtherRm);
  (*two_reply.mutable_available_resources()->mutable_values())["memory-mb"] = 500;
  two_reply.set_num_cluster_nodes(3);
  two_reply.add_diagnostics("two note");
  two_reply.mutable_preemption()->add_strict_containers()->set_container_id("c-two-0");
  two_reply.mutable_preemption()->set_deadline_ms(99);
  rpc_.rm(kFederationHomeRm).replies.push_back(home_reply);
  rpc_.rm(kOtherRm).replies.push_back(two_reply);
  reply = Allocate({});
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->allocated_containers_size(), 3);
  std::map<std::string, std::string> token_of;
  for (const auto& c : reply->allocated_containers()) {
    token_of[c.container_id()] = c.container_token().identifier();
  }
  EXPECT_EQ(token_of["c-home-1"], "container-token@home-rm:8032");
  EXPECT_EQ(token_of["c-two-2"], "container-token@two-rm:8032");
  EXPECT_EQ(reply->available_resources().values().at("memory-mb"), 1500);
  EXPECT_EQ(reply->num_cluster_nodes(), 5);
  EXPECT_THAT(reply->diagnostics(),
              ::testing::UnorderedElementsAre("home note", "sub-cluster sc-two: two note"));
  EXPECT_EQ(reply->preemption().strict_containers(0).container_id(), "c-two-0");
  EXPECT_EQ(reply->preemption().deadline_ms(), 99);
  EXPECT_EQ(fi_->container_sub_clusters().at("c-two-1"), kOther);

  // A release goes to the sub-cluster that allocated it; completions are merged.
  v1::AllocateResponse done;
  v1::ContainerStatus* st = done.add_completed_containers();
  st->set_container_id("c-two-1");
  st->set_state(v1::CONTAINER_COMPLETE);
  rpc_.rm(kOtherRm).replies.push_back(done);
  reply = Allocate({}, {"c-two-2", "c-home-1"});
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(rpc_.rm(kOtherRm).allocates.back().releases(), ElementsAre("c-two-2"));
  EXPECT_THAT(rpc_.rm(kFederationHomeRm).allocates.back().releases(), ElementsAre("c-home-1"));
  ASSERT_EQ(reply->completed_containers_size(), 1);
  EXPECT_EQ(reply->completed_containers(0).container_id(), "c-two-1");
  EXPECT_FALSE(fi_->container_sub_clusters().contains("c-two-1"));
}

TEST_F(FederationInterceptorTest, TheAmsSequenceIsTheProxysOwn) {
  v1::AllocateResponse home_reply;
  *home_reply.add_allocated_containers() = MakeContainer("c1", "h1:1", kFederationHomeRm);
  rpc_.rm(kFederationHomeRm).replies.push_back(home_reply);
  auto first = Allocate({MakeAsk(1)});
  ASSERT_TRUE(first.ok());
  // The reply was lost: the AM sends the same id and gets the same reply, no new RM call.
  const size_t calls = rpc_.rm(kFederationHomeRm).allocates.size();
  v1::AllocateRequest retry;
  retry.set_response_id(0);
  auto again = fi_->Allocate(retry);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->response_id(), first->response_id());
  EXPECT_EQ(again->allocated_containers_size(), 1);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.size(), calls);
  // Any other id: resync.
  retry.set_response_id(7);
  auto resync = fi_->Allocate(retry);
  ASSERT_TRUE(resync.ok());
  EXPECT_EQ(resync->am_command(), v1::AM_RESYNC);
}

TEST_F(FederationInterceptorTest, AFailingSecondaryIsSkippedAndItsChangesKept) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  // The secondary's next call is applied but its reply lost.
  rpc_.rm(kOtherRm).lose_replies = 1;
  auto reply = Allocate({MakeAsk(6)});
  ASSERT_TRUE(reply.ok()) << "a secondary's failure is not the AM's: " << reply.status();
  ASSERT_EQ(rpc_.rm(kOtherRm).allocates.size(), 2u);
  // The next heartbeat sends the unanswered call again, unchanged (the RM answers its reply
  // again), then what is new.
  v1::AllocateResponse late;
  *late.add_allocated_containers() = MakeContainer("c-late", "t1:1", kOtherRm);
  rpc_.rm(kOtherRm).replies.push_back(late);
  reply = Allocate({MakeAsk(5)});
  ASSERT_TRUE(reply.ok());
  const auto& sent = rpc_.rm(kOtherRm).allocates;
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[1].asks(0).num_containers(), 6);
  EXPECT_EQ(sent[2].asks(0).num_containers(), 5);
  EXPECT_EQ(sent[2].response_id(), sent[1].response_id() + 1);
  EXPECT_EQ(reply->allocated_containers_size(), 1);

  // Down: skipped; the home still answers.
  rpc_.rm(kOtherRm).fail_allocates = 1;
  reply = Allocate({MakeAsk(3)});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks(0).num_containers(), 3);
  reply = Allocate({});
  ASSERT_TRUE(reply.ok());
  // The call that failed, then the heartbeat's own (empty) one.
  const auto& all = rpc_.rm(kOtherRm).allocates;
  ASSERT_EQ(all.size(), 5u);
  ASSERT_EQ(all[3].asks_size(), 1);
  EXPECT_EQ(all[3].asks(0).num_containers(), 3);
  EXPECT_EQ(all[4].asks_size(), 0);
}

TEST_F(FederationInterceptorTest, ASecondaryDownLongerThanTheTimeoutIsDroppedAndItsContainersLost) {
  env_.secondary_timeout_ms = 10000;
  fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
  ASSERT_TRUE(fi_->RegisterApplicationMaster({}).ok());
  response_id_ = 0;
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  v1::AllocateResponse there;
  *there.add_allocated_containers() = MakeContainer("c-two-1", "t1:1", kOtherRm);
  *there.add_allocated_containers() = MakeContainer("c-two-2", "t1:1", kOtherRm);
  rpc_.rm(kOtherRm).replies.push_back(there);
  v1::AllocateResponse here;
  *here.add_allocated_containers() = MakeContainer("c-home-1", "h1:1", kFederationHomeRm);
  rpc_.rm(kFederationHomeRm).replies.push_back(here);
  auto reply = Allocate({MakeAsk(4)});
  ASSERT_TRUE(reply.ok()) << reply.status();
  ASSERT_EQ(reply->allocated_containers_size(), 3);

  // The secondary's RM goes away: skipped, its containers still the AM's, until the timeout.
  rpc_.rm(kOtherRm).fail_allocates = 1000;
  reply = Allocate({MakeAsk(1)});
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(reply->completed_containers(), IsEmpty());
  now_ += 9999;
  reply = Allocate({MakeAsk(1)});
  ASSERT_TRUE(reply.ok());
  EXPECT_THAT(reply->completed_containers(), IsEmpty());
  now_ += 1;
  reply = Allocate({MakeAsk(3)});
  ASSERT_TRUE(reply.ok());
  std::vector<std::string> lost;
  for (const v1::ContainerStatus& st : reply->completed_containers()) {
    EXPECT_EQ(st.exit_status(), v1::CONTAINER_EXIT_LOST_NODE);
    EXPECT_THAT(st.diagnostics(), HasSubstr(kOther));
    lost.push_back(st.container_id());
  }
  EXPECT_THAT(lost, ElementsAre("c-two-1", "c-two-2"));  // the home's container is not lost
  ASSERT_FALSE(reply->diagnostics().empty());
  EXPECT_THAT(reply->diagnostics(reply->diagnostics_size() - 1), HasSubstr("dropped"));
  // From now on it is not called and every ask goes to the home.
  const size_t calls = rpc_.rm(kOtherRm).allocates.size();
  reply = Allocate({MakeAsk(5)});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(rpc_.rm(kOtherRm).allocates.size(), calls);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks(0).num_containers(), 5);
  // Each lost container reached the AM once.
  EXPECT_THAT(reply->completed_containers(), IsEmpty());
}

// The AM states an ask's count once: what a dropped secondary still held of it is asked of the
// others (here the home) with the next heartbeat, without the AM stating it again.
TEST_F(FederationInterceptorTest, WhatADroppedSecondaryHeldIsAskedOfTheOthers) {
  SetPolicy("locality-multicast");
  env_.secondary_timeout_ms = 10000;
  fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
  ASSERT_TRUE(fi_->RegisterApplicationMaster({}).ok());
  response_id_ = 0;
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  auto held = [this](const char* rm) {
    int32_t n = 0;
    for (const v1::AllocateRequest& req : rpc_.rm(rm).allocates)
      for (const v1::ResourceRequest& ask : req.asks())
        if (ask.resource_name() == "*") n = ask.num_containers();
    return n;
  };
  const int32_t at_home = held(kFederationHomeRm);
  const int32_t there = held(kOtherRm);
  ASSERT_GT(there, 0);
  ASSERT_EQ(at_home + there, 4);
  // The secondary stops answering; the AM asks nothing new meanwhile.
  rpc_.rm(kOtherRm).fail_allocates = 1000;
  ASSERT_TRUE(Allocate({}).ok());
  now_ += 10000;
  auto reply = Allocate({});  // dropped here
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(held(kFederationHomeRm), at_home);
  reply = Allocate({});  // the home hears of the rest
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(held(kFederationHomeRm), 4);
}

TEST_F(FederationInterceptorTest, WhatARmAllocatedIsTakenOffItsAsksSoTheSameCountIsSentAgain) {
  ASSERT_TRUE(Allocate({MakeAsk(2)}).ok());  // broadcast: 2 asked of each
  v1::AllocateResponse there;
  *there.add_allocated_containers() = MakeContainer("c-two-1", "t1:1", kOtherRm);
  *there.add_allocated_containers() = MakeContainer("c-two-2", "t1:1", kOtherRm);
  rpc_.rm(kOtherRm).replies.push_back(there);
  auto reply = Allocate({MakeAsk(2)});
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->allocated_containers_size(), 2);
  // The secondary's RM now holds 0 of that ask: stating 2 again reaches it (the home still
  // holds its 2: nothing new to tell it).
  const size_t home_calls = rpc_.rm(kFederationHomeRm).allocates.size();
  reply = Allocate({MakeAsk(2)});
  ASSERT_TRUE(reply.ok());
  const v1::AllocateRequest& last = rpc_.rm(kOtherRm).allocates.back();
  ASSERT_EQ(last.asks_size(), 1);
  EXPECT_EQ(last.asks(0).num_containers(), 2);
  ASSERT_GT(rpc_.rm(kFederationHomeRm).allocates.size(), home_calls);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks_size(), 0);
}

TEST_F(FederationInterceptorTest, TheHomesFailureIsTheAmsAndSecondaryRepliesWait) {
  ASSERT_TRUE(Allocate({MakeAsk(2)}).ok());
  v1::AllocateResponse two_reply;
  *two_reply.add_allocated_containers() = MakeContainer("c-two", "t1:1", kOtherRm);
  rpc_.rm(kOtherRm).replies.push_back(two_reply);
  rpc_.rm(kFederationHomeRm).fail_allocates = 1;
  auto failed = Allocate({});
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_THAT(std::string(failed.status().message()), HasSubstr("home sub-cluster 'sc-home'"));
  // The AM retries with the same id: the secondary's container comes then.
  auto reply = Allocate({});
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->allocated_containers_size(), 1);
  EXPECT_EQ(reply->allocated_containers(0).container_id(), "c-two");
}

TEST_F(FederationInterceptorTest, AsksMovedAwayAreCancelled) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  SetPolicy("home-only");
  ASSERT_TRUE(Allocate({MakeAsk(3)}).ok());
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks(0).num_containers(), 3);
  ASSERT_EQ(rpc_.rm(kOtherRm).allocates.back().asks_size(), 1);
  EXPECT_EQ(rpc_.rm(kOtherRm).allocates.back().asks(0).num_containers(), 0);
}

TEST_F(FederationInterceptorTest, HomeOnlyNeverStartsAUam) {
  SetPolicy("home-only");
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  ASSERT_TRUE(Allocate({}).ok());
  EXPECT_TRUE(rpc_.rm(kOtherRm).submissions.empty());
  EXPECT_TRUE(rpc_.rm(kOtherRm).allocates.empty());
}

// An AM's long poll (wait_ms) reaches its home RM while the app has no secondary; once one
// is in use the home answers at once, so that the secondary's reply never waits for it.
TEST_F(FederationInterceptorTest, ALongPollReachesTheHomeOnlyWhileNoSecondaryIsInUse) {
  SetPolicy("home-only");
  v1::AllocateRequest poll;
  poll.set_response_id(response_id_);
  poll.set_wait_ms(2000);
  auto reply = fi_->Allocate(poll);
  ASSERT_TRUE(reply.ok()) << reply.status();
  response_id_ = reply->response_id();
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().wait_ms(), 2000);
  SetPolicy("broadcast");
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());  // the secondary's UAM starts
  ASSERT_FALSE(rpc_.rm(kOtherRm).allocates.empty());
  poll.set_response_id(response_id_);
  reply = fi_->Allocate(poll);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().wait_ms(), 0);
  EXPECT_EQ(rpc_.rm(kOtherRm).allocates.back().wait_ms(), 0);
}

TEST_F(FederationInterceptorTest, ARestartedSecondaryGetsItsWholeShareAgain) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  rpc_.rm(kOtherRm).resync_next = true;
  ASSERT_TRUE(Allocate({}).ok());
  FakeSubClusterRpc::Rm& two = rpc_.rm(kOtherRm);
  EXPECT_EQ(two.registrations.size(), 2u);
  ASSERT_EQ(two.allocates.size(), 2u);
  EXPECT_EQ(two.allocates[1].response_id(), 0);
  ASSERT_EQ(two.allocates[1].asks_size(), 1);
  EXPECT_EQ(two.allocates[1].asks(0).num_containers(), 4);
}

TEST_F(FederationInterceptorTest, FinishUnregistersEveryUamThenTheHome) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  v1::FinishApplicationMasterRequest finish;
  finish.set_final_status(v1::FINAL_SUCCEEDED);
  auto done = fi_->FinishApplicationMaster(finish);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_TRUE(done->is_unregistered());
  ASSERT_EQ(rpc_.rm(kOtherRm).finishes.size(), 1u);
  EXPECT_EQ(rpc_.rm(kOtherRm).finishes[0].final_status(), v1::FINAL_SUCCEEDED);
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).finishes.size(), 1u);
  fi_->Shutdown(AttemptEnd::kApplicationEnded);
  EXPECT_THAT(rpc_.rm(kOtherRm).kills, IsEmpty());
}

TEST_F(FederationInterceptorTest, TheAppsCleanupKillsItsUams) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  fi_->Shutdown(AttemptEnd::kApplicationEnded);
  EXPECT_THAT(rpc_.rm(kOtherRm).kills, ElementsAre("application_1_0001"));
}

TEST_F(FederationInterceptorTest, AnAttemptThatEndsWhileTheAppRunsKeepsItsUams) {
  testing::MemoryAmrmProxyStateStore state;
  env_.state_store = &state;
  fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
  ASSERT_TRUE(fi_->RegisterApplicationMaster({}).ok());
  response_id_ = 0;
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  fi_->Shutdown(AttemptEnd::kAttemptEnded);  // the home reports the app ACCEPTED
  EXPECT_THAT(rpc_.rm(kOtherRm).kills, IsEmpty());
  std::optional<AttemptState> kept = state.Get(attempt_.attempt_id);
  ASSERT_TRUE(kept.has_value());
  EXPECT_TRUE(kept->ended);
  ASSERT_EQ(kept->uams.size(), 1u);
  EXPECT_EQ(kept->uams[0].application_id, "application_1_0001");
  // The app's cleanup, later, kills them and forgets the record.
  fi_->Shutdown(AttemptEnd::kApplicationEnded);
  EXPECT_THAT(rpc_.rm(kOtherRm).kills, ElementsAre("application_1_0001"));
  EXPECT_FALSE(state.Get(attempt_.attempt_id).has_value());
}

TEST_F(FederationInterceptorTest, AnAttemptThatEndsWithItsAppKilledKillsItsUams) {
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  rpc_.rm(kFederationHomeRm).states["application_1_0001"] = v1::APP_KILLED;
  fi_->Shutdown(AttemptEnd::kAttemptEnded);
  EXPECT_THAT(rpc_.rm(kOtherRm).kills, ElementsAre("application_1_0001"));
}

TEST_F(FederationInterceptorTest, ARecoveredAttemptResyncsItsAmAndReattachesItsUams) {
  testing::MemoryAmrmProxyStateStore state;
  env_.state_store = &state;
  fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
  v1::RegisterApplicationMasterRequest reg;
  reg.set_host("am-host");
  ASSERT_TRUE(fi_->RegisterApplicationMaster(reg).ok());
  response_id_ = 0;
  ASSERT_TRUE(Allocate({MakeAsk(4)}).ok());
  v1::AllocateResponse there;
  *there.add_allocated_containers() = MakeContainer("c-two-1", "t1:1", kOtherRm);
  rpc_.rm(kOtherRm).replies.push_back(there);
  ASSERT_TRUE(Allocate({}).ok());
  std::optional<AttemptState> saved = state.Get(attempt_.attempt_id);
  ASSERT_TRUE(saved.has_value());
  EXPECT_TRUE(saved->registered);
  EXPECT_EQ(saved->registration.host(), "am-host");
  ASSERT_EQ(saved->uams.size(), 1u);
  EXPECT_EQ(saved->uams[0].amrm_token.identifier(), "uam-token@two-rm:8032");

  // The NM restarts: a new interceptor takes the record up.
  fi_ = std::make_unique<FederationInterceptor>(attempt_, env_);
  fi_->Recover(*saved);
  auto resync = Allocate({});
  ASSERT_TRUE(resync.ok()) << resync.status();
  EXPECT_EQ(resync->am_command(), v1::AM_RESYNC);
  // The AM registers again: the home and the UAM register again (no new UAM), and the
  // secondary's live container comes back as the AM's, routed to its sub-cluster.
  rpc_.rm(kOtherRm).live_containers = {MakeContainer("c-two-1", "t1:1", kOtherRm)};
  auto again = fi_->RegisterApplicationMaster(reg);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->containers_from_previous_attempts_size(), 1);
  EXPECT_EQ(again->containers_from_previous_attempts(0).container_id(), "c-two-1");
  FakeSubClusterRpc::Rm& two = rpc_.rm(kOtherRm);
  EXPECT_EQ(two.submissions.size(), 1u);
  EXPECT_EQ(two.registrations.size(), 2u);
  EXPECT_EQ(two.registrations.back().host(), "am-host");
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).registrations.size(), 3u);  // SetUp's fi_, the first, again
  response_id_ = 0;
  auto reply = Allocate({MakeAsk(4)}, {"c-two-1"});
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->response_id(), 1);
  ASSERT_GE(two.allocates.size(), 1u);
  EXPECT_THAT(two.allocates.back().releases(), ElementsAre("c-two-1"));
  EXPECT_EQ(two.tokens_used.back(), "uam-token@two-rm:8032");
}

TEST_F(FederationInterceptorTest, TheNextAttemptReattachesToTheUamsOfTheFirst) {
  rpc_.rm(kOtherRm).reports_only_submitted = true;
  ASSERT_TRUE(Allocate({MakeAsk(2)}).ok());  // broadcast: a UAM in sc-two
  fi_->Shutdown(AttemptEnd::kAttemptEnded);
  ASSERT_EQ(rpc_.rm(kOtherRm).submissions.size(), 1u);
  ASSERT_EQ(rpc_.rm(kOtherRm).registrations.size(), 1u);
  // A third sub-cluster, which never ran the app, joins.
  v1::SubClusterInfo three;
  three.set_sub_cluster_id("sc-three");
  three.set_rm_address("three-rm:8032");
  three.set_state(v1::SC_RUNNING);
  three.set_last_heartbeat_ms(kNow);
  three.set_last_start_ms(kNow);
  ASSERT_TRUE(store_->RegisterSubCluster(three).ok());
  rpc_.rm("three-rm:8032").reports_only_submitted = true;

  // Attempt 2 (on another NM, say): its registration finds the UAM in sc-two and re-attaches.
  AttemptContext second = attempt_;
  second.attempt_id = "appattempt_1_0001_000002";
  second.amrm_token.set_identifier("home-token-2");
  SetPolicy("home-only");
  rpc_.rm(kOtherRm).live_containers = {MakeContainer("c-two-9", "t1:1", kOtherRm)};
  fi_ = std::make_unique<FederationInterceptor>(second, env_);
  auto registered = fi_->RegisterApplicationMaster({});
  ASSERT_TRUE(registered.ok()) << registered.status();
  ASSERT_EQ(registered->containers_from_previous_attempts_size(), 1);
  EXPECT_EQ(registered->containers_from_previous_attempts(0).container_id(), "c-two-9");
  FakeSubClusterRpc::Rm& two = rpc_.rm(kOtherRm);
  EXPECT_EQ(two.submissions.size(), 1u);  // no second UAM
  EXPECT_EQ(two.new_applications, 0);
  EXPECT_EQ(two.registrations.size(), 2u);
  EXPECT_EQ(two.tokens_used.back(), "uam-token@two-rm:8032");
  EXPECT_TRUE(rpc_.rm("three-rm:8032").submissions.empty());
  EXPECT_TRUE(rpc_.rm("three-rm:8032").registrations.empty());
  EXPECT_THAT(rpc_.rm("three-rm:8032").users, ElementsAre("alice"));  // asked, as the user
  // The re-attached UAM is heartbeated (home-only asks: it gets none, but stays alive), and
  // its container's release goes to it.
  response_id_ = 0;
  const size_t before = two.allocates.size();
  ASSERT_TRUE(Allocate({}, {"c-two-9"}).ok());
  ASSERT_EQ(two.allocates.size(), before + 1);
  EXPECT_THAT(two.allocates.back().releases(), ElementsAre("c-two-9"));
}

TEST_F(FederationInterceptorTest, WithoutAUsableSubClusterEverythingGoesHome) {
  ASSERT_TRUE(store_->DeregisterSubCluster(kOther, v1::SC_LOST).ok());
  ASSERT_TRUE(store_->DeregisterSubCluster(kHome, v1::SC_LOST).ok());
  auto reply = Allocate({MakeAsk(4)});
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(rpc_.rm(kFederationHomeRm).allocates.back().asks(0).num_containers(), 4);
  EXPECT_TRUE(rpc_.rm(kOtherRm).submissions.empty());
}

}  // namespace
}  // namespace weft::amrmproxy
