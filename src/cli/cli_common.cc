#include "cli/cli_common.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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

void AddRmOption(CLI::App* cmd, std::string* rm_address) {
  *rm_address = DefaultRmAddress();
  cmd->add_option("--rm", *rm_address,
                  "the ResourceManager, HOST:PORT (default: $WEFT_RM, else "
                  "127.0.0.1:8032)")
      ->capture_default_str();
}

int PrintError(absl::string_view message) {
  std::cerr << "weft: " << message << std::endl;
  return 1;
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

RmClient::RmClient(std::string rm_address, std::string user)
    : address_(std::move(rm_address)), user_(std::move(user)) {
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      ClusterChannelCredentials();
  if (!credentials.ok()) {
    credentials_error_ = credentials.status();  // every call reports it
    credentials = grpc::InsecureChannelCredentials();
  }
  stub_ = v1::ClientService::NewStub(grpc::CreateChannel(address_, *credentials));
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
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read secret file '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string secret(absl::StripTrailingAsciiWhitespace(ss.str()));
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
  if (!credentials_error_.ok()) return credentials_error_;
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (absl::Status s = AddClientCredentials(ctx.get(), user_); !s.ok()) return s;
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  return ctx;
}

absl::StatusOr<v1::ApplicationReport> RmClient::GetApplication(const std::string& app_id) {
  auto ctx = NewContext();
  if (!ctx.ok()) return ctx.status();
  v1::GetApplicationRequest req;
  req.set_application_id(app_id);
  v1::GetApplicationResponse resp;
  if (absl::Status s = FromGrpc(stub_->GetApplication(ctx->get(), req, &resp), address_); !s.ok())
    return s;
  return resp.report();
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return absl::StrCat("{\"error\":\"", status.ToString(), "\"}");
  return out;
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

void PrintTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
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
