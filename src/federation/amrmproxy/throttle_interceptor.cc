// Copyright Weft authors.
#include "federation/amrmproxy/throttle_interceptor.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/log.h"

namespace weft::amrmproxy {
namespace {

int64_t MemoryMb(const v1::ResourceRequest& ask) {
  auto it = ask.capability().values().find("memory-mb");
  return it == ask.capability().values().end() ? 0 : std::max<int64_t>(it->second, 0);
}

bool IsAny(const v1::ResourceRequest& ask) { return ask.resource_name() == "*"; }

// Appends `later`'s content to `into` (asks by key: the later count wins).
void MergeRequest(const v1::AllocateRequest& later, v1::AllocateRequest* into) {
  std::map<std::string, int> index;
  for (int i = 0; i < into->asks_size(); ++i) index[AskKey(into->asks(i))] = i;
  for (const v1::ResourceRequest& ask : later.asks()) {
    auto it = index.find(AskKey(ask));
    if (it == index.end()) {
      index[AskKey(ask)] = into->asks_size();
      *into->add_asks() = ask;
    } else {
      *into->mutable_asks(it->second) = ask;
    }
  }
  into->mutable_releases()->MergeFrom(later.releases());
  into->mutable_blacklist_additions()->MergeFrom(later.blacklist_additions());
  into->mutable_blacklist_removals()->MergeFrom(later.blacklist_removals());
  into->set_progress(later.progress());
  into->set_response_id(later.response_id());
}

}  // namespace

ThrottleInterceptor::ThrottleInterceptor(const AttemptContext& attempt, ThrottleOptions options,
                                         std::function<int64_t()> now_ms)
    : attempt_(attempt), options_(options), now_ms_(std::move(now_ms)) {}

absl::StatusOr<v1::RegisterApplicationMasterResponse>
ThrottleInterceptor::RegisterApplicationMaster(
    const v1::RegisterApplicationMasterRequest& request) {
  if (killed_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "attempt ", attempt_.attempt_id, " was ended by the AMRMProxy throttle: ", kill_reason_));
  }
  return next()->RegisterApplicationMaster(request);
}

absl::StatusOr<v1::FinishApplicationMasterResponse> ThrottleInterceptor::FinishApplicationMaster(
    const v1::FinishApplicationMasterRequest& request) {
  if (killed_) {
    v1::FinishApplicationMasterResponse done;
    done.set_is_unregistered(true);
    return done;
  }
  return next()->FinishApplicationMaster(request);
}

bool ThrottleInterceptor::TakeRateToken() {
  if (options_.max_allocates_per_second <= 0) return true;
  const double capacity = std::max(1.0, options_.max_allocates_per_second);
  const int64_t now = now_ms_();
  if (last_refill_ms_ < 0) {
    rate_tokens_ = capacity;
  } else if (now > last_refill_ms_) {
    rate_tokens_ =
        std::min(capacity, rate_tokens_ + (now - last_refill_ms_) *
                                              options_.max_allocates_per_second / 1000.0);
  }
  last_refill_ms_ = std::max(now, last_refill_ms_);
  if (rate_tokens_ < 1.0) return false;
  rate_tokens_ -= 1.0;
  return true;
}

std::optional<std::string> ThrottleInterceptor::ApplyQuota(
    v1::AllocateRequest* forward, const std::map<std::string, bool>& asked_now) {
  int64_t container_room = std::numeric_limits<int64_t>::max();
  if (options_.max_outstanding_containers > 0) container_room = options_.max_outstanding_containers;
  if (options_.max_total_containers > 0) {
    container_room = std::min(
        container_room, std::max<int64_t>(0, options_.max_total_containers - allocated_total_));
  }
  int64_t memory_room = options_.max_outstanding_memory_mb > 0
                            ? options_.max_outstanding_memory_mb
                            : std::numeric_limits<int64_t>::max();
  // Most urgent first: priority, then allocation_request_id, then key.
  std::vector<const v1::ResourceRequest*> order;
  for (const auto& [key, ask] : asked_) order.push_back(&ask);
  std::stable_sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    if (a->priority() != b->priority()) return a->priority() < b->priority();
    return a->allocation_request_id() < b->allocation_request_id();
  });
  int64_t asked_containers = 0, asked_memory = 0, allowed_containers = 0, allowed_memory = 0;
  std::map<std::string, int32_t> allowed;
  for (const v1::ResourceRequest* ask : order) {
    const int64_t count = std::max(0, ask->num_containers());
    const int64_t memory = MemoryMb(*ask);
    asked_containers += count;
    asked_memory += count * memory;
    int64_t fits = std::min(count, container_room);
    if (memory > 0) fits = std::min(fits, memory_room / memory);
    container_room -= fits;
    memory_room -= fits * memory;
    allowed_containers += fits;
    allowed_memory += fits * memory;
    allowed[AskKey(*ask)] = static_cast<int32_t>(fits);
  }
  // The `*` asks sent on: those the AM stated now, and those whose allowed count moved from
  // what the RM was told (a quota tightened or room freed for a trimmed ask).
  std::map<std::string, v1::ResourceRequest> any_out;
  for (const auto& [key, count] : allowed) {
    auto told = forwarded_.find(key);
    if (!asked_now.contains(key) && told != forwarded_.end() && told->second == count) continue;
    if (!asked_now.contains(key) && told == forwarded_.end() &&
        count == asked_[key].num_containers())
      continue;
    v1::ResourceRequest ask = asked_[key];
    ask.set_num_containers(count);
    any_out[key] = ask;
  }
  google::protobuf::RepeatedPtrField<v1::ResourceRequest> rewritten;
  for (const v1::ResourceRequest& ask : forward->asks()) {
    if (!IsAny(ask)) *rewritten.Add() = ask;
  }
  for (const auto& [key, ask] : any_out) {
    *rewritten.Add() = ask;
    forwarded_[key] = ask.num_containers();
  }
  forward->mutable_asks()->Swap(&rewritten);
  if (allowed_containers == asked_containers) return std::nullopt;
  return absl::StrCat("throttle: outstanding asks trimmed from ", asked_containers, " containers (",
                      asked_memory, " MB) to ", allowed_containers, " containers (", allowed_memory,
                      " MB) by the AMRMProxy's quota (", "max outstanding containers ",
                      options_.max_outstanding_containers, ", max outstanding memory-mb ",
                      options_.max_outstanding_memory_mb, ", max total containers ",
                      options_.max_total_containers, ", ", allocated_total_,
                      " allocated so far; 0 = no limit)");
}

void ThrottleInterceptor::CountAllocations(const v1::AllocateResponse& response) {
  for (const v1::Container& c : response.allocated_containers()) {
    ++allocated_total_;
    for (auto& [key, ask] : asked_) {
      if (ask.priority() != c.priority() ||
          ask.allocation_request_id() != c.allocation_request_id() || ask.num_containers() <= 0)
        continue;
      ask.set_num_containers(ask.num_containers() - 1);
      auto told = forwarded_.find(key);
      if (told != forwarded_.end() && told->second > 0) --told->second;
      break;
    }
  }
}

absl::StatusOr<v1::AllocateResponse> ThrottleInterceptor::Kill(const v1::AllocateRequest& request,
                                                               const std::string& why) {
  killed_ = true;
  kill_reason_ = why;
  log::Warn("amrmproxy_throttle_kill",
            {{"attempt", attempt_.attempt_id}, {"user", attempt_.user}, {"reason", why}});
  v1::FinishApplicationMasterRequest finish;
  finish.set_final_status(v1::FINAL_FAILED);
  finish.set_diagnostics(absl::StrCat("Application ended by the AMRMProxy throttle: ", why));
  if (absl::StatusOr<v1::FinishApplicationMasterResponse> done =
          next()->FinishApplicationMaster(finish);
      !done.ok()) {
    log::Warn("amrmproxy_throttle_kill_failed",
              {{"attempt", attempt_.attempt_id}, {"error", done.status()}});
  }
  v1::AllocateResponse shutdown;
  shutdown.set_response_id(request.response_id());
  shutdown.set_am_command(v1::AM_SHUTDOWN);
  shutdown.add_diagnostics(absl::StrCat("throttle: ", why));
  return shutdown;
}

absl::StatusOr<v1::AllocateResponse> ThrottleInterceptor::Allocate(
    const v1::AllocateRequest& request) {
  if (killed_) {
    v1::AllocateResponse shutdown;
    shutdown.set_response_id(request.response_id());
    shutdown.set_am_command(v1::AM_SHUTDOWN);
    shutdown.add_diagnostics(absl::StrCat("throttle: ", kill_reason_));
    return shutdown;
  }
  std::map<std::string, bool> asked_now;
  for (const v1::ResourceRequest& ask : request.asks()) {
    if (!IsAny(ask)) continue;
    asked_[AskKey(ask)] = ask;
    asked_now[AskKey(ask)] = true;
  }
  if (!TakeRateToken()) {
    if (!held_.has_value()) held_.emplace();
    MergeRequest(request, &*held_);
    const std::string note =
        absl::StrCat("throttle: Allocate calls above ", options_.max_allocates_per_second,
                     " per second: this call was held and goes to the RM with the next one");
    if (++violations_ >= options_.max_violations && options_.max_violations > 0) {
      return Kill(request, absl::StrCat(violations_,
                                        " consecutive Allocate calls over its "
                                        "quota or rate (",
                                        note, ")"));
    }
    // Answered here: the AM's next call carries the same response_id to the RM.
    v1::AllocateResponse held;
    held.set_response_id(request.response_id());
    held.add_diagnostics(note);
    return held;
  }
  v1::AllocateRequest forward;
  if (held_.has_value()) {
    forward = *std::move(held_);
    held_.reset();
    // The held calls' `*` asks count as stated now.
    for (const v1::ResourceRequest& ask : forward.asks()) {
      if (IsAny(ask)) asked_now[AskKey(ask)] = true;
    }
  }
  MergeRequest(request, &forward);
  std::optional<std::string> trimmed = ApplyQuota(&forward, asked_now);
  violations_ = trimmed.has_value() ? violations_ + 1 : 0;
  if (trimmed.has_value() && options_.max_violations > 0 &&
      violations_ >= options_.max_violations) {
    return Kill(request, absl::StrCat(violations_,
                                      " consecutive Allocate calls over its quota "
                                      "or rate (",
                                      *trimmed, ")"));
  }
  absl::StatusOr<v1::AllocateResponse> response = next()->Allocate(forward);
  if (!response.ok()) return response;
  CountAllocations(*response);
  if (trimmed.has_value()) response->add_diagnostics(*trimmed);
  return response;
}

}  // namespace weft::amrmproxy
