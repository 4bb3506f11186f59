// Copyright Weft authors. The RM's side of application history (issue 31): makes the history
// records of finished apps, their attempts and their containers, hands them to the
// HistoryPublisher (history_publisher.h), and holds back what must wait until they are
// durable:
//  - an NM forgets a completed container (containers_to_be_removed_from_nm) only once that
//    container's record is in the outbox: until then a restarted RM hears of it again from the
//    NM (YARN-1372) and records it again;
//  - the RM forgets a finished app (AppManager keeps at most max_completed_apps) only once its
//    records are in the outbox; a restarted RM publishes again every finished app its state
//    store holds and the outbox has not marked delivered.
// Publishing twice is harmless: the store keeps one record per id.
#ifndef WEFT_RM_HISTORY_RECORDER_H_
#define WEFT_RM_HISTORY_RECORDER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "common/event_loop.h"
#include "common/resource.h"
#include "rm/history_publisher.h"
#include "rm/rm_context.h"
#include "weft/v1/common.pb.h"
#include "weft/v1/history.pb.h"

namespace weft::rm {

struct RmApp;

// Thread-compatible: the RM loop only.
class HistoryRecorder {
 public:
  // History is off until Enable(): nothing is recorded or held back.
  explicit HistoryRecorder(RmContext* ctx) : ctx_(ctx) {}
  ~HistoryRecorder();

  // Starts publishing into `store` through the outbox of `options` (HistoryPublisher::Start;
  // its errors). The loop follows its progress with a timer while records are pending.
  absl::Status Enable(HistoryPublisherOptions options, HistoryPublisher::StoreOpener open);

  bool enabled() const { return publisher_ != nullptr; }

  // An NM reported container `status` COMPLETE (node `node_id`): its record, from the status
  // (times, granted resource and measured usage, which the NM fills) and what the RM knows
  // (its user, priority and node's web address). Once per container while its record is
  // pending; again after that is harmless.
  void ContainerReported(const v1::ContainerStatus& status, const std::string& node_id);
  // The RM ended container `name` itself and no NM will report it (its node was lost): its
  // record from the RM's knowledge (granted `resource` since `allocated_ms`, no measured usage).
  void ContainerLost(const std::string& name, const std::string& node_id,
                     const Resource& resource, int64_t allocated_ms, int32_t priority,
                     int32_t exit_status, const std::string& diagnostics);
  // NodeTracker asks before telling `node_id` to forget container `name`: false when the
  // container's record is not durable yet (the removal is then sent once it is).
  bool MayRemove(const std::string& node_id, const std::string& name);

  // The app ended: its record and its attempts'.
  void AppFinished(const RmApp& app);
  // Whether the finished app's records are durable (the RM may forget it). True when history
  // is off.
  bool AppDurable(const std::string& app_id) const;
  // The RM forgot the app (AppManager evicted it).
  void AppForgotten(const std::string& app_id);
  // After recovery: publishes every finished app among `apps` that no earlier run delivered.
  void RecoverFinished(const std::vector<const RmApp*>& finished);

  // The publisher's figures (zero when off).
  HistoryPublisherStats stats() const;

  // The records, for tests.
  v1::ApplicationHistoryRecord AppRecord(const RmApp& app) const;

 private:
  // On the loop: every record published up to `seq` is durable.
  void Durable(int64_t seq);
  // While records are pending, looks at the publisher's progress every kDurabilityPollMs.
  void WatchDurability();
  void PublishContainer(v1::ContainerHistoryRecord record, bool reported);

  RmContext* ctx_;
  std::unique_ptr<HistoryPublisher> publisher_;
  TimerId poll_timer_ = 0;
  int64_t durable_ = 0;
  // Containers published and not yet durable, by name -> their sequence number and whether
  // the record came from an NM's report (a report replaces a record the RM made itself).
  struct Pending {
    int64_t seq = 0;
    bool reported = false;
  };
  absl::flat_hash_map<std::string, Pending> pending_containers_;
  // Containers recently recorded from an NM's report (durable), so that its repeated COMPLETE
  // report (until the removal reaches it) is not published again: a bounded FIFO.
  absl::flat_hash_set<std::string> recent_;
  std::deque<std::string> recent_order_;
  // Removals waiting for durability: seq -> (node, container).
  std::multimap<int64_t, std::pair<std::string, std::string>> held_removals_;
  absl::flat_hash_set<std::string> held_names_;  // the containers in held_removals_
  // Finished apps published by this RM and not yet durable -> sequence number.
  absl::flat_hash_map<std::string, int64_t> pending_apps_;
  // Apps whose records are known durable (published by this RM, or delivered by an earlier run).
  absl::flat_hash_set<std::string> durable_apps_;
};

// The attempt id of container `name` (appattempt_<ts>_<seq>_<attempt>); "" when `name` is not a
// container id.
std::string AttemptOfContainer(const std::string& name);

}  // namespace weft::rm

#endif  // WEFT_RM_HISTORY_RECORDER_H_
