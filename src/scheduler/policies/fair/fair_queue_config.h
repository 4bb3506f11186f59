// Copyright Weft authors. The queue keys the fair policy owns in the scheduler configuration,
// and its parser for them (called by the core's queue parser through the registry's
// PolicyQueueKeys).
#ifndef WEFT_SCHEDULER_POLICIES_FAIR_FAIR_QUEUE_CONFIG_H_
#define WEFT_SCHEDULER_POLICIES_FAIR_FAIR_QUEUE_CONFIG_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "scheduler/config.h"

namespace weft::scheduler {

// Sets queue->max_am_share from `given`'s max-am-share (scalar text): a share in [0, 1], or -1
// for no limit. Leaf queues only: on a queue with children (`leaf` false) it is refused.
// Errors: InvalidArgument "<origin>: <path>.max-am-share: <what>".
absl::Status ParseFairQueueKeys(const std::map<std::string, std::string>& given, bool leaf,
                                absl::string_view origin, absl::string_view path,
                                QueueConfig* queue);

// {"fair", {"max-am-share"}, &ParseFairQueueKeys}: the registry's entry for the policy.
PolicyQueueKeys FairQueueKeys();

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_POLICIES_FAIR_FAIR_QUEUE_CONFIG_H_
