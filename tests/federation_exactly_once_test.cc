// Issue 27's acceptance, in process: one id and one home per app across a federation whose
// sub-cluster RMs all want the same cluster timestamp. Three real RmServers (port 0, a fake
// NodeManager each, heartbeating every second) claim their timestamps in one SQLite federation
// store as `weft rm` does before it starts; two real routers, each with its own connection to
// that store, take N submissions 16 at a time, alternating routers between GetNewApplication
// and the submission. Each app is an unmanaged AM that this test registers and finishes, so
// every app reaches FINISHED/SUCCEEDED. N = WEFT_FEDERATION_SUBMISSIONS (60 when unset; run
// 1000 by hand).
#include <grpcpp/grpcpp.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "am/am_client.h"
#include "common/test_poll.h"
#include "federation/membership/sub_cluster_heartbeater.h"
#include "federation/router/router_server.h"
#include "federation/store/federation_store.h"
#include "federation_test_support.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_server.h"
#include "security/munge.h"
#include "security/test_munged.h"
#include "security/tokens.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/container.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;

// Every RM "starts in the same millisecond".
constexpr int64_t kWantedClusterTimestampMs = 1'700'000'000'000;
constexpr int kConcurrency = 16;

using testing_support::FakeNm;
const ::testing::Environment* const kKeepGrpcCallbackQueue =
    ::testing::AddGlobalTestEnvironment(new testing_support::KeepGrpcCallbackQueue);

struct SubCluster {
  std::string id;
  int64_t cluster_timestamp_ms = 0;
  std::unique_ptr<FederationStateStore> store;  // its own connection, as its RM process has
  std::unique_ptr<rm::RmServer> rm;
  std::unique_ptr<FakeNm> nm;
  std::unique_ptr<SubClusterHeartbeater> heartbeater;
};

int Submissions() {
  const char* env = std::getenv("WEFT_FEDERATION_SUBMISSIONS");
  int n = 0;
  if (env != nullptr && absl::SimpleAtoi(env, &n) && n > 0) return n;
  return 60;
}

class FederationExactlyOnceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/weft-federation-once-XXXXXX";
    ASSERT_NE(mkdtemp(dir_template), nullptr);
    dir_ = dir_template;
    store_uri_ = absl::StrCat("sqlite:", dir_, "/federation.db");
    auto munged = security::TestMunged::Start();
    ASSERT_TRUE(munged.ok()) << munged.status();
    munged_ = *std::move(munged);
    store_ = Open();
    ASSERT_NE(store_, nullptr);
    for (int i = 1; i <= 3; ++i) ASSERT_NO_FATAL_FAILURE(StartSubCluster(absl::StrCat("sc", i)));
    for (const char* id : {"r1", "r2"}) {
      RouterServerOptions o;
      o.router.router_id = id;
      o.router.cache_ttl_ms = 1000;
      o.router.call_timeout_ms = 10000;
      o.auth.mode = rm::UserAuthentication::kMunge;
      o.auth.munge_socket = munged_->socket();
      router_stores_.push_back(Open());
      ASSERT_NE(router_stores_.back(), nullptr);
      auto r = RouterServer::Start(std::move(o), router_stores_.back().get());
      ASSERT_TRUE(r.ok()) << r.status();
      routers_.push_back(*std::move(r));
      clients_.push_back(v1::ClientService::NewStub(
          grpc::CreateChannel(routers_.back()->address(), grpc::InsecureChannelCredentials())));
    }
  }

  void TearDown() override {
    routers_.clear();
    for (SubCluster& sc : scs_) {
      if (sc.heartbeater) sc.heartbeater->Stop();
      sc.rm.reset();
    }
    scs_.clear();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  std::unique_ptr<FederationStateStore> Open() {
    auto store = OpenFederationStore(store_uri_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // As `weft rm --sub-cluster-id ID --federation-store URI --cluster-timestamp-ms T`: the RM
  // claims its timestamp in the store before it starts.
  void StartSubCluster(const std::string& id) {
    SubCluster sc;
    sc.id = id;
    sc.store = Open();
    ASSERT_NE(sc.store, nullptr);
    auto claimed = sc.store->ClaimClusterTimestamp(id, kWantedClusterTimestampMs);
    ASSERT_TRUE(claimed.ok()) << claimed.status();
    sc.cluster_timestamp_ms = *claimed;
    rm::RmServerOptions o;
    // Plaintext: the RMs believe the user the router names (the router authenticates by MUNGE).
    o.auth.mode = rm::UserAuthentication::kDeclared;
    o.rm.pass_interval_ms = 20;
    o.rm.cluster_timestamp_ms = sc.cluster_timestamp_ms;
    o.rm.sub_cluster_id = id;
    auto rm = rm::RmServer::Start(std::move(o));
    ASSERT_TRUE(rm.ok()) << rm.status();
    sc.rm = *std::move(rm);
    sc.nm = std::make_unique<FakeNm>();
    ASSERT_TRUE(testing_support::RegisterFakeNm(sc.rm->address(), *sc.nm).ok());
    HeartbeaterOptions h;
    h.sub_cluster_id = id;
    h.rm_address = sc.rm->address();
    h.heartbeat_interval_ms = 1000;  // well within the routers' 30 s membership expiry
    rm::RmServer* raw = sc.rm.get();
    auto hb = SubClusterHeartbeater::Start(h, sc.store.get(), FiguresFromRmServer(raw),
                                           [raw] { return raw->NowMs(); });
    ASSERT_TRUE(hb.ok()) << hb.status();
    sc.heartbeater = *std::move(hb);
    ASSERT_TRUE(sc.heartbeater->AwaitHeartbeats(1, absl::Seconds(20)));
    scs_.push_back(std::move(sc));
  }

  // A context proving the test's own Unix user (MUNGE), as `weft app` sends.
  std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    auto cred = security::MungeEncode(munged_->socket(), rm::kMungePayload);
    EXPECT_TRUE(cred.ok()) << cred.status();
    ctx->AddMetadata("weft-munge-cred", cred.ok() ? *cred : "");
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return ctx;
  }

  const SubCluster* Sc(const std::string& id) const {
    for (const SubCluster& sc : scs_)
      if (sc.id == id) return &sc;
    return nullptr;
  }

  bool RmHas(const SubCluster& sc, const std::string& app) {
    bool found = false;
    sc.rm->RunOnLoop([&](rm::ResourceManager& r) { found = r.GetApplication(app).ok(); });
    return found;
  }

  static v1::SubmitApplicationRequest Unmanaged(const std::string& app, const std::string& name) {
    v1::SubmitApplicationRequest req;
    req.mutable_context()->set_application_id(app);
    req.mutable_context()->set_name(name);
    req.mutable_context()->set_queue("default");
    req.mutable_context()->set_unmanaged_am(true);
    return req;
  }

  // One app, start to end: GetNewApplication through `issue_via`, the submission through
  // `submit_via`, then this thread is its unmanaged AM (registers at its home, finishes it
  // SUCCEEDED) and reads it back through the other router until it is FINISHED. The app's id,
  // or "" with a test failure.
  std::string RunOneApp(int i, int issue_via, int submit_via) {
    v1::NewApplicationResponse issued;
    grpc::Status st = clients_[issue_via]->NewApplication(Ctx().get(), {}, &issued);
    if (!st.ok()) {
      ADD_FAILURE() << "NewApplication " << i << ": " << st.error_message();
      return "";
    }
    const std::string app = issued.application_id();
    v1::SubmitApplicationResponse submitted;
    st = clients_[submit_via]->SubmitApplication(
        Ctx().get(), Unmanaged(app, absl::StrCat("once-", i)), &submitted);
    if (!st.ok()) {
      ADD_FAILURE() << "submitting " << app << ": " << st.error_message();
      return "";
    }
    v1::GetApplicationRequest get;
    get.set_application_id(app);
    v1::ApplicationReport report;
    // The unmanaged AM's token comes with the owner's report once its attempt exists.
    PollUntil(
        [&] {
          v1::GetApplicationResponse resp;
          if (clients_[1 - submit_via]->GetApplication(Ctx().get(), get, &resp).ok())
            report = resp.report();
          return !report.amrm_token().identifier().empty();
        },
        absl::Seconds(10), absl::Milliseconds(25));
    if (report.amrm_token().identifier().empty()) {
      ADD_FAILURE() << app << ": no AMRM token for its owner";
      return app;
    }
    const SubCluster* home = Sc(report.sub_cluster_id());
    if (home == nullptr) {
      ADD_FAILURE() << app << ": reported from unknown sub-cluster '" << report.sub_cluster_id()
                    << "'";
      return app;
    }
    am::AmEnvironment env;
    env.rm_address = home->rm->address();
    env.application_id = app;
    env.amrm_token = report.amrm_token();
    auto data = security::DecodeAmRmToken(env.amrm_token.identifier());
    if (!data.ok()) {
      ADD_FAILURE() << app << ": " << data.status();
      return app;
    }
    env.attempt_id = data->app_attempt_id;
    auto am = am::AmRmClient::Connect(env);
    if (!am.ok()) {
      ADD_FAILURE() << app << ": " << am.status();
      return app;
    }
    if (auto reg = (*am)->Register("localhost"); !reg.ok()) {
      ADD_FAILURE() << app << ": registering its AM: " << reg.status();
      return app;
    }
    if (absl::Status s = (*am)->Finish(v1::FINAL_SUCCEEDED, "done"); !s.ok()) {
      ADD_FAILURE() << app << ": finishing: " << s;
      return app;
    }
    PollUntil(
        [&] {
          v1::GetApplicationResponse resp;
          if (clients_[issue_via]->GetApplication(Ctx().get(), get, &resp).ok())
            report = resp.report();
          return report.state() == v1::APP_FINISHED;
        },
        absl::Seconds(10), absl::Milliseconds(25));
    EXPECT_EQ(report.state(), v1::APP_FINISHED) << app;
    EXPECT_EQ(report.final_status(), v1::FINAL_SUCCEEDED) << app;
    return app;
  }

  std::string dir_;
  std::string store_uri_;
  std::unique_ptr<security::TestMunged> munged_;
  std::unique_ptr<FederationStateStore> store_;  // the test's own connection
  std::vector<SubCluster> scs_;
  std::vector<std::unique_ptr<FederationStateStore>> router_stores_;
  std::vector<std::unique_ptr<RouterServer>> routers_;
  std::vector<std::unique_ptr<v1::ClientService::Stub>> clients_;
};

TEST_F(FederationExactlyOnceTest, EverySubmissionGetsItsOwnIdOneHomeAndSucceedsOnce) {
  // The RMs wanted one timestamp and were moved apart by their claims.
  std::set<int64_t> timestamps;
  for (const SubCluster& sc : scs_) timestamps.insert(sc.cluster_timestamp_ms);
  EXPECT_EQ(timestamps, (std::set<int64_t>{kWantedClusterTimestampMs, kWantedClusterTimestampMs + 1,
                                           kWantedClusterTimestampMs + 2}));

  const int n = Submissions();
  const absl::Time start = absl::Now();
  std::atomic<int> next{0};
  absl::Mutex mu;
  std::vector<std::string> apps;
  {
    std::vector<std::thread> workers;
    for (int w = 0; w < kConcurrency; ++w) {
      workers.emplace_back([&] {
        for (int i = next++; i < n; i = next++) {
          // Alternating routers: half the apps are issued by one router and submitted through
          // the other.
          const std::string app = RunOneApp(i, i % 2, (i / 2) % 2);
          absl::MutexLock l(&mu);
          apps.push_back(app);
        }
      });
    }
    for (std::thread& t : workers) t.join();
  }
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);

  // N distinct ids.
  const std::set<std::string> distinct(apps.begin(), apps.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(n));
  EXPECT_FALSE(distinct.contains(""));
  // N homes in the store, one per app, each in the RM that has the app (and only there).
  auto homes = store_->GetApplicationsHomeSubCluster("");
  ASSERT_TRUE(homes.ok()) << homes.status();
  EXPECT_EQ(homes->size(), static_cast<size_t>(n));
  std::map<std::string, int> per_sub_cluster;
  for (const v1::ApplicationHomeSubCluster& h : *homes) {
    EXPECT_TRUE(distinct.contains(h.application_id())) << h.application_id();
    ++per_sub_cluster[h.home_sub_cluster_id()];
    for (const SubCluster& sc : scs_)
      EXPECT_EQ(RmHas(sc, h.application_id()), sc.id == h.home_sub_cluster_id())
          << h.application_id() << " in " << sc.id;
  }
  // Every issued id was homed: none is left issued.
  auto left_issued = store_->DeleteIssuedApplicationIdsBefore(int64_t{1} << 62);
  ASSERT_TRUE(left_issued.ok()) << left_issued.status();
  EXPECT_EQ(*left_issued, 0);
  // Each app listed exactly once through either router, SUCCEEDED.
  for (auto& client : clients_) {
    v1::ListApplicationsRequest list_req;
    list_req.set_limit(n + 100);
    v1::ListApplicationsResponse list;
    grpc::Status st = client->ListApplications(Ctx().get(), list_req, &list);
    ASSERT_TRUE(st.ok()) << st.error_message();
    std::map<std::string, int> listed;
    int succeeded = 0;
    for (const v1::ApplicationReport& r : list.applications()) {
      ++listed[r.application_id()];
      if (r.state() == v1::APP_FINISHED && r.final_status() == v1::FINAL_SUCCEEDED) ++succeeded;
    }
    EXPECT_EQ(listed.size(), static_cast<size_t>(n));
    for (const auto& [app, times] : listed) {
      EXPECT_EQ(times, 1) << app;
      EXPECT_TRUE(distinct.contains(app)) << app;
    }
    EXPECT_EQ(succeeded, n);
  }
  std::cout << "federation_exactly_once: " << n << " submissions, " << kConcurrency
            << " at a time through 2 routers, 3 RMs wanting cluster timestamp "
            << kWantedClusterTimestampMs << ": " << distinct.size() << " distinct ids, "
            << homes->size() << " homes (";
  for (const auto& [sc, count] : per_sub_cluster) std::cout << sc << "=" << count << " ";
  std::cout << "), in " << seconds << " s" << std::endl;
}

TEST_F(FederationExactlyOnceTest,
       SubmissionsAreIdempotentAcrossRoutersAndIdsComeFromTheFederation) {
  v1::NewApplicationResponse issued;
  ASSERT_TRUE(clients_[0]->NewApplication(Ctx().get(), {}, &issued).ok());
  const std::string app = issued.application_id();
  const v1::SubmitApplicationRequest req = Unmanaged(app, "retried");
  v1::SubmitApplicationResponse resp;
  grpc::Status st = clients_[1]->SubmitApplication(Ctx().get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto home = store_->GetApplicationHomeSubCluster(app);
  ASSERT_TRUE(home.ok()) << home.status();
  // The same submission again, through either router (its answer was lost): the same home.
  for (auto& client : clients_) {
    st = client->SubmitApplication(Ctx().get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  EXPECT_EQ(store_->GetApplicationHomeSubCluster(app)->home_sub_cluster_id(),
            home->home_sub_cluster_id());
  int copies = 0;
  for (const SubCluster& sc : scs_) copies += RmHas(sc, app) ? 1 : 0;
  EXPECT_EQ(copies, 1);
  // A different submission under that id: an error through either router, never a success.
  v1::SubmitApplicationRequest different = Unmanaged(app, "another job");
  for (auto& client : clients_) {
    st = client->SubmitApplication(Ctx().get(), different, &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::ALREADY_EXISTS) << st.error_message();
  }
  // Ids no router issued are refused, naming the id: the next id of each RM's own timestamp.
  for (const SubCluster& sc : scs_) {
    const std::string chosen = absl::StrCat("application_", sc.cluster_timestamp_ms, "_0099");
    st = clients_[1]->SubmitApplication(Ctx().get(), Unmanaged(chosen, "chosen"), &resp);
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();
    EXPECT_THAT(st.error_message(), HasSubstr(chosen));
    EXPECT_FALSE(store_->GetApplicationHomeSubCluster(chosen).ok());
    for (const SubCluster& other : scs_) EXPECT_FALSE(RmHas(other, chosen));
  }
}

TEST_F(FederationExactlyOnceTest, AKillThroughARouterEndsTheAppAndItsUnmanagedAmsElsewhere) {
  v1::NewApplicationResponse issued;
  ASSERT_TRUE(clients_[0]->NewApplication(Ctx().get(), {}, &issued).ok());
  const std::string app = issued.application_id();
  v1::SubmitApplicationResponse resp;
  grpc::Status st = clients_[0]->SubmitApplication(Ctx().get(), Unmanaged(app, "spanning"), &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto home = store_->GetApplicationHomeSubCluster(app);
  ASSERT_TRUE(home.ok()) << home.status();
  // Its AMRMProxy's unmanaged AM in another sub-cluster, under the home app's id.
  const SubCluster* secondary = nullptr;
  for (const SubCluster& sc : scs_)
    if (sc.id != home->home_sub_cluster_id()) secondary = &sc;
  ASSERT_NE(secondary, nullptr);
  v1::GetApplicationRequest get;
  get.set_application_id(app);
  v1::GetApplicationResponse report;
  ASSERT_TRUE(clients_[0]->GetApplication(Ctx().get(), get, &report).ok());
  auto direct = v1::ClientService::NewStub(
      grpc::CreateChannel(secondary->rm->address(), grpc::InsecureChannelCredentials()));
  v1::SubmitApplicationRequest uam = Unmanaged(app, "spanning");
  uam.mutable_context()->set_federation_home_sub_cluster_id(home->home_sub_cluster_id());
  grpc::ClientContext as_owner;
  as_owner.AddMetadata("weft-user", report.report().user());
  st = direct->SubmitApplication(&as_owner, uam, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(RmHas(*secondary, app));

  v1::KillApplicationRequest kill;
  kill.set_application_id(app);
  v1::KillApplicationResponse killed;
  st = clients_[1]->KillApplication(Ctx().get(), kill, &killed);
  ASSERT_TRUE(st.ok()) << st.error_message();
  for (const SubCluster& sc : scs_) {
    v1::ApplicationState state = v1::APPLICATION_STATE_UNSPECIFIED;
    // A kill is applied on the RM's loop; its report says KILLED once it is (bounded poll).
    PollUntil(
        [&] {
          sc.rm->RunOnLoop([&](rm::ResourceManager& r) {
            auto got = r.GetApplication(app);
            state = got.ok() ? got->state() : v1::APPLICATION_STATE_UNSPECIFIED;
          });
          return state == v1::APP_KILLED || state == v1::APPLICATION_STATE_UNSPECIFIED;
        },
        absl::Seconds(2), absl::Milliseconds(10));
    if (sc.id == home->home_sub_cluster_id() || &sc == secondary) {
      EXPECT_EQ(state, v1::APP_KILLED) << sc.id;
    } else {
      EXPECT_EQ(state, v1::APPLICATION_STATE_UNSPECIFIED) << sc.id << " never had it";
    }
  }
}

}  // namespace
}  // namespace weft::federation
