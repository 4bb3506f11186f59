// Copyright Weft authors.
#include "rm/history_publisher.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/log.h"
#include "weft/v1/history.pb.h"

namespace weft::rm {

absl::StatusOr<std::unique_ptr<HistoryPublisher>> HistoryPublisher::Start(
    HistoryPublisherOptions options, StoreOpener open) {
  if (!open) return absl::InvalidArgumentError("history publisher: no history store");
  absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = open();
  if (!store.ok() && !absl::IsUnavailable(store.status())) return store.status();
  absl::StatusOr<std::unique_ptr<HistoryOutbox>> outbox = HistoryOutbox::Open(options.outbox_path);
  if (!outbox.ok()) return outbox.status();
  absl::StatusOr<std::vector<std::string>> delivered = (*outbox)->DeliveredApplications();
  if (!delivered.ok()) return delivered.status();
  absl::StatusOr<int64_t> waiting = (*outbox)->Count();
  if (!waiting.ok()) return waiting.status();
  std::unique_ptr<HistoryPublisher> p(new HistoryPublisher(
      std::move(options), std::move(open), *std::move(outbox)));
  if (store.ok()) {
    p->store_ = *std::move(store);
  } else {
    log::Warn("history_store_unavailable", {{"store", p->options_.store_name},
                                            {"error", store.status()},
                                            {"what", "records wait in the outbox; retried"}});
  }
  p->delivered_at_start_ = *std::move(delivered);
  p->stats_.outbox_entries = *waiting;
  log::Info("history_publisher_started", {{"outbox", p->outbox_->path()},
                                          {"store", p->options_.store_name},
                                          {"waiting", *waiting},
                                          {"delivered_apps", static_cast<int64_t>(
                                                                 p->delivered_at_start_.size())}});
  p->thread_ = std::thread([raw = p.get()] { raw->Run(); });
  return p;
}

HistoryPublisher::HistoryPublisher(HistoryPublisherOptions options, StoreOpener open,
                                   std::unique_ptr<HistoryOutbox> outbox)
    : options_(std::move(options)),
      open_(std::move(open)),
      outbox_(std::move(outbox)) {}

HistoryPublisher::~HistoryPublisher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t HistoryPublisher::Publish(std::vector<OutboxEntry> entries) {
  int64_t last;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (OutboxEntry& e : entries) queue_.push_back(std::move(e));
    next_seq_ += static_cast<int64_t>(entries.size());
    last = next_seq_ - 1;
    stats_.published += static_cast<int64_t>(entries.size());
  }
  wake_.notify_all();
  return last;
}

void HistoryPublisher::ForgetApplications(std::vector<std::string> app_ids) {
  if (app_ids.empty()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (std::string& id : app_ids) to_forget_.push_back(std::move(id));
  }
  wake_.notify_all();
}

HistoryPublisherStats HistoryPublisher::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

std::string HistoryPublisher::Describe() const {
  return absl::StrCat("outbox '", outbox_->path(), "' -> ", options_.store_name);
}

absl::Status HistoryPublisher::DeliverBatch(const std::vector<OutboxEntry>& entries) {
  if (store_ == nullptr) {
    absl::StatusOr<std::unique_ptr<history::HistoryStore>> store = open_();
    if (!store.ok()) {
      // Opening is retried like a write: only a store that is down is worth waiting for, and
      // Start refused the others; anything else is reported as Unavailable to keep retrying.
      return absl::UnavailableError(
          absl::StrCat("opening the history store: ", store.status().message()));
    }
    store_ = *std::move(store);
    log::Info("history_store_opened", {{"store", store_->Describe()}});
  }
  history::HistoryBatch batch;
  for (const OutboxEntry& e : entries) {
    bool parsed = false;
    switch (e.kind) {
      case OutboxEntry::Kind::kApplication:
        parsed = batch.applications.emplace_back().ParseFromString(e.payload);
        break;
      case OutboxEntry::Kind::kAttempt:
        parsed = batch.attempts.emplace_back().ParseFromString(e.payload);
        break;
      case OutboxEntry::Kind::kContainer:
        parsed = batch.containers.emplace_back().ParseFromString(e.payload);
        break;
    }
    if (!parsed)
      return absl::DataLossError(absl::StrCat("outbox entry ", e.seq, " (", e.id,
                                              "): its record does not parse"));
  }
  return store_->PutBatch(batch);
}

absl::Status HistoryPublisher::Deliver(const OutboxEntry& e) {
  switch (e.kind) {
    case OutboxEntry::Kind::kApplication: {
      v1::ApplicationHistoryRecord r;
      if (!r.ParseFromString(e.payload))
        return absl::DataLossError(absl::StrCat("outbox entry ", e.seq, " (", e.id,
                                                "): not an application record"));
      return store_->PutApplication(r);
    }
    case OutboxEntry::Kind::kAttempt: {
      v1::AttemptHistoryRecord r;
      if (!r.ParseFromString(e.payload))
        return absl::DataLossError(absl::StrCat("outbox entry ", e.seq, " (", e.id,
                                                "): not an attempt record"));
      return store_->PutAttempt(r);
    }
    case OutboxEntry::Kind::kContainer: {
      v1::ContainerHistoryRecord r;
      if (!r.ParseFromString(e.payload))
        return absl::DataLossError(absl::StrCat("outbox entry ", e.seq, " (", e.id,
                                                "): not a container record"));
      return store_->PutContainer(r);
    }
  }
  return absl::InternalError("outbox entry of an unknown kind");
}

void HistoryPublisher::Prune() {
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  const int64_t older_than =
      options_.keep_days > 0 ? now_ms - static_cast<int64_t>(options_.keep_days * 86'400'000.0) : 0;
  absl::StatusOr<int64_t> removed = store_->Prune(
      older_than,
      options_.keep_apps > 0 ? std::optional<int64_t>(options_.keep_apps) : std::nullopt);
  if (!removed.ok()) {
    log::Warn("history_prune_failed", {{"store", options_.store_name}, {"error", removed.status()}});
    return;
  }
  if (*removed > 0)
    log::Info("history_pruned", {{"store", options_.store_name}, {"applications", *removed}});
  std::lock_guard<std::mutex> l(mu_);
  stats_.pruned += *removed;
}

void HistoryPublisher::Run() {
  using Clock = std::chrono::steady_clock;
  bool outbox_has = true;  // what an earlier run left is drained first
  int64_t backoff_ms = 0;
  Clock::time_point next_try = Clock::now();
  const bool retention = options_.keep_days > 0 || options_.keep_apps > 0;
  Clock::time_point next_prune = Clock::now();
  for (;;) {
    std::vector<OutboxEntry> batch;
    std::vector<std::string> forget;
    int64_t batch_last = 0;
    bool stopping;
    {
      std::unique_lock<std::mutex> l(mu_);
      auto work = [&] { return stop_ || !queue_.empty() || !to_forget_.empty(); };
      Clock::time_point until = Clock::time_point::max();
      if (outbox_has) until = next_try;
      if (retention) until = std::min(until, next_prune);
      if (until == Clock::time_point::max()) {
        wake_.wait(l, work);
      } else {
        wake_.wait_until(l, until, work);
      }
      batch.swap(queue_);
      forget.swap(to_forget_);
      batch_last = next_seq_ - 1;
      stopping = stop_;
    }
    if (!batch.empty()) {
      absl::Status s = outbox_->Append(batch);
      if (!s.ok()) {
        log::Error("history_outbox_append_failed", {{"error", s}, {"records",
                                                                   static_cast<int64_t>(batch.size())}});
        std::lock_guard<std::mutex> l(mu_);
        ++stats_.outbox_failures;
        stats_.last_error = std::string(s.message());
        // Back in front, in order: they are appended before anything published since.
        for (OutboxEntry& e : queue_) batch.push_back(std::move(e));
        queue_ = std::move(batch);
        if (stopping) break;
        next_try = Clock::now() + std::chrono::milliseconds(options_.retry_max_ms);
        outbox_has = true;
        continue;
      }
      {
        std::lock_guard<std::mutex> l(mu_);
        stats_.durable_seq = batch_last;
        stats_.outbox_entries += static_cast<int64_t>(batch.size());
      }
      outbox_has = true;
    }
    if (!forget.empty()) {
      if (absl::Status s = outbox_->ForgetApplications(forget); !s.ok()) {
        // Only costs a redundant publish after a restart; not retried.
        log::Warn("history_outbox_forget_failed", {{"error", s}});
      }
    }
    if (stopping) break;
    if (retention && store_ != nullptr && Clock::now() >= next_prune) {
      Prune();
      next_prune = Clock::now() + std::chrono::milliseconds(options_.prune_interval_ms);
    }
    if (!outbox_has || Clock::now() < next_try) continue;
    absl::StatusOr<std::vector<OutboxEntry>> waiting = outbox_->Peek(options_.batch);
    if (!waiting.ok()) {
      log::Error("history_outbox_read_failed", {{"error", waiting.status()}});
      next_try = Clock::now() + std::chrono::milliseconds(options_.retry_max_ms);
      continue;
    }
    if (waiting->empty()) {
      outbox_has = false;
      continue;
    }
    // The whole batch in one store transaction; record by record only when the batch is
    // refused as invalid, to find the records no store will take.
    absl::Status failure = DeliverBatch(*waiting);
    size_t done = failure.ok() ? waiting->size() : 0;
    const bool one_by_one = failure.code() == absl::StatusCode::kInvalidArgument ||
                            failure.code() == absl::StatusCode::kDataLoss;
    if (one_by_one) failure = absl::OkStatus();
    for (; one_by_one && done < waiting->size(); ++done) {
      failure = Deliver((*waiting)[done]);
      if (failure.ok()) continue;
      // A record that no store will ever take (it does not parse, or the store refuses it as
      // invalid) must not hold up the ones behind it: it is logged whole and dropped.
      if (failure.code() == absl::StatusCode::kDataLoss ||
          failure.code() == absl::StatusCode::kInvalidArgument) {
        log::Error("history_record_refused", {{"id", (*waiting)[done].id},
                                              {"seq", (*waiting)[done].seq},
                                              {"error", failure}});
        failure = absl::OkStatus();
        continue;
      }
      break;
    }
    if (done > 0) {
      waiting->resize(done);
      if (absl::Status s = outbox_->Remove(*waiting); !s.ok()) {
        // Delivered but still in the outbox: delivered again later, a no-op for the store.
        log::Error("history_outbox_remove_failed", {{"error", s}});
      }
    }
    std::lock_guard<std::mutex> l(mu_);
    stats_.delivered += static_cast<int64_t>(done);
    stats_.outbox_entries = std::max<int64_t>(0, stats_.outbox_entries - static_cast<int64_t>(done));
    if (!failure.ok()) {
      ++stats_.store_failures;
      stats_.last_error = std::string(failure.message());
      backoff_ms = std::clamp<int64_t>(backoff_ms * 2, options_.retry_min_ms, options_.retry_max_ms);
      next_try = Clock::now() + std::chrono::milliseconds(backoff_ms);
      // Logged once per backoff step, not per record.
      log::Warn("history_store_write_failed",
                {{"store", options_.store_name}, {"error", failure}, {"retry_ms", backoff_ms}});
    } else {
      if (backoff_ms > 0)
        log::Info("history_store_writes_resumed", {{"store", options_.store_name}});
      backoff_ms = 0;
    }
  }
}

}  // namespace weft::rm
