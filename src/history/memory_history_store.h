// Copyright Weft authors. The in-memory HistoryStore: for tests and for an RM run without a
// history file. Nothing survives the process.
#ifndef WEFT_HISTORY_MEMORY_HISTORY_STORE_H_
#define WEFT_HISTORY_MEMORY_HISTORY_STORE_H_

#include <map>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "history/history_store.h"

namespace weft::history {

class MemoryHistoryStore : public HistoryStore {
 public:
  std::string Describe() const override { return "memory"; }

 protected:
  absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& record) override;
  absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& record) override;
  absl::Status DoPutContainer(const v1::ContainerHistoryRecord& record) override;
  absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> DoGetApplication(
      const std::string& id) override;
  absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> DoGetAttempt(
      const std::string& id) override;
  absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> DoGetContainer(
      const std::string& id) override;
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> DoListApplications(
      const ApplicationFilter& filter) override;
  absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> DoListAttempts(
      const std::string& application_id) override;
  absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> DoListContainers(
      const std::string& application_id, const std::string& attempt_id) override;
  absl::StatusOr<int64_t> DoPrune(int64_t older_than_ms,
                                  std::optional<int64_t> keep_at_most) override;
  absl::StatusOr<std::vector<UsageLine>> DoReport(ReportKey key, int64_t since_ms,
                                                  int64_t until_ms) override;

 private:
  // The stored application with its derived aggregates.
  v1::ApplicationHistoryRecord Derived(const v1::ApplicationHistoryRecord& app) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::map<std::string, v1::ApplicationHistoryRecord> applications_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::AttemptHistoryRecord> attempts_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, v1::ContainerHistoryRecord> containers_ ABSL_GUARDED_BY(mu_);
  // application id -> the ids of the containers stored for it.
  std::map<std::string, std::set<std::string>> containers_of_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::history

#endif  // WEFT_HISTORY_MEMORY_HISTORY_STORE_H_
