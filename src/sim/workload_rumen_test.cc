// Copyright Weft authors. Tests of LoadRumen.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/resource_types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/workload.h"
#include "sim/workload_common.h"
#include "sim/workload_test_util.h"

namespace weft::sim {
namespace {

using testing::SourceDir;

using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::Ge;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

std::string Trace() { return SourceDir() + "/data/traces/sls_2jobs2min-rumen-jh.json"; }
std::string Fixture() { return SourceDir() + "/src/sim/testdata/rumen_small.json"; }
std::string WriteTemp(const std::string& name, const std::string& content) {
  return testing::WriteTemp("rumen", name, content);
}

using testing::kLenient;
using testing::kStrict;

TEST(LoadRumenTest, RealTraceHasTwoJobsOf96Maps) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadRumen(Trace(), DefaultTaskResources(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->skipped_records, 0);
  EXPECT_THAT(w->warnings, IsEmpty());

  const Job& first = w->jobs[0];
  EXPECT_EQ(first.id, "job_1369942127770_1205");
  EXPECT_EQ(first.user, "jenkins");
  EXPECT_EQ(first.queue, "sls_queue_1");
  EXPECT_EQ(first.priority, 3);  // NORMAL
  EXPECT_EQ(first.submit_ms, 0);
  EXPECT_THAT(first.source, EndsWith("rumen-jh.json:1"));
  EXPECT_EQ(w->jobs[1].id, "job_1369942127770_1206");
  EXPECT_EQ(w->jobs[1].submit_ms, 1371222159703 - 1371222054499);
  EXPECT_THAT(w->jobs[1].source, EndsWith(":5111"));

  for (const Job& job : w->jobs) {
    ASSERT_EQ(job.groups.size(), 1u) << job.id;  // TeraGen: no reduces
    const TaskGroup& map = job.groups[0];
    EXPECT_EQ(map.name, "map");
    EXPECT_EQ(map.count, 96);
    EXPECT_EQ(map.priority, 20);
    EXPECT_EQ(map.resource, Resource::Of(256, 1));  // jobMapMB 200, rounded up to 128 MiB
    EXPECT_THAT(map.task_durations_ms, SizeIs(96));
    EXPECT_THAT(map.task_durations_ms, Each(Ge(11000)));
    EXPECT_THAT(map.task_hosts, SizeIs(96));
    EXPECT_THAT(map.task_hosts, Each(EndsWith(".smile.com")));
  }
  const TaskGroup& m1 = first.groups[0];
  EXPECT_EQ(m1.task_durations_ms[0], 1371222078206 - 1371222061163);
  EXPECT_EQ(m1.task_hosts[0], "a2118.smile.com");
  EXPECT_EQ(m1.duration_ms, (2024885 + 95) / 96);  // the mean, rounded up
  EXPECT_EQ(w->jobs[1].groups[0].task_durations_ms[0], 22163);
}

TEST(LoadRumenTest, LastSuccessfulAttemptAndRelativeTimes) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadRumen(Fixture(), DefaultTaskResources(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->skipped_records, 0);
  EXPECT_THAT(w->warnings,
              ElementsAre(HasSubstr(": 1 task(s) without a SUCCESS attempt were left out")));

  // job_B was submitted first: it is the time origin.
  const Job& b = w->jobs[0];
  EXPECT_EQ(b.id, "job_B");
  EXPECT_EQ(b.submit_ms, 0);
  EXPECT_EQ(b.user, "default");
  EXPECT_EQ(b.queue, "default");
  EXPECT_EQ(b.priority, 0);
  ASSERT_EQ(b.groups.size(), 1u);
  EXPECT_THAT(b.groups[0].task_durations_ms, ElementsAre(1000));
  EXPECT_THAT(b.groups[0].task_hosts, IsEmpty());

  const Job& a = w->jobs[1];
  EXPECT_EQ(a.id, "job_A");
  EXPECT_EQ(a.submit_ms, 1000);
  EXPECT_EQ(a.user, "bob");
  EXPECT_EQ(a.queue, "q1");
  EXPECT_EQ(a.priority, 4);  // HIGH
  ASSERT_EQ(a.groups.size(), 2u);
  const TaskGroup& map = a.groups[0];
  EXPECT_EQ(map.count, 2);  // the KILLED-only task is left out
  EXPECT_THAT(map.task_durations_ms, ElementsAre(500, 1));
  EXPECT_THAT(map.task_hosts, ElementsAre("h1", "h2"));
  EXPECT_EQ(map.resource, Resource::Of(1536, 1));  // jobMapMB 1500
  const TaskGroup& reduce = a.groups[1];
  EXPECT_EQ(reduce.name, "reduce");
  EXPECT_EQ(reduce.priority, 10);
  EXPECT_THAT(reduce.task_durations_ms, ElementsAre(2000));
  EXPECT_THAT(reduce.task_hosts, ElementsAre("h3"));
  EXPECT_THAT(reduce.depends_on, ElementsAre(0));
  EXPECT_EQ(reduce.resource, Resource::Of(1024, 1));  // jobReduceMB -1: the default
}

constexpr char kMalformed[] =
    R"({"jobID": "j1", "submitTime": 100, "mapTasks": [
  {"attempts": [
    {"result": "SUCCESS", "startTime": 50, "finishTime": 40}
  ]}
]}
{"jobID": "j2", "submitTime": 100, "priority": "SUPER", "mapTasks": [{"attempts": [{"result": "SUCCESS", "startTime": 1, "finishTime": 2}]}]}
{"jobID": "j3", "submitTime": 100, "mapTasks": [{"attempts": [{"result": "FAILED", "startTime": 1, "finishTime": 2}]}]}
{"jobID": "j4", "submitTime": 100, "jobMapMB": 5000000, "mapTasks": [{"attempts": [{"result": "SUCCESS", "startTime": 1, "finishTime": 2}]}]}
{"jobID": "j5", "submitTime": 200, "mapTasks": [{"attempts": [{"result": "SUCCESS", "startTime": 1, "finishTime": 2}]}]}
{"jobID": "j6", "submitTime": 300}
{"submitTime": 300, "mapTasks": []}
{"jobID": "j7", "submitTime": 400, "priority": "2", "mapTasks": [{"attempts": [{"result": "SUCCESS", "startTime": 1, "finishTime": 2}]}]}
)";

TEST(LoadRumenTest, MalformedJobsNameFileAndLine) {
  std::string path = WriteTemp("malformed.json", kMalformed);
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadRumen(path, DefaultTaskResources(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "j5");
  EXPECT_EQ(w->jobs[0].submit_ms, 0);  // relative to the earliest loaded job
  EXPECT_EQ(w->jobs[1].id, "j7");
  EXPECT_EQ(w->jobs[1].submit_ms, 200);
  EXPECT_EQ(w->jobs[1].priority, 2);
  EXPECT_EQ(w->skipped_records, 6);
  EXPECT_THAT(
      w->warnings,
      ElementsAre(path + ":3: mapTasks[0]: SUCCESS attempt: finishTime 40 is before startTime 50; "
                         "skipped",
                  HasSubstr(":6: priority: \"SUPER\" is neither a JobPriority name"),
                  path + ":7: none of the job's 1 tasks has a SUCCESS attempt; skipped",
                  path + ":8: jobMapMB: resource rejected: memory-mb=5000000 is above the maximum "
                         "allocation 1048576; skipped",
                  path + ":10: the job lists no mapTasks or reduceTasks; skipped",
                  path + ":11: missing jobID; skipped"));

  absl::StatusOr<Workload> strict = LoadRumen(path, DefaultTaskResources(), registry, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().message(),
            path + ":3: mapTasks[0]: SUCCESS attempt: finishTime 40 is before startTime 50");
}

TEST(LoadRumenTest, MaxJobsAndSmallerRegistryMaximum) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w =
      LoadRumen(Trace(), DefaultTaskResources(), registry, LoadOptions{.max_jobs = 1});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].groups[0].count, 96);

  // A cluster whose containers may not exceed 128 MiB rejects both jobs (jobMapMB 200).
  ASSERT_TRUE(registry.SetLimits("memory-mb", 128, 128, 128).ok());
  DefaultTaskResources small{Resource::Of(128, 1), Resource::Of(128, 1)};
  w = LoadRumen(Trace(), small, registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->jobs, IsEmpty());
  EXPECT_EQ(w->skipped_records, 2);
  EXPECT_THAT(w->warnings, Each(HasSubstr("jobMapMB: resource rejected: memory-mb=200 is above "
                                          "the maximum allocation 128; skipped")));
  // The defaults themselves are checked before reading.
  EXPECT_THAT(LoadRumen(Trace(), DefaultTaskResources(), registry, kLenient).status().message(),
              HasSubstr("DefaultTaskResources.map: memory-mb=1024 is above"));
}

}  // namespace
}  // namespace weft::sim
