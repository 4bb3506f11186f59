// Copyright Weft authors.
#include "common/files.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/files_test_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  std::vector<std::string> Names() const {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
  }
  static mode_t ModeOf(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
  }

  std::string dir_;
};

TEST_F(FilesTest, ReadFileReadsEveryByte) {
  std::string data(200000, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 7);
  std::ofstream(Path("f"), std::ios::binary) << data;
  absl::StatusOr<std::string> read = ReadFile(Path("f"));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, data);
  std::ofstream(Path("empty"));
  EXPECT_EQ(ReadFile(Path("empty")).value_or("x"), "");
}

TEST_F(FilesTest, ReadFileErrorsNameThePath) {
  absl::Status missing = ReadFile(Path("missing")).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), Path("missing") + ": cannot open: No such file or directory");
  absl::Status dir = ReadFile(dir_).status();
  EXPECT_EQ(dir.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(dir.message(), dir_ + ": cannot open: Is a directory");
}

TEST_F(FilesTest, WriteFileAtomicallyReplacesWithTheModeAndLeavesNoTemporaryFile) {
  const mode_t old_umask = ::umask(077);
  ASSERT_TRUE(WriteFileAtomically(Path("f"), "first", 0644).ok());
  ::umask(old_umask);
  EXPECT_EQ(ReadFile(Path("f")).value_or(""), "first");
  EXPECT_EQ(ModeOf(Path("f")), 0644u);  // not narrowed by the umask
  ASSERT_TRUE(WriteFileAtomically(Path("f"), "second", 0600).ok());
  EXPECT_EQ(ReadFile(Path("f")).value_or(""), "second");
  EXPECT_EQ(ModeOf(Path("f")), 0600u);
  ASSERT_TRUE(WriteFileAtomically(Path("empty"), "", 0600).ok());
  EXPECT_EQ(ReadFile(Path("empty")).value_or("x"), "");
  EXPECT_THAT(Names(), ElementsAre("empty", "f"));
}

TEST_F(FilesTest, WriteFileAtomicallyFailsCleanlyWithoutTheDirectory) {
  absl::Status s = WriteFileAtomically(Path("no/such/dir/f"), "x", 0600);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(s.message()), HasSubstr(Path("no/such/dir/f")));
  EXPECT_TRUE(Names().empty());
}

TEST_F(FilesTest, WriteFileAtomicallyDoesNotWriteThroughADirectoryInTheWay) {
  std::filesystem::create_directory(Path("d"));
  absl::Status s = WriteFileAtomically(Path("d"), "x", 0600);
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(Names(), ElementsAre("d"));  // the temporary file is gone
}

TEST_F(FilesTest, CreateParentDirectoriesMakesPrivateDirectories) {
  ASSERT_TRUE(CreateParentDirectories(Path("a/b/store.db")).ok());
  EXPECT_TRUE(std::filesystem::is_directory(Path("a/b")));
  EXPECT_EQ(ModeOf(Path("a")) & 077, 0u);
  EXPECT_EQ(ModeOf(Path("a/b")) & 077, 0u);
  EXPECT_FALSE(std::filesystem::exists(Path("a/b/store.db")));
  EXPECT_TRUE(CreateParentDirectories(Path("a/b/store.db")).ok());  // already there
  EXPECT_TRUE(SyncDirectory(dir_).ok());
  EXPECT_EQ(SyncDirectory(Path("missing")).code(), absl::StatusCode::kNotFound);
}

TEST(PollUntilTest, ReturnsOnceTheConditionHoldsOrAtTheDeadline) {
  int calls = 0;
  EXPECT_TRUE(PollUntil([&] { return ++calls == 3; }, absl::Seconds(10)));
  EXPECT_EQ(calls, 3);
  const absl::Time start = absl::Now();
  EXPECT_FALSE(PollUntil([] { return false; }, absl::Milliseconds(30)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(30));
}

}  // namespace
}  // namespace weft
