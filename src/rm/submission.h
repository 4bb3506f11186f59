// Copyright Weft authors. Checks and conversions of what a client submits: the parts of an
// ApplicationSubmissionContext that need more than a field check.
#ifndef WEFT_RM_SUBMISSION_H_
#define WEFT_RM_SUBMISSION_H_

#include "absl/status/status.h"
#include "scheduler/types.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// A submission's job profile (seed 003): shares in [0, 1], distinct priorities, a goal and
// task lengths that are not negative. The error names the phase and field.
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
