// Copyright Weft authors. What router.cc and router_submission.cc share: the helpers that judge
// an RM's answer and a submission, and Router::ForwardCall. Internal to the router library.
#ifndef WEFT_FEDERATION_ROUTER_ROUTER_INTERNAL_H_
#define WEFT_FEDERATION_ROUTER_ROUTER_INTERNAL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "federation/router/router.h"
#include "google/protobuf/util/message_differencer.h"

namespace weft::federation {
namespace router_internal {

// The user's own mistake: trying another sub-cluster would not help.
inline bool IsCallersFault(absl::StatusCode code) {
  return code == absl::StatusCode::kInvalidArgument ||
         code == absl::StatusCode::kPermissionDenied || code == absl::StatusCode::kUnauthenticated;
}

// The RM did not answer (down, or its answer was lost): another sub-cluster may be tried. Any
// other error is the RM's answer about this id or submission.
inline bool RmDidNotAnswer(absl::StatusCode code) {
  return code == absl::StatusCode::kUnavailable || code == absl::StatusCode::kDeadlineExceeded;
}

// How many ids NewApplication asks one sub-cluster for when it hands out taken ones.
constexpr int kNewApplicationAsks = 3;

inline v1::ApplicationSubmissionContext WithoutTokens(const v1::ApplicationSubmissionContext& context) {
  v1::ApplicationSubmissionContext out = context;
  out.mutable_am_container_spec()->clear_tokens();
  return out;
}

// Whether two mappings hold the same submission by the same user (a retry), tokens aside.
inline bool SameSubmission(const v1::ApplicationHomeSubCluster& a,
                    const v1::ApplicationHomeSubCluster& b) {
  return a.user() == b.user() &&
         google::protobuf::util::MessageDifferencer::Equals(WithoutTokens(a.submission_context()),
                                                            WithoutTokens(b.submission_context()));
}

inline std::string Ids(const std::vector<v1::SubClusterInfo>& scs) {
  std::vector<std::string> ids;
  for (const auto& sc : scs) ids.push_back(sc.sub_cluster_id());
  return ids.empty() ? "none" : absl::StrJoin(ids, ",");
}

}  // namespace router_internal

template <typename Request, typename Response>
absl::StatusOr<Response> Router::ForwardCall(
    const v1::SubClusterInfo& sc, const std::string& user, const char* method,
    grpc::Status (v1::ClientService::Stub::*call)(grpc::ClientContext*, const Request&, Response*),
    const Request& request) {
  Response response;
  absl::Status s =
      Forward(sc, user, method, [&](v1::ClientService::Stub& stub, grpc::ClientContext* ctx) {
        response.Clear();
        return (stub.*call)(ctx, request, &response);
      });
  if (!s.ok()) return s;
  return response;
}

}  // namespace weft::federation

#endif  // WEFT_FEDERATION_ROUTER_ROUTER_INTERNAL_H_
