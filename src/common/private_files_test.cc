#include "common/private_files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class PrivateFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/private_files_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static mode_t ModeOf(const std::string& path) {
    struct stat st;
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  static void Write(const std::string& path, const std::string& text, mode_t mode) {
    std::ofstream(path) << text;
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }

  std::string dir_;
};

TEST_F(PrivateFilesTest, CreatesMissingDirectoriesPrivate) {
  const std::string state = dir_ + "/a/b/state";
  ASSERT_TRUE(EnsurePrivateDirectory(state, "state directory").ok());
  EXPECT_EQ(ModeOf(state), 0700u);
  EXPECT_EQ(ModeOf(dir_ + "/a"), 0700u);
  const mode_t before = ::umask(077);
  ASSERT_TRUE(EnsurePrivateDirectory(dir_ + "/data", "--data-dir", 0711).ok());
  ::umask(before);
  EXPECT_EQ(ModeOf(dir_ + "/data"), 0711u);  // whatever the umask
  EXPECT_FALSE(EnsurePrivateDirectory(dir_ + "/open", "x", 0755).ok());
}

TEST_F(PrivateFilesTest, RefusesADirectoryOthersCanReadNamingItAndLeavesItAlone) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  absl::Status s = EnsurePrivateDirectory(dir_, "state directory");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr(dir_));
  EXPECT_THAT(s.message(), HasSubstr("0755"));
  EXPECT_THAT(s.message(), HasSubstr("chmod 0700"));
  EXPECT_EQ(ModeOf(dir_), 0755u);             // state unchanged
  ASSERT_EQ(::chmod(dir_.c_str(), 0730), 0);  // group may write: refused too
  EXPECT_FALSE(EnsurePrivateDirectory(dir_, "state directory").ok());
  ASSERT_EQ(::chmod(dir_.c_str(), 0711), 0);  // others may only traverse: allowed
  EXPECT_TRUE(EnsurePrivateDirectory(dir_, "state directory").ok());
}

TEST_F(PrivateFilesTest, RefusesAFileWhereTheDirectoryShouldBe) {
  Write(dir_ + "/f", "x", 0600);
  absl::Status s = EnsurePrivateDirectory(dir_ + "/f", "state directory");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("not a directory"));
}

TEST_F(PrivateFilesTest, NewFilesAre0600AndOldOpenOnesAreNarrowed) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  const std::string db = dir_ + "/rm-state.db";
  ASSERT_TRUE(EnsurePrivateSqliteFile(db, "state store").ok());
  EXPECT_EQ(ModeOf(db), 0600u);
  EXPECT_EQ(std::filesystem::file_size(db), 0u);
  Write(db, "kept", 0644);
  Write(db + "-wal", "wal", 0644);
  ASSERT_TRUE(EnsurePrivateSqliteFile(db, "state store").ok());
  EXPECT_EQ(ModeOf(db), 0600u);
  EXPECT_EQ(ModeOf(db + "-wal"), 0600u);
  std::ifstream in(db);
  std::string text;
  in >> text;
  EXPECT_EQ(text, "kept");  // contents untouched
}

TEST_F(PrivateFilesTest, AFileInAnOpenDirectoryIsRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  absl::Status s = EnsurePrivateFile(dir_ + "/federation.db", "federation store");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("federation store directory '" + dir_ + "'"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/federation.db"));  // nothing created
}

TEST_F(PrivateFilesTest, SymbolicLinksAreNotFollowed) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  Write(dir_ + "/target", "x", 0644);
  ASSERT_EQ(::symlink((dir_ + "/target").c_str(), (dir_ + "/link").c_str()), 0);
  absl::Status s = EnsurePrivateFile(dir_ + "/link", "state store");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(s.message(), HasSubstr("symbolic link"));
  EXPECT_EQ(ModeOf(dir_ + "/target"), 0644u);
}

TEST_F(PrivateFilesTest, SecretFilesMustBePrivateAndTheSecretIsNeverInAnError) {
  const std::string path = dir_ + "/zk-auth";
  Write(path, "weft:s3cret-password\n", 0644);
  absl::StatusOr<std::string> open = ReadPrivateSecretFile(path, "ZooKeeper auth file");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(open.status().message(), HasSubstr("chmod 0600 '" + path + "'"));
  EXPECT_THAT(open.status().message(), Not(HasSubstr("s3cret")));
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  absl::StatusOr<std::string> secret = ReadPrivateSecretFile(path, "ZooKeeper auth file");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(*secret, "weft:s3cret-password");
  Write(path, "\n", 0600);
  EXPECT_FALSE(ReadPrivateSecretFile(path, "ZooKeeper auth file").ok());
  EXPECT_EQ(ReadPrivateSecretFile(dir_ + "/missing", "x").status().code(),
            absl::StatusCode::kNotFound);
}

TEST_F(PrivateFilesTest, DaemonUmaskIsPrivate) {
  const mode_t before = SetDaemonUmask();
  const std::string path = dir_ + "/made-under-umask";
  std::ofstream(path) << "x";
  EXPECT_EQ(ModeOf(path), 0600u);
  ::umask(before);
}

}  // namespace
}  // namespace weft
