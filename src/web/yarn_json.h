// Copyright Weft authors. The JSON objects of YARN's ResourceManager REST API
// (hadoop-yarn-site ResourceManagerRest), built from a ClusterSnapshot. Field names and types
// are YARN's, so existing scripts work; Weft's additions (network bandwidth, every resource
// type, AdaptCont and RAS details) are extra fields next to them, listed in docs/web.md.
#ifndef WEFT_WEB_YARN_JSON_H_
#define WEFT_WEB_YARN_JSON_H_

#include <string>

#include "absl/strings/string_view.h"
#include "common/ids.h"
#include "nlohmann/json.hpp"
#include "web/snapshot.h"

namespace weft::web {

using Json = nlohmann::json;

// Serializes without ever throwing: invalid UTF-8 in user-supplied text (app names,
// diagnostics) is replaced by U+FFFD.
std::string Dump(const Json& j);

// Weft's version ("0.1.0"), as clusterInfo reports it.
const char* WeftVersion();

// `http_address`: host:port of the RM's web server, for trackingUrl.
Json ClusterInfoJson(const ClusterSnapshot& s);
Json ClusterMetricsJson(const ClusterSnapshot& s);
Json SchedulerJson(const ClusterSnapshot& s);
Json AppJson(const ClusterSnapshot& s, const v1::ApplicationReport& app,
             absl::string_view http_address);
Json AppAttemptJson(const ClusterSnapshot& s, const v1::ApplicationReport& app,
                    const v1::ApplicationAttemptReport& attempt);
Json NodeJson(const ClusterSnapshot& s, const v1::NodeReport& node);
// Weft's GET /ws/v1/cluster/history: the samples taken after `since_ms` (docs/web.md).
Json ClusterHistoryJson(const ClusterSnapshot& s, int64_t since_ms);

// YARN's names of states are store/state_names.h's Reported*() ("RUNNING" for APP_RUNNING).

using ::weft::AppOfContainer;  // common/ids.h

// A resource type's amount in `r` (0 when absent).
int64_t ResourceValue(const v1::Resource& r, absl::string_view type);

}  // namespace weft::web

#endif  // WEFT_WEB_YARN_JSON_H_
