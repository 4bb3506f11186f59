// Copyright Weft authors. What the live-cluster subcommands of `weft` share: how they reach the
// RM, report errors, print protobuf as JSON, and wait for a termination signal.
#ifndef WEFT_CLI_CLI_COMMON_H_
#define WEFT_CLI_CLI_COMMON_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"
#include "security/tls.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft::cli {

// The RM address client commands use without --rm: $WEFT_RM, else "127.0.0.1:8032".
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

// Adds `--rm HOST:PORT` (defaulting to DefaultRmAddress()) to `cmd`.
void AddRmOption(CLI::App* cmd, std::string* rm_address);

// Prints "weft: <message>" on stderr. Returns 1, the exit code of a failed command.
int PrintError(absl::string_view message);

// A ClientService call's outcome as a status whose message is fit for one line of stderr.
// UNAVAILABLE and DEADLINE_EXCEEDED say which RM address could not be reached.
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
// The three files, checked to fit together (security/tls.h LoadTlsFiles). A daemon runs only
// with TLS: FailedPrecondition, saying how to make them, when none is given; InvalidArgument
// when only some are; the loader's errors (naming the file) otherwise.
absl::StatusOr<security::TlsFiles> LoadTlsFlags(const TlsFlags& flags, absl::string_view role);

// A ClientService stub for `rm_address` plus the per-call context every command sets up.
class RmClient {
 public:
  // `user`: act as this user (proxy users and secret holders only); "" = as oneself.
  RmClient(std::string rm_address, std::string user);
  // A context with the caller's credentials (AddClientCredentials) and a deadline of
  // `timeout_ms`.
  absl::StatusOr<std::unique_ptr<grpc::ClientContext>> NewContext(
      int64_t timeout_ms = 10000) const;
  v1::ClientService::Stub& stub() { return *stub_; }
  const std::string& address() const { return address_; }

  // The calls the commands use; errors come from FromGrpc.
  absl::StatusOr<v1::ApplicationReport> GetApplication(const std::string& app_id);

 private:
  std::string address_;
  std::string user_;
  absl::Status credentials_error_;  // a bad cluster CA: NewContext() returns it
  std::unique_ptr<v1::ClientService::Stub> stub_;
};

// Protobuf JSON (lowerCamelCase field names, enums by name, default values included), one line.
std::string ToJson(const google::protobuf::Message& message);

// A resource map as "memory-mb=4096,vcores=4[,other=..]": memory-mb and vcores first, then the
// other non-zero types by name.
std::string FormatResource(const v1::Resource& resource);

// Prints `rows` (the first is the header) as left-aligned columns separated by two spaces.
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
