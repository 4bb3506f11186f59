// Copyright Weft authors. A HistoryStore opened on first use: for readers (the RM's web server,
// `weft history`) that must start while the store is unreachable (a PostgreSQL server that is
// down) and serve it once it is back.
#ifndef WEFT_HISTORY_LAZY_HISTORY_STORE_H_
#define WEFT_HISTORY_LAZY_HISTORY_STORE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "history/history_store.h"

namespace weft::history {

// Thread-safe. Each call first opens the store at `url` (OpenHistoryStore) if it is not open
// yet; while that fails the call returns Unavailable naming the url and the open's error, and
// the next call tries again. Once open, calls go to the store as they are.
class LazyHistoryStore : public HistoryStore {
 public:
  explicit LazyHistoryStore(std::string url) : url_(std::move(url)) {}
  std::string Describe() const override { return url_; }

 protected:
  absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& record) override;
  absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& record) override;
  absl::Status DoPutContainer(const v1::ContainerHistoryRecord& record) override;
  absl::Status DoPutBatch(const HistoryBatch& batch) override;
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
  // The open store, or Unavailable.
  absl::StatusOr<HistoryStore*> Store();

  const std::string url_;
  absl::Mutex mu_;
  std::unique_ptr<HistoryStore> store_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weft::history

#endif  // WEFT_HISTORY_LAZY_HISTORY_STORE_H_
