// Copyright Weft authors. The last step of the AMRMProxy without federation (YARN's
// DefaultRequestInterceptor): forwards every call to the home RM with the real AMRM token.
#ifndef WEFT_FEDERATION_AMRMPROXY_DEFAULT_INTERCEPTOR_H_
#define WEFT_FEDERATION_AMRMPROXY_DEFAULT_INTERCEPTOR_H_

#include "federation/amrmproxy/interceptor.h"

namespace weft::amrmproxy {

// Transparent: requests and replies pass unchanged (response ids included, so the RM's
// retry and resync semantics reach the AM as they are), except that a rolled AMRM token in an
// Allocate reply is kept here and taken out of the reply: the AM keeps its proxy token. The
// RM address list is followed as every RM client does (SubClusterRpc).
class DefaultInterceptor final : public RequestInterceptor {
 public:
  // `store` (may be null) gets the attempt again when the RM rolls its token.
  DefaultInterceptor(const AttemptContext& attempt, SubClusterRpc* rpc,
                     AmrmProxyStateStore* store = nullptr);

  absl::string_view name() const override { return "default"; }
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::RegisterApplicationMasterRequest& request) override;
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::AllocateRequest& request) override;
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::FinishApplicationMasterRequest& request) override;
  // Forgets the attempt's record (it holds nothing else).
  void Shutdown(AttemptEnd) override;
  // Takes up the RM's current token.
  void Recover(const AttemptState& state) override;

  // The real token the RM knows the attempt by now (after rolls).
  const v1::Token& amrm_token() const { return token_; }

 private:
  const AttemptContext attempt_;
  const std::string rm_;
  SubClusterRpc* const rpc_;
  AmrmProxyStateStore* const store_;
  v1::Token token_;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_DEFAULT_INTERCEPTOR_H_
