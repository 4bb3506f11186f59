// Copyright Weft authors.
#include "rm/node_lifecycle.h"

#include "absl/strings/str_cat.h"
#include "store/state_names.h"

namespace weft::rm {
namespace {

struct NodeTransition {
  v1::NodeState from;
  NodeEvent event;
  v1::NodeState to;
};

// A node runs (healthy or not) between its registration and its loss or decommissioning; a
// lost node comes back by registering; a decommissioned one only once recommissioned and then
// registered (it is LOST in between: the RM holds nothing of it).
constexpr NodeTransition kNodeTable[] = {
    {v1::NODE_NEW, NodeEvent::kRegistered, v1::NODE_RUNNING},
    {v1::NODE_RUNNING, NodeEvent::kRegistered, v1::NODE_RUNNING},
    {v1::NODE_UNHEALTHY, NodeEvent::kRegistered, v1::NODE_RUNNING},
    {v1::NODE_LOST, NodeEvent::kRegistered, v1::NODE_RUNNING},
    {v1::NODE_RUNNING, NodeEvent::kUnhealthy, v1::NODE_UNHEALTHY},
    {v1::NODE_UNHEALTHY, NodeEvent::kHealthy, v1::NODE_RUNNING},
    {v1::NODE_RUNNING, NodeEvent::kExpired, v1::NODE_LOST},
    {v1::NODE_UNHEALTHY, NodeEvent::kExpired, v1::NODE_LOST},
    {v1::NODE_NEW, NodeEvent::kDecommissioned, v1::NODE_DECOMMISSIONED},
    {v1::NODE_RUNNING, NodeEvent::kDecommissioned, v1::NODE_DECOMMISSIONED},
    {v1::NODE_UNHEALTHY, NodeEvent::kDecommissioned, v1::NODE_DECOMMISSIONED},
    {v1::NODE_LOST, NodeEvent::kDecommissioned, v1::NODE_DECOMMISSIONED},
    {v1::NODE_DECOMMISSIONED, NodeEvent::kRecommissioned, v1::NODE_LOST},
};

}  // namespace

const char* NodeEventName(NodeEvent e) {
  switch (e) {
    case NodeEvent::kRegistered:
      return "registered";
    case NodeEvent::kUnhealthy:
      return "unhealthy";
    case NodeEvent::kHealthy:
      return "healthy";
    case NodeEvent::kExpired:
      return "expired";
    case NodeEvent::kDecommissioned:
      return "decommissioned";
    case NodeEvent::kRecommissioned:
      return "recommissioned";
  }
  return "?";
}

absl::StatusOr<v1::NodeState> NextNodeState(v1::NodeState from, NodeEvent event) {
  for (const NodeTransition& t : kNodeTable) {
    if (t.from == from && t.event == event) return t.to;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "node in state ", store::NodeStateName(from), " cannot take event '", NodeEventName(event), "'"));
}

bool IsGone(v1::NodeState s) { return s == v1::NODE_LOST || s == v1::NODE_DECOMMISSIONED; }

}  // namespace weft::rm
