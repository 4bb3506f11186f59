// Copyright Weft authors.
#include "rm/am_asks.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/placement_constraint.h"

namespace weft::rm {

absl::StatusOr<scheduler::ResourceRequest> ToSchedulerAsk(const v1::ResourceRequest& ask,
                                                          const Resource& capability, int index,
                                                          const SchedulerAppLookup& lookup) {
  scheduler::ResourceRequest r{ask.priority(),   ask.resource_name(),      capability,
                               ask.num_containers(), ask.relax_locality(), ask.allocation_request_id()};
  r.allocation_tags.assign(ask.allocation_tags().begin(), ask.allocation_tags().end());
  r.node_label = ask.node_label_expression();
  r.gang = ask.gang();
  r.gang_timeout_ms = ask.gang_timeout_ms();
  r.gpu_same_group = ask.gpu_same_group();
  if (ask.placement_constraint().empty()) {
    if (ask.placement_soft())
      return absl::InvalidArgumentError(
          absl::StrCat("ask #", index, ": placement_soft without a placement_constraint"));
    return r;
  }
  // "app-id/application_<ts>_<seq>/" -> "app-id/<scheduler id>/".
  std::string text = ask.placement_constraint();
  const std::string marker = "app-id/application_";
  for (size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at)) {
    const size_t name_start = at + 7;
    const size_t slash = text.find('/', name_start);
    if (slash == std::string::npos) break;
    const std::string app = text.substr(name_start, slash - name_start);
    std::optional<scheduler::AppId> id = lookup(app);
    if (!id.has_value())
      return absl::InvalidArgumentError(absl::StrCat("ask #", index, ": placement constraint '",
                                                     ask.placement_constraint(),
                                                     "' names application ", app,
                                                     ", which is not running"));
    const std::string number = absl::StrCat(*id);
    text.replace(name_start, slash - name_start, number);
    at = name_start + number.size();
  }
  absl::StatusOr<scheduler::PlacementConstraint> c = scheduler::ParseConstraint(text);
  if (!c.ok())
    return absl::InvalidArgumentError(absl::StrCat("ask #", index, ": ", c.status().message()));
  r.has_constraint = true;
  r.constraint = *std::move(c);
  r.constraint_soft = ask.placement_soft();
  return r;
}

}  // namespace weft::rm
