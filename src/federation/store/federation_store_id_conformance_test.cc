// Copyright Weft authors. One id space for the federation (issue 27), over every back-end:
// cluster timestamps claimed by RMs at start (insert-if-absent, distinct under concurrency) and
// application ids issued by routers (insert-if-absent, expiring). Part of
// federation_store_conformance_test (the back-ends: conformance_backends.h).
#include <sqlite3.h>

#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "federation/store/conformance_backends.h"
#include "federation/store/federation_store.h"
#include "federation/store/sqlite_federation_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/zk_client.h"
#include "store/zk_names.h"

namespace weft::federation {
namespace {

using conformance::BackendNames;
using conformance::Backends;
using conformance::EqualsProto;
using conformance::FederationStoreTest;
using conformance::TempDir;
using conformance::Value;
using conformance::ZooKeeperBackend;
using conformance::ZooKeeperServer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr int64_t kWantedMs = 1'700'000'000'000;

v1::IssuedApplicationId Issued(const std::string& app, const std::string& user,
                               int64_t issued_ms = 1'700'000'000'500,
                               const std::string& router = "r1") {
  v1::IssuedApplicationId i;
  i.set_application_id(app);
  i.set_user(user);
  i.set_issued_ms(issued_ms);
  i.set_router_id(router);
  i.set_sub_cluster_id("sc1");
  return i;
}

template <typename Backend>
class FederationStoreIdTest : public FederationStoreTest<Backend> {};
TYPED_TEST_SUITE(FederationStoreIdTest, Backends, BackendNames);

TYPED_TEST(FederationStoreIdTest, EveryClaimGetsTheFirstFreeTimestampFromTheWantedOne) {
  FederationStateStore& store = *this->store_;
  EXPECT_THAT(Value(store.GetClusterTimestampClaims()), IsEmpty());
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc1", kWantedMs)), kWantedMs);
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc2", kWantedMs)), kWantedMs + 1);
  // The same sub-cluster again (its HA partner, or its RM restarted): a value of its own too.
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc1", kWantedMs)), kWantedMs + 2);
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc3", kWantedMs + 1)), kWantedMs + 3);
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc3", kWantedMs + 100)), kWantedMs + 100);
  std::vector<v1::ClusterTimestampClaim> claims = Value(store.GetClusterTimestampClaims());
  ASSERT_THAT(claims, SizeIs(5));
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {kWantedMs, "sc1"},     {kWantedMs + 1, "sc2"},   {kWantedMs + 2, "sc1"},
      {kWantedMs + 3, "sc3"}, {kWantedMs + 100, "sc3"},
  };
  for (size_t i = 0; i < claims.size(); ++i) {
    EXPECT_EQ(claims[i].cluster_timestamp_ms(), expected[i].first) << i;
    EXPECT_EQ(claims[i].sub_cluster_id(), expected[i].second) << i;
  }
  EXPECT_EQ(claims[3].wanted_ms(), kWantedMs + 1);
  EXPECT_NE(claims[0].nonce(), claims[2].nonce());
}

TYPED_TEST(FederationStoreIdTest, ConcurrentClaimsOfTheSameMillisecondAreAllDistinct) {
  constexpr int kThreads = 6;
  constexpr int kClaimsEach = 4;
  absl::Mutex mu;
  std::vector<int64_t> claimed;
  std::vector<absl::Status> failures;
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, own = this->AnotherConnection()] {
        // Each RM its own connection where the back-end has them, as separate processes.
        FederationStateStore* store = own != nullptr ? own.get() : this->store_.get();
        for (int i = 0; i < kClaimsEach; ++i) {
          absl::StatusOr<int64_t> ts =
              store->ClaimClusterTimestamp(absl::StrCat("sc", t), kWantedMs);
          absl::MutexLock l(&mu);
          if (ts.ok()) {
            claimed.push_back(*ts);
          } else {
            failures.push_back(ts.status());
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  EXPECT_THAT(failures, IsEmpty());
  const std::set<int64_t> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(distinct.size(), claimed.size());
  ASSERT_EQ(claimed.size(), static_cast<size_t>(kThreads * kClaimsEach));
  // Nothing skipped: the values are exactly the first ones from the wanted millisecond.
  EXPECT_EQ(*distinct.begin(), kWantedMs);
  EXPECT_EQ(*distinct.rbegin(), kWantedMs + kThreads * kClaimsEach - 1);
  EXPECT_THAT(Value(this->store_->GetClusterTimestampClaims()), SizeIs(kThreads * kClaimsEach));
}

TYPED_TEST(FederationStoreIdTest, BadClaimsAreRefusedAndClaimNothing) {
  FederationStateStore& store = *this->store_;
  for (int64_t wanted : {int64_t{0}, int64_t{-5}, kMaxContainerEpoch - 1}) {
    absl::StatusOr<int64_t> ts = store.ClaimClusterTimestamp("sc1", wanted);
    EXPECT_TRUE(absl::IsInvalidArgument(ts.status())) << ts.status();
    EXPECT_THAT(ts.status().message(), HasSubstr("must be >= 8388608"));
  }
  absl::StatusOr<int64_t> ts = store.ClaimClusterTimestamp("bad id", kWantedMs);
  EXPECT_TRUE(absl::IsInvalidArgument(ts.status())) << ts.status();
  EXPECT_THAT(ts.status().message(), HasSubstr("bad id"));
  EXPECT_THAT(Value(store.GetClusterTimestampClaims()), IsEmpty());
}

// An app's home and its UAMs in other sub-clusters share one application id: their
// containers' ids differ only by the RMs' epochs, which the store hands out once each.
TYPED_TEST(FederationStoreIdTest, ContainerEpochsRiseAndAreNeverHandedOutTwice) {
  FederationStateStore& store = *this->store_;
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc1", 1)), 1);
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc2", 1)), 2);  // above every earlier claim
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc1", 2)), 3);  // sc1 restarted: rises
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc3", 40)), 40);  // at least its own next epoch
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc2", 3)), 41);
  // Timestamp claims are apart: neither listed with epochs nor in their way.
  EXPECT_EQ(Value(store.ClaimClusterTimestamp("sc1", kWantedMs)), kWantedMs);
  EXPECT_THAT(Value(store.GetClusterTimestampClaims()), SizeIs(1));
  EXPECT_EQ(Value(store.ClaimContainerEpoch("sc1", 1)), 42);
  for (int64_t bad : {int64_t{0}, int64_t{-1}}) {
    absl::StatusOr<int64_t> e = store.ClaimContainerEpoch("sc1", bad);
    EXPECT_TRUE(absl::IsInvalidArgument(e.status())) << e.status();
  }
  EXPECT_TRUE(absl::IsInvalidArgument(store.ClaimContainerEpoch("bad id", 1).status()));
  absl::StatusOr<int64_t> full = store.ClaimContainerEpoch("sc1", kMaxContainerEpoch);
  EXPECT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
}

TYPED_TEST(FederationStoreIdTest, ConcurrentEpochClaimsAreAllDistinct) {
  constexpr int kThreads = 4;
  constexpr int kClaimsEach = 3;
  absl::Mutex mu;
  std::vector<int64_t> claimed;
  {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t, own = this->AnotherConnection()] {
        FederationStateStore* store = own != nullptr ? own.get() : this->store_.get();
        for (int i = 0; i < kClaimsEach; ++i) {
          absl::StatusOr<int64_t> e = store->ClaimContainerEpoch(absl::StrCat("sc", t), 1);
          absl::MutexLock l(&mu);
          claimed.push_back(e.ok() ? *e : -1);
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }
  const std::set<int64_t> distinct(claimed.begin(), claimed.end());
  EXPECT_EQ(distinct.size(), claimed.size());
  EXPECT_FALSE(distinct.contains(-1));
}

TYPED_TEST(FederationStoreIdTest, AnIdIsIssuedOnceUntilItIsDeleted) {
  FederationStateStore& store = *this->store_;
  const v1::IssuedApplicationId first = Issued("application_1_0001", "alice");
  ASSERT_TRUE(store.AddIssuedApplicationId(first).ok());
  // Another router got the same id from an RM: refused, and the first issue stands.
  absl::Status again =
      store.AddIssuedApplicationId(Issued("application_1_0001", "bob", 1'700'000'000'900, "r2"));
  EXPECT_TRUE(absl::IsAlreadyExists(again)) << again;
  EXPECT_THAT(again.message(), HasSubstr("application_1_0001"));
  EXPECT_THAT(again.message(), HasSubstr("'r1'"));
  EXPECT_THAT(Value(store.GetIssuedApplicationId("application_1_0001")), EqualsProto(first));

  EXPECT_TRUE(store.DeleteIssuedApplicationId("application_1_0001").ok());
  EXPECT_TRUE(absl::IsNotFound(store.GetIssuedApplicationId("application_1_0001").status()));
  EXPECT_TRUE(absl::IsNotFound(store.DeleteIssuedApplicationId("application_1_0001")));
  EXPECT_TRUE(absl::IsNotFound(store.GetIssuedApplicationId("application_1_0002").status()));
  // Issued ids and homes are separate tables: an app's home does not make its id issued.
  v1::ApplicationHomeSubCluster home;
  home.set_application_id("application_1_0002");
  home.set_home_sub_cluster_id("sc1");
  ASSERT_TRUE(store.AddApplicationHomeSubCluster(home).ok());
  EXPECT_TRUE(absl::IsNotFound(store.GetIssuedApplicationId("application_1_0002").status()));
}

TYPED_TEST(FederationStoreIdTest, ConcurrentIssuesOfOneIdHaveOneWinner) {
  constexpr int kRouters = 6;
  std::vector<absl::Status> results(kRouters);
  {
    std::vector<std::thread> threads;
    for (int r = 0; r < kRouters; ++r) {
      threads.emplace_back([&, r, own = this->AnotherConnection()] {
        FederationStateStore* store = own != nullptr ? own.get() : this->store_.get();
        results[r] = store->AddIssuedApplicationId(
            Issued("application_7_0001", absl::StrCat("user", r), 1000 + r, absl::StrCat("r", r)));
      });
    }
    for (std::thread& t : threads) t.join();
  }
  int winners = 0;
  int winner = -1;
  for (int r = 0; r < kRouters; ++r) {
    if (results[r].ok()) {
      ++winners;
      winner = r;
    } else {
      EXPECT_TRUE(absl::IsAlreadyExists(results[r])) << results[r];
    }
  }
  ASSERT_EQ(winners, 1);
  EXPECT_EQ(Value(this->store_->GetIssuedApplicationId("application_7_0001")).user(),
            absl::StrCat("user", winner));
}

TYPED_TEST(FederationStoreIdTest, IdsIssuedBeforeACutOffAreDeleted) {
  FederationStateStore& store = *this->store_;
  ASSERT_TRUE(store.AddIssuedApplicationId(Issued("application_1_0001", "alice", 100)).ok());
  ASSERT_TRUE(store.AddIssuedApplicationId(Issued("application_1_0002", "alice", 200)).ok());
  ASSERT_TRUE(store.AddIssuedApplicationId(Issued("application_1_0003", "bob", 300)).ok());
  EXPECT_EQ(Value(store.DeleteIssuedApplicationIdsBefore(250)), 2);
  EXPECT_TRUE(absl::IsNotFound(store.GetIssuedApplicationId("application_1_0001").status()));
  EXPECT_TRUE(absl::IsNotFound(store.GetIssuedApplicationId("application_1_0002").status()));
  EXPECT_EQ(Value(store.GetIssuedApplicationId("application_1_0003")).user(), "bob");
  EXPECT_EQ(Value(store.DeleteIssuedApplicationIdsBefore(250)), 0);
  EXPECT_EQ(Value(store.DeleteIssuedApplicationIdsBefore(301)), 1);
  // Deleted: issuable again.
  EXPECT_TRUE(store.AddIssuedApplicationId(Issued("application_1_0001", "carol", 400)).ok());
}

TYPED_TEST(FederationStoreIdTest, BadIssuedIdsAreRefusedNamingTheFieldAndChangeNothing) {
  FederationStateStore& store = *this->store_;
  struct Case {
    v1::IssuedApplicationId issued;
    const char* field;
  };
  const Case cases[] = {
      {Issued("", "alice"), "application_id"},
      {Issued("application 1", "alice"), "application_id"},
      {Issued(std::string(257, 'a'), "alice"), "application_id"},
      {Issued("application_1_0001", ""), "user"},
  };
  for (const Case& c : cases) {
    absl::Status s = store.AddIssuedApplicationId(c.issued);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.field));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(store.GetIssuedApplicationId("").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store.DeleteIssuedApplicationId("a b")));
  EXPECT_EQ(Value(store.DeleteIssuedApplicationIdsBefore(int64_t{1} << 62)), 0);
}

TEST(MemoryFederationStoreIdTest, AClaimGivesUpAfterBoundedTriesClaimingNothing) {
  auto store = Value(OpenFederationStore("memory:"));
  ASSERT_NE(store, nullptr);
  for (int i = 0; i < kClusterTimestampClaimTries; ++i) {
    ASSERT_EQ(Value(store->ClaimClusterTimestamp("sc1", kWantedMs + i)), kWantedMs + i);
  }
  absl::StatusOr<int64_t> ts = store->ClaimClusterTimestamp("sc2", kWantedMs);
  EXPECT_TRUE(absl::IsResourceExhausted(ts.status())) << ts.status();
  EXPECT_THAT(ts.status().message(), HasSubstr("--cluster-timestamp-ms"));
  EXPECT_THAT(Value(store->GetClusterTimestampClaims()), SizeIs(kClusterTimestampClaimTries));
  // The next free one is still there for a wanted value beyond them.
  EXPECT_EQ(Value(store->ClaimClusterTimestamp("sc2", kWantedMs + 1)),
            kWantedMs + kClusterTimestampClaimTries);
}

TEST(SqliteFederationStoreIdTest, AStoreMadeBeforeTheIdTablesIsMigratedAndKeepsItsRecords) {
  TempDir dir;
  const std::string path = dir.path() + "/state.db";
  {
    auto store = Value(SqliteFederationStore::Open(path));
    ASSERT_NE(store, nullptr);
    v1::ApplicationHomeSubCluster home;
    home.set_application_id("application_1_0001");
    home.set_home_sub_cluster_id("sc1");
    ASSERT_TRUE(store->AddApplicationHomeSubCluster(home).ok());
  }
  // Back to schema version 1, as a binary from before issue 27 left it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "DROP TABLE cluster_timestamps; DROP TABLE issued_application_ids; "
                         "DELETE FROM weft_federation_schema WHERE version > 1",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = Value(SqliteFederationStore::Open(path));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(Value(store->ClaimClusterTimestamp("sc1", kWantedMs)), kWantedMs);
  EXPECT_TRUE(store->AddIssuedApplicationId(Issued("application_1_0002", "alice")).ok());
  EXPECT_EQ(Value(store->GetApplicationHomeSubCluster("application_1_0001")).home_sub_cluster_id(),
            "sc1");
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  int64_t version = 0;
  ASSERT_EQ(sqlite3_exec(
                db, "SELECT max(version) FROM weft_federation_schema",
                [](void* out, int, char** values, char**) {
                  *static_cast<int64_t*>(out) = values[0] != nullptr ? std::atoll(values[0]) : 0;
                  return 0;
                },
                &version, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(version, SqliteFederationStore::kSchemaVersion);
}

TEST(ZkFederationStoreIdTest, ClaimsAndIssuedIdsArePrivateProtosAtTheDocumentedPaths) {
  const std::string uri = ZooKeeperBackend::NewUri();
  auto store = Value(OpenFederationStore(uri));
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(Value(store->ClaimClusterTimestamp("sc.1", kWantedMs)), kWantedMs);
  const v1::IssuedApplicationId issued = Issued("application_1_0001", "alice");
  ASSERT_TRUE(store->AddIssuedApplicationId(issued).ok());

  std::string root = uri.substr(uri.find('/', 5));
  root = root.substr(0, root.find('?'));
  const std::vector<std::string> paths = {
      absl::StrCat(root, "/cluster-timestamps/", kWantedMs),
      root + "/issued-apps/" + store::zk::EscapeNodeName("application_1_0001"),
      root + "/cluster-timestamps", root + "/issued-apps"};
  auto stranger = Value(store::zk::ZkClient::Create(ZooKeeperServer()->connect_string(), 10000));
  ASSERT_NE(stranger, nullptr);
  ASSERT_TRUE(stranger->Connect(absl::Now() + absl::Seconds(10)).ok());
  for (const std::string& path : paths) {
    absl::Status denied = stranger->Get({path}, absl::Now() + absl::Seconds(10)).status();
    EXPECT_TRUE(absl::IsPermissionDenied(denied)) << path << ": " << denied;
  }
  auto client = Value(store::zk::ZkClient::Create(ZooKeeperServer()->connect_string(), 10000,
                                                  ZooKeeperServer()->auth()));
  ASSERT_NE(client, nullptr);
  ASSERT_TRUE(client->Connect(absl::Now() + absl::Seconds(10)).ok());
  auto nodes = Value(client->Get({paths[0], paths[1]}, absl::Now() + absl::Seconds(10)));
  ASSERT_THAT(nodes, SizeIs(2));
  v1::ClusterTimestampClaim claim;
  v1::IssuedApplicationId read;
  ASSERT_TRUE(claim.ParseFromString(nodes[0].data));
  ASSERT_TRUE(read.ParseFromString(nodes[1].data));
  EXPECT_EQ(claim.cluster_timestamp_ms(), kWantedMs);
  EXPECT_EQ(claim.sub_cluster_id(), "sc.1");
  EXPECT_THAT(read, EqualsProto(issued));
  EXPECT_THAT(Value(store->GetClusterTimestampClaims()), ElementsAre(EqualsProto(claim)));
}

}  // namespace
}  // namespace weft::federation
