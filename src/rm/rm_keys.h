// Copyright Weft authors. The RM's master keys (YARN's RMContainerTokenSecretManager and
// AMRMTokenSecretManager): the rolling keys that sign container tokens and AMRM tokens, kept
// in the state store so that tokens issued before a restart still verify after it.
#ifndef WEFT_RM_RM_KEYS_H_
#define WEFT_RM_RM_KEYS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "rm/amrm_verifier.h"
#include "rm/rm_context.h"
#include "security/master_key.h"
#include "security/secret_source.h"
#include "security/tokens.h"
#include "store/state_store.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// Thread-compatible: the RM loop only.
class RmKeys {
 public:
  // `secrets` is not owned and must outlive this object.
  RmKeys(RmContext* ctx, security::SecretSource* secrets);
  ~RmKeys();

  // Restores the keys of `stored` (or starts new ones where none is stored), writes the live
  // ones to the store and starts the roll timer. Errors: the store's, or a key manager's.
  absl::Status Recover(const std::vector<store::MasterKeyRecord>& stored);

  // Rolls both key sets if due and stores what changed; reschedules itself. Errors are logged
  // (the next roll retries the write).
  void RollKeys();

  security::MasterKeyManager& container() { return container_; }
  const security::MasterKeyManager& container() const { return container_; }
  security::MasterKeyManager& amrm() { return amrm_; }
  const security::MasterKeyManager& amrm() const { return amrm_; }
  // The AMRM keys for other threads, published after Recover and after every roll (a caller
  // that rolls amrm() itself leaves it behind, which costs only the loop's own check).
  std::shared_ptr<const AmRmVerifier> amrm_verifier() const { return amrm_verifier_; }

  // An AMRM token for `attempt_id` under the current AMRM key, valid as long as an app may run
  // (the key under it rolls; AmService hands out a new token then). `key_id` gets the key's id.
  v1::Token IssueAmRmToken(const std::string& attempt_id, int32_t* key_id) const;
  // A container token for `data` under the current container key.
  v1::Token IssueContainerToken(const security::ContainerTokenData& data) const;

  // The container key pair as NMs receive it (registration and heartbeat replies).
  static v1::MasterKey ToProto(const security::MasterKey& k);

 private:
  // Writes every live key of `keys` and removes the stored ones that are gone. Stops at the
  // first store error and returns it; what was written stays recorded as written.
  absl::Status PersistKeys(const security::MasterKeyManager& keys);
  void ScheduleRoll();

  RmContext* ctx_;
  security::MasterKeyManager container_;
  security::MasterKeyManager amrm_;
  std::shared_ptr<AmRmVerifier> amrm_verifier_ = std::make_shared<AmRmVerifier>();
  std::map<std::string, std::set<int32_t>> stored_;  // key ids in the store, by purpose
  TimerId roll_timer_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_RM_KEYS_H_
