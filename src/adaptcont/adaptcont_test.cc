#include "adaptcont/adaptcont.h"

#include <cstdint>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::adaptcont {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

AdaptContConfig Config(AdaptContMode mode) {
  AdaptContConfig c;
  c.mode = mode;
  return c;
}

// A job of `tasks` map tasks (64 MiB splits) with `free` containers of headroom.
AmSizingInput Job(int64_t tasks, int64_t free) {
  AmSizingInput in;
  in.user = "alice";
  in.input_bytes = tasks * 64 * kMiB;
  in.available_containers = free;
  in.cluster_max_allocation = {1 << 20, 64};
  return in;
}

AmSizingDecision Decide(const AdaptContConfig& c, const AmSizingInput& in) {
  auto d = DecideAmSize(c, in);
  EXPECT_TRUE(d.ok()) << d.status();
  return d.ok() ? *d : AmSizingDecision{};
}

// ---------------------------------------------------------------- stage 1: input generation

TEST(InputGenerationTest, SplitsWavesAndWaveSize) {
  AmSizingInput in = Job(0, 40);
  in.input_bytes = 10 * kGiB;
  auto w = GenerateInputs(AdaptContConfig{}, in);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->split_bytes, 64 * kMiB);
  EXPECT_EQ(w->map_tasks, 160);
  EXPECT_EQ(w->available_containers, 40);
  EXPECT_EQ(w->wave_size, 40);
  EXPECT_EQ(w->waves, 4);
  EXPECT_EQ(w->log,
            "input 10 GiB / 64 MiB splits = 160 map tasks; 40 containers free -> 4 "
            "waves of 40");
}

TEST(InputGenerationTest, PartialSplitAndOverrides) {
  AmSizingInput in = Job(0, 1000);
  in.input_bytes = 100 * kMiB;  // 1.56 splits
  EXPECT_EQ(GenerateInputs(AdaptContConfig{}, in)->map_tasks, 2);
  in.input_bytes = 10 * kGiB;
  in.split_bytes = 128 * kMiB;  // the application's own split size
  EXPECT_EQ(GenerateInputs(AdaptContConfig{}, in)->map_tasks, 80);
  in.map_tasks = 7;  // given by a trace: the bytes are ignored
  auto w = GenerateInputs(AdaptContConfig{}, in);
  EXPECT_EQ(w->map_tasks, 7);
  EXPECT_EQ(w->wave_size, 7);
  EXPECT_EQ(w->waves, 1);
  EXPECT_THAT(w->log, HasSubstr("7 map tasks (given)"));
}

TEST(InputGenerationTest, NoHeadroomSizesForWavesOfOne) {
  auto w = GenerateInputs(AdaptContConfig{}, Job(5, 0));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->wave_size, 1);
  EXPECT_EQ(w->waves, 5);
}

TEST(InputGenerationTest, EmptyInputHasNoWaves) {
  auto w = GenerateInputs(AdaptContConfig{}, Job(0, 10));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->map_tasks, 0);
  EXPECT_EQ(w->wave_size, 0);
  EXPECT_EQ(w->waves, 0);
  EXPECT_EQ(Decide(AdaptContConfig{}, Job(0, 10)).size, (AmResource{256, 1}));
}

TEST(InputGenerationTest, LostNodesReduceTheHeadroom) {
  AmSizingInput in = Job(500, 100);
  in.nodes_lost = 3;
  in.lost_containers = 30;
  auto w = GenerateInputs(AdaptContConfig{}, in);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->available_containers, 70);
  EXPECT_EQ(w->wave_size, 70);
  EXPECT_THAT(w->log, HasSubstr("3 nodes lost since the last decision, -30"));
  in.lost_containers = 1000;  // never negative
  EXPECT_EQ(GenerateInputs(AdaptContConfig{}, in)->available_containers, 0);
}

TEST(InputGenerationTest, BadInputNamesTheField) {
  struct Case {
    void (*mutate)(AmSizingInput*);
    const char* field;
  };
  const Case cases[] = {
      {[](AmSizingInput* in) { in->input_bytes = -1; }, "AmSizingInput.input_bytes: -1"},
      {[](AmSizingInput* in) { in->split_bytes = -64; }, "AmSizingInput.split_bytes: -64"},
      {[](AmSizingInput* in) { in->map_tasks = -2; }, "AmSizingInput.map_tasks: -2"},
      {[](AmSizingInput* in) { in->reduce_tasks = -1; }, "AmSizingInput.reduce_tasks"},
      {[](AmSizingInput* in) { in->available_containers = -1; }, "available_containers"},
      {[](AmSizingInput* in) { in->nodes_lost = -1; }, "AmSizingInput.nodes_lost"},
      {[](AmSizingInput* in) { in->lost_containers = -1; }, "AmSizingInput.lost_containers"},
      {[](AmSizingInput* in) { in->cluster_max_allocation.memory_mb = 0; },
       "cluster_max_allocation.memory_mb: 0 must be > 0"},
      {[](AmSizingInput* in) { in->cluster_max_allocation.vcores = 0; },
       "cluster_max_allocation.vcores"},
      {[](AmSizingInput* in) {
         in->queue_am_limit = AmResource{-1, 1};
       },
       "queue_am_limit.memory_mb"},
      {[](AmSizingInput* in) {
         in->previous_attempt = PreviousAttempt{{0, 1}, true};
       },
       "previous_attempt.size.memory_mb"},
  };
  for (const Case& c : cases) {
    AmSizingInput in = Job(10, 10);
    c.mutate(&in);
    auto d = DecideAmSize(AdaptContConfig{}, in);
    ASSERT_FALSE(d.ok()) << c.field;
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(d.status().message(), HasSubstr(c.field));
  }
}

// ------------------------------------------------------------------ stage 3: Dynamic formula

TEST(DynamicTest, OneM0PerW0OfWaveAndAVcorePerTwoIncrements) {
  const AdaptContConfig c;  // M0 = 256 MB, W0 = 64
  EXPECT_EQ(DynamicAmSize(0, c), (AmResource{256, 1}));
  EXPECT_EQ(DynamicAmSize(1, c), (AmResource{256, 1}));
  EXPECT_EQ(DynamicAmSize(64, c), (AmResource{256, 1}));
  EXPECT_EQ(DynamicAmSize(65, c), (AmResource{512, 1}));
  EXPECT_EQ(DynamicAmSize(128, c), (AmResource{512, 1}));
  EXPECT_EQ(DynamicAmSize(129, c), (AmResource{768, 2}));
  EXPECT_EQ(DynamicAmSize(256, c), (AmResource{1024, 2}));
  EXPECT_EQ(DynamicAmSize(257, c), (AmResource{1280, 3}));
  EXPECT_EQ(DynamicAmSize(512, c), (AmResource{2048, 4}));
  EXPECT_EQ(DynamicVcores(768, c), 2);
  EXPECT_EQ(DynamicVcores(1536, c), 3);
}

// The seed's example: 768 MB -> 2 vcores. Its Workload-Same job (10 GB, 160 splits of 64 MB)
// in one wave of 160 is exactly that.
TEST(DynamicTest, SeedExample768MbIsTwoVcores) {
  AmSizingInput in = Job(0, 200);
  in.input_bytes = 10 * kGiB;
  const AmSizingDecision d = Decide(Config(AdaptContMode::kDynamic), in);
  EXPECT_EQ(d.tasks, 160);
  EXPECT_EQ(d.wave_size, 160);
  EXPECT_EQ(d.waves, 1);
  EXPECT_EQ(d.size, (AmResource{768, 2}));
  EXPECT_EQ(d.AsResource(), Resource::Of(768, 2));
  EXPECT_EQ(d.need_mb, 448);
  EXPECT_EQ(d.max_running_tasks, 320);
  EXPECT_THAT(d.decision_stage,
              HasSubstr("dynamic: 256 MB + 2 x 256 MB for a wave of 160 (W0 = 64) = 768 MB"));
  EXPECT_THAT(d.Explanation(), HasSubstr("-> 768 MB/2 vcores"));
}

TEST(DynamicTest, SmallWaveGetsM0) {
  AmSizingInput in = Job(0, 40);
  in.input_bytes = 10 * kGiB;  // 160 tasks in 4 waves of 40
  const AmSizingDecision d = Decide(Config(AdaptContMode::kDynamic), in);
  EXPECT_EQ(d.waves, 4);
  EXPECT_EQ(d.size, (AmResource{256, 1}));
}

TEST(DynamicTest, M0AndW0AreConfigurable) {
  AdaptContConfig c;
  c.m0_mb = 512;
  c.w0 = 100;
  EXPECT_EQ(Decide(c, Job(250, 250)).size, (AmResource{1536, 2}));
  EXPECT_EQ(Decide(c, Job(100, 250)).size, (AmResource{512, 1}));
}

TEST(DynamicTest, NeverBelowTheModelNeedEvenWhenM0IsTooSmall) {
  AdaptContConfig c;
  c.am_memory_model = {.base_mb = 300, .per_task_kb = 4096};  // need(64) = 556 MB > M0
  const AmSizingDecision d = Decide(c, Job(64, 64));
  EXPECT_EQ(d.need_mb, 556);
  EXPECT_EQ(d.size.memory_mb, 768);  // 556 rounded up to M0
  EXPECT_THAT(d.decision_stage, HasSubstr("raised to 768 MB for the model need of 556 MB"));
}

// ---------------------------------------------------------- stage 2: constraint filtering

TEST(ConstraintTest, ClusterMaxAllocationLimitsTheWave) {
  AmSizingInput in = Job(600, 600);
  in.cluster_max_allocation = {1024, 4};
  auto w = GenerateInputs(AdaptContConfig{}, in);
  ASSERT_TRUE(w.ok());
  auto k = FilterConstraints(AdaptContConfig{}, in, *w);
  ASSERT_TRUE(k.ok()) << k.status();
  EXPECT_EQ(k->ceiling, (AmResource{1024, 4}));
  EXPECT_EQ(k->memory_bound_by, "cluster max allocation");
  EXPECT_EQ(k->max_wave, 256);
  EXPECT_EQ(k->wave_size, 256);
  EXPECT_EQ(k->waves, 3);
  EXPECT_THAT(k->log, HasSubstr("waves limited to 256 tasks (was 600)"));
  const AmSizingDecision d = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(d.size, (AmResource{1024, 2}));
  EXPECT_GE(d.max_running_tasks, 256);
}

TEST(ConstraintTest, QueueAmLimitAndUserCapAreCeilings) {
  AmSizingInput in = Job(300, 300);
  in.queue_am_limit = AmResource{512, 8};
  AmSizingDecision d = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(d.size, (AmResource{512, 1}));
  EXPECT_EQ(d.wave_size, 128);
  EXPECT_THAT(d.constraint_stage, HasSubstr("ceiling 512 MB (queue AM limit)"));

  AdaptContConfig c;
  c.user_am_caps["alice"] = {768, 1};
  in.queue_am_limit.reset();
  d = Decide(c, in);
  EXPECT_EQ(d.size, (AmResource{768, 1}));  // 2 vcores by the rule, capped at 1
  EXPECT_EQ(d.wave_size, 192);
  EXPECT_THAT(d.constraint_stage, HasSubstr("user cap for 'alice'"));
  EXPECT_THAT(d.decision_stage, HasSubstr("vcores capped"));

  in.user = "bob";  // not capped: ceil(300 / 64) = 5 x 256 MB
  EXPECT_EQ(Decide(c, in).size, (AmResource{1280, 3}));
  c.default_user_am_cap = AmResource{1024, 2};
  d = Decide(c, in);
  EXPECT_EQ(d.size, (AmResource{1024, 2}));
  EXPECT_THAT(d.constraint_stage, HasSubstr("default user cap ('bob')"));
}

TEST(ConstraintTest, MapPhaseIsSizedBeforeReducePhase) {
  AmSizingInput in = Job(100, 200);
  in.reduce_tasks = 10;
  AmSizingDecision d = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(d.tasks, 100);
  EXPECT_EQ(d.size, (AmResource{512, 1}));
  EXPECT_THAT(d.constraint_stage, HasSubstr("sized for the map phase (100 >= 10 reduces"));

  in.map_tasks = 10;  // an unusual job whose reduce phase is larger
  in.reduce_tasks = 150;
  d = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(d.tasks, 150);
  EXPECT_EQ(d.wave_size, 150);
  EXPECT_EQ(d.size, (AmResource{768, 2}));
  EXPECT_THAT(d.constraint_stage, HasSubstr("reduce phase (150) larger than map phase (10)"));
}

TEST(ConstraintTest, NoAmFitsIsFailedPrecondition) {
  AdaptContConfig c;
  c.user_am_caps["alice"] = {200, 1};  // below M0
  auto d = DecideAmSize(c, Job(10, 10));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("user cap for 'alice' of 200 MB"));

  c.user_am_caps["alice"] = {4096, 0};
  d = DecideAmSize(c, Job(10, 10));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(d.status().message(), HasSubstr("0 vcores"));
}

TEST(ConstraintTest, BadConfigIsInvalidArgument) {
  AdaptContConfig c;
  c.m0_mb = 0;
  auto d = DecideAmSize(c, Job(10, 10));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(d.status().message(), HasSubstr("AdaptContConfig.m0_mb"));
}

// ------------------------------------------------------------------------------ yarn-default

TEST(YarnDefaultTest, FixedSizeWhateverTheJob) {
  const AdaptContConfig c = Config(AdaptContMode::kYarnDefault);
  AmSizingInput in;
  for (int64_t tasks : {1, 160, 5000}) {
    in = Job(tasks, tasks);
    in.queue_am_limit = AmResource{512, 1};  // YARN's fixed AM ignores AdaptCont's ceilings
    const AmSizingDecision d = Decide(c, in);
    EXPECT_EQ(d.size, (AmResource{1024, 1}));
    EXPECT_EQ(d.max_running_tasks, kUnlimitedTasks);
  }
  const AmSizingDecision big = Decide(c, Job(5000, 5000));
  EXPECT_EQ(big.wave_size, 5000);
  EXPECT_GT(big.need_mb, 1024);  // under the model this AM fails
  EXPECT_THAT(big.decision_stage, HasSubstr("fails above 448 tasks at once"));

  in = Job(10, 10);
  in.cluster_max_allocation = {512, 4};
  auto d = DecideAmSize(c, in);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
}

// -------------------------------------------------------------------------------------- pool

TEST(PoolTest, ChoosesThePredefinedContainerForTheWave) {
  const AdaptContConfig c = Config(AdaptContMode::kPool);
  struct Case {
    int64_t wave;
    AmResource size;
    const char* name;
  };
  const Case cases[] = {
      {40, {512, 1}, "small"},     // dynamic 256 MB
      {128, {512, 1}, "small"},    // dynamic 512 MB
      {160, {1024, 2}, "medium"},  // dynamic 768 MB; small is for waves <= 128
      {400, {2048, 3}, "large"},   // dynamic 1792 MB
      {600, {2560, 5}, ""},        // no container covers a wave of 600: dynamic size
  };
  for (const Case& k : cases) {
    const AmSizingDecision d = Decide(c, Job(k.wave, k.wave));
    EXPECT_EQ(d.size, k.size) << "wave " << k.wave;
    EXPECT_EQ(d.pool_container, k.name) << "wave " << k.wave;
    EXPECT_EQ(d.dynamic_size, DynamicAmSize(k.wave, c)) << "wave " << k.wave;
  }
  EXPECT_THAT(Decide(c, Job(160, 160)).decision_stage,
              HasSubstr("pool: 'medium' (waves <= 256) is 256 MB from it"));
  EXPECT_THAT(Decide(c, Job(600, 600)).decision_stage,
              HasSubstr("new container of the dynamic size"));
}

TEST(PoolTest, ThresholdDecidesBetweenPoolAndNewContainer) {
  AdaptContConfig c = Config(AdaptContMode::kPool);
  c.pool_match_threshold_mb = 200;
  EXPECT_EQ(Decide(c, Job(40, 40)).size, (AmResource{256, 1}));    // small is 256 MB away
  EXPECT_EQ(Decide(c, Job(100, 100)).size, (AmResource{512, 1}));  // exact match
  EXPECT_EQ(Decide(c, Job(100, 100)).pool_container, "small");
  c.pool_match_threshold_mb = 256;
  EXPECT_EQ(Decide(c, Job(40, 40)).pool_container, "small");
}

TEST(PoolTest, NeverBelowNeedCeilingOrItsOwnWaveLimit) {
  AdaptContConfig c = Config(AdaptContMode::kPool);
  c.pool = {{"tiny", 200, 1, 1000}, {"huge", 8192, 8, 100000}};
  c.pool_match_threshold_mb = 100000;
  // tiny is offered for the wave but is below the need (328 MB for 100 tasks).
  AmSizingDecision d = Decide(c, Job(100, 100));
  EXPECT_EQ(d.pool_container, "huge");
  AmSizingInput in = Job(100, 100);
  in.queue_am_limit = AmResource{4096, 8};  // huge does not fit
  d = Decide(c, in);
  EXPECT_EQ(d.pool_container, "");
  EXPECT_EQ(d.size, (AmResource{512, 1}));
}

// ---------------------------------------------------------------------------------- feedback

TEST(FeedbackTest, MemoryFailureGrowsTheNextAttempt) {
  AmSizingInput in = Job(160, 160);
  in.previous_attempt = PreviousAttempt{{768, 2}, /*failed_for_memory=*/true};
  AmSizingDecision d = Decide(AdaptContConfig{}, in);
  EXPECT_TRUE(d.feedback_applied);
  EXPECT_FALSE(d.feedback_capped);
  EXPECT_EQ(d.size, (AmResource{1536, 3}));  // 768 x 2
  EXPECT_THAT(d.constraint_stage,
              HasSubstr("previous attempt killed over its memory limit at 768 MB -> next at "
                        "least 1536 MB"));
  EXPECT_THAT(d.decision_stage, HasSubstr("raised to 1536 MB after the memory failure"));

  // Other failures (node lost, preemption) do not grow it.
  in.previous_attempt->failed_for_memory = false;
  d = Decide(AdaptContConfig{}, in);
  EXPECT_FALSE(d.feedback_applied);
  EXPECT_EQ(d.size, (AmResource{768, 2}));

  // Factor 1: one M0 step.
  AdaptContConfig c;
  c.failure_growth_factor = 1.0;
  in.previous_attempt->failed_for_memory = true;
  EXPECT_EQ(Decide(c, in).size.memory_mb, 1024);
}

TEST(FeedbackTest, PoolMovesUpAfterAMemoryFailure) {
  AmSizingInput in = Job(40, 40);
  in.previous_attempt = PreviousAttempt{{512, 1}, true};
  const AmSizingDecision d = Decide(Config(AdaptContMode::kPool), in);
  EXPECT_EQ(d.pool_container, "medium");
  EXPECT_EQ(d.size, (AmResource{1024, 2}));
}

TEST(FeedbackTest, GrowthIsCappedByTheCeiling) {
  AmSizingInput in = Job(160, 160);
  in.cluster_max_allocation = {1280, 4};
  in.previous_attempt = PreviousAttempt{{768, 2}, true};
  AmSizingDecision d = Decide(AdaptContConfig{}, in);
  EXPECT_TRUE(d.feedback_capped);
  EXPECT_EQ(d.size.memory_mb, 1280);  // still grew, to the ceiling

  in.previous_attempt = PreviousAttempt{{1280, 3}, true};
  d = Decide(AdaptContConfig{}, in);
  EXPECT_TRUE(d.feedback_capped);
  EXPECT_EQ(d.size.memory_mb, 1280);
  EXPECT_THAT(d.decision_stage, HasSubstr("cannot grow"));
}

TEST(FeedbackTest, YarnDefaultRetriesTheSameSize) {
  AmSizingInput in = Job(1000, 1000);
  in.previous_attempt = PreviousAttempt{{1024, 1}, true};
  const AmSizingDecision d = Decide(Config(AdaptContMode::kYarnDefault), in);
  EXPECT_FALSE(d.feedback_applied);
  EXPECT_EQ(d.size, (AmResource{1024, 1}));
  EXPECT_THAT(d.constraint_stage, HasSubstr("yarn-default retries the same size"));
}

// The loop closes: when the real need is above the model's (the AM is killed over its limit),
// successive attempts grow strictly until one is big enough.
TEST(FeedbackTest, RepeatedFailuresConvergeOnTheRealNeed) {
  for (AdaptContMode mode : {AdaptContMode::kDynamic, AdaptContMode::kPool}) {
    const AdaptContConfig c = Config(mode);
    const AmMemoryModel real{.base_mb = 400, .per_task_kb = 8192};  // 4x the model's cost
    AmSizingInput in = Job(300, 300);
    int attempts = 1;
    AmSizingDecision d = Decide(c, in);
    while (!AmFitsWave(d.size.memory_mb, d.wave_size, real)) {
      ASSERT_LT(attempts, 6) << AdaptContModeName(mode);
      const int64_t before = d.size.memory_mb;
      in.previous_attempt = PreviousAttempt{d.size, true};
      d = Decide(c, in);
      ASSERT_GT(d.size.memory_mb, before) << d.Explanation();
      ++attempts;
    }
    EXPECT_GT(attempts, 1);
  }
}

TEST(FeedbackTest, LostNodesShrinkTheNextDecisions) {
  AmSizingInput in = Job(1000, 400);
  const AmSizingDecision before = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(before.size.memory_mb, 1792);  // ceil(400 / 64) = 7 x 256
  in.nodes_lost = 5;
  in.lost_containers = 40;
  const AmSizingDecision after = Decide(AdaptContConfig{}, in);
  EXPECT_EQ(after.wave_size, 360);
  EXPECT_EQ(after.size.memory_mb, 1536);
}

// ----------------------------------------------------------------------- whole-loop properties

// No AdaptCont-sized AM fails where a right-sized one (exactly its need) would succeed: for
// every wave whose need fits the ceiling, the decision covers the need and lets the AM run
// the whole wave at once; and it never exceeds the ceiling.
TEST(PropertyTest, DecisionsCoverTheNeedAndFitTheCeiling) {
  for (AdaptContMode mode : {AdaptContMode::kDynamic, AdaptContMode::kPool}) {
    for (AmMemoryModel model : {AmMemoryModel{}, AmMemoryModel{.base_mb = 500, .per_task_kb = 5000},
                                AmMemoryModel{.base_mb = 0, .per_task_kb = 0}}) {
      for (int64_t ceiling_mb : {int64_t{1} << 20, int64_t{3000}, int64_t{700}}) {
        AdaptContConfig c = Config(mode);
        c.am_memory_model = model;
        for (int64_t wave = 1; wave <= 1500; wave += 13) {
          AmSizingInput in = Job(wave, wave);
          in.queue_am_limit = AmResource{ceiling_mb, 64};
          auto d = DecideAmSize(c, in);
          if (!d.ok()) {
            // Only when even the smallest AM is above the ceiling.
            ASSERT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition);
            ASSERT_EQ(DynamicMaxWave(ceiling_mb, c), 0);
            continue;
          }
          ASSERT_LE(d->size.memory_mb, ceiling_mb) << d->Explanation();
          ASSERT_GE(d->size.memory_mb, AmMemoryNeedMb(d->wave_size, model)) << d->Explanation();
          ASSERT_TRUE(d->max_running_tasks == kUnlimitedTasks ||
                      d->max_running_tasks >= d->wave_size)
              << d->Explanation();
          if (AmMemoryNeedMb(wave, model) <= ceiling_mb && DynamicMaxWave(ceiling_mb, c) >= wave) {
            ASSERT_EQ(d->wave_size, wave) << d->Explanation();
          }
        }
      }
    }
  }
}

TEST(PropertyTest, DeterministicAndExplained) {
  AmSizingInput in = Job(0, 40);
  in.input_bytes = 10 * kGiB;
  in.reduce_tasks = 8;
  const AmSizingDecision a = Decide(Config(AdaptContMode::kPool), in);
  const AmSizingDecision b = Decide(Config(AdaptContMode::kPool), in);
  EXPECT_EQ(a.Explanation(), b.Explanation());
  EXPECT_THAT(a.Explanation(),
              HasSubstr("input 10 GiB / 64 MiB splits = 160 map tasks, 8 reduce tasks; 40 "
                        "containers free -> 4 waves of 40; constraints: ceiling"));
  EXPECT_THAT(a.Explanation(), HasSubstr("pool: 'small'"));
  const std::string inputs = FormatAmSizingInput(in);
  EXPECT_THAT(inputs, HasSubstr("user=alice"));
  EXPECT_THAT(inputs, HasSubstr("available_containers=40"));
  EXPECT_THAT(inputs, HasSubstr("previous_attempt=none"));
}

TEST(HeadroomTest, ContainersInHeadroomIsTheScarcerType) {
  EXPECT_EQ(ContainersInHeadroom(Resource::Of(10240, 6), Resource::Of(1024, 1)), 6);
  EXPECT_EQ(ContainersInHeadroom(Resource::Of(10240, 60), Resource::Of(1024, 1)), 10);
  EXPECT_EQ(ContainersInHeadroom(Resource::Of(10240, 0), Resource::Of(1024, 0)), 10);
  EXPECT_EQ(ContainersInHeadroom(Resource::Of(-5, 3), Resource::Of(1024, 1)), 0);
  EXPECT_EQ(ContainersInHeadroom(Resource::Of(4096, 4), Resource()), 0);
}

}  // namespace
}  // namespace weft::adaptcont
