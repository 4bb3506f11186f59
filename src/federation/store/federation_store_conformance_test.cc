// Copyright Weft authors. The FederationStateStore contract, run over every back-end: memory,
// SQLite, ZooKeeper and PostgreSQL (against private servers this test starts, once per binary).
// After the typed suite: what only one back-end does (reopening, migrations, server restarts)
// and OpenFederationStore's URIs. The back-ends and the fixture are in conformance_backends.h;
// cluster timestamps and issued application ids in federation_store_id_conformance_test.cc.
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "federation/store/conformance_backends.h"
#include "federation/store/federation_store.h"
#include "federation/store/postgres_federation_store.h"
#include "federation/store/sqlite_federation_store.h"
#include "federation/store/test_postgres.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "store/test_zookeeper.h"
#include "store/zk_client.h"
#include "store/zk_codec.h"

namespace weft::federation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::SizeIs;

using conformance::Backends;
using conformance::BackendNames;
using conformance::EqualsProto;
using conformance::FederationStoreTest;
using conformance::MemoryBackend;
using conformance::PostgresAdmin;
using conformance::PostgresBackend;
using conformance::PostgresServer;
using conformance::SqliteBackend;
using conformance::TempDir;
using conformance::Value;
using conformance::ZooKeeperBackend;
using conformance::ZooKeeperServer;

// --- Records ----------------------------------------------------------------------------------

v1::Resource MakeResource(int64_t memory_mb, int64_t vcores) {
  v1::Resource r;
  (*r.mutable_values())["memory-mb"] = memory_mb;
  (*r.mutable_values())["vcores"] = vcores;
  return r;
}

v1::SubClusterInfo SubCluster(const std::string& id, v1::SubClusterState state = v1::SC_RUNNING) {
  v1::SubClusterInfo info;
  info.set_sub_cluster_id(id);
  info.set_rm_address(absl::StrCat(id, "-rm1:8032,", id, "-rm2:8032"));
  info.set_rm_http_address(absl::StrCat(id, "-rm1:8088"));
  info.set_state(state);
  info.set_last_heartbeat_ms(1'700'000'000'000);
  info.set_last_start_ms(1'699'999'000'000);
  *info.mutable_capability() = MakeResource(8192, 8);
  *info.mutable_used() = MakeResource(1024, 1);
  *info.mutable_available() = MakeResource(7168, 7);
  *info.mutable_pending() = MakeResource(0, 0);
  info.set_active_nodes(4);
  info.set_apps_running(2);
  info.set_apps_pending(1);
  info.set_federation_commitment(0.5);
  return info;
}

// `generation`: as a store holds it after the add (1) and each update (+1), or as a caller read
// it for an update.
v1::ApplicationHomeSubCluster AppHome(const std::string& app, const std::string& home,
                                      int64_t generation = 1) {
  v1::ApplicationHomeSubCluster h;
  h.set_application_id(app);
  h.set_home_sub_cluster_id(home);
  h.set_create_time_ms(1'700'000'000'123);
  h.set_queue("root.default");
  h.set_user("alice");
  h.set_generation(generation);
  return h;
}

v1::ReservationHomeSubCluster ReservationHome(const std::string& id, const std::string& home,
                                              int64_t generation = 1) {
  v1::ReservationHomeSubCluster h;
  h.set_reservation_id(id);
  h.set_home_sub_cluster_id(home);
  h.set_generation(generation);
  return h;
}

v1::SubClusterPolicyConfiguration Policy(const std::string& queue, double sc1_weight = 1.0) {
  v1::SubClusterPolicyConfiguration c;
  c.set_queue(queue);
  c.set_router_policy("weighted-random");
  c.set_amrm_policy("locality-multicast");
  (*c.mutable_router_weights())["sc1"] = sc1_weight;
  (*c.mutable_router_weights())["sc2"] = 0;
  (*c.mutable_amrm_weights())["sc1"] = 0.25;
  c.set_headroom_alpha(0.5);
  c.set_resubmit_on_sub_cluster_loss(true);
  c.set_published_ms(1'700'000'000'000);
  c.set_published_by("gpg/gpg-1");
  return c;
}

// `config` as a store holds it at `generation`.
v1::SubClusterPolicyConfiguration Stored(v1::SubClusterPolicyConfiguration config,
                                         int64_t generation = 1) {
  config.set_generation(generation);
  return config;
}

v1::RouterMasterKey MasterKey(int32_t id) {
  v1::RouterMasterKey k;
  k.set_key_id(id);
  k.set_key_bytes(std::string("\0k\xffy\0", 5));
  k.set_expiry_ms(1'800'000'000'000);
  return k;
}

v1::RouterStoredToken Token(int64_t sequence_number, int64_t renew_date_ms = 1) {
  v1::RouterStoredToken t;
  t.set_sequence_number(sequence_number);
  t.set_identifier(std::string("id\0\x01", 4));
  t.set_renew_date_ms(renew_date_ms);
  t.set_password(std::string("\0pw", 3));
  return t;
}

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

// --- SQLite -----------------------------------------------------------------------------------

TEST(SqliteFederationStoreTest, StateSurvivesReopening) {
  TempDir dir;
  const std::string uri = absl::StrCat("sqlite:", dir.path(), "/a/b/state.db");
  {
    auto store = Value(OpenFederationStore(uri));
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->Describe(), uri);
    ASSERT_OK(store->RegisterSubCluster(SubCluster("sc1")));
    ASSERT_OK(store->AddApplicationHomeSubCluster(AppHome("app_1", "sc1")).status());
    ASSERT_OK(store->SetPolicyConfiguration(Policy("*")));
    ASSERT_OK(store->StoreToken(Token(5)));
  }
  auto store = Value(OpenFederationStore(uri));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Value(store->GetSubCluster("sc1")), EqualsProto(SubCluster("sc1")));
  EXPECT_THAT(Value(store->GetApplicationHomeSubCluster("app_1")),
              EqualsProto(AppHome("app_1", "sc1")));
  EXPECT_THAT(Value(store->GetPolicyConfiguration("*")), EqualsProto(Stored(Policy("*"))));
  EXPECT_THAT(Value(store->GetToken(5)), EqualsProto(Token(5)));
}

TEST(SqliteFederationStoreTest, RefusesANewerSchemaAndFilesThatAreNotDatabases) {
  TempDir dir;
  const std::string path = dir.path() + "/state.db";
  ASSERT_OK(SqliteFederationStore::Open(path).status());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string bump =
      absl::StrCat("INSERT INTO weft_federation_schema (version, applied_ms) VALUES (",
                   SqliteFederationStore::kSchemaVersion + 1, ", 0)");
  ASSERT_EQ(sqlite3_exec(db, bump.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  absl::Status newer = SqliteFederationStore::Open(path).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(newer)) << newer;
  EXPECT_THAT(newer.message(), HasSubstr("newer"));

  const std::string junk = dir.path() + "/junk.db";
  std::ofstream(junk) << std::string(4096, 'j');
  absl::Status not_db = OpenFederationStore("sqlite:" + junk).status();
  EXPECT_FALSE(not_db.ok());
  EXPECT_THAT(not_db.message(), HasSubstr(junk));
}

// --- ZooKeeper --------------------------------------------------------------------------------

TEST(ZkFederationStoreTest, RecordsAreProtosAtTheDocumentedPaths) {
  const std::string uri = ZooKeeperBackend::NewUri();
  auto store = Value(OpenFederationStore(uri));
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->RegisterSubCluster(SubCluster("sc.1")));
  ASSERT_OK(store->AddApplicationHomeSubCluster(AppHome("app_1", "sc.1")).status());
  ASSERT_OK(store->StoreToken(Token(12)));

  std::string root = uri.substr(uri.find('/', 5));
  root = root.substr(0, root.find('?'));
  const std::vector<std::string> paths = {root + "/membership/" + store::zk::EscapeNodeName("sc.1"),
                                          root + "/apps/app_1", root + "/router/tokens/12"};
  // Secrets at rest: a client without the store's credential reads nothing (the nodes carry
  // the creator-only digest ACL), not even the routers' tokens.
  auto stranger = Value(store::zk::ZkClient::Create(ZooKeeperServer()->connect_string(), 10000));
  ASSERT_NE(stranger, nullptr);
  ASSERT_OK(stranger->Connect(absl::Now() + absl::Seconds(10)));
  for (const std::string& path : paths) {
    absl::Status denied = stranger->Get({path}, absl::Now() + absl::Seconds(10)).status();
    EXPECT_TRUE(absl::IsPermissionDenied(denied)) << path << ": " << denied;
  }
  auto client = Value(store::zk::ZkClient::Create(ZooKeeperServer()->connect_string(), 10000,
                                                  ZooKeeperServer()->auth()));
  ASSERT_NE(client, nullptr);
  ASSERT_OK(client->Connect(absl::Now() + absl::Seconds(10)));
  auto nodes = Value(client->Get(paths, absl::Now() + absl::Seconds(10)));
  ASSERT_THAT(nodes, SizeIs(3));
  v1::SubClusterInfo info;
  v1::ApplicationHomeSubCluster home;
  v1::RouterStoredToken token;
  EXPECT_TRUE(info.ParseFromString(nodes[0].data));
  EXPECT_TRUE(home.ParseFromString(nodes[1].data));
  EXPECT_TRUE(token.ParseFromString(nodes[2].data));
  EXPECT_THAT(info, EqualsProto(SubCluster("sc.1")));
  EXPECT_THAT(home, EqualsProto(AppHome("app_1", "sc.1")));
  EXPECT_THAT(token, EqualsProto(Token(12)));
}

TEST(ZkFederationStoreTest, ACredentialIsRequiredAndMustBePrivate) {
  store::TestZooKeeper* server = ZooKeeperServer();
  ASSERT_NE(server, nullptr);
  const std::string bare = absl::StrCat("zk://", server->connect_string(), "/conformance/bare");
  absl::Status none = OpenFederationStore(bare).status();
  EXPECT_TRUE(absl::IsInvalidArgument(none)) << none;
  EXPECT_THAT(none.message(), HasSubstr("auth-file"));
  TempDir dir;
  const std::string open_file = dir.path() + "/zk-auth";
  {
    std::ofstream out(open_file);
    out << server->auth();
  }
  ASSERT_EQ(::chmod(open_file.c_str(), 0644), 0);
  absl::Status loose = OpenFederationStore(bare + "?auth-file=" + open_file).status();
  EXPECT_FALSE(loose.ok());
  EXPECT_THAT(loose.message(), HasSubstr("chmod 0600"));
  EXPECT_THAT(loose.message(), Not(HasSubstr(server->auth().substr(8))));  // never the secret
}

TEST(ZkFederationStoreTest, WorksAfterTheServerRestarts) {
  store::TestZooKeeper* server = ZooKeeperServer();
  ASSERT_NE(server, nullptr);
  auto store = Value(OpenFederationStore(ZooKeeperBackend::NewUri()));
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->RegisterSubCluster(SubCluster("sc1")));
  ASSERT_OK(server->Restart());
  // The store reconnects within its call; what was committed before the crash is there.
  EXPECT_THAT(Value(store->GetSubCluster("sc1")), EqualsProto(SubCluster("sc1")));
  ASSERT_OK(store->RegisterSubCluster(SubCluster("sc2")));
  EXPECT_THAT(Value(store->GetSubClusters(false)), SizeIs(2));
}

// --- PostgreSQL -------------------------------------------------------------------------------

// The single value of a query run on the store's schema, as text.
absl::StatusOr<std::string> QueryOne(const std::string& uri, const std::string& sql) {
  PGconn* conn = PQconnectdb(uri.c_str());
  absl::StatusOr<std::string> value = absl::UnavailableError(PQerrorMessage(conn));
  if (PQstatus(conn) == CONNECTION_OK) {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1) {
      value = std::string(PQgetvalue(result, 0, 0));
    } else if (PQresultStatus(result) == PGRES_COMMAND_OK) {
      value = std::string();
    } else {
      value = absl::InternalError(absl::StrCat(sql, ": ", PQresultErrorMessage(result)));
    }
    PQclear(result);
  }
  PQfinish(conn);
  return value;
}

TEST(PostgresFederationStoreTest, StateSurvivesReopeningAndTheMigrationIsRecorded) {
  const std::string uri = Value(PostgresBackend::NewUri());
  ASSERT_FALSE(uri.empty());
  {
    auto store = Value(OpenFederationStore(uri));
    ASSERT_NE(store, nullptr);
    ASSERT_OK(store->RegisterSubCluster(SubCluster("sc1")));
    ASSERT_OK(store->AddReservationHomeSubCluster(ReservationHome("rsv_1", "sc1")).status());
    ASSERT_OK(store->StoreMasterKey(MasterKey(3)));
  }
  EXPECT_EQ(Value(QueryOne(uri, "SELECT max(version) FROM weft_federation_schema")),
            absl::StrCat(PostgresFederationStore::kSchemaVersion));
  EXPECT_EQ(Value(QueryOne(uri, "SELECT count(*) FROM weft_federation_schema")),
            absl::StrCat(PostgresFederationStore::kSchemaVersion));
  EXPECT_EQ(Value(QueryOne(uri, "SELECT sub_cluster_id FROM sub_clusters")), "sc1");

  auto store = Value(OpenFederationStore(uri));  // Migrations already applied: nothing to do.
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Value(store->GetSubCluster("sc1")), EqualsProto(SubCluster("sc1")));
  EXPECT_THAT(Value(store->GetReservationHomeSubCluster("rsv_1")),
              EqualsProto(ReservationHome("rsv_1", "sc1")));
  EXPECT_THAT(Value(store->GetMasterKey(3)), EqualsProto(MasterKey(3)));
  EXPECT_EQ(Value(QueryOne(uri, "SELECT count(*) FROM weft_federation_schema")),
            absl::StrCat(PostgresFederationStore::kSchemaVersion));
}

// Secrets at rest (issue 26): the server asks for a password, a URI may not carry one, a
// server that asks none (trust) is refused, and another role reads none of the store's tables.
TEST(PostgresFederationStoreTest, NobodyElseReadsTheStore) {
  TestPostgres* server = PostgresServer();
  ASSERT_NE(server, nullptr);
  const std::string uri = Value(PostgresBackend::NewUri());
  {
    auto store = Value(OpenFederationStore(uri));
    ASSERT_NE(store, nullptr);
    ASSERT_OK(store->StoreMasterKey(MasterKey(9)));
  }
  const std::string schema = uri.substr(uri.find("search_path%3D") + 14);

  // Without the password: refused by the server.
  absl::Status anonymous = QueryOne(server->uri_without_password(), "SELECT 1").status();
  EXPECT_TRUE(absl::IsUnavailable(anonymous)) << anonymous;
  EXPECT_THAT(anonymous.message(), HasSubstr("password"));
  absl::Status opened = OpenFederationStore(server->uri_without_password()).status();
  EXPECT_FALSE(opened.ok());

  // Another role of the same server, with its own password: no table of the store.
  ASSERT_OK(PostgresAdmin("DROP ROLE IF EXISTS intruder"));
  ASSERT_OK(PostgresAdmin("CREATE ROLE intruder LOGIN PASSWORD 'intruder-pw'"));
  TempDir dir;
  const std::string passfile = dir.path() + "/pgpass";
  {
    std::ofstream out(passfile);
    out << "*:*:*:intruder:intruder-pw\n";
  }
  ASSERT_EQ(::chmod(passfile.c_str(), 0600), 0);
  const std::string intruder = absl::StrCat("postgresql://intruder@127.0.0.1:", server->port(),
                                            "/postgres?passfile=", passfile);
  ASSERT_OK(QueryOne(intruder, "SELECT 1").status());  // the role itself works
  for (const char* table : {"router_master_keys", "router_tokens", "application_homes",
                            "sub_clusters", "policies", "cluster_timestamps",
                            "issued_application_ids"}) {
    absl::Status denied =
        QueryOne(intruder, absl::StrCat("SELECT count(*) FROM ", schema, ".", table)).status();
    EXPECT_FALSE(denied.ok()) << table;
    EXPECT_THAT(denied.message(), HasSubstr("permission denied")) << table;
  }
  EXPECT_EQ(Value(QueryOne(uri, "SELECT count(*) FROM router_master_keys")), "1");

  // A server that lets a role in without a password (trust) is refused by the store.
  ASSERT_OK(PostgresAdmin("DROP ROLE IF EXISTS trusted"));
  ASSERT_OK(PostgresAdmin("CREATE ROLE trusted LOGIN"));
  const std::string hba = server->dir() + "/data/pg_hba.conf";
  std::string rules;
  {
    std::ifstream in(hba);
    rules.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  {
    std::ofstream out(hba, std::ios::trunc);
    out << "host all trusted 127.0.0.1/32 trust\n" << rules;
  }
  ASSERT_OK(PostgresAdmin("SELECT pg_reload_conf()"));
  // The postmaster applies the reload asynchronously: until then the role is refused for want
  // of a password (Unavailable). Bounded: 10 s.
  absl::Status trusted;
  for (int i = 0; i < 200; ++i) {
    trusted = OpenFederationStore(
                  absl::StrCat("postgresql://trusted@127.0.0.1:", server->port(), "/postgres"))
                  .status();
    if (!absl::IsUnavailable(trusted)) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_TRUE(absl::IsFailedPrecondition(trusted)) << trusted;
  EXPECT_THAT(trusted.message(), HasSubstr("without a password"));
  {
    std::ofstream out(hba, std::ios::trunc);
    out << rules;
  }
  ASSERT_OK(PostgresAdmin("SELECT pg_reload_conf()"));

  // A password in the URI (any local user reads argv) is refused before connecting.
  absl::Status in_uri =
      OpenFederationStore("postgresql://postgres:hunter2@127.0.0.1:1/postgres").status();
  EXPECT_TRUE(absl::IsInvalidArgument(in_uri)) << in_uri;
  EXPECT_THAT(in_uri.message(), HasSubstr("passfile"));
  EXPECT_THAT(in_uri.message(), Not(HasSubstr("hunter2")));
}

TEST(PostgresFederationStoreTest, RefusesANewerSchema) {
  const std::string uri = Value(PostgresBackend::NewUri());
  ASSERT_OK(OpenFederationStore(uri).status());
  ASSERT_OK(QueryOne(uri, absl::StrCat("INSERT INTO weft_federation_schema (version) VALUES (",
                                       PostgresFederationStore::kSchemaVersion + 1, ")"))
                .status());
  absl::Status newer = OpenFederationStore(uri).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(newer)) << newer;
  EXPECT_THAT(newer.message(), HasSubstr("newer than this binary's"));
}

TEST(PostgresFederationStoreTest, StoresOnSeparateConnectionsAgreeOnOneHome) {
  const std::string uri = Value(PostgresBackend::NewUri());
  std::vector<std::unique_ptr<FederationStateStore>> stores;
  for (int i = 0; i < 3; ++i) {
    stores.push_back(Value(OpenFederationStore(uri)));
    ASSERT_NE(stores.back(), nullptr);
  }
  std::vector<absl::StatusOr<std::string>> homes(6, absl::UnknownError("not run"));
  absl::Notification go;
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&, i] {
      go.WaitForNotification();
      homes[i] =
          stores[i % 3]->AddApplicationHomeSubCluster(AppHome("app_1", absl::StrCat("sc", i)));
    });
  }
  go.Notify();
  for (std::thread& t : threads) t.join();
  std::set<std::string> answers;
  for (const auto& home : homes) {
    ASSERT_TRUE(home.ok()) << home.status();
    answers.insert(*home);
  }
  EXPECT_THAT(answers, SizeIs(1));
}

TEST(PostgresFederationStoreTest, UnavailableWhileTheServerIsDownThenReconnects) {
  TestPostgres* server = PostgresServer();
  ASSERT_NE(server, nullptr);
  auto store = Value(OpenFederationStore(Value(PostgresBackend::NewUri())));
  ASSERT_NE(store, nullptr);
  ASSERT_OK(store->RegisterSubCluster(SubCluster("sc1")));

  ASSERT_OK(server->Stop());
  absl::Status down = store->GetSubCluster("sc1").status();
  EXPECT_TRUE(absl::IsUnavailable(down)) << down;
  EXPECT_THAT(down.message(), HasSubstr("127.0.0.1"));  // libpq's "connection to server at ..."
  EXPECT_THAT(down.message(), HasSubstr("getting sub-cluster 'sc1'"));

  ASSERT_OK(server->Restart());
  EXPECT_THAT(Value(store->GetSubCluster("sc1")), EqualsProto(SubCluster("sc1")));
}

TEST(PostgresFederationStoreTest, UnreachableServerIsUnavailable) {
  absl::Status s = OpenFederationStore("postgresql://postgres@127.0.0.1:1/weft").status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("postgresql://postgres@127.0.0.1:1/weft"));
}

// --- URIs -------------------------------------------------------------------------------------

TEST(OpenFederationStoreTest, BadUrisAreRefusedNamingTheUri) {
  for (const std::string uri :
       {"", "memory", "mysql://db/weft", "sqlite:", "zk://", "zk://127.0.0.1:2181",
        "zk://127.0.0.1:2181/", "zk://127.0.0.1/weft", "zk://127.0.0.1:99999/weft",
        "zk://:2181/weft", "zk://127.0.0.1:2181//weft", "zk://127.0.0.1:2181/zookeeper/x",
        "postgresql://%zz/weft", "postgres://host:5432/weft?nosuchoption=1"}) {
    absl::Status s = OpenFederationStore(uri).status();
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << uri << ": " << s;
    if (!uri.empty()) {
      EXPECT_THAT(s.message(), HasSubstr(absl::StrCat("'", uri, "'"))) << s;
    }
  }
}

TEST(OpenFederationStoreTest, PasswordsAreNotRepeated) {
  EXPECT_EQ(RedactPostgresUri("postgresql://weft:s3cret@db:5432/fed?sslmode=require"),
            "postgresql://weft:***@db:5432/fed?sslmode=require");
  EXPECT_EQ(RedactPostgresUri("postgres://db/fed?user=weft&password=s3cret&x=1"),
            "postgres://db/fed?user=weft&password=***&x=1");
  EXPECT_EQ(RedactPostgresUri("postgresql://weft@db/fed"), "postgresql://weft@db/fed");
  absl::Status s = OpenFederationStore("postgresql://weft:s3cret@127.0.0.1:1/fed?bad=1").status();
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), Not(HasSubstr("s3cret")));
  EXPECT_THAT(s.message(), HasSubstr("postgresql://weft:***@127.0.0.1:1/fed"));
}

}  // namespace
}  // namespace weft::federation
