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
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "rm/rm_context.h"
#include "scheduler/types.h"

namespace weft::rm {

// What the RM knows of a live container beyond the scheduling core.
struct RmContainer {
  std::string name;    // container_e<epoch>_<cluster ts>_<app seq>_<attempt>_<seq>
  std::string app_id;  // application_<cluster ts>_<seq>
  int32_t attempt = 0;
};

// Thread-compatible: the RM loop only.
class ContainerTracker {
 public:
  explicit ContainerTracker(RmContext* ctx) : ctx_(ctx) {}

  // A scheduling pass allocated `a`: names it, issues its token and gives it to its attempt
  // (the AM container is launched by the AppManager). Allocations of unknown apps are ignored.
  void Allocated(const scheduler::Allocation& a);

  // The NM reported container `name` complete. Frees it in the scheduler and tells its
  // attempt. Unknown names (already ended, or never this RM's) are ignored.
  void Completed(const std::string& name, int32_t exit_status, const std::string& diagnostics);

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

  // Containers that ended since the RM started.
  int64_t completed() const { return completed_; }

 private:
  std::string NameOf(int64_t cluster_ts, int32_t app_seq, int32_t attempt,
                     scheduler::ContainerId id) const;
  // Removes the record, charges the app `resource` x the time since `allocated_ms`, and
  // returns what was there.
  RmContainer Remove(scheduler::ContainerId id, const Resource& resource, int64_t allocated_ms);
  // Tells the container's attempt that it ended (the AM's own container ends its attempt).
  void TellAttempt(const RmContainer& c, bool is_am, int32_t exit_status,
                   const std::string& diagnostics);

  RmContext* ctx_;
  absl::flat_hash_map<scheduler::ContainerId, RmContainer> containers_;
  absl::flat_hash_map<std::string, scheduler::ContainerId> by_name_;
  int64_t completed_ = 0;
};

}  // namespace weft::rm

#endif  // WEFT_RM_CONTAINER_TRACKER_H_
