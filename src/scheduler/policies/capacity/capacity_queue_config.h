// Copyright Weft authors. The queue keys the capacity policy owns in the scheduler
// configuration, and its parser for them (called by the core's queue parser through the
// registry's PolicyQueueKeys).
#ifndef WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_QUEUE_CONFIG_H_
#define WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_QUEUE_CONFIG_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "scheduler/config.h"

namespace weft::scheduler {

// Sets on `queue` the capacity keys in `given` (key -> scalar text): capacity,
// maximum-capacity and maximum-am-resource-percent (percentages in [0, 100]) and
// user-limit-factor (> 0); then checks that capacity is not above maximum-capacity (either
// given here or left at its default). `leaf` is not used: every key applies to any queue.
// Errors: InvalidArgument "<origin>: <path>.<key>: <what>", or
// "<origin>: <path>: capacity <c> is above maximum-capacity <m>".
absl::Status ParseCapacityQueueKeys(const std::map<std::string, std::string>& given, bool leaf,
                                    absl::string_view origin, absl::string_view path,
                                    QueueConfig* queue);

// {"capacity", {its keys}, &ParseCapacityQueueKeys}: the registry's entry for the policy.
PolicyQueueKeys CapacityQueueKeys();

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_CAPACITY_CAPACITY_QUEUE_CONFIG_H_
