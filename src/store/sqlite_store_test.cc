// Copyright Weft authors. What only the SQLite store does: persistence across reopen and
// crashes, exclusive use of a path, schema checks, rollback of failures inside SQL.
#include "store/sqlite_store.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "store/store_test_util.h"

namespace weft::store {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Runs `sql` on the database at `path` through a separate, raw SQLite connection (the store
// must be closed), to set up states the store itself never writes.
void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error != nullptr ? error : "") << " in: " << sql;
  sqlite3_free(error);
  sqlite3_close(db);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

class SqliteStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<StateStore> MustOpen() {
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  static RmState MustLoad(StateStore& store) {
    absl::StatusOr<RmState> state = store.Load();
    EXPECT_TRUE(state.ok()) << state.status();
    return state.ok() ? *std::move(state) : RmState{};
  }

  ScopedTempDir dir_;
  const std::string path_ = dir_.path() + "/state.db";
};

TEST_F(SqliteStoreTest, StateSurvivesCloseAndReopen) {
  RmState written;
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_EQ(*store->BumpEpoch(), 1);
    ASSERT_EQ(*store->BumpEpoch(), 2);
    for (const char* id : {"app_1", "app_2", "app_3"}) {
      ASSERT_TRUE(store->PutApplicationAndAttempt(FullApplication(id), FullAttempt(id, 1)).ok());
    }
    ASSERT_TRUE(store->PutAttempt(FullAttempt("app_1", 2)).ok());
    ASSERT_TRUE(store->RemoveApplication("app_2").ok());
    ASSERT_TRUE(store->PutMasterKey(FullMasterKey("container", 9)).ok());
    ASSERT_TRUE(store->PutMasterKey(FullMasterKey("amrm", 3)).ok());
    ASSERT_TRUE(store->RemoveMasterKey("container", 9).ok());
    written = MustLoad(*store);
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(written.epoch, 2);
  EXPECT_THAT(written.apps, ElementsAre(FullApplication("app_1"), FullApplication("app_3")));
  EXPECT_THAT(written.attempts, ElementsAre(FullAttempt("app_1", 1), FullAttempt("app_1", 2),
                                            FullAttempt("app_3", 1)));
  EXPECT_THAT(written.keys, ElementsAre(FullMasterKey("amrm", 3)));

  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(MustLoad(*store), written);
  absl::StatusOr<int64_t> epoch = store->BumpEpoch();
  ASSERT_TRUE(epoch.ok()) << epoch.status();
  EXPECT_EQ(*epoch, 3);
}

TEST_F(SqliteStoreTest, DestroyingWithoutCloseKeepsDataAndReleasesTheLock) {
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  }
  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(MustLoad(*store).apps, ElementsAre(FullApplication("app_1")));
}

TEST_F(SqliteStoreTest, CreatesMissingParentDirectories) {
  const std::string path = dir_.path() + "/a/b/c/state.db";
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(std::filesystem::is_regular_file(path));
  ASSERT_TRUE((*store)->PutApplication(FullApplication("app_1")).ok());
}

// Secrets at rest (issue 26): the master keys and submissions are the RM's alone.
TEST_F(SqliteStoreTest, FilesArePrivateEvenUnderAnOpenUmask) {
  const mode_t old_umask = ::umask(0);  // the worst case: nothing narrows the modes
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutMasterKey({"container", 1, "k3y", 1, 2}).ok());
    for (const std::string& file : {path_, path_ + "-wal", path_ + "-shm", path_ + ".lock"}) {
      struct stat st;
      ASSERT_EQ(::stat(file.c_str(), &st), 0) << file;
      EXPECT_EQ(st.st_mode & 0777, 0600u) << file;
    }
  }
  ::umask(old_umask);
  const std::string nested = dir_.path() + "/a/b/state.db";
  ASSERT_TRUE(OpenSqliteStore(nested).ok());
  struct stat st;
  ASSERT_EQ(::stat((dir_.path() + "/a").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(SqliteStoreTest, ADirectoryOthersCanReadIsRefusedAndLeftAsItWas) {
  ASSERT_EQ(::chmod(dir_.path().c_str(), 0755), 0);
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              HasSubstr("state store directory '" + dir_.path() + "' has mode 0755"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_.path()));  // no database, no lock file
}

TEST_F(SqliteStoreTest, AnOldWorldReadableDatabaseIsNarrowedTo0600) {
  { ASSERT_NE(MustOpen(), nullptr); }
  ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(SqliteStoreTest, SecondOpenWhileOpenFailsAsInUse) {
  std::unique_ptr<StateStore> first = MustOpen();
  ASSERT_NE(first, nullptr);
  ASSERT_TRUE(first->PutApplication(FullApplication("app_1")).ok());

  absl::StatusOr<std::unique_ptr<StateStore>> second = OpenSqliteStore(path_);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(),
              HasSubstr("state store '" + path_ + "' is in use by another process"));

  // The failed open disturbed nothing; once the first store is closed the path is free.
  ASSERT_TRUE(first->PutApplication(FullApplication("app_2")).ok());
  ASSERT_TRUE(first->Close().ok());
  std::unique_ptr<StateStore> third = MustOpen();
  ASSERT_NE(third, nullptr);
  EXPECT_EQ(MustLoad(*third).apps.size(), 2u);
}

// Two RMs (processes) on one store: the second fails while the first lives, and succeeds once
// the first has died without closing anything.
TEST_F(SqliteStoreTest, StoreHeldByAnotherProcessIsInUseUntilItDies) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
    if (!store.ok()) ::_exit(1);
    if (::write(ready[1], "x", 1) != 1) ::_exit(2);
    for (;;) ::pause();  // Hold the store until killed.
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "child failed to open the store";
  ::close(ready[0]);

  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("is in use by another process"));

  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  store = OpenSqliteStore(path_);
  EXPECT_TRUE(store.ok()) << store.status();
}

// The crash-consistency promise: once PutApplication (etc.) returned OK, a SIGKILL of the RM
// right after it loses nothing.
TEST_F(SqliteStoreTest, RecordsWrittenBeforeSigkillAreFoundAfterReopen) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(ready[0]);
    absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
    if (!store.ok()) ::_exit(1);
    StateStore& s = **store;
    if (!s.BumpEpoch().ok()) ::_exit(2);
    if (!s.PutMasterKey(FullMasterKey("container", 4)).ok()) ::_exit(3);
    if (!s.PutApplicationAndAttempt(FullApplication("app_1"), FullAttempt("app_1", 1)).ok()) {
      ::_exit(4);
    }
    if (!s.PutApplication(FullApplication("app_2")).ok()) ::_exit(5);
    if (::write(ready[1], "x", 1) != 1) ::_exit(6);  // Right after PutApplication returned.
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "child failed to write to the store";
  ::close(ready[0]);
  ASSERT_EQ(::kill(child, SIGKILL), 0);
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
  // The child never closed, so its commits are still in the write-ahead log: reopening has to
  // recover them from there.
  EXPECT_GT(std::filesystem::file_size(path_ + "-wal"), 0u);

  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  RmState state = MustLoad(*store);
  EXPECT_EQ(state.epoch, 1);
  EXPECT_THAT(state.apps, ElementsAre(FullApplication("app_1"), FullApplication("app_2")));
  EXPECT_THAT(state.attempts, ElementsAre(FullAttempt("app_1", 1)));
  EXPECT_THAT(state.keys, ElementsAre(FullMasterKey("container", 4)));
}

TEST_F(SqliteStoreTest, FileThatIsNotADatabaseFailsClearlyAndIsLeftAlone) {
  std::string junk = "this is a YAML file, not a database\n";
  for (int i = 0; i < 200; ++i) junk += static_cast<char>(i * 37);
  {
    std::ofstream out(path_, std::ios::binary);
    out << junk;
  }
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(store.status().message(), "state store '" + path_ + "': file is not a database");
  EXPECT_EQ(ReadFile(path_), junk);
  // The failed open released the lock.
  EXPECT_THAT(OpenSqliteStore(path_).status().message(), HasSubstr("file is not a database"));
}

TEST_F(SqliteStoreTest, DatabaseOfAnotherProgramIsRejected) {
  RawExec(path_, "CREATE TABLE users (name TEXT); CREATE TABLE orders (id INTEGER);");
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              HasSubstr("'" + path_ +
                        "': file is not a Weft state store (it has tables orders, "
                        "users but no schema_version)"));
}

TEST_F(SqliteStoreTest, NewerOrUnknownSchemaVersionIsRejected) {
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  }
  RawExec(path_, "UPDATE schema_version SET version = 3");
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(),
              HasSubstr("schema version 3 is newer than this binary supports (2)"));

  RawExec(path_, "UPDATE schema_version SET version = 0");
  store = OpenSqliteStore(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("unknown schema version 0"));

  RawExec(path_, "UPDATE schema_version SET version = 1; INSERT INTO schema_version VALUES (1)");
  store = OpenSqliteStore(path_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(store.status().message(), HasSubstr("schema_version holds 2 rows"));

  RawExec(path_, "DELETE FROM schema_version WHERE rowid > 1");
  store = OpenSqliteStore(path_);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_THAT(MustLoad(**store).apps, ElementsAre(FullApplication("app_1")));
}

// A store written before node admin records (schema version 1) is migrated when it opens: its
// records stay, and it takes node admin records afterwards.
TEST_F(SqliteStoreTest, AVersionOneStoreIsMigratedToVersionTwo) {
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  }
  RawExec(path_, "DROP TABLE node_admin; UPDATE schema_version SET version = 1");
  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(MustLoad(*store).apps, ElementsAre(FullApplication("app_1")));
  const NodeAdminRecord node{"host-a", true, {{"gpu", "a100"}}};
  ASSERT_TRUE(store->UpdateNodeAdmin({node}, {}).ok());
  EXPECT_THAT(MustLoad(*store).node_admin, ElementsAre(node));
  store.reset();
  store = MustOpen();  // and it stays version 2
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(MustLoad(*store).node_admin, ElementsAre(node));
}

// A failure of the second statement inside SQL (here a trigger that aborts every insert into
// attempts) rolls the first one back, and the store stays usable.
TEST_F(SqliteStoreTest, FailureInsideSqlRollsBackTheWholeTransaction) {
  ApplicationRecord stored = FullApplication("app_1");
  stored.state = "ACCEPTED";
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(stored).ok());
  }
  RawExec(path_,
          "CREATE TRIGGER fail_attempts BEFORE INSERT ON attempts "
          "BEGIN SELECT RAISE(ABORT, 'injected attempt failure'); END");

  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  const RmState before = MustLoad(*store);

  ApplicationRecord update = stored;
  update.state = "RUNNING";
  absl::Status s = store->PutApplicationAndAttempt(update, FullAttempt("app_1", 1));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("injected attempt failure"));
  EXPECT_THAT(s.message(), HasSubstr("state store '" + path_ + "'"));
  EXPECT_EQ(MustLoad(*store), before);

  s = store->PutApplicationAndAttempt(FullApplication("app_2"), FullAttempt("app_2", 1));
  EXPECT_THAT(s.message(), HasSubstr("injected attempt failure"));
  EXPECT_EQ(MustLoad(*store), before);

  // No transaction was left open: later calls work and are durable.
  ASSERT_TRUE(store->PutApplication(FullApplication("app_3")).ok());
  ASSERT_TRUE(store->Close().ok());
  store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_THAT(MustLoad(*store).apps, ElementsAre(stored, FullApplication("app_3")));
}

TEST_F(SqliteStoreTest, CorruptRowsAreReportedAsDataLoss) {
  {
    std::unique_ptr<StateStore> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  }
  RawExec(path_, "UPDATE applications SET state = 'BOGUS'");
  std::unique_ptr<StateStore> store = MustOpen();
  ASSERT_NE(store, nullptr);
  absl::Status s = store->Load().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("state 'BOGUS'"));
  ASSERT_TRUE(store->Close().ok());

  RawExec(path_, "UPDATE applications SET state = 'NEW', priority = 'high'");
  store = MustOpen();
  ASSERT_NE(store, nullptr);
  s = store->Load().status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(s.message(), HasSubstr("applications.priority is not an INTEGER"));
  // Load is read-only: the store is still usable.
  EXPECT_TRUE(store->PutApplication(FullApplication("app_1")).ok());
  EXPECT_THAT(MustLoad(*store).apps, ElementsAre(FullApplication("app_1")));
}

TEST_F(SqliteStoreTest, EmptyPathIsInvalid) {
  EXPECT_EQ(OpenSqliteStore("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, DirectoryAsPathFailsWithThePath) {
  const std::string path = dir_.path() + "/a_directory";
  ASSERT_TRUE(std::filesystem::create_directory(path));
  absl::StatusOr<std::unique_ptr<StateStore>> store = OpenSqliteStore(path);
  ASSERT_FALSE(store.ok());
  EXPECT_THAT(store.status().message(), HasSubstr("state store '" + path + "'"));
}

}  // namespace
}  // namespace weft::store
