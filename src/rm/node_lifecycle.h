// Copyright Weft authors. The lifecycle of a node in the RM: the events that move a
// NodeManager's state and the one transition table (YARN's RMNodeImpl state machine, reduced
// to what Weft's RM does). States are weft.v1.NodeState, named by store/state_names.h; a node
// the RM has never seen is NODE_NEW until its first registration.
#ifndef WEFT_RM_NODE_LIFECYCLE_H_
#define WEFT_RM_NODE_LIFECYCLE_H_

#include "absl/status/statusor.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

// What happens to a node.
enum class NodeEvent {
  kRegistered,      // its NM registered (first time, again after a restart, or after it was lost)
  kUnhealthy,       // a heartbeat reported it unhealthy
  kHealthy,         // a heartbeat reported it healthy again
  kExpired,         // no heartbeat for nm_expiry_ms
  kDecommissioned,  // an admin decommissioned it
  kRecommissioned,  // an admin took it off the decommission list: it must register again
};

const char* NodeEventName(NodeEvent e);

// The state `event` leads to from `from`; FailedPrecondition naming the state and the event
// when the table has no such transition (e.g. a decommissioned node registering).
absl::StatusOr<v1::NodeState> NextNodeState(v1::NodeState from, NodeEvent event);

// The node takes no containers and its containers are gone (LOST, DECOMMISSIONED).
bool IsGone(v1::NodeState s);

}  // namespace weft::rm

#endif  // WEFT_RM_NODE_LIFECYCLE_H_
