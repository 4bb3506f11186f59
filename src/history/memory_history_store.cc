// Copyright Weft authors.
#include "history/memory_history_store.h"

#include <algorithm>
#include <set>
#include <utility>

namespace weft::history {
namespace {

template <typename Map>
auto MemoryFind(const Map& map, const std::string& id) -> std::optional<typename Map::mapped_type> {
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
  auto [it, added] = containers_.try_emplace(record.container_id(), record);
  if (!added) {
    // Re-put, perhaps under another application: forget the old link.
    auto old = containers_of_.find(it->second.application_id());
    if (old != containers_of_.end()) {
      old->second.erase(record.container_id());
      if (old->second.empty()) containers_of_.erase(old);
    }
    it->second = record;
  }
  containers_of_[record.application_id()].insert(record.container_id());
  return absl::OkStatus();
}

v1::ApplicationHistoryRecord MemoryHistoryStore::Derived(
    const v1::ApplicationHistoryRecord& app) const {
  std::vector<ContainerContribution> contributions;
  auto ids = containers_of_.find(app.application_id());
  if (ids != containers_of_.end()) {
    for (const std::string& id : ids->second) {
      contributions.push_back(ContributionOf(containers_.at(id)));
    }
  }
  v1::ApplicationHistoryRecord out = app;
  SetAggregates(contributions, &out);
  return out;
}

absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> MemoryHistoryStore::DoGetApplication(
    const std::string& id) {
  absl::MutexLock lock(&mu_);
  std::optional<v1::ApplicationHistoryRecord> app = MemoryFind(applications_, id);
  if (app.has_value()) *app = Derived(*app);
  return app;
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
  for (v1::ApplicationHistoryRecord& app : out) app = Derived(app);
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
  std::erase_if(attempts_,
                [&](const auto& entry) { return doomed.contains(entry.second.application_id()); });
  std::erase_if(containers_,
                [&](const auto& entry) { return doomed.contains(entry.second.application_id()); });
  for (const std::string& id : doomed) containers_of_.erase(id);
  return static_cast<int64_t>(doomed.size());
}

absl::StatusOr<std::vector<UsageLine>> MemoryHistoryStore::DoReport(ReportKey key, int64_t since_ms,
                                                                    int64_t until_ms) {
  absl::MutexLock lock(&mu_);
  std::map<std::string, UsageLine> lines;
  for (const auto& [id, record] : applications_) {
    if (record.finish_time_ms() < since_ms || record.finish_time_ms() >= until_ms) continue;
    const v1::ApplicationHistoryRecord app = Derived(record);
    const std::string& name = key == ReportKey::kQueue ? app.queue() : app.user();
    UsageLine& line = lines[name];
    line.key = name;
    ++line.applications;
    for (const auto& [type, seconds] : app.resource_seconds()) {
      line.resource_seconds[type] += seconds;
    }
    line.memory_mb_seconds_used += app.memory_mb_seconds_used();
    line.cpu_time_ms += app.cpu_time_ms();
    line.network_tx_bytes += app.network_tx_bytes();
  }
  std::vector<UsageLine> report;
  report.reserve(lines.size());
  for (auto& [name, line] : lines) {
    std::erase_if(line.resource_seconds, [](const auto& entry) { return entry.second == 0; });
    report.push_back(std::move(line));
  }
  return report;
}

}  // namespace weft::history
