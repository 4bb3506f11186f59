// Copyright Weft authors. Tests of LoadJobsYaml.
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

std::string Fixture() { return SourceDir() + "/src/sim/testdata/jobs_small.yaml"; }
std::string WriteTemp(const std::string& name, const std::string& content) {
  return testing::WriteTemp("jobs", name, content);
}

using testing::kLenient;
using testing::kStrict;

// One valid job with `extra` appended to its first group (indented as a group key).
std::string OneJob(const std::string& id, const std::string& extra = "") {
  return absl::StrCat("  - id: ", id,
                      "\n"
                      "    groups:\n"
                      "      - name: g\n"
                      "        resource: memory-mb=1024\n"
                      "        duration-ms: 10\n",
                      extra);
}

TEST(LoadJobsYamlTest, Fixture) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadJobsYaml(Fixture(), registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(internal::CheckWorkload(*w).ok()) << internal::CheckWorkload(*w);
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_THAT(w->warnings, IsEmpty());

  const Job& adhoc = w->jobs[0];
  EXPECT_EQ(adhoc.id, "adhoc");
  EXPECT_EQ(adhoc.submit_ms, 500);
  EXPECT_EQ(adhoc.queue, "default");
  EXPECT_EQ(adhoc.user, "default");
  EXPECT_THAT(adhoc.source, EndsWith("jobs_small.yaml:20"));
  ASSERT_EQ(adhoc.groups.size(), 1u);
  EXPECT_EQ(adhoc.groups[0].count, 1);
  EXPECT_EQ(adhoc.groups[0].priority, 20);
  EXPECT_EQ(adhoc.groups[0].duration_ms, 250);
  EXPECT_EQ(adhoc.groups[0].resource, Resource::Of(128, 1));  // memory raised to the minimum

  const Job& etl = w->jobs[1];
  EXPECT_EQ(etl.id, "etl");
  EXPECT_EQ(etl.submit_ms, 1500);
  EXPECT_EQ(etl.queue, "prod");
  EXPECT_EQ(etl.user, "alice");
  EXPECT_EQ(etl.priority, 2);
  EXPECT_THAT(etl.source, EndsWith("jobs_small.yaml:3"));
  ASSERT_EQ(etl.groups.size(), 2u);
  const TaskGroup& map = etl.groups[0];
  EXPECT_EQ(map.name, "map");
  EXPECT_EQ(map.count, 4);
  EXPECT_EQ(map.duration_ms, 30000);
  EXPECT_EQ(map.resource, Resource::Of(1024, 1));
  EXPECT_TRUE(map.depends_on.empty());
  const TaskGroup& reduce = etl.groups[1];
  EXPECT_EQ(reduce.count, 2);
  EXPECT_EQ(reduce.priority, 10);
  EXPECT_EQ(reduce.resource, Resource::Of(2048, 2));
  EXPECT_THAT(reduce.task_durations_ms, ElementsAre(1000, 3000));
  EXPECT_EQ(reduce.duration_ms, 2000);
  EXPECT_THAT(reduce.depends_on, ElementsAre(0));
  EXPECT_THAT(reduce.task_hosts, ElementsAre("h1", ""));
}

TEST(LoadJobsYamlTest, UnknownKeyIsRejectedWithKeyAndLine) {
  std::string path =
      WriteTemp("typo.yaml", absl::StrCat("jobs:\n", OneJob("a"),
                                          "  - id: b\n"
                                          "    grups: []\n",
                                          OneJob("c", "        duraton-s: 3\n"), OneJob("d")));
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> strict = LoadJobsYaml(path, registry, kStrict);
  ASSERT_FALSE(strict.ok());
  EXPECT_EQ(strict.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strict.status().message(),
            path +
                ":8: job 'b': unknown key 'grups' in a job (known: id, submit-s, submit-ms, "
                "queue, user, priority, goal-s, groups)");

  absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[0].id, "a");
  EXPECT_EQ(w->jobs[1].id, "d");
  EXPECT_EQ(w->skipped_records, 2);
  EXPECT_THAT(
      w->warnings,
      ElementsAre(HasSubstr(":8: job 'b': unknown key 'grups'"),
                  path + ":14: job 'c': group 'g': unknown key 'duraton-s' in a group "
                         "(known: name, count, resource, duration-s, duration-ms, "
                         "durations-ms, priority, depends-on, hosts, kind, usage, expected-s, "
                         "tags, placement, soft, gang, gang-timeout-s); skipped"));
}

TEST(LoadJobsYamlTest, ResourceAboveRegistryMaximumIsRejected) {
  ResourceTypeRegistry registry;
  ASSERT_TRUE(registry.SetLimits("memory-mb", 128, 8192, 128).ok());
  std::string path = WriteTemp("big.yaml",
                               "jobs:\n"
                               "  - id: big\n"
                               "    groups:\n"
                               "      - name: g\n"
                               "        resource: memory-mb=16384,vcores=1\n"
                               "        duration-s: 1\n");
  absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kStrict);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(),
            path +
                ":5: job 'big': group 'g': resource rejected: memory-mb=16384 is above the "
                "maximum allocation 8192");
  w = LoadJobsYaml(path, registry, kLenient);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->jobs.empty());
  EXPECT_EQ(w->skipped_records, 1);
}

TEST(LoadJobsYamlTest, MalformedJobs) {
  struct Case {
    std::string extra_job;  // appended after one good job
    std::string message;    // expected warning (without "path:")
  };
  const Case cases[] = {
      {OneJob("a"), ":7: duplicate job id 'a' (first at line 2)"},
      {OneJob("x", "        count: 0\n"), ":12: job 'x': group 'g': count: 0 must be >= 1"},
      {OneJob("x", "        count: ten\n"), ":12: job 'x': group 'g': count: 'ten' is not"},
      {OneJob("x", "        priority: 1e3\n"), ":12: job 'x': group 'g': priority: '1e3' is"},
      {OneJob("x", "        duration-s: 2\n"),
       ":9: job 'x': group 'g': give exactly one of duration-s, duration-ms, durations-ms"},
      {OneJob("x", "        depends-on: [g]\n"),
       ":12: job 'x': group 'g': depends-on: 'g' is not an earlier group of this job"},
      {OneJob("x", "        hosts: [a, b]\n"),
       ":12: job 'x': group 'g': hosts: expected a list of count (1) host names"},
      {OneJob("x", "        resource: vcores=1\n"),
       ":12: job 'x': group 'g': key 'resource' "
       "given twice"},
      {OneJob("x", "      - name: g\n        resource: vcores=1\n        duration-ms: 1\n"),
       ":12: job 'x': group 'g': name already used by an earlier group"},
      {OneJob("x", "      - name: h\n        resource: memory=1\n        duration-ms: 1\n"),
       ":13: job 'x': group 'h': resource: unknown resource type 'memory'"},
      {"  - id: x\n    submit-s: -1\n    groups: []\n", ":8: job 'x': submit-s: -1 is negative"},
      {"  - id: x\n    submit-ms: 5\n    submit-s: 5\n    groups: []\n",
       ":8: job 'x': give submit-s or submit-ms, not both"},
      {"  - id: x\n    groups: []\n", ":8: job 'x': groups: expected a non-empty list"},
      {"  - id: x\n", ":7: job 'x': missing 'groups'"},
      {"  - groups: []\n", ":7: job: missing 'id'"},
      {"  - [1, 2]\n", ":7: job: a job must be a map of keys"},
      {"  - id: x\n    priority: 99999999999\n    groups: []\n",
       ":8: job 'x': priority: 99999999999 is out of range"},
  };
  ResourceTypeRegistry registry;
  for (const Case& c : cases) {
    std::string path = WriteTemp("case.yaml", absl::StrCat("jobs:\n", OneJob("a"), c.extra_job));
    absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kLenient);
    ASSERT_TRUE(w.ok()) << w.status() << "\n" << c.extra_job;
    EXPECT_EQ(w->jobs.size(), 1u) << c.extra_job;
    EXPECT_EQ(w->skipped_records, 1) << c.extra_job;
    EXPECT_THAT(w->warnings, ElementsAre(HasSubstr(path + c.message))) << c.extra_job;
    absl::StatusOr<Workload> strict = LoadJobsYaml(path, registry, kStrict);
    EXPECT_THAT(strict.status().message(), HasSubstr(path + c.message)) << c.extra_job;
  }
}

TEST(LoadJobsYamlTest, DocumentErrorsFailEvenWhenLenient) {
  ResourceTypeRegistry registry;
  struct Case {
    std::string content;
    std::string message;
  };
  const Case cases[] = {
      {"jobs:\n  - id: [a\n", "invalid YAML: "},
      {"jobs: []\nextra: 1\n", ":2: unknown top-level key 'extra' (known: jobs)"},
      {"- id: a\n", ":1: expected a map with a 'jobs' list"},
      {"jobs: {}\n", ":1: 'jobs' must be a list"},
      {"other: {}\n", ":1: unknown top-level key 'other'"},
      {"{}\n", ":1: missing 'jobs'"},
      {"jobs: []\njobs: []\n", ":2: key 'jobs' given twice"},
      {std::string(10000, '['), "invalid YAML"},
  };
  for (const Case& c : cases) {
    std::string path = WriteTemp("doc.yaml", c.content);
    absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kLenient);
    ASSERT_FALSE(w.ok()) << c.content;
    EXPECT_EQ(w.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(w.status().message(), HasSubstr(c.message)) << c.content;
  }
  std::string empty = WriteTemp("empty.yaml", "jobs: []\n");
  absl::StatusOr<Workload> w = LoadJobsYaml(empty, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_TRUE(w->jobs.empty());
}

TEST(LoadJobsYamlTest, GoalKindAndUsage) {
  std::string path =
      WriteTemp("ras.yaml",
                "jobs:\n"
                "  - id: a\n"
                "    submit-s: 10\n"
                "    goal-s: 250.5\n"
                "    groups:\n"
                "      - {name: m, resource: \"memory-mb=128\", duration-s: 1,\n"
                "         usage: \"cpu=0.25, io=0.1\", expected-s: 1.5}\n"
                "      - {name: reduce, resource: \"memory-mb=128\", duration-s: 1}\n"
                "      - {name: r2, kind: reduce, resource: \"memory-mb=128\",\n"
                "         duration-s: 1, usage: \"memory=0.5\"}\n");
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  const Job& j = w->jobs[0];
  EXPECT_EQ(j.goal_ms, 250500);
  ASSERT_EQ(j.groups.size(), 3u);
  EXPECT_TRUE(j.groups[0].has_usage);
  EXPECT_DOUBLE_EQ(j.groups[0].usage.cpu, 0.25);
  EXPECT_DOUBLE_EQ(j.groups[0].usage.io, 0.1);
  EXPECT_DOUBLE_EQ(j.groups[0].usage.memory, 0.0);
  EXPECT_EQ(j.groups[0].kind, PhaseKind::kMapLike);
  EXPECT_EQ(j.groups[0].expected_ms, 1500);
  EXPECT_EQ(j.groups[1].expected_ms, -1);  // not declared
  EXPECT_FALSE(j.groups[1].has_usage);
  EXPECT_EQ(j.groups[1].kind, PhaseKind::kReduceLike);  // by its name
  EXPECT_EQ(j.groups[2].kind, PhaseKind::kReduceLike);
  EXPECT_DOUBLE_EQ(j.groups[2].usage.memory, 0.5);

  // Each bad seed 003 field (the rest of the group is valid) and the error it must give.
  for (auto [field, message] :
       {std::pair{"usage: \"cpu=1.5\"", "usage: cpu=1.5 is not a share of a node in [0, 1]"},
        std::pair{"usage: \"gpu=0.1\"", "unknown usage key 'gpu'"},
        std::pair{"usage: \"cpu=0.1,cpu=0.2\"", "usage key 'cpu' given twice"},
        std::pair{"usage: \"cpu\"", "'cpu' is not key=value"},
        std::pair{"expected-s: 0", "expected-s: 0 is below the minimum 1 ms"},
        std::pair{"expected-s: -4", "expected-s: -4 is negative"},
        std::pair{"expected-s: soon", "expected-s: 'soon' is not a number"}}) {
    std::string bad = WriteTemp(
        "bad_field.yaml", absl::StrCat("jobs:\n  - id: a\n    groups:\n      - {name: m, resource: "
                                       "\"memory-mb=128\", duration-s: 1, ",
                                       field, "}\n"));
    absl::StatusOr<Workload> b = LoadJobsYaml(bad, registry, kStrict);
    ASSERT_FALSE(b.ok()) << field;
    EXPECT_THAT(b.status().message(), HasSubstr(message));
  }
  std::string bad_kind = WriteTemp("bad_kind.yaml",
                                   "jobs:\n  - id: a\n    groups:\n      - {name: m, resource: "
                                   "\"memory-mb=128\", duration-s: 1, kind: shuffle}\n");
  absl::StatusOr<Workload> b = LoadJobsYaml(bad_kind, registry, kStrict);
  ASSERT_FALSE(b.ok());
  EXPECT_THAT(b.status().message(), HasSubstr("kind: 'shuffle' is not map or reduce"));
}

TEST(LoadJobsYamlTest, MaxJobs) {
  ResourceTypeRegistry registry;
  absl::StatusOr<Workload> w = LoadJobsYaml(Fixture(), registry, LoadOptions{.max_jobs = 1});
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_EQ(w->jobs.size(), 1u);
  EXPECT_EQ(w->jobs[0].id, "etl");
}

TEST(LoadJobsYamlTest, PlacementKeys) {
  ResourceTypeRegistry registry;
  std::string path = WriteTemp(
      "placement.yaml",
      "jobs:\n  - id: a\n    groups:\n"
      "      - {name: w, count: 3, resource: \"memory-mb=128\", duration-s: 1, tags: [w, x],\n"
      "         placement: \"notin,node,w\"}\n"
      "      - {name: s, resource: \"memory-mb=128\", duration-s: 1, tags: s,\n"
      "         placement: \"SOFT(IN,RACK,all/w)\"}\n"
      "      - {name: v, resource: \"memory-mb=128\", duration-s: 1, placement: "
      "\"CARDINALITY,NODE,w,0,2\", soft: true}\n"
      "      - {name: g, count: 4, resource: \"memory-mb=128\", duration-s: 1, gang: true,\n"
      "         gang-timeout-s: 30}\n");
  absl::StatusOr<Workload> w = LoadJobsYaml(path, registry, kStrict);
  ASSERT_TRUE(w.ok()) << w.status();
  const std::vector<TaskGroup>& g = w->jobs[0].groups;
  ASSERT_EQ(g.size(), 4u);
  EXPECT_THAT(g[0].tags, ElementsAre("w", "x"));
  EXPECT_TRUE(g[0].has_constraint);
  EXPECT_FALSE(g[0].constraint_soft);
  EXPECT_EQ(g[0].constraint,
            scheduler::PlacementConstraint::NotIn(scheduler::ConstraintScope::kNode, "w"));
  EXPECT_FALSE(g[0].gang);
  EXPECT_TRUE(g[0].has_placement());
  EXPECT_THAT(g[1].tags, ElementsAre("s"));
  EXPECT_TRUE(g[1].constraint_soft);
  EXPECT_EQ(g[1].constraint, scheduler::PlacementConstraint::In(
                                 scheduler::ConstraintScope::kRack, "w",
                                 scheduler::TagNamespace::kAll));
  EXPECT_TRUE(g[2].constraint_soft);
  EXPECT_EQ(g[2].constraint.max, 2);
  EXPECT_TRUE(g[3].gang);
  EXPECT_EQ(g[3].gang_timeout_ms, 30000);
  EXPECT_FALSE(g[3].has_constraint);

  for (auto [field, message] : {
           std::pair{"placement: \"NEAR,NODE,w\"", "placement: "},
           std::pair{"tags: [\"a b\"]", "tags: 'a b' is not an allocation tag"},
           std::pair{"soft: true", "soft: needs a placement"},
           std::pair{"gang: maybe", "gang: expected true or false"},
           std::pair{"gang-timeout-s: 5", "gang-timeout-s: needs gang: true"}}) {
    std::string bad = WriteTemp(
        "bad_placement.yaml",
        absl::StrCat("jobs:\n  - id: a\n    groups:\n      - {name: m, resource: "
                     "\"memory-mb=128\", duration-s: 1, ",
                     field, "}\n"));
    absl::StatusOr<Workload> b = LoadJobsYaml(bad, registry, kStrict);
    ASSERT_FALSE(b.ok()) << field;
    EXPECT_THAT(b.status().message(), HasSubstr(message));
  }
}

TEST(PlacementMixTest, ParsesAndRejects) {
  absl::StatusOr<PlacementMix> m = ParsePlacementMix(
      "anti-affinity=30%, gang=0.1,max-spread=40,max-gang=64,soft=true,gang-timeout-s=2,seed=7");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_DOUBLE_EQ(m->anti_affinity, 0.3);
  EXPECT_DOUBLE_EQ(m->gang, 0.1);
  EXPECT_EQ(m->max_spread_tasks, 40);
  EXPECT_EQ(m->max_gang_tasks, 64);
  EXPECT_TRUE(m->soft);
  EXPECT_EQ(m->gang_timeout_ms, 2000);
  EXPECT_EQ(m->seed, 7u);
  for (const char* bad : {"gang=2", "anti-affinity=x", "max-gang=0", "colour=red", "gang"}) {
    EXPECT_FALSE(ParsePlacementMix(bad).ok()) << bad;
  }
}

TEST(PlacementMixTest, SeededSharesOfSmallEnoughJobs) {
  Workload w;
  for (int i = 0; i < 2000; ++i) {
    Job j;
    j.id = absl::StrCat("j", i);
    TaskGroup g;
    g.name = "map";
    g.count = i % 2 == 0 ? 10 : 1000;  // half the jobs are too large for both
    g.resource = Resource::Of(1024, 1);
    g.duration_ms = 1000;
    j.groups.push_back(g);
    w.jobs.push_back(j);
  }
  PlacementMix mix;
  mix.anti_affinity = 0.3;
  mix.gang = 0.2;
  mix.max_spread_tasks = 100;
  mix.max_gang_tasks = 100;
  mix.seed = 3;
  Workload a = w, b = w;
  PlacementMixStats sa = ApplyPlacementMix(mix, &a);
  PlacementMixStats sb = ApplyPlacementMix(mix, &b);
  EXPECT_EQ(sa.anti_affinity_jobs, sb.anti_affinity_jobs);
  EXPECT_EQ(sa.gang_jobs, sb.gang_jobs);
  // 1000 small jobs: ~30% spread, ~70% x 20% = 14% gangs.
  EXPECT_NEAR(static_cast<double>(sa.anti_affinity_jobs), 300, 60);
  EXPECT_NEAR(static_cast<double>(sa.gang_jobs), 140, 45);
  for (size_t i = 0; i < a.jobs.size(); ++i) {
    const TaskGroup& g = a.jobs[i].groups[0];
    EXPECT_EQ(g.has_constraint, b.jobs[i].groups[0].has_constraint);
    if (g.count > 100) {
      EXPECT_FALSE(g.has_placement()) << i;
    }
    if (g.has_constraint) {
      EXPECT_THAT(g.tags, ElementsAre(absl::StrCat("spread-", a.jobs[i].id)));
      EXPECT_EQ(scheduler::DescribeConstraint(g.constraint),
                absl::StrCat("NOTIN,NODE,spread-", a.jobs[i].id));
      EXPECT_FALSE(g.gang);
    }
  }
}

}  // namespace
}  // namespace weft::sim
