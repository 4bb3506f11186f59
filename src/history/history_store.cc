// Copyright Weft authors.
#include "history/history_store.h"

#include <algorithm>
#include <limits>
#include <map>
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
  if (absl::Status s =
          RequireField(record.application_id(), "application history record", "application_id");
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
  if (absl::Status s = RequireField(application_id, "GetApplication", "application_id"); !s.ok()) {
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
  if (absl::Status s = RequireField(application_id, "ListAttempts", "application_id"); !s.ok()) {
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

absl::StatusOr<std::vector<UsageLine>> HistoryStore::QueueReport(int64_t since_ms,
                                                                 int64_t until_ms) {
  return DoReport(ReportKey::kQueue, since_ms, until_ms);
}

absl::StatusOr<std::vector<UsageLine>> HistoryStore::UserReport(int64_t since_ms,
                                                                int64_t until_ms) {
  return DoReport(ReportKey::kUser, since_ms, until_ms);
}

absl::Status HistoryStore::PutBatch(const HistoryBatch& batch) {
  for (const v1::ApplicationHistoryRecord& app : batch.applications) {
    if (absl::Status s =
            RequireField(app.application_id(), "application history record", "application_id");
        !s.ok()) {
      return s;
    }
  }
  for (const v1::AttemptHistoryRecord& attempt : batch.attempts) {
    constexpr absl::string_view kWhat = "attempt history record";
    if (absl::Status s = RequireField(attempt.attempt_id(), kWhat, "attempt_id"); !s.ok()) {
      return s;
    }
    if (absl::Status s = RequireField(attempt.application_id(), kWhat, "application_id"); !s.ok()) {
      return s;
    }
  }
  for (const v1::ContainerHistoryRecord& container : batch.containers) {
    constexpr absl::string_view kWhat = "container history record";
    if (absl::Status s = RequireField(container.container_id(), kWhat, "container_id"); !s.ok()) {
      return s;
    }
    if (absl::Status s = RequireField(container.application_id(), kWhat, "application_id");
        !s.ok()) {
      return s;
    }
  }
  return DoPutBatch(batch);
}

absl::Status HistoryStore::DoPutBatch(const HistoryBatch& batch) {
  for (const v1::ContainerHistoryRecord& container : batch.containers) {
    if (absl::Status s = DoPutContainer(container); !s.ok()) return s;
  }
  for (const v1::AttemptHistoryRecord& attempt : batch.attempts) {
    if (absl::Status s = DoPutAttempt(attempt); !s.ok()) return s;
  }
  for (const v1::ApplicationHistoryRecord& app : batch.applications) {
    if (absl::Status s = DoPutApplication(app); !s.ok()) return s;
  }
  return absl::OkStatus();
}

namespace {

// a * b / 1000 without overflow, saturating at int64's largest.
int64_t ResourceSeconds(int64_t amount, int64_t duration_ms) {
  const __int128 product = static_cast<__int128>(amount) * duration_ms / 1000;
  return product > std::numeric_limits<int64_t>::max() ? std::numeric_limits<int64_t>::max()
                                                       : static_cast<int64_t>(product);
}

}  // namespace

ContainerContribution ContributionOf(const v1::ContainerHistoryRecord& container) {
  ContainerContribution out;
  const bool ran =
      container.start_time_ms() != 0 && container.finish_time_ms() >= container.start_time_ms();
  const int64_t duration_ms = ran ? container.finish_time_ms() - container.start_time_ms() : 0;
  for (const auto& [type, amount] : container.allocated()) {
    out.resource_seconds[type] = amount > 0 ? ResourceSeconds(amount, duration_ms) : 0;
  }
  out.memory_mb_seconds_used = container.memory_mb_seconds();
  out.cpu_time_ms = container.cpu_time_ms();
  out.network_tx_bytes = container.network_tx_bytes();
  out.peak_memory_bytes = container.max_rss_bytes();
  return out;
}

void SetAggregates(const std::vector<ContainerContribution>& containers,
                   v1::ApplicationHistoryRecord* app) {
  std::map<std::string, int64_t> resource_seconds;
  int64_t memory = 0, cpu = 0, network = 0, peak = 0;
  for (const ContainerContribution& c : containers) {
    for (const auto& [type, seconds] : c.resource_seconds) resource_seconds[type] += seconds;
    memory += c.memory_mb_seconds_used;
    cpu += c.cpu_time_ms;
    network += c.network_tx_bytes;
    peak = std::max(peak, c.peak_memory_bytes);
  }
  app->clear_resource_seconds();
  for (const auto& [type, seconds] : resource_seconds) {
    if (seconds != 0) (*app->mutable_resource_seconds())[type] = seconds;
  }
  app->set_memory_mb_seconds_used(memory);
  app->set_cpu_time_ms(cpu);
  app->set_network_tx_bytes(network);
  app->set_peak_memory_bytes(peak);
}

bool MatchesFilter(const v1::ApplicationHistoryRecord& record, const ApplicationFilter& filter) {
  if (!filter.user.empty() && record.user() != filter.user) return false;
  if (!filter.queue.empty() && record.queue() != filter.queue) return false;
  if (!filter.states.empty() && std::find(filter.states.begin(), filter.states.end(),
                                          record.final_state()) == filter.states.end()) {
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
