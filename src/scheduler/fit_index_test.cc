#include "scheduler/fit_index.h"

#include <random>

#include "gtest/gtest.h"

namespace weft::scheduler {
namespace {

TEST(FitIndexTest, FindsFirstFitFromAPositionAndWraps) {
  FitIndex idx;
  for (int i = 0; i < 5; ++i) idx.AddSlot();
  idx.Set(0, Resource::Of(1024, 1));
  idx.Set(1, Resource::Of(4096, 1));
  idx.Set(2, Resource::Of(1024, 8));
  idx.Set(3, Resource::Of(4096, 4));
  idx.Set(4, Resource::Of(512, 1));
  Resource want = Resource::Of(2048, 2);
  EXPECT_EQ(idx.FindFrom(want, 0), 3);  // 1 fits memory only, 2 vcores only
  EXPECT_EQ(idx.FindFrom(want, 4), 3);  // wraps around
  EXPECT_EQ(idx.FindFrom(Resource::Of(1024, 1), 4), 0);
  EXPECT_EQ(idx.FindFrom(Resource::Of(8192, 1), 0), -1);
  idx.Set(3, FitIndex::Blocked());
  EXPECT_EQ(idx.FindFrom(want, 0), -1);
  EXPECT_EQ(idx.FindFrom(Resource(), 0), 0);  // a zero request fits any live slot
}

TEST(FitIndexTest, AgreesWithALinearScan) {
  std::mt19937_64 rng(42);
  FitIndex idx;
  std::vector<Resource> free;
  for (int i = 0; i < 300; ++i) {
    idx.AddSlot();
    Resource r = Resource::Of(static_cast<int64_t>(rng() % 16) * 512,
                              static_cast<int64_t>(rng() % 8), static_cast<int64_t>(rng() % 100));
    free.push_back(r);
    idx.Set(i, r);
  }
  for (int trial = 0; trial < 2000; ++trial) {
    int slot = static_cast<int>(rng() % free.size());
    free[slot] = Resource::Of(static_cast<int64_t>(rng() % 16) * 512,
                              static_cast<int64_t>(rng() % 8), static_cast<int64_t>(rng() % 100));
    idx.Set(slot, free[slot]);
    Resource want =
        Resource::Of(static_cast<int64_t>(rng() % 16) * 512, static_cast<int64_t>(rng() % 8),
                     static_cast<int64_t>(rng() % 100));
    int from = static_cast<int>(rng() % free.size());
    int expected = -1;
    for (size_t k = 0; k < free.size(); ++k) {
      int i = static_cast<int>((from + k) % free.size());
      if (want.FitsIn(free[i])) {
        expected = i;
        break;
      }
    }
    ASSERT_EQ(idx.FindFrom(want, from), expected) << "trial " << trial;
  }
}

}  // namespace
}  // namespace weft::scheduler
