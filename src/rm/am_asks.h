// Copyright Weft authors. An AM's asks as the scheduling core takes them: the placement fields
// of a v1::ResourceRequest (allocation tags, placement constraint, node label, gang) checked
// and converted.
#ifndef WEFT_RM_AM_ASKS_H_
#define WEFT_RM_AM_ASKS_H_

#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "scheduler/types.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// The scheduler id of the live app named application_<ts>_<seq>; nullopt when none.
using SchedulerAppLookup = std::function<std::optional<scheduler::AppId>(const std::string&)>;

// The scheduler's form of ask #`index`, whose capability is already converted (`capability`).
// A constraint's app-id namespace may name the app as application_<ts>_<seq> (replaced by its
// scheduler id through `lookup`) or by its scheduler number. InvalidArgument, naming the ask,
// for a constraint that does not parse or names an unknown app.
absl::StatusOr<scheduler::ResourceRequest> ToSchedulerAsk(const v1::ResourceRequest& ask,
                                                          const Resource& capability, int index,
                                                          const SchedulerAppLookup& lookup);

}  // namespace weft::rm

#endif  // WEFT_RM_AM_ASKS_H_
