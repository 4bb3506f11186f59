// Copyright Weft authors. Checks and conversions of what a client submits: the parts of an
// ApplicationSubmissionContext that need more than a field check.
#ifndef WEFT_RM_SUBMISSION_H_
#define WEFT_RM_SUBMISSION_H_

#include <cstdint>

#include "absl/status/status.h"
#include "scheduler/types.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// The latest completion-time goal a profile may carry, ms since the Unix epoch: the end of
// the year 9999. Later ones are no goal a person means, and would overflow the ras policy's
// arithmetic.
inline constexpr int64_t kMaxCompletionGoalMs = 253402300799999;
// The longest expected task a phase may declare, ms (about 31 years).
inline constexpr int64_t kMaxExpectedTaskMs = 1'000'000'000'000;

// A submission's job profile (seed 003), as any client may send it: shares that are finite
// numbers in [0, 1] (not NaN or infinite), distinct priorities, a goal in
// [0, kMaxCompletionGoalMs] and task lengths in [0, kMaxExpectedTaskMs]. InvalidArgument
// naming the phase (its name C-escaped: it may hold anything), the field and the value.
absl::Status ValidateProfile(const v1::JobProfile& profile);

// The profile as the scheduling core takes it (0 in the proto means "unknown": -1 here).
JobProfile ToJobProfile(const v1::JobProfile& in);

// A submission's AM launch context: its command must name a program. InvalidArgument naming
// the field (am_container_spec.command) when it has no argv or when its program, argv[0], is
// empty or blank: every NM refuses such a launch ("empty command"), so the app could only
// fail attempt after attempt.
absl::Status ValidateAmContainerSpec(const v1::ContainerLaunchContext& spec);

}  // namespace weft::rm

#endif  // WEFT_RM_SUBMISSION_H_
