// Copyright Weft authors. The StateStore contract, run over every implementation: memory,
// SQLite and ZooKeeper (against a private server this test starts). What only one implementation
// does is tested beside it (sqlite_store_test.cc, zk_store_test.cc).
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/legacy_store_test_util.h"
#include "store/memory_store.h"
#include "store/sqlite_store.h"
#include "store/state_store.h"
#include "store/store_test_util.h"
#include "store/test_zookeeper.h"
#include "store/zk_client.h"
#include "store/zk_store.h"

namespace weft::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Each factory opens a new, empty store; `dir` is a fresh temporary directory it may use.

struct MemoryStoreFactory {
  static constexpr const char* kName = "Memory";
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& /*dir*/) {
    return NewMemoryStore();
  }
};

struct SqliteStoreFactory {
  static constexpr const char* kName = "Sqlite";
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& dir) {
    return OpenSqliteStore(dir + "/rm/state.db");  // "rm/" does not exist yet.
  }
};

// One ZooKeeper server for the whole program (started by the first test that needs it, killed
// at exit).
absl::StatusOr<std::unique_ptr<TestZooKeeper>>& SharedZooKeeper() {
  static absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  return server;
}

// A new root per store.
struct ZooKeeperStoreFactory {
  static constexpr const char* kName = "ZooKeeper";
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& /*dir*/) {
    absl::StatusOr<std::unique_ptr<TestZooKeeper>>& server = SharedZooKeeper();
    static int stores = 0;
    if (!server.ok()) return server.status();
    ZkStoreOptions options;
    options.connect = (*server)->connect_string();
    options.root = absl::StrCat("/conformance/store-", ++stores);
    options.identity = "conformance-test";
    options.auth = (*server)->auth();  // as the RMs run it: creator-only ACLs
    return OpenZooKeeperStore(options);
  }
};

template <typename Factory>
class StateStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = Factory::Open(dir_.path());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  RmState MustLoad() {
    absl::StatusOr<RmState> state = store_->Load();
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *std::move(state) : RmState{};
  }

  ScopedTempDir dir_;
  std::unique_ptr<StateStore> store_;
};

class ImplementationNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return T::kName;
  }
};

using Implementations =
    ::testing::Types<MemoryStoreFactory, SqliteStoreFactory, ZooKeeperStoreFactory>;
TYPED_TEST_SUITE(StateStoreTest, Implementations, ImplementationNames);

TYPED_TEST(StateStoreTest, NewStoreIsEmpty) {
  RmState state = this->MustLoad();
  EXPECT_EQ(state.epoch, 0);
  EXPECT_THAT(state.apps, IsEmpty());
  EXPECT_THAT(state.attempts, IsEmpty());
  EXPECT_THAT(state.keys, IsEmpty());
}

TYPED_TEST(StateStoreTest, RoundTripsEveryFieldIncludingBinaryBytes) {
  const ApplicationRecord app = FullApplication("application_1700000000000_0001");
  const AttemptRecord attempt = FullAttempt(app.app_id, 2);
  const MasterKeyRecord key = FullMasterKey("container", -5);
  // Empty strings and empty bytes come back empty (not missing).
  ApplicationRecord bare;
  bare.app_id = "application_1700000000000_0002";
  MasterKeyRecord amrm_key = FullMasterKey("amrm", INT32_MAX);
  amrm_key.secret = std::string(1, '\0');

  ASSERT_TRUE(this->store_->PutApplication(app).ok());
  ASSERT_TRUE(this->store_->PutApplication(bare).ok());
  ASSERT_TRUE(this->store_->PutAttempt(attempt).ok());
  ASSERT_TRUE(this->store_->PutMasterKey(key).ok());
  ASSERT_TRUE(this->store_->PutMasterKey(amrm_key).ok());

  RmState state = this->MustLoad();
  EXPECT_THAT(state.apps, ElementsAre(app, bare));
  EXPECT_THAT(state.attempts, ElementsAre(attempt));
  EXPECT_THAT(state.keys, ElementsAre(amrm_key, key));
  ASSERT_EQ(state.apps.size(), 2u);
  EXPECT_EQ(state.apps[0].submission, std::string("\0\x01\xff\0bytes\0", 10));
  EXPECT_EQ(state.apps[0].name.size(), 13u);
  ASSERT_EQ(state.keys.size(), 2u);
  EXPECT_EQ(state.keys[0].secret, std::string(1, '\0'));
  EXPECT_EQ(state.keys[1].secret, std::string("\0s3cr\0t\xfe", 8));
}

TYPED_TEST(StateStoreTest, EpochStartsAtOneAndIncrements) {
  for (int64_t want = 1; want <= 3; ++want) {
    absl::StatusOr<int64_t> epoch = this->store_->BumpEpoch();
    ASSERT_TRUE(epoch.ok()) << epoch.status();
    EXPECT_EQ(*epoch, want);
  }
  EXPECT_EQ(this->MustLoad().epoch, 3);
}

TYPED_TEST(StateStoreTest, LoadSortsRecordsByKey) {
  for (const char* id : {"app_2", "app_10", "app_1"}) {
    ApplicationRecord app;
    app.app_id = id;
    ASSERT_TRUE(this->store_->PutApplication(app).ok());
  }
  for (auto [id, n] : std::vector<std::pair<const char*, int>>{
           {"app_2", 3}, {"app_1", 10}, {"app_1", 2}, {"app_10", 1}, {"app_1", 1}}) {
    ASSERT_TRUE(this->store_->PutAttempt(FullAttempt(id, n)).ok());
  }
  for (auto [purpose, id] :
       std::vector<std::pair<const char*, int>>{{"container", 2}, {"amrm", 7}, {"container", -1}}) {
    ASSERT_TRUE(this->store_->PutMasterKey(FullMasterKey(purpose, id)).ok());
  }

  RmState state = this->MustLoad();
  std::vector<std::string> apps;
  for (const auto& app : state.apps) apps.push_back(app.app_id);
  EXPECT_THAT(apps, ElementsAre("app_1", "app_10", "app_2"));  // bytewise
  std::vector<std::pair<std::string, int>> attempts;
  for (const auto& a : state.attempts) attempts.emplace_back(a.app_id, a.attempt_id);
  EXPECT_THAT(attempts,
              ElementsAre(std::pair<std::string, int>{"app_1", 1}, std::pair{"app_1", 2},
                          std::pair{"app_1", 10}, std::pair{"app_10", 1}, std::pair{"app_2", 3}));
  std::vector<std::pair<std::string, int>> keys;
  for (const auto& k : state.keys) keys.emplace_back(k.purpose, k.key_id);
  EXPECT_THAT(keys, ElementsAre(std::pair<std::string, int>{"amrm", 7}, std::pair{"container", -1},
                                std::pair{"container", 2}));
}

TYPED_TEST(StateStoreTest, PutApplicationReplacesAndKeepsItsAttempts) {
  ApplicationRecord app = FullApplication("app_1");
  ASSERT_TRUE(this->store_->PutApplication(app).ok());
  ASSERT_TRUE(this->store_->PutAttempt(FullAttempt("app_1", 1)).ok());
  ASSERT_TRUE(this->store_->PutAttempt(FullAttempt("app_1", 2)).ok());

  app.state = "FINISHED";
  app.final_status = "SUCCEEDED";
  app.submission = "";
  ASSERT_TRUE(this->store_->PutApplication(app).ok());

  RmState state = this->MustLoad();
  EXPECT_THAT(state.apps, ElementsAre(app));
  EXPECT_THAT(state.attempts, ElementsAre(FullAttempt("app_1", 1), FullAttempt("app_1", 2)));
}

TYPED_TEST(StateStoreTest, PutAttemptReplaces) {
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  AttemptRecord attempt = FullAttempt("app_1", 1);
  ASSERT_TRUE(this->store_->PutAttempt(attempt).ok());
  attempt.state = "FAILED";
  attempt.exit_status = 137;
  ASSERT_TRUE(this->store_->PutAttempt(attempt).ok());
  EXPECT_THAT(this->MustLoad().attempts, ElementsAre(attempt));
}

TYPED_TEST(StateStoreTest, PutAttemptOfUnknownApplicationIsNotFound) {
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  const RmState before = this->MustLoad();

  absl::Status s = this->store_->PutAttempt(FullAttempt("app_404", 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("app_404"));
  EXPECT_THAT(s.message(), HasSubstr("application is not stored"));
  EXPECT_EQ(this->MustLoad(), before);
}

TYPED_TEST(StateStoreTest, PutApplicationAndAttemptStoresBoth) {
  const ApplicationRecord app = FullApplication("app_1");
  const AttemptRecord attempt = FullAttempt("app_1", 1);
  ASSERT_TRUE(this->store_->PutApplicationAndAttempt(app, attempt).ok());
  RmState state = this->MustLoad();
  EXPECT_THAT(state.apps, ElementsAre(app));
  EXPECT_THAT(state.attempts, ElementsAre(attempt));
}

TYPED_TEST(StateStoreTest, PutApplicationAndAttemptIsAllOrNothing) {
  ApplicationRecord stored = FullApplication("app_1");
  stored.state = "ACCEPTED";
  ASSERT_TRUE(this->store_->PutApplication(stored).ok());
  const RmState before = this->MustLoad();

  // An update of the stored application whose attempt is invalid: the update is not applied.
  ApplicationRecord update = stored;
  update.state = "RUNNING";
  AttemptRecord bad_attempt = FullAttempt("app_1", 0);
  absl::Status s = this->store_->PutApplicationAndAttempt(update, bad_attempt);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("attempt_id"));
  EXPECT_EQ(this->MustLoad(), before);

  // A new application with an attempt in an unknown state: the application is not stored.
  AttemptRecord bogus_state = FullAttempt("app_2", 1);
  bogus_state.state = "BOGUS";
  s = this->store_->PutApplicationAndAttempt(FullApplication("app_2"), bogus_state);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("state 'BOGUS'"));
  EXPECT_EQ(this->MustLoad(), before);

  // An attempt of another application.
  s = this->store_->PutApplicationAndAttempt(FullApplication("app_2"), FullAttempt("app_1", 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("does not match application 'app_2'"));
  EXPECT_EQ(this->MustLoad(), before);
}

TYPED_TEST(StateStoreTest, RemoveApplicationRemovesItsAttempts) {
  for (const char* id : {"app_1", "app_2"}) {
    ASSERT_TRUE(this->store_->PutApplication(FullApplication(id)).ok());
    ASSERT_TRUE(this->store_->PutAttempt(FullAttempt(id, 1)).ok());
    ASSERT_TRUE(this->store_->PutAttempt(FullAttempt(id, 2)).ok());
  }
  ASSERT_TRUE(this->store_->RemoveApplication("app_1").ok());

  RmState state = this->MustLoad();
  EXPECT_THAT(state.apps, ElementsAre(FullApplication("app_2")));
  EXPECT_THAT(state.attempts, ElementsAre(FullAttempt("app_2", 1), FullAttempt("app_2", 2)));

  // The removed application's attempts do not come back with it.
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  EXPECT_EQ(this->MustLoad().attempts.size(), 2u);
}

TYPED_TEST(StateStoreTest, RemoveUnknownApplicationIsNotFoundAndChangesNothing) {
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  ASSERT_TRUE(this->store_->PutAttempt(FullAttempt("app_1", 1)).ok());
  const RmState before = this->MustLoad();

  absl::Status s = this->store_->RemoveApplication("app_2");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("'app_2'"));
  ASSERT_TRUE(this->store_->RemoveApplication("app_1").ok());
  EXPECT_EQ(this->store_->RemoveApplication("app_1").code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(this->MustLoad().apps, IsEmpty());
}

TYPED_TEST(StateStoreTest, RejectsInvalidRecordsNamingTheFieldAndChangesNothing) {
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  ASSERT_TRUE(this->store_->PutAttempt(FullAttempt("app_1", 1)).ok());
  ASSERT_TRUE(this->store_->PutMasterKey(FullMasterKey("amrm", 1)).ok());
  const RmState before = this->MustLoad();
  StateStore& store = *this->store_;

  struct Case {
    const char* name;
    std::function<absl::Status()> call;
    const char* want;  // substring of the message
  };
  auto app = [](auto mutate) {
    ApplicationRecord a = FullApplication("app_1");
    mutate(a);
    return a;
  };
  auto attempt = [](auto mutate) {
    AttemptRecord a = FullAttempt("app_1", 1);
    mutate(a);
    return a;
  };
  auto key = [](auto mutate) {
    MasterKeyRecord k = FullMasterKey("amrm", 1);
    mutate(k);
    return k;
  };
  const std::vector<Case> cases = {
      {"empty app_id", [&] { return store.PutApplication(app([](auto& a) { a.app_id = ""; })); },
       "app_id"},
      {"unknown app state",
       [&] { return store.PutApplication(app([](auto& a) { a.state = "DONE"; })); },
       "state 'DONE' is not one of NEW, SUBMITTED"},
      {"lower-case app state",
       [&] { return store.PutApplication(app([](auto& a) { a.state = "running"; })); },
       "state 'running'"},
      {"unknown final_status",
       [&] { return store.PutApplication(app([](auto& a) { a.final_status = "OK"; })); },
       "final_status 'OK'"},
      {"max_attempts 0",
       [&] { return store.PutApplication(app([](auto& a) { a.max_attempts = 0; })); },
       "max_attempts"},
      {"attempt with empty app_id",
       [&] { return store.PutAttempt(attempt([](auto& a) { a.app_id = ""; })); }, "app_id"},
      {"attempt_id 0", [&] { return store.PutAttempt(attempt([](auto& a) { a.attempt_id = 0; })); },
       "attempt_id 0"},
      {"negative attempt_id",
       [&] { return store.PutAttempt(attempt([](auto& a) { a.attempt_id = -3; })); },
       "attempt_id -3"},
      {"unknown attempt state",
       [&] { return store.PutAttempt(attempt([](auto& a) { a.state = "ZOMBIE"; })); },
       "state 'ZOMBIE'"},
      {"invalid app in pair",
       [&] {
         return store.PutApplicationAndAttempt(app([](auto& a) { a.state = "X"; }),
                                               FullAttempt("app_1", 2));
       },
       "state 'X'"},
      {"unknown purpose",
       [&] { return store.PutMasterKey(key([](auto& k) { k.purpose = "nm"; })); },
       "purpose 'nm' is not one of container, amrm"},
      {"empty secret", [&] { return store.PutMasterKey(key([](auto& k) { k.secret = ""; })); },
       "secret"},
      {"remove with unknown purpose", [&] { return store.RemoveMasterKey("AMRM", 1); },
       "purpose 'AMRM'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    absl::Status s = c.call();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(s.message(), HasSubstr(c.want));
    EXPECT_EQ(this->MustLoad(), before);
  }
}

TYPED_TEST(StateStoreTest, MasterKeysAreReplacedAndRemoved) {
  MasterKeyRecord key = FullMasterKey("container", 1);
  ASSERT_TRUE(this->store_->PutMasterKey(key).ok());
  ASSERT_TRUE(this->store_->PutMasterKey(FullMasterKey("amrm", 1)).ok());
  key.secret = "rolled";
  key.expires_ms += 1000;
  ASSERT_TRUE(this->store_->PutMasterKey(key).ok());
  EXPECT_THAT(this->MustLoad().keys, ElementsAre(FullMasterKey("amrm", 1), key));

  ASSERT_TRUE(this->store_->RemoveMasterKey("amrm", 1).ok());
  EXPECT_THAT(this->MustLoad().keys, ElementsAre(key));
  absl::Status s = this->store_->RemoveMasterKey("amrm", 1);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound) << s;
  EXPECT_THAT(s.message(), HasSubstr("amrm/1"));
  EXPECT_EQ(this->store_->RemoveMasterKey("container", 2).code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(this->MustLoad().keys, ElementsAre(key));
}

// Admin decisions about nodes (decommissioned, attributes set centrally) survive a restart.
TYPED_TEST(StateStoreTest, NodeAdminRecordsAreReplacedRemovedAndSortedByNode) {
  NodeAdminRecord a{"host-b.example:8041", false, {{"gpu", "a100"}, {"rack", ""}}};
  NodeAdminRecord b{"host-a.example", true, {}};
  ASSERT_TRUE(this->store_->UpdateNodeAdmin({a, b}, {}).ok());
  EXPECT_THAT(this->MustLoad().node_admin, ElementsAre(b, a));
  a.attributes = {{"gpu", "h100"}};
  a.decommissioned = true;
  ASSERT_TRUE(this->store_->UpdateNodeAdmin({a}, {}).ok());
  EXPECT_THAT(this->MustLoad().node_admin, ElementsAre(b, a));
  // A removal of what is not stored changes nothing.
  ASSERT_TRUE(this->store_->UpdateNodeAdmin({}, {b.node, "never-stored"}).ok());
  ASSERT_TRUE(this->store_->UpdateNodeAdmin({}, {b.node}).ok());
  EXPECT_THAT(this->MustLoad().node_admin, ElementsAre(a));
  ASSERT_TRUE(this->store_->UpdateNodeAdmin({}, {}).ok());
  // Bad records name what is wrong and change nothing, the good ones beside them included.
  const NodeAdminRecord good{"host-c", true, {}};
  for (NodeAdminRecord bad : {NodeAdminRecord{"", true, {}},
                              NodeAdminRecord{"a/b", true, {}},
                              NodeAdminRecord{std::string(256, 'h'), true, {}},
                              NodeAdminRecord{"host-d", false, {{"", "x"}}}}) {
    absl::Status s = this->store_->UpdateNodeAdmin({good, bad}, {});
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad.node;
    EXPECT_THAT(s.message(), HasSubstr("node"));
  }
  EXPECT_EQ(this->store_->UpdateNodeAdmin({good}, {""}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(this->MustLoad().node_admin, ElementsAre(a));
}

TYPED_TEST(StateStoreTest, CallsAfterCloseFail) {
  ASSERT_TRUE(this->store_->PutApplication(FullApplication("app_1")).ok());
  ASSERT_TRUE(this->store_->Close().ok());
  EXPECT_EQ(this->store_->Load().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->BumpEpoch().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->PutApplication(FullApplication("app_2")).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->RemoveApplication("app_1").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(this->store_->PutMasterKey(FullMasterKey("amrm", 1)).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(this->store_->Load().status().message()), HasSubstr("closed"));
  EXPECT_TRUE(this->store_->Close().ok());  // Idempotent.
}

// Keys are bytes: any app_id (slashes, dots, '%', spaces, control and non-ASCII bytes) is stored,
// sorted bytewise (as unsigned bytes), and removed with its attempts.
TYPED_TEST(StateStoreTest, KeysWithAnyBytesRoundTripAndSortBytewise) {
  std::vector<std::string> ids = {
      "a/b",  "..",   ".",    "app 1",    "%41", "A", "\xc3\xa9t\xc3\xa9",
      "\x01", "\x7f", "\xff", "zookeeper"};
  ids.push_back(std::string(300, 'x'));
  for (const std::string& id : ids) {
    ASSERT_TRUE(this->store_->PutApplication(FullApplication(id)).ok()) << id;
    ASSERT_TRUE(this->store_->PutAttempt(FullAttempt(id, 1)).ok()) << id;
  }
  std::vector<std::string> sorted = ids;
  std::sort(sorted.begin(), sorted.end());
  ASSERT_EQ(sorted.back(), "\xff");  // std::string compares bytes as unsigned.

  RmState state = this->MustLoad();
  std::vector<std::string> apps, attempts;
  for (const auto& app : state.apps) apps.push_back(app.app_id);
  for (const auto& attempt : state.attempts) attempts.push_back(attempt.app_id);
  EXPECT_EQ(apps, sorted);
  EXPECT_EQ(attempts, sorted);
  for (const std::string& id : ids)
    EXPECT_THAT(state.apps, ::testing::Contains(FullApplication(id)));

  ASSERT_TRUE(this->store_->RemoveApplication("a/b").ok());
  ASSERT_TRUE(this->store_->RemoveApplication("..").ok());
  state = this->MustLoad();
  EXPECT_EQ(state.apps.size(), ids.size() - 2);
  EXPECT_EQ(state.attempts.size(), ids.size() - 2);
  EXPECT_EQ(this->store_->RemoveApplication("a").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(this->store_->RemoveApplication("").code(), absl::StatusCode::kNotFound);
}

// Many records, each kind interleaved with the others, all come back.
TYPED_TEST(StateStoreTest, ManyRecordsComeBack) {
  RmState want;
  for (int i = 0; i < 120; ++i) {
    const std::string id = absl::StrCat("application_1700000000000_", 1000 + i);
    ApplicationRecord app = FullApplication(id);
    app.priority = i;
    want.apps.push_back(app);
    for (int n = 1; n <= 1 + i % 3; ++n) want.attempts.push_back(FullAttempt(id, n));
    ASSERT_TRUE(this->store_->PutApplicationAndAttempt(app, FullAttempt(id, 1)).ok());
    for (int n = 2; n <= 1 + i % 3; ++n) {
      ASSERT_TRUE(this->store_->PutAttempt(FullAttempt(id, n)).ok());
    }
    if (i % 10 == 0) {
      want.keys.push_back(FullMasterKey("container", i));
      ASSERT_TRUE(this->store_->PutMasterKey(FullMasterKey("container", i)).ok());
    }
  }
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(this->store_->BumpEpoch().ok());
  want.epoch = 4;
  EXPECT_EQ(this->MustLoad(), want);
}

// Stores written by the previous version of each durable back-end (issue 28): each factory
// writes `state` in that version's format at `dir` and opens it with this binary.

struct SqliteV1Factory {
  static constexpr const char* kName = "SqliteSchemaV1";
  static absl::Status WriteOld(const std::string& dir, const RmState& state) {
    return legacy_test::WriteSqliteStoreV1(dir + "/state.db", state);
  }
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& dir) {
    return OpenSqliteStore(dir + "/state.db");
  }
};

// The pre-proto ZooKeeper format ("weft-rm-state 1"); opening it active migrates it to protos.
struct ZooKeeperPreProtoFactory {
  static constexpr const char* kName = "ZooKeeperPreProto";
  static std::string Root(const std::string& dir) {
    return "/conformance-old/" + dir.substr(dir.find_last_of('/') + 1);
  }
  static absl::Status WriteOld(const std::string& dir, const RmState& state) {
    absl::StatusOr<std::unique_ptr<TestZooKeeper>>& server = SharedZooKeeper();
    if (!server.ok()) return server.status();
    absl::StatusOr<std::unique_ptr<zk::ZkClient>> client =
        zk::ZkClient::Create((*server)->connect_string(), 10000);
    if (!client.ok()) return client.status();
    return legacy_test::WriteOldZkStore(**client, Root(dir), state);
  }
  static absl::StatusOr<std::unique_ptr<StateStore>> Open(const std::string& dir) {
    absl::StatusOr<std::unique_ptr<TestZooKeeper>>& server = SharedZooKeeper();
    if (!server.ok()) return server.status();
    ZkStoreOptions options;
    options.connect = (*server)->connect_string();
    options.root = Root(dir);
    options.identity = "conformance-test";
    return OpenZooKeeperStore(options);
  }
};

template <typename Factory>
class PreviousFormatTest : public ::testing::Test {
 protected:
  // Opens the store at dir_ and loads it; fails the test on errors.
  std::unique_ptr<StateStore> MustOpen() {
    absl::StatusOr<std::unique_ptr<StateStore>> store = Factory::Open(dir_.path());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  ScopedTempDir dir_;
};

using PreviousFormats = ::testing::Types<SqliteV1Factory, ZooKeeperPreProtoFactory>;
TYPED_TEST_SUITE(PreviousFormatTest, PreviousFormats, ImplementationNames);

TYPED_TEST(PreviousFormatTest, LoadsWhatThePreviousVersionWroteAndKeepsWorking) {
  RmState old;
  old.epoch = 41;
  old.apps = {FullApplication(std::string("app\0/1", 6)), FullApplication("app_2")};
  old.apps[1].state = "KILLED";
  old.apps[1].final_status = "KILLED";
  old.attempts = {FullAttempt(old.apps[0].app_id, 1), FullAttempt(old.apps[0].app_id, 2),
                  FullAttempt("app_2", 1)};
  old.keys = {FullMasterKey("amrm", INT32_MIN), FullMasterKey("container", 5)};
  ASSERT_TRUE(TypeParam::WriteOld(this->dir_.path(), old).ok());

  std::unique_ptr<StateStore> store = this->MustOpen();
  ASSERT_NE(store, nullptr);
  absl::StatusOr<RmState> loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(*loaded, old);

  absl::StatusOr<int64_t> epoch = store->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 42);
  ASSERT_TRUE(store->RemoveApplication("app_2").ok());
  ASSERT_TRUE(store->RemoveMasterKey("container", 5).ok());
  ASSERT_TRUE(store->PutAttempt(FullAttempt(old.apps[0].app_id, 3)).ok());
  ASSERT_TRUE(store->Close().ok());
  store.reset();

  store = this->MustOpen();
  ASSERT_NE(store, nullptr);
  loaded = store->Load();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->epoch, 42);
  EXPECT_THAT(loaded->apps, ElementsAre(old.apps[0]));
  EXPECT_THAT(loaded->attempts,
              ElementsAre(old.attempts[0], old.attempts[1], FullAttempt(old.apps[0].app_id, 3)));
  EXPECT_THAT(loaded->keys, ElementsAre(old.keys[0]));
}

}  // namespace
}  // namespace weft::store
