// Copyright Weft authors.
#include "security/tls.h"

#include <grpc/grpc_security_constants.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/grpc_server.h"
#include "security/test_generic_call.h"

namespace weft::security {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it at destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string tmpl =
        absl::StrCat(base != nullptr && *base != '\0' ? base : "/tmp", "/weft-tls-test-XXXXXX");
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(absl::string_view name) const { return absl::StrCat(path_, "/", name); }

 private:
  std::string path_;
};

// The content of `path`, "" when it cannot be read.
std::string Slurp(const std::string& path) { return ReadFile(path).value_or(""); }

void Spit(const std::string& path, const std::string& contents) {
  std::ofstream(path, std::ios::trunc) << contents;
}

mode_t Mode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(TlsNamesTest, RolesAndNames) {
  EXPECT_EQ(*ParseDaemonRole("rm"), DaemonRole::kResourceManager);
  EXPECT_EQ(*ParseDaemonRole("nm"), DaemonRole::kNodeManager);
  EXPECT_EQ(*ParseDaemonRole("router"), DaemonRole::kRouter);
  EXPECT_EQ(*ParseDaemonRole("gpg"), DaemonRole::kGpg);
  EXPECT_EQ(ParseDaemonRole("client").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDaemonRole("NM").status().code(), absl::StatusCode::kInvalidArgument);

  EXPECT_TRUE(ValidateDaemonName("node-3").ok());
  EXPECT_TRUE(ValidateDaemonName("host-1.example.com:8042").ok());
  EXPECT_TRUE(ValidateDaemonName("a_b").ok());
  EXPECT_TRUE(ValidateDaemonName(std::string(253, 'x')).ok());
  for (const std::string& bad : {std::string(), std::string(254, 'x'), std::string("node/1"),
                                 std::string("a b"), std::string("n,1"), std::string("ü")}) {
    absl::Status s = ValidateDaemonName(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(std::string(ValidateDaemonName("node/1").message()), HasSubstr("'/'"));
  EXPECT_EQ((DaemonIdentity{DaemonRole::kNodeManager, "node-3"}.ToString()), "nm/node-3");
}

TEST(TlsCaTest, CreatesTheCaAndRefusesToOverwriteIt) {
  TempDir tmp;
  const std::string dir = tmp.Sub("a/tls");  // parents are created too
  absl::StatusOr<CertKeyPaths> ca = CreateCa(dir, "test CA", 30);
  ASSERT_TRUE(ca.ok()) << ca.status();
  EXPECT_EQ(ca->cert_path, dir + "/ca.pem");
  EXPECT_EQ(ca->key_path, dir + "/ca.key");
  EXPECT_EQ(Mode(dir), 0700u);
  EXPECT_EQ(Mode(ca->key_path), 0600u);
  const std::string pem = Slurp(ca->cert_path);
  absl::StatusOr<CertificateInfo> info = DescribeCertificate(pem);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(info->is_ca);
  EXPECT_EQ(info->subject, "CN=test CA");
  EXPECT_EQ(info->issuer, "CN=test CA");
  EXPECT_FALSE(info->identity.has_value());
  EXPECT_LT(info->not_before, absl::Now());
  EXPECT_GT(info->not_after, absl::Now() + absl::Hours(24 * 29));
  EXPECT_TRUE(LoadCaPem(ca->cert_path).ok());

  absl::StatusOr<CertKeyPaths> again = CreateCa(dir, "test CA", 30);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(again.status().message()), HasSubstr(dir));
  EXPECT_EQ(Slurp(ca->cert_path), pem);  // untouched

  ASSERT_TRUE(CreateCa(dir, "test CA", 30, /*overwrite=*/true).ok());
  EXPECT_NE(Slurp(ca->cert_path), pem);

  EXPECT_EQ(CreateCa(tmp.Sub("b"), "", 30).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCa(tmp.Sub("b"), std::string(65, 'c'), 30).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CreateCa(tmp.Sub("b"), "x", 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp.Sub("b")));
}

class TlsIssueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(CreateCa(tmp_.Sub("ca"), "test CA", 30).ok());
    ASSERT_TRUE(CreateCa(tmp_.Sub("other-ca"), "other CA", 30).ok());
  }
  std::string ca_dir() const { return tmp_.Sub("ca"); }
  std::string out_dir() const { return tmp_.Sub("out"); }

  TempDir tmp_;
};

TEST_F(TlsIssueTest, IssuesACertificateNamingTheDaemon) {
  absl::StatusOr<CertKeyPaths> issued =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-1",
                       {"node1.example.com", "10.0.0.7", "localhost", "fe80::1"}, 90);
  ASSERT_TRUE(issued.ok()) << issued.status();
  EXPECT_EQ(issued->cert_path, out_dir() + "/nm-node-1.pem");
  EXPECT_EQ(issued->key_path, out_dir() + "/nm-node-1.key");
  EXPECT_EQ(Mode(issued->key_path), 0600u);
  EXPECT_EQ(Mode(out_dir()), 0700u);

  absl::StatusOr<CertificateInfo> info = DescribeCertificate(Slurp(issued->cert_path));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->subject, "CN=nm/node-1");
  EXPECT_EQ(info->issuer, "CN=test CA");
  EXPECT_FALSE(info->is_ca);
  ASSERT_TRUE(info->identity.has_value());
  EXPECT_EQ(*info->identity, (DaemonIdentity{DaemonRole::kNodeManager, "node-1"}));
  EXPECT_THAT(info->uris, ElementsAre("weft://nm/node-1"));
  EXPECT_THAT(info->dns_names, ElementsAre("localhost", "node1.example.com"));
  EXPECT_THAT(info->ip_addresses, ElementsAre("127.0.0.1", "::1", "10.0.0.7", "fe80::1"));
  EXPECT_GE(info->serial_hex.size(), 16u);

  TlsPaths paths = DaemonTlsPaths(out_dir(), DaemonRole::kNodeManager, "node-1");
  paths.ca_path = ca_dir() + "/ca.pem";
  absl::StatusOr<TlsFiles> files = LoadTlsFiles(paths);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->cert_pem, Slurp(issued->cert_path));

  // Not twice without overwrite; a re-issue gets a new key and serial.
  absl::StatusOr<CertKeyPaths> again =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-1", {}, 90);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-1", {}, 90,
                               /*overwrite=*/true)
                  .ok());
  absl::StatusOr<CertificateInfo> reissued = DescribeCertificate(Slurp(issued->cert_path));
  ASSERT_TRUE(reissued.ok());
  EXPECT_NE(reissued->serial_hex, info->serial_hex);
}

TEST_F(TlsIssueTest, AnNmCertificateIsValidForTheHostOfItsNodeId) {
  // The RM and AMs dial an NM at its node id: without its host as a SAN, every launch on a host
  // other than 127.0.0.1 fails verification ("Peer name ... is not in peer certificate").
  absl::StatusOr<CertKeyPaths> by_ip =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "10.213.7.11:8041", {}, 90);
  ASSERT_TRUE(by_ip.ok()) << by_ip.status();
  absl::StatusOr<CertificateInfo> info = DescribeCertificate(Slurp(by_ip->cert_path));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->ip_addresses, ElementsAre("127.0.0.1", "::1", "10.213.7.11"));
  EXPECT_THAT(info->dns_names, ElementsAre("localhost"));

  absl::StatusOr<CertKeyPaths> by_name = IssueCertificate(
      ca_dir(), out_dir(), DaemonRole::kNodeManager, "worker3.example.com:8041", {"10.0.0.3"}, 90);
  ASSERT_TRUE(by_name.ok()) << by_name.status();
  info = DescribeCertificate(Slurp(by_name->cert_path));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_THAT(info->dns_names, ElementsAre("localhost", "worker3.example.com"));
  EXPECT_THAT(info->ip_addresses, ElementsAre("127.0.0.1", "::1", "10.0.0.3"));

  EXPECT_EQ(NodeIdHost(DaemonRole::kNodeManager, "10.0.0.7:8041"), "10.0.0.7");
  EXPECT_EQ(NodeIdHost(DaemonRole::kNodeManager, "node-1"), std::nullopt);
  EXPECT_EQ(NodeIdHost(DaemonRole::kNodeManager, "node-1:http"), std::nullopt);
  EXPECT_EQ(NodeIdHost(DaemonRole::kNodeManager, ":8041"), std::nullopt);
  EXPECT_EQ(NodeIdHost(DaemonRole::kResourceManager, "10.0.0.7:8041"), std::nullopt);
}

TEST(TlsNamesTest, CertificateNamesHostMatchesAddressesAndNames) {
  CertificateInfo info;
  info.dns_names = {"localhost", "Worker3.example.com"};
  info.ip_addresses = {"127.0.0.1", "::1", "10.213.7.11"};
  EXPECT_TRUE(CertificateNamesHost(info, "10.213.7.11"));
  EXPECT_TRUE(CertificateNamesHost(info, "0:0::1"));  // the same address, written otherwise
  EXPECT_TRUE(CertificateNamesHost(info, "worker3.EXAMPLE.com"));
  EXPECT_FALSE(CertificateNamesHost(info, "10.213.7.12"));
  EXPECT_FALSE(CertificateNamesHost(info, "::2"));
  EXPECT_FALSE(CertificateNamesHost(info, "worker4.example.com"));
  EXPECT_FALSE(CertificateNamesHost(info, "example.com"));
  EXPECT_FALSE(CertificateNamesHost(info, ""));
}

TEST_F(TlsIssueTest, NeverOutlivesTheCa) {
  ASSERT_TRUE(CreateCa(tmp_.Sub("short"), "short CA", 2).ok());
  absl::StatusOr<CertKeyPaths> issued =
      IssueCertificate(tmp_.Sub("short"), out_dir(), DaemonRole::kResourceManager, "rm1", {}, 825);
  ASSERT_TRUE(issued.ok()) << issued.status();
  absl::StatusOr<CertificateInfo> ca = DescribeCertificate(Slurp(tmp_.Sub("short/ca.pem")));
  absl::StatusOr<CertificateInfo> cert = DescribeCertificate(Slurp(issued->cert_path));
  ASSERT_TRUE(ca.ok() && cert.ok());
  EXPECT_EQ(cert->not_after, ca->not_after);
}

TEST_F(TlsIssueTest, ALongNameLivesInTheSanUriOnly) {
  const std::string name(200, 'n');
  absl::StatusOr<CertKeyPaths> issued =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kRouter, name, {}, 90);
  ASSERT_TRUE(issued.ok()) << issued.status();
  absl::StatusOr<CertificateInfo> info = DescribeCertificate(Slurp(issued->cert_path));
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->subject, "");
  ASSERT_TRUE(info->identity.has_value());
  EXPECT_EQ(info->identity->ToString(), "router/" + name);
}

TEST_F(TlsIssueTest, BadInputIsRefusedAndWritesNothing) {
  auto issue = [&](absl::string_view name, std::vector<std::string> sans, int days) {
    return IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, name, sans, days)
        .status();
  };
  EXPECT_EQ(issue("bad name", {}, 90).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(issue("", {}, 90).code(), absl::StatusCode::kInvalidArgument);
  absl::Status bad_san = issue("node-1", {"bad_host!"}, 90);
  EXPECT_EQ(bad_san.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_san.message()), HasSubstr("bad_host!"));
  EXPECT_EQ(issue("node-1", {"a..b"}, 90).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(issue("node-1", {"x,DNS:evil"}, 90).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(issue("node-1", {}, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(issue("node-1", {}, kMaxDays + 1).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(out_dir()));

  absl::Status no_ca =
      IssueCertificate(tmp_.Sub("nowhere"), out_dir(), DaemonRole::kNodeManager, "node-1", {}, 90)
          .status();
  EXPECT_EQ(no_ca.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(no_ca.message()), HasSubstr(tmp_.Sub("nowhere/ca.pem")));
}

TEST_F(TlsIssueTest, LoadTlsFilesExplainsWhatDoesNotFit) {
  ASSERT_TRUE(
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-1", {}, 90).ok());
  ASSERT_TRUE(
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-2", {}, 90).ok());
  const std::string ca = ca_dir() + "/ca.pem";
  const std::string other_ca = tmp_.Sub("other-ca/ca.pem");
  const std::string cert1 = out_dir() + "/nm-node-1.pem";
  const std::string key1 = out_dir() + "/nm-node-1.key";
  const std::string key2 = out_dir() + "/nm-node-2.key";
  ASSERT_TRUE(LoadTlsFiles(ca, cert1, key1).ok());

  absl::Status wrong_ca = LoadTlsFiles(other_ca, cert1, key1).status();
  EXPECT_EQ(wrong_ca.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_ca.message()),
              HasSubstr(absl::StrCat("cert ", cert1, " was not signed by CA ", other_ca)));

  absl::Status wrong_key = LoadTlsFiles(ca, cert1, key2).status();
  EXPECT_EQ(wrong_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong_key.message()),
              HasSubstr(absl::StrCat("key ", key2, " does not match cert ", cert1)));

  absl::Status missing = LoadTlsFiles(ca, out_dir() + "/nm-node-9.pem", key1).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.message()), HasSubstr(out_dir() + "/nm-node-9.pem"));

  const std::string garbage = tmp_.Sub("garbage.pem");
  Spit(garbage, "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n");
  absl::Status bad_cert = LoadTlsFiles(ca, garbage, key1).status();
  EXPECT_EQ(bad_cert.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_cert.message()), HasSubstr(garbage + " holds no PEM certificate"));
  absl::Status bad_key = LoadTlsFiles(ca, cert1, garbage).status();
  EXPECT_EQ(bad_key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_key.message()), HasSubstr(garbage + " holds no PEM private key"));
  absl::Status bad_ca = LoadTlsFiles(garbage, cert1, key1).status();
  EXPECT_EQ(bad_ca.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad_ca.message()), HasSubstr("CA file " + garbage));
  absl::Status leaf_as_ca = LoadTlsFiles(cert1, cert1, key1).status();
  EXPECT_EQ(leaf_as_ca.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(leaf_as_ca.message()), HasSubstr("is not a CA"));

  // Validity, at an injected time.
  absl::Status expired = LoadTlsFiles(ca, cert1, key1, absl::Now() + absl::Hours(24 * 91)).status();
  EXPECT_EQ(expired.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(expired.message()), HasSubstr("cert " + cert1 + " expired at"));
  absl::Status early = LoadTlsFiles(ca, cert1, key1, absl::Now() - absl::Hours(2)).status();
  EXPECT_EQ(early.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(early.message()), HasSubstr("is not valid until"));
  EXPECT_EQ(LoadCaPem(ca, absl::Now() + absl::Hours(24 * 31)).status().code(),
            absl::StatusCode::kFailedPrecondition);

  // A CA bundle (during a CA rotation): the certificate's signer is found in it.
  const std::string bundle = tmp_.Sub("bundle.pem");
  Spit(bundle, Slurp(other_ca) + Slurp(ca));
  EXPECT_TRUE(LoadTlsFiles(bundle, cert1, key1).ok());
}

TEST(TlsDevTest, EnsureDevTlsIsIdempotent) {
  TempDir tmp;
  const std::string dir = tmp.Sub("dev-tls");
  absl::StatusOr<DevTlsLayout> layout = EnsureDevTls(dir, {"127.0.0.1:8041", "node-2"});
  ASSERT_TRUE(layout.ok()) << layout.status();
  EXPECT_EQ(layout->ca_path, dir + "/ca.pem");
  EXPECT_EQ(layout->rm.cert_path, dir + "/rm-rm.pem");
  ASSERT_EQ(layout->nodes.size(), 2u);
  EXPECT_EQ(layout->nodes.at("127.0.0.1:8041").cert_path, dir + "/nm-127.0.0.1:8041.pem");
  for (const TlsPaths& p : {layout->rm, layout->nodes.at("node-2")})
    EXPECT_TRUE(LoadTlsFiles(p).ok()) << p.cert_path;

  const std::string ca = Slurp(layout->ca_path);
  const std::string rm = Slurp(layout->rm.cert_path);
  const std::string node2 = Slurp(layout->nodes.at("node-2").cert_path);
  std::filesystem::remove(layout->nodes.at("node-2").key_path);
  absl::StatusOr<DevTlsLayout> again = EnsureDevTls(dir, {"127.0.0.1:8041", "node-2", "node-3"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(Slurp(again->ca_path), ca);
  EXPECT_EQ(Slurp(again->rm.cert_path), rm);                     // reused
  EXPECT_NE(Slurp(again->nodes.at("node-2").cert_path), node2);  // re-issued: its key was gone
  EXPECT_TRUE(LoadTlsFiles(again->nodes.at("node-2")).ok());
  EXPECT_TRUE(LoadTlsFiles(again->nodes.at("node-3")).ok());

  EXPECT_EQ(EnsureDevTls(dir, {"bad name"}).status().code(), absl::StatusCode::kInvalidArgument);
  std::filesystem::remove(dir + "/ca.key");
  EXPECT_EQ(EnsureDevTls(dir, {}).status().code(), absl::StatusCode::kFailedPrecondition);
}

// An AuthContext with a fixed authentication bit and peer certificate.
class FakeAuthContext : public grpc::AuthContext {
 public:
  FakeAuthContext(bool authenticated, std::string pem)
      : authenticated_(authenticated), pem_(std::move(pem)) {}
  bool IsPeerAuthenticated() const override { return authenticated_; }
  std::vector<grpc::string_ref> GetPeerIdentity() const override { return {}; }
  std::string GetPeerIdentityPropertyName() const override { return ""; }
  std::vector<grpc::string_ref> FindPropertyValues(const std::string& name) const override {
    if (name != GRPC_X509_PEM_CERT_PROPERTY_NAME || pem_.empty()) return {};
    return {grpc::string_ref(pem_)};
  }
  grpc::AuthPropertyIterator begin() const override { return EmptyIterator(); }
  grpc::AuthPropertyIterator end() const override { return EmptyIterator(); }
  void AddProperty(const std::string&, const grpc::string_ref&) override {}
  bool SetPeerIdentityPropertyName(const std::string&) override { return false; }

 private:
  struct EmptyIterator : grpc::AuthPropertyIterator {};
  bool authenticated_;
  std::string pem_;
};

TEST_F(TlsIssueTest, PeerIdentityTrustsOnlyAuthenticatedDaemonCertificates) {
  absl::StatusOr<CertKeyPaths> issued =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-1", {}, 90);
  ASSERT_TRUE(issued.ok()) << issued.status();
  const std::string nm_pem = Slurp(issued->cert_path);
  absl::StatusOr<DaemonIdentity> id = PeerIdentity(FakeAuthContext(true, nm_pem));
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->ToString(), "nm/node-1");

  absl::Status unverified = PeerIdentity(FakeAuthContext(false, nm_pem)).status();
  EXPECT_EQ(unverified.code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(unverified.message(), "the caller presented no client certificate");
  EXPECT_EQ(PeerIdentity(FakeAuthContext(true, "")).status().code(),
            absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(PeerIdentity(FakeAuthContext(true, "garbage")).status().code(),
            absl::StatusCode::kUnauthenticated);
  absl::Status not_a_daemon =
      PeerIdentity(FakeAuthContext(true, Slurp(ca_dir() + "/ca.pem"))).status();
  EXPECT_EQ(not_a_daemon.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(std::string(not_a_daemon.message()), HasSubstr("CN=test CA"));
}

// Identities are remembered per certificate (PeerIdentity caches them): two daemons' calls,
// alternating, each get their own, and a remembered certificate presented without
// authentication is still refused.
TEST_F(TlsIssueTest, PeerIdentityKeepsEachCertificatesOwnIdentity) {
  absl::StatusOr<CertKeyPaths> a =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-a", {}, 90);
  ASSERT_TRUE(a.ok()) << a.status();
  const std::string a_pem = Slurp(a->cert_path);
  absl::StatusOr<CertKeyPaths> b =
      IssueCertificate(ca_dir(), out_dir(), DaemonRole::kNodeManager, "node-b", {}, 90);
  ASSERT_TRUE(b.ok()) << b.status();
  const std::string b_pem = Slurp(b->cert_path);
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<DaemonIdentity> ia = PeerIdentity(FakeAuthContext(true, a_pem));
    absl::StatusOr<DaemonIdentity> ib = PeerIdentity(FakeAuthContext(true, b_pem));
    ASSERT_TRUE(ia.ok() && ib.ok()) << ia.status() << " " << ib.status();
    EXPECT_EQ(ia->ToString(), "nm/node-a");
    EXPECT_EQ(ib->ToString(), "nm/node-b");
  }
  EXPECT_EQ(PeerIdentity(FakeAuthContext(false, a_pem)).status().code(),
            absl::StatusCode::kUnauthenticated);
}

// A service answering any method with the caller's PeerIdentity() as text, or its error as
// the call's status; "/weft.test.WhoAmI/Echo" answers an identified caller with its request.
class WhoAmIService : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Reactor(ctx);
  }

 private:
  class Reactor : public grpc::ServerGenericBidiReactor {
   public:
    explicit Reactor(grpc::GenericCallbackServerContext* ctx)
        : echo_(ctx->method() == "/weft.test.WhoAmI/Echo") {
      absl::StatusOr<DaemonIdentity> id = PeerIdentity(*ctx);
      if (id.ok()) {
        grpc::Slice slice(id->ToString());
        response_ = grpc::ByteBuffer(&slice, 1);
      } else {
        status_ = grpc::Status(static_cast<grpc::StatusCode>(id.status().code()),
                               std::string(id.status().message()));
      }
      StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
      if (ok && status_.ok()) {
        StartWriteAndFinish(echo_ ? &request_ : &response_, grpc::WriteOptions(), status_);
      } else {
        Finish(status_);
      }
    }
    void OnDone() override { delete this; }

   private:
    const bool echo_;  // answers with the request itself
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
    grpc::Status status_;
  };
};

// In-process round trips through a TLS server on 127.0.0.1:0 that presents rm/rm from CA
// "ca"; "other" is a second, unrelated cluster CA.
class TlsGrpcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* ca : {"ca", "other"}) {
      ASSERT_TRUE(CreateCa(tmp_.Sub(ca), absl::StrCat(ca, " CA"), 30).ok());
      ASSERT_TRUE(
          IssueCertificate(tmp_.Sub(ca), tmp_.Sub(ca), DaemonRole::kNodeManager, "node-1", {}, 30)
              .ok());
    }
    ASSERT_TRUE(
        IssueCertificate(tmp_.Sub("ca"), tmp_.Sub("ca"), DaemonRole::kResourceManager, "rm", {}, 30)
            .ok());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  TlsFiles Files(const std::string& ca, DaemonRole role, const std::string& name) {
    absl::StatusOr<TlsFiles> files = LoadTlsFiles(DaemonTlsPaths(tmp_.Sub(ca), role, name));
    EXPECT_TRUE(files.ok()) << files.status();
    return files.ok() ? *files : TlsFiles{};
  }

  void StartServer(ClientCertMode mode) {
    grpc::ServerBuilder builder;
    SetServerConnectionArgs(&builder);  // as every Weft server (security/grpc_server.h)
    builder.AddListeningPort(
        "127.0.0.1:0",
        MutualTlsServerCredentials(Files("ca", DaemonRole::kResourceManager, "rm"), mode), &port_);
    service_ = std::make_unique<WhoAmIService>();
    builder.RegisterCallbackGenericService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }

  // One call of `method` to the server with `request`; returns its status and stores the reply
  // in *reply.
  grpc::Status Call(const std::shared_ptr<grpc::ChannelCredentials>& creds, std::string* reply,
                    const std::string& method = "/weft.test.WhoAmI/Call",
                    const std::string& request_text = "ping") {
    return GenericUnaryCall(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), creds), method,
                            request_text, std::chrono::seconds(30), reply);
  }

  TempDir tmp_;
  std::unique_ptr<WhoAmIService> service_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

TEST_F(TlsGrpcTest, TheServerSeesTheClientCertificatesIdentity) {
  StartServer(ClientCertMode::kRequireAndVerify);
  std::string reply;
  grpc::Status status =
      Call(TlsChannelCredentials(Files("ca", DaemonRole::kNodeManager, "node-1")), &reply);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_EQ(reply, "nm/node-1");
}

// A server sends TLS records of at most kServerTlsMaxFrameBytes: a message of 1 MiB crosses
// in many of them, whole, both ways.
TEST_F(TlsGrpcTest, AMessageLargerThanATlsFrameCrossesWhole) {
  StartServer(ClientCertMode::kRequireAndVerify);
  std::string big(1 << 20, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  std::string reply;
  grpc::Status status = Call(TlsChannelCredentials(Files("ca", DaemonRole::kNodeManager, "node-1")),
                             &reply, "/weft.test.WhoAmI/Echo", big);
  ASSERT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  EXPECT_EQ(reply.size(), big.size());
  EXPECT_TRUE(reply == big);
}

TEST_F(TlsGrpcTest, RequestIfPresentAdmitsCallersWithoutCertificates) {
  StartServer(ClientCertMode::kRequestAndVerifyIfPresent);
  std::string reply;
  grpc::Status anonymous =
      Call(TlsChannelCredentials(Files("ca", DaemonRole::kNodeManager, "node-1").ca_pem), &reply);
  EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(anonymous.error_message(), "the caller presented no client certificate");
  // A daemon on the same port is still identified.
  grpc::Status daemon =
      Call(TlsChannelCredentials(Files("ca", DaemonRole::kNodeManager, "node-1")), &reply);
  ASSERT_TRUE(daemon.ok()) << daemon.error_message();
  EXPECT_EQ(reply, "nm/node-1");
}

TEST_F(TlsGrpcTest, RequireRefusesCallersWithoutCertificates) {
  StartServer(ClientCertMode::kRequireAndVerify);
  std::string reply;
  grpc::Status status =
      Call(TlsChannelCredentials(Files("ca", DaemonRole::kNodeManager, "node-1").ca_pem), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(TlsGrpcTest, AClientTrustingAnotherCaRefusesTheServer) {
  StartServer(ClientCertMode::kRequestAndVerifyIfPresent);
  std::string reply;
  grpc::Status status =
      Call(TlsChannelCredentials(Files("other", DaemonRole::kNodeManager, "node-1")), &reply);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
}

TEST_F(TlsGrpcTest, TheServerRefusesAClientCertificateFromAnotherCa) {
  // Trusts the right CA, but presents a certificate the server's CA did not sign.
  TlsFiles foreign = Files("other", DaemonRole::kNodeManager, "node-1");
  foreign.ca_pem = Files("ca", DaemonRole::kNodeManager, "node-1").ca_pem;
  for (ClientCertMode mode :
       {ClientCertMode::kRequireAndVerify, ClientCertMode::kRequestAndVerifyIfPresent}) {
    StartServer(mode);
    std::string reply;
    grpc::Status status = Call(TlsChannelCredentials(foreign), &reply);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE) << status.error_message();
    EXPECT_EQ(reply, "");
    server_->Shutdown();
    server_.reset();
  }
}

}  // namespace
}  // namespace weft::security
