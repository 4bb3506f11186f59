// Copyright Weft authors. The FederationStateStore contract, run over every back-end: memory,
// SQLite, ZooKeeper and PostgreSQL (against private servers this test binary starts, once).
// The back-ends, the fixture and the record builders are in conformance_backends.h; cluster
// timestamps and issued application ids in federation_store_id_conformance_test.cc; what only
// one back-end does in federation_store_backends_test.cc.
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "federation/store/conformance_backends.h"
#include "federation/store/federation_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::federation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

using conformance::AppHome;
using conformance::BackendNames;
using conformance::Backends;
using conformance::EqualsProto;
using conformance::FederationStoreTest;
using conformance::MakeResource;
using conformance::MasterKey;
using conformance::Policy;
using conformance::ReservationHome;
using conformance::Stored;
using conformance::SubCluster;
using conformance::Token;
using conformance::Value;

TYPED_TEST_SUITE(FederationStoreTest, Backends, BackendNames);

TYPED_TEST(FederationStoreTest, NewStoreIsEmpty) {
  EXPECT_THAT(this->SubClusters(), IsEmpty());
  EXPECT_THAT(Value(this->store_->GetApplicationsHomeSubCluster("")), IsEmpty());
  EXPECT_THAT(Value(this->store_->GetReservationsHomeSubCluster()), IsEmpty());
  EXPECT_THAT(Value(this->store_->GetPoliciesConfigurations()), IsEmpty());
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetSubCluster("sc1").status()));
  EXPECT_THAT(this->store_->Describe(), Not(IsEmpty()));
}

TYPED_TEST(FederationStoreTest, RegisterStoresTheRecordAsGivenAndReplacesIt) {
  const v1::SubClusterInfo first = SubCluster("sc1", v1::SC_NEW);
  ASSERT_OK(this->store_->RegisterSubCluster(first));
  EXPECT_THAT(Value(this->store_->GetSubCluster("sc1")), EqualsProto(first));

  // An RM that restarts registers again: the new record replaces the old one whole.
  v1::SubClusterInfo again = SubCluster("sc1", v1::SC_RUNNING);
  again.set_rm_address("new-rm:8032");
  again.set_rm_http_address("");
  again.set_last_start_ms(1'700'000'100'000);
  again.clear_pending();
  ASSERT_OK(this->store_->RegisterSubCluster(again));
  EXPECT_THAT(Value(this->store_->GetSubCluster("sc1")), EqualsProto(again));
  EXPECT_THAT(this->SubClusters(), ElementsAre(EqualsProto(again)));
}

TYPED_TEST(FederationStoreTest, HeartbeatUpdatesLoadAndKeepsAddressesAndLastStart) {
  const v1::SubClusterInfo registered = SubCluster("sc1", v1::SC_NEW);
  ASSERT_OK(this->store_->RegisterSubCluster(registered));

  v1::SubClusterInfo load;
  load.set_sub_cluster_id("sc1");
  load.set_rm_address("ignored:1");  // Addresses and last_start_ms come from the registration.
  load.set_last_start_ms(42);
  load.set_state(v1::SC_UNHEALTHY);
  load.set_last_heartbeat_ms(1'700'000'060'000);
  *load.mutable_capability() = MakeResource(16384, 16);
  *load.mutable_used() = MakeResource(4096, 3);
  *load.mutable_available() = MakeResource(12288, 13);
  *load.mutable_pending() = MakeResource(2048, 2);
  load.set_active_nodes(9);
  load.set_apps_running(5);
  load.set_apps_pending(0);
  load.set_federation_commitment(1.0);
  ASSERT_OK(this->store_->SubClusterHeartbeat(load));

  v1::SubClusterInfo want = load;
  want.set_rm_address(registered.rm_address());
  want.set_rm_http_address(registered.rm_http_address());
  want.set_last_start_ms(registered.last_start_ms());
  EXPECT_THAT(Value(this->store_->GetSubCluster("sc1")), EqualsProto(want));

  absl::Status unknown = this->store_->SubClusterHeartbeat(SubCluster("sc9"));
  EXPECT_TRUE(absl::IsNotFound(unknown)) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("sc9"));
  EXPECT_THAT(this->SubClusters(), SizeIs(1));
}

TYPED_TEST(FederationStoreTest, DeregisterSetsOnlyTheState) {
  const v1::SubClusterInfo registered = SubCluster("sc1");
  ASSERT_OK(this->store_->RegisterSubCluster(registered));
  for (v1::SubClusterState state :
       {v1::SC_DECOMMISSIONING, v1::SC_DECOMMISSIONED, v1::SC_LOST, v1::SC_UNREGISTERED}) {
    ASSERT_OK(this->store_->DeregisterSubCluster("sc1", state));
    v1::SubClusterInfo want = registered;
    want.set_state(state);
    EXPECT_THAT(Value(this->store_->GetSubCluster("sc1")), EqualsProto(want));
  }
  absl::Status unknown = this->store_->DeregisterSubCluster("sc9", v1::SC_LOST);
  EXPECT_TRUE(absl::IsNotFound(unknown)) << unknown;
  EXPECT_THAT(unknown.message(), HasSubstr("sc9"));
}

TYPED_TEST(FederationStoreTest, GetSubClustersIsOrderedByIdAndFiltersActive) {
  for (const auto& [id, state] :
       std::vector<std::pair<std::string, v1::SubClusterState>>{{"sc-b", v1::SC_RUNNING},
                                                                {"sc-a", v1::SC_LOST},
                                                                {"sc-10", v1::SC_RUNNING},
                                                                {"sc-2", v1::SC_NEW},
                                                                {"SC-Z", v1::SC_RUNNING},
                                                                {"sc.1", v1::SC_UNHEALTHY}}) {
    ASSERT_OK(this->store_->RegisterSubCluster(SubCluster(id, state)));
  }
  std::vector<std::string> all, active;
  for (const auto& info : this->SubClusters(false)) all.push_back(info.sub_cluster_id());
  for (const auto& info : this->SubClusters(true)) active.push_back(info.sub_cluster_id());
  // Bytewise, whatever the back-end's locale: 'S' < 's', "10" < "2", '-' < '.'.
  EXPECT_THAT(all, ElementsAre("SC-Z", "sc-10", "sc-2", "sc-a", "sc-b", "sc.1"));
  EXPECT_THAT(active, ElementsAre("SC-Z", "sc-10", "sc-b"));
}

TYPED_TEST(FederationStoreTest, AddApplicationHomeKeepsTheFirstAndReturnsIt) {
  const v1::ApplicationHomeSubCluster first = AppHome("application_1_0001", "sc1");
  EXPECT_EQ(Value(this->store_->AddApplicationHomeSubCluster(first)), "sc1");
  EXPECT_EQ(Value(this->store_->AddApplicationHomeSubCluster(AppHome("application_1_0001", "sc2"))),
            "sc1");
  EXPECT_THAT(Value(this->store_->GetApplicationHomeSubCluster("application_1_0001")),
              EqualsProto(first));
}

TYPED_TEST(FederationStoreTest, ConcurrentAddsAgreeOnOneHome) {
  constexpr int kThreads = 6;
  constexpr int kApps = 4;
  for (int app = 0; app < kApps; ++app) {
    const std::string app_id = absl::StrCat("application_1700000000000_000", app);
    std::vector<absl::StatusOr<std::string>> homes(kThreads, absl::UnknownError("not run"));
    absl::Notification go;
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        go.WaitForNotification();
        homes[i] =
            this->store_->AddApplicationHomeSubCluster(AppHome(app_id, absl::StrCat("sc", i)));
      });
    }
    go.Notify();
    for (std::thread& t : threads) t.join();
    std::set<std::string> answers;
    for (const auto& home : homes) {
      ASSERT_TRUE(home.ok()) << home.status();
      answers.insert(*home);
    }
    ASSERT_THAT(answers, SizeIs(1)) << "callers saw different homes for " << app_id;
    const std::string winner = *answers.begin();
    EXPECT_THAT(winner, ::testing::MatchesRegex("sc[0-5]"));
    EXPECT_EQ(Value(this->store_->GetApplicationHomeSubCluster(app_id)).home_sub_cluster_id(),
              winner);
  }
}

TYPED_TEST(FederationStoreTest, UpdateAndDeleteApplicationHome) {
  ASSERT_OK(this->store_->AddApplicationHomeSubCluster(AppHome("app_1", "sc1", 0)).status());
  // Moved from generation 1, as read: the store holds generation 2.
  ASSERT_OK(this->store_->UpdateApplicationHomeSubCluster(AppHome("app_1", "sc2", 1)));
  const v1::ApplicationHomeSubCluster moved = AppHome("app_1", "sc2", 2);
  EXPECT_THAT(Value(this->store_->GetApplicationHomeSubCluster("app_1")), EqualsProto(moved));
  EXPECT_THAT(Value(this->store_->GetApplicationsHomeSubCluster("sc2")),
              ElementsAre(EqualsProto(moved)));
  EXPECT_THAT(Value(this->store_->GetApplicationsHomeSubCluster("sc1")), IsEmpty());

  absl::Status missing = this->store_->UpdateApplicationHomeSubCluster(AppHome("app_9", "sc1"));
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("app_9"));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetApplicationHomeSubCluster("app_9").status()));

  ASSERT_OK(this->store_->DeleteApplicationHomeSubCluster("app_1"));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetApplicationHomeSubCluster("app_1").status()));
  EXPECT_TRUE(absl::IsNotFound(this->store_->DeleteApplicationHomeSubCluster("app_1")));
  EXPECT_THAT(Value(this->store_->GetApplicationsHomeSubCluster("")), IsEmpty());
}

// Fenced homes (issue 27): a home moves only by compare-and-set over the generation read.
TYPED_TEST(FederationStoreTest, HomesMoveOnlyFromTheGenerationRead) {
  ASSERT_OK(this->store_->AddApplicationHomeSubCluster(AppHome("app_1", "sc1", 7)).status());
  v1::ApplicationHomeSubCluster read = Value(this->store_->GetApplicationHomeSubCluster("app_1"));
  EXPECT_EQ(read.generation(), 1) << "the store sets the first generation, not the caller";
  read.set_home_sub_cluster_id("sc2");
  ASSERT_OK(this->store_->UpdateApplicationHomeSubCluster(read));
  // A second writer that read generation 1 too loses, naming both generations, and changes
  // nothing.
  absl::Status late = this->store_->UpdateApplicationHomeSubCluster(AppHome("app_1", "sc3", 1));
  EXPECT_TRUE(absl::IsAborted(late)) << late;
  EXPECT_THAT(late.message(), HasSubstr("app_1"));
  EXPECT_THAT(late.message(), HasSubstr("generation 2"));
  EXPECT_THAT(Value(this->store_->GetApplicationHomeSubCluster("app_1")),
              EqualsProto(AppHome("app_1", "sc2", 2)));
  EXPECT_TRUE(absl::IsInvalidArgument(
      this->store_->UpdateApplicationHomeSubCluster(AppHome("app_1", "sc3", -1))));
}

TYPED_TEST(FederationStoreTest, ConcurrentMovesFromOneGenerationHaveOneWinner) {
  constexpr int kThreads = 6;
  for (int round = 0; round < 5; ++round) {
    const std::string app_id = absl::StrCat("app_cas_", round);
    ASSERT_OK(this->store_->AddApplicationHomeSubCluster(AppHome(app_id, "sc0")).status());
    std::vector<absl::Status> results(kThreads, absl::UnknownError("not run"));
    absl::Notification go;
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        go.WaitForNotification();
        results[i] = this->store_->UpdateApplicationHomeSubCluster(
            AppHome(app_id, absl::StrCat("sc", i + 1), 1));
      });
    }
    go.Notify();
    for (std::thread& t : threads) t.join();
    int won = 0;
    std::string winner;
    for (int i = 0; i < kThreads; ++i) {
      if (results[i].ok()) {
        ++won;
        winner = absl::StrCat("sc", i + 1);
      } else {
        EXPECT_TRUE(absl::IsAborted(results[i])) << results[i];
      }
    }
    EXPECT_EQ(won, 1) << app_id;
    EXPECT_THAT(Value(this->store_->GetApplicationHomeSubCluster(app_id)),
                EqualsProto(AppHome(app_id, winner, 2)));
  }
}

TYPED_TEST(FederationStoreTest, GetApplicationsFiltersByHomeAndOrdersById) {
  for (const auto& [app, home] : std::vector<std::pair<std::string, std::string>>{
           {"app_3", "sc1"}, {"app_1", "sc2"}, {"app_10", "sc1"}, {"app_2", "sc1"}}) {
    ASSERT_OK(this->store_->AddApplicationHomeSubCluster(AppHome(app, home)).status());
  }
  auto ids = [](const std::vector<v1::ApplicationHomeSubCluster>& homes) {
    std::vector<std::string> out;
    for (const auto& h : homes) out.push_back(h.application_id());
    return out;
  };
  EXPECT_THAT(ids(Value(this->store_->GetApplicationsHomeSubCluster(""))),
              ElementsAre("app_1", "app_10", "app_2", "app_3"));
  EXPECT_THAT(ids(Value(this->store_->GetApplicationsHomeSubCluster("sc1"))),
              ElementsAre("app_10", "app_2", "app_3"));
  EXPECT_THAT(ids(Value(this->store_->GetApplicationsHomeSubCluster("sc3"))), IsEmpty());
}

TYPED_TEST(FederationStoreTest, ReservationHomes) {
  EXPECT_EQ(Value(this->store_->AddReservationHomeSubCluster(ReservationHome("rsv_2", "sc1"))),
            "sc1");
  EXPECT_EQ(Value(this->store_->AddReservationHomeSubCluster(ReservationHome("rsv_2", "sc2"))),
            "sc1");
  EXPECT_EQ(Value(this->store_->AddReservationHomeSubCluster(ReservationHome("rsv_1", "sc2"))),
            "sc2");
  EXPECT_THAT(Value(this->store_->GetReservationsHomeSubCluster()),
              ElementsAre(EqualsProto(ReservationHome("rsv_1", "sc2")),
                          EqualsProto(ReservationHome("rsv_2", "sc1"))));

  ASSERT_OK(this->store_->UpdateReservationHomeSubCluster(ReservationHome("rsv_2", "sc3", 1)));
  EXPECT_THAT(Value(this->store_->GetReservationHomeSubCluster("rsv_2")),
              EqualsProto(ReservationHome("rsv_2", "sc3", 2)));
  absl::Status stale =
      this->store_->UpdateReservationHomeSubCluster(ReservationHome("rsv_2", "sc1", 1));
  EXPECT_TRUE(absl::IsAborted(stale)) << stale;
  EXPECT_THAT(Value(this->store_->GetReservationHomeSubCluster("rsv_2")),
              EqualsProto(ReservationHome("rsv_2", "sc3", 2)));
  EXPECT_TRUE(absl::IsNotFound(
      this->store_->UpdateReservationHomeSubCluster(ReservationHome("rsv_9", "sc1"))));

  ASSERT_OK(this->store_->DeleteReservationHomeSubCluster("rsv_2"));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetReservationHomeSubCluster("rsv_2").status()));
  EXPECT_TRUE(absl::IsNotFound(this->store_->DeleteReservationHomeSubCluster("rsv_2")));
  EXPECT_THAT(Value(this->store_->GetReservationsHomeSubCluster()), SizeIs(1));
}

TYPED_TEST(FederationStoreTest, PoliciesSetReplaceGetAndList) {
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetPolicyConfiguration("root.a").status()));
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy("root.b")));
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy("root.a", 1.0)));
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy("*")));
  const v1::SubClusterPolicyConfiguration replaced = Policy("root.a", 3.5);
  ASSERT_OK(this->store_->SetPolicyConfiguration(replaced));

  EXPECT_THAT(Value(this->store_->GetPolicyConfiguration("root.a")),
              EqualsProto(Stored(replaced, 2)));
  EXPECT_THAT(Value(this->store_->GetPoliciesConfigurations()),
              ElementsAre(EqualsProto(Stored(Policy("*"))), EqualsProto(Stored(replaced, 2)),
                          EqualsProto(Stored(Policy("root.b")))));
  absl::Status none = this->store_->GetPolicyConfiguration("root.c").status();
  EXPECT_TRUE(absl::IsNotFound(none)) << none;
  EXPECT_THAT(none.message(), HasSubstr("root.c"));

  ASSERT_OK(this->store_->DeletePolicyConfiguration("root.a"));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetPolicyConfiguration("root.a").status()));
  absl::Status twice = this->store_->DeletePolicyConfiguration("root.a");
  EXPECT_TRUE(absl::IsNotFound(twice)) << twice;
  EXPECT_THAT(twice.message(), HasSubstr("root.a"));
  EXPECT_TRUE(absl::IsInvalidArgument(this->store_->DeletePolicyConfiguration("")));
  EXPECT_THAT(Value(this->store_->GetPoliciesConfigurations()),
              ElementsAre(EqualsProto(Stored(Policy("*"))), EqualsProto(Stored(Policy("root.b")))));
}

TYPED_TEST(FederationStoreTest, InvalidPoliciesAreRefusedAndChangeNothing) {
  const v1::SubClusterPolicyConfiguration good = Policy("root.a");
  ASSERT_OK(this->store_->SetPolicyConfiguration(good));

  v1::SubClusterPolicyConfiguration negative = Policy("root.a", -1);
  v1::SubClusterPolicyConfiguration unknown_policy = Policy("root.a");
  unknown_policy.set_router_policy("round-robin");
  v1::SubClusterPolicyConfiguration bad_id = Policy("root.a");
  (*bad_id.mutable_amrm_weights())["no/slash"] = 1;
  v1::SubClusterPolicyConfiguration alpha = Policy("root.a");
  alpha.set_headroom_alpha(1.5);
  v1::SubClusterPolicyConfiguration new_queue_bad = Policy("root.new", -2);
  for (const auto& [config, field] :
       std::vector<std::pair<v1::SubClusterPolicyConfiguration, std::string>>{
           {negative, "router_weights"},
           {unknown_policy, "router_policy"},
           {bad_id, "amrm_weights"},
           {alpha, "headroom_alpha"},
           {new_queue_bad, "router_weights"},
           {Policy(""), "queue"}}) {
    absl::Status s = this->store_->SetPolicyConfiguration(config);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(field));
  }
  EXPECT_THAT(Value(this->store_->GetPoliciesConfigurations()),
              ElementsAre(EqualsProto(Stored(good))));
}

// Conditional policy writes (issue 27): a read-modify-write names the generation it read.
TYPED_TEST(FederationStoreTest, PolicyWritesOverAGenerationAreCompareAndSet) {
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy("root.a")));
  v1::SubClusterPolicyConfiguration read = Value(this->store_->GetPolicyConfiguration("root.a"));
  ASSERT_EQ(read.generation(), 1);
  // An operator writes in between; the GPG's write over what it read loses and changes nothing.
  v1::SubClusterPolicyConfiguration op = read;
  (*op.mutable_operator_router_weights())["sc1"] = 5;
  ASSERT_OK(this->store_->SetPolicyConfiguration(op));
  v1::SubClusterPolicyConfiguration gpg = read;
  (*gpg.mutable_router_weights())["sc2"] = 0.75;
  absl::Status lost = this->store_->SetPolicyConfiguration(gpg);
  EXPECT_TRUE(absl::IsAborted(lost)) << lost;
  EXPECT_THAT(lost.message(), HasSubstr("generation 2"));
  EXPECT_THAT(Value(this->store_->GetPolicyConfiguration("root.a")), EqualsProto(Stored(op, 2)));
  // Over a queue with none: Aborted too. Generation 0 writes unconditionally.
  v1::SubClusterPolicyConfiguration ghost = Policy("root.ghost");
  ghost.set_generation(3);
  EXPECT_TRUE(absl::IsAborted(this->store_->SetPolicyConfiguration(ghost)));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetPolicyConfiguration("root.ghost").status()));
  v1::SubClusterPolicyConfiguration negative = Policy("root.a");
  negative.set_generation(-1);
  EXPECT_TRUE(absl::IsInvalidArgument(this->store_->SetPolicyConfiguration(negative)));
  (*negative.mutable_operator_amrm_weights())["sc1"] = -1;
  negative.set_generation(0);
  EXPECT_TRUE(absl::IsInvalidArgument(this->store_->SetPolicyConfiguration(negative)));
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy("root.a", 2)));
  EXPECT_EQ(Value(this->store_->GetPolicyConfiguration("root.a")).generation(), 3);
}

TYPED_TEST(FederationStoreTest, MasterKeys) {
  for (int32_t id : {0, -7, INT32_MAX, INT32_MIN}) {
    // Key 0 with nothing else set serializes to zero bytes: empty records round-trip too.
    const v1::RouterMasterKey key = id == 0 ? v1::RouterMasterKey() : MasterKey(id);
    ASSERT_OK(this->store_->StoreMasterKey(key));
    EXPECT_THAT(Value(this->store_->GetMasterKey(id)), EqualsProto(key));

    v1::RouterMasterKey other = MasterKey(id);
    other.set_expiry_ms(5);
    absl::Status again = this->store_->StoreMasterKey(other);
    EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
    EXPECT_THAT(Value(this->store_->GetMasterKey(id)), EqualsProto(key));  // Unchanged.
  }
  ASSERT_OK(this->store_->RemoveMasterKey(-7));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetMasterKey(-7).status()));
  absl::Status missing = this->store_->RemoveMasterKey(-7);
  EXPECT_TRUE(absl::IsNotFound(missing)) << missing;
  EXPECT_THAT(missing.message(), HasSubstr("-7"));
  EXPECT_THAT(Value(this->store_->GetMasterKey(INT32_MAX)), EqualsProto(MasterKey(INT32_MAX)));
}

TYPED_TEST(FederationStoreTest, Tokens) {
  for (int64_t seq : {int64_t{1}, int64_t{-1}, INT64_MAX}) {
    ASSERT_OK(this->store_->StoreToken(Token(seq)));
    EXPECT_TRUE(absl::IsAlreadyExists(this->store_->StoreToken(Token(seq, 99))));
    EXPECT_THAT(Value(this->store_->GetToken(seq)), EqualsProto(Token(seq)));
  }
  ASSERT_OK(this->store_->UpdateToken(Token(1, 1'800'000'000'000)));
  EXPECT_THAT(Value(this->store_->GetToken(1)), EqualsProto(Token(1, 1'800'000'000'000)));
  EXPECT_TRUE(absl::IsNotFound(this->store_->UpdateToken(Token(2))));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetToken(2).status()));

  ASSERT_OK(this->store_->RemoveToken(1));
  EXPECT_TRUE(absl::IsNotFound(this->store_->GetToken(1).status()));
  EXPECT_TRUE(absl::IsNotFound(this->store_->RemoveToken(1)));
  EXPECT_THAT(Value(this->store_->GetToken(INT64_MAX)), EqualsProto(Token(INT64_MAX)));
}

TYPED_TEST(FederationStoreTest, BadInputIsRefusedNamingTheFieldAndChangesNothing) {
  const v1::SubClusterInfo good = SubCluster("sc1");
  ASSERT_OK(this->store_->RegisterSubCluster(good));
  ASSERT_OK(this->store_->AddApplicationHomeSubCluster(AppHome("app_1", "sc1")).status());

  auto expect_invalid = [](const absl::Status& s, absl::string_view field) {
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(field)) << s;
  };
  v1::SubClusterInfo info = SubCluster("sc1");
  info.set_rm_address("");
  expect_invalid(this->store_->RegisterSubCluster(info),
                 "registering sub-cluster 'sc1': rm_address is empty");
  expect_invalid(this->store_->RegisterSubCluster(SubCluster("")), "sub-cluster id is empty");
  expect_invalid(this->store_->RegisterSubCluster(SubCluster("a/b")), "'a/b'");
  expect_invalid(this->store_->RegisterSubCluster(SubCluster(std::string(65, 'x'))), "over 64");
  expect_invalid(
      this->store_->RegisterSubCluster(SubCluster("sc1", v1::SUB_CLUSTER_STATE_UNSPECIFIED)),
      "state");
  info = SubCluster("sc1");
  (*info.mutable_capability()->mutable_values())["memory-mb"] = -1;
  expect_invalid(this->store_->RegisterSubCluster(info), "capability memory-mb=-1 is negative");
  info = SubCluster("sc1");
  info.set_apps_running(-3);
  expect_invalid(this->store_->SubClusterHeartbeat(info), "apps_running");
  expect_invalid(this->store_->SubClusterHeartbeat(SubCluster("sc 1")), "sub-cluster id");
  expect_invalid(this->store_->DeregisterSubCluster("sc1", v1::SUB_CLUSTER_STATE_UNSPECIFIED),
                 "state");
  expect_invalid(this->store_->DeregisterSubCluster("sc1", static_cast<v1::SubClusterState>(99)),
                 "state 99");
  expect_invalid(this->store_->GetSubCluster("").status(), "sub-cluster id");

  expect_invalid(this->store_->AddApplicationHomeSubCluster(AppHome("", "sc1")).status(),
                 "application_id is empty");
  expect_invalid(this->store_->AddApplicationHomeSubCluster(AppHome("app 2", "sc1")).status(),
                 "application_id");
  expect_invalid(this->store_->AddApplicationHomeSubCluster(AppHome("app_2", "")).status(),
                 "home_sub_cluster_id");
  expect_invalid(this->store_->UpdateApplicationHomeSubCluster(AppHome("app_1", "s/c")),
                 "home_sub_cluster_id");
  expect_invalid(this->store_->GetApplicationsHomeSubCluster("s/c").status(), "sub-cluster id");
  expect_invalid(this->store_->DeleteApplicationHomeSubCluster(""), "application_id");
  expect_invalid(this->store_->AddReservationHomeSubCluster(ReservationHome("", "sc1")).status(),
                 "reservation_id is empty");
  expect_invalid(this->store_->GetPolicyConfiguration("").status(), "queue is empty");

  EXPECT_THAT(this->SubClusters(), ElementsAre(EqualsProto(good)));
  EXPECT_THAT(Value(this->store_->GetApplicationsHomeSubCluster("")),
              ElementsAre(EqualsProto(AppHome("app_1", "sc1"))));
  EXPECT_THAT(Value(this->store_->GetReservationsHomeSubCluster()), IsEmpty());
}

TYPED_TEST(FederationStoreTest, IdsWithEveryAllowedCharacterRoundTrip) {
  const std::string id = "Az09._-" + std::string(57, 'x');  // 64 characters
  ASSERT_OK(this->store_->RegisterSubCluster(SubCluster(id)));
  EXPECT_EQ(Value(this->store_->GetSubCluster(id)).sub_cluster_id(), id);
  const std::string app = "app:%2F!~#";
  EXPECT_EQ(Value(this->store_->AddApplicationHomeSubCluster(AppHome(app, id))), id);
  EXPECT_EQ(Value(this->store_->GetApplicationHomeSubCluster(app)).application_id(), app);
  const std::string queue = "root.é/ q";  // Queues may hold any printable bytes.
  ASSERT_OK(this->store_->SetPolicyConfiguration(Policy(queue)));
  EXPECT_THAT(Value(this->store_->GetPolicyConfiguration(queue)),
              EqualsProto(Stored(Policy(queue))));
}

}  // namespace
}  // namespace weft::federation
