// Copyright Weft authors. The RM's utilisation history: a bounded ring of samples of the
// cluster's use (per resource type), its containers and apps, and its queues, taken every
// history_sample_ms on the RM loop and kept for history_retention_s. The web UI draws it and
// GET /ws/v1/cluster/history serves it (docs/web.md). It lives in memory only: a restarted RM,
// or a standby that becomes active, starts with an empty history.
#ifndef WEFT_RM_CLUSTER_HISTORY_H_
#define WEFT_RM_CLUSTER_HISTORY_H_

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/event_loop.h"
#include "common/resource.h"
#include "weft/v1/client.pb.h"

namespace weft::scheduler {
class Scheduler;
}

namespace weft::rm {

// At most this many queues per sample: the leaf queues, or when there are more, the ones with
// the largest use at that moment (ties by path). Bounds a sample's size.
inline constexpr int kHistoryMaxQueues = 8;
// At most this many samples in the ring, whatever the flags say (history_retention_s /
// history_sample_ms above it is refused): 100,000 x sizeof(HistorySample) (264 bytes) is
// about 25 MiB. The defaults keep 8,640 samples, about 2.2 MiB.
inline constexpr int64_t kHistoryMaxSamples = 100'000;

// One queue in a sample: shares of the cluster's total in percent of its dominant resource
// (the same figures as /ws/v1/cluster/scheduler's absoluteUsedCapacity, and its "guaranteed":
// the queue's entitlement, i.e. fair share or elastic guarantee capped by demand).
struct HistoryQueue {
  int32_t name = -1;         // index into ClusterHistory::Slice::queue_names
  float used_pct = 0;        // 0..100 (more during a transient over-allocation)
  float guaranteed_pct = 0;  // 0..100
};

// One sample. Fixed size, no heap memory: 264 bytes on x86-64 (two Resources of
// kMaxResourceTypes int64 each, 40 bytes of time and counters, kHistoryMaxQueues x 12 bytes;
// cluster_history.cc asserts the bound).
struct HistorySample {
  int64_t time_ms = 0;  // the RM loop's clock, ms since the Unix epoch
  Resource used;        // allocated to containers, per registered resource type
  Resource total;       // the live nodes' capacity
  int64_t containers_running = 0;
  int64_t containers_pending = 0;  // containers the apps still ask for
  int32_t apps_running = 0;
  int32_t apps_pending = 0;  // submitted or accepted, not yet running
  int32_t num_queues = 0;    // entries of `queues` in use
  std::array<HistoryQueue, kHistoryMaxQueues> queues{};
};

struct HistoryOptions {
  int64_t sample_ms = 10'000;    // between samples; > 0
  int64_t retention_s = 86'400;  // how long a sample is kept; > 0
};

// Checks the flags' values: both > 0, retention_s * 1000 / sample_ms in [1, kHistoryMaxSamples].
// InvalidArgument naming the flags (--history-sample-ms, --history-retention-s) otherwise.
absl::Status ValidateHistoryOptions(const HistoryOptions& options);

// The ring. Add() is called on the RM loop; every other method may be called from any thread
// (the web server's HTTP threads read it while the RM runs). Memory: at most capacity()
// samples of sizeof(HistorySample) bytes, plus one string per distinct queue path recorded.
class ClusterHistory {
 public:
  // `resource_names` are the registered resource types in registry order (ids of `used` and
  // `total`). `options` must be valid (ValidateHistoryOptions).
  ClusterHistory(HistoryOptions options, std::vector<std::string> resource_names);

  // Appends a sample, dropping the oldest when the ring is full and samples older than the
  // retention. `queue_paths` names the queues of `sample` (sample.queues[i].name is ignored
  // and set here), in the same order.
  void Add(HistorySample sample, const std::vector<std::string>& queue_paths);

  // The samples with time_ms > since_ms, oldest first, and the queue names they refer to.
  struct Slice {
    std::vector<HistorySample> samples;
    std::vector<std::string> queue_names;  // index = HistoryQueue::name
  };
  Slice Since(int64_t since_ms) const;

  size_t size() const;
  int64_t capacity() const { return capacity_; }  // retention_s * 1000 / sample_ms
  const HistoryOptions& options() const { return options_; }
  const std::vector<std::string>& resource_names() const { return resource_names_; }

 private:
  const HistoryOptions options_;
  const std::vector<std::string> resource_names_;
  const int64_t capacity_;
  mutable absl::Mutex mu_;
  std::vector<HistorySample> ring_ ABSL_GUARDED_BY(mu_);  // grows to capacity_, then wraps
  size_t head_ ABSL_GUARDED_BY(mu_) = 0;  // the oldest sample once the ring has wrapped
  std::vector<std::string> queue_names_ ABSL_GUARDED_BY(mu_);
};

// Takes a sample every sample_ms on `loop` (first one sample_ms after construction) by calling
// `sample(now_ms)` and adding what it returns with its queue paths. Construct, use and destroy
// it on the loop's thread; destruction cancels the timer.
class HistorySampler {
 public:
  using SampleFn = std::function<HistorySample(int64_t now_ms, std::vector<std::string>* paths)>;
  HistorySampler(EventLoop* loop, std::shared_ptr<ClusterHistory> history, SampleFn sample);
  ~HistorySampler();
  HistorySampler(const HistorySampler&) = delete;
  HistorySampler& operator=(const HistorySampler&) = delete;

 private:
  void Arm();

  EventLoop* loop_;
  std::shared_ptr<ClusterHistory> history_;
  SampleFn sample_;
  TimerId timer_ = 0;
};

// The RM's figures at `now_ms` as a sample: cluster use and capacity and the root queue's
// pending containers from `scheduler` (whose entitlements it refreshes), app counts from
// `metrics` (ResourceManager::GetClusterMetrics). `paths` receives the sampled queues' paths.
HistorySample SampleCluster(scheduler::Scheduler& scheduler,
                            const v1::GetClusterMetricsResponse& metrics, int64_t now_ms,
                            std::vector<std::string>* paths);

}  // namespace weft::rm

#endif  // WEFT_RM_CLUSTER_HISTORY_H_
