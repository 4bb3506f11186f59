// Copyright Weft authors. Moves the RM's history records into the history store (issue 31)
// through the durable outbox (history_outbox.h), on a thread of its own: the RM loop never
// waits for a disk or for the store.
//
//   RM loop --Publish--> memory queue --(one transaction)--> outbox file --(batches)--> store
//                         stats().durable_seq <---'                    removed once stored
//
// Delivery is at least once: a record is removed from the outbox only after the store took it,
// so a crash or a store error repeats it, never loses it; the store's upserts (keyed by id)
// make a repeat a no-op, so each record is there exactly once.
#ifndef WEFT_RM_HISTORY_PUBLISHER_H_
#define WEFT_RM_HISTORY_PUBLISHER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "history/history_store.h"
#include "rm/history_outbox.h"

namespace weft::rm {

struct HistoryPublisherOptions {
  std::string outbox_path;  // the outbox's SQLite file (HistoryOutbox::Open)
  std::string store_name;   // the store, for messages (its URL)
  int batch = 500;          // records per store batch
  // A failed store write is retried after retry_min_ms, doubling up to retry_max_ms.
  int64_t retry_min_ms = 100;
  int64_t retry_max_ms = 5000;
  // Retention (HistoryStore::Prune), on the publisher's thread once the store is open and then
  // every prune_interval_ms: applications that finished more than keep_days ago (0: none by
  // age), and all but the newest keep_apps (0: no bound).
  double keep_days = 0;
  int64_t keep_apps = 0;
  int64_t prune_interval_ms = 3'600'000;
};

struct HistoryPublisherStats {
  int64_t published = 0;       // records given to Publish since start
  int64_t durable_seq = 0;     // Publish's sequence numbers <= this are in the outbox
  int64_t delivered = 0;       // records the store took since start
  int64_t outbox_entries = 0;  // waiting in the outbox (as of the last pass)
  int64_t store_failures = 0;  // failed store writes since start (each retried)
  int64_t outbox_failures = 0;  // failed outbox appends since start (each retried)
  int64_t pruned = 0;           // applications removed by retention since start
  std::string last_error;      // the last failure's message; "" if none
};

class HistoryPublisher {
 public:
  // Opens the history store (history::OpenHistoryStore for a URL).
  using StoreOpener = std::function<absl::StatusOr<std::unique_ptr<history::HistoryStore>>()>;

  // Opens the outbox and the store and starts the thread, which first drains what an earlier
  // run left. A store that is unreachable now (Unavailable: a PostgreSQL server that is down)
  // does not stop the start: records wait in the outbox and the thread opens it later, with
  // the same backoff as a failed write. Errors: the outbox's; the store's other errors (a bad
  // URL, a store that refuses its schema).
  static absl::StatusOr<std::unique_ptr<HistoryPublisher>> Start(HistoryPublisherOptions options,
                                                                 StoreOpener open);
  // Stops the thread: what is queued is appended to the outbox first (bounded: one try), what
  // is in the outbox stays there for the next start.
  ~HistoryPublisher();

  // Thread-safe. Queues records (kind, id, serialized record) and returns the sequence number
  // of the last (ids start at 1 and grow by one per record).
  int64_t Publish(std::vector<OutboxEntry> entries);
  // The applications delivered by earlier runs and not forgotten, as read at Start.
  const std::vector<std::string>& delivered_at_start() const { return delivered_at_start_; }
  // Thread-safe. The RM no longer holds these applications (their delivered marks go).
  void ForgetApplications(std::vector<std::string> app_ids);

  HistoryPublisherStats stats() const;
  std::string Describe() const;  // "outbox '<path>' -> <store>"

 private:
  HistoryPublisher(HistoryPublisherOptions options, StoreOpener open,
                   std::unique_ptr<HistoryOutbox> outbox);
  void Run();
  // Puts the entries into the store in one batch (HistoryStore::PutBatch), or one entry.
  absl::Status DeliverBatch(const std::vector<OutboxEntry>& entries);
  absl::Status Deliver(const OutboxEntry& e);
  // One retention pass (options' keep_days and keep_apps); logs what it removed or its error.
  void Prune();

  const HistoryPublisherOptions options_;
  const StoreOpener open_;
  std::unique_ptr<history::HistoryStore> store_;  // the thread's only (after Start); null until open
  const std::unique_ptr<HistoryOutbox> outbox_;   // the thread's only
  std::vector<std::string> delivered_at_start_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::vector<OutboxEntry> queue_;       // published, not yet appended
  std::vector<std::string> to_forget_;   // ForgetApplications, not yet done
  int64_t next_seq_ = 1;
  bool stop_ = false;
  HistoryPublisherStats stats_;
  std::thread thread_;
};

}  // namespace weft::rm

#endif  // WEFT_RM_HISTORY_PUBLISHER_H_
