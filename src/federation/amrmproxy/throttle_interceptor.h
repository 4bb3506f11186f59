// Copyright Weft authors. The AMRMProxy's throttle (seed 004, "Role of AMRMProxy" 1 and 3):
// protects the sub-cluster RMs from misbehaving AMs and enforces per-application quotas that no
// single sub-cluster RM could (each sees only part of the app's asks).
#ifndef WEFT_FEDERATION_AMRMPROXY_THROTTLE_INTERCEPTOR_H_
#define WEFT_FEDERATION_AMRMPROXY_THROTTLE_INTERCEPTOR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "federation/amrmproxy/interceptor.h"

namespace weft::amrmproxy {

// The rule, per attempt (ThrottleOptions; 0 = no limit):
//
// - Quota. The attempt's outstanding asks are its `*` asks (YARN's ANY level, whose count is
//   the total the RM will allocate at that priority): their container count and memory
//   (count x memory-mb) may not exceed max_outstanding_containers and
//   max_outstanding_memory_mb, and the count may not exceed what max_total_containers leaves
//   (that quota minus the containers allocated so far). Over a limit, the `*` asks are
//   trimmed, in priority order (most urgent first), to what fits; the RM is told the trimmed
//   counts, the AM gets one diagnostics line naming the limit, and the trimmed asks grow back
//   as room frees (containers complete are not counted back: max_total_containers is a life
//   quota). Node and rack asks pass unchanged: the `*` count bounds them.
// - Rate. Allocate calls are forwarded at most max_allocates_per_second (a token bucket of one
//   second's worth, at least one call). A call above the rate is not forwarded: its asks,
//   releases and blacklist changes are held and sent with the next forwarded call, and the AM
//   gets an empty reply with its own response_id (so its next call continues the sequence)
//   and a diagnostics line.
// - Persistence. A call that was trimmed or held is a violation; a call that is neither resets
//   the count. At max_violations consecutive violations the throttle finishes the attempt
//   FAILED through the rest of the chain (unregistering it from its RMs, so the app ends with
//   no new attempt: "killed") and answers that and every later Allocate with AM_SHUTDOWN.
class ThrottleInterceptor final : public RequestInterceptor {
 public:
  ThrottleInterceptor(const AttemptContext& attempt, ThrottleOptions options,
                      std::function<int64_t()> now_ms);

  absl::string_view name() const override { return "throttle"; }
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::RegisterApplicationMasterRequest& request) override;
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::AllocateRequest& request) override;
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::FinishApplicationMasterRequest& request) override;

  int32_t violations() const { return violations_; }
  bool killed() const { return killed_; }

 private:
  // Takes a rate token; false when the call is above the rate.
  bool TakeRateToken();
  // Rewrites `forward`'s `*` asks to the quota; returns the diagnostics line when it trimmed.
  std::optional<std::string> ApplyQuota(v1::AllocateRequest* forward,
                                        const std::map<std::string, bool>& asked_now);
  // The RM's bookkeeping: an allocation lowers the outstanding count of its `*` ask.
  void CountAllocations(const v1::AllocateResponse& response);
  absl::StatusOr<v1::AllocateResponse> Kill(const v1::AllocateRequest& request,
                                            const std::string& why);

  const AttemptContext attempt_;
  const ThrottleOptions options_;
  const std::function<int64_t()> now_ms_;

  // The AM's `*` asks as it last stated them (minus allocations since), and what the RM was
  // last told of each, by AskKey.
  std::map<std::string, v1::ResourceRequest> asked_;
  std::map<std::string, int32_t> forwarded_;
  int64_t allocated_total_ = 0;
  // What calls above the rate brought, for the next forwarded call.
  std::optional<v1::AllocateRequest> held_;
  double rate_tokens_ = 0;
  int64_t last_refill_ms_ = -1;
  int32_t violations_ = 0;
  bool killed_ = false;
  std::string kill_reason_;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_THROTTLE_INTERCEPTOR_H_
