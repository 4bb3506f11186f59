// Copyright Weft authors.
#include "common/errors.h"

#include <errno.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft {
namespace {

using ::testing::HasSubstr;

TEST(ErrnoCodeTest, MapsTheUsualErrnoValues) {
  EXPECT_EQ(ErrnoCode(ENOENT), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoCode(ENOTDIR), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoCode(ESRCH), absl::StatusCode::kNotFound);
  EXPECT_EQ(ErrnoCode(EACCES), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoCode(EPERM), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoCode(EROFS), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoCode(EEXIST), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrnoCode(EINVAL), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ErrnoCode(ENOSPC), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoCode(EDQUOT), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoCode(EMFILE), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ErrnoCode(EAGAIN), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoCode(EINTR), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoCode(EBUSY), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ErrnoCode(EISDIR), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ErrnoCode(ETIMEDOUT), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(ErrnoCode(EIO), absl::StatusCode::kDataLoss);
}

TEST(ErrnoCodeTest, NeverOkNorUnknown) {
  EXPECT_EQ(ErrnoCode(0), absl::StatusCode::kInternal);
  EXPECT_EQ(ErrnoCode(100000), absl::StatusCode::kInternal);
}

TEST(ErrnoErrorTest, NamesWhatFailedAndWhy) {
  const absl::Status s = ErrnoError(ENOENT, "opening '/nowhere'");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "opening '/nowhere': No such file or directory");
  EXPECT_EQ(ErrnoMessage(EACCES, "x"), "x: Permission denied");
  EXPECT_FALSE(ErrnoError(0, "nothing failed?").ok());
  EXPECT_THAT(std::string(ErrnoError(100000, "odd").message()), HasSubstr("odd: "));
}

TEST(CheckOrDieTest, PassesOrAbortsWithTheMessage) {
  CheckOrDie(true, "not shown");
  EXPECT_DEATH(CheckOrDie(false, "the invariant"), "weft: check failed: the invariant");
}

}  // namespace
}  // namespace weft
