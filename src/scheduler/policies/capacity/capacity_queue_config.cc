// Copyright Weft authors.
#include "scheduler/policies/capacity/capacity_queue_config.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::scheduler {

absl::Status ParseCapacityQueueKeys(const std::map<std::string, std::string>& given, bool /*leaf*/,
                                    absl::string_view origin, absl::string_view path,
                                    QueueConfig* queue) {
  auto sub = [&](absl::string_view key) { return absl::StrCat(path, ".", key); };
  for (auto [key, field] :
       {std::pair{"capacity", &queue->capacity},
        std::pair{"maximum-capacity", &queue->maximum_capacity},
        std::pair{"maximum-am-resource-percent", &queue->maximum_am_resource_percent}}) {
    auto it = given.find(key);
    if (it == given.end()) continue;
    auto v = ConfigPercent(it->second, origin, sub(key));
    if (!v.ok()) return v.status();
    *field = *v;
  }
  if (queue->capacity > queue->maximum_capacity)
    return ConfigError(origin, path,
                       absl::StrCat("capacity ", queue->capacity, " is above maximum-capacity ",
                                    queue->maximum_capacity));
  if (auto it = given.find("user-limit-factor"); it != given.end()) {
    auto v = ConfigPositive(it->second, origin, sub("user-limit-factor"));
    if (!v.ok()) return v.status();
    queue->user_limit_factor = *v;
  }
  return absl::OkStatus();
}

PolicyQueueKeys CapacityQueueKeys() {
  return {"capacity",
          {"capacity", "maximum-capacity", "user-limit-factor", "maximum-am-resource-percent"},
          &ParseCapacityQueueKeys};
}

}  // namespace weft::scheduler
