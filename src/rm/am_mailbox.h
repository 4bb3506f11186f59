// Copyright Weft authors. What the RM holds for one attempt's ApplicationMaster and has not yet
// handed over (new containers, completed containers' statuses, containers recovered after an
// RM restart), and YARN's response_id protocol of that AM's Allocate calls.
#ifndef WEFT_RM_AM_MAILBOX_H_
#define WEFT_RM_AM_MAILBOX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "weft/v1/am.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// A completed container's status on its way to the AM, and the node that reported it (which
// keeps it until the AM has it: YARN-1372); "" when no NM reported it (its node was lost).
struct RmCompletion {
  v1::ContainerStatus status;
  std::string node;
};

// Thread-compatible: the RM loop only. A completion is in exactly one place: waiting, or in
// the last reply until the AM's next call acknowledges it (or the AM registers again, when it
// waits again), or handed back by TakeCompletions().
class AmMailbox {
 public:
  void AddAllocated(v1::Container container) { allocated_.push_back(std::move(container)); }
  void AddRecovered(v1::Container container) { recovered_.push_back(std::move(container)); }
  void AddCompleted(RmCompletion done) { completed_.push_back(std::move(done)); }
  // A granted resource update (the container with its new resource, version and token).
  void AddUpdated(v1::UpdatedContainer updated) { updated_.push_back(std::move(updated)); }
  // An ask the scheduler gave up on (a gang past its timeout).
  void AddRejected(v1::RejectedSchedulingRequest rejected) {
    rejected_.push_back(std::move(rejected));
  }
  // Something waits for the AM.
  bool HasNews() const;

  // How an Allocate call's response_id relates to the last reply (YARN's protocol: the AM
  // sends the id of the last reply it received).
  enum class Call {
    kNext,        // the next call: answer it with Fill()
    kRetry,       // the last reply was lost: answer with last_response() again
    kOutOfOrder,  // neither: the AM must resync
  };
  Call Classify(int32_t response_id) const;
  int32_t last_response_id() const { return last_response_id_; }
  const v1::AllocateResponse& last_response() const { return last_response_; }

  // Moves everything waiting into `resp` under the next response id, and returns the
  // completions of the previous reply, which this call acknowledges (their NMs may forget
  // them). The caller completes `resp`, then calls Remember(resp).
  std::vector<RmCompletion> Fill(v1::AllocateResponse* resp);
  // The reply as sent, for a retry of the same call.
  void Remember(const v1::AllocateResponse& resp) { last_response_ = resp; }

  // The AM registered (again): waiting allocated and recovered containers are dropped (the
  // registration reply lists every live container, with its current resource and token), the
  // completions of the last reply wait
  // again (the AM may have missed it), and response ids start again from 0.
  void Registered();
  // No AM will read them (the attempt ended): every completion waiting or sent, removed.
  std::vector<RmCompletion> TakeCompletions();

 private:
  std::vector<v1::Container> allocated_;  // not yet handed to the AM
  std::vector<RmCompletion> completed_;   // not yet handed to the AM
  std::vector<RmCompletion> sent_;        // in the last reply, not yet acknowledged
  // After its AM registered again, reported by NMs (containers_from_previous_attempts).
  std::vector<v1::Container> recovered_;
  std::vector<v1::UpdatedContainer> updated_;
  std::vector<v1::RejectedSchedulingRequest> rejected_;
  int32_t last_response_id_ = 0;
  v1::AllocateResponse last_response_;
};

}  // namespace weft::rm

#endif  // WEFT_RM_AM_MAILBOX_H_
