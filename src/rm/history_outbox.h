// Copyright Weft authors. The RM's durable outbox for application history (issue 31): the
// history records the RM has produced and the history store has not yet taken, in a private
// SQLite file beside the RM's state. A record the outbox holds survives an RM kill -9 and a
// history-store outage; HistoryPublisher (history_publisher.h) drains it into the store.
#ifndef WEFT_RM_HISTORY_OUTBOX_H_
#define WEFT_RM_HISTORY_OUTBOX_H_

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weft::rm {

// One record waiting for the history store.
struct OutboxEntry {
  enum class Kind : int { kApplication = 1, kAttempt = 2, kContainer = 3 };
  int64_t seq = 0;  // its row, assigned by Append (ascending in append order)
  Kind kind = Kind::kContainer;
  std::string id;       // the record's id (application, attempt or container id)
  std::string payload;  // the serialized v1::*HistoryRecord
};

// Thread-compatible: one owner (the publisher's thread). Every mutating call is one SQLite
// transaction with synchronous=FULL: when it returns OK the change is on disk.
class HistoryOutbox {
 public:
  // Opens (creating, 0600 in a private directory) the outbox at `path`, held exclusively (a
  // lock on <path>.lock) until destroyed: FailedPrecondition while another process or
  // HistoryOutbox holds it. Errors name the path.
  static absl::StatusOr<std::unique_ptr<HistoryOutbox>> Open(const std::string& path);
  ~HistoryOutbox();
  HistoryOutbox(const HistoryOutbox&) = delete;
  HistoryOutbox& operator=(const HistoryOutbox&) = delete;

  // Appends the entries (their seq is ignored) in one transaction.
  absl::Status Append(const std::vector<OutboxEntry>& entries);
  // The oldest `limit` entries, by seq.
  absl::StatusOr<std::vector<OutboxEntry>> Peek(int limit);
  // Removes the entries with these seqs, and records the applications among them as delivered
  // (Delivered()), in one transaction.
  absl::Status Remove(const std::vector<OutboxEntry>& delivered);
  // Applications whose record reached the history store and that the RM has not forgotten.
  absl::StatusOr<std::vector<std::string>> DeliveredApplications();
  // The RM no longer holds these applications: their delivered marks go.
  absl::Status ForgetApplications(const std::vector<std::string>& app_ids);
  // Entries waiting.
  absl::StatusOr<int64_t> Count();

  const std::string& path() const { return path_; }

 private:
  explicit HistoryOutbox(std::string path) : path_(std::move(path)) {}
  absl::Status Exec(const char* sql, const char* what);
  absl::Status Error(const char* what, int rc) const;

  std::string path_;
  sqlite3* db_ = nullptr;
  int lock_fd_ = -1;  // holds the exclusive lock on <path>.lock
};

}  // namespace weft::rm

#endif  // WEFT_RM_HISTORY_OUTBOX_H_
