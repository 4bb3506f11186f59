// Copyright Weft authors. The unmanaged AMs an attempt runs in its secondary sub-clusters
// (YARN's UnmanagedAMPoolManager, seed 004 step 8): the AMRMProxy impersonates the AM there by
// submitting an app with unmanaged_am = true as the app's user, under the home app's id (as
// YARN's FederationInterceptor does: one app, one id, federation-wide), and registering it with
// the AMRM token that sub-cluster's RM issues. Each sub-cluster signs its own tokens: no
// cluster-wide secret.
#ifndef WEFT_FEDERATION_AMRMPROXY_UNMANAGED_AM_POOL_H_
#define WEFT_FEDERATION_AMRMPROXY_UNMANAGED_AM_POOL_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "federation/amrmproxy/amrm_proxy_state.h"
#include "federation/amrmproxy/interceptor.h"

namespace weft::amrmproxy {

// One unmanaged AM in one secondary sub-cluster.
struct UnmanagedAm {
  std::string sub_cluster_id;
  std::string rm;              // its RM address list
  std::string application_id;  // the home app's id once submitted there; "" before
  v1::Token amrm_token;        // that RM's token for the UAM's attempt (kept current)
  bool registered = false;
  bool finished = false;
  int64_t retry_after_ms = 0;  // a launch failed: not tried again before this (ms)
};

// Thread-safety: GetOrAdd(), KillUnfinished() and uams() from one thread at a time; Launch()
// and Finish() of different UAMs may run in parallel (each touches only its own UnmanagedAm).
class UnmanagedAmPool {
 public:
  // How many GetApplication polls wait for the UAM's token, and the wait between them (ms,
  // doubling up to 200).
  static constexpr int kReportPolls = 40;
  static constexpr int64_t kFirstPollWaitMs = 10;
  // After a failed launch, the sub-cluster is left alone this long, ms.
  static constexpr int64_t kLaunchRetryMs = 5000;

  // `home_sub_cluster_id`: the app's home, named in each UAM's submission.
  UnmanagedAmPool(const AttemptContext& attempt, std::string home_sub_cluster_id,
                  SubClusterRpc* rpc, std::function<int64_t()> now_ms,
                  std::function<void(int64_t)> sleep_ms);

  // The UAM of `sub_cluster_id` (created, not launched, when new). The reference stays valid.
  UnmanagedAm& GetOrAdd(const std::string& sub_cluster_id, const std::string& rm);

  // Makes `uam` registered: SubmitApplication under the home app's id (unmanaged, `queue`,
  // `name`, one attempt, federation_home_sub_cluster_id = the home; AlreadyExists is taken as
  // submitted: a retry, or the UAM of an earlier attempt) unless it was submitted before,
  // GetApplication until the report carries the AMRM token, then RegisterApplicationMaster with
  // `registration`. Its answer is returned (a UAM registered again lists its live containers
  // in containers_from_previous_attempts); an empty one when `uam` was registered already.
  // Errors name the sub-cluster and step; FailedPrecondition while the retry wait of an
  // earlier failure runs, or once the UAM has ended.
  absl::StatusOr<v1::RegisterApplicationMasterResponse> Launch(
      UnmanagedAm& uam, const std::string& queue, const std::string& name,
      const v1::RegisterApplicationMasterRequest& registration);
  // Takes up a UAM known to exist (recovered from the state store, or found in its RM for the
  // app's next attempt): not registered by this pool yet, so Launch registers it again.
  UnmanagedAm& Adopt(const UamState& state);
  // Unregisters a registered UAM with the AM's final status.
  absl::Status Finish(UnmanagedAm& uam, const v1::FinishApplicationMasterRequest& request);
  // Kills every UAM submitted and not finished (the attempt ended without finishing them).
  void KillUnfinished(const std::string& reason);

  const std::map<std::string, UnmanagedAm>& uams() const { return uams_; }

 private:
  const AttemptContext attempt_;
  const std::string home_sub_cluster_id_;
  SubClusterRpc* const rpc_;
  const std::function<int64_t()> now_ms_;
  const std::function<void(int64_t)> sleep_ms_;
  std::map<std::string, UnmanagedAm> uams_;  // by sub-cluster id
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_UNMANAGED_AM_POOL_H_
