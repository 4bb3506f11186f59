// Copyright Weft authors. The RM's ApplicationMasterService and AMLivelinessMonitor: AMs
// register, ask for containers and unregister with their attempt's AMRM token; an AM silent
// for am_expiry_ms fails its attempt.
#ifndef WEFT_RM_AM_SERVICE_H_
#define WEFT_RM_AM_SERVICE_H_

#include "absl/status/statusor.h"
#include "rm/app_manager.h"
#include "rm/rm_context.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// Thread-compatible: the RM loop only. Every call authenticates `token` first: PermissionDenied
// for a token that does not verify or names an unknown or old attempt, FailedPrecondition for
// an attempt that is no longer running.
class AmService {
 public:
  explicit AmService(RmContext* ctx);
  ~AmService();

  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::Token& token, const v1::RegisterApplicationMasterRequest& req);
  // YARN's response_id protocol: a repeated id gets the last reply again, a wrong one a resync
  // command. Asks, releases and blacklist changes are validated first and applied all or
  // nothing (InvalidArgument naming the ask or container: another app's, the AM's own, or a
  // name that is no container id). As in YARN, releasing one of the app's containers that
  // the RM no longer holds (it completed or was lost before the AM heard) is not an error:
  // it is ignored and logged (release_ignored), and a container named twice is released once.
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::Token& token,
                                                const v1::AllocateRequest& req);
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::Token& token, const v1::FinishApplicationMasterRequest& req);

  // Starts the liveness timer: an AM that launched but did not call in am_expiry_ms fails its
  // attempt.
  void StartExpiry();

 private:
  // The app and attempt the token is for, found through the AppManager's attempt index.
  absl::StatusOr<RmApp*> Authenticate(const v1::Token& token);
  void CheckExpiry();

  RmContext* ctx_;
  TimerId expiry_timer_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_AM_SERVICE_H_
