// Copyright Weft authors. The embedded defaults' TLS material (EnsureDevTls, security/tls.h):
// a CA and certificates for `weft dev`'s RM and NMs, made once and reused.
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "security/tls.h"

namespace weft::security {

absl::StatusOr<DevTlsLayout> EnsureDevTls(const std::string& dir,
                                          const std::vector<std::string>& node_names) {
  for (const std::string& node : node_names) {
    if (absl::Status s = ValidateDaemonName(node); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat("node name: ", s.message()));
  }
  const std::string ca_cert = (std::filesystem::path(dir) / std::string(kCaCertFile)).string();
  const std::string ca_key = (std::filesystem::path(dir) / std::string(kCaKeyFile)).string();
  std::error_code ec;
  const bool has_cert = std::filesystem::exists(ca_cert, ec);
  const bool has_key = std::filesystem::exists(ca_key, ec);
  if (has_cert != has_key)
    return absl::FailedPreconditionError(absl::StrCat(dir, " has ", has_cert ? ca_cert : ca_key,
                                                      " but not ", has_cert ? ca_key : ca_cert,
                                                      "; remove the other file to make a new CA"));
  if (!has_cert) {
    absl::StatusOr<CertKeyPaths> ca = CreateCa(dir, "weft dev cluster CA", kDefaultCaDays);
    if (!ca.ok()) return ca.status();
  }
  auto ensure = [&dir](DaemonRole role, const std::string& name) -> absl::StatusOr<TlsPaths> {
    TlsPaths paths = DaemonTlsPaths(dir, role, name);
    if (LoadTlsFiles(paths).ok()) return paths;
    absl::StatusOr<CertKeyPaths> issued =
        IssueCertificate(dir, dir, role, name, {}, kDefaultCertDays, /*overwrite=*/true);
    if (!issued.ok()) return issued.status();
    return paths;
  };
  DevTlsLayout layout;
  layout.ca_path = ca_cert;
  absl::StatusOr<TlsPaths> rm = ensure(DaemonRole::kResourceManager, "rm");
  if (!rm.ok()) return rm.status();
  layout.rm = *std::move(rm);
  for (const std::string& node : node_names) {
    absl::StatusOr<TlsPaths> nm = ensure(DaemonRole::kNodeManager, node);
    if (!nm.ok()) return nm.status();
    layout.nodes[node] = *std::move(nm);
  }
  return layout;
}

}  // namespace weft::security
