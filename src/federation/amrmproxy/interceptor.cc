// Copyright Weft authors.
#include "federation/amrmproxy/interceptor.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/log.h"
#include "federation/amrmproxy/default_interceptor.h"
#include "federation/amrmproxy/federation_interceptor.h"
#include "federation/amrmproxy/throttle_interceptor.h"

namespace weft::amrmproxy {
namespace {

// A broken invariant: a last step that does not override a call.
void CheckHasNext(const RequestInterceptor& step) {
  if (step.next() != nullptr) return;
  log::Error("interceptor_without_next", {{"interceptor", step.name()}});
  std::abort();
}

}  // namespace

absl::StatusOr<v1::RegisterApplicationMasterResponse> RequestInterceptor::RegisterApplicationMaster(
    const v1::RegisterApplicationMasterRequest& request) {
  CheckHasNext(*this);
  return next_->RegisterApplicationMaster(request);
}

absl::StatusOr<v1::AllocateResponse> RequestInterceptor::Allocate(
    const v1::AllocateRequest& request) {
  CheckHasNext(*this);
  return next_->Allocate(request);
}

absl::StatusOr<v1::FinishApplicationMasterResponse> RequestInterceptor::FinishApplicationMaster(
    const v1::FinishApplicationMasterRequest& request) {
  CheckHasNext(*this);
  return next_->FinishApplicationMaster(request);
}

void RequestInterceptor::Shutdown(AttemptEnd why) {
  if (next_ != nullptr) next_->Shutdown(why);
}

void RequestInterceptor::Recover(const AttemptState& state) {
  if (next_ != nullptr) next_->Recover(state);
}

std::vector<std::string> InterceptorNames() { return {"throttle", "default", "federation"}; }

namespace {

bool IsLastStep(absl::string_view name) { return name == "default" || name == "federation"; }

}  // namespace

absl::Status ValidateInterceptorList(absl::Span<const std::string> names, bool federation_enabled) {
  if (names.empty()) {
    return absl::InvalidArgumentError(
        "the interceptor list is empty; its last step must be default or federation");
  }
  const std::vector<std::string> known = InterceptorNames();
  std::set<std::string> seen;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown interceptor '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("interceptor '", name, "' is listed twice"));
    }
    const bool last = i + 1 == names.size();
    if (IsLastStep(name) && !last) {
      return absl::InvalidArgumentError(
          absl::StrCat("interceptor '", name, "' talks to the RMs and must be the last step"));
    }
    if (last && !IsLastStep(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the last interceptor is '", name, "'; the last step must be default or federation"));
    }
    if (name == "federation" && !federation_enabled) {
      return absl::InvalidArgumentError(
          "interceptor 'federation' needs a federation (a federation store and this NM's "
          "sub-cluster id)");
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> DefaultInterceptorList(bool federation_enabled) {
  if (federation_enabled) return {"throttle", "federation"};
  return {"default"};
}

absl::StatusOr<std::unique_ptr<RequestInterceptor>> BuildInterceptorChain(
    absl::Span<const std::string> names, const AttemptContext& attempt,
    const InterceptorEnvironment& env) {
  if (absl::Status s = ValidateInterceptorList(names, env.federation != nullptr); !s.ok()) {
    return s;
  }
  std::unique_ptr<RequestInterceptor> chain;
  for (auto it = names.rbegin(); it != names.rend(); ++it) {
    std::unique_ptr<RequestInterceptor> step;
    if (*it == "default") {
      step = std::make_unique<DefaultInterceptor>(attempt, env.rpc, env.state_store);
    } else if (*it == "federation") {
      step = std::make_unique<FederationInterceptor>(attempt, env);
    } else {
      step = std::make_unique<ThrottleInterceptor>(attempt, env.throttle, env.now_ms);
    }
    step->SetNext(std::move(chain));
    chain = std::move(step);
  }
  return chain;
}

std::string AskKey(const v1::ResourceRequest& ask) {
  std::map<std::string, int64_t> capability(ask.capability().values().begin(),
                                            ask.capability().values().end());
  std::string key =
      absl::StrCat(ask.priority(), "|", ask.resource_name(), "|", ask.allocation_request_id(), "|");
  for (const auto& [name, value] : capability) absl::StrAppend(&key, name, "=", value, ",");
  return key;
}

}  // namespace weft::amrmproxy
