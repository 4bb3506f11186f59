#include "cli/cli_common.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/terminal_text.h"
#include "google/protobuf/util/json_util.h"
#include "rm/client_auth.h"
#include "security/munge.h"
#include "security/tls.h"

namespace weft::cli {

std::string DefaultRmAddress() {
  const char* env = std::getenv("WEFT_RM");
  if (env != nullptr && *env != '\0') return env;
  return "127.0.0.1:8032";
}

std::string DefaultUser() {
  const char* env = std::getenv("USER");
  if (env != nullptr && *env != '\0') return env;
  if (const struct passwd* pw = getpwuid(geteuid()); pw != nullptr && pw->pw_name != nullptr)
    return pw->pw_name;
  return "default";
}

CLI::Validator RmAddressListValidator() {
  return CLI::Validator(
      [](const std::string& v) {
        absl::StatusOr<std::vector<std::string>> parsed = ParseRmAddresses(v);
        return parsed.ok() ? std::string() : std::string(parsed.status().message());
      },
      "HOST:PORT[,HOST:PORT...]");
}

void AddRmOption(CLI::App* cmd, std::string* rm_address) {
  *rm_address = DefaultRmAddress();
  cmd->add_option("--rm", *rm_address,
                  "the ResourceManager, HOST:PORT, or an HA cluster's RMs, "
                  "HOST:PORT,HOST:PORT,... (commands follow the active one; default: $WEFT_RM, "
                  "else 127.0.0.1:8032)")
      ->capture_default_str()
      ->check(RmAddressListValidator());
}

std::string RmHttpAddress(const std::string& flag, const std::string& rm_address) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("WEFT_RM_HTTP");
  if (env != nullptr && *env != '\0') return env;
  const std::string first = rm_address.substr(0, rm_address.find(','));
  return absl::StrCat(first.substr(0, first.rfind(':')), ":8088");
}

absl::StatusOr<std::pair<std::string, int>> SplitHttpHostPort(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  int port = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(host_port.substr(colon + 1), &port) ||
      port <= 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("'", host_port, "' is not HOST:PORT"));
  std::string host = host_port.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  return std::make_pair(host, port);
}

int PrintError(absl::string_view message) {
  std::cerr << "weft: " << EscapeForTerminal(message) << std::endl;
  return 1;
}

absl::Status CheckFiniteNumber(absl::string_view text, absl::string_view unit, double min,
                               double max) {
  const std::string of_unit = unit.empty() ? "" : absl::StrCat(" of ", unit);
  const std::string shown = absl::StrCat("'", EscapeForTerminal(text), "'");
  // strtod reads what CLI11 reads: "inf", "nan", hex; "1e400" overflows to HUGE_VAL (inf).
  const std::string copy(absl::StripAsciiWhitespace(text));
  char* end = nullptr;
  const double value = copy.empty() ? 0 : std::strtod(copy.c_str(), &end);
  if (copy.empty() || end != copy.c_str() + copy.size())
    return absl::InvalidArgumentError(absl::StrCat(shown, " is not a number", of_unit));
  if (!std::isfinite(value))
    return absl::InvalidArgumentError(absl::StrCat(shown, " is not a finite number", of_unit));
  if (value < min) {
    return absl::InvalidArgumentError(min == 0
                                          ? absl::StrCat(shown, " is negative")
                                          : absl::StrFormat("%s is less than %.15g", shown, min));
  }
  if (value > max)
    return absl::InvalidArgumentError(
        absl::StrFormat("%s is more than %.15g%s%s", shown, max, unit.empty() ? "" : " ", unit));
  return absl::OkStatus();
}

CLI::Validator FiniteNumberValidator(std::string unit, double min, double max) {
  return CLI::Validator(
      [unit = std::move(unit), min, max](const std::string& text) {
        absl::Status s = CheckFiniteNumber(text, unit, min, max);
        return s.ok() ? std::string() : std::string(s.message());
      },
      "");
}

absl::Status FromGrpc(const grpc::Status& status, absl::string_view rm_address) {
  if (status.ok()) return absl::OkStatus();
  auto code = static_cast<absl::StatusCode>(status.error_code());
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
      status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)
    return absl::Status(
        code,
        absl::StrCat("cannot reach the ResourceManager at ", rm_address,
                     " (is it running? start one with `weft dev`, or pass --rm / set WEFT_RM",
                     ClusterCaPath().empty()
                         ? "; no cluster CA is configured: set WEFT_TLS_CA to the CA "
                           "certificate of a cluster that speaks TLS"
                         : "",
                     "): ", status.error_message()));
  return absl::Status(code, status.error_message());
}

std::string ClusterCaPath() {
  if (const char* env = std::getenv("WEFT_TLS_CA"); env != nullptr && *env != '\0') return env;
  std::vector<std::string> candidates;
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    candidates.push_back(absl::StrCat(home, "/", kDevCaRelativeToHome));
  candidates.push_back(kSystemCaPath);
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return path;
  }
  return "";
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ClusterChannelCredentials() {
  const std::string path = ClusterCaPath();
  if (path.empty()) return grpc::InsecureChannelCredentials();
  absl::StatusOr<std::string> pem = security::LoadCaPem(path);
  if (!pem.ok())
    return absl::Status(pem.status().code(),
                        absl::StrCat("the cluster CA (WEFT_TLS_CA): ", pem.status().message()));
  return security::TlsChannelCredentials(*pem);
}

void AddTlsFlags(CLI::App* cmd, TlsFlags* flags) {
  cmd->add_option("--tls-ca", flags->ca, "the cluster CA certificate (PEM; `weft certs init-ca`)");
  cmd->add_option("--tls-cert", flags->cert,
                  "this daemon's certificate (PEM; `weft certs issue`); an NM's names its node "
                  "id, HOST:PORT");
  cmd->add_option("--tls-key", flags->key, "this daemon's private key (PEM)");
}

void AddHttpLimitFlags(CLI::App* cmd, web::HttpLimits* limits) {
  cmd->add_option("--http-max-connections", limits->max_connections,
                  "web server: connections open at once (at the limit an idle or slow one is "
                  "closed to make room, else the new one gets 503)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd->add_option("--http-max-connections-per-ip", limits->max_connections_per_ip,
                  "web server: connections open at once from one client address (IPv6: its /64; "
                  "0 = no limit); raise it behind a reverse proxy")
      ->check(CLI::Range(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd->add_option("--http-header-timeout-ms", limits->header_timeout_ms,
                  "web server: a request's line and headers must arrive within this, ms")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd->add_option("--http-body-timeout-ms", limits->body_timeout_ms,
                  "web server: a request's body must arrive within this after its headers, ms")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd->add_option("--http-idle-timeout-ms", limits->idle_timeout_ms,
                  "web server: a kept-alive connection is closed after this long idle, ms")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  cmd->add_option("--http-write-timeout-ms", limits->write_timeout_ms,
                  "web server: a client must take a response within this, ms")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()))
      ->capture_default_str();
}

absl::StatusOr<security::TlsFiles> LoadTlsFlags(const TlsFlags& flags, absl::string_view role) {
  const int given = !flags.ca.empty() + !flags.cert.empty() + !flags.key.empty();
  if (given == 0)
    return absl::FailedPreconditionError(absl::StrCat(
        "every Weft daemon speaks mutual TLS: pass --tls-ca, --tls-cert and --tls-key (make "
        "them with `weft certs init-ca --dir D` and `weft certs issue --ca-dir D --out-dir D "
        "--role ",
        role, " --name NAME`; `weft dev` makes its own)"));
  if (given != 3)
    return absl::InvalidArgumentError("--tls-ca, --tls-cert and --tls-key go together");
  return security::LoadTlsFiles(flags.ca, flags.cert, flags.key);
}

RmClient::RmClient(std::string rm_addresses, std::string user) : user_(std::move(user)) {
  absl::StatusOr<RmFailover> failover = RmFailover::Create(rm_addresses);
  if (!failover.ok()) {
    // Every call reports it; the placeholder list is never called.
    setup_error_ =
        absl::InvalidArgumentError(absl::StrCat("--rm / $WEFT_RM: ", failover.status().message()));
    failover_.emplace(std::vector<std::string>{rm_addresses});
  } else {
    failover_.emplace(*std::move(failover));
  }
  rms_.resize(failover_->addresses().size());
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClusterChannelCredentials();
  if (!credentials.ok()) {
    if (setup_error_.ok()) setup_error_ = credentials.status();  // every call reports it
    credentials = grpc::InsecureChannelCredentials();
  }
  credentials_ = *std::move(credentials);
}

RmClient::Rm& RmClient::CurrentRm() {
  Rm& rm = rms_[failover_->current_index()];
  if (rm.client == nullptr) {
    // A channel of its own (no subchannel shared with earlier ones, which may be waiting out
    // a reconnection backoff), with fast reconnection (common/rm_failover.h).
    grpc::ChannelArguments args = FastReconnectChannelArgs();
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    std::shared_ptr<grpc::Channel> channel =
        grpc::CreateCustomChannel(failover_->current(), credentials_, args);
    rm.client = v1::ClientService::NewStub(channel);
    rm.admin = v1::AdminService::NewStub(channel);
  }
  return rm;
}

v1::ClientService::Stub& RmClient::stub() { return *CurrentRm().client; }
v1::AdminService::Stub& RmClient::admin_stub() { return *CurrentRm().admin; }
const std::string& RmClient::address() const { return failover_->current(); }
const std::vector<std::string>& RmClient::addresses() const { return failover_->addresses(); }

absl::Status RmClient::CallWithFailover(
    const std::function<grpc::Status(grpc::ClientContext* ctx, int attempt)>& rpc,
    int64_t timeout_ms) {
  if (!setup_error_.ok()) return setup_error_;
  const absl::Time start = absl::Now();
  const absl::Time give_up = start + absl::Milliseconds(failover_budget_ms_);
  int64_t backoff_ms = kRetryInitialMs;
  RmFailoverAction previous = RmFailoverAction::kNone;
  // The last error of every RM tried, in the order they were first tried.
  std::vector<std::pair<std::string, std::string>> errors;
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<std::unique_ptr<grpc::ClientContext>> ctx = NewContext(timeout_ms);
    if (!ctx.ok()) return ctx.status();
    const std::string address = failover_->current();
    const grpc::Status status = rpc(ctx->get(), attempt);
    if (status.ok()) return absl::OkStatus();
    auto it = std::find_if(errors.begin(), errors.end(),
                           [&](const auto& e) { return e.first == address; });
    if (it == errors.end()) it = errors.insert(errors.end(), {address, ""});
    it->second = status.error_message();
    // The RM's channel is made anew for its next try: a new channel connects at once, where
    // gRPC's would wait out its reconnection backoff and fail calls with the old error.
    if (IsRmFailoverCode(status)) rms_[failover_->current_index()] = Rm();
    RmFailoverAction action = failover_->OnFailure(status, **ctx);
    absl::Duration left = give_up - absl::Now();
    if (!failover_->ha() && status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      // One RM: it could not be reached; try it again for a short while.
      left = std::min(left, absl::Milliseconds(kSingleRmRetryBudgetMs) - (absl::Now() - start));
      action = RmFailoverAction::kNextRm;
    }
    if (action == RmFailoverAction::kNone || left <= absl::ZeroDuration()) {
      if (!IsRmFailoverCode(status) || errors.size() <= 1) return FromGrpc(status, address);
      // Every RM tried, and what each said last.
      std::vector<std::string> addresses, said;
      for (const auto& [a, message] : errors) {
        addresses.push_back(a);
        said.push_back(absl::StrCat(a, ": ", message));
      }
      return FromGrpc(
          grpc::Status(status.error_code(), absl::StrCat("tried for ", failover_budget_ms_ / 1000.0,
                                                         " s: ", absl::StrJoin(said, "; "))),
          absl::StrJoin(addresses, " or "));
    }
    // A standby named the active: straight to it, unless the last try did that already.
    if (action == RmFailoverAction::kActiveRm && previous != RmFailoverAction::kActiveRm) {
      previous = action;
      continue;
    }
    previous = action;
    const int64_t wait_ms = std::min<int64_t>(backoff_ms, absl::ToInt64Milliseconds(left));
    if (sleep_) {
      sleep_(wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    }
    backoff_ms = std::min(backoff_ms * 2, kRetryMaxMs);
  }
}

absl::Status CheckMetadataValue(absl::string_view what, absl::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s has a %s (byte 0x%02x at offset %d); it must be one line of printable ASCII", what,
          c == '\n' || c == '\r' ? "line break" : "control or non-ASCII character", c, i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckClientEnvironment() {
  if (const char* user = std::getenv("USER"); user != nullptr && *user != '\0') {
    if (absl::Status s = CheckMetadataValue("$USER", user); !s.ok()) return s;
  }
  return ClientSecret().status();
}

absl::StatusOr<std::string> ReadSecretFile(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("secret file ", text.status().message()));
  }
  std::string secret(absl::StripTrailingAsciiWhitespace(*text));
  if (secret.empty())
    return absl::InvalidArgumentError(absl::StrCat("secret file '", path, "' is empty"));
  if (absl::Status s = CheckMetadataValue(absl::StrCat("secret file '", path, "'"), secret);
      !s.ok()) {
    return s;
  }
  return secret;
}

absl::StatusOr<std::string> ClientSecret() {
  const char* path = std::getenv("WEFT_SECRET_FILE");
  if (path == nullptr || *path == '\0') return std::string();
  return ReadSecretFile(path);
}

absl::Status AddClientCredentials(grpc::ClientContext* ctx, const std::string& act_as) {
  absl::StatusOr<std::string> secret = ClientSecret();
  if (!secret.ok()) return secret.status();
  if (!act_as.empty()) ctx->AddMetadata("weft-user", act_as);
  if (!secret->empty()) {
    ctx->AddMetadata("weft-secret", *secret);
    return absl::OkStatus();
  }
  absl::StatusOr<std::string> cred =
      security::MungeEncode(security::MungeSocketFromEnvironment(), rm::kMungePayload);
  if (!cred.ok()) return cred.status();
  ctx->AddMetadata("weft-munge-cred", *cred);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<grpc::ClientContext>> RmClient::NewContext(
    int64_t timeout_ms) const {
  if (!setup_error_.ok()) return setup_error_;
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (absl::Status s = AddClientCredentials(ctx.get(), user_); !s.ok()) return s;
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  return ctx;
}

absl::StatusOr<v1::ApplicationReport> RmClient::GetApplication(const std::string& app_id) {
  v1::GetApplicationRequest req;
  req.set_application_id(app_id);
  v1::GetApplicationResponse resp;
  if (absl::Status s = Call(&v1::ClientService::Stub::GetApplication, req, &resp); !s.ok())
    return s;
  return resp.report();
}

absl::Status RmClient::SubmitApplication(const v1::SubmitApplicationRequest& request) {
  v1::SubmitApplicationResponse response;
  return CallWithFailover([&](grpc::ClientContext* ctx, int attempt) {
    grpc::Status status = stub().SubmitApplication(ctx, request, &response);
    if (attempt > 0 && status.error_code() == grpc::StatusCode::ALREADY_EXISTS)
      return grpc::Status::OK;
    return status;
  });
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return absl::StrCat("{\"error\":\"", status.ToString(), "\"}");
  return out;
}

std::string FormatTimeMs(int64_t ms) {
  if (ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(ms), absl::LocalTimeZone());
}

std::string FormatResource(const v1::Resource& resource) {
  std::vector<std::string> parts;
  auto value = [&](const std::string& name) -> int64_t {
    auto it = resource.values().find(name);
    return it == resource.values().end() ? 0 : it->second;
  };
  parts.push_back(absl::StrCat("memory-mb=", value("memory-mb")));
  parts.push_back(absl::StrCat("vcores=", value("vcores")));
  std::map<std::string, int64_t> others;
  for (const auto& [name, v] : resource.values())
    if (name != "memory-mb" && name != "vcores" && v != 0) others[name] = v;
  for (const auto& [name, v] : others) parts.push_back(absl::StrCat(name, "=", v));
  return absl::StrJoin(parts, ",");
}

void PrintTable(const std::vector<std::vector<std::string>>& raw_rows) {
  std::vector<std::vector<std::string>> rows;
  rows.reserve(raw_rows.size());
  for (const auto& raw : raw_rows) {
    std::vector<std::string>& row = rows.emplace_back();
    row.reserve(raw.size());
    for (const std::string& cell : raw) row.push_back(EscapeForTerminal(cell));
  }
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    // A row's last cell is never padded: a short row's long last cell widens no column.
    for (size_t i = 0; i + 1 < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - row[i].size() + 2, ' ');
    }
    std::cout << line << "\n";
  }
  std::cout.flush();
}

std::string ShellQuote(absl::string_view s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

namespace {
sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}
}  // namespace

void BlockTerminationSignals() {
  sigset_t set = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int WaitForTerminationSignal() {
  sigset_t set = TerminationSignals();
  int sig = 0;
  while (sigwait(&set, &sig) != 0) {
  }
  return sig;
}

}  // namespace weft::cli
