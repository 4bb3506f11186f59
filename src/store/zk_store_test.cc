// Copyright Weft authors. What only the ZooKeeper store does: its layout, fencing of a deposed
// active, behaviour when ZooKeeper is down or hung, size limits, damaged or foreign data. The
// StateStore contract itself is tested in store_conformance_test.cc. Every test runs against a
// private ZooKeeper server (store/test_zookeeper.h).
#include "store/zk_store.h"

#include <zookeeper/zookeeper.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/state_records.h"
#include "store/store_test_util.h"
#include "store/test_zookeeper.h"
#include "store/zk_client.h"

namespace weft::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using zk::ZkClient;
using Op = ZkClient::Op;

std::unique_ptr<StateStore> MustOpen(const ZkStoreOptions& options) {
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(options);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

RmState MustLoad(StateStore& store) {
  absl::StatusOr<RmState> state = store.Load();
  EXPECT_TRUE(state.ok()) << state.status();
  return state.ok() ? *std::move(state) : RmState{};
}

std::unique_ptr<ZkClient> MustConnect(const std::string& connect, const std::string& auth = "") {
  absl::StatusOr<std::unique_ptr<ZkClient>> client = ZkClient::Create(connect, 10000, auth);
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return nullptr;
  absl::Status s = (*client)->Connect(absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(s.ok()) << s;
  return *std::move(client);
}

// The node's data, or nullopt if it does not exist.
std::optional<std::string> ReadNode(ZkClient& client, const std::string& path) {
  absl::StatusOr<std::vector<ZkClient::Node>> nodes =
      client.Get({path}, absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(nodes.ok()) << nodes.status();
  if (!nodes.ok() || !(*nodes)[0].exists) return std::nullopt;
  return (*nodes)[0].data;
}

void MustCommit(ZkClient& client, const std::vector<Op>& ops) {
  absl::StatusOr<ZkClient::MultiResult> r = client.Multi(ops, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->rc, ZOK) << zerror(r->rc) << " at op " << r->failed_op;
}

// A client without the store's credential (`who`) can neither read `paths` nor rewrite the
// master key at `key`.
void ExpectLockedOut(ZkClient& stranger, const std::vector<std::string>& paths,
                     const std::string& key, const std::string& who) {
  for (const std::string& path : paths) {
    absl::Status denied = stranger.Get({path}, absl::Now() + absl::Seconds(30)).status();
    EXPECT_EQ(denied.code(), absl::StatusCode::kPermissionDenied)
        << "'" << who << "' read " << path << ": " << denied;
  }
  absl::StatusOr<ZkClient::MultiResult> forged =
      stranger.Multi({Op::Set(key, "forged")}, absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(!forged.ok() || forged->rc == ZNOAUTH) << "'" << who << "' rewrote a master key";
}

bool IsFenced(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition &&
         s.message().find("fenced: another ResourceManager became active") !=
             absl::string_view::npos;
}

// Tests that leave the server running share one; each uses its own root.
class ZkStoreTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = new absl::StatusOr<std::unique_ptr<TestZooKeeper>>(TestZooKeeper::Start());
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    ASSERT_TRUE(server_->ok()) << server_->status();
    root_ = absl::StrCat("/zk-store-test/",
                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  TestZooKeeper& server() { return ***server_; }

  ZkStoreOptions Options(const std::string& identity) const {
    ZkStoreOptions options;
    options.connect = (**server_)->connect_string();
    options.root = root_;
    options.identity = identity;
    return options;
  }

  static absl::StatusOr<std::unique_ptr<TestZooKeeper>>* server_;
  std::string root_;
};

absl::StatusOr<std::unique_ptr<TestZooKeeper>>* ZkStoreTest::server_ = nullptr;

TEST_F(ZkStoreTest, CreatesTheDocumentedLayout) {
  std::unique_ptr<StateStore> store = MustOpen(Options("rm-a:8030"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      store->PutApplicationAndAttempt(FullApplication("app/1"), FullAttempt("app/1", 2)).ok());
  ASSERT_TRUE(store->PutMasterKey(FullMasterKey("amrm", -3)).ok());
  ASSERT_EQ(*store->BumpEpoch(), 1);
  ASSERT_EQ(*store->BumpEpoch(), 2);

  std::unique_ptr<ZkClient> raw = MustConnect(server().connect_string());
  ASSERT_NE(raw, nullptr);
  EXPECT_EQ(ReadNode(*raw, root_), "weft-rm-state 2");
  EXPECT_EQ(ReadNode(*raw, root_ + "/fence"), "rm-a:8030");
  EXPECT_EQ(ReadNode(*raw, root_ + "/epoch"), EncodeEpoch(2));
  EXPECT_EQ(ReadNode(*raw, root_ + "/apps/app%2F1"), EncodeApplication(FullApplication("app/1")));
  EXPECT_EQ(ReadNode(*raw, root_ + "/apps/app%2F1/2"), EncodeAttempt(FullAttempt("app/1", 2)));
  EXPECT_EQ(ReadNode(*raw, root_ + "/keys/amrm.-3"), EncodeMasterKey(FullMasterKey("amrm", -3)));
}

// Secrets at rest (issue 26): with a credential, the master keys and submissions in ZooKeeper
// are readable by the RMs alone; a client without it, or with another one, is refused.
TEST_F(ZkStoreTest, WithACredentialNodesAreTheRmsAlone) {
  ZkStoreOptions options = Options("rm-a");
  options.auth = server().auth();
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutMasterKey(FullMasterKey("container", 7)).ok());
  ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  const std::vector<std::string> secrets = {root_, root_ + "/keys/container.7",
                                            root_ + "/apps/app_1", root_ + "/epoch"};
  for (const std::string& credential : {std::string(), std::string("weft-rm:wrong-password")}) {
    absl::StatusOr<std::unique_ptr<ZkClient>> stranger =
        ZkClient::Create(server().connect_string(), 10000, credential);
    ASSERT_TRUE(stranger.ok()) << stranger.status();
    ASSERT_TRUE((*stranger)->Connect(absl::Now() + absl::Seconds(30)).ok());
    ExpectLockedOut(**stranger, secrets, root_ + "/keys/container.7", credential);
  }
  absl::StatusOr<std::unique_ptr<ZkClient>> rm =
      ZkClient::Create(server().connect_string(), 10000, server().auth());
  ASSERT_TRUE(rm.ok()) << rm.status();
  ASSERT_TRUE((*rm)->Connect(absl::Now() + absl::Seconds(30)).ok());
  EXPECT_EQ(ReadNode(**rm, root_ + "/keys/container.7"),
            EncodeMasterKey(FullMasterKey("container", 7)));
  // The store reopens with the same credential (a restarted or newly active RM).
  store.reset();
  ASSERT_NE(MustOpen(options), nullptr);
}

// A store an earlier Weft created open to everyone (no credential): the first active RM with a
// credential closes every node to it before serving - master keys, apps and the layout - and
// says how many; a store whose root is closed is not walked again.
TEST_F(ZkStoreTest, NodesAnEarlierWeftLeftOpenAreClosedByTheNextActiveRm) {
  {
    std::unique_ptr<StateStore> open = MustOpen(Options("rm-old"));  // no credential
    ASSERT_NE(open, nullptr);
    ASSERT_TRUE(open->PutMasterKey(FullMasterKey("container", 7)).ok());
    ASSERT_TRUE(open->PutApplication(FullApplication("app_1")).ok());
  }
  std::unique_ptr<ZkClient> stranger = MustConnect(server().connect_string());
  ASSERT_NE(stranger, nullptr);
  ASSERT_TRUE(ReadNode(*stranger, root_ + "/keys/container.7").has_value());  // open: readable
  ZkStoreOptions options = Options("rm-new");
  options.auth = server().auth();
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(MustLoad(*store).apps.size(), 1u);
  ExpectLockedOut(*stranger,
                  {root_, root_ + "/keys/container.7", root_ + "/apps/app_1", root_ + "/epoch"},
                  root_ + "/keys/container.7", "no credential");
  // Closed: the next walk has nothing to do, and the store works as before.
  std::unique_ptr<ZkClient> rm = MustConnect(server().connect_string(), server().auth());
  ASSERT_NE(rm, nullptr);
  absl::StatusOr<int64_t> again = rm->CloseOpenAclsUnder(root_, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 0);
  EXPECT_EQ(ReadNode(*rm, root_ + "/keys/container.7"),
            EncodeMasterKey(FullMasterKey("container", 7)));
  ASSERT_TRUE(store->PutApplication(FullApplication("app_2")).ok());
  // Without a credential there is nothing to close to.
  EXPECT_EQ(stranger->CloseOpenAclsUnder(root_, absl::Now() + absl::Seconds(30)).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(ZkStoreTest, AMalformedCredentialIsRefused) {
  for (const char* bad : {"no-colon", ":password", "user:", "user:pass\nword"}) {
    absl::Status s = ZkClient::Create(server().connect_string(), 10000, bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST_F(ZkStoreTest, StateSurvivesCloseAndReopen) {
  RmState written;
  {
    std::unique_ptr<StateStore> store = MustOpen(Options("rm-a"));
    ASSERT_NE(store, nullptr);
    ASSERT_EQ(*store->BumpEpoch(), 1);
    for (const char* id : {"app_1", "app_2", "app_3"}) {
      ASSERT_TRUE(store->PutApplicationAndAttempt(FullApplication(id), FullAttempt(id, 1)).ok());
    }
    ASSERT_TRUE(store->PutAttempt(FullAttempt("app_1", 2)).ok());
    ASSERT_TRUE(store->RemoveApplication("app_2").ok());
    ASSERT_TRUE(store->PutMasterKey(FullMasterKey("container", 9)).ok());
    written = MustLoad(*store);
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_THAT(written.apps, ElementsAre(FullApplication("app_1"), FullApplication("app_3")));
  std::unique_ptr<StateStore> store = MustOpen(Options("rm-a"));
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(MustLoad(*store), written);
  EXPECT_EQ(*store->BumpEpoch(), 2);
}

TEST_F(ZkStoreTest, NewActiveFencesTheOldOneWhoseWritesFailAndChangeNothing) {
  std::unique_ptr<StateStore> a = MustOpen(Options("rm-a"));
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(*a->BumpEpoch(), 1);
  ASSERT_TRUE(a->PutApplicationAndAttempt(FullApplication("app_1"), FullAttempt("app_1", 1)).ok());
  ASSERT_TRUE(a->PutMasterKey(FullMasterKey("amrm", 1)).ok());
  const RmState before = MustLoad(*a);

  // B becomes active (a new session, as another RM process would have).
  std::unique_ptr<StateStore> b = MustOpen(Options("rm-b"));
  ASSERT_NE(b, nullptr);

  absl::Status s = a->PutApplication(FullApplication("app_2"));
  EXPECT_TRUE(IsFenced(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("now names 'rm-b'"));
  EXPECT_THAT(s.message(), HasSubstr("storing application 'app_2'"));
  // Every kind of write of A fails the same way, and none changes anything.
  EXPECT_TRUE(IsFenced(a->BumpEpoch().status()));
  EXPECT_TRUE(IsFenced(a->PutAttempt(FullAttempt("app_1", 2))));
  EXPECT_TRUE(
      IsFenced(a->PutApplicationAndAttempt(FullApplication("app_3"), FullAttempt("app_3", 1))));
  EXPECT_TRUE(IsFenced(a->RemoveApplication("app_1")));
  EXPECT_TRUE(IsFenced(a->PutMasterKey(FullMasterKey("container", 1))));
  EXPECT_TRUE(IsFenced(a->RemoveMasterKey("amrm", 1)));
  EXPECT_EQ(MustLoad(*a), before);  // A may still read.

  // B writes; B sees exactly what A committed before B opened, plus its own writes.
  ASSERT_TRUE(b->PutApplication(FullApplication("app_4")).ok());
  absl::StatusOr<int64_t> epoch = b->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 2);
  RmState state = MustLoad(*b);
  EXPECT_THAT(state.apps, ElementsAre(FullApplication("app_1"), FullApplication("app_4")));
  EXPECT_THAT(state.attempts, ElementsAre(FullAttempt("app_1", 1)));
  EXPECT_THAT(state.keys, ElementsAre(FullMasterKey("amrm", 1)));

  // A stays fenced (even without asking ZooKeeper) until it reopens, which fences B in turn.
  EXPECT_TRUE(IsFenced(a->PutApplication(FullApplication("app_2"))));
  ASSERT_TRUE(a->Close().ok());
  a = MustOpen(Options("rm-a"));
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(a->PutApplication(FullApplication("app_5")).ok());
  EXPECT_TRUE(IsFenced(b->PutApplication(FullApplication("app_6"))));
  EXPECT_EQ(MustLoad(*b).apps.size(), 3u);
}

// A writes as fast as it can while B takes over: every write A was told succeeded is in B's
// Load(), and nothing else of A's is.
TEST_F(ZkStoreTest, TakeoverDuringWritesKeepsExactlyTheAcknowledgedOnes) {
  std::unique_ptr<StateStore> a = MustOpen(Options("rm-a"));
  ASSERT_NE(a, nullptr);

  absl::Mutex mu;
  int acknowledged = 0;
  std::set<std::string> acknowledged_ids;
  absl::Status first_failure;
  std::thread writer([&] {
    for (int i = 0; i < 100000; ++i) {
      const std::string id = absl::StrCat("app_", 100000 + i);
      absl::Status s = a->PutApplication(FullApplication(id));
      absl::MutexLock lock(&mu);
      if (!s.ok()) {
        first_failure = s;
        return;
      }
      acknowledged_ids.insert(id);
      ++acknowledged;
    }
  });
  {
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n >= 20; }, &acknowledged));
  }
  std::unique_ptr<StateStore> b = MustOpen(Options("rm-b"));
  ASSERT_NE(b, nullptr);
  writer.join();

  EXPECT_TRUE(IsFenced(first_failure)) << first_failure;
  std::set<std::string> loaded;
  for (const ApplicationRecord& app : MustLoad(*b).apps) loaded.insert(app.app_id);
  EXPECT_EQ(loaded, acknowledged_ids);
  EXPECT_GE(loaded.size(), 20u);
}

TEST_F(ZkStoreTest, ReadOnlyStoreLoadsButNeitherWritesNorFences) {
  std::unique_ptr<StateStore> active = MustOpen(Options("rm-a"));
  ASSERT_NE(active, nullptr);
  ASSERT_TRUE(active->PutApplication(FullApplication("app_1")).ok());

  ZkStoreOptions options = Options("standby");
  options.fence = false;
  std::unique_ptr<StateStore> standby = MustOpen(options);
  ASSERT_NE(standby, nullptr);
  EXPECT_THAT(MustLoad(*standby).apps, ElementsAre(FullApplication("app_1")));
  absl::Status s = standby->PutApplication(FullApplication("app_2"));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("read-only"));
  EXPECT_EQ(standby->BumpEpoch().status().code(), absl::StatusCode::kFailedPrecondition);

  EXPECT_TRUE(active->PutApplication(FullApplication("app_3")).ok());  // Not fenced.
  EXPECT_EQ(MustLoad(*standby).apps.size(), 2u);

  options.root = root_ + "-missing";
  absl::StatusOr<std::unique_ptr<StateStore>> missing = OpenZooKeeperStore(options);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

TEST_F(ZkStoreTest, RecordsOverTheRequestLimitAreInvalidArgumentAndChangeNothing) {
  std::unique_ptr<StateStore> store = MustOpen(Options("rm-a"));
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  const RmState before = MustLoad(*store);

  ApplicationRecord big = FullApplication("app_1");
  big.submission.assign(2 << 20, 'x');
  absl::Status s = store->PutApplication(big);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(s.message(), HasSubstr("over the limit of 1048575 bytes"));
  EXPECT_THAT(s.message(), HasSubstr("application 'app_1'"));

  // Each fits alone, not both in one transaction.
  ApplicationRecord half = FullApplication("app_2");
  half.submission.assign(600'000, 'a');
  AttemptRecord attempt = FullAttempt("app_2", 1);
  attempt.diagnostics.assign(600'000, 'd');
  s = store->PutApplicationAndAttempt(half, attempt);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;

  MasterKeyRecord key = FullMasterKey("amrm", 1);
  key.secret.assign(1 << 20, 's');
  EXPECT_EQ(store->PutMasterKey(key).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MustLoad(*store), before);

  // The largest record the store accepts is really stored: its size estimate is not too low
  // (a request over the server's jute.maxbuffer would drop the connection instead).
  ApplicationRecord largest = FullApplication("app_3");
  size_t size = (1 << 20);
  for (;; size -= 16) {
    largest.submission.assign(size, 'z');
    s = store->PutApplication(largest);
    if (s.code() != absl::StatusCode::kInvalidArgument) break;
  }
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_GT(size, 1'048'000u);
  ASSERT_TRUE(store->PutApplication(half).ok());
  ASSERT_TRUE(store->PutAttempt(attempt).ok());
  RmState state = MustLoad(*store);
  EXPECT_THAT(state.apps, ElementsAre(FullApplication("app_1"), half, largest));
  EXPECT_THAT(state.attempts, ElementsAre(attempt));
}

TEST_F(ZkStoreTest, RemovingAnApplicationWithMoreAttemptsThanFitInOneTransaction) {
  ZkStoreOptions options = Options("rm-a");
  options.max_request_bytes = 4096;  // About 40 deletes per transaction.
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  ASSERT_TRUE(store->PutApplication(FullApplication("app_2")).ok());
  for (int n = 1; n <= 150; ++n) {
    AttemptRecord attempt = FullAttempt("app_1", n);
    attempt.diagnostics.clear();
    ASSERT_TRUE(store->PutAttempt(attempt).ok()) << n;
  }
  ASSERT_TRUE(store->RemoveApplication("app_1").ok());
  RmState state = MustLoad(*store);
  EXPECT_THAT(state.apps, ElementsAre(FullApplication("app_2")));
  EXPECT_THAT(state.attempts, IsEmpty());
}

TEST_F(ZkStoreTest, BadOptionsAreInvalidArgument) {
  struct Case {
    const char* name;
    std::function<void(ZkStoreOptions&)> mutate;
    const char* want;
  };
  const std::vector<Case> cases = {
      {"empty connect", [](ZkStoreOptions& o) { o.connect = ""; }, "connect string is empty"},
      {"relative root", [](ZkStoreOptions& o) { o.root = "weft"; }, "absolute path"},
      {"slash root", [](ZkStoreOptions& o) { o.root = "/"; }, "absolute path"},
      {"trailing slash", [](ZkStoreOptions& o) { o.root = "/weft/"; }, "trailing"},
      {"double slash", [](ZkStoreOptions& o) { o.root = "/weft//x"; }, "empty, '.' or '..'"},
      {"dot dot", [](ZkStoreOptions& o) { o.root = "/weft/../x"; }, "empty, '.' or '..'"},
      {"zookeeper", [](ZkStoreOptions& o) { o.root = "/zookeeper/x"; }, "/zookeeper"},
      {"timeout", [](ZkStoreOptions& o) { o.session_timeout_ms = 0; }, "session timeout"},
      {"identity", [](ZkStoreOptions& o) { o.identity = "a\nb"; }, "newline"},
      {"no port", [](ZkStoreOptions& o) { o.connect = "127.0.0.1"; }, "connect string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ZkStoreOptions options = Options("rm-a");
    c.mutate(options);
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(options);
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument) << store.status();
    EXPECT_THAT(store.status().message(), HasSubstr(c.want));
  }
}

TEST_F(ZkStoreTest, RootHoldingOtherDataIsRefusedAndAnEmptyOneAdopted) {
  std::unique_ptr<ZkClient> raw = MustConnect(server().connect_string());
  ASSERT_NE(raw, nullptr);
  MustCommit(*raw, {Op::Create(root_, ""), Op::Create(root_ + "/foreign", "hello"),
                    Op::Create(root_ + "/empty", "")});

  ZkStoreOptions options = Options("rm-a");
  options.root = root_ + "/foreign";
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(),
              HasSubstr("is not a Weft state store (its data is 'hello'"));
  EXPECT_EQ(ReadNode(*raw, root_ + "/foreign"), "hello");

  options.root = root_ + "/empty";
  store = OpenZooKeeperStore(options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->PutApplication(FullApplication("app_1")).ok());
}

TEST_F(ZkStoreTest, DamagedStoreIsDataLossNamingTheNode) {
  {
    std::unique_ptr<StateStore> store = MustOpen(Options("rm-a"));
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
    ASSERT_TRUE(store->PutApplication(FullApplication("app_2")).ok());
  }
  std::unique_ptr<ZkClient> raw = MustConnect(server().connect_string());
  ASSERT_NE(raw, nullptr);
  std::unique_ptr<StateStore> store = MustOpen(Options("rm-a"));
  ASSERT_NE(store, nullptr);

  MustCommit(*raw, {Op::Set(root_ + "/apps/app_2", "garbage")});
  absl::Status s = store->Load().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr(root_ + "/apps/app_2: application record: "));

  // A record stored under another application's name.
  MustCommit(*raw, {Op::Set(root_ + "/apps/app_2", EncodeApplication(FullApplication("app_1")))});
  s = store->Load().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("holds application 'app_1'"));

  // Writes still work (and repair the record).
  ASSERT_TRUE(store->PutApplication(FullApplication("app_2")).ok());
  EXPECT_EQ(MustLoad(*store).apps.size(), 2u);

  MustCommit(*raw, {Op::Delete(root_ + "/epoch")});
  absl::StatusOr<std::unique_ptr<StateStore>> reopened = OpenZooKeeperStore(Options("rm-a"));
  EXPECT_EQ(reopened.status().code(), absl::StatusCode::kDataLoss) << reopened.status();
  EXPECT_THAT(reopened.status().message(), HasSubstr(root_ + "/epoch is missing"));
}

TEST_F(ZkStoreTest, WorksUnderAChroot) {
  std::unique_ptr<ZkClient> raw = MustConnect(server().connect_string());
  ASSERT_NE(raw, nullptr);
  MustCommit(*raw, {Op::Create(root_, "")});
  ZkStoreOptions options = Options("rm-a");
  options.connect = server().connect_string() + root_;
  options.root = "/rm-state";
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  EXPECT_EQ(ReadNode(*raw, root_ + "/rm-state/apps/app_1"),
            EncodeApplication(FullApplication("app_1")));
}

TEST(ZkStoreUnreachableTest, OpenWithNoServerIsUnavailableWithinTheTimeout) {
  // A port nobody listens on: start and stop a server to learn one.
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->Stop().ok());
  ZkStoreOptions options;
  options.connect = (*server)->connect_string();
  options.session_timeout_ms = 1500;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenZooKeeperStore(options);
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  EXPECT_THAT(store.status().message(),
              HasSubstr("not connected to ZooKeeper '" + (*server)->connect_string() + "'"));
  EXPECT_THAT(store.status().message(), HasSubstr("Connection refused")) << store.status();
  EXPECT_GE(took, absl::Milliseconds(1500));
  EXPECT_LT(took, absl::Milliseconds(1500 + 3000));
}

// The server dies and comes back: calls fail with Unavailable within the session timeout,
// and work again once it is back, with everything committed before still there.
TEST(ZkStoreOutageTest, ServerDownMakesCallsUnavailableUntilItIsBack) {
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ZkStoreOptions options;
  options.connect = (*server)->connect_string();
  options.session_timeout_ms = 2000;
  options.identity = "rm-a";
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(
      store->PutApplicationAndAttempt(FullApplication("app_1"), FullAttempt("app_1", 1)).ok());
  ASSERT_EQ(*store->BumpEpoch(), 1);

  ASSERT_TRUE((*server)->Stop().ok());
  const absl::Duration bound = absl::Milliseconds(2000 + 3000);  // timeout + scheduling slack
  absl::Time start = absl::Now();
  absl::Status s = store->PutApplication(FullApplication("app_2"));
  EXPECT_LT(absl::Now() - start, bound);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_THAT(s.message(), HasSubstr("storing application 'app_2'"));
  EXPECT_THAT(s.message(), HasSubstr("the write was not applied"));

  start = absl::Now();
  absl::StatusOr<RmState> state = store->Load();
  EXPECT_LT(absl::Now() - start, bound);
  EXPECT_EQ(state.status().code(), absl::StatusCode::kUnavailable) << state.status();
  start = absl::Now();
  EXPECT_EQ(store->BumpEpoch().status().code(), absl::StatusCode::kUnavailable);
  EXPECT_LT(absl::Now() - start, bound);

  ASSERT_TRUE((*server)->Restart().ok());
  s = store->PutApplication(FullApplication("app_2"));
  EXPECT_TRUE(s.ok()) << s;
  absl::StatusOr<int64_t> epoch = store->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 2);
  RmState after = MustLoad(*store);
  EXPECT_THAT(after.apps, ElementsAre(FullApplication("app_1"), FullApplication("app_2")));
  EXPECT_THAT(after.attempts, ElementsAre(FullAttempt("app_1", 1)));
}

// A hung server (stopped, its connections open): a call gives up within the bound instead of
// hanging; its outcome is unknown, and repeating it once the server is back is safe.
TEST(ZkStoreOutageTest, HungServerMakesCallsUnavailableAndRepeatingThemIsSafe) {
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ZkStoreOptions options;
  options.connect = (*server)->connect_string();
  options.session_timeout_ms = 2000;
  options.identity = "rm-a";
  std::unique_ptr<StateStore> store = MustOpen(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());

  ASSERT_TRUE((*server)->Pause().ok());
  const absl::Time start = absl::Now();
  absl::Status s = store->PutApplication(FullApplication("app_2"));
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(2000 + 3000));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  ASSERT_TRUE((*server)->Resume().ok());

  // The server may have applied the interrupted write or not; a repeat settles it.
  s = store->PutApplication(FullApplication("app_2"));
  EXPECT_TRUE(s.ok()) << s;
  absl::StatusOr<int64_t> epoch = store->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 1);
  EXPECT_THAT(MustLoad(*store).apps,
              ElementsAre(FullApplication("app_1"), FullApplication("app_2")));
}

// The client replaces a session the server declared expired. (The server restarts with its
// data wiped, so the session is unknown to it; once the server's transaction id is past the
// last one the client saw, it answers the client's reconnection with "session expired".)
TEST(ZkClientTest, ReplacesAnExpiredSession) {
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<ZkClient> client = MustConnect((*server)->connect_string());
  ASSERT_NE(client, nullptr);
  MustCommit(*client, {Op::Create("/x", "1")});
  const int64_t old_session = client->client_id().client_id;
  ASSERT_NE(old_session, 0);

  ASSERT_TRUE((*server)->Stop().ok());
  std::filesystem::remove_all((*server)->dir() + "/data");
  ASSERT_TRUE((*server)->Restart().ok());
  {
    std::unique_ptr<ZkClient> other = MustConnect((*server)->connect_string());
    ASSERT_NE(other, nullptr);
    for (int i = 0; i < 20; ++i) MustCommit(*other, {Op::Create(absl::StrCat("/pad-", i), "")});
  }

  absl::Status s = client->Connect(absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_NE(client->client_id().client_id, old_session);
  EXPECT_EQ(ReadNode(*client, "/x"), std::nullopt);  // A new, empty server.
  MustCommit(*client, {Op::Create("/y", "2")});
  EXPECT_EQ(ReadNode(*client, "/y"), "2");
}

// A transaction sent to a hung server gets Unavailable at the caller's deadline; whether it
// was applied is unknown until the server answers again.
TEST(ZkClientTest, TransactionToAHungServerGivesUpAtTheDeadline) {
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<ZkClient> client = MustConnect((*server)->connect_string());
  ASSERT_NE(client, nullptr);

  ASSERT_TRUE((*server)->Pause().ok());
  const absl::Time start = absl::Now();
  absl::StatusOr<ZkClient::MultiResult> r =
      client->Multi({Op::Create("/z", "1")}, start + absl::Milliseconds(1000));
  const absl::Duration took = absl::Now() - start;
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_GE(took, absl::Milliseconds(1000));
  EXPECT_LT(took, absl::Milliseconds(1000 + 2000));
  ASSERT_TRUE((*server)->Resume().ok());

  ASSERT_TRUE(client->Connect(absl::Now() + absl::Seconds(30)).ok());
  r = client->Multi({Op::Create("/z", "1")}, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->rc == ZOK || r->rc == ZNODEEXISTS) << zerror(r->rc);
  EXPECT_EQ(ReadNode(*client, "/z"), "1");
}

TEST(TestZooKeeperTest, MissingJavaOrJarsFailClearly) {
  TestZooKeeper::Options options;
  options.java = "/nonexistent/bin/java";
  absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("java '/nonexistent/bin/java'"));
  EXPECT_THAT(server.status().message(), HasSubstr("scripts/install-deps.sh"));

  options = TestZooKeeper::Options();
  options.classpath = "/nonexistent/zookeeper.jar";
  server = TestZooKeeper::Start(options);
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), HasSubstr("'/nonexistent/zookeeper.jar'"));
}

TEST(TestZooKeeperTest, RestartKeepsPortAndDataAndTheDestructorCleansUp) {
  std::string dir;
  {
    absl::StatusOr<std::unique_ptr<TestZooKeeper>> server = TestZooKeeper::Start();
    ASSERT_TRUE(server.ok()) << server.status();
    dir = (*server)->dir();
    const std::string connect = (*server)->connect_string();
    {
      std::unique_ptr<ZkClient> client = MustConnect(connect);
      ASSERT_NE(client, nullptr);
      MustCommit(*client, {Op::Create("/kept", "yes")});
    }
    ASSERT_TRUE((*server)->Restart().ok());
    EXPECT_EQ((*server)->connect_string(), connect);
    std::unique_ptr<ZkClient> client = MustConnect(connect);
    ASSERT_NE(client, nullptr);
    EXPECT_EQ(ReadNode(*client, "/kept"), "yes");
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

}  // namespace
}  // namespace weft::store
