// Copyright Weft authors.
#include "common/dense_id_set.h"

#include <vector>

#include "gtest/gtest.h"

namespace weft {
namespace {

std::vector<int32_t> Ids(const DenseIdSet& s) {
  std::vector<int32_t> ids;
  s.ForEach([&](int32_t id) { ids.push_back(id); });
  return ids;
}

TEST(DenseIdSetTest, InsertsOnceAndListsInOrder) {
  DenseIdSet s;
  EXPECT_TRUE(s.empty());
  EXPECT_TRUE(s.insert(49999));
  EXPECT_TRUE(s.insert(0));
  EXPECT_TRUE(s.insert(63));
  EXPECT_TRUE(s.insert(64));
  EXPECT_FALSE(s.insert(63));  // already there
  EXPECT_EQ(s.size(), 4u);
  EXPECT_TRUE(s.contains(64));
  EXPECT_FALSE(s.contains(65));
  EXPECT_FALSE(s.contains(-1));
  EXPECT_FALSE(s.contains(1 << 30));  // beyond the bitmap
  EXPECT_EQ(Ids(s), (std::vector<int32_t>{0, 63, 64, 49999}));
}

TEST(DenseIdSetTest, ClearForgetsEverything) {
  DenseIdSet s;
  for (int32_t id = 0; id < 1000; id += 7) s.insert(id);
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_FALSE(s.contains(7));
  EXPECT_TRUE(Ids(s).empty());
  EXPECT_TRUE(s.insert(7));
  EXPECT_EQ(Ids(s), std::vector<int32_t>{7});
}

}  // namespace
}  // namespace weft
