// Copyright Weft authors.
#include "cli/certs_command.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "cli/cli_common.h"
#include "common/terminal_text.h"
#include "security/tls.h"

namespace weft::cli {
namespace {

constexpr int kUsageError = 2;

int UsageError(absl::string_view message) {
  PrintError(message);
  return kUsageError;
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

absl::Status CheckDays(absl::string_view command, int days) {
  if (days < 1 || days > security::kMaxDays)
    return absl::InvalidArgumentError(
        absl::StrCat(command, ": --days ", days, " is out of range [1, ", security::kMaxDays, "]"));
  return absl::OkStatus();
}

struct InitCaFlags {
  std::string dir;
  std::string name = "weft cluster CA";
  int days = security::kDefaultCaDays;
  bool force = false;
};

int InitCa(const InitCaFlags& f) {
  if (f.dir.empty()) return UsageError("certs init-ca: --dir is required");
  if (absl::Status s = CheckDays("certs init-ca", f.days); !s.ok()) return UsageError(s.message());
  absl::StatusOr<security::CertKeyPaths> ca = security::CreateCa(f.dir, f.name, f.days, f.force);
  if (!ca.ok()) return PrintError(absl::StrCat("certs init-ca: ", ca.status().message()));
  std::cout << "created CA '" << f.name << "': " << ca->cert_path << " (key " << ca->key_path
            << ", valid " << f.days << " days)" << std::endl;
  return 0;
}

struct IssueFlags {
  std::string ca_dir;
  std::string out_dir;
  std::string role;
  std::string name;
  std::vector<std::string> sans;
  int days = security::kDefaultCertDays;
  bool force = false;
};

int Issue(const IssueFlags& f) {
  constexpr absl::string_view kCmd = "certs issue: ";
  if (f.ca_dir.empty()) return UsageError(absl::StrCat(kCmd, "--ca-dir is required"));
  if (f.out_dir.empty()) return UsageError(absl::StrCat(kCmd, "--out-dir is required"));
  if (f.role.empty())
    return UsageError(absl::StrCat(kCmd, "--role is required (rm, nm, router or gpg)"));
  if (f.name.empty()) return UsageError(absl::StrCat(kCmd, "--name is required"));
  absl::StatusOr<security::DaemonRole> role = security::ParseDaemonRole(f.role);
  if (!role.ok()) return UsageError(absl::StrCat(kCmd, "--role: ", role.status().message()));
  if (absl::Status s = security::ValidateDaemonName(f.name); !s.ok())
    return UsageError(absl::StrCat(kCmd, "--name: ", s.message()));
  for (const std::string& san : f.sans) {
    if (absl::Status s = security::ValidateSubjectAltName(san); !s.ok())
      return UsageError(absl::StrCat(kCmd, "--san: ", s.message()));
  }
  if (absl::Status s = CheckDays("certs issue", f.days); !s.ok()) return UsageError(s.message());
  absl::StatusOr<security::CertKeyPaths> issued =
      security::IssueCertificate(f.ca_dir, f.out_dir, *role, f.name, f.sans, f.days, f.force);
  if (!issued.ok()) return PrintError(absl::StrCat(kCmd, issued.status().message()));
  std::cout << "issued " << security::DaemonIdentity{*role, f.name}.ToString() << ": "
            << issued->cert_path << " (key " << issued->key_path << ")" << std::endl;
  return 0;
}

int Show(const std::string& file) {
  if (file.empty()) return UsageError("certs show: FILE is required");
  absl::StatusOr<std::string> pem = ReadFile(file);
  if (!pem.ok()) return PrintError(absl::StrCat("certs show: ", pem.status().message()));
  absl::StatusOr<security::CertificateInfo> info = security::DescribeCertificate(*pem);
  if (!info.ok())
    return PrintError(absl::StrCat("certs show: ", file, " ", info.status().message()));
  const absl::Time now = absl::Now();
  const std::string state = now < info->not_before   ? " (not yet valid)"
                            : now >= info->not_after ? " (expired)"
                                                     : "";
  auto list = [](const std::vector<std::string>& v) {
    return v.empty() ? std::string("-") : absl::StrJoin(v, ", ");
  };
  std::vector<std::vector<std::string>> rows = {
      {"subject:", info->subject.empty() ? "-" : info->subject},
      {"identity:", info->identity.has_value() ? info->identity->ToString() : "-"},
      {"issuer:", info->issuer},
      {"serial:", info->serial_hex},
      {"not before:", TimeText(info->not_before)},
      {"not after:", TimeText(info->not_after) + state},
      {"CA:", info->is_ca ? "yes" : "no"},
      {"DNS names:", list(info->dns_names)},
      {"IP addresses:", list(info->ip_addresses)},
      {"URIs:", list(info->uris)},
  };
  // Escaped: a certificate's names are whatever its issuer wrote.
  for (const auto& row : rows)
    std::cout << row[0] << std::string(14 - row[0].size(), ' ') << EscapeForTerminal(row[1])
              << "\n";
  std::cout.flush();
  return 0;
}

}  // namespace

void AddCertsCommand(CLI::App& app, int* exit_code) {
  CLI::App* group =
      app.add_subcommand("certs", "The cluster CA and the daemons' mutual-TLS certificates");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<InitCaFlags>();
    CLI::App* cmd = group->add_subcommand(
        "init-ca", "Create the cluster CA: DIR/ca.pem and DIR/ca.key (EC P-256, key 0600)");
    cmd->add_option("--dir", f->dir, "directory for ca.pem and ca.key (created 0700)");
    cmd->add_option("--name", f->name, "the CA's common name")->capture_default_str();
    cmd->add_option("--days", f->days, "validity in days")->capture_default_str();
    cmd->add_flag("--force", f->force,
                  "replace an existing CA (invalidates every certificate it issued)");
    cmd->callback([f, exit_code] { *exit_code = InitCa(*f); });
  }
  {
    auto f = std::make_shared<IssueFlags>();
    CLI::App* cmd = group->add_subcommand(
        "issue",
        "Issue a daemon certificate signed by the CA: OUT/<role>-<name>.pem and .key (0600)");
    cmd->add_option("--ca-dir", f->ca_dir, "directory holding ca.pem and ca.key");
    cmd->add_option("--out-dir", f->out_dir, "directory for the certificate and key");
    cmd->add_option("--role", f->role, "rm, nm, router or gpg");
    cmd->add_option("--name", f->name,
                    "daemon name ([A-Za-z0-9._:-], 1..253); an NM's is its node id");
    cmd->add_option("--san", f->sans,
                    "extra host name or IP the daemon serves on (repeatable or comma-separated;"
                    " localhost, 127.0.0.1 and ::1 are always included)")
        ->delimiter(',');
    cmd->add_option("--days", f->days, "validity in days (capped at the CA's)")
        ->capture_default_str();
    cmd->add_flag("--force", f->force, "replace an existing certificate and key");
    cmd->callback([f, exit_code] { *exit_code = Issue(*f); });
  }
  {
    auto file = std::make_shared<std::string>();
    CLI::App* cmd = group->add_subcommand(
        "show", "Print a certificate's subject, identity, SANs, issuer and validity");
    cmd->add_option("FILE", *file, "PEM certificate file");
    cmd->callback([file, exit_code] { *exit_code = Show(*file); });
  }
}

}  // namespace weft::cli
