// Copyright Weft authors.
#include "security/secret_source.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace weft::security {
namespace {

TEST(OpenSslSecretSourceTest, GivesRequestedLengthAndDistinctBytes) {
  OpenSslSecretSource source;
  std::set<std::string> seen;
  for (int i = 0; i < 64; ++i) {
    absl::StatusOr<std::string> bytes = source.Generate(32);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    ASSERT_EQ(bytes->size(), 32u);
    // 64 draws of 256 bits: a repeat means the source is broken.
    EXPECT_TRUE(seen.insert(*bytes).second);
  }
  absl::StatusOr<std::string> empty = source.Generate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(FakeSecretSourceTest, SameSeedSameBytesDifferentSeedDifferentBytes) {
  FakeSecretSource a(7), b(7), c(8);
  const std::string a1 = *a.Generate(32);
  EXPECT_EQ(a1, *b.Generate(32));
  EXPECT_NE(a1, *c.Generate(32));
  EXPECT_NE(a1, *a.Generate(32));  // the stream advances
  EXPECT_EQ(a.Generate(13)->size(), 13u);
  EXPECT_EQ(a.calls(), 3);
}

TEST(FakeSecretSourceTest, FailNextFailsExactlyOnce) {
  FakeSecretSource source;
  source.FailNext(absl::UnavailableError("no entropy"));
  absl::StatusOr<std::string> failed = source.Generate(32);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(source.Generate(32).ok());

  source.FailNext(absl::OkStatus());  // an OK status still means "fail"
  EXPECT_EQ(source.Generate(32).status().code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace weft::security
