// Copyright Weft authors. Checks of what a client submits.
#include "rm/submission.h"

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

v1::ContainerLaunchContext Command(std::initializer_list<const char*> argv) {
  v1::ContainerLaunchContext spec;
  for (const char* a : argv) spec.add_command(a);
  return spec;
}

TEST(SubmissionTest, AnAmCommandMustNameAProgram) {
  EXPECT_TRUE(ValidateAmContainerSpec(Command({"sleep 100"})).ok());
  EXPECT_TRUE(ValidateAmContainerSpec(Command({"/bin/echo", "", " "})).ok());  // empty arguments
  absl::Status none = ValidateAmContainerSpec(Command({}));
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.message(), HasSubstr("am_container_spec.command: empty AM command"));
  for (auto blank :
       {Command({"   "}), Command({""}), Command({" \t\n", "   "}), Command({"", "sleep 1"})}) {
    absl::Status s = ValidateAmContainerSpec(blank);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(s.message(), HasSubstr("am_container_spec.command[0]: empty AM command"));
  }
  EXPECT_THAT(ValidateAmContainerSpec(Command({" \t"})).message(), HasSubstr("blank: ' \\t'"));
}

// A hostile client bypasses the CLI's flag checks: the RM refuses what would break the
// scheduler's arithmetic, naming the field and the value.
TEST(SubmissionTest, AProfileNeedsFiniteSharesAndBoundedTimes) {
  v1::JobProfile ok;
  ok.set_completion_goal_ms(kMaxCompletionGoalMs);
  v1::PhaseProfile* map = ok.add_phases();
  map->set_name("map");
  map->set_priority(1);
  map->set_cpu(1);
  map->set_io(0);
  map->set_memory(0.5);
  map->set_expected_task_ms(kMaxExpectedTaskMs);
  EXPECT_TRUE(ValidateProfile(ok).ok());

  auto refused = [](const v1::JobProfile& p, absl::string_view want) {
    absl::Status s = ValidateProfile(p);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << want;
    EXPECT_THAT(s.message(), HasSubstr(std::string(want)));
  };
  const double kInf = std::numeric_limits<double>::infinity();
  const double kNan = std::numeric_limits<double>::quiet_NaN();
  for (auto [value, text] : {std::pair<double, const char*>{kInf, "cpu share inf"},
                             {-kInf, "cpu share -inf"},
                             {kNan, "cpu share nan"}}) {
    v1::JobProfile p = ok;
    p.mutable_phases(0)->set_cpu(value);
    refused(p, absl::StrCat("profile phase 'map' (priority 1): ", text, " is not a finite number"));
  }
  v1::JobProfile p = ok;
  p.mutable_phases(0)->set_memory(kNan);
  refused(p, "memory share nan is not a finite number");
  p = ok;
  p.mutable_phases(0)->set_io(-0.1);
  refused(p, "io share -0.1 is not within [0, 1]");

  p = ok;
  p.set_completion_goal_ms(kMaxCompletionGoalMs + 1);
  refused(p, "completion_goal_ms 253402300800000 is after the year 9999");
  p.set_completion_goal_ms(std::numeric_limits<int64_t>::max());
  refused(p, "completion_goal_ms 9223372036854775807 is after the year 9999");
  p.set_completion_goal_ms(-1);
  refused(p, "completion_goal_ms -1 is negative");

  p = ok;
  p.mutable_phases(0)->set_expected_task_ms(std::numeric_limits<int64_t>::max());
  refused(p, "expected_task_ms 9223372036854775807 is more than 1000000000000");
}

TEST(SubmissionTest, APhaseNameIsEscapedInErrors) {
  v1::JobProfile p;
  p.add_phases()->set_name("x\x1b[2J\nforged");
  p.mutable_phases(0)->set_cpu(2);
  absl::Status s = ValidateProfile(p);
  EXPECT_THAT(s.message(), HasSubstr("profile phase 'x\\033[2J\\nforged'"));
  EXPECT_EQ(s.message().find('\x1b'), absl::string_view::npos);
  EXPECT_EQ(s.message().find('\n'), absl::string_view::npos);
}

}  // namespace
}  // namespace weft::rm
