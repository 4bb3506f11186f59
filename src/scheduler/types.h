// Copyright Weft authors. The scheduler core's inputs and outputs (its event API's data).
#ifndef WEFT_SCHEDULER_TYPES_H_
#define WEFT_SCHEDULER_TYPES_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/device_share.h"
#include "common/job_profile.h"
#include "common/resource.h"
#include "scheduler/placement_constraint.h"

namespace weft::scheduler {

// Chosen by the caller (the RM or the simulator); unique among live apps.
using AppId = uint64_t;
// Assigned by the scheduler from a counter that starts at SchedulerOptions::first_container_id,
// so the RM can put its epoch in the high bits and never reuse an id after a restart.
using ContainerId = uint64_t;
// Dense node index assigned by the scheduler; never reused while the scheduler lives.
using NodeId = int32_t;

inline constexpr const char* kAnyResourceName = "*";
inline constexpr int64_t kUnlimited = int64_t{1} << 60;

// A node attribute (YARN's node attributes): key=value, e.g. "os=linux". Keys and values are
// what placement constraints name (see placement_constraint.h for the character rules).
using NodeAttributes = std::vector<std::pair<std::string, std::string>>;

// One GPU of a node as the scheduler sees it (issue 32, docs/gpu.md).
struct GpuDevice {
  int32_t index = 0;      // its index on the node (what containers see); unique on the node
  std::string model;      // e.g. "NVIDIA H100 80GB HBM3"; "" unknown
  std::string group;      // its NVLink / PCIe-switch topology group; "" unknown
  bool healthy = true;    // an unhealthy GPU is offered to no new container
  friend bool operator==(const GpuDevice&, const GpuDevice&) = default;
};

// A node as it registers. `rack` must start with '/', like YARN's "/default-rack".
struct NodeSpec {
  std::string name;
  std::string rack = "/default-rack";
  Resource capacity;
  // Its node label (YARN's partition): "" for the default partition, else one of
  // SchedulerConfig::node_labels. Only asks for the label get an exclusive label's nodes.
  std::string node_label;
  NodeAttributes attributes;  // keys unique
  // Its GPUs. capacity[kGpuMilli] must be 1000 x the healthy ones. Without a list, a node whose
  // capacity has gpu-milli = k x 1000 gets k anonymous healthy GPUs indexed 0..k-1 (simulated
  // nodes).
  std::vector<GpuDevice> gpus;
};

// An application as it is added to the scheduler.
struct AppSpec {
  AppId id = 0;
  std::string queue = "default";  // leaf name ("prod") or full path ("root.prod")
  std::string user = "default";
  int32_t priority = 0;  // higher is served first (YARN application priority)
  // The ApplicationMaster's container, allocated before any other ask of the app. Zero means
  // no AM container (an unmanaged AM, or a caller that models none).
  Resource am_resource;
  // What the job tells the scheduler beyond its asks (optional). The core checks it and
  // hands it to the policy; policies that steer by goals or usage (seed 003) read it.
  JobProfile profile;
};

// One row of YARN's ResourceRequest table. `num_containers` is absolute: it replaces the
// outstanding count for the key (priority, allocation_request_id, capability, resource_name).
struct ResourceRequest {
  int32_t priority = 0;                          // lower values are served first, as in YARN
  std::string resource_name = kAnyResourceName;  // host name, rack ("/rack1") or "*"
  Resource capability;
  int32_t num_containers = 0;
  // Whether locality may be relaxed *to* this level (YARN's meaning): false on a rack entry
  // keeps its hosts' asks off the rest of the rack; false on "*" keeps them off other racks.
  bool relax_locality = true;
  int64_t allocation_request_id = 0;

  // Seed 001's extensions (YARN's SchedulingRequest and node label expression). They belong to
  // the request group (the key above) and may be set only on its "*" row, with no host or rack
  // rows in the group; a later "*" row of the group replaces them.
  //
  // Tags every container of the group carries (YARN's allocation tags), for the constraints
  // of this and other apps to count.
  std::vector<std::string> allocation_tags;
  // Where each container may go. Hard: the ask waits until a node satisfies it. Soft
  // (`constraint_soft`): a satisfying node is preferred, but a container is placed elsewhere
  // rather than wait while resources are idle (SchedulerStats::soft_violations counts those).
  bool has_constraint = false;
  bool constraint_soft = false;
  PlacementConstraint constraint;
  // The node label (partition) its containers must run in; "" = the default partition (whose
  // asks may also use idle nodes of non-exclusive labels). The app's queue must be allowed the
  // label (QueueConfig::accessible_node_labels).
  std::string node_label;
  // A gang: the group's outstanding containers (`num_containers` of the "*" row) are placed
  // all in one pass or none is. While it cannot be placed, the oldest waiting gang reserves
  // nodes (others stop getting them) until they drain enough; `gang_timeout_ms` > 0 gives up
  // after that long waiting (PassResult::rejected), 0 waits for ever.
  bool gang = false;
  int64_t gang_timeout_ms = 0;
  // With a gpu-milli ask of k x 1000, k > 1: all k GPUs from one topology group
  // (GpuDevice::group), e.g. one NVLink island.
  bool gpu_same_group = false;
};

// A change of a running container's resources (YARN's UpdateContainerRequest): `target` is
// the whole new resource. Every type must move the same way: all >= the current value (an
// increase, granted in a pass when the container's node has room and limits allow) or all <=
// (a decrease, applied at once and never refused).
struct ContainerUpdate {
  ContainerId container = 0;
  Resource target;
};

// What an ApplicationMaster's Allocate call carries to the scheduler.
struct RequestUpdate {
  std::vector<ResourceRequest> asks;
  std::vector<ContainerId> releases;
  std::vector<std::string> blacklist_additions;  // node names
  std::vector<std::string> blacklist_removals;
  std::vector<ContainerUpdate> updates;
};

enum class Locality : uint8_t { kNodeLocal, kRackLocal, kOffSwitch };
const char* LocalityName(Locality l);

struct Allocation {
  ContainerId container = 0;
  AppId app = 0;
  NodeId node = 0;
  Resource resource;
  int32_t priority = 0;
  int64_t allocation_request_id = 0;
  bool is_am = false;
  Locality locality = Locality::kOffSwitch;
  // The request group's allocation tags (shared by its containers; empty when none).
  std::vector<std::string> tags;
  uint64_t gang = 0;  // the gang it started with (an id unique in the scheduler), 0 if none
  // The GPU shares it holds (type "gpu", by GpuDevice::index), when resource has gpu-milli.
  std::vector<DeviceShare> devices;
};

// A container that already runs, handed back to a scheduler that does not know it: after an RM
// restart, the RM rebuilds the core's state from what NodeManagers report (YARN's
// work-preserving recovery). See Scheduler::RecoverContainer.
struct RecoveredContainer {
  // Its id as the scheduler that allocated it numbered it: unique, and below the first id this
  // scheduler assigns (SchedulerOptions::first_container_id), e.g. an earlier RM epoch's.
  ContainerId container = 0;
  AppId app = 0;
  NodeId node = 0;
  Resource resource;  // what it was granted (not normalised again)
  int32_t priority = 0;
  bool is_am = false;        // its app's AM container
  int64_t allocated_ms = 0;  // when it counts from, on the caller's clock (its recovery)
  std::vector<std::string> tags;  // its allocation tags, as allocated
  // The GPU shares it holds, as its token granted them. Empty with gpu-milli > 0: the scheduler
  // chooses (an NM that did not report them).
  std::vector<DeviceShare> devices;
};

// Seed 001's preemption message: the strict part names containers that will be killed at
// `deadline_ms` unless released; the negotiable part is the resource the AM may free instead,
// choosing its own containers.
struct PreemptionContract {
  AppId app = 0;
  std::vector<ContainerId> strict_containers;
  Resource negotiable;
  int64_t deadline_ms = 0;
};

// Why a container left the scheduler without its app asking.
enum class ContainerExit : uint8_t { kPreempted, kNodeLost, kAppRemoved };

// A container the scheduler took back (preemption grace expired). The caller must stop it.
struct ContainerKill {
  ContainerId container = 0;
  AppId app = 0;
  NodeId node = 0;
  Resource resource;
  ContainerExit reason = ContainerExit::kPreempted;
  bool is_am = false;        // it was its app's AM container
  int64_t allocated_ms = 0;  // when it was allocated, on the caller's clock
};

// A running container whose resources changed (an increase granted in a pass, or a decrease
// applied by UpdateRequests and reported by the next pass).
struct ContainerResized {
  ContainerId container = 0;
  AppId app = 0;
  NodeId node = 0;
  Resource resource;  // the new whole resource
  bool increase = false;
};

// An ask the scheduler gave up on (YARN's RejectedSchedulingRequest): a gang not placed within
// its timeout. Its group is gone; the app may ask again.
struct RejectedRequest {
  AppId app = 0;
  int32_t priority = 0;
  int64_t allocation_request_id = 0;
  Resource capability;
  int32_t num_containers = 0;
  std::string reason;
};

// Everything one scheduling pass decided, in decision order.
struct PassResult {
  std::vector<Allocation> allocations;
  std::vector<PreemptionContract> contracts;
  std::vector<ContainerKill> kills;
  std::vector<ContainerResized> resized;
  std::vector<RejectedRequest> rejected;
};

}  // namespace weft::scheduler

#endif  // WEFT_SCHEDULER_TYPES_H_
