// Copyright Weft authors. AMRM tokens verified on the threads that receive AMs' calls.
#ifndef WEFT_RM_AMRM_VERIFIER_H_
#define WEFT_RM_AMRM_VERIFIER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "security/master_key.h"
#include "security/tokens.h"

namespace weft::rm {

// A copy of the RM's AMRM keys that any thread may verify tokens with (issue 29: authenticate
// off the loop). RmKeys publishes the keys whenever they change (recovery, every roll), on the
// loop, before a token signed by a new key can be handed out. A token this accepts needs no
// signature check on the loop; one it refuses is checked there again (the loop's keys are the
// authority, and its error is the one the caller gets), so a copy a moment old costs time,
// never a wrong answer. The attempt's state is always checked on the loop.
//
// Thread-safe.
class AmRmVerifier {
 public:
  // The keys now (MasterKeyManager::Keys() of the AMRM manager).
  void Publish(std::vector<security::MasterKey> keys);
  // The attempt id `token` was issued for, if the published keys accept it at `now_ms` (ms
  // since the Unix epoch, as the RM loop's clock); VerifyAmRmToken's error otherwise, or
  // FailedPrecondition before any Publish.
  absl::StatusOr<std::string> Verify(const security::Token& token, int64_t now_ms) const;

 private:
  mutable absl::Mutex mu_;
  std::shared_ptr<const std::vector<security::MasterKey>> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::rm

#endif  // WEFT_RM_AMRM_VERIFIER_H_
