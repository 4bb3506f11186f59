// Copyright Weft authors.
#include "common/ids.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(AppOfContainerTest, BothContainerIdSpellings) {
  EXPECT_EQ(AppOfContainer("container_e3_1700000000000_0007_01_000002"),
            "application_1700000000000_0007");
  EXPECT_EQ(AppOfContainer("container_1700000000000_0007_01_000002"),
            "application_1700000000000_0007");
}

TEST(AppOfContainerTest, AnythingElseIsNotAContainerId) {
  EXPECT_EQ(AppOfContainer(""), "");
  EXPECT_EQ(AppOfContainer("application_1700000000000_0007"), "");
  EXPECT_EQ(AppOfContainer("container_1700000000000_0007_01"), "");
  EXPECT_EQ(AppOfContainer("container_17x_0007_01_000002"), "");
  EXPECT_EQ(AppOfContainer("container_../../etc_1_2_3"), "");
}

}  // namespace
}  // namespace weft
