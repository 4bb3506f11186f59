// Copyright Weft authors. Tests of LoadAlibaba2017.
#include <unistd.h>

#include <chrono>
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

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;

std::string Trace() { return SourceDir() + "/data/traces/alibaba2017_batch_task.csv"; }
std::string Fixture() { return SourceDir() + "/src/sim/testdata/alibaba_small.csv"; }
std::string WriteTemp(const std::string& name, const std::string& content) {
  return testing::WriteTemp("alibaba", name, content);
}

using testing::kLenient;
using testing::kStrict;

TEST(LoadAlibabaTest, RealTrace) {
  ResourceTypeRegistry registry;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Workload> w = LoadAlibaba2017(Trace(), AlibabaModel(), registry, kLenient);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(w.ok()) << w.status();
  std::cout << "80,553 rows loaded in " << seconds << " s\n";
  // Generous enough for sanitizer and debug builds; a release build takes ~0.05 s.
  EXPECT_LT(seconds, 5.0);
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);

  EXPECT_EQ(w->jobs.size(), 11644u);
  EXPECT_EQ(w->skipped_records, 10);  // Terminated rows without CPU/memory requests
  int64_t groups = 0, tasks = 0;
  for (const Job& job : w->jobs) {
    EXPECT_GE(job.submit_ms, 0);
    for (const TaskGroup& g : job.groups) {
      ++groups;
      tasks += g.count;
      EXPECT_GE(g.duration_ms, 1000);
      EXPECT_TRUE(g.depends_on.empty());
      EXPECT_GE(g.resource[kMemoryMb], 128);
      EXPECT_LE(g.resource[kMemoryMb], 64 * 1024);
      EXPECT_GE(g.resource[kVcores], 1);
    }
  }
  EXPECT_EQ(groups, 67003);
  EXPECT_EQ(tasks, 10214262);
  EXPECT_EQ(w->jobs.front().submit_ms, 0);  // shifted: the earliest create time was -1078 s

  ASSERT_EQ(w->warnings.size(), 12u);
  EXPECT_THAT(w->warnings[0], EndsWith("_task.csv:54978: empty planned CPU; skipped"));
  EXPECT_THAT(w->warnings[10], HasSubstr("shifted by +1078 s"));
  EXPECT_THAT(w->warnings[11],
              HasSubstr(": 13540 row(s) not Terminated were left out (Failed 1126, Running "
                        "3567, Waiting 8847)"));
}

TEST(LoadAlibabaTest, RealTraceStrictStopsAtFirstMalformedRow) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadAlibaba2017(Trace(), AlibabaModel(), registry, kStrict);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(), Trace() + ":54978: empty planned CPU");
}

TEST(LoadAlibabaTest, RealTraceWithUnfinishedRows) {
  ResourceTypeRegistry registry;
  AlibabaModel model;
  model.include_unfinished = true;
  absl::StatusOr<Workload> w = LoadAlibaba2017(Trace(), model, registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs.size(), 11969u);
  // Waiting rows have no requests; some Running/Failed rows end before they were created.
  EXPECT_EQ(w->skipped_records, 9099);
}

TEST(LoadAlibabaTest, FixtureConversionAndShift) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadAlibaba2017(Fixture(), AlibabaModel(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->skipped_records, 2);
  std::string path = Fixture();
  EXPECT_THAT(w->warnings,
              ElementsAre(path + ":6: end time 70 is before create time 80; skipped",
                          path + ":7: empty planned CPU; skipped",
                          HasSubstr("create times go down to -20 s; the trace was shifted by "
                                    "+20 s"),
                          HasSubstr(": 2 row(s) not Terminated were left out (Running 1, "
                                    "Waiting 1)")));

  const Job& j1 = w->jobs[0];
  EXPECT_EQ(j1.id, "j1");
  EXPECT_EQ(j1.submit_ms, 0);  // min(100, -20) + 20 s
  EXPECT_THAT(j1.source, EndsWith("alibaba_small.csv:2"));
  ASSERT_EQ(j1.groups.size(), 2u);
  EXPECT_EQ(j1.groups[0].name, "task-1");
  EXPECT_EQ(j1.groups[0].count, 10);
  EXPECT_EQ(j1.groups[0].duration_ms, 60000);
  EXPECT_EQ(j1.groups[0].resource, Resource::Of(32768, 1));  // 0.5 x 64 GiB, 50% of a core
  EXPECT_EQ(j1.groups[1].name, "task-2");
  EXPECT_EQ(j1.groups[1].duration_ms, 50000);
  EXPECT_EQ(j1.groups[1].resource, Resource::Of(768, 2));  // 656 MiB -> 768; 150% -> 2

  const Job& j2 = w->jobs[1];
  EXPECT_EQ(j2.id, "j2");
  EXPECT_EQ(j2.submit_ms, 70000);
  EXPECT_EQ(j2.groups[0].duration_ms, 1000);  // end == create: min_duration_ms
  EXPECT_EQ(j2.groups[0].resource, Resource::Of(256, 1));

  absl::StatusOr<Workload> strict = LoadAlibaba2017(Fixture(), AlibabaModel(), registry, kStrict);
  EXPECT_EQ(strict.status().message(), path + ":6: end time 70 is before create time 80");
}

TEST(LoadAlibabaTest, ModelOptions) {
  ResourceTypeRegistry registry;
  AlibabaModel model;
  model.include_unfinished = true;
  model.machine_memory_mb = 1000;
  model.min_duration_ms = 1;
  absl::StatusOr<Workload> w = LoadAlibaba2017(Fixture(), model, registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_EQ(w->skipped_records, 3);  // the Waiting row has no requests
  EXPECT_THAT(w->warnings[0], HasSubstr(":5: empty planned CPU; skipped"));
  EXPECT_EQ(w->jobs[1].id, "j6");  // the Running row
  EXPECT_EQ(w->jobs[1].submit_ms, 30000);
  EXPECT_EQ(w->jobs[0].groups[0].resource, Resource::Of(512, 1));  // 0.5 x 1000 MiB
  EXPECT_EQ(w->jobs[2].groups[0].duration_ms, 1);

  model.machine_memory_mb = 0;
  EXPECT_THAT(LoadAlibaba2017(Fixture(), model, registry, kLenient).status().message(),
              HasSubstr("AlibabaModel.machine_memory_mb"));

  w = LoadAlibaba2017(Trace(), AlibabaModel(), registry, LoadOptions{.max_jobs = 10});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs.size(), 10u);
}

TEST(LoadAlibabaTest, MalformedRows) {
  std::string path = WriteTemp("malformed.csv",
                               "1,2,3,4,1,Terminated,100,0.1\n"  // no header: data from line 1
                               "1,2,3,4\n"
                               "x,2,3,4,1,Terminated,100,0.1\n"
                               "1,2,-3,4,1,Terminated,100,0.1\n"
                               "1,2,3,,1,Terminated,100,0.1\n"
                               "1,2,3,4,0,Terminated,100,0.1\n"
                               "1,2,3,4,1,Terminated,-100,0.1\n"
                               "1,2,3,4,1,Terminated,100,1.5\n"
                               "1,2,3,4,1,Terminated,100,nan\n"
                               "1,2,3,4,1,Terminated,200000,0.1\n"
                               "1,2,3,4,1,,100,0.1\n"
                               "1,2,3,4,1,Terminated,100,\n");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadAlibaba2017(path, AlibabaModel(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->skipped_records, 11);
  EXPECT_THAT(
      w->warnings,
      ElementsAre(HasSubstr(":2: expected 8 comma-separated fields, got 4; skipped"),
                  HasSubstr(":3: create time 'x' is not an integer; skipped"),
                  HasSubstr(":4: job id '-3' is not an integer >= 0; skipped"),
                  HasSubstr(":5: empty task id; skipped"),
                  HasSubstr(":6: instance count 0 must be >= 1; skipped"),
                  HasSubstr(":7: planned CPU -100 is out of range; skipped"),
                  HasSubstr(":8: planned memory 1.5 is outside 0..1; skipped"),
                  HasSubstr(":9: planned memory 'nan' is not a number; skipped"),
                  HasSubstr(":10: request <memory-mb=6554, vcores=2000> rejected: vcores=2000 "
                            "is above the maximum allocation 1024; skipped"),
                  HasSubstr(":11: empty status; skipped"),
                  HasSubstr(":12: empty planned memory; skipped")));

  std::string header_only = WriteTemp("header.csv", "a,b,c,d,e,f,g,h\n\n");
  EXPECT_EQ(LoadAlibaba2017(header_only, AlibabaModel(), registry, kLenient).status().message(),
            header_only + ": no records after the header");
}

}  // namespace
}  // namespace weft::sim
