// Copyright Weft authors. Helpers shared by the scheduler core's implementation files only.
#ifndef WEFT_SCHEDULER_SCHEDULER_INTERNAL_H_
#define WEFT_SCHEDULER_SCHEDULER_INTERNAL_H_

#include "absl/strings/string_view.h"

namespace weft::scheduler::internal {

// Rack names start with '/' ("/default-rack"); anything else in a request names a host.
inline bool IsRackName(absl::string_view name) { return !name.empty() && name[0] == '/'; }

}  // namespace weft::scheduler::internal

#endif  // WEFT_SCHEDULER_SCHEDULER_INTERNAL_H_
