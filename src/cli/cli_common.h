// Copyright Weft authors. What the live-cluster subcommands of `weft` share: how they reach the
// RM, report errors, print protobuf as JSON, and wait for a termination signal.
#ifndef WEFT_CLI_CLI_COMMON_H_
#define WEFT_CLI_CLI_COMMON_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/rm_failover.h"
#include "google/protobuf/message.h"
#include "security/tls.h"
#include "web/http_server.h"
#include "weft/v1/admin.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::cli {

// The RM address client commands use without --rm: $WEFT_RM (one HOST:PORT, or the HA RMs
// as HOST:PORT,HOST:PORT,...), else "127.0.0.1:8032".
std::string DefaultRmAddress();
// The user client commands act as without --user: $USER, else the effective uid's name, else
// "default".
std::string DefaultUser();

// Reads a client secret file: its contents without trailing whitespace. Errors name the file
// (missing, unreadable, empty).
absl::StatusOr<std::string> ReadSecretFile(const std::string& path);
// A value the CLI sends as gRPC metadata (a user name, a secret): non-empty printable ASCII
// (0x20-0x7e), which is all gRPC carries in a text header. InvalidArgument naming `what` and
// the first offending byte otherwise, so that a newline in --user or a secret file is a clear
// error instead of gRPC aborting the process.
absl::Status CheckMetadataValue(absl::string_view what, absl::string_view value);
// Checks $USER and $WEFT_SECRET_FILE's contents when set (called before any command runs).
absl::Status CheckClientEnvironment();
// The secret client commands present: the contents of $WEFT_SECRET_FILE, or "" when unset.
absl::StatusOr<std::string> ClientSecret();

// Adds `--rm HOST:PORT[,HOST:PORT...]` (defaulting to DefaultRmAddress()) to `cmd`: one RM,
// or the RMs of an HA cluster (common/rm_failover.h), checked by ParseRmAddresses.
void AddRmOption(CLI::App* cmd, std::string* rm_address);
// The RM's web server, HOST:PORT, for commands that read it (`weft app logs`, `weft web
// login`): `flag` when set, else $WEFT_RM_HTTP, else the first RM of `rm_address` on port 8088.
std::string RmHttpAddress(const std::string& flag, const std::string& rm_address);
// A web server's HOST:PORT as an HTTP client connects to it: the host (an IPv6 address without
// its brackets) and a port in 1..65535. InvalidArgument "'<text>' is not HOST:PORT" otherwise.
absl::StatusOr<std::pair<std::string, int>> SplitHttpHostPort(const std::string& host_port);
// A CLI11 check of an RM address list (ParseRmAddresses's error when it is bad).
CLI::Validator RmAddressListValidator();

// Prints "weft: <message>" on stderr, one line: the message goes through EscapeForTerminal
// (common/terminal_text.h), since it may echo names others chose (an unknown queue, an app's
// diagnostics). Returns 1, the exit code of a failed command.
int PrintError(absl::string_view message);

// A CLI11 check of a floating-point flag: its text must be a finite number (not inf, nan or
// beyond a double's range) of `unit` ("seconds", "MB"; "" for a plain number) within [min,
// max]. CheckFiniteNumber says why it is not ("'inf' is not a finite number of seconds",
// "'-1' is negative", "'2' is more than 1"); CLI11 puts the flag's name in front
// ("--goal-s: 'inf' is not a finite number of seconds") and exits 105. Values that are never
// given keep their defaults unchecked.
absl::Status CheckFiniteNumber(absl::string_view text, absl::string_view unit, double min,
                               double max);
CLI::Validator FiniteNumberValidator(std::string unit, double min, double max);
// The largest number of seconds a duration flag takes (about 31 years): seconds x 1000 fits
// an int64 of ms with room to add the current time.
inline constexpr double kMaxFlagSeconds = 1e9;

// A ClientService call's outcome as a status whose message is fit for one line of stderr.
// UNAVAILABLE and DEADLINE_EXCEEDED say which RM address (or addresses, "a:1 or b:2") could
// not be reached.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view rm_address);

// Adds who is calling to a ClientService or AdminService call: the admin secret of
// $WEFT_SECRET_FILE when set, else a fresh MUNGE credential from the munged at
// $WEFT_MUNGE_SOCKET (default /run/munge/munge.socket.2); and `act_as` ("weft-user") when
// non-empty. Errors: the secret file's, or munged unreachable (naming the socket).
absl::Status AddClientCredentials(grpc::ClientContext* ctx, const std::string& act_as);

// The cluster CA certificate clients verify the RM with: $WEFT_TLS_CA when set, else
// ~/.weft/ca.pem (which `weft dev` writes for the user who runs it), else
// /etc/weft/tls/ca.pem, whichever exists first; "" when none does (plaintext).
inline constexpr char kDevCaRelativeToHome[] = ".weft/ca.pem";
inline constexpr char kSystemCaPath[] = "/etc/weft/tls/ca.pem";
std::string ClusterCaPath();
// TLS credentials verifying the server against ClusterCaPath(), or plaintext when it is "".
// Errors: the CA file is unreadable, malformed or expired (naming it).
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClusterChannelCredentials();

// A daemon's TLS material (`weft rm`, `weft nm`): --tls-ca, --tls-cert, --tls-key.
struct TlsFlags {
  std::string ca;
  std::string cert;
  std::string key;
};
void AddTlsFlags(CLI::App* cmd, TlsFlags* flags);

// A daemon's web server limits: --http-max-connections, --http-max-connections-per-ip (0: no
// per-address limit; raise it behind a reverse proxy, whose address every client has) and the
// request deadlines --http-header-timeout-ms, --http-body-timeout-ms, --http-idle-timeout-ms
// and --http-write-timeout-ms (web/http_server.h). A value out of range is refused naming
// the flag.
void AddHttpLimitFlags(CLI::App* cmd, web::HttpLimits* limits);
// The three files, checked to fit together (security/tls.h LoadTlsFiles). A daemon runs only
// with TLS: FailedPrecondition, saying how to make them, when none is given; InvalidArgument
// when only some are; the loader's errors (naming the file) otherwise.
absl::StatusOr<security::TlsFiles> LoadTlsFlags(const TlsFlags& flags, absl::string_view role);

// ClientService and AdminService stubs for one RM or the RMs of an HA cluster, plus the
// per-call context every command sets up. With several RMs, Call() follows the active one as
// YARN's RMFailoverProxyProvider does (common/rm_failover.h). Not thread-safe: one command's
// thread uses it.
class RmClient {
 public:
  // Deadline of one try of a call, ms.
  static constexpr int64_t kCallTimeoutMs = 10000;
  // How long Call() keeps failing over before it gives up, ms: enough to ride out an RM
  // failover (1-3 s) or a restart. A try in flight when it runs out finishes.
  static constexpr int64_t kFailoverBudgetMs = 20000;
  // Waits between tries that do not follow a standby's hint: doubling from the first to the
  // second, ms (at most 4 tries a second, for one command).
  static constexpr int64_t kRetryInitialMs = 100;
  static constexpr int64_t kRetryMaxMs = 250;  // a failover is 1-3 s: notice its end soon
  // With one RM, how long a try that could not reach it (UNAVAILABLE: refused, a TLS handshake
  // cut short by a loaded RM) is tried again on it, ms (YARN's clients retry connecting too).
  static constexpr int64_t kSingleRmRetryBudgetMs = 3000;

  // `rm_addresses`: "host:port" or a comma-separated list of HA RMs (ParseRmAddresses; a bad
  // list makes every call fail with its error). `user`: act as this user (proxy users and
  // secret holders only); "" = as oneself.
  RmClient(std::string rm_addresses, std::string user);
  // A context with the caller's credentials (AddClientCredentials) and a deadline of
  // `timeout_ms`.
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> NewContext(
      int64_t timeout_ms = kCallTimeoutMs) const;
  // The stubs of the RM calls go to now (current()).
  v1::ClientService::Stub& stub();
  v1::AdminService::Stub& admin_stub();
  // The RM calls go to now.
  const std::string& address() const;
  // Every RM of the list, in order.
  const std::vector<std::string>& addresses() const;

  // Runs `rpc` (one try: it calls stub() or admin_stub() with the context it is given) with a
  // fresh context (NewContext(timeout_ms)). With several RMs, a try that fails with
  // UNAVAILABLE or DEADLINE_EXCEEDED (a standby, a stopped or unreachable RM) is tried again
  // on the active the standby named, or on the next RM of the list, after a short backoff
  // (none when following a hint), on a new channel, until kFailoverBudgetMs
  // (set_failover_budget_ms) have passed; `rpc` can tell a retry from the first try by
  // `attempt` (0, 1, ...). With one RM, only a try that could not reach it (UNAVAILABLE) is
  // tried again, on the same RM, for kSingleRmRetryBudgetMs (or the budget set, if shorter).
  // Errors: NewContext's; FromGrpc's for the last try, naming every RM tried.
  absl::Status CallWithFailover(
      const std::function<grpc::Status(grpc::ClientContext* ctx, int attempt)>& rpc,
      int64_t timeout_ms = kCallTimeoutMs);
  // CallWithFailover of one ClientService or AdminService method, e.g.
  // `client.Call(&v1::ClientService::Stub::ListNodes, req, &resp)`.
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (v1::ClientService::Stub::*method)(grpc::ClientContext*,
                                                                    const Request&, Response*),
                    const Request& request, Response* response,
                    int64_t timeout_ms = kCallTimeoutMs) {
    return CallWithFailover(
        [&](grpc::ClientContext* ctx, int) { return (stub().*method)(ctx, request, response); },
        timeout_ms);
  }
  template <typename Request, typename Response>
  absl::Status Call(grpc::Status (v1::AdminService::Stub::*method)(grpc::ClientContext*,
                                                                   const Request&, Response*),
                    const Request& request, Response* response,
                    int64_t timeout_ms = kCallTimeoutMs) {
    return CallWithFailover([&](grpc::ClientContext* ctx,
                                int) { return (admin_stub().*method)(ctx, request, response); },
                            timeout_ms);
  }

  // The calls the commands use; errors come from FromGrpc.
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id);
  // SubmitApplication with failover. A retry answered AlreadyExists is success: an earlier
  // try reached an RM and was applied (and recovered by the RM that answers now) although its
  // reply was lost.
  absl::Status SubmitApplication(const v1::SubmitApplicationRequest& request);

  // How long Call() keeps failing over, ms (kFailoverBudgetMs unless set).
  void set_failover_budget_ms(int64_t ms) { failover_budget_ms_ = ms; }

  // Waits between tries; tests of the CLI have none. Null = sleeps.
  void set_sleep_for_testing(std::function<void(int64_t ms)> sleep) { sleep_ = std::move(sleep); }

 private:
  // The channel and stubs of one RM, created on first use.
  struct Rm {
    std::unique_ptr<v1::ClientService::Stub> client;
    std::unique_ptr<v1::AdminService::Stub> admin;
  };
  Rm& CurrentRm();

  std::optional<RmFailover> failover_;  // unset when the list is bad
  std::string user_;
  absl::Status setup_error_;  // a bad address list or cluster CA: NewContext() returns it
  std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::vector<Rm> rms_;  // by index in the list
  std::function<void(int64_t ms)> sleep_;
  int64_t failover_budget_ms_ = kFailoverBudgetMs;
};

// Protobuf JSON (lowerCamelCase field names, enums by name, default values included), one line.
std::string ToJson(const google::protobuf::Message& message);

// A resource map as "memory-mb=4096,vcores=4[,other=..]": memory-mb and vcores first, then the
// other non-zero types by name.
std::string FormatResource(const v1::Resource& resource);

// `ms` since the epoch in local time, "2026-11-20 10:00:00"; "-" for 0 or less (not set).
std::string FormatTimeMs(int64_t ms);

// Prints `rows` (the first is the header) as left-aligned columns separated by two spaces.
// A row may be shorter than the header; its last cell then runs on without widening the
// column it starts in. Every cell goes through EscapeForTerminal (common/terminal_text.h):
// names others chose can neither control the terminal nor start a row of their own.
void PrintTable(const std::vector<std::vector<std::string>>& rows);

// Quotes `s` for /bin/sh as one word ('...' with embedded quotes escaped).
std::string ShellQuote(absl::string_view s);

// Blocks SIGINT and SIGTERM in the calling thread; threads created afterwards inherit the
// mask, so the signals stay pending until WaitForTerminationSignal() takes one. Call it before
// starting any daemon thread.
void BlockTerminationSignals();
// Waits (sigwait) for SIGINT or SIGTERM and returns its number. Requires
// BlockTerminationSignals() earlier on this thread.
int WaitForTerminationSignal();

}  // namespace weft::cli

#endif  // WEFT_CLI_CLI_COMMON_H_
