// Copyright Weft authors.
#include "federation/membership/sub_cluster_heartbeater.h"

#include <atomic>

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

TEST(HeartbeaterStandbyTest, AStandbyNeitherRegistersNorHeartbeats) {
  auto store = OpenFederationStore("memory:");
  ASSERT_TRUE(store.ok());
  HeartbeaterOptions o;
  o.sub_cluster_id = "sc1";
  o.rm_address = "127.0.0.1:1,127.0.0.1:2";
  o.heartbeat_interval_ms = kHour;
  auto h = SubClusterHeartbeater::Start(
      o, store->get(), [] { return std::optional<v1::GetClusterMetricsResponse>(); },
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
