// Copyright Weft authors.
#include "federation/amrmproxy/default_interceptor.h"

#include "common/log.h"
#include "federation/amrmproxy/amrm_proxy_state.h"

namespace weft::amrmproxy {

DefaultInterceptor::DefaultInterceptor(const AttemptContext& attempt, SubClusterRpc* rpc,
                                       AmrmProxyStateStore* store)
    : attempt_(attempt),
      rm_(attempt.home_rm_address),
      rpc_(rpc),
      store_(store),
      token_(attempt.amrm_token) {}

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
    if (store_ != nullptr) {
      AttemptState state;
      state.attempt = attempt_;
      state.attempt.amrm_token = token_;
      state.registered = true;
      if (absl::Status s = store_->PutAttempt(state); !s.ok()) {
        log::Error("amrmproxy_state_write_failed",
                   {{"attempt", attempt_.attempt_id}, {"error", s}});
      }
    }
  }
  return response;
}

absl::StatusOr<v1::FinishApplicationMasterResponse> DefaultInterceptor::FinishApplicationMaster(
    const v1::FinishApplicationMasterRequest& request) {
  return rpc_->FinishApplicationMaster(rm_, token_, request);
}

void DefaultInterceptor::Shutdown(AttemptEnd) {
  if (store_ == nullptr) return;
  if (absl::Status s = store_->RemoveAttempt(attempt_.attempt_id); !s.ok()) {
    log::Error("amrmproxy_state_write_failed", {{"attempt", attempt_.attempt_id}, {"error", s}});
  }
}

void DefaultInterceptor::Recover(const AttemptState& state) {
  token_ = state.attempt.amrm_token;
}

}  // namespace weft::amrmproxy
