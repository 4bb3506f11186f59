// Copyright Weft authors. The RM's containers (YARN's RMContainer lifecycle): names each
// allocation (container_e<epoch>_...), issues its container token, hands it to its attempt,
// and ends it exactly once however it ends (its NM reports it complete, its node is lost, the
// scheduler preempts it, its AM releases it, or its app ends).
//
// The scheduling core holds each live container's resource, node, AM flag and allocation
// time; this tracker keeps only what the core does not know: the container's name and owner.
#ifndef WEFT_RM_CONTAINER_TRACKER_H_
#define WEFT_RM_CONTAINER_TRACKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/device_share.h"
#include "rm/rm_context.h"
#include "scheduler/types.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

struct RmApp;
struct RmCompletion;

// What the RM knows of a live container beyond the scheduling core.
struct RmContainer {
  std::string name;    // container_e<epoch>_<cluster ts>_<app seq>_<attempt>_<seq>
  std::string app_id;  // application_<cluster ts>_<seq>
  int32_t attempt = 0;
  int32_t version = 0;  // its resource's version: 0 as allocated, +1 per update (YARN's)
  std::vector<std::string> tags;  // its allocation tags
  uint64_t gang = 0;              // the gang it started with; 0 none
  std::vector<DeviceShare> devices;  // the GPU shares it holds (docs/gpu.md)
};

// What a container's name says: container_e<epoch>_<cluster ts>_<app seq>_<attempt>_<seq>.
struct ContainerName {
  int64_t epoch = 0;       // of the RM start that allocated it
  int64_t cluster_ts = 0;  // its application's cluster timestamp
  int32_t app_seq = 0;
  int32_t attempt = 0;
  int64_t seq = 0;  // < 2^40: the low bits of the scheduler's container id
  // The id the scheduling core knows it by: the epoch in the high bits, as the RM numbers them.
  scheduler::ContainerId Id() const {
    return (static_cast<scheduler::ContainerId>(epoch) << 40) |
           static_cast<scheduler::ContainerId>(seq);
  }
};
// nullopt when `name` is not such a name (YARN's epoch-less form included: no epoch, no id).
std::optional<ContainerName> ParseContainerName(absl::string_view name);

// Thread-compatible: the RM loop only.
//
// Work-preserving restart: containers of earlier RM epochs (allocated before this RM started)
// are unknown until an NM reports them. Each is dealt with once, however often NMs report it:
// recovered (or refused and stopped) the first time it is reported running, and its
// completion told to its attempt the first time it is reported complete.
class ContainerTracker {
 public:
  explicit ContainerTracker(RmContext* ctx) : ctx_(ctx) {}

  // A scheduling pass allocated `a`: names it, issues its token and gives it to its attempt
  // (the AM container is launched by the AppManager). Allocations of unknown apps are ignored.
  void Allocated(const scheduler::Allocation& a);
  // A pass changed a running container's resources: its version goes up and its attempt's AM
  // gets the container with a token for the new resource (UpdatedContainer). A decrease is
  // also sent to its NM (the next heartbeat's containers_to_update); an increase the AM takes
  // to the NM itself. Unknown ids are ignored.
  void Resized(const scheduler::ContainerResized& r);
  // The current version of the live container `id` (0 for one this tracker does not hold).
  int32_t Version(scheduler::ContainerId id) const;

  // The NM of `node_id` reported container `name` complete ("" when no NM did: the RM ends it
  // itself). Frees it in the scheduler and tells its attempt. A container of an earlier epoch
  // that this RM never held (it ended while no RM ran) is told to its application's live
  // attempt, once, if it was that attempt's. The NM may forget the status once the AM has it
  // (Acknowledged), at once when no AM will get it; a status reported again while its AM has
  // not acknowledged it changes nothing.
  void Completed(const std::string& name, int32_t exit_status, const std::string& diagnostics,
                 const std::string& node_id);
  // The AM received these statuses, or never will (its attempt ended): their NMs are told to
  // forget them (NodeTracker::AddRemoval).
  void Acknowledged(const std::vector<RmCompletion>& completions);

  // After an RM restart: node `node_id` (registered, live in the scheduler) reports container
  // `name` running, which this RM does not hold. Recovers it - charges it to its app's live
  // attempt in the scheduler and hands it to the attempt's AM (in its re-registration or its
  // next Allocate) - when it is of an earlier epoch, not dealt with before, and of the live
  // attempt of a live app. Its resource is `resource`, what the NM says its container token
  // granted (the NM is authenticated as that node), or, when the NM gives none, the app's AM
  // resource for the attempt's AM container. Otherwise returns why not, and the caller must
  // have the NM stop it: InvalidArgument (not a container name, a resource that does not
  // parse), FailedPrecondition (allocated by this RM, which no longer holds it; its app or
  // attempt ended or is not the live one; no resource for a task container; the scheduler's
  // refusal, e.g. it does not fit), AlreadyExists (dealt with before), NotFound (unknown app).
  // `version` is the resource's version the NM reports (0: never updated): the next update
  // this RM issues gets a higher one. `tags` are its allocation tags as the NM recorded them
  // from its container token (RegisterNodeManagerRequest.container_tags): the scheduler counts
  // them again for placement constraints, and the container keeps them (RmContainer::tags).
  absl::Status Recover(const std::string& node_id, const std::string& name,
                       const v1::Resource* resource, int32_t version = 0,
                       std::vector<std::string> tags = {},
                       std::vector<DeviceShare> devices = {});
  // A container of an earlier epoch reported running in a heartbeat and never dealt with: the
  // caller stops it (an AM started a container the old RM allocated after this RM started; it
  // holds no record of it). True the first time for such a container; false for others.
  bool TakeUnknownPrevious(const std::string& name);

  // The live container's proto as an AM receives it, with a container token issued now;
  // nullopt for an id this tracker does not hold.
  std::optional<v1::Container> Describe(scheduler::ContainerId id) const;

  // The scheduler already took the container back (`kill`: node lost, app removed, preempted):
  // ends it here and tells its attempt. Unknown ids are ignored.
  void Ended(const scheduler::ContainerKill& kill, int32_t exit_status,
             const std::string& diagnostics);

  // Forgets a container its app released or lost with its app (the scheduler has released it
  // already); charges its usage to the app and asks its NM to stop it. `info` is what the
  // scheduler had for it.
  void Forget(scheduler::ContainerId id, const Resource& resource, int64_t allocated_ms,
              const std::string& node_id);

  // The live container named `name` if it belongs to `app_id`; InvalidArgument otherwise.
  absl::StatusOr<scheduler::ContainerId> FindOwned(const std::string& name,
                                                   const std::string& app_id) const;
  const RmContainer* Find(scheduler::ContainerId id) const;
  // Whether the live container `name` is held (of any app).
  bool Holds(const std::string& name) const { return by_name_.contains(name); }

  // Containers that ended since the RM started.
  int64_t completed() const { return completed_; }
  // Containers of earlier epochs recovered since the RM started.
  int64_t recovered() const { return recovered_; }
  // Containers of earlier epochs reported running and refused (the NMs were told to stop them),
  // and among them task containers refused because their NM did not say their resource.
  int64_t refused() const { return refused_; }
  int64_t refused_without_resource() const { return refused_without_resource_; }

 private:
  std::string NameOf(int64_t cluster_ts, int32_t app_seq, int32_t attempt,
                     scheduler::ContainerId id) const;
  // Removes the record, charges the app `resource` x the time since `allocated_ms`, and
  // returns what was there.
  RmContainer Remove(scheduler::ContainerId id, const Resource& resource, int64_t allocated_ms);
  // Tells the container's attempt that it ended (the AM's own container ends its attempt);
  // `node_id` reported it ("" for none). A status no AM will read is released at once.
  void TellAttempt(const RmContainer& c, bool is_am, int32_t exit_status,
                   const std::string& diagnostics, const std::string& node_id);

  // Whether `name` is of an earlier RM epoch than this one.
  bool IsPrevious(const std::string& name) const;
  // Recover's checks and the scheduler's charge; does not mark the container dealt with.
  absl::Status RecoverOnce(const std::string& node_id, const std::string& name,
                           const v1::Resource* resource, int32_t version,
                           std::vector<std::string> tags,
                           std::vector<DeviceShare> devices);
  // Builds the AM's view of a container, issuing its token now.
  v1::Container Proto(const RmContainer& c, const std::string& node_id, const RmApp& app,
                      const Resource& resource, int32_t priority,
                      int64_t allocation_request_id) const;

  // What this RM did about a container of an earlier epoch.
  struct Previous {
    bool running_handled = false;     // recovered, or refused and stopped
    bool completion_handled = false;  // its end told to its attempt (or not its attempt's)
  };

  RmContext* ctx_;
  absl::flat_hash_map<scheduler::ContainerId, RmContainer> containers_;
  absl::flat_hash_map<std::string, scheduler::ContainerId> by_name_;
  absl::flat_hash_map<std::string, Previous> previous_;  // by name
  // Completions handed (or to be handed) to an AM that has not acknowledged them yet.
  absl::flat_hash_set<std::string> unacknowledged_;
  int64_t completed_ = 0;
  int64_t recovered_ = 0;
  int64_t refused_ = 0;
  int64_t refused_without_resource_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_CONTAINER_TRACKER_H_
