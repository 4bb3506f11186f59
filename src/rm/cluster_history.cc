// Copyright Weft authors.
#include "rm/cluster_history.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/scheduler.h"
#include "scheduler/state.h"

namespace weft::rm {

// The memory bound stated in the header: 264 bytes a sample (the ring's size is fixed by it).
static_assert(sizeof(HistorySample) <= 264, "HistorySample grew: update the bounds documented "
                                            "in cluster_history.h and docs/web.md");

absl::Status ValidateHistoryOptions(const HistoryOptions& o) {
  if (o.sample_ms <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--history-sample-ms ", o.sample_ms, " must be > 0"));
  if (o.retention_s <= 0)
    return absl::InvalidArgumentError(
        absl::StrCat("--history-retention-s ", o.retention_s, " must be > 0"));
  if (o.retention_s > kHistoryMaxSamples * 1000 * 1000)  // keeps retention_s * 1000 in range
    return absl::InvalidArgumentError(
        absl::StrCat("--history-retention-s ", o.retention_s, " is too long"));
  const int64_t samples = o.retention_s * 1000 / o.sample_ms;
  if (samples < 1)
    return absl::InvalidArgumentError(absl::StrCat("--history-retention-s ", o.retention_s,
                                                   " is shorter than one --history-sample-ms (",
                                                   o.sample_ms, " ms): no sample would be kept"));
  if (samples > kHistoryMaxSamples)
    return absl::InvalidArgumentError(absl::StrCat(
        "--history-retention-s ", o.retention_s, " / --history-sample-ms ", o.sample_ms,
        " would keep ", samples, " samples; at most ", kHistoryMaxSamples, " (",
        kHistoryMaxSamples * static_cast<int64_t>(sizeof(HistorySample)) / (1 << 20),
        " MiB) are kept: sample less often or keep less"));
  return absl::OkStatus();
}

ClusterHistory::ClusterHistory(HistoryOptions options, std::vector<std::string> resource_names)
    : options_(options),
      resource_names_(std::move(resource_names)),
      capacity_(
          std::clamp<int64_t>(options.retention_s * 1000 / std::max<int64_t>(1, options.sample_ms),
                              1, kHistoryMaxSamples)) {}

void ClusterHistory::Add(HistorySample sample, const std::vector<std::string>& queue_paths) {
  absl::MutexLock l(&mu_);
  sample.num_queues = std::min<int32_t>(sample.num_queues, kHistoryMaxQueues);
  sample.num_queues =
      std::min<int32_t>(sample.num_queues, static_cast<int32_t>(queue_paths.size()));
  for (int32_t i = 0; i < sample.num_queues; ++i) {
    const std::string& path = queue_paths[static_cast<size_t>(i)];
    auto it = std::find(queue_names_.begin(), queue_names_.end(), path);
    if (it == queue_names_.end()) it = queue_names_.insert(queue_names_.end(), path);
    sample.queues[static_cast<size_t>(i)].name = static_cast<int32_t>(it - queue_names_.begin());
  }
  if (static_cast<int64_t>(ring_.size()) < capacity_) {
    ring_.push_back(sample);
  } else {
    ring_[head_] = sample;
    head_ = (head_ + 1) % ring_.size();
  }
}

ClusterHistory::Slice ClusterHistory::Since(int64_t since_ms) const {
  absl::MutexLock l(&mu_);
  Slice out;
  if (ring_.empty()) return out;
  // Samples older than the retention (time went on since the last one) are not served either.
  const size_t newest = (head_ + ring_.size() - 1) % ring_.size();
  const int64_t oldest_kept = ring_[newest].time_ms - options_.retention_s * 1000;
  const int64_t after = std::max(since_ms, oldest_kept);
  for (size_t k = 0; k < ring_.size(); ++k) {
    const HistorySample& s = ring_[(head_ + k) % ring_.size()];
    if (s.time_ms > after) out.samples.push_back(s);
  }
  out.queue_names = queue_names_;
  return out;
}

size_t ClusterHistory::size() const {
  absl::MutexLock l(&mu_);
  return ring_.size();
}

HistorySampler::HistorySampler(EventLoop* loop, std::shared_ptr<ClusterHistory> history,
                               SampleFn sample)
    : loop_(loop), history_(std::move(history)), sample_(std::move(sample)) {
  Arm();
}

HistorySampler::~HistorySampler() {
  if (timer_ != 0) loop_->Cancel(timer_);
}

void HistorySampler::Arm() {
  timer_ = loop_->Schedule(history_->options().sample_ms, [this] {
    timer_ = 0;
    std::vector<std::string> paths;
    HistorySample s = sample_(loop_->NowMs(), &paths);
    history_->Add(s, paths);
    Arm();
  });
}

namespace {

float SharePct(const Resource& r, const Resource& total) {
  return static_cast<float>(r.DominantShare(total) * 100.0);
}

}  // namespace

HistorySample SampleCluster(scheduler::Scheduler& sched,
                            const v1::GetClusterMetricsResponse& metrics, int64_t now_ms,
                            std::vector<std::string>* paths) {
  HistorySample s;
  s.time_ms = now_ms;
  s.used = sched.cluster_allocated();
  s.total = sched.cluster_total();
  const std::vector<scheduler::QueueSummary> summaries = sched.QueueSummaries();
  if (!summaries.empty()) {  // root first
    s.containers_running = summaries.front().containers;
    s.containers_pending = summaries.front().pending_containers;
  }
  s.apps_running = metrics.apps_running();
  s.apps_pending = metrics.apps_pending();
  sched.RefreshEntitlements();
  std::vector<const scheduler::QueueNode*> leaves;
  for (const scheduler::QueueNode* q : sched.queues())
    if (q->is_leaf()) leaves.push_back(q);
  if (static_cast<int>(leaves.size()) > kHistoryMaxQueues) {
    // The busiest ones, then back in tree order so that a chart's legend stays stable.
    std::partial_sort(leaves.begin(), leaves.begin() + kHistoryMaxQueues, leaves.end(),
                      [&](const scheduler::QueueNode* a, const scheduler::QueueNode* b) {
                        const double ua = a->usage.DominantShare(s.total);
                        const double ub = b->usage.DominantShare(s.total);
                        return ua != ub ? ua > ub : a->path < b->path;
                      });
    leaves.resize(kHistoryMaxQueues);
    std::sort(leaves.begin(), leaves.end(),
              [](const scheduler::QueueNode* a, const scheduler::QueueNode* b) {
                return a->index < b->index;
              });
  }
  paths->clear();
  for (const scheduler::QueueNode* q : leaves) {
    HistoryQueue& out = s.queues[static_cast<size_t>(s.num_queues++)];
    out.used_pct = SharePct(q->usage, s.total);
    out.guaranteed_pct = SharePct(q->entitlement, s.total);
    paths->push_back(q->path);
  }
  return s;
}

}  // namespace weft::rm
