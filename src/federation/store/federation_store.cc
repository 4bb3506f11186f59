// Copyright Weft authors.
#include "federation/store/federation_store.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/private_files.h"
#include "federation/store/memory_federation_store.h"
#include "federation/store/postgres_federation_store.h"
#include "federation/store/sqlite_federation_store.h"
#include "federation/store/zk_federation_store.h"

namespace weft::federation {
namespace {

constexpr size_t kMaxSubClusterIdLength = 64;
constexpr size_t kMaxQueueLength = 1024;

bool AllowedInSubClusterId(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
}

template <size_t N>
bool IsOneOf(absl::string_view name, const absl::string_view (&names)[N]) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

absl::Status ValidateWeights(const google::protobuf::Map<std::string, double>& weights,
                             absl::string_view field, absl::string_view what) {
  // Sorted, so that the error names the same entry every time.
  std::vector<std::pair<std::string, double>> sorted(weights.begin(), weights.end());
  std::sort(sorted.begin(), sorted.end());
  for (const auto& [id, weight] : sorted) {
    if (absl::Status s = ValidateSubClusterId(id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " key: ", s.message()));
    }
    const std::string entry = absl::StrCat(field, "['", id, "'] = ", weight);
    if (!std::isfinite(weight)) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", entry, " is not finite"));
    }
    if (weight < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", entry, " is negative"));
    }
  }
  return absl::OkStatus();
}

absl::Status BadUri(absl::string_view uri, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("federation store URI '", absl::CHexEscape(uri), "': ", why));
}

// "host:port[,host:port]" with ports in 1..65535.
bool IsHostPortList(absl::string_view hosts) {
  for (absl::string_view host_port : absl::StrSplit(hosts, ',')) {
    const size_t colon = host_port.rfind(':');
    int port = 0;
    if (colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(host_port.substr(colon + 1), &port) || port < 1 || port > 65535) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Status ValidateSubClusterId(absl::string_view id) {
  if (id.empty()) return absl::InvalidArgumentError("sub-cluster id is empty");
  if (id.size() > kMaxSubClusterIdLength) {
    return absl::InvalidArgumentError(
        absl::StrCat("sub-cluster id '", absl::CHexEscape(id.substr(0, kMaxSubClusterIdLength)),
                     "...' is ", id.size(), " characters long, over ", kMaxSubClusterIdLength));
  }
  for (char c : id) {
    if (!AllowedInSubClusterId(c)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sub-cluster id '", absl::CHexEscape(id), "' has the character '",
          absl::CHexEscape(absl::string_view(&c, 1)), "' (allowed: A-Z a-z 0-9 . _ -)"));
    }
  }
  return absl::OkStatus();
}

bool IsSubClusterUsable(const v1::SubClusterInfo& info, int64_t now_ms, int64_t expiry_ms) {
  if (info.state() != v1::SC_RUNNING || expiry_ms < 0) return false;
  const int64_t last = info.last_heartbeat_ms();
  if (last >= now_ms) return true;  // A heartbeat stamped ahead of our clock (skew) is fresh.
  // The age fits in uint64 even when the difference overflows int64.
  const uint64_t age_ms = static_cast<uint64_t>(now_ms) - static_cast<uint64_t>(last);
  return age_ms <= static_cast<uint64_t>(expiry_ms);
}

absl::Status ValidatePolicyConfiguration(const v1::SubClusterPolicyConfiguration& config) {
  const std::string& queue = config.queue();
  if (queue.empty()) return absl::InvalidArgumentError("policy configuration: queue is empty");
  const std::string what =
      absl::StrCat("policy configuration for queue '", absl::CHexEscape(queue), "'");
  if (queue.size() > kMaxQueueLength) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": queue is ", queue.size(), " bytes long, over ", kMaxQueueLength));
  }
  for (char c : queue) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": queue has a control character"));
    }
  }
  if (!IsOneOf(config.router_policy(), kRouterPolicyNames)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": router_policy '", absl::CHexEscape(config.router_policy()),
                     "' is not one of ", absl::StrJoin(kRouterPolicyNames, ", ")));
  }
  if (!IsOneOf(config.amrm_policy(), kAmrmPolicyNames)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": amrm_policy '", absl::CHexEscape(config.amrm_policy()),
                     "' is not one of ", absl::StrJoin(kAmrmPolicyNames, ", ")));
  }
  if (absl::Status s = ValidateWeights(config.router_weights(), "router_weights", what); !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateWeights(config.amrm_weights(), "amrm_weights", what); !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateWeights(config.operator_router_weights(), "operator_router_weights", what);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          ValidateWeights(config.operator_amrm_weights(), "operator_amrm_weights", what);
      !s.ok()) {
    return s;
  }
  if (config.generation() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": generation ", config.generation(), " is negative"));
  }
  const double alpha = config.headroom_alpha();
  if (!std::isfinite(alpha) || alpha < 0 || alpha > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": headroom_alpha ", alpha, " is not in [0, 1]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<FederationStateStore>> OpenFederationStore(absl::string_view uri) {
  if (uri == "memory:") return std::unique_ptr<FederationStateStore>(new MemoryFederationStore());
  if (absl::ConsumePrefix(&uri, "sqlite:")) {
    if (uri.empty()) {
      return BadUri("sqlite:", "no file path (expected sqlite:/path/to/federation.db)");
    }
    auto store = SqliteFederationStore::Open(std::string(uri));
    if (!store.ok()) return store.status();
    return std::unique_ptr<FederationStateStore>(*std::move(store));
  }
  if (absl::StartsWith(uri, "zk://")) {
    // zk://hosts/root?auth-file=PATH: the digest credential's file (one line user:password,
    // mode 0600), never the credential itself, which every local user could read in argv.
    absl::string_view rest = uri.substr(5);
    std::string auth_file;
    if (const size_t query = rest.find('?'); query != absl::string_view::npos) {
      absl::string_view q = rest.substr(query + 1);
      rest = rest.substr(0, query);
      if (!absl::ConsumePrefix(&q, "auth-file=") || q.empty() || absl::StrContains(q, '&')) {
        return BadUri(uri, "the only query is ?auth-file=PATH (a 0600 file holding user:password)");
      }
      auth_file = std::string(q);
    }
    const size_t slash = rest.find('/');
    if (slash == absl::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
      return BadUri(uri, "expected zk://host:port[,host:port]/root with a non-empty root");
    }
    const absl::string_view hosts = rest.substr(0, slash);
    if (!IsHostPortList(hosts)) {
      return BadUri(uri, absl::StrCat("'", hosts,
                                      "' is not a list of host:port (ports 1-65535) "
                                      "separated by commas"));
    }
    if (auth_file.empty()) {
      return BadUri(uri,
                    "no ZooKeeper credential: add ?auth-file=PATH, a 0600 file holding "
                    "user:password; without one the routers' master keys and every app's home "
                    "would be open to anyone who reaches ZooKeeper");
    }
    absl::StatusOr<std::string> auth = ReadPrivateSecretFile(auth_file, "ZooKeeper auth file");
    if (!auth.ok()) return BadUri(uri, auth.status().message());
    ZkFederationStore::Options options;
    options.connect = std::string(hosts);
    options.root = std::string(rest.substr(slash));
    options.auth = *std::move(auth);
    auto store = ZkFederationStore::Open(options);
    if (!store.ok()) return store.status();
    return std::unique_ptr<FederationStateStore>(*std::move(store));
  }
  if (absl::StartsWith(uri, "postgresql://") || absl::StartsWith(uri, "postgres://")) {
    auto store = PostgresFederationStore::Open(uri);
    if (!store.ok()) return store.status();
    return std::unique_ptr<FederationStateStore>(*std::move(store));
  }
  return BadUri(uri,
                "unknown scheme (expected memory:, sqlite:/path, zk://host:port/root or "
                "postgresql://user@host:port/db)");
}

}  // namespace weft::federation
