// Copyright Weft authors.
#include "history/memory_history_store.h"

#include <algorithm>
#include <set>
#include <utility>

namespace weft::history {
namespace {

template <typename Map>
auto MemoryFind(const Map& map, const std::string& id)
    -> std::optional<typename Map::mapped_type> {
  auto it = map.find(id);
  if (it == map.end()) return std::nullopt;
  return it->second;
}

}  // namespace

absl::Status MemoryHistoryStore::DoPutApplication(const v1::ApplicationHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  applications_[record.application_id()] = record;
  return absl::OkStatus();
}

absl::Status MemoryHistoryStore::DoPutAttempt(const v1::AttemptHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  attempts_[record.attempt_id()] = record;
  return absl::OkStatus();
}

absl::Status MemoryHistoryStore::DoPutContainer(const v1::ContainerHistoryRecord& record) {
  absl::MutexLock lock(&mu_);
  containers_[record.container_id()] = record;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> MemoryHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return MemoryFind(applications_, id);
}

absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> MemoryHistoryStore::DoGetAttempt(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return MemoryFind(attempts_, id);
}

absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> MemoryHistoryStore::DoGetContainer(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  return MemoryFind(containers_, id);
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> MemoryHistoryStore::DoListApplications(
    const ApplicationFilter& filter) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ApplicationHistoryRecord> out;
  for (const auto& [id, record] : applications_) {
    if (MatchesFilter(record, filter)) out.push_back(record);
  }
  std::sort(out.begin(), out.end(), ListsBefore);
  if (filter.limit > 0 && out.size() > static_cast<size_t>(filter.limit)) {
    out.resize(static_cast<size_t>(filter.limit));
  }
  return out;
}

absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> MemoryHistoryStore::DoListAttempts(
    const std::string& application_id) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::AttemptHistoryRecord> out;
  for (const auto& [id, record] : attempts_) {  // a std::map: by attempt id already
    if (record.application_id() == application_id) out.push_back(record);
  }
  return out;
}

absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> MemoryHistoryStore::DoListContainers(
    const std::string& application_id, const std::string& attempt_id) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ContainerHistoryRecord> out;
  for (const auto& [id, record] : containers_) {
    if (!application_id.empty() && record.application_id() != application_id) continue;
    if (!attempt_id.empty() && record.attempt_id() != attempt_id) continue;
    out.push_back(record);
  }
  return out;
}

absl::StatusOr<int64_t> MemoryHistoryStore::DoPrune(int64_t older_than_ms,
                                                    std::optional<int64_t> keep_at_most) {
  absl::MutexLock lock(&mu_);
  std::vector<const v1::ApplicationHistoryRecord*> ordered;
  for (const auto& [id, record] : applications_) ordered.push_back(&record);
  std::sort(ordered.begin(), ordered.end(),
            [](const auto* a, const auto* b) { return ListsBefore(*a, *b); });
  std::set<std::string> doomed;
  for (size_t i = 0; i < ordered.size(); ++i) {
    const bool too_old = ordered[i]->finish_time_ms() < older_than_ms;
    const bool over_count = keep_at_most.has_value() && static_cast<int64_t>(i) >= *keep_at_most;
    if (too_old || over_count) doomed.insert(ordered[i]->application_id());
  }
  for (const std::string& id : doomed) applications_.erase(id);
  std::erase_if(attempts_, [&](const auto& entry) {
    return doomed.contains(entry.second.application_id());
  });
  std::erase_if(containers_, [&](const auto& entry) {
    return doomed.contains(entry.second.application_id());
  });
  return static_cast<int64_t>(doomed.size());
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> MemoryHistoryStore::DoFinishedBetween(
    int64_t since_ms, int64_t until_ms) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::ApplicationHistoryRecord> out;
  for (const auto& [id, record] : applications_) {
    if (record.finish_time_ms() >= since_ms && record.finish_time_ms() < until_ms) {
      out.push_back(record);
    }
  }
  return out;
}

}  // namespace weft::history
