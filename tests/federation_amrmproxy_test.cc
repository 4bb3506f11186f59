// Federation's AMRMProxy end to end (seed 004 steps 6-12) on real daemons in this process: two
// sub-clusters, each an RmServer with one NodeManager serving the AMRMProxy, a memory
// federation store naming both, and the distributed-shell AM as a real process talking only to
// its NM's proxy. Its asks exceed the home: the proxy runs an unmanaged AM in the other
// sub-cluster, each container runs on its own sub-cluster's NM under that sub-cluster's token,
// and the app ends SUCCEEDED with the secondary's UAM finished too. Run twice: in plaintext, and
// with the cluster's mutual TLS, where the RMs are federation sub-clusters that believe the
// NM's certificate acting for the app's user, and the AM verifies its proxy's certificate.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/test_poll.h"
#include "federation/store/federation_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nm/node_manager.h"
#include "rm/rm_server.h"
#include "security/tls.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft {
namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A port on 127.0.0.1 free now: an NM's certificate must name its node id before it listens.
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

struct SubCluster {
  std::string id;
  std::unique_ptr<rm::RmServer> rm;
  std::unique_ptr<ThreadEventLoop> loop;
  std::unique_ptr<nm::NodeManager> nm;
  std::unique_ptr<v1::ClientService::Stub> client;
};

class FederationAmrmProxyTest : public ::testing::TestWithParam<bool> {
 protected:
  // The cluster's TLS material for daemon `role`/`name`.
  security::TlsFiles Tls(security::DaemonRole role, const std::string& name) {
    auto issued = security::IssueCertificate((dir_ / "tls").string(), (dir_ / "tls").string(), role,
                                             name, {});
    // The RMs share one certificate, rm/rm.
    EXPECT_TRUE(issued.ok() || absl::IsAlreadyExists(issued.status())) << issued.status();
    auto files =
        security::LoadTlsFiles(security::DaemonTlsPaths((dir_ / "tls").string(), role, name));
    EXPECT_TRUE(files.ok()) << files.status();
    return *files;
  }

  void SetUp() override {
    tls_ = GetParam();
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("weft_fed_amrm_", getpid(), tls_ ? "_tls" : "");
    std::filesystem::create_directories(dir_);
    if (tls_) {
      ASSERT_TRUE(security::CreateCa((dir_ / "tls").string(), "weft test CA").ok());
      ca_pem_ = Tls(security::DaemonRole::kResourceManager, "rm").ca_pem;
    }
    auto store = federation::OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::shared_ptr<federation::FederationStateStore>(std::move(*store));
    v1::SubClusterPolicyConfiguration policy;
    policy.set_queue("*");
    policy.set_router_policy("uniform");
    policy.set_amrm_policy("locality-multicast");
    ASSERT_TRUE(store_->SetPolicyConfiguration(policy).ok());

    for (int i = 0; i < 2; ++i) {
      SubCluster& sc = sub_clusters_.emplace_back();
      sc.id = absl::StrCat("sc", i + 1);
      rm::RmServerOptions ro;
      ro.auth.mode = rm::UserAuthentication::kDeclared;
      ro.rm.pass_interval_ms = 20;
      ro.rm.heartbeat_interval_ms = 100;
      ro.rm.sub_cluster_id = sc.id;
      // Container epochs from the store; with TLS, NMs' claims are checked against the homes.
      ro.federation_store = store_.get();
      if (tls_) {
        ro.tls = Tls(security::DaemonRole::kResourceManager, "rm");
        ro.federation_proxies = true;
      }
      auto rm = rm::RmServer::Start(std::move(ro));
      ASSERT_TRUE(rm.ok()) << rm.status();
      sc.rm = std::move(*rm);
      // Membership, as the RM's heartbeat would write it.
      v1::SubClusterInfo info;
      info.set_sub_cluster_id(sc.id);
      info.set_rm_address(sc.rm->address());
      info.set_state(v1::SC_RUNNING);
      info.set_last_heartbeat_ms(WallMs());
      info.set_last_start_ms(WallMs());
      ASSERT_TRUE(store_->RegisterSubCluster(info).ok());

      sc.loop = std::make_unique<ThreadEventLoop>();
      sc.loop->Start();
      nm::NodeManagerOptions no;
      no.rm_tracker_address = sc.rm->address();
      // Two vcores: the home's NM holds the AM and one container at a time.
      no.capability = Resource::Of(2048, 2);
      no.work_root = (dir_ / absl::StrCat("nm-", sc.id)).string();
      no.use_cgroups = geteuid() == 0;
      no.cgroup_hierarchy = absl::StrCat("weft_fed_amrm_", getpid(), "_", i);
      no.stop_grace_ms = 500;
      no.run_as = nm::ContainerRunAs::kNmUser;  // declared users are not Unix users
      if (tls_) {
        no.port = FreeLoopbackPort();
        no.tls = Tls(security::DaemonRole::kNodeManager, absl::StrCat("127.0.0.1:", no.port));
      }
      amrmproxy::AmrmProxyOptions proxy;
      proxy.sub_cluster_id = sc.id;
      proxy.federation_store = store_;
      no.amrmproxy = proxy;
      auto nm = nm::NodeManager::Start(no, sc.loop.get());
      ASSERT_TRUE(nm.ok()) << nm.status();
      sc.nm = std::move(*nm);
      sc.client = v1::ClientService::NewStub(
          grpc::CreateChannel(sc.rm->address(), tls_ ? security::TlsChannelCredentials(ca_pem_)
                                                     : grpc::InsecureChannelCredentials()));
    }
    // Both nodes registered (bounded wait on each RM's own view).
    for (SubCluster& sc : sub_clusters_) {
      int nodes = 0;
      PollUntil(
          [&] {
            sc.rm->RunOnLoop([&](rm::ResourceManager& rm) { nodes = rm.scheduler().num_nodes(); });
            return nodes >= 1;
          },
          absl::Seconds(10), absl::Milliseconds(50));
      ASSERT_EQ(nodes, 1) << sc.id;
    }
  }

  void TearDown() override {
    for (SubCluster& sc : sub_clusters_) {
      if (sc.nm != nullptr) sc.nm->Shutdown();
      if (sc.loop != nullptr) sc.loop->Stop();
    }
    for (SubCluster& sc : sub_clusters_) sc.rm.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  static grpc::ClientContext* As(grpc::ClientContext* ctx) {
    ctx->AddMetadata("weft-user", "alice");
    return ctx;
  }

  std::string Submit(SubCluster& sc, const std::string& am_command) {
    grpc::ClientContext c1;
    v1::NewApplicationResponse app;
    EXPECT_TRUE(sc.client->NewApplication(As(&c1), {}, &app).ok());
    grpc::ClientContext c2;
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->set_name("spanning-shell");
    sub.mutable_context()->set_max_app_attempts(1);
    (*sub.mutable_context()->mutable_am_resource()->mutable_values())["memory-mb"] = 256;
    sub.mutable_context()->mutable_am_container_spec()->add_command(am_command);
    v1::SubmitApplicationResponse r;
    grpc::Status s = sc.client->SubmitApplication(As(&c2), sub, &r);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return app.application_id();
  }

  static bool IsFinal(v1::ApplicationState state) {
    return state == v1::APP_FINISHED || state == v1::APP_FAILED || state == v1::APP_KILLED;
  }

  // Polls until the app is final (bounded: 90 s).
  v1::ApplicationReport WaitFinal(SubCluster& sc, const std::string& id) {
    v1::GetApplicationResponse resp;
    PollUntil(
        [&] {
          grpc::ClientContext c;
          v1::GetApplicationRequest req;
          req.set_application_id(id);
          return sc.client->GetApplication(As(&c), req, &resp).ok() &&
                 IsFinal(resp.report().state());
        },
        absl::Seconds(90), absl::Milliseconds(50));
    return resp.report();
  }

  std::vector<v1::ApplicationReport> Apps(SubCluster& sc) {
    grpc::ClientContext c;
    v1::ListApplicationsResponse resp;
    EXPECT_TRUE(sc.client->ListApplications(As(&c), {}, &resp).ok());
    return {resp.applications().begin(), resp.applications().end()};
  }

  bool tls_ = false;
  std::string ca_pem_;
  std::filesystem::path dir_;
  std::shared_ptr<federation::FederationStateStore> store_;
  std::vector<SubCluster> sub_clusters_;
};

TEST_P(FederationAmrmProxyTest, AnAmSpansBothSubClustersThroughItsLocalProxy) {
  const std::string marker = (dir_ / "ran").string();
  // Each container records its id and its working directory (under its own NM's work root).
  const std::string id = Submit(
      sub_clusters_[0],
      absl::StrCat(WEFT_SHELL_AM, " 6 0 'echo $WEFT_SHELL_CONTAINER $(pwd) >> ", marker, "'"));
  v1::ApplicationReport report = WaitFinal(sub_clusters_[0], id);
  EXPECT_EQ(report.state(), v1::APP_FINISHED) << report.diagnostics();
  EXPECT_EQ(report.final_status(), v1::FINAL_SUCCEEDED) << report.diagnostics();
  EXPECT_THAT(report.diagnostics(), ::testing::HasSubstr("6 containers succeeded"));

  // Six real processes; some on each sub-cluster's NM.
  std::map<std::string, int> per_sub_cluster;
  std::ifstream in(marker);
  for (std::string line; std::getline(in, line);) {
    for (const SubCluster& sc : sub_clusters_) {
      if (absl::StrContains(line, absl::StrCat("/nm-", sc.id, "/"))) ++per_sub_cluster[sc.id];
    }
  }
  EXPECT_EQ(per_sub_cluster["sc1"] + per_sub_cluster["sc2"], 6);
  EXPECT_GT(per_sub_cluster["sc1"], 0);
  EXPECT_GT(per_sub_cluster["sc2"], 0) << "no container ran in the secondary sub-cluster";

  // The secondary ran one unmanaged AM for the app, as its user, and it finished too.
  v1::ApplicationReport uam;
  for (int i = 0; i < 200; ++i) {
    std::vector<v1::ApplicationReport> apps = Apps(sub_clusters_[1]);
    ASSERT_EQ(apps.size(), 1u);
    uam = apps[0];
    if (IsFinal(uam.state())) break;
    usleep(50 * 1000);
  }
  EXPECT_TRUE(uam.unmanaged_am());
  EXPECT_EQ(uam.sub_cluster_id(), "sc2");
  EXPECT_EQ(uam.name(), "spanning-shell");
  EXPECT_EQ(uam.user(), "alice");
  EXPECT_EQ(uam.state(), v1::APP_FINISHED) << uam.diagnostics();
  EXPECT_EQ(uam.final_status(), v1::FINAL_SUCCEEDED);
  // The home ran the app itself only.
  EXPECT_EQ(Apps(sub_clusters_[0]).size(), 1u);
}

// Without federation the proxy is the `default` chain: an AM works unchanged through it.
TEST(AmrmProxyWithoutFederationTest, AnAmRunsUnchangedThroughTheDefaultChain) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("weft_amrm_default_", getpid());
  std::filesystem::create_directories(dir);
  rm::RmServerOptions ro;
  ro.auth.mode = rm::UserAuthentication::kDeclared;
  ro.rm.pass_interval_ms = 20;
  ro.rm.heartbeat_interval_ms = 100;
  auto rm = rm::RmServer::Start(std::move(ro));
  ASSERT_TRUE(rm.ok()) << rm.status();
  ThreadEventLoop loop;
  loop.Start();
  nm::NodeManagerOptions no;
  no.rm_tracker_address = (*rm)->address();
  no.capability = Resource::Of(2048, 4);
  no.work_root = (dir / "nm").string();
  no.use_cgroups = false;
  no.stop_grace_ms = 500;
  no.run_as = nm::ContainerRunAs::kNmUser;
  no.amrmproxy.emplace();
  auto nm = nm::NodeManager::Start(no, &loop);
  ASSERT_TRUE(nm.ok()) << nm.status();
  int nodes = 0;
  PollUntil(
      [&] {
        (*rm)->RunOnLoop([&](rm::ResourceManager& r) { nodes = r.scheduler().num_nodes(); });
        return nodes >= 1;
      },
      absl::Seconds(10), absl::Milliseconds(50));
  ASSERT_EQ(nodes, 1);
  auto client = v1::ClientService::NewStub(
      grpc::CreateChannel((*rm)->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext c1;
  v1::NewApplicationResponse app;
  ASSERT_TRUE(client->NewApplication(&c1, {}, &app).ok());
  grpc::ClientContext c2;
  v1::SubmitApplicationRequest sub;
  sub.mutable_context()->set_application_id(app.application_id());
  sub.mutable_context()->set_max_app_attempts(1);
  (*sub.mutable_context()->mutable_am_resource()->mutable_values())["memory-mb"] = 256;
  // The AM records the RM address it was given, then runs.
  const std::string seen = (dir / "am_rm_address").string();
  sub.mutable_context()->mutable_am_container_spec()->add_command(
      absl::StrCat("echo \"$WEFT_RM_ADDRESS\" > ", seen, "; exec ", WEFT_SHELL_AM, " 3 0 'sleep 1'"));
  v1::SubmitApplicationResponse submitted;
  ASSERT_TRUE(client->SubmitApplication(&c2, sub, &submitted).ok());
  // The AM long-polls (its poll interval as wait_ms) through the proxy, which passes the poll
  // on to the RM: the RM holds the AM's call while it has nothing new for it.
  size_t parked = 0;
  PollUntil(
      [&] {
        (*rm)->RunOnLoop([&](rm::ResourceManager& r) { parked = r.parked_allocates(); });
        return parked > 0;
      },
      absl::Seconds(30), absl::Milliseconds(2));
  EXPECT_GT(parked, 0u) << "no Allocate from the proxy was ever held as a long poll";
  v1::GetApplicationResponse resp;
  PollUntil(
      [&] {
        grpc::ClientContext c;
        v1::GetApplicationRequest req;
        req.set_application_id(app.application_id());
        return client->GetApplication(&c, req, &resp).ok() &&
               (resp.report().state() == v1::APP_FINISHED ||
                resp.report().state() == v1::APP_FAILED || resp.report().state() == v1::APP_KILLED);
      },
      absl::Seconds(60), absl::Milliseconds(50));
  EXPECT_EQ(resp.report().final_status(), v1::FINAL_SUCCEEDED) << resp.report().diagnostics();
  EXPECT_THAT(resp.report().diagnostics(), ::testing::HasSubstr("3 containers succeeded"));
  // It was told its NM's proxy, not the RM.
  std::ifstream in(seen);
  std::string address;
  std::getline(in, address);
  EXPECT_EQ(address, (*nm)->node_id());
  EXPECT_NE(address, (*rm)->address());
  (*nm)->Shutdown();
  loop.Stop();
  rm->reset();
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

INSTANTIATE_TEST_SUITE_P(Plaintext, FederationAmrmProxyTest, ::testing::Values(false));
INSTANTIATE_TEST_SUITE_P(MutualTls, FederationAmrmProxyTest, ::testing::Values(true));

}  // namespace
}  // namespace weft
