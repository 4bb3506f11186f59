// Copyright Weft authors.
#include "common/json_nesting.h"

#include <string>

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(JsonNestingTest, CountsArraysAndObjectsNotStrings) {
  EXPECT_EQ(JsonNestingDepth("", 10), 0);
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": []}]})", 10), 4);
  // Brackets in strings, also after escaped quotes and backslashes, do not count.
  EXPECT_EQ(JsonNestingDepth(R"({"a": "[[[{{{", "b": "\"[[[", "c": "\\"})", 10), 1);
  EXPECT_EQ(JsonNestingDepth(R"(["\\\"[[["])", 10), 1);
}

TEST(JsonNestingTest, StopsOnceAboveTheLimit) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_EQ(JsonNestingDepth(deep, 32), 33);
  EXPECT_EQ(JsonNestingDepth(deep, 1000000), 100000);
}

TEST(JsonNestingTest, ScannerReportsTheCloseOfTheOutermostValue) {
  JsonNestingScanner s;
  const std::string text = R"({"x": [1, "}"]} trailing)";
  size_t closed_at = std::string::npos;
  for (size_t i = 0; i < text.size(); ++i) {
    if (s.Feed(text[i])) {
      closed_at = i;
      break;
    }
  }
  EXPECT_EQ(closed_at, text.find("} trailing"));
  EXPECT_EQ(s.depth(), 0);
  EXPECT_EQ(s.max_depth(), 2);
  // Unbalanced input: a stray close lowers the depth, an unclosed open never reports a close.
  JsonNestingScanner u;
  EXPECT_FALSE(u.Feed('['));
  EXPECT_FALSE(u.Feed('{'));
  EXPECT_EQ(u.depth(), 2);
}

}  // namespace
}  // namespace weft
