#include "adaptcont/am_memory_model.h"

#include <cstdint>
#include <limits>

#include "gtest/gtest.h"

namespace weft::adaptcont {
namespace {

TEST(AmMemoryModelTest, NeedIsBasePlusCostPerTaskRoundedUp) {
  const AmMemoryModel m;  // 128 MB + 2048 KiB per task
  EXPECT_EQ(AmMemoryNeedMb(0, m), 128);
  EXPECT_EQ(AmMemoryNeedMb(1, m), 130);
  EXPECT_EQ(AmMemoryNeedMb(64, m), 256);  // the default W0 needs exactly the default M0
  EXPECT_EQ(AmMemoryNeedMb(448, m), 1024);
  EXPECT_EQ(AmMemoryNeedMb(-5, m), 128);  // negative counts as 0

  const AmMemoryModel kb{.base_mb = 10, .per_task_kb = 1000};
  EXPECT_EQ(AmMemoryNeedMb(1, kb), 11);  // 1000 KiB rounds up to 1 MB
  EXPECT_EQ(AmMemoryNeedMb(3, kb), 13);  // 3000 KiB -> 2.93 MB -> 3 MB
}

TEST(AmMemoryModelTest, NeedSaturatesInsteadOfOverflowing) {
  const AmMemoryModel m{.base_mb = 1 << 20, .per_task_kb = 1 << 30};
  EXPECT_EQ(AmMemoryNeedMb(std::numeric_limits<int64_t>::max(), m),
            std::numeric_limits<int64_t>::max());
}

TEST(AmMemoryModelTest, TrackableIsTheInverseOfNeed) {
  const AmMemoryModel m;
  EXPECT_EQ(AmTasksTrackable(256, m), 64);
  EXPECT_EQ(AmTasksTrackable(255, m), 63);
  EXPECT_EQ(AmTasksTrackable(1024, m), 448);  // YARN's default AM under the default model
  EXPECT_EQ(AmTasksTrackable(129, m), 0);     // cannot track even one task
  EXPECT_EQ(AmTasksTrackable(64, m), 0);      // below the base
  for (const AmMemoryModel& model : {m, AmMemoryModel{.base_mb = 7, .per_task_kb = 1000},
                                     AmMemoryModel{.base_mb = 0, .per_task_kb = 3}}) {
    for (int64_t mem = model.base_mb; mem < 5000; mem += 7) {
      const int64_t t = AmTasksTrackable(mem, model);
      ASSERT_LE(AmMemoryNeedMb(t, model), mem) << "mem " << mem;
      ASSERT_GT(AmMemoryNeedMb(t + 1, model), mem) << "mem " << mem;
      EXPECT_TRUE(AmFitsWave(mem, t, model));
      EXPECT_FALSE(AmFitsWave(mem, t + 1, model));
    }
  }
}

TEST(AmMemoryModelTest, NoPerTaskCostTracksAnyNumberAboveTheBase) {
  const AmMemoryModel m{.base_mb = 100, .per_task_kb = 0};
  EXPECT_EQ(AmTasksTrackable(100, m), kUnlimitedTasks);
  EXPECT_EQ(AmTasksTrackable(99, m), 0);
  EXPECT_EQ(AmMemoryNeedMb(1'000'000, m), 100);
}

}  // namespace
}  // namespace weft::adaptcont
