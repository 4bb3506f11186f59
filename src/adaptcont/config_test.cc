#include "adaptcont/config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::adaptcont {
namespace {

using ::testing::HasSubstr;

TEST(AdaptContConfigTest, DefaultsAreTheSeedsAndValid) {
  const AdaptContConfig c = DefaultAdaptContConfig();
  EXPECT_EQ(c.mode, AdaptContMode::kDynamic);
  EXPECT_EQ(c.m0_mb, 256);
  EXPECT_EQ(c.w0, 64);
  EXPECT_EQ(c.split_bytes, 64 << 20);
  EXPECT_EQ(c.yarn_default_am, (AmResource{1024, 1}));
  ASSERT_EQ(c.pool.size(), 3u);
  EXPECT_EQ(c.pool[0].memory_mb, 512);
  EXPECT_EQ(c.pool[0].vcores, 1);
  EXPECT_EQ(c.pool[1].memory_mb, 1024);
  EXPECT_EQ(c.pool[1].vcores, 2);
  EXPECT_EQ(c.pool[2].memory_mb, 2048);
  EXPECT_EQ(c.pool[2].vcores, 3);
  EXPECT_TRUE(ValidateAdaptContConfig(c).ok());
}

TEST(AdaptContConfigTest, ModeNamesRoundTrip) {
  for (AdaptContMode m :
       {AdaptContMode::kYarnDefault, AdaptContMode::kDynamic, AdaptContMode::kPool}) {
    auto parsed = ParseAdaptContMode(AdaptContModeName(m));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, m);
  }
  auto bad = ParseAdaptContMode("static");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("yarn-default, dynamic or pool"));
}

TEST(AdaptContConfigTest, ParsesEveryKey) {
  auto c = ParseAdaptContConfig(R"(
mode: pool
split-mb: 128
m0-mb: 512
w0: 100
yarn-default-am: {memory-mb: 1536, vcores: 1}
pool:
  - {name: s, memory-mb: 600, vcores: 1, max-wave: 50}
  - {name: l, memory-mb: 3000, vcores: 4, max-wave: 900}
pool-match-threshold-mb: 300
failure-growth-factor: 1.5
user-am-caps: {alice: {memory-mb: 2048, vcores: 2}}
default-user-am-cap: {memory-mb: 4096, vcores: 3}
am-memory-model: {base-mb: 200, per-task-kb: 512}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->mode, AdaptContMode::kPool);
  EXPECT_EQ(c->split_bytes, int64_t{128} << 20);
  EXPECT_EQ(c->m0_mb, 512);
  EXPECT_EQ(c->w0, 100);
  EXPECT_EQ(c->yarn_default_am, (AmResource{1536, 1}));
  ASSERT_EQ(c->pool.size(), 2u);
  EXPECT_EQ(c->pool[1].name, "l");
  EXPECT_EQ(c->pool[1].memory_mb, 3000);
  EXPECT_EQ(c->pool[1].vcores, 4);
  EXPECT_EQ(c->pool[1].max_wave, 900);
  EXPECT_EQ(c->pool_match_threshold_mb, 300);
  EXPECT_DOUBLE_EQ(c->failure_growth_factor, 1.5);
  ASSERT_EQ(c->user_am_caps.count("alice"), 1u);
  EXPECT_EQ(c->user_am_caps.at("alice"), (AmResource{2048, 2}));
  ASSERT_TRUE(c->default_user_am_cap.has_value());
  EXPECT_EQ(*c->default_user_am_cap, (AmResource{4096, 3}));
  EXPECT_EQ(c->am_memory_model.base_mb, 200);
  EXPECT_EQ(c->am_memory_model.per_task_kb, 512);
}

TEST(AdaptContConfigTest, EmptyTextGivesDefaults) {
  auto c = ParseAdaptContConfig("");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->m0_mb, 256);
  EXPECT_EQ(c->pool.size(), 3u);
}

void ExpectParseError(const std::string& yaml, const std::string& fragment) {
  auto c = ParseAdaptContConfig(yaml, "ac.yaml");
  ASSERT_FALSE(c.ok()) << yaml;
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << yaml;
  EXPECT_THAT(c.status().message(), HasSubstr(fragment)) << yaml;
  EXPECT_THAT(c.status().message(), HasSubstr("ac.yaml")) << yaml;
}

TEST(AdaptContConfigTest, ErrorsNameTheKey) {
  ExpectParseError("m0: 256", "unknown key 'm0'");
  ExpectParseError("mode: static", "mode: unknown AM sizing mode 'static'");
  ExpectParseError("m0-mb: 0", "m0-mb: 0 must be > 0");
  ExpectParseError("w0: -3", "w0: -3 must be > 0");
  ExpectParseError("w0: many", "w0: 'many' is not a valid value");
  ExpectParseError("split-mb: 0", "split-mb: 0 must be > 0");
  ExpectParseError("pool: []", "pool: expected a non-empty list");
  ExpectParseError(
      "pool: [{name: a, memory-mb: 1, vcores: 1, max-wave: 1},"
      " {name: b, memory-mb: -5, vcores: 1, max-wave: 1}]",
      "pool[1].memory-mb: -5 must be > 0");
  ExpectParseError(
      "pool: [{name: a, memory-mb: 1, vcores: 1, max-wave: 1},"
      " {name: a, memory-mb: 2, vcores: 1, max-wave: 1}]",
      "pool[1].name: 'a' is used twice");
  ExpectParseError("pool: [{name: a, memory-mb: 1, vcores: 1}]", "pool[0]: missing key 'max-wave'");
  ExpectParseError("pool-match-threshold-mb: -1", "pool-match-threshold-mb: -1 must be >= 0");
  ExpectParseError("failure-growth-factor: 0.5", "failure-growth-factor: 0.5 must be in [1, 1024]");
  ExpectParseError("user-am-caps: {bob: {memory-mb: 10}}", "user-am-caps.bob: needs both");
  ExpectParseError("user-am-caps: {bob: {memory-mb: -1, vcores: 1}}",
                   "user-am-caps.bob.memory-mb: -1 must be >= 0");
  ExpectParseError("am-memory-model: {base: 1}", "am-memory-model: unknown key 'base'");
  ExpectParseError("yarn-default-am: {memory-mb: 0, vcores: 1}",
                   "yarn-default-am.memory-mb: 0 must be > 0");
  ExpectParseError("mode: [a, b]", "mode: expected a single value");
  ExpectParseError("m0-mb: [1", "invalid YAML");
  ExpectParseError("- 1\n- 2", "expected a mapping");
}

TEST(AdaptContConfigTest, ValidateNamesTheField) {
  AdaptContConfig c;
  c.w0 = 0;
  absl::Status s = ValidateAdaptContConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("w0: 0 must be > 0"));

  c = AdaptContConfig{};
  c.pool[2].vcores = 0;
  EXPECT_THAT(ValidateAdaptContConfig(c).message(), HasSubstr("pool[2].vcores: 0 must be > 0"));

  c = AdaptContConfig{};
  c.mode = AdaptContMode::kPool;
  c.pool.clear();
  EXPECT_THAT(ValidateAdaptContConfig(c).message(), HasSubstr("pool: must not be empty"));

  c = AdaptContConfig{};
  c.failure_growth_factor = 0.99;
  EXPECT_THAT(ValidateAdaptContConfig(c).message(), HasSubstr("failure_growth_factor"));

  c = AdaptContConfig{};
  c.user_am_caps["eve"] = {-1, 1};
  EXPECT_THAT(ValidateAdaptContConfig(c).message(), HasSubstr("user_am_caps[eve].memory_mb"));

  c = AdaptContConfig{};
  c.am_memory_model.per_task_kb = -1;
  EXPECT_THAT(ValidateAdaptContConfig(c).message(), HasSubstr("am_memory_model.per_task_kb"));
}

TEST(AdaptContConfigTest, MissingFileIsNotFound) {
  auto c = LoadAdaptContConfigFile("/nonexistent/adaptcont.yaml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace weft::adaptcont
