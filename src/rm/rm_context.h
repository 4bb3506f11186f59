// Copyright Weft authors. What the ResourceManager's services share (YARN's RMContext): the
// options, the loop, the store, the scheduling core, and each service, so that one service can
// reach another without owning it. The ResourceManager owns everything named here.
//
// Ownership: each service owns its state and others only call its methods. AppManager owns the
// apps, their attempts and what waits for each AM (AmMailbox); other services get read-only
// views (AppManager::Find*) and change an app only through AppManager's event methods. The
// container tracker owns the RM's container names, the node tracker its nodes (states moved
// only through node_lifecycle.h's table), the AM service its held Allocate calls.
//
// Thread-compatible: every service runs on the RM loop's thread only.
#ifndef WEFT_RM_RM_CONTEXT_H_
#define WEFT_RM_RM_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/event_loop.h"
#include "common/resource.h"
#include "rm/rm_options.h"
#include "scheduler/scheduler.h"
#include "store/state_store.h"
#include "weft/v1/common.pb.h"

namespace weft::rm {

class AmService;
class AppManager;
class ContainerTracker;
class HistoryRecorder;
class NodeTracker;
class RmKeys;

struct RmContext {
  const RmOptions* options = nullptr;
  EventLoop* loop = nullptr;
  store::StateStore* store = nullptr;
  AmLauncher* launcher = nullptr;
  scheduler::Scheduler* scheduler = nullptr;
  RmKeys* keys = nullptr;
  AppManager* apps = nullptr;
  NodeTracker* nodes = nullptr;
  ContainerTracker* containers = nullptr;
  AmService* am_service = nullptr;
  HistoryRecorder* history = nullptr;  // always set; records nothing while history is off
  int64_t epoch = 0;       // this RM start's epoch (in container ids)
  int64_t started_ms = 0;  // loop time of the RM's start
  std::string rm_address;  // where AMs reach AmService (host:port), given in WEFT_RM_ADDRESS
  // Asks for a scheduling pass soon (coalesced); set by the ResourceManager.
  std::function<void()> request_pass;
  // Asks for a pass as soon as RmOptions::min_pass_gap_ms allows: an event freed resources
  // (completed or released containers) or added demand.
  std::function<void()> request_prompt_pass;

  int64_t NowMs() const { return loop->NowMs(); }
  const ResourceTypeRegistry& registry() const { return options->registry; }
  // Resource <-> proto by type name. FromProto refuses unknown type names with
  // InvalidArgument prefixed by `what`.
  v1::Resource ToProto(const Resource& r) const;
  absl::StatusOr<Resource> FromProto(const v1::Resource& p, absl::string_view what) const;
  // The registry's per-type maximum allocation.
  Resource MaximumAllocation() const;
};

}  // namespace weft::rm

#endif  // WEFT_RM_RM_CONTEXT_H_
