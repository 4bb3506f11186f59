// Copyright Weft authors. Mutual TLS between Weft's daemons: the cluster CA, per-daemon
// certificates that name the daemon, gRPC credentials, and the verified peer's identity.
#ifndef WEFT_SECURITY_TLS_H_
#define WEFT_SECURITY_TLS_H_

#include <grpcpp/security/auth_context.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_context.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace weft::security {

// Every daemon certificate names one daemon: a role and a name within that role. The
// identity is written twice, as the subject CN "<role>/<name>" (when it fits X.509's 64
// characters; otherwise the subject is empty and the SAN extension is critical) and as the SAN
// URI "weft://<role>/<name>", which is what readers trust first. A NodeManager's name is its
// node id, so its certificate binds the node id.
enum class DaemonRole {
  kResourceManager,  // "rm"
  kNodeManager,      // "nm"
  kRouter,           // "router"
  kGpg,              // "gpg" (the global policy generator)
};

// "rm", "nm", "router" or "gpg".
absl::string_view DaemonRoleName(DaemonRole role);
// The inverse of DaemonRoleName(). InvalidArgument naming the text and the accepted roles.
absl::StatusOr<DaemonRole> ParseDaemonRole(absl::string_view text);
// A daemon name is 1..253 characters of [A-Za-z0-9._:-] (a node id "host:port" qualifies).
// InvalidArgument naming the name and its first bad character otherwise.
absl::Status ValidateDaemonName(absl::string_view name);

// A subject alternative name a caller may add: an IPv4/IPv6 literal, or a host name of 1..253
// characters in dot-separated non-empty labels of [A-Za-z0-9-]. InvalidArgument otherwise.
absl::Status ValidateSubjectAltName(absl::string_view host);

struct DaemonIdentity {
  DaemonRole role = DaemonRole::kNodeManager;
  std::string name;

  // "<role>/<name>", e.g. "nm/node-3".
  std::string ToString() const;
  friend bool operator==(const DaemonIdentity&, const DaemonIdentity&) = default;
};

// Validity defaults, in days.
inline constexpr int kDefaultCaDays = 3650;
inline constexpr int kDefaultCertDays = 825;
// `days` arguments must lie in [1, kMaxDays].
inline constexpr int kMaxDays = 36500;

// Names of the files in a TLS directory: the CA is <dir>/ca.pem + <dir>/ca.key, a daemon's
// certificate <dir>/<role>-<name>.pem + <dir>/<role>-<name>.key. Key files are mode 0600,
// certificates 0644, directories this library creates 0700. Keys are unencrypted PEM (PKCS#8).
inline constexpr absl::string_view kCaCertFile = "ca.pem";
inline constexpr absl::string_view kCaKeyFile = "ca.key";

// Where a certificate and its private key are (or were written).
struct CertKeyPaths {
  std::string cert_path;
  std::string key_path;
};

// Creates the cluster CA in `dir` (made 0700, with missing parents, when it does not exist):
// a fresh EC P-256 key and a self-signed certificate with subject CN=`common_name`
// (1..64 characters), basicConstraints CA:TRUE and keyUsage keyCertSign,cRLSign (both
// critical), valid from one hour ago (tolerating clock skew) for `days` days.
// AlreadyExists when dir/ca.pem or dir/ca.key exists and `overwrite` is false (replacing a CA
// invalidates every certificate it issued); InvalidArgument for a bad name or days; the file
// system's error naming the path otherwise. Files are replaced atomically (write + rename).
absl::StatusOr<CertKeyPaths> CreateCa(const std::string& dir, absl::string_view common_name,
                                      int days = kDefaultCaDays, bool overwrite = false);

// The host an NM named `name` is dialled at: HOST of a node id HOST:PORT (PORT all digits, HOST
// a valid SAN), so "10.0.0.7:8041" gives "10.0.0.7". nullopt for other roles and other names.
std::optional<std::string> NodeIdHost(DaemonRole role, absl::string_view name);

// Issues a certificate for daemon `role`/`name` signed by the CA in `ca_dir` (ca.pem, ca.key)
// and writes it to out_dir/<role>-<name>.{pem,key} (out_dir made 0700 when missing).
// The certificate: fresh EC P-256 key, random 128-bit serial, keyUsage
// digitalSignature,keyEncipherment, extendedKeyUsage serverAuth,clientAuth, basicConstraints
// CA:FALSE, and SANs: the identity URI, DNS "localhost", IPs 127.0.0.1 and ::1 (so loopback
// connections verify without a target-name override), for an NM the host of its node id (see
// NodeIdHost()), then each of `sans` (see ValidateSubjectAltName()) in order, duplicates dropped.
// Valid from one hour ago for `days` days, but never beyond the CA's own expiry.
// InvalidArgument for a bad name, SAN or days; AlreadyExists when the files exist and
// `overwrite` is false; the errors of LoadTlsFiles() for a CA whose files are missing,
// malformed, mismatched or expired; the file system's error naming the path otherwise.
absl::StatusOr<CertKeyPaths> IssueCertificate(const std::string& ca_dir, const std::string& out_dir,
                                              DaemonRole role, absl::string_view name,
                                              const std::vector<std::string>& sans,
                                              int days = kDefaultCertDays, bool overwrite = false);

// The paths of one daemon's TLS material in a TLS directory laid out as above.
struct TlsPaths {
  std::string ca_path;
  std::string cert_path;
  std::string key_path;
};
TlsPaths DaemonTlsPaths(const std::string& dir, DaemonRole role, absl::string_view name);

// A daemon's TLS material, PEM text, as gRPC takes it.
struct TlsFiles {
  std::string ca_pem;    // the cluster CA certificate(s) peers are verified against
  std::string cert_pem;  // this daemon's certificate
  std::string key_pem;   // its private key
};

// Reads the three files and checks that they fit together at time `now`: the CA file holds
// one or more CA certificates, the certificate (the first in its file) was signed by one of
// them, the key matches the certificate, and the certificate and that CA are both valid at
// `now`. Errors name the files:
//   NotFound / PermissionDenied: "cannot read <what> <path>: <reason>";
//   InvalidArgument: "<path> holds no PEM certificate" | "... no PEM private key" |
//     "CA file <path> holds a certificate that is not a CA (<subject>)" |
//     "cert <X> was not signed by CA <Y>" | "key <X> does not match cert <Y>" |
//     "cert <X> does not verify against CA <Y>: <OpenSSL's reason>";
//   FailedPrecondition: "cert <X> expired at <time> (now <time>)" |
//     "cert <X> is not valid until <time> (now <time>)" (likewise "CA <Y> ...").
absl::StatusOr<TlsFiles> LoadTlsFiles(const std::string& ca_path, const std::string& cert_path,
                                      const std::string& key_path, absl::Time now = absl::Now());
absl::StatusOr<TlsFiles> LoadTlsFiles(const TlsPaths& paths, absl::Time now = absl::Now());

// Reads a CA file for a client that presents no certificate (e.g. the `weft` CLI): the
// CA-bundle checks of LoadTlsFiles(), including validity at `now`; returns the PEM text.
absl::StatusOr<std::string> LoadCaPem(const std::string& ca_path, absl::Time now = absl::Now());

// What a certificate says, for `weft certs show` and for PeerIdentity().
struct CertificateInfo {
  std::string subject;  // RFC 2253, e.g. "CN=nm/node-3"
  std::string issuer;
  std::string serial_hex;
  absl::Time not_before;
  absl::Time not_after;
  bool is_ca = false;
  std::vector<std::string> dns_names;
  std::vector<std::string> ip_addresses;  // textual, e.g. "127.0.0.1", "::1"
  std::vector<std::string> uris;
  // From the first SAN URI weft://<role>/<name>, else from a CN "<role>/<name>"; nullopt when
  // neither names a valid role and name (e.g. a CA certificate).
  std::optional<DaemonIdentity> identity;
};

// Parses the first certificate in `pem`. InvalidArgument "holds no PEM certificate" otherwise.
// Says nothing about whether the certificate is trustworthy.
absl::StatusOr<CertificateInfo> DescribeCertificate(absl::string_view pem);

// True when `info` has a SAN under which a client dialling `host` verifies it: an IP SAN equal
// to `host` as an address (so "::1" matches "0:0::1"), or a DNS SAN equal to it ignoring case.
// Wildcard DNS SANs are not expanded (`weft certs issue` makes none).
bool CertificateNamesHost(const CertificateInfo& info, absl::string_view host);

// How a server port treats client certificates. Either way a presented certificate must chain
// to the cluster CA, or the TLS handshake fails.
enum class ClientCertMode {
  // Daemon-only ports: a connection without a valid client certificate is refused.
  kRequireAndVerify,
  // Ports shared with callers that authenticate otherwise (users by MUNGE, AMs by token), like
  // the RM's single port and the NM's ContainerService: a certificate is requested and, when
  // presented, verified; without one the call proceeds and PeerIdentity() is Unauthenticated.
  kRequestAndVerifyIfPresent,
};

// Server credentials presenting files.cert_pem/key_pem and verifying clients against
// files.ca_pem. Precondition: `files` comes from LoadTlsFiles() (gRPC itself only reports bad
// PEM at handshake time, in its log).
std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const TlsFiles& files,
                                                                    ClientCertMode mode);

// Channel credentials verifying the server's certificate against the cluster CA `ca_pem`,
// without presenting a client certificate (clients, AMs).
//
// gRPC checks the server certificate's SANs against the host part of the channel target, so
// connect to a host name or IP the server's certificate lists (loopback always is, see
// IssueCertificate()). If a server must be reached under another name (e.g. an IP not in its
// SANs), set `grpc::ChannelArguments::SetSslTargetNameOverride("<a SAN of the cert>")`, i.e.
// the channel argument GRPC_SSL_TARGET_NAME_OVERRIDE_ARG, and create the channel with
// grpc::CreateCustomChannel().
std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const std::string& ca_pem);
// The same, also presenting files.cert_pem/key_pem as the client certificate (daemons).
// Precondition: `files` comes from LoadTlsFiles().
std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const TlsFiles& files);

// The daemon identity of a call's peer, from its verified client certificate: the SAN URI
// weft://<role>/<name>, else the CN "<role>/<name>". Trusted only when gRPC reports the peer
// authenticated, i.e. the certificate verified against the server's CA.
// Unauthenticated "the caller presented no client certificate" when it is not;
// PermissionDenied when the certificate names no weft daemon (message has its subject).
absl::StatusOr<DaemonIdentity> PeerIdentity(const grpc::AuthContext& auth_context);
// The same for a server call (sync, async or callback API).
absl::StatusOr<DaemonIdentity> PeerIdentity(const grpc::ServerContextBase& context);

// The TLS directory of a `weft dev` cluster.
struct DevTlsLayout {
  std::string ca_path;                    // <dir>/ca.pem
  TlsPaths rm;                            // rm/rm
  std::map<std::string, TlsPaths> nodes;  // node name -> nm/<node name>
};

// Makes `dir` ready for a single-host dev cluster and returns its layout: creates the CA
// (CN "weft dev cluster CA") unless ca.pem and ca.key both exist, in which case it is reused;
// then issues the certificate rm/rm and one nm/<node> per entry of `node_names` (default SANs
// only), keeping each existing one that LoadTlsFiles() accepts and re-issuing any other.
// Idempotent. InvalidArgument for a bad node name; FailedPrecondition when only one of
// ca.pem and ca.key exists; the errors of CreateCa() and IssueCertificate() otherwise. Not
// safe against concurrent callers on the same `dir`.
absl::StatusOr<DevTlsLayout> EnsureDevTls(const std::string& dir,
                                          const std::vector<std::string>& node_names);

}  // namespace weft::security

#endif  // WEFT_SECURITY_TLS_H_
