// Copyright Weft authors. Tests of the NodeManager's state store (SQLite in a temporary dir).
#include "nm/nm_state_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

class NmStateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::atomic<int> counter{0};
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("weft_nm_state_test_", getpid(), "_", counter++);
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "nm-state.db").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static NmContainerRecord Record(const std::string& id, const std::string& app) {
    NmContainerRecord r;
    r.container_id = id;
    r.app_id = app;
    r.user = "alice";
    r.resource = "memory-mb=128,vcores=1";
    r.network_mbps = 10;
    r.state = NmContainerRecord::State::kRunning;
    r.monitor_pid = 100;
    r.monitor_start_time = 12345678901234ULL;
    r.pid = 101;
    r.start_time = 12345678901240ULL;
    r.cgroup_dirs = {"/sys/fs/cgroup/cpu/weft/" + id, "/sys/fs/cgroup/memory/weft/" + id};
    r.state_dir = "/w/nm-state/" + id;
    r.work_dir = "/w/" + app + "/" + id;
    return r;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(NmStateStoreTest, RecordsSurviveReopening) {
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord running = Record("c1", "app1");
    ASSERT_TRUE((*store)->PutContainer(running).ok());
    NmContainerRecord done = Record("c2", "app1");
    done.state = NmContainerRecord::State::kCompleted;
    done.stop_exit_status = -105;
    done.stop_reason = "stopped";
    done.exit_status = -105;
    done.diagnostics = "Container stopped: exited with code 143";
    done.acknowledged = true;
    done.cgroup_dirs.clear();
    ASSERT_TRUE((*store)->PutContainer(done).ok());
    ASSERT_TRUE((*store)->SetValue("node_id", "host:1").ok());
    ASSERT_TRUE((*store)->SetValue("node_id", "host:2").ok());  // replaced
  }
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  const NmContainerRecord& c1 = (*records)[0];
  EXPECT_EQ(c1.container_id, "c1");
  EXPECT_EQ(c1.app_id, "app1");
  EXPECT_EQ(c1.user, "alice");
  EXPECT_EQ(c1.resource, "memory-mb=128,vcores=1");
  EXPECT_EQ(c1.network_mbps, 10);
  EXPECT_EQ(c1.state, NmContainerRecord::State::kRunning);
  EXPECT_EQ(c1.monitor_pid, 100);
  EXPECT_EQ(c1.monitor_start_time, 12345678901234ULL);
  EXPECT_EQ(c1.pid, 101);
  EXPECT_EQ(c1.start_time, 12345678901240ULL);
  EXPECT_THAT(c1.cgroup_dirs,
              ElementsAre("/sys/fs/cgroup/cpu/weft/c1", "/sys/fs/cgroup/memory/weft/c1"));
  EXPECT_EQ(c1.state_dir, "/w/nm-state/c1");
  EXPECT_EQ(c1.work_dir, "/w/app1/c1");
  EXPECT_FALSE(c1.stop_exit_status.has_value());
  EXPECT_FALSE(c1.acknowledged);
  const NmContainerRecord& c2 = (*records)[1];
  EXPECT_EQ(c2.state, NmContainerRecord::State::kCompleted);
  EXPECT_EQ(c2.stop_exit_status, -105);
  EXPECT_EQ(c2.stop_reason, "stopped");
  EXPECT_EQ(c2.exit_status, -105);
  EXPECT_EQ(c2.diagnostics, "Container stopped: exited with code 143");
  EXPECT_TRUE(c2.acknowledged);
  EXPECT_THAT(c2.cgroup_dirs, IsEmpty());
  absl::StatusOr<std::optional<std::string>> node = (*store)->GetValue("node_id");
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(*node, "host:2");
  absl::StatusOr<std::optional<std::string>> missing = (*store)->GetValue("rm_epoch");
  ASSERT_TRUE(missing.ok());
  EXPECT_FALSE(missing->has_value());
}

TEST_F(NmStateStoreTest, FinishingAnApplicationDropsItsContainersAndRemembersIt) {
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->PutContainer(Record("c1", "app1")).ok());
  ASSERT_TRUE((*store)->PutContainer(Record("c2", "app2")).ok());
  ASSERT_TRUE((*store)->FinishApplication("app1", 1000).ok());
  ASSERT_TRUE((*store)->FinishApplication("app3", 5000).ok());
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].container_id, "c2");
  absl::StatusOr<std::map<std::string, int64_t>> apps = (*store)->LoadFinishedApps();
  ASSERT_TRUE(apps.ok());
  EXPECT_THAT(*apps, ElementsAre(Pair("app1", 1000), Pair("app3", 5000)));
  ASSERT_TRUE((*store)->PruneFinishedApps(2000).ok());
  apps = (*store)->LoadFinishedApps();
  ASSERT_TRUE(apps.ok());
  EXPECT_THAT(*apps, ElementsAre(Pair("app3", 5000)));
  ASSERT_TRUE((*store)->RemoveContainer("c2").ok());
  ASSERT_TRUE((*store)->RemoveContainer("c2").ok());  // idempotent
  ASSERT_TRUE((*store)->Clear().ok());
  EXPECT_THAT(*(*store)->LoadContainers(), IsEmpty());
  EXPECT_THAT(*(*store)->LoadFinishedApps(), IsEmpty());
}

TEST_F(NmStateStoreTest, ASecondStoreOnTheSameFileIsRefused) {
  absl::StatusOr<std::unique_ptr<NmStateStore>> first = NmStateStore::Open(path_);
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<std::unique_ptr<NmStateStore>> second = NmStateStore::Open(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("another NodeManager"));
  first->reset();
  EXPECT_TRUE(NmStateStore::Open(path_).ok());
}

TEST_F(NmStateStoreTest, GarbageIsNotADatabase) {
  std::ofstream(path_) << std::string(4096, 'x');
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr(path_));
}

// AMRMProxy recovery (YARN-6127): an attempt's state, its UAMs and the proxy's token key
// survive the store's reopening (an NM restart); a write replaces the UAMs; Clear drops them.
TEST_F(NmStateStoreTest, AmrmProxyAttemptsAndTheTokenKeySurviveReopening) {
  amrmproxy::AttemptState state;
  state.attempt.application_id = "application_1_0001";
  state.attempt.attempt_id = "appattempt_1_0001_000001";
  state.attempt.user = "alice";
  state.attempt.am_container_id = "container_e1_1_0001_01_000001";
  state.attempt.home_rm_address = "rm1:8030,rm2:8030";
  state.attempt.amrm_token.set_identifier(std::string("home\0token", 10));
  state.attempt.amrm_token.set_password("pw");
  state.registered = true;
  state.registration.set_host("am-host");
  state.queue = "root.a";
  state.app_name = "job";
  for (const char* sc : {"sc-2", "sc-3"}) {
    amrmproxy::UamState uam;
    uam.sub_cluster_id = sc;
    uam.rm = absl::StrCat(sc, "-rm:8030");
    uam.application_id = "application_1_0001";
    uam.amrm_token.set_identifier(absl::StrCat("uam@", sc));
    uam.registered = true;
    state.uams.push_back(uam);
  }
  const std::string key = std::string("\0\x01\xff", 3) + std::string(29, 'k');
  {
    auto store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_FALSE((*store)->GetTokenKey()->has_value());
    ASSERT_TRUE((*store)->SetTokenKey(key).ok());
    ASSERT_TRUE((*store)->PutAttempt(state).ok());
    state.uams.pop_back();  // the second write has one UAM left
    state.uams[0].finished = true;
    state.ended = true;
    ASSERT_TRUE((*store)->PutAttempt(state).ok());
  }
  auto store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::optional<std::string>> stored_key = (*store)->GetTokenKey();
  ASSERT_TRUE(stored_key.ok()) << stored_key.status();
  EXPECT_EQ(stored_key->value_or(""), key);
  absl::StatusOr<std::vector<amrmproxy::AttemptState>> loaded = (*store)->LoadAttempts();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  ASSERT_EQ(loaded->size(), 1u);
  const amrmproxy::AttemptState& got = (*loaded)[0];
  EXPECT_EQ(got.attempt.attempt_id, "appattempt_1_0001_000001");
  EXPECT_EQ(got.attempt.application_id, "application_1_0001");
  EXPECT_EQ(got.attempt.user, "alice");
  EXPECT_EQ(got.attempt.am_container_id, "container_e1_1_0001_01_000001");
  EXPECT_EQ(got.attempt.home_rm_address, "rm1:8030,rm2:8030");
  EXPECT_EQ(got.attempt.amrm_token.identifier(), state.attempt.amrm_token.identifier());
  EXPECT_EQ(got.attempt.amrm_token.password(), "pw");
  EXPECT_TRUE(got.registered);
  EXPECT_TRUE(got.ended);
  EXPECT_EQ(got.registration.host(), "am-host");
  EXPECT_EQ(got.queue, "root.a");
  EXPECT_EQ(got.app_name, "job");
  ASSERT_EQ(got.uams.size(), 1u);
  EXPECT_EQ(got.uams[0].sub_cluster_id, "sc-2");
  EXPECT_EQ(got.uams[0].rm, "sc-2-rm:8030");
  EXPECT_EQ(got.uams[0].amrm_token.identifier(), "uam@sc-2");
  EXPECT_TRUE(got.uams[0].registered);
  EXPECT_TRUE(got.uams[0].finished);

  ASSERT_TRUE((*store)->RemoveAttempt("appattempt_1_0001_000001").ok());
  ASSERT_TRUE((*store)->RemoveAttempt("appattempt_1_0001_000001").ok());  // none: OK
  EXPECT_THAT(*(*store)->LoadAttempts(), IsEmpty());
  ASSERT_TRUE((*store)->PutAttempt(state).ok());
  ASSERT_TRUE((*store)->Clear().ok());
  EXPECT_THAT(*(*store)->LoadAttempts(), IsEmpty());
  EXPECT_FALSE((*store)->GetTokenKey()->has_value());
}

// The container master keys survive reopening as written (bytes, not text), the file stays
// the NM's alone, a value that is not hexadecimal is DataLoss naming the key, and Clear drops
// them.
TEST_F(NmStateStoreTest, TheContainerKeysSurviveReopening) {
  const std::string current("cur\0rent\xff", 9), next("next\x01", 5);
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->GetContainerKeys().ok());
    EXPECT_FALSE((*store)->GetContainerKeys()->has_value());
    ASSERT_TRUE((*store)->SetContainerKeys("old", "older").ok());
    ASSERT_TRUE((*store)->SetContainerKeys(current, next).ok());
  }
  EXPECT_EQ(std::filesystem::status(path_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> kept =
      (*store)->GetContainerKeys();
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(kept->has_value());
  EXPECT_EQ((*kept)->first, current);
  EXPECT_EQ((*kept)->second, next);

  ASSERT_TRUE((*store)->SetValue("container_key_next", "not hex").ok());
  kept = (*store)->GetContainerKeys();
  EXPECT_EQ(kept.status().code(), absl::StatusCode::kDataLoss) << kept.status();
  EXPECT_THAT(kept.status().message(), HasSubstr("the next container master key"));
  ASSERT_TRUE((*store)->Clear().ok());
  kept = (*store)->GetContainerKeys();
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_FALSE(kept->has_value());
}

TEST_F(NmStateStoreTest, AFileThatIsNotADatabaseIsDataLossAndLeavesNoLock) {
  std::ofstream(path_) << std::string(4096, 'x');
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("not an SQLite database"));
  // What a NodeManager that does not recover does: it replaces the file.
  std::filesystem::remove(path_);
  EXPECT_TRUE(NmStateStore::Open(path_).ok());
}

TEST_F(NmStateStoreTest, AResizedContainersVersionSurvivesReopening) {
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord resized = Record("c1", "app1");
    resized.resource = "memory-mb=512,vcores=2";
    resized.version = 3;
    ASSERT_TRUE((*store)->PutContainer(resized).ok());
    ASSERT_TRUE((*store)->PutContainer(Record("c2", "app1")).ok());
  }
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].resource, "memory-mb=512,vcores=2");
  EXPECT_EQ((*records)[0].version, 3);
  EXPECT_EQ((*records)[1].version, 0);
}

// Dropping the column of schema 6 (the containers' devices): what an NM before it left.
constexpr char kDropDevices[] = "ALTER TABLE containers DROP COLUMN devices; ";

// Dropping the columns of schema 5 (the containers' accounting) and 6: what an NM before it
// left.
constexpr char kDropAccounting[] =
    "ALTER TABLE containers DROP COLUMN devices; "
    "ALTER TABLE containers DROP COLUMN launched_ms; "
    "ALTER TABLE containers DROP COLUMN finished_ms; "
    "ALTER TABLE containers DROP COLUMN memory_mb_ms; "
    "ALTER TABLE containers DROP COLUMN usage_sample_ms; "
    "ALTER TABLE containers DROP COLUMN usage_sample_rss_bytes; "
    "ALTER TABLE containers DROP COLUMN cpu_time_ms; "
    "ALTER TABLE containers DROP COLUMN peak_memory_bytes; "
    "ALTER TABLE containers DROP COLUMN network_tx_bytes; ";

TEST_F(NmStateStoreTest, AStoreOfSchemaVersion2GainsTheVersionColumnAtZero) {
  // What an NM before container resource updates left: no version column, user_version 2.
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutContainer(Record("c1", "app1")).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         absl::StrCat(kDropAccounting,
                                      "ALTER TABLE containers DROP COLUMN version; ALTER TABLE "
                                      "containers DROP COLUMN allocation_tags; PRAGMA "
                                      "user_version=2;")
                             .c_str(),
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].version, 0);
  NmContainerRecord resized = (*records)[0];
  resized.version = 1;
  ASSERT_TRUE((*store)->PutContainer(resized).ok());
  EXPECT_EQ((*store)->LoadContainers()->at(0).version, 1);
}

TEST_F(NmStateStoreTest, AContainersAllocationTagsSurviveReopeningInOrder) {
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord tagged = Record("c1", "app1");
    tagged.allocation_tags = {"hbase-rs", "spark.exec", "a_b"};
    ASSERT_TRUE((*store)->PutContainer(tagged).ok());
    ASSERT_TRUE((*store)->PutContainer(Record("c2", "app1")).ok());
  }
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 2u);
  EXPECT_THAT((*records)[0].allocation_tags, ElementsAre("hbase-rs", "spark.exec", "a_b"));
  EXPECT_THAT((*records)[1].allocation_tags, IsEmpty());
}

TEST_F(NmStateStoreTest, AStoreOfSchemaVersion3GainsTheAllocationTagsColumnEmpty) {
  // What an NM before tags were recorded left: no allocation_tags column, user_version 3.
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord resized = Record("c1", "app1");
    resized.version = 2;
    ASSERT_TRUE((*store)->PutContainer(resized).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         absl::StrCat(kDropAccounting,
                                      "ALTER TABLE containers DROP COLUMN allocation_tags; "
                                      "PRAGMA user_version=3;")
                             .c_str(),
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_EQ((*records)[0].version, 2);  // kept
  EXPECT_THAT((*records)[0].allocation_tags, IsEmpty());
  NmContainerRecord tagged = (*records)[0];
  tagged.allocation_tags = {"web"};
  ASSERT_TRUE((*store)->PutContainer(tagged).ok());
  EXPECT_THAT((*store)->LoadContainers()->at(0).allocation_tags, ElementsAre("web"));
  // Opened again at the current schema: nothing to add.
  store->reset();
  store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT((*store)->LoadContainers()->at(0).allocation_tags, ElementsAre("web"));
}

TEST_F(NmStateStoreTest, AContainersAccountingSurvivesReopening) {
  NmContainerRecord done = Record("c1", "app1");
  done.state = NmContainerRecord::State::kCompleted;
  done.launched_ms = 1'700'000'000'123;
  done.finished_ms = 1'700'000'004'567;
  done.memory_mb_seconds = 0.25;  // kept to the MB x ms: a short container's is not 0
  done.usage_sample_ms = 1'700'000'004'000;
  done.usage_sample_rss_bytes = 3 << 20;
  done.cpu_time_ms = 1234;
  done.peak_memory_bytes = int64_t{5} << 30;
  done.network_tx_bytes = 987654321;
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutContainer(done).ok());
  }
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  const NmContainerRecord& r = (*records)[0];
  EXPECT_EQ(r.launched_ms, done.launched_ms);
  EXPECT_EQ(r.finished_ms, done.finished_ms);
  EXPECT_DOUBLE_EQ(r.memory_mb_seconds, 0.25);
  EXPECT_EQ(r.usage_sample_ms, done.usage_sample_ms);
  EXPECT_EQ(r.usage_sample_rss_bytes, done.usage_sample_rss_bytes);
  EXPECT_EQ(r.cpu_time_ms, 1234);
  EXPECT_EQ(r.peak_memory_bytes, int64_t{5} << 30);
  EXPECT_EQ(r.network_tx_bytes, 987654321);
}

TEST_F(NmStateStoreTest, AStoreOfSchemaVersion4GainsTheAccountingAtZero) {
  // What an NM before application history left: no accounting columns, user_version 4.
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord tagged = Record("c1", "app1");
    tagged.allocation_tags = {"web"};
    tagged.launched_ms = 42;  // dropped below
    ASSERT_TRUE((*store)->PutContainer(tagged).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, absl::StrCat(kDropAccounting, "PRAGMA user_version=4;").c_str(),
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_THAT((*records)[0].allocation_tags, ElementsAre("web"));  // kept
  EXPECT_EQ((*records)[0].launched_ms, 0);
  EXPECT_EQ((*records)[0].cpu_time_ms, 0);
  EXPECT_EQ((*records)[0].memory_mb_seconds, 0);
  NmContainerRecord measured = (*records)[0];
  measured.cpu_time_ms = 7;
  ASSERT_TRUE((*store)->PutContainer(measured).ok());
  EXPECT_EQ((*store)->LoadContainers()->at(0).cpu_time_ms, 7);
}

TEST_F(NmStateStoreTest, DevicesRoundTripAndASchema5StoreGainsNone) {
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    NmContainerRecord gpus = Record("c1", "app1");
    gpus.devices = {"gpu:0=1000", "gpu:3=1000"};
    ASSERT_TRUE((*store)->PutContainer(gpus).ok());
    EXPECT_THAT((*store)->LoadContainers()->at(0).devices, ElementsAre("gpu:0=1000", "gpu:3=1000"));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, absl::StrCat(kDropDevices, "PRAGMA user_version=5;").c_str(),
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<NmContainerRecord>> records = (*store)->LoadContainers();
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  EXPECT_TRUE((*records)[0].devices.empty());
}

TEST_F(NmStateStoreTest, AnIllTypedColumnIsDataLossNamingIt) {
  {
    absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutContainer(Record("container_1_0001_01_000001", "app_1")).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, "UPDATE containers SET pid = 'x'", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<NmStateStore>> store = NmStateStore::Open(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::Status loaded = (*store)->LoadContainers().status();
  EXPECT_EQ(loaded.code(), absl::StatusCode::kDataLoss) << loaded;
  EXPECT_THAT(loaded.message(), HasSubstr("containers.pid is not an INTEGER"));
}

}  // namespace
}  // namespace weft::nm
