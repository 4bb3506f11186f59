// Copyright Weft authors. What an RM (re)start restores from its state store (YARN's
// RMStateStore load and RMAppManager recovery).
#ifndef WEFT_RM_RM_RECOVERY_H_
#define WEFT_RM_RM_RECOVERY_H_

#include "absl/status/status.h"
#include "rm/rm_context.h"
#include "store/state_store.h"

namespace weft::rm {

// Restores `state` into the RM's services: master keys (so tokens issued before stay valid),
// finished applications (queryable), and unfinished ones, whose current attempt carries on
// (AppManager::RecoverAttempt: work-preserving, no attempt used up). The scheduler's state is
// not stored: it is rebuilt as NMs register again with their containers (NodeTracker) and
// AMs register again (AmService). Errors: DataLoss for a stored record that does not parse
// (naming it), or the store's.
absl::Status RecoverRmState(const store::RmState& state, RmContext* ctx);

}  // namespace weft::rm

#endif  // WEFT_RM_RM_RECOVERY_H_
