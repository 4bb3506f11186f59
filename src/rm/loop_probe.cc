// Copyright Weft authors.
#include "rm/loop_probe.h"

#include "absl/strings/str_cat.h"
#include "rm/loop_work.h"

namespace weft::rm {
namespace {

std::string NameOf(int64_t n) { return absl::StrCat("container_e1_1700000000000_0001_01_", n); }

}  // namespace

LoopProbe::LoopProbe() {
  // Shaped as the RM issues them (ContainerTracker::Proto), under a fixed throwaway key.
  token_.node_id = "sim-node-00000:8041";
  token_.user = "bench";
  token_.resource = "memory-mb=1024,vcores=1";
  token_.expiry_ms = 600000;
  token_.master_key_id = 1;
  token_.rm_epoch = 1;
  token_.app_id = "application_1700000000000_0001";
  key_.id = 1;
  key_.secret = std::string(32, 'p');
  key_.expires_ms = 1'000'000;
  names_.reserve(kNames);
  for (next_ = 0; next_ < kNames; ++next_) names_.emplace(NameOf(next_), next_);
}

int64_t LoopProbe::Run() {
  const int64_t start = ThreadCpuNanos();
  for (int i = 0; i < kTokens; ++i) {
    token_.container_id = NameOf(next_ + i);
    const security::Token t = security::IssueContainerToken(token_, key_);
    password_bytes_ += static_cast<int64_t>(t.password.size());
  }
  for (int i = 0; i < kReplaced; ++i, ++next_) {
    names_.erase(NameOf(next_ - kNames));
    names_.emplace(NameOf(next_), next_);
  }
  return ThreadCpuNanos() - start;
}

}  // namespace weft::rm
