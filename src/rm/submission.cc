// Copyright Weft authors.
#include "rm/submission.h"

#include <cmath>
#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace weft::rm {

absl::Status ValidateProfile(const v1::JobProfile& profile) {
  if (profile.completion_goal_ms() < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("profile: completion_goal_ms ", profile.completion_goal_ms(), " is negative"));
  if (profile.completion_goal_ms() > kMaxCompletionGoalMs)
    return absl::InvalidArgumentError(
        absl::StrCat("profile: completion_goal_ms ", profile.completion_goal_ms(),
                     " is after the year 9999 (at most ", kMaxCompletionGoalMs, ")"));
  std::set<int32_t> priorities;
  for (const v1::PhaseProfile& phase : profile.phases()) {
    const std::string name = absl::StrCat("profile phase '", absl::CEscape(phase.name()),
                                          "' (priority ", phase.priority(), ")");
    if (!priorities.insert(phase.priority()).second)
      return absl::InvalidArgumentError(absl::StrCat(name, ": another phase has that priority"));
    if (phase.expected_task_ms() < 0)
      return absl::InvalidArgumentError(absl::StrCat(
          name, ": expected_task_ms ", phase.expected_task_ms(), " is negative (0 = unknown)"));
    if (phase.expected_task_ms() > kMaxExpectedTaskMs)
      return absl::InvalidArgumentError(absl::StrCat(name, ": expected_task_ms ",
                                                     phase.expected_task_ms(), " is more than ",
                                                     kMaxExpectedTaskMs));
    for (auto [field, value] : {std::pair<const char*, double>{"cpu", phase.cpu()},
                                {"io", phase.io()},
                                {"memory", phase.memory()}}) {
      if (!std::isfinite(value))
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", field, " share ", value, " is not a finite number"));
      if (!(value >= 0 && value <= 1))
        return absl::InvalidArgumentError(
            absl::StrCat(name, ": ", field, " share ", value, " is not within [0, 1]"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAmContainerSpec(const v1::ContainerLaunchContext& spec) {
  if (spec.command().empty())
    return absl::InvalidArgumentError(
        "am_container_spec.command: empty AM command (no argv: nothing to run)");
  if (absl::StripAsciiWhitespace(spec.command(0)).empty())
    return absl::InvalidArgumentError(
        absl::StrCat("am_container_spec.command[0]: empty AM command (the program is blank: '",
                     absl::CEscape(spec.command(0).substr(0, 40)), "')"));
  return absl::OkStatus();
}

JobProfile ToJobProfile(const v1::JobProfile& in) {
  JobProfile out;
  out.goal_ms = in.completion_goal_ms() > 0 ? in.completion_goal_ms() : -1;
  for (const v1::PhaseProfile& p : in.phases()) {
    PhaseProfile phase;
    phase.priority = p.priority();
    phase.name = p.name();
    phase.kind = p.reduce_like() ? PhaseKind::kReduceLike : PhaseKind::kMapLike;
    phase.has_usage = p.has_usage();
    phase.usage = {p.cpu(), p.io(), p.memory()};
    phase.expected_task_ms = p.expected_task_ms() > 0 ? p.expected_task_ms() : -1;
    out.phases.push_back(std::move(phase));
  }
  return out;
}

}  // namespace weft::rm
