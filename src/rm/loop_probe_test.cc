// Copyright Weft authors. LoopProbe: the same work every time, on a table that stays its size.
#include "rm/loop_probe.h"

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

TEST(LoopProbeTest, EachRunIssuesItsTokensAndReplacesNamesInATableOfFixedSize) {
  LoopProbe probe;
  EXPECT_EQ(probe.names(), static_cast<size_t>(LoopProbe::kNames));
  int64_t total_ns = 0;
  for (int i = 0; i < 3; ++i) {
    const int64_t ns = probe.Run();
    EXPECT_GT(ns, 0);  // it took CPU time, measured on this thread
    total_ns += ns;
    // Names were replaced, not added: the table holds as many as before.
    EXPECT_EQ(probe.names(), static_cast<size_t>(LoopProbe::kNames));
  }
  // Every token was issued, each with its HMAC-SHA256 password.
  EXPECT_EQ(probe.password_bytes(),
            3 * LoopProbe::kTokens * static_cast<int64_t>(security::kTokenPasswordBytes));
  EXPECT_GT(total_ns, 0);
}

}  // namespace
}  // namespace weft::rm
