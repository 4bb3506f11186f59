// Copyright Weft authors.
#include "common/yaml_util.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::yaml {
namespace {

using ::testing::HasSubstr;

TEST(YamlUtilTest, ScalarsConvertOrNameThePath) {
  YAML::Node n = *Load("a: 7\nb: seven\nc: [1, 2]\n", "f.yaml");
  EXPECT_EQ(*Scalar<int>(n["a"], "f.yaml", "a"), 7);
  absl::StatusOr<int> b = Scalar<int>(n["b"], "f.yaml", "x.b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().message(), "f.yaml: x.b: 'seven' is not a valid value");
  EXPECT_EQ(Scalar<int>(n["c"], "f.yaml", "c").status().message(),
            "f.yaml: c: expected a single value");
}

TEST(YamlUtilTest, UnknownKeysAreNamedWithTheAllowedOnes) {
  YAML::Node n = *Load("a: 1\nzz: 2\n", "o");
  EXPECT_TRUE(CheckKeys(n, {"a", "zz"}, "o", "top").ok());
  absl::Status s = CheckKeys(n, {"a", "b"}, "o", "top");
  EXPECT_EQ(s.message(), "o: top: unknown key 'zz' (allowed: a, b)");
  EXPECT_EQ(CheckKeys(n["a"], {"a"}, "o", "top.a").message(), "o: top.a: expected a mapping");
}

TEST(YamlUtilTest, AnEmptyOriginIsLeftOutAndBadYamlIsNamed) {
  EXPECT_EQ(Err("", "p", "bad").message(), "p: bad");
  absl::StatusOr<YAML::Node> bad = Load("a: [1, 2", "conf.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("conf.yaml: not valid YAML"));
}

}  // namespace
}  // namespace weft::yaml
