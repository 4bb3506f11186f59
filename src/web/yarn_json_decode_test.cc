// YARN REST request bodies decoded: the state change body and the helpers routing shares.
// (ParseSubmission's cases are in rest_api_test.cc and rest_fuzz_test.cc.)
#include "web/yarn_json_decode.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::web {
namespace {

using ::testing::HasSubstr;

TEST(YarnJsonDecodeTest, AppStateChangeTakesKilledWithOptionalDiagnostics) {
  auto plain = ParseAppStateChange(R"({"state": "KILLED"})");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->diagnostics, "");
  auto with = ParseAppStateChange(R"({"state": "KILLED", "diagnostics": "done"})");
  ASSERT_TRUE(with.ok()) << with.status();
  EXPECT_EQ(with->diagnostics, "done");
  auto long_text = ParseAppStateChange(R"({"state": "KILLED", "diagnostics": ")" +
                                       std::string(5000, 'x') + R"("})");
  ASSERT_TRUE(long_text.ok()) << long_text.status();
  EXPECT_EQ(long_text->diagnostics.size(), 4096u);
}

TEST(YarnJsonDecodeTest, AppStateChangeRefusesOtherBodiesNamingTheProblem) {
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {"", "the request body is empty"},
           {"[1]", "expected an object"},
           {"{", "not valid JSON"},
           {R"({"state": "RUNNING"})",
            "Only 'KILLED' is allowed as a target state (got 'RUNNING')"},
           {R"({})", "Only 'KILLED' is allowed as a target state (got '')"},
           {R"({"state": 3})", "state: expected a string, got a JSON number"},
           {R"({"state": "KILLED", "why": "x"})", "unknown field 'why'"},
       }) {
    auto r = ParseAppStateChange(body);
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(message)) << body;
  }
}

TEST(YarnJsonDecodeTest, ApplicationIdsAndQuotedClientText) {
  EXPECT_TRUE(IsApplicationId("application_1700000000000_0001"));
  EXPECT_FALSE(IsApplicationId("application_17_"));
  EXPECT_FALSE(IsApplicationId("app_1_2"));
  EXPECT_FALSE(IsApplicationId("application_1_2_3"));
  EXPECT_EQ(QuoteClientText("a\nb"), "'a?b'");
  EXPECT_EQ(QuoteClientText(std::string(70, 'z')), "'" + std::string(64, 'z') + "...'");
}

}  // namespace
}  // namespace weft::web
