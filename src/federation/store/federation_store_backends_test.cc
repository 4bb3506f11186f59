// Copyright Weft authors. What only one federation store back-end does, beyond the contract:
// SQLite reopening and migrations, ZooKeeper's layout, credentials and server restarts,
// PostgreSQL's migrations, privileges and reconnection; and OpenFederationStore's URIs. Part of
// federation_store_conformance_test (its servers: conformance_backends.h).
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
#include "common/test_poll.h"
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
#include "store/zk_names.h"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::SizeIs;

using conformance::AppHome;
using conformance::EqualsProto;
using conformance::MasterKey;
using conformance::Policy;
using conformance::PostgresAdmin;
using conformance::PostgresBackend;
using conformance::PostgresServer;
using conformance::ReservationHome;
using conformance::Stored;
using conformance::SubCluster;
using conformance::TempDir;
using conformance::Token;
using conformance::Value;
using conformance::ZooKeeperBackend;
using conformance::ZooKeeperServer;

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

// A federation store an earlier Weft wrote open to everyone: opening it with the credential
// closes its nodes to that credential before anything is served from them.
TEST(ZkFederationStoreTest, NodesAnEarlierWeftLeftOpenAreClosedWhenTheStoreOpens) {
  ASSERT_NE(ZooKeeperServer(), nullptr);
  // Under a root of its own: the shared one is closed to the credential by the other tests.
  const std::string root = "/earlier-weft/federation";
  const std::string uri = absl::StrCat("zk://", ZooKeeperServer()->connect_string(), root,
                                       "?auth-file=", ZooKeeperServer()->auth_file());
  auto open = Value(store::zk::ZkClient::Create(ZooKeeperServer()->connect_string(), 10000));
  ASSERT_NE(open, nullptr);
  ASSERT_OK(open->Connect(absl::Now() + absl::Seconds(10)));
  std::vector<std::string> layout;
  for (size_t slash = root.find('/', 1); slash != std::string::npos;
       slash = root.find('/', slash + 1))
    layout.push_back(root.substr(0, slash));
  layout.push_back(root);
  layout.push_back(root + "/apps");
  for (const std::string& path : layout) {
    auto created = Value(open->Multi({store::zk::ZkClient::Op::Create(path, "")},
                                     absl::Now() + absl::Seconds(10)));
    ASSERT_TRUE(created.rc == ZOK || created.rc == ZNODEEXISTS) << path << ": " << created.rc;
  }
  const std::string app = root + "/apps/app_1";
  auto created = Value(open->Multi(
      {store::zk::ZkClient::Op::Create(app, AppHome("app_1", "sc.1").SerializeAsString())},
      absl::Now() + absl::Seconds(10)));
  ASSERT_EQ(created.rc, ZOK);
  ASSERT_OK(open->Get({app}, absl::Now() + absl::Seconds(10)).status());  // open: readable

  auto store = Value(OpenFederationStore(uri));
  ASSERT_NE(store, nullptr);
  for (const std::string& path : {root, root + "/apps", app}) {
    absl::Status denied = open->Get({path}, absl::Now() + absl::Seconds(10)).status();
    EXPECT_TRUE(absl::IsPermissionDenied(denied)) << path << ": " << denied;
  }
  auto home = Value(store->GetApplicationHomeSubCluster("app_1"));
  EXPECT_EQ(home.home_sub_cluster_id(), "sc.1");
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
  for (const char* table :
       {"router_master_keys", "router_tokens", "application_homes", "sub_clusters", "policies",
        "cluster_timestamps", "issued_application_ids"}) {
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
  PollUntil(
      [&] {
        trusted = OpenFederationStore(
                      absl::StrCat("postgresql://trusted@127.0.0.1:", server->port(), "/postgres"))
                      .status();
        return !absl::IsUnavailable(trusted);
      },
      absl::Seconds(10), absl::Milliseconds(50));
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
