// Copyright Weft authors.
#include "rm/amrm_verifier.h"

#include <utility>

#include "absl/status/status.h"

namespace weft::rm {

void AmRmVerifier::Publish(std::vector<security::MasterKey> keys) {
  auto copy = std::make_shared<const std::vector<security::MasterKey>>(std::move(keys));
  absl::MutexLock l(&mu_);
  keys_ = std::move(copy);
}

absl::StatusOr<std::string> AmRmVerifier::Verify(const security::Token& token,
                                                 int64_t now_ms) const {
  std::shared_ptr<const std::vector<security::MasterKey>> keys;
  {
    absl::MutexLock l(&mu_);
    keys = keys_;
  }
  if (keys == nullptr) return absl::FailedPreconditionError("no AMRM keys published yet");
  // For the attempt the token names: the loop then checks that the attempt is its app's
  // current one and still running.
  absl::StatusOr<security::AmRmTokenData> verified =
      security::VerifyAmRmTokenOfAnyAttempt(token, *keys, now_ms);
  if (!verified.ok()) return verified.status();
  return std::move(verified->app_attempt_id);
}

}  // namespace weft::rm
