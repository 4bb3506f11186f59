// Copyright Weft authors. Internal to the NodeManager's files (node_manager.cc, the facade;
// container_manager.cc, YARN's ContainerManagerImpl; node_status_updater.cc, YARN's
// NodeStatusUpdater): constants and helpers they share. Not for other modules.
#ifndef WEFT_NM_NODE_MANAGER_INTERNAL_H_
#define WEFT_NM_NODE_MANAGER_INTERNAL_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "nm/cgroups.h"
#include "nm/nm_state_store.h"
#include "weft/v1/container.pb.h"

namespace weft::nm::internal {

inline constexpr int64_t kReapIntervalMs = 100;
// How often the reap tick samples a running container's memory (rss) for its MB x seconds
// (NmContainerRecord::memory_mb_seconds), ms; the first sample is at the first tick after its
// launch. While it runs, its accounting is written to the state store at most this often, ms
// (a restart loses at most this much of its integral; its end is always written).
inline constexpr int64_t kUsageSampleIntervalMs = 1000;
inline constexpr int64_t kUsagePersistIntervalMs = 30'000;
inline constexpr int64_t kRegisterRetryMs = 1000;
inline constexpr int64_t kDefaultHeartbeatIntervalMs = 1000;
inline constexpr int64_t kRmCallTimeoutMs = 10'000;
inline constexpr char kCgroupRoot[] = "/sys/fs/cgroup";
// NodeManager restart (docs/nm-recovery.md): the state store and the monitors' directories,
// in the work root.
inline constexpr char kStateDbFile[] = "nm-state.db";
inline constexpr char kStateDir[] = "nm-state";
inline constexpr char kNodeIdKey[] = "node_id";
// How long a cleaned-up application stays refused after an NM restart: longer than any
// container token lives.
inline constexpr int64_t kFinishedAppRetentionMs = 24 * 3600 * 1000;

// <work_root>/nm-state/<container_id>: where the container's monitor writes its pid and exit
// status (os_env.h). `container_id` must be valid (ValidateContainerId).
std::string ContainerStateDir(absl::string_view work_root, absl::string_view container_id);

// The limits a container token grants, from its formatted resource: "memory-mb=1024,vcores=1",
// optionally in ResourceTypeRegistry::Format's "<memory-mb=1024, vcores=1>" form. network-mbps
// goes to `*network_mbps` (0 when absent); other types are accepted and not enforced here.
absl::StatusOr<CgroupLimits> LimitsFromTokenResource(absl::string_view text, int64_t* network_mbps);

// A container's pids limit (CgroupLimits::pids_max; NodeManagerOptions): `pids_max` when > 0,
// else `pids_per_vcore` times max(vcores, 1), capped at the kernel's 2^22; 0 = no limit.
int64_t PidsLimitFor(int64_t vcores, int64_t pids_per_vcore, int64_t pids_max);

// Every amount a container token's resource names, by type name (built-in and custom), as the
// RM's protocol carries resources; same spellings and errors as LimitsFromTokenResource.
absl::StatusOr<v1::Resource> ResourceFromTokenResource(absl::string_view text);

// The NM-side federation fence (issue 27; NodeManagerOptions::federation_fence_ms): when the
// NM has had no successful answer from its RM for fence_ms, it kills all its containers, so
// that a silent (e.g. SIGSTOPped) RM's containers cannot overlap the copy the GPG resubmits
// elsewhere once the sub-cluster is LOST. Pure: time (the NM loop's clock, ms) is an argument.
class RmAnswerFence {
 public:
  explicit RmAnswerFence(int64_t fence_ms) : fence_ms_(fence_ms) {}

  bool enabled() const { return fence_ms_ > 0; }
  int64_t fence_ms() const { return fence_ms_; }
  // The NM starts talking to the RM: the fence runs from here until the first answer (a no-op
  // once started).
  void Start(int64_t now_ms) {
    if (last_answer_ms_ < 0) last_answer_ms_ = now_ms;
  }
  // A federation sub-cluster RM's lease, as its reply says (tracker.proto): how long before
  // the reply it last renewed it in the federation store, and how often it does (0: unknown).
  struct Lease {
    int64_t age_ms = 0;
    int64_t renewal_ms = 0;
  };
  // Whether the fence can run from `lease`: its renewal is known and shorter than the fence
  // (otherwise the fence would fire between two renewals of a healthy RM).
  bool Usable(const Lease& lease) const {
    return lease.renewal_ms > 0 && lease.renewal_ms < fence_ms_;
  }
  // The RM answered (any reply, RESYNC included) a call sent at `sent_ms`. With a usable
  // lease the fence runs from the lease's renewal (at the latest sent_ms - its age), so that an
  // RM that answers but cannot reach the federation store (the GPG may declare its sub-cluster
  // LOST and run its apps elsewhere) fences the NM as a silent RM does; otherwise from now.
  // Returns true when this lifts a fence that had fired (never while the lease is too old:
  // then Expired holds).
  bool Answered(int64_t now_ms, int64_t sent_ms = 0, std::optional<Lease> lease = std::nullopt) {
    from_lease_ = lease.has_value() && Usable(*lease);
    last_answer_ms_ =
        from_lease_ ? std::min(now_ms, sent_ms - std::max<int64_t>(0, lease->age_ms)) : now_ms;
    if (Expired(now_ms)) return false;
    const bool lifted = fenced_;
    fenced_ = false;
    return lifted;
  }
  // Whether the last answer counted from its RM's lease (Answered).
  bool from_lease() const { return from_lease_; }
  // True the first time it is called: the caller says once that a lease is not usable.
  bool FirstUnusableLease() { return !std::exchange(warned_unusable_, true); }
  // Whether the fence has passed at `now_ms`: no answer for longer than fence_ms.
  bool Expired(int64_t now_ms) const {
    return enabled() && last_answer_ms_ >= 0 && now_ms - last_answer_ms_ > fence_ms_;
  }
  // Records that the containers were killed for it; true the first time since the last answer.
  bool Fire() {
    const bool first = !fenced_;
    fenced_ = true;
    return first;
  }
  bool fenced() const { return fenced_; }
  // The deadline of an RM call made at `now_ms`, ms: `usual_ms`, shortened so that a call the
  // RM never answers returns once the fence passes (at least 1 ms).
  int64_t CallDeadlineMs(int64_t now_ms, int64_t usual_ms) const {
    if (!enabled() || last_answer_ms_ < 0 || Expired(now_ms)) return usual_ms;
    return std::clamp<int64_t>(last_answer_ms_ + fence_ms_ + 1 - now_ms, 1, usual_ms);
  }
  int64_t last_answer_ms() const { return last_answer_ms_; }

 private:
  int64_t fence_ms_;
  int64_t last_answer_ms_ = -1;  // -1: not started
  bool fenced_ = false;
  bool from_lease_ = false;
  bool warned_unusable_ = false;
};

// A COMPLETE status for `id` (application history, issue 31; common.proto's ContainerStatus):
// its exit status and diagnostics, and from `accounting` (its record) start_time_ms
// (launched_ms), finish_time_ms, allocated (its resource, as ResourceFromTokenResource reads
// it; unset when none is recorded or it does not parse) and its lifetime totals in `usage`:
// cpu_time_ms, network_tx_bytes, peak_memory_bytes and memory_mb_seconds (ReportedMbSeconds;
// 0 = not measured). memory_rss_bytes and network_tx_rate_mbps stay 0: it has ended.
v1::ContainerStatus CompletedStatus(const std::string& id, int exit_status,
                                    const std::string& diagnostics,
                                    const NmContainerRecord& accounting);

// A memory sample of a container at `now_ms` (loop clock, ms since the epoch): adds
// `rss_bytes` held since its previous sample (record->usage_sample_ms; none yet: nothing is
// added) to record->memory_mb_seconds, in MB (2^20 bytes) x seconds, fractions kept, and
// makes this the previous sample. A time not after the previous sample adds nothing (the
// clock stepped back) but takes the new rss. At its end, call it with the end's time and the
// last sample's rss: that rss is taken as held until then.
void AddMemorySample(NmContainerRecord* record, int64_t now_ms, int64_t rss_bytes);

// MB x seconds as statuses report them (ResourceUsage.memory_mb_seconds): to the nearest,
// from the nearest MB x ms, as the state store keeps it, so that a restarted NM reports the
// same figure.
int64_t ReportedMbSeconds(double memory_mb_seconds);

}  // namespace weft::nm::internal

#endif  // WEFT_NM_NODE_MANAGER_INTERNAL_H_
