// Copyright Weft authors. The NodeManager's web server on its own: linked with weft_nm_web
// only, so this test also shows that the NM's web layer needs no RM or scheduler code.
#include "web/nm_web_server.h"

#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::web {
namespace {

using ::testing::HasSubstr;

class NmWebServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) / "nm_web_root";
    std::filesystem::remove_all(root_);
    const auto dir = root_ / "logs" / kContainer;
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "stdout") << "hello from the container\n";
    options_.work_root = root_.string();
    registry_.GetCounter("weft_nm_containers_launched_total", "launches")->Increment();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  HttpResponse Get(const std::string& path) {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    return NmWebServer::HandleRequest(options_, registry_, r);
  }

  static constexpr const char* kContainer = "container_e1_1700000000000_0001_01_000002";
  std::filesystem::path root_;
  NmWebOptions options_;
  metrics::Registry registry_;
};

TEST_F(NmWebServerTest, ServesMetricsAndContainerLogs) {
  HttpResponse m = Get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_THAT(m.body, HasSubstr("weft_nm_containers_launched_total 1"));
  HttpResponse log = Get(std::string("/node/containerlogs/") + kContainer + "/alice/stdout");
  EXPECT_EQ(log.status, 200) << log.body;
  EXPECT_THAT(log.body, HasSubstr("hello from the container"));
}

TEST_F(NmWebServerTest, RefusesPathsOutsideTheLogsAndOtherMethods) {
  EXPECT_EQ(Get("/node/containerlogs/../../etc/passwd").status / 100, 4);
  EXPECT_EQ(Get(std::string("/node/containerlogs/") + kContainer + "/alice/../../x").status / 100,
            4);
  EXPECT_EQ(Get(std::string("/node/containerlogs/") + kContainer + "/alice/environ").status, 400);
  HttpRequest post;
  post.method = "POST";
  post.path = "/metrics";
  EXPECT_EQ(NmWebServer::HandleRequest(options_, registry_, post).status, 405);
}

TEST_F(NmWebServerTest, StartsOnAFreePort) {
  options_.port = 0;
  auto server = NmWebServer::Start(options_, &registry_);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_GT((*server)->port(), 0);
  (*server)->Stop();
}

}  // namespace
}  // namespace weft::web
