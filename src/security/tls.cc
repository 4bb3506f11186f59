// Copyright Weft authors.
#include "security/tls.h"

#include <arpa/inet.h>
#include <grpc/grpc_security_constants.h>
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "common/errors.h"
#include "common/files.h"
#include "common/private_files.h"

namespace weft::security {
namespace {

// RAII for OpenSSL objects.
template <typename T, void (*Free)(T*)>
struct OpenSslDeleter {
  void operator()(T* p) const { Free(p); }
};
using EvpKeyPtr = std::unique_ptr<EVP_PKEY, OpenSslDeleter<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslDeleter<X509, X509_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslDeleter<BIO, BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslDeleter<BIGNUM, BN_free>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpenSslDeleter<X509_NAME, X509_NAME_free>>;
using X509ExtPtr =
    std::unique_ptr<X509_EXTENSION, OpenSslDeleter<X509_EXTENSION, X509_EXTENSION_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpenSslDeleter<X509_STORE, X509_STORE_free>>;
using X509StoreCtxPtr =
    std::unique_ptr<X509_STORE_CTX, OpenSslDeleter<X509_STORE_CTX, X509_STORE_CTX_free>>;
void FreeGeneralNames(GENERAL_NAMES* names) { GENERAL_NAMES_free(names); }
using GeneralNamesPtr =
    std::unique_ptr<GENERAL_NAMES, OpenSslDeleter<GENERAL_NAMES, FreeGeneralNames>>;
void FreeOpenSslString(char* s) { OPENSSL_free(s); }
using OpenSslStringPtr = std::unique_ptr<char, OpenSslDeleter<char, FreeOpenSslString>>;

constexpr absl::string_view kUriScheme = "weft://";
constexpr size_t kMaxCommonNameChars = 64;  // X.509's ub-common-name
constexpr size_t kMaxDaemonNameChars = 253;
constexpr long kBackdateSeconds = 3600;  // NOLINT(runtime/int): OpenSSL's type.

// The reason of the most recent OpenSSL error (clearing the queue), or "unknown error".
std::string OpenSslError() {
  unsigned long last = 0;                                  // NOLINT(runtime/int): OpenSSL's type.
  while (unsigned long err = ERR_get_error()) last = err;  // NOLINT(runtime/int)
  if (last == 0) return "unknown error";
  char reason[256];
  ERR_error_string_n(last, reason, sizeof(reason));
  return reason;
}

absl::Status OpenSslFailure(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", OpenSslError()));
}

// The PEM file at `path`; errors start with `what` ("CA file /x/ca.pem: cannot open: ...").
absl::StatusOr<std::string> ReadPemFile(const std::string& path, absl::string_view what) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat(what, " ", text.status().message()));
  }
  return text;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Creates `dir` and its missing parents; directories made here get mode 0700.
absl::Status EnsureDirectory(const std::string& dir) {
  if (dir.empty()) return absl::InvalidArgumentError("empty directory path");
  if (absl::Status s = MakePrivateDirectories(dir); !s.ok()) return s;
  struct stat st;
  if (stat(dir.c_str(), &st) != 0)
    return ErrnoError(errno, absl::StrCat("cannot create directory ", dir));
  if (!S_ISDIR(st.st_mode))
    return absl::FailedPreconditionError(absl::StrCat(dir, " exists and is not a directory"));
  return absl::OkStatus();
}

std::string JoinPath(const std::string& dir, absl::string_view file) {
  return (std::filesystem::path(dir) / std::string(file)).string();
}

absl::Status ValidateDays(int days) {
  if (days < 1 || days > kMaxDays)
    return absl::InvalidArgumentError(
        absl::StrCat("validity of ", days, " days is out of range [1, ", kMaxDays, "]"));
  return absl::OkStatus();
}

bool IsIpLiteral(const std::string& text) {
  unsigned char buf[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, text.c_str(), buf) == 1 || inet_pton(AF_INET6, text.c_str(), buf) == 1;
}

// A DNS SAN: 1..253 characters, dot-separated non-empty labels of [A-Za-z0-9-].
absl::Status ValidateHostName(absl::string_view host) {
  if (host.empty() || host.size() > 253)
    return absl::InvalidArgumentError(
        absl::StrCat("SAN '", host, "' is not a host name or IP address (1..253 characters)"));
  for (absl::string_view label : absl::StrSplit(host, '.')) {
    if (label.empty())
      return absl::InvalidArgumentError(
          absl::StrCat("SAN '", host, "' is not a host name or IP address (empty label)"));
    for (char c : label) {
      if (!absl::ascii_isalnum(c) && c != '-')
        return absl::InvalidArgumentError(
            absl::StrCat("SAN '", host, "' is not a host name or IP address (bad character '",
                         std::string(1, c), "')"));
    }
  }
  return absl::OkStatus();
}

// ASN1_TIME -> absl::Time (InfinitePast when it does not parse).
absl::Time ToAbslTime(const ASN1_TIME* t) {
  struct tm tm;
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromTimeT(timegm(&tm));
}

std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", t, absl::UTCTimeZone());
}

std::string NameToString(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB) < 0)
    return "?";
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

// All certificates in `pem`, in order.
std::vector<X509Ptr> ParseCertificates(absl::string_view pem) {
  std::vector<X509Ptr> certs;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return certs;
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr))
    certs.emplace_back(cert);
  ERR_clear_error();  // the read that ended the loop
  return certs;
}

EvpKeyPtr ParsePrivateKey(absl::string_view pem) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return nullptr;
  EvpKeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  return key;
}

// Checks that `cert` (described as "<what> <path>") is valid at `now`.
absl::Status CheckValidity(const X509* cert, absl::string_view what, absl::string_view path,
                           absl::Time now) {
  const absl::Time not_before = ToAbslTime(X509_get0_notBefore(cert));
  const absl::Time not_after = ToAbslTime(X509_get0_notAfter(cert));
  if (now < not_before)
    return absl::FailedPreconditionError(absl::StrCat(what, " ", path, " is not valid until ",
                                                      TimeText(not_before), " (now ", TimeText(now),
                                                      ")"));
  if (now >= not_after)
    return absl::FailedPreconditionError(absl::StrCat(
        what, " ", path, " expired at ", TimeText(not_after), " (now ", TimeText(now), ")"));
  return absl::OkStatus();
}

// Parses a CA bundle: at least one certificate, every one a CA.
absl::StatusOr<std::vector<X509Ptr>> ParseCaBundle(absl::string_view pem,
                                                   const std::string& ca_path) {
  std::vector<X509Ptr> cas = ParseCertificates(pem);
  if (cas.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("CA file ", ca_path, " holds no PEM certificate"));
  for (const X509Ptr& ca : cas) {
    if (X509_check_ca(ca.get()) <= 0)
      return absl::InvalidArgumentError(
          absl::StrCat("CA file ", ca_path, " holds a certificate that is not a CA (",
                       NameToString(X509_get_subject_name(ca.get())), ")"));
  }
  return cas;
}

// Loaded, cross-checked TLS material.
struct Loaded {
  TlsFiles files;
  std::vector<X509Ptr> cas;
  X509* signer = nullptr;  // the entry of `cas` that signed `cert`
  X509Ptr cert;
  EvpKeyPtr key;
};

absl::StatusOr<Loaded> Load(const std::string& ca_path, const std::string& cert_path,
                            const std::string& key_path, absl::Time now,
                            absl::string_view cert_what) {
  Loaded l;
  absl::StatusOr<std::string> ca_pem = ReadPemFile(ca_path, "CA file");
  if (!ca_pem.ok()) return ca_pem.status();
  absl::StatusOr<std::string> cert_pem = ReadPemFile(cert_path, absl::StrCat(cert_what, " file"));
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ReadPemFile(key_path, "key file");
  if (!key_pem.ok()) return key_pem.status();

  absl::StatusOr<std::vector<X509Ptr>> cas = ParseCaBundle(*ca_pem, ca_path);
  if (!cas.ok()) return cas.status();
  l.cas = std::move(*cas);
  std::vector<X509Ptr> certs = ParseCertificates(*cert_pem);
  if (certs.empty())
    return absl::InvalidArgumentError(
        absl::StrCat(cert_what, " file ", cert_path, " holds no PEM certificate"));
  l.cert = std::move(certs.front());
  l.key = ParsePrivateKey(*key_pem);
  if (l.key == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat("key file ", key_path, " holds no PEM private key"));

  for (const X509Ptr& ca : l.cas) {
    if (X509_check_issued(ca.get(), l.cert.get()) == X509_V_OK &&
        X509_verify(l.cert.get(), X509_get0_pubkey(ca.get())) == 1) {
      l.signer = ca.get();
      break;
    }
  }
  ERR_clear_error();
  if (l.signer == nullptr)
    return absl::InvalidArgumentError(
        absl::StrCat(cert_what, " ", cert_path, " was not signed by CA ", ca_path, " (issuer ",
                     NameToString(X509_get_issuer_name(l.cert.get())), ")"));
  if (X509_check_private_key(l.cert.get(), l.key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("key ", key_path, " does not match ", cert_what, " ", cert_path));
  }
  if (absl::Status s = CheckValidity(l.cert.get(), cert_what, cert_path, now); !s.ok()) return s;
  if (absl::Status s = CheckValidity(l.signer, "CA", ca_path, now); !s.ok()) return s;

  // Whatever else the chain needs (CA flags, extensions), as a TLS peer would check it.
  X509StorePtr store(X509_STORE_new());
  X509StoreCtxPtr ctx(X509_STORE_CTX_new());
  if (store == nullptr || ctx == nullptr) return OpenSslFailure("allocating an X509 store");
  for (const X509Ptr& ca : l.cas) X509_STORE_add_cert(store.get(), ca.get());
  if (X509_STORE_CTX_init(ctx.get(), store.get(), l.cert.get(), nullptr) != 1)
    return OpenSslFailure("initialising certificate verification");
  X509_STORE_CTX_set_time(ctx.get(), 0, absl::ToTimeT(now));
  if (cert_what != "CA" && X509_verify_cert(ctx.get()) != 1) {
    const int err = X509_STORE_CTX_get_error(ctx.get());
    ERR_clear_error();
    return absl::InvalidArgumentError(absl::StrCat(cert_what, " ", cert_path,
                                                   " does not verify against CA ", ca_path, ": ",
                                                   X509_verify_cert_error_string(err)));
  }
  l.files.ca_pem = std::move(*ca_pem);
  l.files.cert_pem = std::move(*cert_pem);
  l.files.key_pem = std::move(*key_pem);
  return l;
}

absl::StatusOr<EvpKeyPtr> NewKey() {
  EvpKeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslFailure("generating an EC P-256 key");
  return key;
}

absl::StatusOr<std::string> KeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return OpenSslFailure("encoding a private key");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

absl::StatusOr<std::string> CertToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || PEM_write_bio_X509(bio.get(), cert) != 1)
    return OpenSslFailure("encoding a certificate");
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);  // NOLINT(runtime/int)
  return std::string(data, static_cast<size_t>(len));
}

// Adds extension `nid` with OpenSSL config syntax `value` (e.g. "critical,CA:TRUE").
// `issuer` is the signing certificate (the certificate itself when self-signed).
absl::Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509ExtPtr ext(X509V3_EXT_nconf_nid(nullptr, &ctx, nid, value.c_str()));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1)
    return OpenSslFailure(absl::StrCat("adding extension ", OBJ_nid2sn(nid), "=", value));
  return absl::OkStatus();
}

// A new, unsigned X.509 v3 certificate for `key` with a random 128-bit serial, subject
// CN=`common_name` (none when empty), valid from kBackdateSeconds ago for `days` days.
absl::StatusOr<X509Ptr> NewCertificate(EVP_PKEY* key, const std::string& common_name, int days) {
  X509Ptr cert(X509_new());
  if (cert == nullptr || X509_set_version(cert.get(), X509_VERSION_3) != 1)
    return OpenSslFailure("allocating a certificate");
  BignumPtr serial(BN_new());
  do {
    if (serial == nullptr || BN_rand(serial.get(), 128, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1)
      return OpenSslFailure("drawing a serial number");
  } while (BN_is_zero(serial.get()));
  if (BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr)
    return OpenSslFailure("setting the serial number");
  if (X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kBackdateSeconds) == nullptr ||
      X509_time_adj_ex(X509_getm_notAfter(cert.get()), days, 0, nullptr) == nullptr)
    return OpenSslFailure("setting the validity period");
  X509NamePtr subject(X509_NAME_new());
  if (subject == nullptr) return OpenSslFailure("allocating a subject name");
  if (!common_name.empty() &&
      X509_NAME_add_entry_by_txt(subject.get(), "CN", MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1)
    return OpenSslFailure(absl::StrCat("setting the subject CN=", common_name));
  if (X509_set_subject_name(cert.get(), subject.get()) != 1 ||
      X509_set_pubkey(cert.get(), key) != 1)
    return OpenSslFailure("setting the subject");
  return cert;
}

absl::Status Sign(X509* cert, EVP_PKEY* signing_key) {
  if (X509_sign(cert, signing_key, EVP_sha256()) <= 0) return OpenSslFailure("signing");
  return absl::OkStatus();
}

// Writes the key (0600) and then the certificate (0644).
absl::Status WritePair(const CertKeyPaths& paths, X509* cert, EVP_PKEY* key) {
  absl::StatusOr<std::string> key_pem = KeyToPem(key);
  if (!key_pem.ok()) return key_pem.status();
  absl::StatusOr<std::string> cert_pem = CertToPem(cert);
  if (!cert_pem.ok()) return cert_pem.status();
  if (absl::Status s = WriteFileAtomically(paths.key_path, *key_pem, 0600); !s.ok()) return s;
  return WriteFileAtomically(paths.cert_path, *cert_pem, 0644);
}

absl::StatusOr<DaemonIdentity> ParseIdentity(absl::string_view text) {
  const size_t slash = text.find('/');
  if (slash == absl::string_view::npos)
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not <role>/<name>"));
  absl::StatusOr<DaemonRole> role = ParseDaemonRole(text.substr(0, slash));
  if (!role.ok()) return role.status();
  absl::string_view name = text.substr(slash + 1);
  if (absl::Status s = ValidateDaemonName(name); !s.ok()) return s;
  return DaemonIdentity{*role, std::string(name)};
}

std::string Asn1String(const ASN1_STRING* s) {
  return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                     static_cast<size_t>(ASN1_STRING_length(s)));
}

}  // namespace

absl::string_view DaemonRoleName(DaemonRole role) {
  switch (role) {
    case DaemonRole::kResourceManager:
      return "rm";
    case DaemonRole::kNodeManager:
      return "nm";
    case DaemonRole::kRouter:
      return "router";
    case DaemonRole::kGpg:
      return "gpg";
  }
  return "?";
}

absl::StatusOr<DaemonRole> ParseDaemonRole(absl::string_view text) {
  for (DaemonRole role : {DaemonRole::kResourceManager, DaemonRole::kNodeManager,
                          DaemonRole::kRouter, DaemonRole::kGpg}) {
    if (text == DaemonRoleName(role)) return role;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown daemon role '", text, "' (one of rm, nm, router, gpg)"));
}

absl::Status ValidateDaemonName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxDaemonNameChars)
    return absl::InvalidArgumentError(absl::StrCat("daemon name '", name, "' must have 1..",
                                                   kMaxDaemonNameChars, " characters, not ",
                                                   name.size()));
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != ':' && c != '-')
      return absl::InvalidArgumentError(absl::StrCat("daemon name '", name,
                                                     "' has a bad character '", std::string(1, c),
                                                     "' (allowed: A-Z a-z 0-9 . _ : -)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSubjectAltName(absl::string_view host) {
  if (IsIpLiteral(std::string(host))) return absl::OkStatus();
  return ValidateHostName(host);
}

std::string DaemonIdentity::ToString() const {
  return absl::StrCat(DaemonRoleName(role), "/", name);
}

absl::StatusOr<CertKeyPaths> CreateCa(const std::string& dir, absl::string_view common_name,
                                      int days, bool overwrite) {
  if (common_name.empty() || common_name.size() > kMaxCommonNameChars)
    return absl::InvalidArgumentError(absl::StrCat("CA name '", common_name, "' must have 1..",
                                                   kMaxCommonNameChars, " characters"));
  if (absl::Status s = ValidateDays(days); !s.ok()) return s;
  CertKeyPaths paths{JoinPath(dir, kCaCertFile), JoinPath(dir, kCaKeyFile)};
  if (!overwrite) {
    for (const std::string& p : {paths.cert_path, paths.key_path}) {
      if (PathExists(p))
        return absl::AlreadyExistsError(
            absl::StrCat("a CA already exists in ", dir, " (", p,
                         "); replacing it (--force) invalidates every certificate it issued"));
    }
  }
  if (absl::Status s = EnsureDirectory(dir); !s.ok()) return s;
  absl::StatusOr<EvpKeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<X509Ptr> cert = NewCertificate(key->get(), std::string(common_name), days);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  for (const auto& [nid, value] :
       std::vector<std::pair<int, std::string>>{{NID_basic_constraints, "critical,CA:TRUE"},
                                                {NID_key_usage, "critical,keyCertSign,cRLSign"},
                                                {NID_subject_key_identifier, "hash"},
                                                {NID_authority_key_identifier, "keyid:always"}}) {
    if (absl::Status s = AddExtension(c, c, nid, value); !s.ok()) return s;
  }
  if (X509_set_issuer_name(c, X509_get_subject_name(c)) != 1)
    return OpenSslFailure("setting the issuer");
  if (absl::Status s = Sign(c, key->get()); !s.ok()) return s;
  if (absl::Status s = WritePair(paths, c, key->get()); !s.ok()) return s;
  return paths;
}

bool CertificateNamesHost(const CertificateInfo& info, absl::string_view host) {
  const std::string text(host);
  unsigned char want[sizeof(struct in6_addr)] = {};
  const int family = inet_pton(AF_INET, text.c_str(), want) == 1    ? AF_INET
                     : inet_pton(AF_INET6, text.c_str(), want) == 1 ? AF_INET6
                                                                    : 0;
  if (family != 0) {
    for (const std::string& ip : info.ip_addresses) {
      unsigned char have[sizeof(struct in6_addr)] = {};
      if (inet_pton(family, ip.c_str(), have) == 1 &&
          std::memcmp(have, want, family == AF_INET ? 4 : 16) == 0)
        return true;
    }
    return false;
  }
  for (const std::string& dns : info.dns_names)
    if (absl::EqualsIgnoreCase(dns, host)) return true;
  return false;
}

std::optional<std::string> NodeIdHost(DaemonRole role, absl::string_view name) {
  if (role != DaemonRole::kNodeManager) return std::nullopt;
  const size_t colon = name.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == name.size())
    return std::nullopt;
  for (char c : name.substr(colon + 1))
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  std::string host(name.substr(0, colon));
  if (!ValidateSubjectAltName(host).ok()) return std::nullopt;
  return host;
}

absl::StatusOr<CertKeyPaths> IssueCertificate(const std::string& ca_dir, const std::string& out_dir,
                                              DaemonRole role, absl::string_view name,
                                              const std::vector<std::string>& sans, int days,
                                              bool overwrite) {
  if (absl::Status s = ValidateDaemonName(name); !s.ok()) return s;
  if (absl::Status s = ValidateDays(days); !s.ok()) return s;
  const DaemonIdentity identity{role, std::string(name)};
  std::vector<std::string> san_entries = {absl::StrCat("URI:", kUriScheme, identity.ToString())};
  std::vector<std::string> seen;
  auto add = [&](const std::string& host) -> absl::Status {
    for (const std::string& s : seen)
      if (s == host) return absl::OkStatus();
    seen.push_back(host);
    if (absl::Status s = ValidateSubjectAltName(host); !s.ok()) return s;
    san_entries.push_back(absl::StrCat(IsIpLiteral(host) ? "IP:" : "DNS:", host));
    return absl::OkStatus();
  };
  for (const char* host : {"localhost", "127.0.0.1", "::1"}) {
    if (absl::Status s = add(host); !s.ok()) return s;
  }
  // An NM's name is its node id, HOST:PORT, the address the RM and AMs dial: its certificate
  // must be valid for HOST too, or every container launch on another host fails verification.
  if (std::optional<std::string> host = NodeIdHost(role, name); host.has_value()) {
    if (absl::Status s = add(*host); !s.ok()) return s;
  }
  for (const std::string& host : sans) {
    if (absl::Status s = add(host); !s.ok()) return s;
  }

  const TlsPaths out = DaemonTlsPaths(out_dir, role, name);
  if (!overwrite) {
    for (const std::string& p : {out.cert_path, out.key_path}) {
      if (PathExists(p))
        return absl::AlreadyExistsError(absl::StrCat("certificate for ", identity.ToString(),
                                                     " already exists (", p,
                                                     "); pass --force to replace it"));
    }
  }
  absl::StatusOr<Loaded> ca = Load(JoinPath(ca_dir, kCaCertFile), JoinPath(ca_dir, kCaCertFile),
                                   JoinPath(ca_dir, kCaKeyFile), absl::Now(), "CA");
  if (!ca.ok()) return ca.status();
  if (ca->cas.size() != 1)
    return absl::InvalidArgumentError(absl::StrCat("CA file ", JoinPath(ca_dir, kCaCertFile),
                                                   " must hold exactly one certificate to sign"
                                                   " with, not ",
                                                   ca->cas.size()));
  if (absl::Status s = EnsureDirectory(out_dir); !s.ok()) return s;

  absl::StatusOr<EvpKeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  const std::string cn = identity.ToString();
  absl::StatusOr<X509Ptr> cert =
      NewCertificate(key->get(), cn.size() <= kMaxCommonNameChars ? cn : "", days);
  if (!cert.ok()) return cert.status();
  X509* c = cert->get();
  X509* ca_cert = ca->cert.get();
  if (X509_set_issuer_name(c, X509_get_subject_name(ca_cert)) != 1)
    return OpenSslFailure("setting the issuer");
  // Never outlive the CA.
  if (ASN1_TIME_compare(X509_get0_notAfter(c), X509_get0_notAfter(ca_cert)) > 0 &&
      X509_set1_notAfter(c, X509_get0_notAfter(ca_cert)) != 1)
    return OpenSslFailure("limiting the validity period to the CA's");
  const bool empty_subject = cn.size() > kMaxCommonNameChars;
  for (const auto& [nid, value] : std::vector<std::pair<int, std::string>>{
           {NID_basic_constraints, "critical,CA:FALSE"},
           {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
           {NID_ext_key_usage, "serverAuth,clientAuth"},
           {NID_subject_key_identifier, "hash"},
           {NID_authority_key_identifier, "keyid:always"},
           {NID_subject_alt_name,
            absl::StrCat(empty_subject ? "critical," : "", absl::StrJoin(san_entries, ","))}}) {
    if (absl::Status s = AddExtension(c, ca_cert, nid, value); !s.ok()) return s;
  }
  if (absl::Status s = Sign(c, ca->key.get()); !s.ok()) return s;
  CertKeyPaths paths{out.cert_path, out.key_path};
  if (absl::Status s = WritePair(paths, c, key->get()); !s.ok()) return s;
  return paths;
}

TlsPaths DaemonTlsPaths(const std::string& dir, DaemonRole role, absl::string_view name) {
  const std::string base = absl::StrCat(DaemonRoleName(role), "-", name);
  return TlsPaths{JoinPath(dir, kCaCertFile), JoinPath(dir, base + ".pem"),
                  JoinPath(dir, base + ".key")};
}

absl::StatusOr<TlsFiles> LoadTlsFiles(const std::string& ca_path, const std::string& cert_path,
                                      const std::string& key_path, absl::Time now) {
  absl::StatusOr<Loaded> l = Load(ca_path, cert_path, key_path, now, "cert");
  if (!l.ok()) return l.status();
  return std::move(l->files);
}

absl::StatusOr<TlsFiles> LoadTlsFiles(const TlsPaths& paths, absl::Time now) {
  return LoadTlsFiles(paths.ca_path, paths.cert_path, paths.key_path, now);
}

absl::StatusOr<std::string> LoadCaPem(const std::string& ca_path, absl::Time now) {
  absl::StatusOr<std::string> pem = ReadPemFile(ca_path, "CA file");
  if (!pem.ok()) return pem.status();
  absl::StatusOr<std::vector<X509Ptr>> cas = ParseCaBundle(*pem, ca_path);
  if (!cas.ok()) return cas.status();
  for (const X509Ptr& ca : *cas) {
    if (absl::Status s = CheckValidity(ca.get(), "CA", ca_path, now); !s.ok()) return s;
  }
  return pem;
}

absl::StatusOr<CertificateInfo> DescribeCertificate(absl::string_view pem) {
  std::vector<X509Ptr> certs = ParseCertificates(pem);
  if (certs.empty()) return absl::InvalidArgumentError("holds no PEM certificate");
  X509* cert = certs.front().get();
  CertificateInfo info;
  info.subject = NameToString(X509_get_subject_name(cert));
  info.issuer = NameToString(X509_get_issuer_name(cert));
  BignumPtr serial(ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), nullptr));
  if (serial != nullptr) {
    OpenSslStringPtr hex(BN_bn2hex(serial.get()));
    if (hex != nullptr) info.serial_hex = absl::AsciiStrToLower(hex.get());
  }
  info.not_before = ToAbslTime(X509_get0_notBefore(cert));
  info.not_after = ToAbslTime(X509_get0_notAfter(cert));
  info.is_ca = X509_check_ca(cert) > 0;
  GeneralNamesPtr names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  for (int i = 0; names != nullptr && i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* gn = sk_GENERAL_NAME_value(names.get(), i);
    if (gn->type == GEN_DNS) {
      info.dns_names.push_back(Asn1String(gn->d.dNSName));
    } else if (gn->type == GEN_URI) {
      info.uris.push_back(Asn1String(gn->d.uniformResourceIdentifier));
    } else if (gn->type == GEN_IPADD) {
      const std::string bytes = Asn1String(gn->d.iPAddress);
      char text[INET6_ADDRSTRLEN] = "?";
      if (bytes.size() == 4) inet_ntop(AF_INET, bytes.data(), text, sizeof(text));
      if (bytes.size() == 16) inet_ntop(AF_INET6, bytes.data(), text, sizeof(text));
      info.ip_addresses.push_back(text);
    }
  }
  for (const std::string& uri : info.uris) {
    if (!absl::StartsWith(uri, kUriScheme)) continue;
    absl::StatusOr<DaemonIdentity> id = ParseIdentity(absl::StripPrefix(uri, kUriScheme));
    if (id.ok()) {
      info.identity = *std::move(id);
      break;
    }
  }
  if (!info.identity.has_value()) {
    const X509_NAME* subject = X509_get_subject_name(cert);
    const int index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
    if (index >= 0) {
      const ASN1_STRING* cn = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
      absl::StatusOr<DaemonIdentity> id = ParseIdentity(Asn1String(cn));
      if (id.ok()) info.identity = *std::move(id);
    }
  }
  return info;
}

std::shared_ptr<grpc::ServerCredentials> MutualTlsServerCredentials(const TlsFiles& files,
                                                                    ClientCertMode mode) {
  grpc::SslServerCredentialsOptions options(
      mode == ClientCertMode::kRequireAndVerify
          ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
          : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  options.pem_root_certs = files.ca_pem;
  options.pem_key_cert_pairs.push_back({files.key_pem, files.cert_pem});
  return grpc::SslServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const std::string& ca_pem) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ca_pem;
  return grpc::SslCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> TlsChannelCredentials(const TlsFiles& files) {
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = files.ca_pem;
  options.pem_private_key = files.key_pem;
  options.pem_cert_chain = files.cert_pem;
  return grpc::SslCredentials(options);
}

namespace {

// The daemon identities of the client certificates seen, keyed by their PEM text itself.
// Parsing a certificate (OpenSSL 3's PEM decoder) took most of the RM's CPU per NM heartbeat
// over TLS (about 28% of its process in libcrypto at 2,750 heartbeats/s), and a daemon presents
// the same certificate on every call of its connection. The identity is a function of the
// certificate's bytes alone (gRPC verified its chain at the handshake), so a cached one is what
// a fresh parse would give. The key is the whole text, compared byte for byte on a hit: a
// SHA-256 of it per call was 2% of the RM's CPU at 10,000 heartbeats/s, a hash-table lookup
// by the text is a tenth of that. Only identities are kept (refusals are parsed again), and
// only of certificates the cluster's CA signed. Bounded: the cache is emptied when it holds
// kMaxCachedPeers (about 1.3 KB each, so at most ~170 MB; 50,000 NMs take ~65 MB).
class PeerIdentityCache {
 public:
  static constexpr size_t kMaxCachedPeers = 1 << 17;

  std::optional<DaemonIdentity> Find(absl::string_view pem) {
    absl::MutexLock l(&mu_);
    auto it = identities_.find(pem);
    if (it == identities_.end()) return std::nullopt;
    return it->second;
  }
  void Add(absl::string_view pem, const DaemonIdentity& identity) {
    absl::MutexLock l(&mu_);
    if (identities_.size() >= kMaxCachedPeers) identities_.clear();
    identities_.emplace(std::string(pem), identity);
  }

 private:
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, DaemonIdentity> identities_ ABSL_GUARDED_BY(mu_);
};

PeerIdentityCache& PeerIdentities() {
  static auto* cache = new PeerIdentityCache();  // never destroyed: used by gRPC threads
  return *cache;
}

}  // namespace

absl::StatusOr<DaemonIdentity> PeerIdentity(const grpc::AuthContext& auth_context) {
  if (!auth_context.IsPeerAuthenticated())
    return absl::UnauthenticatedError("the caller presented no client certificate");
  std::vector<grpc::string_ref> pems =
      auth_context.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pems.empty())
    return absl::UnauthenticatedError(
        "the caller is authenticated but presented no X.509 client certificate");
  const absl::string_view pem(pems.front().data(), pems.front().size());
  if (std::optional<DaemonIdentity> cached = PeerIdentities().Find(pem)) return *cached;
  absl::StatusOr<CertificateInfo> info = DescribeCertificate(pem);
  if (!info.ok())
    return absl::UnauthenticatedError(
        absl::StrCat("the caller's client certificate ", info.status().message()));
  if (!info->identity.has_value())
    return absl::PermissionDeniedError(absl::StrCat(
        "the caller's client certificate (subject '", info->subject,
        "') names no weft daemon: no SAN URI weft://<role>/<name> or CN <role>/<name>"));
  PeerIdentities().Add(pem, *info->identity);
  return *std::move(info->identity);
}

absl::StatusOr<DaemonIdentity> PeerIdentity(const grpc::ServerContextBase& context) {
  std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr)
    return absl::UnauthenticatedError("the caller presented no client certificate");
  return PeerIdentity(*auth);
}

}  // namespace weft::security
