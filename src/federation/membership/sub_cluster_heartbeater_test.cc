// Copyright Weft authors.
#include "federation/membership/sub_cluster_heartbeater.h"

#include <atomic>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "federation/router/testing/forwarding_store.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_server.h"
#include "rm/rm_test_util.h"

namespace weft::federation {
namespace {

using ::testing::HasSubstr;

// A store over another whose membership writes fail with Unavailable while `fail` is set.
class FlakyStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  std::atomic<bool> fail{false};

  std::string Describe() const override { return "flaky:" + inner_->Describe(); }
  absl::Status RegisterSubCluster(const v1::SubClusterInfo& i) override {
    return fail ? Down() : inner_->RegisterSubCluster(i);
  }
  absl::Status DeregisterSubCluster(absl::string_view id, v1::SubClusterState s) override {
    return fail ? Down() : inner_->DeregisterSubCluster(id, s);
  }
  absl::Status SubClusterHeartbeat(const v1::SubClusterInfo& l) override {
    return fail ? Down() : inner_->SubClusterHeartbeat(l);
  }

 private:
  static absl::Status Down() { return absl::UnavailableError("store down"); }
};

constexpr int64_t kHour = 3600 * 1000;  // an interval the thread never reaches in a test

class HeartbeaterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = OpenFederationStore("memory:");
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    rm::RmServerOptions o;
    o.auth.mode = rm::UserAuthentication::kDeclared;
    auto rm = rm::RmServer::Start(std::move(o));
    ASSERT_TRUE(rm.ok()) << rm.status();
    rm_ = *std::move(rm);
    rm_->RunOnLoop([](rm::ResourceManager& r) {
      ASSERT_TRUE(r.RegisterNode(rm::NodeRequest("h1:1", 8192, 8)).ok());
      ASSERT_TRUE(r.RegisterNode(rm::NodeRequest("h2:1", 4096, 4)).ok());
    });
  }

  HeartbeaterOptions Options() {
    HeartbeaterOptions o;
    o.sub_cluster_id = "sc1";
    o.rm_address = rm_->address();
    o.rm_http_address = "127.0.0.1:8088";
    o.heartbeat_interval_ms = kHour;
    return o;
  }

  std::unique_ptr<SubClusterHeartbeater> Start(HeartbeaterOptions o, FederationStateStore* store) {
    auto h = SubClusterHeartbeater::Start(std::move(o), store, FiguresFromRmServer(rm_.get()),
                                          [this] { return rm_->NowMs(); });
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? *std::move(h) : nullptr;
  }

  std::unique_ptr<FederationStateStore> store_;
  std::unique_ptr<rm::RmServer> rm_;
};

TEST_F(HeartbeaterTest, RegistersAndHeartbeatsTheRmsLoad) {
  const int64_t before = rm_->NowMs();
  auto h = Start(Options(), store_.get());
  ASSERT_TRUE(h->AwaitHeartbeats(1, absl::Seconds(20)));
  auto info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->state(), v1::SC_RUNNING);
  EXPECT_EQ(info->rm_address(), rm_->address());
  EXPECT_EQ(info->rm_http_address(), "127.0.0.1:8088");
  EXPECT_GE(info->last_heartbeat_ms(), before);
  EXPECT_GE(info->last_start_ms(), before);
  EXPECT_EQ(info->capability().values().at("memory-mb"), 12288);
  EXPECT_EQ(info->capability().values().at("vcores"), 12);
  EXPECT_EQ(info->available().values().at("memory-mb"), 12288);
  EXPECT_EQ(info->active_nodes(), 2);
  EXPECT_TRUE(IsSubClusterUsable(*info, rm_->NowMs(), 30000));

  // A new app is pending and its AM container takes 1 GB: the next heartbeat says so.
  rm_->RunOnLoop([](rm::ResourceManager& r) {
    auto id = r.NewApplication();
    ASSERT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    ASSERT_TRUE(r.SubmitApplication(ctx, std::string("alice")).ok());
  });
  ASSERT_TRUE(h->HeartbeatNow().ok());
  info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->apps_running() + info->apps_pending(), 1);
  EXPECT_EQ(h->heartbeats(), 2);

  h->Stop();
  info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state(), v1::SC_UNREGISTERED);
}

TEST_F(HeartbeaterTest, CommitsOnlyItsFractionOfTheCapacity) {
  HeartbeaterOptions o = Options();
  o.federation_commitment = 0.5;
  auto h = Start(o, store_.get());
  ASSERT_TRUE(h->AwaitHeartbeats(1, absl::Seconds(20)));
  auto info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->capability().values().at("memory-mb"), 6144);
  EXPECT_EQ(info->capability().values().at("vcores"), 6);
  EXPECT_DOUBLE_EQ(info->federation_commitment(), 0.5);
}

TEST_F(HeartbeaterTest, StoreErrorsAreRetriedAtTheNextTick) {
  FlakyStore flaky(store_.get());
  flaky.fail = true;
  auto h = Start(Options(), &flaky);
  absl::Status s = h->HeartbeatNow();  // the thread's first tick failed the same way
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("sc1"));
  EXPECT_FALSE(store_->GetSubCluster("sc1").ok());
  flaky.fail = false;
  ASSERT_TRUE(h->HeartbeatNow().ok());
  auto info = store_->GetSubCluster("sc1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state(), v1::SC_RUNNING);
}

// Issue 27, fenced homes: an app whose home the GPG moved to another sub-cluster while this one
// was LOST is killed here at the next tick; an app without a home record, and a UAM whose
// record names its federation home, are left alone.
TEST_F(HeartbeaterTest, AppsHomedElsewhereAreKilledAtTheNextTick) {
  auto submit = [this](const std::string& federation_home) {
    std::string app;
    rm_->RunOnLoop([&](rm::ResourceManager& r) {
      auto id = r.NewApplication();
      ASSERT_TRUE(id.ok());
      v1::ApplicationSubmissionContext ctx;
      ctx.set_application_id(id->application_id());
      if (federation_home.empty()) {
        ctx.mutable_am_container_spec()->add_command("sleep 100");
      } else {
        ctx.set_unmanaged_am(true);
        ctx.set_federation_home_sub_cluster_id(federation_home);
      }
      ASSERT_TRUE(r.SubmitApplication(ctx, std::string("alice")).ok());
      app = id->application_id();
    });
    return app;
  };
  auto home = [this](const std::string& app, const std::string& sc) {
    v1::ApplicationHomeSubCluster h;
    h.set_application_id(app);
    h.set_home_sub_cluster_id(sc);
    ASSERT_TRUE(store_->AddApplicationHomeSubCluster(h).ok());
  };
  auto state = [this](const std::string& app) {
    v1::ApplicationReport report;
    rm_->RunOnLoop([&](rm::ResourceManager& r) {
      auto got = r.GetApplication(app);
      ASSERT_TRUE(got.ok());
      report = *got;
    });
    return report;
  };
  const std::string moved = submit("");
  const std::string stays = submit("");
  const std::string direct = submit("");        // no home record
  const std::string uam = submit("sc0");        // home app at sc0, record names sc0
  const std::string uam_moved = submit("sc0");  // record moved on to sc2
  home(moved, "sc1");
  home(stays, "sc1");
  home(uam, "sc0");
  home(uam_moved, "sc0");

  auto h = Start(Options(), store_.get());
  ASSERT_TRUE(h->AwaitHeartbeats(1, absl::Seconds(20)));
  ASSERT_TRUE(h->HeartbeatNow().ok());
  for (const std::string& app : {moved, stays, direct, uam, uam_moved})
    EXPECT_FALSE(state(app).state() == v1::APP_KILLED) << app;

  // The GPG moves two homes by compare-and-set while sc1 is LOST.
  for (const auto& [app, to] : {std::pair{moved, "sc2"}, std::pair{uam_moved, "sc2"}}) {
    auto record = store_->GetApplicationHomeSubCluster(app);
    ASSERT_TRUE(record.ok());
    record->set_home_sub_cluster_id(to);
    ASSERT_TRUE(store_->UpdateApplicationHomeSubCluster(*record).ok());
  }
  ASSERT_TRUE(h->HeartbeatNow().ok());
  v1::ApplicationReport killed = state(moved);
  EXPECT_EQ(killed.state(), v1::APP_KILLED);
  EXPECT_THAT(killed.diagnostics(),
              HasSubstr(absl::StrCat("application ", moved,
                                     " is homed at sub-cluster sc2 now (moved while this "
                                     "sub-cluster was lost); killed here")));
  EXPECT_EQ(state(uam_moved).state(), v1::APP_KILLED);
  EXPECT_THAT(state(uam_moved).diagnostics(), HasSubstr("unmanaged AM"));
  EXPECT_NE(state(stays).state(), v1::APP_KILLED);
  EXPECT_NE(state(direct).state(), v1::APP_KILLED);
  EXPECT_NE(state(uam).state(), v1::APP_KILLED);
  // The tick renewed the RM's lease.
  rm_->RunOnLoop([&](rm::ResourceManager& r) {
    EXPECT_EQ(r.federation_lease().fence_ms(), FenceMs(Options()));
    EXPECT_GT(r.federation_lease().renewed_ms(), 0);
  });
}

// A UAM in this sub-cluster whose home app's record names this sub-cluster (not its federation
// home) is a stray copy; so is any app when the record names a third sub-cluster.
TEST(CheckHomesTest, DecidesByTheHomeTheCopyMayRunBeside) {
  std::vector<rm::FederationApp> apps = {
      {"a", ""}, {"b", ""}, {"u", "sc0"}, {"v", "sc0"}, {"n", ""}};
  std::vector<v1::ApplicationHomeSubCluster> here(2);
  here[0].set_application_id("a");
  here[0].set_home_sub_cluster_id("sc1");
  here[1].set_application_id("v");  // the home app moved to this sub-cluster
  here[1].set_home_sub_cluster_id("sc1");
  std::vector<std::string> looked_up;
  auto lookup = [&](const std::string& id) -> absl::StatusOr<v1::ApplicationHomeSubCluster> {
    looked_up.push_back(id);
    v1::ApplicationHomeSubCluster h;
    h.set_application_id(id);
    if (id == "b") h.set_home_sub_cluster_id("sc3");
    if (id == "u") h.set_home_sub_cluster_id("sc0");
    if (id == "n") return absl::NotFoundError("no home");
    return h;
  };
  auto check = CheckHomes("sc1", apps, here, lookup);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(looked_up, (std::vector<std::string>{"b", "u", "n"}));  // not the listed ones
  EXPECT_EQ(check->homed_here, (std::set<std::string>{"a", "u"}));
  EXPECT_EQ(check->no_home, (std::set<std::string>{"n"}));
  ASSERT_EQ(check->homed_elsewhere.size(), 2u);
  EXPECT_THAT(check->homed_elsewhere.at("b"), HasSubstr("homed at sub-cluster sc3 now"));
  EXPECT_THAT(check->homed_elsewhere.at("v"), HasSubstr("not at sc0"));
  // A store error fails the whole check: nothing is decided on half the answers.
  auto failing = [](const std::string&) -> absl::StatusOr<v1::ApplicationHomeSubCluster> {
    return absl::UnavailableError("store down");
  };
  auto failed = CheckHomes("sc1", apps, here, failing);
  EXPECT_TRUE(absl::IsUnavailable(failed.status()));
  EXPECT_THAT(failed.status().message(), HasSubstr("b"));
}

TEST(HeartbeaterStandbyTest, AStandbyNeitherRegistersNorHeartbeats) {
  auto store = OpenFederationStore("memory:");
  ASSERT_TRUE(store.ok());
  HeartbeaterOptions o;
  o.sub_cluster_id = "sc1";
  o.rm_address = "127.0.0.1:1,127.0.0.1:2";
  o.heartbeat_interval_ms = kHour;
  auto h = SubClusterHeartbeater::Start(
      o, store->get(), RmSource([] { return std::optional<v1::GetClusterMetricsResponse>(); }),
      [] { return int64_t{1}; });
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE((*h)->HeartbeatNow().ok());
  EXPECT_EQ((*h)->heartbeats(), 0);
  EXPECT_TRUE(absl::IsNotFound((*store)->GetSubCluster("sc1").status()));
}

TEST(HeartbeaterOptionsTest, BadOptionsAreRefusedNamingTheField) {
  HeartbeaterOptions o;
  o.sub_cluster_id = "bad id";
  o.rm_address = "127.0.0.1:1";
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateHeartbeaterOptions(o)));
  o.sub_cluster_id = "sc1";
  o.federation_commitment = 0;
  EXPECT_THAT(ValidateHeartbeaterOptions(o).message(), HasSubstr("commitment"));
  o.federation_commitment = 1.5;
  EXPECT_THAT(ValidateHeartbeaterOptions(o).message(), HasSubstr("commitment"));
  o.federation_commitment = 1;
  o.heartbeat_interval_ms = 0;
  EXPECT_THAT(ValidateHeartbeaterOptions(o).message(), HasSubstr("interval"));
  o.heartbeat_interval_ms = 1;
  EXPECT_TRUE(ValidateHeartbeaterOptions(o).ok());
}

TEST(LoadRecordTest, AvailableIsTheCommittedCapacityMinusUsedNeverNegative) {
  HeartbeaterOptions o;
  o.sub_cluster_id = "sc1";
  o.federation_commitment = 0.25;
  v1::GetClusterMetricsResponse m;
  (*m.mutable_total()->mutable_values())["memory-mb"] = 8192;
  (*m.mutable_allocated()->mutable_values())["memory-mb"] = 4096;
  v1::SubClusterInfo info = LoadRecord(o, m, 42);
  EXPECT_EQ(info.capability().values().at("memory-mb"), 2048);
  EXPECT_EQ(info.available().values().at("memory-mb"), 0);
  EXPECT_EQ(info.used().values().at("memory-mb"), 4096);
  EXPECT_EQ(info.last_heartbeat_ms(), 42);
  EXPECT_EQ(info.state(), v1::SC_RUNNING);
}

}  // namespace
}  // namespace weft::federation
