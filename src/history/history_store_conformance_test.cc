// Copyright Weft authors. The HistoryStore contract (history/history_store.h) over every
// back-end (memory, SQLite), then what only the SQLite one does: durability across reopening,
// a private file, a schema version.
#include <stdlib.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "history/history_store.h"
#include "history/memory_history_store.h"
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
  (*app.mutable_resource_seconds())["memory-mb"] = 1024 * 10;
  (*app.mutable_resource_seconds())["vcores"] = 10;
  return app;
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

using Backends = ::testing::Types<MemoryBackend, SqliteBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, MemoryBackend> ? "Memory" : "Sqlite";
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

TYPED_TEST(HistoryStoreConformance, QueueReportSumsPerQueue) {
  HistoryStore& store = *this->store_;
  this->PutFour();
  v1::ApplicationHistoryRecord gpu = App("app_5", "bob", "a", 2500);
  (*gpu.mutable_resource_seconds())["gpu"] = 7;
  EXPECT_OK(store.PutApplication(gpu));
  std::vector<QueueUsage> all = Value(store.QueueReport(0, 10000));
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], (QueueUsage{"a", 3, {{"gpu", 7}, {"memory-mb", 30720}, {"vcores", 30}}}));
  EXPECT_EQ(all[1], (QueueUsage{"b", 2, {{"memory-mb", 20480}, {"vcores", 20}}}));
  // [2000, 3000): app_3 (b) and app_5 (a).
  std::vector<QueueUsage> window = Value(store.QueueReport(2000, 3000));
  ASSERT_EQ(window.size(), 2u);
  EXPECT_EQ(window[0], (QueueUsage{"a", 1, {{"gpu", 7}, {"memory-mb", 10240}, {"vcores", 10}}}));
  EXPECT_EQ(window[1], (QueueUsage{"b", 1, {{"memory-mb", 10240}, {"vcores", 10}}}));
  EXPECT_THAT(Value(store.QueueReport(5000, 6000)), IsEmpty());
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
  EXPECT_THAT(Value(store->GetApplication("app_1")), EqualsProto(app));
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

TEST(SqliteHistoryStore, RefusesANewerSchema) {
  HistoryTempDir dir;
  const std::string path = dir.path() + "/history/history.db";
  { ASSERT_TRUE(SqliteHistoryStore::Open(path).ok()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "INSERT INTO weft_history_schema VALUES (99, 0)", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<SqliteHistoryStore>> store = SqliteHistoryStore::Open(path);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("schema version 99"));
}

}  // namespace
}  // namespace weft::history
