// Copyright Weft authors. The request bodies of YARN's ResourceManager REST API
// (hadoop-yarn-site ResourceManagerRest) decoded into Weft's protos: the other direction of
// web/yarn_json.h. Pure functions over the body text; every error is InvalidArgument naming the
// field, and the REST API answers it with 400.
#ifndef WEFT_WEB_YARN_JSON_DECODE_H_
#define WEFT_WEB_YARN_JSON_DECODE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "weft/v1/client.pb.h"

namespace weft::web {

// YARN's submission JSON (POST /ws/v1/cluster/apps) as a submission context. Accepted fields:
// application-id (required), application-name, queue, priority, max-app-attempts,
// application-type, resource {memory, vCores, and any Weft resource type by name},
// am-container-spec {commands {command: string or [argv]}, environment {entry: [{key, value}]}
// or {KEY: VALUE}}; unmanaged-AM and keep-containers-across-application-attempts only false;
// application-tags, log-aggregation-context, attempt-failures-validity-interval,
// reservation-id and am-black-listing-requests are checked for type and ignored; local-resources,
// credentials, service-data and application-acls only empty (Weft does not localize files).
// Errors: InvalidArgument naming the field ("resource.memory: expected an integer >= 0").
absl::StatusOr<v1::ApplicationSubmissionContext> ParseSubmission(absl::string_view body);

// The body of PUT /ws/v1/cluster/apps/{id}/state: {"state": "KILLED", "diagnostics": text}.
// Only KILLED is a valid target state (YARN's); the diagnostics are optional.
struct AppStateChange {
  std::string diagnostics;  // as given, at most 4096 bytes; "" when not given
};
absl::StatusOr<AppStateChange> ParseAppStateChange(absl::string_view body);

// Whether `id` is an application id: application_<digits>_<digits>, at most 64 characters.
bool IsApplicationId(absl::string_view id);

// Client text for an error message: quoted, printable (others become '?'), at most 64
// characters ("..." after).
std::string QuoteClientText(absl::string_view text);

}  // namespace weft::web

#endif  // WEFT_WEB_YARN_JSON_DECODE_H_
