// Copyright Weft authors.
#include "federation/amrmproxy/default_interceptor.h"

namespace weft::amrmproxy {

DefaultInterceptor::DefaultInterceptor(const AttemptContext& attempt, SubClusterRpc* rpc)
    : rm_(attempt.home_rm_address), rpc_(rpc), token_(attempt.amrm_token) {}

absl::StatusOr<v1::RegisterApplicationMasterResponse> DefaultInterceptor::RegisterApplicationMaster(
    const v1::RegisterApplicationMasterRequest& request) {
  return rpc_->RegisterApplicationMaster(rm_, token_, request);
}

absl::StatusOr<v1::AllocateResponse> DefaultInterceptor::Allocate(
    const v1::AllocateRequest& request) {
  absl::StatusOr<v1::AllocateResponse> response = rpc_->Allocate(rm_, token_, request);
  if (response.ok() && response->has_amrm_token()) {
    token_ = response->amrm_token();  // the RM rolled its key
    response->clear_amrm_token();
  }
  return response;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> DefaultInterceptor::FinishApplicationMaster(
    const v1::FinishApplicationMasterRequest& request) {
  return rpc_->FinishApplicationMaster(rm_, token_, request);
}

}  // namespace weft::amrmproxy
