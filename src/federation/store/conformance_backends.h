// Copyright Weft authors. FOR TESTS: what the FederationStateStore conformance suite shares
// between its files (one test binary): the back-ends it runs over (memory, SQLite, and
// ZooKeeper and PostgreSQL servers started once per binary), the typed fixture, and helpers.
#ifndef WEFT_FEDERATION_STORE_CONFORMANCE_BACKENDS_H_
#define WEFT_FEDERATION_STORE_CONFORMANCE_BACKENDS_H_

#include <libpq-fe.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "federation/store/federation_store.h"
#include "federation/store/test_postgres.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "store/test_zookeeper.h"

namespace weft::federation::conformance {

MATCHER_P(EqualsProto, expected, expected.ShortDebugString()) {
  *result_listener << arg.ShortDebugString();
  return google::protobuf::util::MessageDifferencer::Equals(arg, expected);
}

// The value of an OK StatusOr; a test failure (and T{}) otherwise.
template <typename T>
T Value(absl::StatusOr<T> value) {
  EXPECT_TRUE(value.ok()) << value.status();
  return value.ok() ? *std::move(value) : T{};
}

#define EXPECT_OK(expr)                   \
  do {                                    \
    const absl::Status status_ = (expr);  \
    EXPECT_TRUE(status_.ok()) << status_; \
  } while (0)
#define ASSERT_OK(expr)                   \
  do {                                    \
    const absl::Status status_ = (expr);  \
    ASSERT_TRUE(status_.ok()) << status_; \
  } while (0)

// A fresh directory under the test temp dir, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = absl::StrCat(::testing::TempDir(), "weft_federation_store.XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp(" << pattern << ")";
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// --- Back-ends ----------------------------------------------------------------------------------
// Each StoreUri() names a new, empty store; `dir` is a fresh temporary directory it may use.

struct MemoryBackend {
  static constexpr const char* kName = "Memory";
  static absl::StatusOr<std::string> StoreUri(const std::string&) { return "memory:"; }
};

struct SqliteBackend {
  static constexpr const char* kName = "Sqlite";
  static absl::StatusOr<std::string> StoreUri(const std::string& dir) {
    return absl::StrCat("sqlite:", dir, "/federation/state.db");
  }
};

// One server for the whole program (started by the first test that needs it, stopped at exit),
// and a new root per store.
inline store::TestZooKeeper* ZooKeeperServer() {
  static auto* server =
      new absl::StatusOr<std::unique_ptr<store::TestZooKeeper>>(store::TestZooKeeper::Start());
  static const bool at_exit = [] {
    std::atexit([] { delete server; });
    return true;
  }();
  (void)at_exit;
  EXPECT_TRUE(server->ok()) << server->status();
  return server->ok() ? server->value().get() : nullptr;
}

struct ZooKeeperBackend {
  static constexpr const char* kName = "ZooKeeper";
  static std::string NewUri() {
    static int stores = 0;
    store::TestZooKeeper* server = ZooKeeperServer();
    if (server == nullptr) return "zk://127.0.0.1:1/unavailable";
    return absl::StrCat("zk://", server->connect_string(), "/conformance/store-", ++stores,
                        "?auth-file=", server->auth_file());
  }
  static absl::StatusOr<std::string> StoreUri(const std::string&) { return NewUri(); }
};

inline TestPostgres* PostgresServer() {
  static auto* server = new absl::StatusOr<std::unique_ptr<TestPostgres>>(TestPostgres::Start());
  static const bool at_exit = [] {
    std::atexit([] { delete server; });
    return true;
  }();
  (void)at_exit;
  EXPECT_TRUE(server->ok()) << server->status();
  return server->ok() ? server->value().get() : nullptr;
}

// Runs one statement on the test server's "postgres" database as its superuser.
inline absl::Status PostgresAdmin(const std::string& sql) {
  TestPostgres* server = PostgresServer();
  if (server == nullptr) return absl::UnavailableError("no PostgreSQL server");
  PGconn* conn = PQconnectdb(server->uri().c_str());
  absl::Status status;
  if (PQstatus(conn) != CONNECTION_OK) {
    status = absl::UnavailableError(PQerrorMessage(conn));
  } else {
    PGresult* result = PQexec(conn, sql.c_str());
    if (PQresultStatus(result) != PGRES_COMMAND_OK && PQresultStatus(result) != PGRES_TUPLES_OK) {
      status = absl::InternalError(absl::StrCat(sql, ": ", PQresultErrorMessage(result)));
    }
    PQclear(result);
  }
  PQfinish(conn);
  return status;
}

// Each store gets its own PostgreSQL schema (its search_path) in the server's one database.
struct PostgresBackend {
  static constexpr const char* kName = "Postgres";
  static absl::StatusOr<std::string> NewUri() {
    static int stores = 0;
    const std::string schema = absl::StrCat("store_", ++stores);
    if (absl::Status s = PostgresAdmin(absl::StrCat("CREATE SCHEMA ", schema)); !s.ok()) return s;
    return absl::StrCat(PostgresServer()->uri(), "&options=-csearch_path%3D", schema);
  }
  static absl::StatusOr<std::string> StoreUri(const std::string&) { return NewUri(); }
};

template <typename Backend>
class FederationStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> uri = Backend::StoreUri(dir_.path());
    ASSERT_TRUE(uri.ok()) << uri.status();
    uri_ = *std::move(uri);
    auto store = OpenFederationStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Another connection to store_'s data, as another process would open it; null for the
  // memory store, which lives in store_ only.
  std::unique_ptr<FederationStateStore> AnotherConnection() {
    if (uri_ == "memory:") return nullptr;
    auto store = OpenFederationStore(uri_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::vector<v1::SubClusterInfo> SubClusters(bool only_active = false) {
    return Value(store_->GetSubClusters(only_active));
  }

  TempDir dir_;
  std::string uri_;  // store_'s
  std::unique_ptr<FederationStateStore> store_;
};

class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend, ZooKeeperBackend, PostgresBackend>;

// --- Records ----------------------------------------------------------------------------------

inline v1::Resource MakeResource(int64_t memory_mb, int64_t vcores) {
  v1::Resource r;
  (*r.mutable_values())["memory-mb"] = memory_mb;
  (*r.mutable_values())["vcores"] = vcores;
  return r;
}

inline v1::SubClusterInfo SubCluster(const std::string& id,
                                     v1::SubClusterState state = v1::SC_RUNNING) {
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
inline v1::ApplicationHomeSubCluster AppHome(const std::string& app, const std::string& home,
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

inline v1::ReservationHomeSubCluster ReservationHome(const std::string& id, const std::string& home,
                                                     int64_t generation = 1) {
  v1::ReservationHomeSubCluster h;
  h.set_reservation_id(id);
  h.set_home_sub_cluster_id(home);
  h.set_generation(generation);
  return h;
}

inline v1::SubClusterPolicyConfiguration Policy(const std::string& queue, double sc1_weight = 1.0) {
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
inline v1::SubClusterPolicyConfiguration Stored(v1::SubClusterPolicyConfiguration config,
                                                int64_t generation = 1) {
  config.set_generation(generation);
  return config;
}

inline v1::RouterMasterKey MasterKey(int32_t id) {
  v1::RouterMasterKey k;
  k.set_key_id(id);
  k.set_key_bytes(std::string("\0k\xffy\0", 5));
  k.set_expiry_ms(1'800'000'000'000);
  return k;
}

inline v1::RouterStoredToken Token(int64_t sequence_number, int64_t renew_date_ms = 1) {
  v1::RouterStoredToken t;
  t.set_sequence_number(sequence_number);
  t.set_identifier(std::string("id\0\x01", 4));
  t.set_renew_date_ms(renew_date_ms);
  t.set_password(std::string("\0pw", 3));
  return t;
}

}  // namespace weft::federation::conformance

#endif  // WEFT_FEDERATION_STORE_CONFORMANCE_BACKENDS_H_
