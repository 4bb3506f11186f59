// Copyright Weft authors. What the client commands share for human output: tables and errors
// escaped for the terminal, floating-point flags that must be finite.
#include "cli/cli_common.h"

#include <algorithm>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;

TEST(CliCommonTest, PrintTableEscapesEveryCell) {
  testing::internal::CaptureStdout();
  PrintTable({{"APPLICATION-ID", "NAME", "USER"},
              {"application_1_0001", "x\x1b[2J\napplication_1_0002  forged", "mallory"},
              {"application_1_0003", "ok", "bob\tby\\tab"}});
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  EXPECT_EQ(out.find('\t'), std::string::npos);
  // Three rows, no forged fourth; columns widened by the escaped text, not the raw one.
  EXPECT_EQ(out,
            "APPLICATION-ID      NAME                                  USER\n"
            "application_1_0001  x\\x1b[2J\\napplication_1_0002  forged  mallory\n"
            "application_1_0003  ok                                    bob\\tby\\\\tab\n");
}

TEST(CliCommonTest, PrintErrorIsOneEscapedLine) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(PrintError("unknown queue 'a\x1b]0;title\x07\nweft: forged'"), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "weft: unknown queue 'a\\x1b]0;title\\x07\\nweft: forged'\n");
}

TEST(CliCommonTest, CheckFiniteNumberRefusesInfNanAndOutOfRange) {
  EXPECT_TRUE(CheckFiniteNumber("0", "seconds", 0, kMaxFlagSeconds).ok());
  EXPECT_TRUE(CheckFiniteNumber("12.5", "seconds", 0, kMaxFlagSeconds).ok());
  EXPECT_TRUE(CheckFiniteNumber("1e9", "seconds", 0, kMaxFlagSeconds).ok());
  EXPECT_TRUE(CheckFiniteNumber("-0.5", "", -1, 1).ok());
  auto message = [](absl::string_view text, absl::string_view unit, double min, double max) {
    absl::Status s = CheckFiniteNumber(text, unit, min, max);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
    return std::string(s.message());
  };
  for (const char* text : {"inf", "INF", "-inf", "infinity", "nan", "NaN", "-nan", "1e400"})
    EXPECT_EQ(message(text, "seconds", 0, kMaxFlagSeconds),
              absl::StrCat("'", text, "' is not a finite number of seconds"));
  EXPECT_EQ(message("nan", "", 0, 1), "'nan' is not a finite number");
  EXPECT_EQ(message("-1", "seconds", 0, kMaxFlagSeconds), "'-1' is negative");
  EXPECT_EQ(message("1e10", "seconds", 0, kMaxFlagSeconds),
            "'1e10' is more than 1000000000 seconds");
  EXPECT_EQ(message("1.5", "", 0, 1), "'1.5' is more than 1");
  EXPECT_EQ(message("-2", "", -1, 1), "'-2' is less than -1");
  EXPECT_EQ(message("", "MB", 0, 1), "'' is not a number of MB");
  EXPECT_EQ(message("12abc", "MB", 0, 1e12), "'12abc' is not a number of MB");
  // The text is shown escaped.
  EXPECT_EQ(message("\x1b[2J", "MB", 0, 1), "'\\x1b[2J' is not a number of MB");
}

TEST(CliCommonTest, FiniteNumberValidatorNamesTheFlag) {
  CLI::App app;
  double goal_s = 0;
  app.add_option("--goal-s", goal_s)->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  for (const char* value : {"inf", "nan"}) {
    std::vector<std::string> args = {"--goal-s", value};
    std::reverse(args.begin(), args.end());  // CLI11 takes argv's vector reversed
    try {
      app.parse(args);
      ADD_FAILURE() << "--goal-s " << value << " accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_EQ(std::string(e.what()),
                absl::StrCat("--goal-s: '", value, "' is not a finite number of seconds"));
    }
    app.clear();
  }
  std::vector<std::string> args = {"30", "--goal-s"};
  app.parse(args);
  EXPECT_EQ(goal_s, 30);
}

TEST(CliCommonTest, HttpLimitFlagsSetTheLimitsAndRefuseBadValuesNamingTheFlag) {
  CLI::App app;
  web::HttpLimits limits;
  AddHttpLimitFlags(&app, &limits);
  std::vector<std::string> args = {"--http-max-connections-per-ip", "0",
                                   "--http-idle-timeout-ms",        "250",
                                   "--http-max-connections",        "1000"};
  std::reverse(args.begin(), args.end());  // CLI11 takes argv's vector reversed
  app.parse(args);
  EXPECT_EQ(limits.max_connections_per_ip, 0);  // no per-address limit
  EXPECT_EQ(limits.idle_timeout_ms, 250);
  EXPECT_EQ(limits.max_connections, 1000);
  EXPECT_EQ(limits.header_timeout_ms, web::HttpLimits{}.header_timeout_ms);  // default
  for (const char* flag : {"--http-max-connections", "--http-header-timeout-ms",
                           "--http-body-timeout-ms", "--http-write-timeout-ms"}) {
    app.clear();
    std::vector<std::string> bad = {"0", flag};
    try {
      app.parse(bad);
      ADD_FAILURE() << flag << " 0 accepted";
    } catch (const CLI::ValidationError& e) {
      EXPECT_THAT(std::string(e.what()), HasSubstr(absl::StrCat(flag, ": Value 0 not in range 1")));
    }
  }
}

}  // namespace
}  // namespace weft::cli
