// Copyright Weft authors. The application history store (issue 31): where finished
// applications, their attempts and their containers are kept after the RM forgets them, for
// YARN's Application History API and accounting. One contract, several back-ends (memory,
// SQLite, PostgreSQL; open one by URL with history/open_history_store.h), all held to
// history_store_conformance_test.cc.
#ifndef WEFT_HISTORY_HISTORY_STORE_H_
#define WEFT_HISTORY_HISTORY_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "weft/v1/history.pb.h"

namespace weft::history {

// Which applications ListApplications returns; an empty field matches everything.
struct ApplicationFilter {
  std::string user;
  std::string queue;
  std::vector<v1::ApplicationState> states;  // final_state is one of these
  std::optional<int64_t> finished_since_ms;  // finish_time_ms >= this (inclusive)
  std::optional<int64_t> finished_until_ms;  // finish_time_ms < this (exclusive)
  int64_t limit = 0;                         // at most this many; 0 = no limit
};

// One line of QueueReport or UserReport: the applications of one queue or one user, with their
// derived aggregates (see HistoryStore) summed.
struct UsageLine {
  std::string key;  // the queue's or the user's name
  int64_t applications = 0;
  std::map<std::string, int64_t> resource_seconds;  // per type; types summing to 0 left out
  int64_t memory_mb_seconds_used = 0;
  int64_t cpu_time_ms = 0;
  int64_t network_tx_bytes = 0;
  bool operator==(const UsageLine&) const = default;
};

// Many records written at once (PutBatch).
struct HistoryBatch {
  std::vector<v1::ApplicationHistoryRecord> applications;
  std::vector<v1::AttemptHistoryRecord> attempts;
  std::vector<v1::ContainerHistoryRecord> containers;
};

// What one container adds to its application's aggregates (see HistoryStore).
struct ContainerContribution {
  // allocated[type] * (finish_time_ms - start_time_ms) / 1000, truncated, for every allocated
  // type; 0 when start_time_ms is 0, finish_time_ms < start_time_ms or the amount is negative.
  std::map<std::string, int64_t> resource_seconds;
  int64_t memory_mb_seconds_used = 0;  // its memory_mb_seconds
  int64_t cpu_time_ms = 0;
  int64_t network_tx_bytes = 0;
  int64_t peak_memory_bytes = 0;  // its max_rss_bytes
};
ContainerContribution ContributionOf(const v1::ContainerHistoryRecord& container);

// Sets `app`'s derived aggregates from its containers' contributions (whatever it carried).
void SetAggregates(const std::vector<ContainerContribution>& containers,
                   v1::ApplicationHistoryRecord* app);

// The contract. Thread-safe. Records are keyed by their id; every Put is an UPSERT: a record
// whose id is new is added, one whose id exists replaces the stored record whole (the same
// content again is a no-op, so a writer may retry; a different content, e.g. a record
// completed later, wins). Attempts and containers may be put before their application.
//
// An application's aggregates are derived by the store from the containers stored for it
// (those whose application_id is its id), whatever the application record carried:
//   resource_seconds[type]  = the sum over its containers of
//                             allocated[type] * (finish_time_ms - start_time_ms) / 1000,
//                             truncated per container, as YARN does; a container with
//                             start_time_ms 0 or finish_time_ms < start_time_ms adds 0
//                             (ContributionOf); types summing to 0 are left out of the map;
//   memory_mb_seconds_used, cpu_time_ms, network_tx_bytes
//                           = the sums of its containers' memory_mb_seconds, cpu_time_ms,
//                             network_tx_bytes;
//   peak_memory_bytes       = the largest of its containers' max_rss_bytes (0 with none).
// GetApplication, ListApplications and the reports return the derived values. They depend only
// on the set of stored records, not on the order of the Puts: a container put before or after
// its application, or the same container put twice (the RM writes through an at-least-once
// outbox), gives the same result; a container put again under another application id moves
// its contribution.
//
// Validation: a record or argument with an empty id fails InvalidArgument naming the field, and
// the store is left unchanged. Back-end errors carry the store and the operation in their
// message. A store whose server cannot be reached (PostgreSQL) returns Unavailable; since every
// Put is idempotent, the caller retries the same call later.
class HistoryStore {
 public:
  virtual ~HistoryStore() = default;

  absl::Status PutApplication(const v1::ApplicationHistoryRecord& record);
  absl::Status PutAttempt(const v1::AttemptHistoryRecord& record);
  absl::Status PutContainer(const v1::ContainerHistoryRecord& record);
  // Each record as its Put would, in one transaction where the back-end has them (SQLite,
  // PostgreSQL: all or nothing). For bulk loads and for an outbox flushing many records. Fails
  // InvalidArgument, writing nothing, if any record would.
  absl::Status PutBatch(const HistoryBatch& batch);

  // NotFound naming the id when there is none.
  absl::StatusOr<v1::ApplicationHistoryRecord> GetApplication(absl::string_view application_id);
  absl::StatusOr<v1::AttemptHistoryRecord> GetAttempt(absl::string_view attempt_id);
  absl::StatusOr<v1::ContainerHistoryRecord> GetContainer(absl::string_view container_id);

  // Matching applications, by finish_time_ms descending, then application_id ascending.
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> ListApplications(
      const ApplicationFilter& filter);
  // The attempts of an application, by attempt_id ascending.
  absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> ListAttempts(
      absl::string_view application_id);
  // The containers of an application (attempt_id empty) or of one attempt (application_id may
  // then be empty), by container_id ascending. InvalidArgument when both are empty.
  absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> ListContainers(
      absl::string_view application_id, absl::string_view attempt_id = "");

  // Removes the applications that finished before `older_than_ms` (0: none by age) and, if
  // `keep_at_most` is set, all but the newest `keep_at_most` of the rest (newest in
  // ListApplications' order), each with every attempt and container of its id. Returns how
  // many applications were removed. InvalidArgument for a negative keep_at_most.
  absl::StatusOr<int64_t> Prune(int64_t older_than_ms, std::optional<int64_t> keep_at_most);

  // Per queue (by name ascending), over the applications that finished in
  // [since_ms, until_ms): how many, and their derived aggregates summed (peak memory aside).
  absl::StatusOr<std::vector<UsageLine>> QueueReport(int64_t since_ms, int64_t until_ms);
  // The same per user (by name ascending).
  absl::StatusOr<std::vector<UsageLine>> UserReport(int64_t since_ms, int64_t until_ms);

  // For messages: "memory", "sqlite:/path", the PostgreSQL URL with any password redacted.
  virtual std::string Describe() const = 0;

 protected:
  // The back-end's part; arguments already validated.
  virtual absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& record) = 0;
  virtual absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& record) = 0;
  virtual absl::Status DoPutContainer(const v1::ContainerHistoryRecord& record) = 0;
  // Default: each record through Do*, applications last; not atomic.
  virtual absl::Status DoPutBatch(const HistoryBatch& batch);
  // nullopt when absent.
  virtual absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> DoGetApplication(
      const std::string& id) = 0;
  virtual absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> DoGetAttempt(
      const std::string& id) = 0;
  virtual absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> DoGetContainer(
      const std::string& id) = 0;
  virtual absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> DoListApplications(
      const ApplicationFilter& filter) = 0;
  virtual absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> DoListAttempts(
      const std::string& application_id) = 0;
  virtual absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> DoListContainers(
      const std::string& application_id, const std::string& attempt_id) = 0;
  virtual absl::StatusOr<int64_t> DoPrune(int64_t older_than_ms,
                                          std::optional<int64_t> keep_at_most) = 0;
  // Which column a report groups by.
  enum class ReportKey { kQueue, kUser };
  // The lines of QueueReport (kQueue) or UserReport (kUser), by key ascending.
  virtual absl::StatusOr<std::vector<UsageLine>> DoReport(ReportKey key, int64_t since_ms,
                                                          int64_t until_ms) = 0;
};

// Shared by back-ends: whether `record` passes `filter` (limit aside), and ListApplications'
// order (true when `a` comes before `b`).
bool MatchesFilter(const v1::ApplicationHistoryRecord& record, const ApplicationFilter& filter);
bool ListsBefore(const v1::ApplicationHistoryRecord& a, const v1::ApplicationHistoryRecord& b);

}  // namespace weft::history

#endif  // WEFT_HISTORY_HISTORY_STORE_H_
