// Copyright Weft authors. RaiseOpenFilesLimit.
#include "common/open_files.h"

#include <sys/resource.h>

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(OpenFilesTest, TheSoftLimitRisesToTheHardOne) {
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  if (before.rlim_max != RLIM_INFINITY && before.rlim_max < 64)
    GTEST_SKIP() << "hard open files limit " << before.rlim_max << " leaves no room to lower";
  rlimit lowered = before;
  lowered.rlim_cur = 32;  // below the hard limit, so there is something to raise
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
  absl::StatusOr<OpenFilesLimit> raised = RaiseOpenFilesLimit();
  ASSERT_TRUE(raised.ok()) << raised.status();
  rlimit after{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &after), 0);
  EXPECT_EQ(after.rlim_cur, before.rlim_max);
  EXPECT_EQ(raised->soft, raised->hard);
  if (before.rlim_max != RLIM_INFINITY) {
    EXPECT_EQ(raised->hard, before.rlim_max);
  }
  // A second call changes nothing.
  absl::StatusOr<OpenFilesLimit> again = RaiseOpenFilesLimit();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->soft, raised->soft);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
}

}  // namespace
}  // namespace weft
