// Copyright Weft authors. Tests of LoadSwim.
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

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;

std::string Trace() { return SourceDir() + "/data/traces/swim_FB-2009_samples_24_times_1hr_0.tsv"; }
std::string Fixture() { return SourceDir() + "/src/sim/testdata/swim_small.tsv"; }
std::string WriteTemp(const std::string& name, const std::string& content) {
  return testing::WriteTemp("swim", name, content);
}

using testing::kLenient;
using testing::kStrict;

TEST(LoadSwimTest, RealTraceYieldsEveryJob) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSwim(Trace(), SwimModel(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 5894u);
  EXPECT_EQ(w->skipped_records, 0);
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);

  int64_t maps = 0, reduces = 0, map_only = 0;
  for (const Job& job : w->jobs) {
    EXPECT_EQ(job.queue, "default");
    EXPECT_EQ(job.user, "default");
    maps += job.groups[0].count;
    EXPECT_EQ(job.groups[0].resource, Resource::Of(1024, 1));
    if (job.groups.size() == 1) {
      ++map_only;
    } else {
      reduces += job.groups[1].count;
      EXPECT_EQ(job.groups[1].resource, Resource::Of(2048, 1));
      EXPECT_THAT(job.groups[1].depends_on, ElementsAre(0));
    }
  }
  EXPECT_EQ(maps, 169451);
  EXPECT_EQ(reduces, 21895);
  EXPECT_EQ(map_only, 4448);  // the README's 75% map-only jobs
  EXPECT_EQ(w->jobs.front().id, "job0");
  EXPECT_EQ(w->jobs.front().submit_ms, 49000);
  EXPECT_THAT(w->jobs.front().source, EndsWith("_0.tsv:1"));
  EXPECT_EQ(w->jobs.back().submit_ms, 86404000);
  // One job (the 7 TB one) needs more than 20000 maps.
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_THAT(w->warnings[0], HasSubstr(": 1 job(s) needed more than 20000"));
  EXPECT_THAT(w->warnings[0], HasSubstr("(first: job 'job969' at line 970)"));
}

TEST(LoadSwimTest, ModelMathOnFixture) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSwim(Fixture(), SwimModel(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 3u);
  EXPECT_TRUE(w->warnings.empty());
  // Sorted by submit time: a (10 s), c (15 s), b (20 s).
  const Job& a = w->jobs[0];
  const Job& c = w->jobs[1];
  const Job& b = w->jobs[2];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(c.id, "c");
  EXPECT_EQ(b.id, "b");
  EXPECT_EQ(a.submit_ms, 10000);
  EXPECT_EQ(c.submit_ms, 15000);
  EXPECT_EQ(b.submit_ms, 20000);
  EXPECT_THAT(b.source, EndsWith("swim_small.tsv:2"));

  // a: 256 MiB input, no shuffle: 2 maps of 128 MiB, 2000 + ceil(128 MiB / 50 KiB per ms).
  ASSERT_EQ(a.groups.size(), 1u);
  EXPECT_EQ(a.groups[0].name, "map");
  EXPECT_EQ(a.groups[0].count, 2);
  EXPECT_EQ(a.groups[0].duration_ms, 2000 + 2622);
  EXPECT_EQ(a.groups[0].priority, 20);
  EXPECT_TRUE(a.groups[0].task_durations_ms.empty());
  EXPECT_TRUE(a.groups[0].task_hosts.empty());

  // b: no input (still one map), 1 GiB + 1 shuffle bytes: 2 reduces.
  ASSERT_EQ(b.groups.size(), 2u);
  EXPECT_EQ(b.groups[0].count, 1);
  EXPECT_EQ(b.groups[0].duration_ms, 2000 + 20972);  // (0 + 1073741825) / 1 / 51200
  EXPECT_EQ(b.groups[1].name, "reduce");
  EXPECT_EQ(b.groups[1].count, 2);
  EXPECT_EQ(b.groups[1].priority, 10);
  EXPECT_EQ(b.groups[1].duration_ms, 2000 + 20972);  // (1073741825 + 5) / 2 / 25600
  EXPECT_THAT(b.groups[1].depends_on, ElementsAre(0));

  // c: one byte of everything: the task overhead plus 1 ms.
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_EQ(c.groups[0].duration_ms, 2001);
  EXPECT_EQ(c.groups[1].duration_ms, 2001);
}

TEST(LoadSwimTest, ModelParametersAreUsed) {
  ResourceTypeRegistry registry;
  SwimModel model;
  model.task_overhead_ms = 0;
  model.map_bytes_per_ms = 1024;
  model.split_bytes = 64 << 20;
  model.map_resource = Resource::Of(1000, 2);  // normalised to the 128 MiB increment
  absl::StatusOr<Workload> w = LoadSwim(Fixture(), model, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  const Job& a = w->jobs[0];
  EXPECT_EQ(a.groups[0].count, 4);
  EXPECT_EQ(a.groups[0].duration_ms, 65536);  // 64 MiB at 1 KiB/ms
  EXPECT_EQ(a.groups[0].resource, Resource::Of(1024, 2));
}

TEST(LoadSwimTest, CapsTasksPerGroupAndSaysHowOften) {
  ResourceTypeRegistry registry;
  SwimModel model;
  model.max_tasks_per_group = 1;
  absl::StatusOr<Workload> w = LoadSwim(Fixture(), model, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs[0].groups[0].count, 1);
  EXPECT_EQ(w->jobs[0].groups[0].duration_ms, 2000 + 5243);  // all 256 MiB in one map
  EXPECT_EQ(w->jobs[2].groups[1].count, 1);
  EXPECT_EQ(w->jobs[2].groups[1].duration_ms, 2000 + 41944);
  EXPECT_EQ(w->skipped_records, 0);
  ASSERT_EQ(w->warnings.size(), 1u);
  EXPECT_THAT(w->warnings[0], HasSubstr("2 job(s) needed more than 1 (max_tasks_per_group)"));
  EXPECT_THAT(w->warnings[0], HasSubstr("first: job 'a' at line 1"));
}

TEST(LoadSwimTest, MalformedLinesAreReportedWithFileAndLine) {
  std::string path = WriteTemp("malformed.tsv",
                               "ok1\t1\t1\t100\t0\t0\n"
                               "bad\t2\tx\t100\t0\t0\n"
                               "neg\t3\t1\t-5\t0\t0\n"
                               "short\t4\t1\n"
                               "\n"
                               "ok1\t6\t1\t1\t1\t1\n"
                               "ok2\t7\t1\t1\t1\t1\r\n"
                               "big\t1\t1\t99999999999999999999\t1\t1\n");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSwim(path, SwimModel(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "ok1");
  EXPECT_EQ(w->jobs[1].id, "ok2");
  EXPECT_EQ(w->skipped_records, 5);
  EXPECT_THAT(w->warnings,
              ElementsAre(path + ":2: gap 'x' is not an integer; skipped",
                          path + ":3: map input bytes -5 is negative; skipped",
                          HasSubstr(path + ":4: expected 6 tab-separated fields"),
                          path + ":6: duplicate job id 'ok1' (first at line 1); skipped",
                          path + ":8: map input bytes '99999999999999999999' is not an "
                                 "integer; skipped"));

  absl::StatusOr<Workload> strict = LoadSwim(path, SwimModel(), registry, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strict.status().message(), path + ":2: gap 'x' is not an integer");
}

TEST(LoadSwimTest, MaxJobsStopsLoading) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w =
      LoadSwim(Trace(), SwimModel(), registry, LoadOptions{.max_jobs = 100});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 100u);
  EXPECT_EQ(w->jobs.back().id, "job99");
}

TEST(LoadSwimTest, FileLevelErrorsFailEvenWhenLenient) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> missing =
      LoadSwim("/nonexistent/swim.tsv", SwimModel(), registry, kLenient);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("/nonexistent/swim.tsv: cannot open"));

  std::string empty = WriteTemp("empty.tsv", " \n\n");
  absl::StatusOr<Workload> w = LoadSwim(empty, SwimModel(), registry, kLenient);
  EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(w.status().message(), empty + ": file is empty");
}

TEST(LoadSwimTest, BadModelIsRejected) {
  ResourceTypeRegistry registry;
  SwimModel model;
  model.split_bytes = 0;
  EXPECT_THAT(LoadSwim(Fixture(), model, registry, kLenient).status().message(),
              HasSubstr("SwimModel.split_bytes"));
  model = SwimModel();
  model.map_bytes_per_ms = 0;
  EXPECT_THAT(LoadSwim(Fixture(), model, registry, kLenient).status().message(),
              HasSubstr("SwimModel.map_bytes_per_ms"));
  model = SwimModel();
  model.reduce_resource = Resource::Of(int64_t{1} << 21, 1);  // above the 1 TiB maximum
  absl::Status s = LoadSwim(Fixture(), model, registry, kLenient).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("SwimModel.reduce_resource: memory-mb=2097152 is above"));
}

}  // namespace
}  // namespace weft::sim
