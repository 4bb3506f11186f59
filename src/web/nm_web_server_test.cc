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
    // Readers are who header "x-test-user" says (groups in "x-test-groups"); none: anonymous.
    options_.authenticate = [](const HttpRequest& r) -> absl::StatusOr<LogReader> {
      if (r.Header("x-test-user") == "forger") return absl::UnauthenticatedError("bad credential");
      LogReader reader;
      reader.user = r.Header("x-test-user");
      if (!r.Header("x-test-groups").empty()) reader.groups = {r.Header("x-test-groups")};
      reader.admin = reader.user == "root";
      return reader;
    };
    options_.app_owner = [](const std::string& app) -> absl::StatusOr<LogOwner> {
      if (app != "application_1700000000000_0001") return absl::NotFoundError("unknown");
      return LogOwner{"alice", "bob ops"};
    };
    options_.container_running = [](const std::string& id) { return id == kContainer; };
    registry_.GetCounter("weft_nm_containers_launched_total", "launches")->Increment();
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  HttpResponse Get(const std::string& path, const std::string& user = "alice",
                   const std::string& group = "") {
    HttpRequest r;
    r.method = "GET";
    r.path = path;
    if (!user.empty()) r.headers["x-test-user"] = user;
    if (!group.empty()) r.headers["x-test-groups"] = group;
    return NmWebServer::HandleRequest(options_, registry_, r);
  }
  static std::string Header(const HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return "";
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

TEST_F(NmWebServerTest, LogsFollowTheAppsViewAcl) {
  const std::string stdout_path = std::string("/node/containerlogs/") + kContainer + "/x/stdout";
  const std::string listing = "/ws/v1/node/apps/application_1700000000000_0001/containerlogs";
  for (const std::string& path : {stdout_path, listing}) {
    EXPECT_EQ(Get(path, "alice").status, 200) << path;         // the owner
    EXPECT_EQ(Get(path, "bob").status, 200) << path;           // named in the view ACL
    EXPECT_EQ(Get(path, "carol", "ops").status, 200) << path;  // by group
    EXPECT_EQ(Get(path, "root").status, 200) << path;          // an admin
    HttpResponse anonymous = Get(path, "");
    EXPECT_EQ(anonymous.status, 401) << path;
    EXPECT_EQ(Header(anonymous, "WWW-Authenticate"), "Bearer realm=\"weft\"");
    HttpResponse other = Get(path, "mallory", "staff");
    EXPECT_EQ(other.status, 403) << path;
    EXPECT_THAT(other.body, HasSubstr("may not read the logs of application_1700000000000_0001"));
    EXPECT_EQ(Get(path, "forger").status, 401) << path;  // a bad credential
  }
  // An app whose owner the NM does not know: admins only.
  const std::string unknown = "container_e1_1700000000000_0002_01_000002";
  std::filesystem::create_directories(root_ / "logs" / unknown);
  std::ofstream(root_ / "logs" / unknown / "stdout") << "secret\n";
  EXPECT_EQ(Get("/node/containerlogs/" + unknown + "/x/stdout", "alice").status, 403);
  EXPECT_EQ(Get("/node/containerlogs/" + unknown + "/x/stdout", "root").status, 200);
}

TEST_F(NmWebServerTest, ListsTheAppsContainersAndServesFromAnOffset) {
  HttpResponse list = Get("/ws/v1/node/apps/application_1700000000000_0001/containerlogs");
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_THAT(list.body, HasSubstr(kContainer));
  EXPECT_THAT(list.body, HasSubstr("\"fileName\":\"stdout\""));
  EXPECT_THAT(list.body, HasSubstr("\"running\":true"));
  HttpRequest r;
  r.method = "GET";
  r.path = std::string("/node/containerlogs/") + kContainer + "/alice/stdout";
  r.params.emplace("start", "11");
  r.headers["x-test-user"] = "alice";
  HttpResponse from = NmWebServer::HandleRequest(options_, registry_, r);
  ASSERT_EQ(from.status, 200) << from.body;
  EXPECT_EQ(from.body, "the container\n");
  EXPECT_EQ(Header(from, "X-Weft-Log-Length"), "25");
  EXPECT_EQ(Header(from, "X-Weft-Container-Running"), "true");
  r.params.clear();
  r.params.emplace("start", "99");  // past the end: nothing yet
  HttpResponse past = NmWebServer::HandleRequest(options_, registry_, r);
  EXPECT_EQ(past.status, 200);
  EXPECT_EQ(past.body, "");
  r.params.clear();
  r.params.emplace("start", "-1");
  EXPECT_EQ(NmWebServer::HandleRequest(options_, registry_, r).status, 400);
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
