// Copyright Weft authors. Following the active ResourceManager among several (RM high
// availability), as YARN's RMFailoverProxyProvider does: every RM client (the CLI, AMs, NMs)
// is given the list of RM addresses and talks to one of them; when that RM cannot serve (it is
// a standby, it is down, it cannot be reached) the client moves to the active the standby
// named, or else to the next RM of the list, and tries again.
//
// A standby RM answers ClientService, AmService, TrackerService and most AdminService calls
// with UNAVAILABLE and, when it knows the active, the trailing metadata kActiveRmMetadata =
// the active's gRPC address ("host:port").
#ifndef WEFT_COMMON_RM_FAILOVER_H_
#define WEFT_COMMON_RM_FAILOVER_H_

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// The trailing metadata in which a standby RM names the active's gRPC address, "host:port".
inline constexpr char kActiveRmMetadata[] = "weft-active-rm";

// Parses a list of RM addresses, "host:port[,host:port...]" (one address without HA).
// Whitespace around entries is trimmed; a host may be a name, an IPv4 address or a bracketed
// IPv6 address ("[::1]:8032"). Returns the addresses in order. InvalidArgument naming the bad
// entry for an empty list or entry ("a:1,,b:2"), a missing host or port, a port that is not a
// number in 1..65535, or an address listed twice.
absl::StatusOr<std::vector<std::string>> ParseRmAddresses(absl::string_view list);

// The active RM a standby named in the trailing metadata of a finished call (kActiveRmMetadata),
// or "" when it named none. `context` must be that of a call that has finished.
std::string ActiveRmHint(const grpc::ClientContext& context);

// gRPC's reconnection backoff for RM channels, ms. gRPC's defaults (1 s, growing to 120 s)
// make a client that saw an RM down slow to notice that it is back; these retry a refused
// connection within about a second.
inline constexpr int kRmReconnectInitialBackoffMs = 100;
inline constexpr int kRmReconnectMaxBackoffMs = 1000;
// How long one connection attempt (TCP, then the TLS and HTTP/2 handshakes) may take, ms.
// gRPC reads this from GRPC_ARG_MIN_RECONNECT_BACKOFF_MS (its "minimum connect timeout",
// 20 s by default). It was 100 ms, which failed handshakes on a loaded host (CI's sanitizer
// run) with gRPC's own UNAVAILABLE; 2 s still leaves an unreachable RM quickly.
inline constexpr int kRmMinConnectTimeoutMs = 2000;
// Sets the values above on `args` (GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
// GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, GRPC_ARG_MAX_RECONNECT_BACKOFF_MS), and turns gRPC's
// keepalive pings off (GRPC_ARG_KEEPALIVE_TIME_MS = INT_MAX): each call's deadline is how a
// client finds an RM gone, and a keepalive timer is cancelled and re-armed on every read. It
// also turns off what costs every call and serves no RM client: bandwidth-delay-product
// pings (GRPC_ARG_HTTP2_BDP_PROBE; a PING and its ACK with about every other heartbeat) and
// channelz's per-call counters (GRPC_ARG_ENABLE_CHANNELZ).
void SetFastReconnectArgs(grpc::ChannelArguments* args);
// A fresh ChannelArguments with SetFastReconnectArgs applied.
grpc::ChannelArguments FastReconnectChannelArgs();

// Whether a call's `status` says that the RM called cannot serve it, so another RM may:
// UNAVAILABLE (a standby, a stopped RM, a refused connection) or DEADLINE_EXCEEDED (an RM that
// cannot be reached, or does not answer, in time). Every other code is the RM's answer.
bool IsRmFailoverCode(const grpc::Status& status);

// What a client does after a failed call (RmFailover::OnFailure).
enum class RmFailoverAction {
  // The failure is the RM's answer (or there is no other RM to try): report it.
  kNone,
  // current() moved to the active a standby named: try again at once.
  kActiveRm,
  // current() moved to the next RM of the list: try again, after a short backoff once every
  // RM has been tried.
  kNextRm,
};

// The list of RM addresses and the one a client talks to now. It starts at the first.
// Thread-compatible: one owner (a client object, or an event loop) calls it.
class RmFailover {
 public:
  // Parses `list` (ParseRmAddresses); its errors.
  static absl::StatusOr<RmFailover> Create(absl::string_view list);
  // `addresses` must be non-empty (CHECKed); ParseRmAddresses validates them.
  explicit RmFailover(std::vector<std::string> addresses);

  // The RM to call now.
  const std::string& current() const { return addresses_[index_]; }
  size_t current_index() const { return index_; }
  const std::vector<std::string>& addresses() const { return addresses_; }
  // More than one RM: failing over is possible.
  bool ha() const { return addresses_.size() > 1; }

  // Records that a call to current() failed with `status`, whose trailing metadata named
  // `active_hint` as the active ("" when none; see ActiveRmHint). When IsRmFailoverCode(status)
  // and the list has another RM, moves current() to the hinted active if it is another RM of
  // the list (kActiveRm), else to the next RM round robin (kNextRm). Otherwise current() stays
  // and the result is kNone.
  RmFailoverAction OnFailure(const grpc::Status& status, absl::string_view active_hint);
  // The same with the hint read from the finished call's `context`.
  RmFailoverAction OnFailure(const grpc::Status& status, const grpc::ClientContext& context);

  // Moves current() to `address` if it is in the list; false (no move) otherwise.
  bool MoveTo(absl::string_view address);

 private:
  std::vector<std::string> addresses_;
  size_t index_ = 0;
};

}  // namespace weft

#endif  // WEFT_COMMON_RM_FAILOVER_H_
