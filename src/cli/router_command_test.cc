// Copyright Weft authors. `weft router`'s flags: bad values are refused naming the flag.
#include "cli/router_command.h"

#include <stdlib.h>

#include <filesystem>

#include "absl/cleanup/cleanup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "security/tls.h"

namespace weft::cli {
namespace {

using ::testing::HasSubstr;

RouterFlags Good() {
  RouterFlags f;
  f.router_id = "r1";
  f.federation_store = "memory:";
  return f;
}

std::string ErrorOf(const RouterFlags& f) {
  auto o = MakeRouterServerOptions(f);
  return o.ok() ? "" : std::string(o.status().message());
}

TEST(RouterFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  RouterFlags f = Good();
  f.router_id = "bad/id";
  EXPECT_THAT(ErrorOf(f), HasSubstr("--router-id"));
  f = Good();
  f.federation_store = "";
  EXPECT_THAT(ErrorOf(f), HasSubstr("--federation-store"));
  f = Good();
  f.port = 70000;
  EXPECT_THAT(ErrorOf(f), HasSubstr("--port 70000"));
  f = Good();
  f.http_port = -1;
  EXPECT_THAT(ErrorOf(f), HasSubstr("--http-port"));
  f = Good();
  f.membership_expiry_ms = 0;
  EXPECT_THAT(ErrorOf(f), HasSubstr("--membership-expiry-ms"));
  f = Good();
  f.submit_retries = 0;
  EXPECT_THAT(ErrorOf(f), HasSubstr("--submit-retries"));
  f = Good();
  f.cache_ttl_ms = -5;
  EXPECT_THAT(ErrorOf(f), HasSubstr("--cache-ttl-ms"));
  f = Good();
  f.proxy_users = {"root"};
  EXPECT_THAT(ErrorOf(f), HasSubstr("--proxy-users"));
  f = Good();  // a daemon speaks TLS only
  EXPECT_THAT(ErrorOf(f), HasSubstr("--tls-ca"));
  f = Good();
  f.tls_dir = "/nonexistent";
  f.tls.ca = "/x/ca.pem";
  EXPECT_THAT(ErrorOf(f), HasSubstr("do not go together"));
  f = Good();
  f.tls_dir = "/nonexistent-weft-tls";
  EXPECT_THAT(ErrorOf(f), HasSubstr("--tls-dir /nonexistent-weft-tls"));
}

TEST(RouterFlagsTest, TheTlsDirHoldsTheRoutersCertificate) {
  char dir_template[] = "/tmp/weft-router-flags-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  absl::Cleanup remove_dir = [&] { std::filesystem::remove_all(dir); };
  ASSERT_TRUE(security::CreateCa(dir, "test CA").ok());
  ASSERT_TRUE(security::IssueCertificate(dir, dir, security::DaemonRole::kRouter, "r1", {}).ok());
  RouterFlags f = Good();
  f.tls_dir = dir;
  f.port = 0;
  f.submit_retries = 5;
  auto o = MakeRouterServerOptions(f);
  ASSERT_TRUE(o.ok()) << o.status();
  ASSERT_TRUE(o->tls.has_value());
  auto cert = security::DescribeCertificate(o->tls->cert_pem);
  ASSERT_TRUE(cert.ok());
  ASSERT_TRUE(cert->identity.has_value());
  EXPECT_EQ(cert->identity->ToString(), "router/r1");
  EXPECT_EQ(o->router.submit_retries, 5);
  EXPECT_EQ(o->router.router_id, "r1");
  EXPECT_EQ(o->auth.mode, rm::UserAuthentication::kMunge);
  f.router_id = "r2";  // no certificate for r2 there
  EXPECT_THAT(ErrorOf(f), HasSubstr("--role router --name r2"));
}

}  // namespace
}  // namespace weft::cli
