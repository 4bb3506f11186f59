// Copyright Weft authors. The HistoryStore contract (history/history_store.h) over every
// back-end (memory, SQLite), then what only the SQLite one does: durability across reopening,
// a private file, a schema version; what only the PostgreSQL one does: a server that goes away
// and comes back; and OpenHistoryStore's URLs.
#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "federation/store/test_postgres.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "history/history_store.h"
#include "history/memory_history_store.h"
#include "history/open_history_store.h"
#include "history/postgres_history_store.h"
#include "history/sqlite_history_store.h"

namespace weft::history {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

MATCHER_P(EqualsProto, expected, expected.ShortDebugString()) {
  *result_listener << arg.ShortDebugString();
  return google::protobuf::util::MessageDifferencer::Equals(arg, expected);
}

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

class HistoryTempDir {
 public:
  HistoryTempDir() {
    std::string pattern = absl::StrCat(::testing::TempDir(), "weft_history_store.XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp(" << pattern << ")";
    path_ = pattern;
  }
  ~HistoryTempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct MemoryBackend {
  static absl::StatusOr<std::unique_ptr<HistoryStore>> Make(const std::string&) {
    return std::make_unique<MemoryHistoryStore>();
  }
};

struct SqliteBackend {
  static absl::StatusOr<std::unique_ptr<HistoryStore>> Make(const std::string& dir) {
    absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> store =
        SqliteHistoryStore::Open(dir + "/history/history.db");
    if (!store.ok()) return store.status();
    return std::unique_ptr<HistoryStore>(std::move(*store));
  }
};

// One PostgreSQL server for the whole binary (started on first use, stopped at exit); each store
// gets its own schema in it.
federation::TestPostgres* PostgresServer() {
  static auto* server = new absl::StatusOr<std::unique_ptr<federation::TestPostgres>>(
      federation::TestPostgres::Start());
  static const bool at_exit = [] {
    std::atexit([] { delete server; });
    return true;
  }();
  (void)at_exit;
  EXPECT_TRUE(server->ok()) << server->status();
  return server->ok() ? server->value().get() : nullptr;
}

// Runs `sql` on the test server's "postgres" database as its superuser.
absl::Status PostgresAdmin(const std::string& sql) {
  federation::TestPostgres* server = PostgresServer();
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

// A URL of the test server whose search_path is a new, empty schema.
absl::StatusOr<std::string> NewPostgresUrl() {
  static int stores = 0;
  const std::string schema = absl::StrCat("history_", ++stores);
  if (absl::Status s = PostgresAdmin(absl::StrCat("CREATE SCHEMA ", schema)); !s.ok()) return s;
  return absl::StrCat(PostgresServer()->uri(), "&options=-csearch_path%3D", schema);
}

struct PostgresBackend {
  static absl::StatusOr<std::unique_ptr<HistoryStore>> Make(const std::string&) {
    absl::StatusOr<std::string> url = NewPostgresUrl();
    if (!url.ok()) return url.status();
    return OpenHistoryStore(*url);
  }
};

v1::ApplicationHistoryRecord App(const std::string& id, const std::string& user,
                                 const std::string& queue, int64_t finish_ms,
                                 v1::ApplicationState state = v1::APP_FINISHED) {
  v1::ApplicationHistoryRecord app;
  app.set_application_id(id);
  app.set_user(user);
  app.set_queue(queue);
  app.set_name("job " + id);
  app.set_application_type("MAPREDUCE");
  app.add_application_tags("nightly");
  app.set_submit_time_ms(finish_ms - 300);
  app.set_start_time_ms(finish_ms - 200);
  app.set_finish_time_ms(finish_ms);
  app.set_final_state(state);
  app.set_final_status(state == v1::APP_FINISHED ? v1::FINAL_SUCCEEDED : v1::FINAL_FAILED);
  app.set_current_attempt_id(id + "_att1");
  app.set_host("node1");
  app.set_rpc_port(4000);
  app.set_view_acl("carol");
  app.set_priority(3);
  return app;  // no containers yet: every aggregate is 0
}

v1::AttemptHistoryRecord Attempt(const std::string& id, const std::string& app_id) {
  v1::AttemptHistoryRecord attempt;
  attempt.set_attempt_id(id);
  attempt.set_application_id(app_id);
  attempt.set_host("node1");
  attempt.set_am_container_id(id + "_c1");
  attempt.set_start_time_ms(100);
  attempt.set_finish_time_ms(200);
  attempt.set_state(v1::ATTEMPT_FINISHED);
  return attempt;
}

v1::ContainerHistoryRecord Container(const std::string& id, const std::string& app_id,
                                     const std::string& attempt_id) {
  v1::ContainerHistoryRecord container;
  container.set_container_id(id);
  container.set_application_id(app_id);
  container.set_attempt_id(attempt_id);
  container.set_node_id("node1:8041");
  (*container.mutable_allocated())["memory-mb"] = 1024;
  (*container.mutable_allocated())["vcores"] = 1;
  container.set_priority(1);
  container.set_start_time_ms(100);
  container.set_finish_time_ms(200);
  container.set_exit_status(0);
  container.set_state(v1::CONTAINER_COMPLETE);
  container.set_memory_mb_seconds(900);
  container.set_vcore_seconds(1);
  container.set_max_rss_bytes(512 << 20);
  return container;
}

std::vector<std::string> AppIds(const std::vector<v1::ApplicationHistoryRecord>& apps) {
  std::vector<std::string> ids;
  for (const auto& app : apps) ids.push_back(app.application_id());
  return ids;
}

template <typename Backend>
class HistoryStoreConformance : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<HistoryStore>> store = Backend::Make(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  // app_1 (alice, a, 1000), app_2 (bob, b, 3000, FAILED), app_3 (alice, b, 2000),
  // app_4 (alice, a, 3000, KILLED).
  void PutFour() {
    EXPECT_OK(store_->PutApplication(App("app_1", "alice", "a", 1000)));
    EXPECT_OK(store_->PutApplication(App("app_2", "bob", "b", 3000, v1::APP_FAILED)));
    EXPECT_OK(store_->PutApplication(App("app_3", "alice", "b", 2000)));
    EXPECT_OK(store_->PutApplication(App("app_4", "alice", "a", 3000, v1::APP_KILLED)));
  }
  std::vector<std::string> List(const ApplicationFilter& filter) {
    return AppIds(Value(store_->ListApplications(filter)));
  }

  HistoryTempDir dir_;
  std::unique_ptr<HistoryStore> store_;
};

using Backends = ::testing::Types<MemoryBackend, SqliteBackend, PostgresBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    if (std::is_same_v<T, MemoryBackend>) return "Memory";
    return std::is_same_v<T, SqliteBackend> ? "Sqlite" : "Postgres";
  }
};
TYPED_TEST_SUITE(HistoryStoreConformance, Backends, BackendNames);

TYPED_TEST(HistoryStoreConformance, PutGetAndUpsert) {
  HistoryStore& store = *this->store_;
  const v1::ApplicationHistoryRecord app = App("app_1", "alice", "a", 1000);
  EXPECT_OK(store.PutApplication(app));
  EXPECT_OK(store.PutApplication(app));  // the same again: fine
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(app));
  v1::ApplicationHistoryRecord later = app;
  later.set_diagnostics("killed by admin");
  later.set_queue("b");
  later.set_finish_time_ms(5000);
  EXPECT_OK(store.PutApplication(later));  // different content replaces it
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(later));
  EXPECT_THAT(this->List({.queue = "a"}), IsEmpty());
  EXPECT_THAT(this->List({.queue = "b"}), ElementsAre("app_1"));

  const v1::AttemptHistoryRecord attempt = Attempt("att_1", "app_1");
  EXPECT_OK(store.PutAttempt(attempt));
  EXPECT_OK(store.PutAttempt(attempt));
  EXPECT_THAT(Value(store.GetAttempt("att_1")), EqualsProto(attempt));
  const v1::ContainerHistoryRecord container = Container("c_1", "app_1", "att_1");
  EXPECT_OK(store.PutContainer(container));
  v1::ContainerHistoryRecord failed = container;
  failed.set_exit_status(137);
  EXPECT_OK(store.PutContainer(failed));
  EXPECT_THAT(Value(store.GetContainer("c_1")), EqualsProto(failed));

  for (const absl::Status& s :
       {store.GetApplication("app_9").status(), store.GetAttempt("att_9").status(),
        store.GetContainer("c_9").status()}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
    EXPECT_THAT(s.message(), HasSubstr("_9"));
  }
}

TYPED_TEST(HistoryStoreConformance, ValidationErrorsNameTheFieldAndChangeNothing) {
  HistoryStore& store = *this->store_;
  auto expect_invalid = [](const absl::Status& s, const std::string& field) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(field));
  };
  expect_invalid(store.PutApplication(App("", "alice", "a", 1000)), "application_id");
  expect_invalid(store.PutAttempt(Attempt("", "app_1")), "attempt_id");
  expect_invalid(store.PutAttempt(Attempt("att_1", "")), "application_id");
  expect_invalid(store.PutContainer(Container("", "app_1", "att_1")), "container_id");
  expect_invalid(store.PutContainer(Container("c_1", "", "att_1")), "application_id");
  expect_invalid(store.GetApplication("").status(), "application_id");
  expect_invalid(store.GetAttempt("").status(), "attempt_id");
  expect_invalid(store.GetContainer("").status(), "container_id");
  expect_invalid(store.ListAttempts("").status(), "application_id");
  expect_invalid(store.ListContainers("", "").status(), "application_id");
  expect_invalid(store.ListApplications({.limit = -1}).status(), "limit");
  expect_invalid(store.Prune(0, -1).status(), "keep_at_most");
  EXPECT_THAT(this->List({}), IsEmpty());
  EXPECT_THAT(Value(store.ListAttempts("app_1")), IsEmpty());
  EXPECT_THAT(Value(store.ListContainers("app_1")), IsEmpty());
  EXPECT_EQ(store.GetAttempt("att_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.GetContainer("c_1").status().code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(HistoryStoreConformance, ListFiltersOrderAndLimit) {
  this->PutFour();
  // Finish time descending, ties by id.
  EXPECT_THAT(this->List({}), ElementsAre("app_2", "app_4", "app_3", "app_1"));
  EXPECT_THAT(this->List({.user = "alice"}), ElementsAre("app_4", "app_3", "app_1"));
  EXPECT_THAT(this->List({.queue = "b"}), ElementsAre("app_2", "app_3"));
  EXPECT_THAT(this->List({.user = "alice", .queue = "a"}), ElementsAre("app_4", "app_1"));
  EXPECT_THAT(this->List({.states = {v1::APP_FAILED, v1::APP_KILLED}}),
              ElementsAre("app_2", "app_4"));
  EXPECT_THAT(this->List({.states = {v1::APP_FINISHED}}), ElementsAre("app_3", "app_1"));
  EXPECT_THAT(this->List({.finished_since_ms = 2000}), ElementsAre("app_2", "app_4", "app_3"));
  EXPECT_THAT(this->List({.finished_until_ms = 3000}), ElementsAre("app_3", "app_1"));
  EXPECT_THAT(this->List({.finished_since_ms = 1000, .finished_until_ms = 2001}),
              ElementsAre("app_3", "app_1"));
  EXPECT_THAT(this->List({.limit = 2}), ElementsAre("app_2", "app_4"));
  EXPECT_THAT(this->List({.user = "alice", .limit = 1}), ElementsAre("app_4"));
  EXPECT_THAT(this->List({.user = "carol"}), IsEmpty());
}

TYPED_TEST(HistoryStoreConformance, AttemptsAndContainersByApplicationAndAttempt) {
  HistoryStore& store = *this->store_;
  EXPECT_OK(store.PutAttempt(Attempt("att_2", "app_1")));
  EXPECT_OK(store.PutAttempt(Attempt("att_1", "app_1")));
  EXPECT_OK(store.PutAttempt(Attempt("att_3", "app_2")));
  EXPECT_OK(store.PutContainer(Container("c_3", "app_1", "att_2")));
  EXPECT_OK(store.PutContainer(Container("c_1", "app_1", "att_1")));
  EXPECT_OK(store.PutContainer(Container("c_2", "app_1", "att_1")));
  EXPECT_OK(store.PutContainer(Container("c_4", "app_2", "att_3")));
  auto attempt_ids = [](const std::vector<v1::AttemptHistoryRecord>& v) {
    std::vector<std::string> ids;
    for (const auto& a : v) ids.push_back(a.attempt_id());
    return ids;
  };
  auto container_ids = [](const std::vector<v1::ContainerHistoryRecord>& v) {
    std::vector<std::string> ids;
    for (const auto& c : v) ids.push_back(c.container_id());
    return ids;
  };
  EXPECT_THAT(attempt_ids(Value(store.ListAttempts("app_1"))), ElementsAre("att_1", "att_2"));
  EXPECT_THAT(container_ids(Value(store.ListContainers("app_1"))),
              ElementsAre("c_1", "c_2", "c_3"));
  EXPECT_THAT(container_ids(Value(store.ListContainers("", "att_1"))), ElementsAre("c_1", "c_2"));
  EXPECT_THAT(container_ids(Value(store.ListContainers("app_1", "att_2"))), ElementsAre("c_3"));
  EXPECT_THAT(container_ids(Value(store.ListContainers("app_2", "att_2"))), IsEmpty());
  EXPECT_THAT(Value(store.ListContainers("app_1"))[0],
              EqualsProto(Container("c_1", "app_1", "att_1")));
}

TYPED_TEST(HistoryStoreConformance, PruneByAgeTakesAttemptsAndContainers) {
  HistoryStore& store = *this->store_;
  this->PutFour();
  EXPECT_OK(store.PutAttempt(Attempt("att_1", "app_1")));
  EXPECT_OK(store.PutContainer(Container("c_1", "app_1", "att_1")));
  EXPECT_OK(store.PutAttempt(Attempt("att_3", "app_3")));
  EXPECT_OK(store.PutContainer(Container("c_3", "app_3", "att_3")));
  EXPECT_EQ(Value(store.Prune(0, std::nullopt)), 0);
  EXPECT_EQ(Value(store.Prune(2000, std::nullopt)), 1);  // app_1 only: 2000 is not older
  EXPECT_THAT(this->List({}), ElementsAre("app_2", "app_4", "app_3"));
  EXPECT_EQ(store.GetAttempt("att_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.GetContainer("c_1").status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Value(store.ListContainers("app_1")), IsEmpty());
  EXPECT_OK(store.GetAttempt("att_3").status());
  EXPECT_OK(store.GetContainer("c_3").status());
}

TYPED_TEST(HistoryStoreConformance, PruneByCountKeepsTheNewest) {
  HistoryStore& store = *this->store_;
  this->PutFour();
  EXPECT_OK(store.PutContainer(Container("c_3", "app_3", "att_3")));
  EXPECT_EQ(Value(store.Prune(0, 10)), 0);
  EXPECT_EQ(Value(store.Prune(0, 2)), 2);
  EXPECT_THAT(this->List({}), ElementsAre("app_2", "app_4"));
  EXPECT_EQ(store.GetContainer("c_3").status().code(), absl::StatusCode::kNotFound);
  // Both at once: 3000 is not older than 3000, so only the count takes app_4.
  EXPECT_EQ(Value(store.Prune(3000, 1)), 1);
  EXPECT_THAT(this->List({}), ElementsAre("app_2"));
  EXPECT_EQ(Value(store.Prune(0, 0)), 1);
  EXPECT_THAT(this->List({}), IsEmpty());
}

// A container of `app_id` that ran `seconds` with `memory_mb` and 1 vcore, and measured usage.
v1::ContainerHistoryRecord Ran(const std::string& id, const std::string& app_id, int64_t memory_mb,
                               int64_t seconds) {
  v1::ContainerHistoryRecord c = Container(id, app_id, app_id + "_att1");
  (*c.mutable_allocated())["memory-mb"] = memory_mb;
  c.set_start_time_ms(1'000'000);
  c.set_finish_time_ms(1'000'000 + seconds * 1000);
  c.set_memory_mb_seconds(memory_mb * seconds / 2);
  c.set_cpu_time_ms(seconds * 100);
  c.set_network_tx_bytes(seconds * 1000);
  c.set_max_rss_bytes(memory_mb << 19);  // half its allocation, in bytes
  return c;
}

// The application as the store returns it once `containers` are stored for it.
v1::ApplicationHistoryRecord WithAggregates(v1::ApplicationHistoryRecord app,
                                            const std::vector<v1::ContainerHistoryRecord>& cs) {
  std::vector<ContainerContribution> contributions;
  for (const auto& c : cs) contributions.push_back(ContributionOf(c));
  SetAggregates(contributions, &app);
  return app;
}

TEST(ContributionOfTest, FollowsTheContract) {
  v1::ContainerHistoryRecord c = Ran("c_1", "app_1", 1024, 10);
  (*c.mutable_allocated())["gpu"] = 2;
  (*c.mutable_allocated())["fpga"] = -1;
  c.set_finish_time_ms(c.start_time_ms() + 10'999);  // 10.999 s: truncated per container
  ContainerContribution got = ContributionOf(c);
  EXPECT_EQ(got.resource_seconds,
            (std::map<std::string, int64_t>{
                {"fpga", 0}, {"gpu", 21}, {"memory-mb", 11262}, {"vcores", 10}}));
  EXPECT_EQ(got.memory_mb_seconds_used, 5120);
  EXPECT_EQ(got.cpu_time_ms, 1000);
  EXPECT_EQ(got.network_tx_bytes, 10000);
  EXPECT_EQ(got.peak_memory_bytes, int64_t{512} << 20);
  c.set_start_time_ms(0);  // never started: no resource-seconds, its measured usage counts
  EXPECT_EQ(ContributionOf(c).resource_seconds.at("memory-mb"), 0);
  EXPECT_EQ(ContributionOf(c).cpu_time_ms, 1000);
  c.set_start_time_ms(5000);
  c.set_finish_time_ms(4000);  // finished before it started
  EXPECT_EQ(ContributionOf(c).resource_seconds.at("vcores"), 0);
  (*c.mutable_allocated())["memory-mb"] = int64_t{1} << 62;  // saturates, does not wrap
  c.set_start_time_ms(1);
  c.set_finish_time_ms(int64_t{1} << 40);
  EXPECT_EQ(ContributionOf(c).resource_seconds.at("memory-mb"),
            std::numeric_limits<int64_t>::max());
}

TYPED_TEST(HistoryStoreConformance, AggregatesAreDerivedFromContainers) {
  HistoryStore& store = *this->store_;
  v1::ApplicationHistoryRecord app = App("app_1", "alice", "a", 1000);
  // Whatever the writer claims is ignored.
  (*app.mutable_resource_seconds())["memory-mb"] = 999;
  (*app.mutable_resource_seconds())["bogus"] = 5;
  app.set_memory_mb_seconds_used(1);
  app.set_peak_memory_bytes(1);
  EXPECT_OK(store.PutApplication(app));
  v1::ApplicationHistoryRecord bare = app;
  bare.clear_resource_seconds();
  bare.set_memory_mb_seconds_used(0);
  bare.set_peak_memory_bytes(0);
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(bare));  // no containers yet

  v1::ContainerHistoryRecord c1 = Ran("c_1", "app_1", 1024, 10);
  v1::ContainerHistoryRecord c2 = Ran("c_2", "app_1", 2048, 5);
  (*c2.mutable_allocated())["gpu"] = 2;
  v1::ContainerHistoryRecord c3 = Ran("c_3", "app_1", 4096, 7);
  c3.set_start_time_ms(0);  // never started: measured usage only
  EXPECT_OK(store.PutContainer(c1));
  EXPECT_OK(store.PutContainer(c2));
  EXPECT_OK(store.PutContainer(c3));
  v1::ApplicationHistoryRecord expected = bare;
  (*expected.mutable_resource_seconds())["memory-mb"] = 10240 + 10240;
  (*expected.mutable_resource_seconds())["vcores"] = 10 + 5;
  (*expected.mutable_resource_seconds())["gpu"] = 10;
  expected.set_memory_mb_seconds_used(5120 + 5120 + 14336);
  expected.set_cpu_time_ms(1000 + 500 + 700);
  expected.set_network_tx_bytes(10000 + 5000 + 7000);
  expected.set_peak_memory_bytes(int64_t{2048} << 20);  // c3's
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(expected));
  EXPECT_THAT(WithAggregates(app, {c1, c2, c3}), EqualsProto(expected));
  std::vector<v1::ApplicationHistoryRecord> listed = Value(store.ListApplications({}));
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_THAT(listed[0], EqualsProto(expected));

  // A replaced container replaces its contribution (a smaller peak included).
  c3.set_max_rss_bytes(1);
  c3.set_cpu_time_ms(0);
  EXPECT_OK(store.PutContainer(c3));
  expected.set_peak_memory_bytes(int64_t{1024} << 20);  // now c2's
  expected.set_cpu_time_ms(1000 + 500);
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(expected));
  // The application put again keeps its derived values.
  EXPECT_OK(store.PutApplication(app));
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(expected));
  // The containers are returned as they were put.
  EXPECT_THAT(Value(store.GetContainer("c_2")), EqualsProto(c2));
}

TYPED_TEST(HistoryStoreConformance, AggregatesDoNotDependOnOrderOrRepeats) {
  HistoryStore& store = *this->store_;
  auto containers_of = [](const std::string& app_id) {
    v1::ContainerHistoryRecord big = Ran(app_id + "_c1", app_id, 4096, 30);
    (*big.mutable_allocated())["gpu"] = 1;
    return std::vector<v1::ContainerHistoryRecord>{big, Ran(app_id + "_c2", app_id, 1024, 3)};
  };
  // app_1: the application first. app_2: the containers first, each twice, then the
  // application twice. app_3: interleaved, all through replays.
  const auto c1 = containers_of("app_1");
  const auto c2 = containers_of("app_2");
  const auto c3 = containers_of("app_3");
  EXPECT_OK(store.PutApplication(App("app_1", "alice", "a", 1000)));
  for (const auto& c : c1) EXPECT_OK(store.PutContainer(c));
  for (const auto& c : c2) EXPECT_OK(store.PutContainer(c));
  for (const auto& c : c2) EXPECT_OK(store.PutContainer(c));
  EXPECT_OK(store.PutApplication(App("app_2", "alice", "a", 1000)));
  EXPECT_OK(store.PutApplication(App("app_2", "alice", "a", 1000)));
  EXPECT_OK(store.PutContainer(c3[1]));
  EXPECT_OK(store.PutApplication(App("app_3", "alice", "a", 1000)));
  EXPECT_OK(store.PutContainer(c3[0]));
  EXPECT_OK(store.PutContainer(c3[1]));
  EXPECT_OK(store.PutApplication(App("app_3", "alice", "a", 1000)));
  for (const auto& [id, cs] : std::vector<std::pair<std::string, decltype(c1)>>{
           {"app_1", c1}, {"app_2", c2}, {"app_3", c3}}) {
    const v1::ApplicationHistoryRecord got = Value(store.GetApplication(id));
    EXPECT_THAT(got, EqualsProto(WithAggregates(App(id, "alice", "a", 1000), cs))) << id;
    EXPECT_EQ(got.resource_seconds().at("memory-mb"), 4096 * 30 + 1024 * 3) << id;
    EXPECT_EQ(got.resource_seconds().at("gpu"), 30) << id;
  }
}

TYPED_TEST(HistoryStoreConformance, AContainerPutUnderAnotherApplicationMoves) {
  HistoryStore& store = *this->store_;
  EXPECT_OK(store.PutApplication(App("app_1", "alice", "a", 1000)));
  EXPECT_OK(store.PutApplication(App("app_2", "alice", "a", 1000)));
  v1::ContainerHistoryRecord c = Ran("c_1", "app_1", 1024, 10);
  (*c.mutable_allocated())["gpu"] = 1;
  EXPECT_OK(store.PutContainer(c));
  EXPECT_EQ(Value(store.GetApplication("app_1")).resource_seconds().at("gpu"), 10);
  c.set_application_id("app_2");
  EXPECT_OK(store.PutContainer(c));
  EXPECT_THAT(Value(store.GetApplication("app_1")), EqualsProto(App("app_1", "alice", "a", 1000)));
  EXPECT_THAT(Value(store.GetApplication("app_2")),
              EqualsProto(WithAggregates(App("app_2", "alice", "a", 1000), {c})));
}

TYPED_TEST(HistoryStoreConformance, PutBatchWritesEverythingOrNothing) {
  HistoryStore& store = *this->store_;
  HistoryBatch batch;
  batch.containers = {Ran("c_1", "app_1", 1024, 10), Ran("c_2", "app_2", 512, 4)};
  batch.attempts = {Attempt("att_1", "app_1")};
  batch.applications = {App("app_1", "alice", "a", 1000), App("app_2", "bob", "b", 2000)};
  EXPECT_OK(store.PutBatch(batch));
  EXPECT_OK(store.PutBatch(batch));  // replayed: the same state
  EXPECT_THAT(Value(store.GetApplication("app_1")),
              EqualsProto(WithAggregates(App("app_1", "alice", "a", 1000), {batch.containers[0]})));
  EXPECT_THAT(Value(store.GetApplication("app_2")),
              EqualsProto(WithAggregates(App("app_2", "bob", "b", 2000), {batch.containers[1]})));
  EXPECT_THAT(Value(store.GetAttempt("att_1")), EqualsProto(Attempt("att_1", "app_1")));
  EXPECT_THAT(Value(store.ListContainers("app_2")), ElementsAre(EqualsProto(batch.containers[1])));
  // No container has a type beyond memory-mb and vcores here.
  EXPECT_THAT(Value(store.QueueReport(0, 10000)),
              ElementsAre(UsageLine{.key = "a",
                                    .applications = 1,
                                    .resource_seconds = {{"memory-mb", 10240}, {"vcores", 10}},
                                    .memory_mb_seconds_used = 5120,
                                    .cpu_time_ms = 1000,
                                    .network_tx_bytes = 10000},
                          UsageLine{.key = "b",
                                    .applications = 1,
                                    .resource_seconds = {{"memory-mb", 2048}, {"vcores", 4}},
                                    .memory_mb_seconds_used = 1024,
                                    .cpu_time_ms = 400,
                                    .network_tx_bytes = 4000}));

  HistoryBatch bad;
  bad.applications = {App("app_3", "carol", "c", 3000)};
  bad.containers = {Ran("c_3", "app_3", 1024, 1), Ran("", "app_3", 1024, 1)};
  absl::Status s = store.PutBatch(bad);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("container_id"));
  EXPECT_EQ(store.GetApplication("app_3").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store.GetContainer("c_3").status().code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(HistoryStoreConformance, QueueAndUserReportsSumDerivedAggregates) {
  HistoryStore& store = *this->store_;
  this->PutFour();  // app_1 (alice, a, 1000), app_2 (bob, b, 3000), app_3 (alice, b, 2000),
                    // app_4 (alice, a, 3000)
  EXPECT_OK(store.PutApplication(App("app_5", "bob", "a", 2500)));
  // One container each: app_n ran n seconds with 1024 MB; app_5's has a GPU too.
  for (int n = 1; n <= 5; ++n) {
    const std::string id = absl::StrCat("app_", n);
    v1::ContainerHistoryRecord c = Ran(id + "_c1", id, 1024, n);
    if (n == 5) (*c.mutable_allocated())["gpu"] = 1;
    EXPECT_OK(store.PutContainer(c));
  }
  // A container of an application the store does not have counts nowhere.
  EXPECT_OK(store.PutContainer(Ran("orphan_c1", "app_9", 1024, 100)));
  auto line = [](const std::string& key, int64_t apps, int64_t seconds, int64_t gpu) {
    UsageLine l{.key = key,
                .applications = apps,
                .resource_seconds = {{"memory-mb", 1024 * seconds}, {"vcores", seconds}},
                .memory_mb_seconds_used = 512 * seconds,
                .cpu_time_ms = 100 * seconds,
                .network_tx_bytes = 1000 * seconds};
    if (gpu != 0) l.resource_seconds["gpu"] = gpu;
    return l;
  };
  EXPECT_THAT(Value(store.QueueReport(0, 10000)),
              ElementsAre(line("a", 3, 1 + 4 + 5, 5), line("b", 2, 2 + 3, 0)));
  EXPECT_THAT(Value(store.UserReport(0, 10000)),
              ElementsAre(line("alice", 3, 1 + 3 + 4, 0), line("bob", 2, 2 + 5, 5)));
  // [2000, 3000): app_3 (alice, b) and app_5 (bob, a).
  EXPECT_THAT(Value(store.QueueReport(2000, 3000)),
              ElementsAre(line("a", 1, 5, 5), line("b", 1, 3, 0)));
  EXPECT_THAT(Value(store.UserReport(2000, 3000)),
              ElementsAre(line("alice", 1, 3, 0), line("bob", 1, 5, 5)));
  EXPECT_THAT(Value(store.QueueReport(5000, 6000)), IsEmpty());
  EXPECT_THAT(Value(store.UserReport(5000, 6000)), IsEmpty());
  // An application without containers is counted, with nothing to sum.
  EXPECT_OK(store.PutApplication(App("app_6", "dave", "c", 9000)));
  EXPECT_THAT(Value(store.UserReport(9000, 9001)),
              ElementsAre(UsageLine{.key = "dave", .applications = 1}));
}

// --- What only the SQLite back-end does ------------------------------------------------------

TEST(SqliteHistoryStore, ReopensWithItsData) {
  HistoryTempDir dir;
  const std::string path = dir.path() + "/history/history.db";
  const v1::ApplicationHistoryRecord app = App("app_1", "alice", "a", 1000);
  const v1::AttemptHistoryRecord attempt = Attempt("att_1", "app_1");
  const v1::ContainerHistoryRecord container = Container("c_1", "app_1", "att_1");
  {
    std::unique_ptr<SqliteHistoryStore> store = Value(SqliteHistoryStore::Open(path));
    ASSERT_NE(store, nullptr);
    EXPECT_OK(store->PutApplication(app));
    EXPECT_OK(store->PutAttempt(attempt));
    EXPECT_OK(store->PutContainer(container));
  }
  std::unique_ptr<SqliteHistoryStore> store = Value(SqliteHistoryStore::Open(path));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Value(store->GetApplication("app_1")), EqualsProto(WithAggregates(app, {container})));
  EXPECT_THAT(Value(store->GetAttempt("att_1")), EqualsProto(attempt));
  EXPECT_THAT(Value(store->GetContainer("c_1")), EqualsProto(container));
  EXPECT_THAT(AppIds(Value(store->ListApplications({.user = "alice"}))), ElementsAre("app_1"));
}

TEST(SqliteHistoryStore, FileIsPrivate) {
  HistoryTempDir dir;
  const std::string path = dir.path() + "/history/history.db";
  std::unique_ptr<SqliteHistoryStore> store = Value(SqliteHistoryStore::Open(path));
  ASSERT_NE(store, nullptr);
  EXPECT_OK(store->PutApplication(App("app_1", "alice", "a", 1000)));
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat((dir.path() + "/history").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0077, 0u);
  if (::stat((path + "-wal").c_str(), &st) == 0) {
    EXPECT_EQ(st.st_mode & 0077, 0u);
  }
}

TEST(SqliteHistoryStore, RefusesADirectoryOthersCanRead) {
  HistoryTempDir dir;
  const std::string open_dir = dir.path() + "/open";
  std::filesystem::create_directory(open_dir);
  std::filesystem::permissions(open_dir, std::filesystem::perms(0755));
  absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> store =
      SqliteHistoryStore::Open(open_dir + "/history.db");
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("history store"));
}

// A store written by schema version 1 (no aggregate columns) gets them filled in on open.
TEST(SqliteHistoryStore, MigratesVersionOneFillingInAggregates) {
  HistoryTempDir dir;
  const std::string path = dir.path() + "/history/history.db";
  std::filesystem::create_directory(dir.path() + "/history");
  std::filesystem::permissions(dir.path() + "/history", std::filesystem::perms(0700));
  const v1::ApplicationHistoryRecord app = App("app_1", "alice", "a", 1000);
  v1::ContainerHistoryRecord c1 = Ran("c_1", "app_1", 1024, 10);
  (*c1.mutable_allocated())["gpu"] = 1;
  const v1::ContainerHistoryRecord c2 = Ran("c_2", "app_1", 2048, 3);
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ::chmod(path.c_str(), 0600);
    const std::string v1_schema = R"sql(
CREATE TABLE weft_history_schema (version INTEGER NOT NULL PRIMARY KEY,
                                  applied_ms INTEGER NOT NULL);
INSERT INTO weft_history_schema VALUES (1, 0);
CREATE TABLE applications (application_id TEXT NOT NULL PRIMARY KEY, user TEXT NOT NULL,
  queue TEXT NOT NULL, final_state INTEGER NOT NULL, finish_ms INTEGER NOT NULL,
  record BLOB NOT NULL);
CREATE INDEX applications_by_user ON applications (user, finish_ms);
CREATE INDEX applications_by_queue ON applications (queue, finish_ms);
CREATE INDEX applications_by_finish ON applications (finish_ms);
CREATE TABLE attempts (attempt_id TEXT NOT NULL PRIMARY KEY, application_id TEXT NOT NULL,
  record BLOB NOT NULL);
CREATE INDEX attempts_by_application ON attempts (application_id);
CREATE TABLE containers (container_id TEXT NOT NULL PRIMARY KEY,
  application_id TEXT NOT NULL, attempt_id TEXT NOT NULL, record BLOB NOT NULL);
CREATE INDEX containers_by_application ON containers (application_id, container_id);
CREATE INDEX containers_by_attempt ON containers (attempt_id, container_id);
)sql";
    ASSERT_EQ(sqlite3_exec(db, v1_schema.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db);
    auto insert = [&](const std::string& sql, const std::string& blob) {
      sqlite3_stmt* stmt = nullptr;
      ASSERT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK);
      sqlite3_bind_blob(stmt, 1, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
      EXPECT_EQ(sqlite3_step(stmt), SQLITE_DONE) << sqlite3_errmsg(db);
      sqlite3_finalize(stmt);
    };
    insert("INSERT INTO applications VALUES ('app_1', 'alice', 'a', 1, 1000, ?1)",
           app.SerializeAsString());
    insert("INSERT INTO containers VALUES ('c_1', 'app_1', 'app_1_att1', ?1)",
           c1.SerializeAsString());
    insert("INSERT INTO containers VALUES ('c_2', 'app_1', 'app_1_att1', ?1)",
           c2.SerializeAsString());
    sqlite3_close(db);
  }
  std::unique_ptr<SqliteHistoryStore> store = Value(SqliteHistoryStore::Open(path));
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(Value(store->GetApplication("app_1")), EqualsProto(WithAggregates(app, {c1, c2})));
  EXPECT_THAT(Value(store->UserReport(0, 2000)),
              ElementsAre(UsageLine{
                  .key = "alice",
                  .applications = 1,
                  .resource_seconds = {{"gpu", 10}, {"memory-mb", 10240 + 6144}, {"vcores", 13}},
                  .memory_mb_seconds_used = 5120 + 3072,
                  .cpu_time_ms = 1300,
                  .network_tx_bytes = 13000}));
}

TEST(SqliteHistoryStore, RefusesANewerSchema) {
  HistoryTempDir dir;
  const std::string path = dir.path() + "/history/history.db";
  { ASSERT_TRUE(SqliteHistoryStore::Open(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "INSERT INTO weft_history_schema VALUES (99, 0)", nullptr, nullptr, nullptr),
      SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> store = SqliteHistoryStore::Open(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
}

// --- What only the PostgreSQL back-end does --------------------------------------------------

// The RM's outbox retries on Unavailable: the store must say so while the server is down, and
// work again (reconnecting by itself) once it is back.
TEST(PostgresHistoryStore, UnavailableWhileTheServerIsDownThenWorksAfterRestart) {
  federation::TestPostgres* server = PostgresServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<HistoryStore> store = Value(OpenHistoryStore(Value(NewPostgresUrl())));
  ASSERT_NE(store, nullptr);
  const v1::ApplicationHistoryRecord app = App("app_1", "alice", "a", 1000);
  ASSERT_OK(store->PutApplication(app));

  ASSERT_OK(server->Stop());
  const v1::ContainerHistoryRecord container = Ran("c_1", "app_1", 1024, 10);
  absl::Status put = store->PutContainer(container);
  EXPECT_TRUE(absl::IsUnavailable(put)) << put;
  EXPECT_THAT(put.message(), HasSubstr("history store 'postgresql://"));
  EXPECT_THAT(put.message(), HasSubstr("127.0.0.1"));  // libpq's "connection to server at ..."
  absl::Status get = store->GetApplication("app_1").status();
  EXPECT_TRUE(absl::IsUnavailable(get)) << get;
  EXPECT_TRUE(absl::IsUnavailable(store->QueueReport(0, 2000).status()));

  ASSERT_OK(server->Restart());
  EXPECT_THAT(Value(store->GetApplication("app_1")), EqualsProto(app));
  ASSERT_OK(store->PutContainer(container));  // the outbox's retry
  EXPECT_THAT(Value(store->GetApplication("app_1")), EqualsProto(WithAggregates(app, {container})));
}

TEST(PostgresHistoryStore, UnreachableServerIsUnavailable) {
  absl::Status s = OpenHistoryStore("postgresql://postgres@127.0.0.1:1/weft").status();
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("postgresql://postgres@127.0.0.1:1/weft"));
}

TEST(PostgresHistoryStore, RefusesAPasswordInTheUrl) {
  absl::Status s = OpenHistoryStore("postgresql://postgres:hunter2@127.0.0.1:1/weft").status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("passfile"));
  EXPECT_THAT(s.message(), ::testing::Not(HasSubstr("hunter2")));
}

TEST(PostgresHistoryStore, ReopensWithItsDataAndRefusesANewerSchema) {
  const std::string url = Value(NewPostgresUrl());
  const v1::ContainerHistoryRecord container = Ran("c_1", "app_1", 1024, 10);
  {
    std::unique_ptr<HistoryStore> store = Value(OpenHistoryStore(url));
    ASSERT_NE(store, nullptr);
    ASSERT_OK(store->PutContainer(container));
    ASSERT_OK(store->PutApplication(App("app_1", "alice", "a", 1000)));
  }
  {
    std::unique_ptr<HistoryStore> store = Value(OpenHistoryStore(url));  // migrated already
    ASSERT_NE(store, nullptr);
    EXPECT_THAT(Value(store->GetApplication("app_1")),
                EqualsProto(WithAggregates(App("app_1", "alice", "a", 1000), {container})));
  }
  const std::string schema = absl::StrCat("history_", url.substr(url.rfind('_') + 1));
  ASSERT_OK(PostgresAdmin(
      absl::StrCat("INSERT INTO ", schema, ".weft_history_schema (version) VALUES (99)")));
  absl::Status s = OpenHistoryStore(url).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("schema version 99"));
}

// --- OpenHistoryStore ------------------------------------------------------------------------

TEST(OpenHistoryStore, OpensEachKindOfUrl) {
  HistoryTempDir dir;
  std::unique_ptr<HistoryStore> memory = Value(OpenHistoryStore("memory"));
  ASSERT_NE(memory, nullptr);
  EXPECT_EQ(memory->Describe(), "memory");
  const std::string a = dir.path() + "/a/history.db";
  std::unique_ptr<HistoryStore> sqlite = Value(OpenHistoryStore("sqlite:" + a));
  ASSERT_NE(sqlite, nullptr);
  EXPECT_EQ(sqlite->Describe(), "sqlite:" + a);
  const std::string b = dir.path() + "/b/history.db";
  std::unique_ptr<HistoryStore> plain = Value(OpenHistoryStore(b));
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->Describe(), "sqlite:" + b);
  EXPECT_TRUE(std::filesystem::exists(b));
  const std::string url = Value(NewPostgresUrl());
  std::unique_ptr<HistoryStore> postgresql = Value(OpenHistoryStore(url));
  ASSERT_NE(postgresql, nullptr);
  EXPECT_EQ(postgresql->Describe(), url);
  ASSERT_OK(postgresql->PutApplication(App("app_1", "alice", "a", 1000)));
  const std::string short_scheme = "postgres" + url.substr(std::string("postgresql").size());
  std::unique_ptr<HistoryStore> postgres = Value(OpenHistoryStore(short_scheme));
  ASSERT_NE(postgres, nullptr);
  EXPECT_OK(postgres->GetApplication("app_1").status());  // the same database and schema
}

TEST(OpenHistoryStore, RefusesOtherUrlsNamingThem) {
  for (const std::string url : {"", "memory:", "mysql://db/weft", "history.db", "./history.db",
                                "sqlite:", "sqlite:history.db", "sqlite:/", "file:/x/history.db"}) {
    absl::Status s = OpenHistoryStore(url).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << url << ": " << s;
    EXPECT_THAT(s.message(), HasSubstr("'" + url + "'"));
  }
}

}  // namespace
}  // namespace weft::history
