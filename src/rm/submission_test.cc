// Copyright Weft authors. Checks of what a client submits.
#include "rm/submission.h"

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

}  // namespace
}  // namespace weft::rm
