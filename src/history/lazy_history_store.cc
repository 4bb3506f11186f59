// Copyright Weft authors.
#include "history/lazy_history_store.h"

#include "absl/strings/str_cat.h"
#include "history/open_history_store.h"

namespace weft::history {

namespace {

// A store's Get* answer as the Do* contract wants it: NotFound becomes nullopt.
template <typename T>
absl::StatusOr<std::optional<T>> LazyOptional(absl::StatusOr<T> r) {
  if (absl::IsNotFound(r.status())) return std::optional<T>();
  if (!r.ok()) return r.status();
  return std::optional<T>(*std::move(r));
}

}  // namespace

absl::StatusOr<HistoryStore*> LazyHistoryStore::Store() {
  absl::MutexLock l(&mu_);
  if (store_ == nullptr) {
    absl::StatusOr<std::unique_ptr<HistoryStore>> opened = OpenHistoryStore(url_);
    if (!opened.ok())
      return absl::UnavailableError(
          absl::StrCat("history store ", url_, " cannot be opened: ", opened.status().message()));
    store_ = *std::move(opened);
  }
  return store_.get();
}

#define WEFT_LAZY_CALL(call)                     \
  absl::StatusOr<HistoryStore*> store = Store(); \
  if (!store.ok()) return store.status();        \
  return (*store)->call

absl::Status LazyHistoryStore::DoPutApplication(const v1::ApplicationHistoryRecord& record) {
  WEFT_LAZY_CALL(PutApplication(record));
}
absl::Status LazyHistoryStore::DoPutAttempt(const v1::AttemptHistoryRecord& record) {
  WEFT_LAZY_CALL(PutAttempt(record));
}
absl::Status LazyHistoryStore::DoPutContainer(const v1::ContainerHistoryRecord& record) {
  WEFT_LAZY_CALL(PutContainer(record));
}
absl::Status LazyHistoryStore::DoPutBatch(const HistoryBatch& batch) {
  WEFT_LAZY_CALL(PutBatch(batch));
}
absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> LazyHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::StatusOr<HistoryStore*> store = Store();
  if (!store.ok()) return store.status();
  return LazyOptional((*store)->GetApplication(id));
}
absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> LazyHistoryStore::DoGetAttempt(
    const std::string& id) {
  absl::StatusOr<HistoryStore*> store = Store();
  if (!store.ok()) return store.status();
  return LazyOptional((*store)->GetAttempt(id));
}
absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> LazyHistoryStore::DoGetContainer(
    const std::string& id) {
  absl::StatusOr<HistoryStore*> store = Store();
  if (!store.ok()) return store.status();
  return LazyOptional((*store)->GetContainer(id));
}
absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> LazyHistoryStore::DoListApplications(
    const ApplicationFilter& filter) {
  WEFT_LAZY_CALL(ListApplications(filter));
}
absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> LazyHistoryStore::DoListAttempts(
    const std::string& application_id) {
  WEFT_LAZY_CALL(ListAttempts(application_id));
}
absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> LazyHistoryStore::DoListContainers(
    const std::string& application_id, const std::string& attempt_id) {
  WEFT_LAZY_CALL(ListContainers(application_id, attempt_id));
}
absl::StatusOr<int64_t> LazyHistoryStore::DoPrune(int64_t older_than_ms,
                                                  std::optional<int64_t> keep_at_most) {
  WEFT_LAZY_CALL(Prune(older_than_ms, keep_at_most));
}
absl::StatusOr<std::vector<UsageLine>> LazyHistoryStore::DoReport(ReportKey key, int64_t since_ms,
                                                                  int64_t until_ms) {
  absl::StatusOr<HistoryStore*> store = Store();
  if (!store.ok()) return store.status();
  return key == ReportKey::kQueue ? (*store)->QueueReport(since_ms, until_ms)
                                  : (*store)->UserReport(since_ms, until_ms);
}

#undef WEFT_LAZY_CALL

}  // namespace weft::history
