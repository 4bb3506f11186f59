// Copyright Weft authors. Tests of LoadSls and of the concatenated-JSON reader.
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
using ::testing::IsEmpty;
using ::testing::StartsWith;

std::string Trace() { return SourceDir() + "/data/traces/sls_inputsls.json"; }
std::string Fixture() { return SourceDir() + "/src/sim/testdata/sls_small.json"; }
std::string WriteTemp(const std::string& name, const std::string& content) {
  return testing::WriteTemp("sls", name, content);
}

using testing::kLenient;
using testing::kStrict;

TEST(LoadSlsTest, RealTrace) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(Trace(), DefaultTaskResources(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->skipped_records, 0);
  EXPECT_THAT(w->warnings, IsEmpty());

  const Job& j1 = w->jobs[0];
  EXPECT_EQ(j1.id, "job_1");
  EXPECT_EQ(j1.queue, "sls_queue_1");
  EXPECT_EQ(j1.user, "default");
  EXPECT_EQ(j1.submit_ms, 0);
  EXPECT_THAT(j1.source, EndsWith("sls_inputsls.json:1"));
  ASSERT_EQ(j1.groups.size(), 1u);
  const TaskGroup& m1 = j1.groups[0];
  EXPECT_EQ(m1.name, "map");
  EXPECT_EQ(m1.count, 3);
  EXPECT_EQ(m1.priority, 20);
  EXPECT_EQ(m1.resource, Resource::Of(1024, 1));
  EXPECT_THAT(m1.task_durations_ms, ElementsAre(23707 - 6664, 21593 - 6665, 86613 - 68770));
  EXPECT_THAT(m1.task_hosts, ElementsAre("node1", "node3", "node2"));
  EXPECT_EQ(m1.duration_ms, (17043 + 14928 + 17843 + 2) / 3);  // the mean, rounded up

  const Job& j2 = w->jobs[1];
  EXPECT_EQ(j2.id, "job_2");
  EXPECT_EQ(j2.queue, "sls_queue_2");
  EXPECT_EQ(j2.submit_ms, 105204);
  EXPECT_THAT(j2.source, EndsWith(":35"));
  ASSERT_EQ(j2.groups.size(), 1u);
  EXPECT_THAT(j2.groups[0].task_durations_ms, ElementsAre(133985 - 111822, 131377 - 111788));
  EXPECT_THAT(j2.groups[0].task_hosts, ElementsAre("node1", "node2"));
}

TEST(LoadSlsTest, GroupsResourcesAndCopies) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(Fixture(), DefaultTaskResources(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 4u);

  // Fields missing: SLS's defaults; integers given as strings are accepted.
  const Job& streaming = w->jobs[0];
  EXPECT_EQ(streaming.id, "streaming");
  EXPECT_EQ(streaming.queue, "default");
  EXPECT_EQ(streaming.submit_ms, 0);
  ASSERT_EQ(streaming.groups.size(), 1u);
  EXPECT_EQ(streaming.groups[0].name, "map");
  EXPECT_EQ(streaming.groups[0].priority, 20);
  EXPECT_THAT(streaming.groups[0].task_durations_ms, ElementsAre(10));
  EXPECT_THAT(streaming.groups[0].task_hosts, IsEmpty());

  const Job& mr = w->jobs[1];
  EXPECT_EQ(mr.id, "mr1");
  EXPECT_EQ(mr.queue, "prod");
  EXPECT_EQ(mr.user, "alice");
  EXPECT_EQ(mr.submit_ms, 1000);
  ASSERT_EQ(mr.groups.size(), 2u);
  const TaskGroup& map = mr.groups[0];
  EXPECT_EQ(map.count, 2);
  EXPECT_THAT(map.task_durations_ms, ElementsAre(2000, 1));  // end == start counts as 1 ms
  EXPECT_THAT(map.task_hosts, ElementsAre("h1", "h2"));
  // The group asks for the largest task: 3000 MiB rounded up to the 128 MiB increment.
  EXPECT_EQ(map.resource, Resource::Of(3072, 2));
  const TaskGroup& reduce = mr.groups[1];
  EXPECT_EQ(reduce.name, "reduce");
  EXPECT_EQ(reduce.count, 2);  // "count": 2
  EXPECT_EQ(reduce.priority, 10);
  EXPECT_THAT(reduce.task_durations_ms, ElementsAre(5000, 5000));
  EXPECT_THAT(reduce.task_hosts, IsEmpty());
  EXPECT_THAT(reduce.depends_on, ElementsAre(0));
  EXPECT_EQ(reduce.resource, Resource::Of(1024, 1));

  // job.count 2: two copies; the map group comes first although listed second.
  EXPECT_EQ(w->jobs[2].id, "rev#1");
  EXPECT_EQ(w->jobs[3].id, "rev#2");
  for (int i = 2; i < 4; ++i) {
    const Job& rev = w->jobs[i];
    EXPECT_EQ(rev.submit_ms, 2000);
    ASSERT_EQ(rev.groups.size(), 2u);
    EXPECT_EQ(rev.groups[0].name, "map");
    EXPECT_EQ(rev.groups[0].priority, 5);
    EXPECT_EQ(rev.groups[1].name, "reduce");
    EXPECT_EQ(rev.groups[1].resource, Resource::Of(512, 1));  // container.memory-mb
    EXPECT_THAT(rev.groups[1].depends_on, ElementsAre(0));
  }
}

TEST(LoadSlsTest, DefaultsAreUsedAndChecked) {
  ResourceTypeRegistry registry;
  DefaultTaskResources defaults;
  defaults.map = Resource::Of(2000, 3);
  absl::StatusOr<Workload> w = LoadSls(Trace(), defaults, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs[0].groups[0].resource, Resource::Of(2048, 3));

  defaults.reduce = Resource::Of(-1, 1);
  absl::Status s = LoadSls(Trace(), defaults, registry, kLenient).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("DefaultTaskResources.reduce: memory-mb=-1 is negative"));
}

// Line numbers below are those of the content; see the comments.
constexpr char kMalformed[] =
    R"({"job.start.ms": 0, "job.id": "a", "job.tasks": [{"container.start.ms": 0, "container.end.ms": 10}]}
{"job.start.ms": 5, "job.id": "b",
 "job.tasks": [
   {"container.start.ms": 20, "container.end.ms": 10}
 ]}
{"job.start.ms": oops}
garbage here
{"job.start.ms": 7, "job.id": "c", "job.tasks": [{"container.start.ms": 0, "container.end.ms": 10, "container.memory": 99999999}]}
{"job.start.ms": -1, "job.id": "d", "job.tasks": [{"duration.ms": 5}]}
{"job.start.ms": 9, "job.id": "e", "job.tasks": [{"duration.ms": 5}]}
{"job.start.ms": 9, "job.id": "a", "job.tasks": [{"duration.ms": 5}]}
{"job.id": "g", "job.tasks": []}
{"job.start.ms": 9, "job.id": "f", "job.tasks": [
)";

TEST(LoadSlsTest, MalformedRecordsNameFileAndLine) {
  std::string path = WriteTemp("malformed.json", kMalformed);
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(path, DefaultTaskResources(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "a");
  EXPECT_EQ(w->jobs[1].id, "e");
  EXPECT_EQ(w->skipped_records, 8);
  EXPECT_THAT(
      w->warnings,
      ElementsAre(
          path + ":4: job.tasks[0]: container.end.ms 10 is before container.start.ms 20; skipped",
          AllOf(StartsWith(path + ":6: invalid JSON: syntax error"), EndsWith("; skipped")),
          path + ":7: unexpected text outside a JSON object: 'garbage here'; skipped",
          path + ":8: job.tasks[0]: task resource rejected: memory-mb=99999999 is above the "
                 "maximum allocation 1048576; skipped",
          path + ":9: job.start.ms: -1 is negative; skipped",
          path + ":11: duplicate job id 'a' (first at line 1); skipped",
          path + ":12: missing job.start.ms; skipped",
          path + ":13: JSON object is not closed before the end of the file; skipped"));

  absl::StatusOr<Workload> strict = LoadSls(path, DefaultTaskResources(), registry, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strict.status().message(),
            path + ":4: job.tasks[0]: container.end.ms 10 is before container.start.ms 20");
}

TEST(LoadSlsTest, FieldTypeErrors) {
  std::string path = WriteTemp("types.json",
                               R"({"job.start.ms": 1.5, "job.tasks": [{"duration.ms": 5}]}
{"job.start.ms": 1, "job.tasks": {"duration.ms": 5}}
{"job.start.ms": 1, "job.tasks": [{"duration.ms": 0}]}
{"job.start.ms": 1, "job.tasks": [{"duration.ms": 5, "count": 0}]}
{"job.start.ms": 1, "job.tasks": [{"duration.ms": 5, "container.type": ["map"]}]}
{"job.start.ms": 18446744073709551615, "job.tasks": [{"duration.ms": 5}]}
{"job.start.ms": 1, "job.tasks": [7]}
{"job.start.ms": 2.0, "job.tasks": [{"duration.ms": "5"}]}
)");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(path, DefaultTaskResources(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].id, "job_at_line_8");  // no job.id: named after its line
  EXPECT_EQ(w->jobs[0].submit_ms, 2);
  EXPECT_THAT(
      w->warnings,
      ElementsAre(HasSubstr(":1: job.start.ms: 1.5 is not an integer"),
                  HasSubstr(":2: job.tasks: expected an array, got object"),
                  HasSubstr(":3: job.tasks[0]: duration.ms: 0 must be >= 1"),
                  HasSubstr(":4: job.tasks[0]: count: 0 must be >= 1"),
                  HasSubstr(":5: job.tasks[0]: container.type: expected a string, got array"),
                  HasSubstr(":6: job.start.ms: 18446744073709551615 is out of range"),
                  HasSubstr(":7: job.tasks[0]: expected an object, got number")));
}

TEST(LoadSlsTest, MaxJobsAndFileErrors) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w =
      LoadSls(Fixture(), DefaultTaskResources(), registry, LoadOptions{.max_jobs = 2});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 2u);  // mr1 and streaming: the file's first two
  EXPECT_EQ(w->jobs[0].id, "streaming");
  EXPECT_EQ(w->jobs[1].id, "mr1");

  w = LoadSls(Fixture(), DefaultTaskResources(), registry, LoadOptions{.max_jobs = 3});
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->jobs.size(), 3u);  // max_jobs cuts between the copies of job.count

  std::string empty = WriteTemp("empty.json", "\n  \n");
  EXPECT_EQ(LoadSls(empty, DefaultTaskResources(), registry, kLenient).status().message(),
            empty + ": file is empty");
  EXPECT_EQ(
      LoadSls("/nonexistent.json", DefaultTaskResources(), registry, kLenient).status().code(),
      absl::StatusCode::kNotFound);
}

TEST(JsonStreamReaderTest, RecordsLinesOfNestedObjects) {
  std::string path = WriteTemp("lines.json",
                               "\xEF\xBB\xBF\n{\"a\": [\n {\"b\": 1},\n\n {\"c\": "
                               "{\"d\": \"}{\\\"\"}}\n]}  {\"e\": 2}");
  absl::StatusOr<std::unique_ptr<internal::JsonStreamReader>> reader =
      internal::JsonStreamReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  internal::JsonRecord rec;
  ASSERT_TRUE((*reader)->Next(&rec));
  ASSERT_EQ(rec.error, "");
  EXPECT_EQ(rec.line, 2);
  const nlohmann::json& a = rec.value["a"];
  EXPECT_EQ(rec.LineOf(a[0]), 3);
  EXPECT_EQ(rec.LineOf(a[1]), 5);
  EXPECT_EQ(rec.LineOf(a[1]["c"]), 5);
  EXPECT_EQ(a[1]["c"]["d"], "}{\"");  // braces inside strings do not count
  ASSERT_TRUE((*reader)->Next(&rec));
  EXPECT_EQ(rec.line, 6);
  EXPECT_EQ(rec.value["e"], 2);
  EXPECT_FALSE((*reader)->Next(&rec));
  EXPECT_TRUE((*reader)->FinalStatus().ok());
}

TEST(JsonStreamReaderTest, DeepNestingIsAMalformedRecord) {
  std::string deep(100000, '[');
  std::string path = WriteTemp("deep.json", "{\"a\": " + deep + "\n{\"job.start.ms\": 1}");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadSls(path, DefaultTaskResources(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->warnings, ElementsAre(HasSubstr(":1: JSON object is not closed")));
  std::string closed = "{\"a\": " + deep + std::string(100000, ']') + "}\n";
  path = WriteTemp("deep2.json", closed + closed);
  w = LoadSls(path, DefaultTaskResources(), registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_THAT(w->warnings, ElementsAre(HasSubstr(":1: JSON nested deeper than 512 levels"),
                                       HasSubstr(":2: JSON nested deeper than 512 levels")));
}

}  // namespace
}  // namespace weft::sim
