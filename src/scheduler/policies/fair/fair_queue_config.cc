// Copyright Weft authors.
#include "scheduler/policies/fair/fair_queue_config.h"

#include "absl/strings/str_cat.h"

namespace weft::scheduler {

absl::Status ParseFairQueueKeys(const std::map<std::string, std::string>& given, bool leaf,
                                absl::string_view origin, absl::string_view path,
                                QueueConfig* queue) {
  auto it = given.find("max-am-share");
  if (it == given.end()) return absl::OkStatus();
  const std::string key_path = absl::StrCat(path, ".max-am-share");
  auto v = ConfigShareOrNoLimit(it->second, origin, key_path);
  if (!v.ok()) return v.status();
  if (!leaf)
    return ConfigError(origin, key_path,
                       "applies to leaf queues only (set it on the children, or set "
                       "queue-max-am-share-default)");
  queue->max_am_share = *v;
  return absl::OkStatus();
}

PolicyQueueKeys FairQueueKeys() { return {"fair", {"max-am-share"}, &ParseFairQueueKeys}; }

}  // namespace weft::scheduler
