// Copyright Weft authors.
#include "history/history_store.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace weft::history {
namespace {

absl::Status RequireField(absl::string_view value, absl::string_view record,
                          absl::string_view field) {
  if (!value.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(record, ": ", field, " is empty"));
}

template <typename T>
absl::StatusOr<T> FoundOrNotFound(absl::StatusOr<std::optional<T>> found, absl::string_view kind,
                                  absl::string_view id, const HistoryStore& store) {
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return absl::NotFoundError(
        absl::StrCat("history store '", store.Describe(), "': no ", kind, " '", id, "'"));
  }
  return **std::move(found);
}

}  // namespace

absl::Status HistoryStore::PutApplication(const v1::ApplicationHistoryRecord& record) {
  if (absl::Status s = RequireField(record.application_id(), "application history record",
                                    "application_id");
      !s.ok()) {
    return s;
  }
  return DoPutApplication(record);
}

absl::Status HistoryStore::PutAttempt(const v1::AttemptHistoryRecord& record) {
  constexpr absl::string_view kWhat = "attempt history record";
  if (absl::Status s = RequireField(record.attempt_id(), kWhat, "attempt_id"); !s.ok()) return s;
  if (absl::Status s = RequireField(record.application_id(), kWhat, "application_id"); !s.ok()) {
    return s;
  }
  return DoPutAttempt(record);
}

absl::Status HistoryStore::PutContainer(const v1::ContainerHistoryRecord& record) {
  constexpr absl::string_view kWhat = "container history record";
  if (absl::Status s = RequireField(record.container_id(), kWhat, "container_id"); !s.ok()) {
    return s;
  }
  if (absl::Status s = RequireField(record.application_id(), kWhat, "application_id"); !s.ok()) {
    return s;
  }
  return DoPutContainer(record);
}

absl::StatusOr<v1::ApplicationHistoryRecord> HistoryStore::GetApplication(
    absl::string_view application_id) {
  if (absl::Status s = RequireField(application_id, "GetApplication", "application_id");
      !s.ok()) {
    return s;
  }
  return FoundOrNotFound(DoGetApplication(std::string(application_id)), "application",
                         application_id, *this);
}

absl::StatusOr<v1::AttemptHistoryRecord> HistoryStore::GetAttempt(absl::string_view attempt_id) {
  if (absl::Status s = RequireField(attempt_id, "GetAttempt", "attempt_id"); !s.ok()) return s;
  return FoundOrNotFound(DoGetAttempt(std::string(attempt_id)), "attempt", attempt_id, *this);
}

absl::StatusOr<v1::ContainerHistoryRecord> HistoryStore::GetContainer(
    absl::string_view container_id) {
  if (absl::Status s = RequireField(container_id, "GetContainer", "container_id"); !s.ok()) {
    return s;
  }
  return FoundOrNotFound(DoGetContainer(std::string(container_id)), "container", container_id,
                         *this);
}

absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> HistoryStore::ListApplications(
    const ApplicationFilter& filter) {
  if (filter.limit < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ListApplications: limit is negative (", filter.limit, ")"));
  }
  return DoListApplications(filter);
}

absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> HistoryStore::ListAttempts(
    absl::string_view application_id) {
  if (absl::Status s = RequireField(application_id, "ListAttempts", "application_id");
      !s.ok()) {
    return s;
  }
  return DoListAttempts(std::string(application_id));
}

absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> HistoryStore::ListContainers(
    absl::string_view application_id, absl::string_view attempt_id) {
  if (application_id.empty() && attempt_id.empty()) {
    return absl::InvalidArgumentError(
        "ListContainers: application_id and attempt_id are both empty");
  }
  return DoListContainers(std::string(application_id), std::string(attempt_id));
}

absl::StatusOr<int64_t> HistoryStore::Prune(int64_t older_than_ms,
                                            std::optional<int64_t> keep_at_most) {
  if (keep_at_most.has_value() && *keep_at_most < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Prune: keep_at_most is negative (", *keep_at_most, ")"));
  }
  return DoPrune(older_than_ms, keep_at_most);
}

absl::StatusOr<std::vector<QueueUsage>> HistoryStore::QueueReport(int64_t since_ms,
                                                                  int64_t until_ms) {
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> apps =
      DoFinishedBetween(since_ms, until_ms);
  if (!apps.ok()) return apps.status();
  std::map<std::string, QueueUsage> by_queue;
  for (const v1::ApplicationHistoryRecord& app : *apps) {
    QueueUsage& usage = by_queue[app.queue()];
    usage.queue = app.queue();
    ++usage.applications;
    for (const auto& [type, seconds] : app.resource_seconds()) {
      usage.resource_seconds[type] += seconds;
    }
  }
  std::vector<QueueUsage> report;
  report.reserve(by_queue.size());
  for (auto& [queue, usage] : by_queue) report.push_back(std::move(usage));
  return report;
}

bool MatchesFilter(const v1::ApplicationHistoryRecord& record, const ApplicationFilter& filter) {
  if (!filter.user.empty() && record.user() != filter.user) return false;
  if (!filter.queue.empty() && record.queue() != filter.queue) return false;
  if (!filter.states.empty() &&
      std::find(filter.states.begin(), filter.states.end(), record.final_state()) ==
          filter.states.end()) {
    return false;
  }
  if (filter.finished_since_ms && record.finish_time_ms() < *filter.finished_since_ms) {
    return false;
  }
  if (filter.finished_until_ms && record.finish_time_ms() >= *filter.finished_until_ms) {
    return false;
  }
  return true;
}

bool ListsBefore(const v1::ApplicationHistoryRecord& a, const v1::ApplicationHistoryRecord& b) {
  if (a.finish_time_ms() != b.finish_time_ms()) return a.finish_time_ms() > b.finish_time_ms();
  return a.application_id() < b.application_id();
}

}  // namespace weft::history
