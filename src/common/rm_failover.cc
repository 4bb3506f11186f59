#include "common/rm_failover.h"

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace weft {
namespace {

// Checks one trimmed entry, "host:port" or "[v6]:port". The error explains what is wrong
// with it (the caller names the entry).
absl::Status CheckAddress(absl::string_view entry) {
  const size_t colon = entry.rfind(':');
  if (colon == absl::string_view::npos) return absl::InvalidArgumentError("no ':PORT'");
  absl::string_view host = entry.substr(0, colon);
  absl::string_view port = entry.substr(colon + 1);
  if (host.empty()) return absl::InvalidArgumentError("no host before ':'");
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']')
      return absl::InvalidArgumentError("an IPv6 host must be written [ADDRESS]");
  } else if (host.find(':') != absl::string_view::npos) {
    return absl::InvalidArgumentError("an IPv6 host must be written [ADDRESS]");
  }
  for (char c : host) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c)) || c == ',' || c == '/')
      return absl::InvalidArgumentError(absl::StrCat("the host has a '", std::string(1, c), "'"));
  }
  int value = 0;
  if (port.empty()) return absl::InvalidArgumentError("no port after ':'");
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c)))
      return absl::InvalidArgumentError(
          absl::StrCat("port '", port, "' is not a number in 1..65535"));
  }
  if (!absl::SimpleAtoi(port, &value) || value < 1 || value > 65535)
    return absl::InvalidArgumentError(
        absl::StrCat("port '", port, "' is not a number in 1..65535"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseRmAddresses(absl::string_view list) {
  if (absl::StripAsciiWhitespace(list).empty())
    return absl::InvalidArgumentError(
        "the ResourceManager address list is empty (expected HOST:PORT[,HOST:PORT...])");
  std::vector<std::string> out;
  std::set<std::string> seen;
  int position = 0;
  for (absl::string_view raw : absl::StrSplit(list, ',')) {
    ++position;
    const absl::string_view entry = absl::StripAsciiWhitespace(raw);
    if (entry.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("ResourceManager address list '", list, "': entry ", position,
                       " is empty (expected HOST:PORT[,HOST:PORT...])"));
    if (absl::Status s = CheckAddress(entry); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("ResourceManager address '", entry,
                                                     "': ", s.message(), " (expected HOST:PORT)"));
    if (!seen.insert(std::string(entry)).second)
      return absl::InvalidArgumentError(
          absl::StrCat("ResourceManager address list '", list, "': '", entry, "' is listed twice"));
    out.emplace_back(entry);
  }
  return out;
}

std::string ActiveRmHint(const grpc::ClientContext& context) {
  const std::multimap<grpc::string_ref, grpc::string_ref>& trailers =
      context.GetServerTrailingMetadata();
  auto it = trailers.find(kActiveRmMetadata);
  if (it == trailers.end()) return "";
  return std::string(
      absl::StripAsciiWhitespace(absl::string_view(it->second.data(), it->second.size())));
}

void SetFastReconnectArgs(grpc::ChannelArguments* args) {
  args->SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, kRmReconnectInitialBackoffMs);
  args->SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, kRmMinConnectTimeoutMs);
  args->SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, kRmReconnectMaxBackoffMs);
  args->SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, INT_MAX);
  args->SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);  // a PING with about every other call otherwise
  args->SetInt(GRPC_ARG_ENABLE_CHANNELZ, 0);  // per-call counters that nothing reads
}

grpc::ChannelArguments FastReconnectChannelArgs() {
  grpc::ChannelArguments args;
  SetFastReconnectArgs(&args);
  return args;
}

bool IsRmFailoverCode(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

absl::StatusOr<RmFailover> RmFailover::Create(absl::string_view list) {
  absl::StatusOr<std::vector<std::string>> addresses = ParseRmAddresses(list);
  if (!addresses.ok()) return addresses.status();
  return RmFailover(*std::move(addresses));
}

RmFailover::RmFailover(std::vector<std::string> addresses) : addresses_(std::move(addresses)) {
  if (addresses_.empty()) {
    std::fprintf(stderr, "weft/common/rm_failover: check failed: no ResourceManager address\n");
    std::abort();
  }
}

bool RmFailover::MoveTo(absl::string_view address) {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (addresses_[i] == address) {
      index_ = i;
      return true;
    }
  }
  return false;
}

RmFailoverAction RmFailover::OnFailure(const grpc::Status& status, absl::string_view active_hint) {
  if (status.ok() || !IsRmFailoverCode(status) || !ha()) return RmFailoverAction::kNone;
  if (!active_hint.empty() && active_hint != current() && MoveTo(active_hint))
    return RmFailoverAction::kActiveRm;
  index_ = (index_ + 1) % addresses_.size();
  return RmFailoverAction::kNextRm;
}

RmFailoverAction RmFailover::OnFailure(const grpc::Status& status,
                                       const grpc::ClientContext& context) {
  return OnFailure(status, ActiveRmHint(context));
}

}  // namespace weft
