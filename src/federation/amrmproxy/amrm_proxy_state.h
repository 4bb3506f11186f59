// Copyright Weft authors. What the AMRMProxy keeps of its attempts in the NM's state store so
// that a restarted NM (even after kill -9) goes on serving their AMs (YARN-6127, AMRMProxy
// recovery), and so that the unmanaged AMs an attempt runs in secondary sub-clusters outlive
// it for the app's next attempt (seed 004 steps 8a/8b). The store is the NM's
// (nm/nm_state_store.h); the proxy sees it through this interface only.
#ifndef WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_STATE_H_
#define WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_STATE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "federation/amrmproxy/interceptor.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/common.pb.h"

namespace weft::amrmproxy {

// One unmanaged AM of an attempt, in one secondary sub-cluster. It runs under the home app's
// id (application_id is the home's once submitted, "" before).
struct UamState {
  std::string sub_cluster_id;
  std::string rm;  // that sub-cluster's RM address list
  std::string application_id;
  v1::Token amrm_token;  // that RM's token for the UAM (as last rolled)
  bool registered = false;
  bool finished = false;  // unregistered, killed, or ended in its RM
};

// One attempt the proxy serves or served.
struct AttemptState {
  // As the NM launched the AM; amrm_token is the home RM's current token (after rolls).
  AttemptContext attempt;
  bool registered = false;  // the AM registered through the proxy
  v1::RegisterApplicationMasterRequest registration;  // the AM's, replayed to RMs
  std::string queue;
  std::string app_name;
  // The AM container ended without unregistering, and UAMs were left running for the app's
  // next attempt: the record is kept until the app is cleaned up on this node, which kills
  // them (seed 004 step 8a).
  bool ended = false;
  std::vector<UamState> uams;  // by sub-cluster id
};

// Durable storage of AttemptStates and of the proxy's token key. Implementations are
// thread-safe (the proxy's workers write while the NM's loop uses the same store). Each call
// is one transaction; errors name what failed.
class AmrmProxyStateStore {
 public:
  virtual ~AmrmProxyStateStore() = default;

  // Inserts or replaces the record of state.attempt.attempt_id (its UAMs replaced too).
  virtual absl::Status PutAttempt(const AttemptState& state) = 0;
  // OK when there is no such record.
  virtual absl::Status RemoveAttempt(absl::string_view attempt_id) = 0;
  // Every record, ordered by attempt id.
  virtual absl::StatusOr<std::vector<AttemptState>> LoadAttempts() = 0;
  // The key the proxy signs its AMs' tokens with (raw bytes); nullopt when none was stored.
  virtual absl::StatusOr<std::optional<std::string>> GetTokenKey() = 0;
  virtual absl::Status SetTokenKey(absl::string_view key) = 0;
};

}  // namespace weft::amrmproxy

#endif  // WEFT_FEDERATION_AMRMPROXY_AMRM_PROXY_STATE_H_
