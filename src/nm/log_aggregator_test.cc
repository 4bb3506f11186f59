// Copyright Weft authors. Log aggregation on a real filesystem in a temporary directory.
#include "nm/log_aggregator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace weft::nm {
namespace {
namespace fs = std::filesystem;

constexpr char kAggregatedApp[] = "application_1700000000000_0001";
constexpr char kC1[] = "container_e1_1700000000000_0001_01_000001";
constexpr char kC2[] = "container_e1_1700000000000_0001_01_000002";
constexpr char kOther[] = "container_e1_1700000000000_0002_01_000001";  // another app's
constexpr char kNode[] = "127.0.0.1:45454";

std::string Read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t ModeOf(const fs::path& p) {
  struct stat st;
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

class LogAggregatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / ("log_aggregator_test_" + std::to_string(::getpid()));
    fs::remove_all(base_);
    work_ = base_ / "nm";
    agg_ = base_ / "aggregated";
    for (const char* c : {kC1, kC2, kOther}) {
      fs::create_directories(work_ / "logs" / c);
      std::ofstream(work_ / "logs" / c / "stdout") << "out of " << c << "\n";
      std::ofstream(work_ / "logs" / c / "stderr") << "err of " << c << "\n";
    }
  }
  void TearDown() override { fs::remove_all(base_); }

  fs::path NodeDir() const { return agg_ / "alice" / "logs" / kAggregatedApp / kNode; }

  fs::path base_, work_, agg_;
};

TEST_F(LogAggregatorTest, CopiesEachContainerOfTheAppIntoYarnsLayout) {
  LogAggregator agg(work_.string(), agg_.string(), kNode);
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"alice", "bob ops"}).ok());
  ASSERT_TRUE(agg.AggregateApp(kAggregatedApp).ok());
  EXPECT_EQ(Read(NodeDir() / kC1 / "stdout"), std::string("out of ") + kC1 + "\n");
  EXPECT_EQ(Read(NodeDir() / kC2 / "stderr"), std::string("err of ") + kC2 + "\n");
  // Only this app's containers, no temporaries, no pending marker.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(NodeDir())) {
    ++entries;
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
  EXPECT_EQ(entries, 2);
  EXPECT_FALSE(fs::exists(agg_ / "alice" / "logs" / "application_1700000000000_0002"));
  EXPECT_FALSE(fs::exists(work_ / "log-meta" / (std::string(kAggregatedApp) + ".aggregating")));
}

TEST_F(LogAggregatorTest, ReadableByOwnerAndGroupOnly) {
  LogAggregator agg(work_.string(), agg_.string(), kNode);
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"alice", ""}).ok());
  ASSERT_TRUE(agg.AggregateApp(kAggregatedApp).ok());
  for (const fs::path& d : {agg_ / "alice", agg_ / "alice" / "logs",
                            agg_ / "alice" / "logs" / kAggregatedApp, NodeDir(), NodeDir() / kC1})
    EXPECT_EQ(ModeOf(d), 0750u) << d;
  EXPECT_EQ(ModeOf(NodeDir() / kC1 / "stdout"), 0640u);
  // The owner record in the work root is the NM's alone.
  EXPECT_EQ(ModeOf(work_ / "log-meta" / kAggregatedApp), 0600u);
}

TEST_F(LogAggregatorTest, RecordsTheFirstOwnerAndReadsItBack) {
  LogAggregator agg(work_.string(), "", kNode);
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"alice", "bob ops"}).ok());
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"mallory", "*"}).ok());  // later tokens change nothing
  absl::StatusOr<AppLogOwner> owner = LogAggregator::ReadAppOwner(work_.string(), kAggregatedApp);
  ASSERT_TRUE(owner.ok()) << owner.status();
  EXPECT_EQ(owner->user, "alice");
  EXPECT_EQ(owner->view_acl, "bob ops");
  EXPECT_TRUE(
      absl::IsNotFound(LogAggregator::ReadAppOwner(work_.string(), "application_1_0009").status()));
  EXPECT_FALSE(LogAggregator::ReadAppOwner(work_.string(), "../../etc/passwd").ok());
  EXPECT_FALSE(agg.RecordApp("../x", {"alice", ""}).ok());
  EXPECT_FALSE(agg.RecordApp(kAggregatedApp + std::string("0"), {"../root", ""}).ok());
  // Disabled: aggregating does nothing.
  EXPECT_TRUE(agg.AggregateApp(kAggregatedApp).ok());
  EXPECT_FALSE(fs::exists(agg_));
  agg.ForgetApp(kAggregatedApp);
  EXPECT_FALSE(LogAggregator::ReadAppOwner(work_.string(), kAggregatedApp).ok());
}

TEST_F(LogAggregatorTest, ReRunIsIdempotentAndReplacesACrashedRunsTemporary) {
  LogAggregator agg(work_.string(), agg_.string(), kNode);
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"alice", ""}).ok());
  // A crashed run: C1 finished, C2 half-copied into its temporary, the marker still there.
  fs::create_directories(NodeDir() / kC1);
  std::ofstream(NodeDir() / kC1 / "stdout") << "already aggregated\n";
  fs::create_directories(NodeDir() / (std::string(".tmp-") + kC2));
  std::ofstream(NodeDir() / (std::string(".tmp-") + kC2) / "stdout") << "half";
  fs::create_directories(work_ / "log-meta");
  std::ofstream(work_ / "log-meta" / (std::string(kAggregatedApp) + ".aggregating"))
      << kAggregatedApp << "\n";

  // A new NM on the work root finishes it.
  LogAggregator restarted(work_.string(), agg_.string(), kNode);
  ASSERT_TRUE(restarted.ResumePending().ok());
  EXPECT_EQ(Read(NodeDir() / kC1 / "stdout"), "already aggregated\n");  // not redone
  EXPECT_EQ(Read(NodeDir() / kC2 / "stdout"), std::string("out of ") + kC2 + "\n");
  EXPECT_FALSE(fs::exists(NodeDir() / (std::string(".tmp-") + kC2)));
  EXPECT_FALSE(fs::exists(work_ / "log-meta" / (std::string(kAggregatedApp) + ".aggregating")));

  // And again: nothing changes.
  ASSERT_TRUE(restarted.AggregateApp(kAggregatedApp).ok());
  EXPECT_EQ(Read(NodeDir() / kC2 / "stdout"), std::string("out of ") + kC2 + "\n");
  ASSERT_TRUE(restarted.ResumePending().ok());  // nothing pending
}

TEST_F(LogAggregatorTest, AFailureKeepsTheAggregationPending) {
  LogAggregator agg(work_.string(), agg_.string(), kNode);
  ASSERT_TRUE(agg.RecordApp(kAggregatedApp, {"alice", ""}).ok());
  // The app's directory is taken by a file: nothing can be written.
  fs::create_directories(agg_ / "alice" / "logs");
  std::ofstream(agg_ / "alice" / "logs" / kAggregatedApp) << "in the way";
  EXPECT_FALSE(agg.AggregateApp(kAggregatedApp).ok());
  EXPECT_TRUE(fs::exists(work_ / "log-meta" / (std::string(kAggregatedApp) + ".aggregating")));
  fs::remove(agg_ / "alice" / "logs" / kAggregatedApp);
  ASSERT_TRUE(agg.ResumePending().ok());
  EXPECT_TRUE(fs::exists(NodeDir() / kC1 / "stdout"));
}

TEST_F(LogAggregatorTest, AContainerIsRunningUntilItsMonitorWritesItsExit) {
  const fs::path state = work_ / "nm-state" / kC1;
  EXPECT_FALSE(LogAggregator::ContainerRunning(work_.string(), kC1));
  fs::create_directories(state);
  EXPECT_TRUE(LogAggregator::ContainerRunning(work_.string(), kC1));
  std::ofstream(state / "exit_code") << "exit 0\n";
  EXPECT_FALSE(LogAggregator::ContainerRunning(work_.string(), kC1));
  EXPECT_FALSE(LogAggregator::ContainerRunning(work_.string(), "../nm-state"));
}

}  // namespace
}  // namespace weft::nm
