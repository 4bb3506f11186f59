// Copyright Weft authors. The RM's ApplicationMasterService and AMLivelinessMonitor: AMs
// register, ask for containers and unregister with their attempt's AMRM token; an AM silent
// for am_expiry_ms fails its attempt.
#ifndef WEFT_RM_AM_SERVICE_H_
#define WEFT_RM_AM_SERVICE_H_

#include <functional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
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

  // An AM registers once, and again after each RM restart (the attempt was recovered), a lost
  // reply, or an AM_RESYNC: a registration again is answered with every live container of the
  // attempt (its AM's excepted) in containers_from_previous_attempts, the completed statuses of
  // the last Allocate reply come again in the next one, and the response_id sequence starts
  // again from 0. Unavailable when the store did not take the registration (it is made and its
  // write retried; the AM may register again).
  absl::StatusOr<v1::RegisterApplicationMasterResponse> RegisterApplicationMaster(
      const v1::Token& token, const v1::RegisterApplicationMasterRequest& req);
  // YARN's response_id protocol: a repeated id gets the last reply again, a wrong one a resync
  // command, as does any call of a recovered attempt that has not registered again. Containers
  // recovered after it registered again come in containers_from_previous_attempts, once. A call
  // with the last reply's id acknowledges that reply's completed statuses: their NMs may forget
  // them (YARN-1372). Asks, releases and blacklist changes are validated first and applied all
  // or nothing (InvalidArgument naming the ask or container: another app's, the AM's own, or a
  // name that is no container id). As in YARN, releasing one of the app's containers that the
  // RM no longer holds (it completed or was lost before the AM heard) is not an error: it is
  // ignored and logged (release_ignored), and a container named twice is released once.
  absl::StatusOr<v1::AllocateResponse> Allocate(const v1::Token& token,
                                                const v1::AllocateRequest& req);
  // The same, as a long poll: `reply` runs exactly once, on the RM loop - at once, or, when
  // req.wait_ms > 0 and the reply would carry nothing new, once the attempt has news (allocated,
  // completed or recovered containers: NotifyNews) or the wait (capped by max_allocate_wait_ms)
  // ends. The request's asks and releases take effect at once either way. One call per attempt
  // is held: a newer call of the same attempt ends the held one with Aborted (its AM gave up on
  // it), before its reply took anything from the attempt. When max_parked_allocates calls are
  // held, a call is answered at once (back-pressure). A held call of an attempt that ended in
  // the meantime gets that attempt's error; one held when the RM goes gets Unavailable.
  // `verified_attempt`, when not empty, is the attempt an AmRmVerifier of this RM found `token`
  // signed for (on the thread that received the call): the signature is not checked again.
  using AllocateReply = std::function<void(absl::StatusOr<v1::AllocateResponse>)>;
  void Allocate(const v1::Token& token, const v1::AllocateRequest& req, AllocateReply reply,
                const std::string& verified_attempt = "");
  // The attempt of `app_id` has something for its AM: a held Allocate is answered soon (after
  // the events being handled now, so that one reply carries all of them).
  void NotifyNews(const std::string& app_id);
  // Answers every held call with Unavailable and holds none from now on (the RM is going).
  void StopHolding();
  // Allocate calls held now.
  size_t parked_allocates() const { return parked_.size(); }
  absl::StatusOr<v1::FinishApplicationMasterResponse> FinishApplicationMaster(
      const v1::Token& token, const v1::FinishApplicationMasterRequest& req);
  // The running app `token` authenticates for, found through the AppManager's attempt index:
  // what every call above checks first, and what RmServer checks, without acting, before it
  // writes an AM's end into the federation store.
  // With `verified_attempt` (as in Allocate), only the attempt's checks are made.
  absl::StatusOr<const RmApp*> Authenticate(const v1::Token& token,
                                            const std::string& verified_attempt = "");

  // Starts the liveness timer: an AM that launched but did not call in am_expiry_ms fails its
  // attempt.
  void StartExpiry();

 private:
  void CheckExpiry();
  // The reply of a call whose request was applied: what the attempt has for its AM now.
  // `diagnostics` go in the reply's diagnostics.
  v1::AllocateResponse BuildReply(const RmApp& app, std::vector<std::string> diagnostics);
  // Whether a reply now would tell the AM something.
  bool HasNews(const RmAttempt& at) const;
  // Answers the held call of `attempt_id` (if any) with what its attempt has now.
  void AnswerParked(const std::string& attempt_id);
  void AnswerWoken();
  // Ends the held call of `attempt_id` (if any) with Aborted, taking nothing from the attempt.
  void DropParked(const std::string& attempt_id, absl::string_view why);

  // A held Allocate (long poll), by attempt id.
  struct Parked {
    v1::Token token;
    AllocateReply reply;
    TimerId timer = 0;
  };

  RmContext* ctx_;
  TimerId expiry_timer_ = 0;
  absl::flat_hash_map<std::string, Parked> parked_;
  absl::flat_hash_set<std::string> woken_;  // attempt ids with news, answered by AnswerWoken
  bool answer_posted_ = false;
  bool holding_ = true;  // false once StopHolding ran
};

}  // namespace weft::rm

#endif  // WEFT_RM_AM_SERVICE_H_
