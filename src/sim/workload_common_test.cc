// Copyright Weft authors. Tests of the loaders' shared helpers.
#include "sim/workload_common.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/workload.h"

namespace weft::sim::internal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The loader tests write their inputs to TempDir() as weft_<suite>_<pid>_<name>; this removes
// them once all tests have run.
class RemoveTempFiles : public ::testing::Environment {
 public:
  void TearDown() override {
    std::string marker = absl::StrCat("_", getpid(), "_");
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(::testing::TempDir(), ec)) {
      std::string name = entry.path().filename().string();
      if (name.rfind("weft_", 0) == 0 && name.find(marker) != std::string::npos)
        std::filesystem::remove(entry.path(), ec);
    }
  }
};
[[maybe_unused]] ::testing::Environment* const kRemoveTempFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveTempFiles);

Job OneJob(const std::string& id, int64_t submit_ms) {
  Job job;
  job.id = id;
  job.submit_ms = submit_ms;
  TaskGroup g;
  g.name = "g";
  g.count = 2;
  g.duration_ms = 5;
  g.resource = Resource::Of(1024, 1);
  job.groups.push_back(g);
  return job;
}

TEST(WorkloadCommonTest, ParseNumbers) {
  int64_t i = 0;
  EXPECT_TRUE(ParseInt64("-42", &i));
  EXPECT_EQ(i, -42);
  EXPECT_FALSE(ParseInt64("", &i));
  EXPECT_FALSE(ParseInt64("+1", &i));
  EXPECT_FALSE(ParseInt64(" 1", &i));
  EXPECT_FALSE(ParseInt64("1.0", &i));
  EXPECT_FALSE(ParseInt64("9223372036854775808", &i));
  double d = 0;
  EXPECT_TRUE(ParseDouble("0.007956928", &d));
  EXPECT_DOUBLE_EQ(d, 0.007956928);
  EXPECT_TRUE(ParseDouble("1e3", &d));
  EXPECT_FALSE(ParseDouble("nan", &d));
  EXPECT_FALSE(ParseDouble("inf", &d));
  EXPECT_FALSE(ParseDouble("1e999", &d));
  EXPECT_FALSE(ParseDouble("1x", &d));
}

TEST(WorkloadCommonTest, HostOfPath) {
  EXPECT_EQ(HostOfPath("/default-rack/node1"), "node1");
  EXPECT_EQ(HostOfPath("/default-rack/a2118.smile.com"), "a2118.smile.com");
  EXPECT_EQ(HostOfPath("node1"), "node1");
  EXPECT_EQ(HostOfPath(""), "");
  EXPECT_EQ(HostOfPath("/rack/"), "");
}

TEST(WorkloadCommonTest, BuilderLenientStrictAndSort) {
  WorkloadBuilder lenient("f.txt", LoadOptions{});
  EXPECT_TRUE(lenient.AddJob(OneJob("b", 20), 1).ok());
  EXPECT_TRUE(lenient.Malformed(2, "bad number").ok());
  EXPECT_TRUE(lenient.AddJob(OneJob("a", 10), 3).ok());
  EXPECT_TRUE(lenient.AddJob(OneJob("c", 10), 4).ok());
  EXPECT_TRUE(lenient.AddJob(OneJob("a", 30), 5).ok());  // duplicate: skipped
  Workload w = lenient.Finish();
  ASSERT_EQ(w.jobs.size(), 3u);
  EXPECT_EQ(w.jobs[0].id, "a");  // 10 ms, first in the file
  EXPECT_EQ(w.jobs[1].id, "c");  // 10 ms
  EXPECT_EQ(w.jobs[2].id, "b");
  EXPECT_EQ(w.jobs[0].source, "f.txt:3");
  EXPECT_EQ(w.skipped_records, 2);
  EXPECT_THAT(w.warnings, ElementsAre("f.txt:2: bad number; skipped",
                                      "f.txt:5: duplicate job id 'a' (first at line 3); skipped"));

  WorkloadBuilder strict("f.txt", LoadOptions{.strict = true, .max_jobs = 1});
  absl::Status s = strict.Malformed(7, "bad number");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "f.txt:7: bad number");
  EXPECT_FALSE(strict.Full());
  EXPECT_TRUE(strict.AddJob(OneJob("a", 0), 1).ok());
  EXPECT_TRUE(strict.Full());
}

TEST(WorkloadCommonTest, CheckWorkloadFindsBrokenPromises) {
  Workload w;
  w.jobs = {OneJob("a", 0), OneJob("b", 5)};
  EXPECT_TRUE(CheckWorkload(w).ok());

  Workload bad = w;
  bad.jobs[1].submit_ms = -1;
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("negative submit_ms"));
  bad = w;
  std::swap(bad.jobs[0], bad.jobs[1]);
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("not sorted"));
  bad = w;
  bad.jobs[1].id = "a";
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("duplicate id"));
  bad = w;
  bad.jobs[0].groups[0].count = 0;
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("count 0 < 1"));
  bad = w;
  bad.jobs[0].groups[0].task_durations_ms = {1};
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("task_durations_ms size != count"));
  bad = w;
  bad.jobs[0].groups[0].task_hosts = {"h"};
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("task_hosts size != count"));
  bad = w;
  bad.jobs[0].groups[0].depends_on = {0};
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("depends on group 0"));
  bad = w;
  bad.jobs[0].groups.clear();
  EXPECT_THAT(CheckWorkload(bad).message(), HasSubstr("no task groups"));
}

TEST(WorkloadCommonTest, ReadingADirectoryIsAFileError) {
  const char* dir = std::getenv("WEFT_SOURCE_DIR");
  std::string path = std::string(dir != nullptr && *dir ? dir : WEFT_TEST_SOURCE_DIR) + "/src";
  absl::StatusOr<std::string> data = ReadFileToString(path);
  ASSERT_FALSE(data.ok());
  EXPECT_EQ(data.status().message(), path + ": cannot open: Is a directory");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(path, DefaultTaskResources(), registry, LoadOptions{});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), path + ": cannot open: Is a directory");
}

}  // namespace
}  // namespace weft::sim::internal
