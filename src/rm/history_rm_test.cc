// Copyright Weft authors. Application history on the RM's side (issue 31): finished apps, their
// attempts and their containers reach the history store through the durable outbox, an NM
// forgets a completed container only once its record is durable, a store outage and an RM
// restart delay records but neither lose nor duplicate them, and the RM keeps only its newest
// max_completed_apps finished apps.
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/test_poll.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "history/memory_history_store.h"
#include "rm/history_outbox.h"
#include "rm/history_recorder.h"
#include "rm/history_publisher.h"
#include "rm/rm_test_util.h"
#include "security/tokens.h"

namespace weft::rm {
namespace {

using ::testing::Contains;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr char kNode[] = "h1:1";

// A history store over a shared one whose writes fail with Unavailable while `down` is set, as
// a PostgreSQL server that is stopped. Reads go through.
struct SharedHistory {
  history::MemoryHistoryStore store;
  std::atomic<bool> down{false};
  std::atomic<bool> unreachable{false};  // opening it fails (Unavailable)
  std::atomic<int64_t> refused{0};
};

class OutageStore : public history::HistoryStore {
 public:
  explicit OutageStore(std::shared_ptr<SharedHistory> shared) : shared_(std::move(shared)) {}
  std::string Describe() const override { return "outage-test"; }

 protected:
  absl::Status Down() {
    ++shared_->refused;
    return absl::UnavailableError("history store is down (test)");
  }
  absl::Status DoPutApplication(const v1::ApplicationHistoryRecord& r) override {
    return shared_->down ? Down() : shared_->store.PutApplication(r);
  }
  absl::Status DoPutAttempt(const v1::AttemptHistoryRecord& r) override {
    return shared_->down ? Down() : shared_->store.PutAttempt(r);
  }
  absl::Status DoPutContainer(const v1::ContainerHistoryRecord& r) override {
    return shared_->down ? Down() : shared_->store.PutContainer(r);
  }
  absl::Status DoPutBatch(const history::HistoryBatch& b) override {
    return shared_->down ? Down() : shared_->store.PutBatch(b);
  }
  template <typename T>
  static absl::StatusOr<std::optional<T>> Optional(absl::StatusOr<T> r) {
    if (absl::IsNotFound(r.status())) return std::optional<T>();
    if (!r.ok()) return r.status();
    return std::optional<T>(*std::move(r));
  }
  absl::StatusOr<std::optional<v1::ApplicationHistoryRecord>> DoGetApplication(
      const std::string& id) override {
    return Optional(shared_->store.GetApplication(id));
  }
  absl::StatusOr<std::optional<v1::AttemptHistoryRecord>> DoGetAttempt(
      const std::string& id) override {
    return Optional(shared_->store.GetAttempt(id));
  }
  absl::StatusOr<std::optional<v1::ContainerHistoryRecord>> DoGetContainer(
      const std::string& id) override {
    return Optional(shared_->store.GetContainer(id));
  }
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> DoListApplications(
      const history::ApplicationFilter& f) override {
    return shared_->store.ListApplications(f);
  }
  absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> DoListAttempts(
      const std::string& app) override {
    return shared_->store.ListAttempts(app);
  }
  absl::StatusOr<std::vector<v1::ContainerHistoryRecord>> DoListContainers(
      const std::string& app, const std::string& attempt) override {
    return shared_->store.ListContainers(app, attempt);
  }
  absl::StatusOr<int64_t> DoPrune(int64_t older_than_ms, std::optional<int64_t> keep) override {
    return shared_->store.Prune(older_than_ms, keep);
  }
  absl::StatusOr<std::vector<history::UsageLine>> DoReport(ReportKey key, int64_t since_ms,
                                                           int64_t until_ms) override {
    return key == ReportKey::kQueue ? shared_->store.QueueReport(since_ms, until_ms)
                                             : shared_->store.UserReport(since_ms, until_ms);
  }

 private:
  std::shared_ptr<SharedHistory> shared_;
};

std::string TempDir() {
  std::string dir = ::testing::TempDir() + "/weft-history-rm-XXXXXX";
  EXPECT_NE(mkdtemp(dir.data()), nullptr);
  return dir;
}

class HistoryRmTest : public ::testing::Test {
 protected:
  RmOptions Options(int64_t max_completed = 1000) {
    RmOptions o = RmHarness::DefaultOptions();
    o.history_store = "outage-test";
    o.history_outbox = dir_ + "/history-outbox.db";
    o.max_completed_apps = max_completed;
    o.open_history_store =
        [shared = shared_]() -> absl::StatusOr<std::unique_ptr<history::HistoryStore>> {
      if (shared->unreachable) return absl::UnavailableError("connection refused (test)");
      return std::make_unique<OutageStore>(shared);
    };
    return o;
  }
  void SetUp() override {
    h_ = std::make_unique<RmHarness>(Options());
    h_->AddNode(kNode);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Waits (real time: the publisher's thread) until every record published so far is in the
  // outbox, then lets the RM loop see it.
  void WaitDurable() {
    ASSERT_TRUE(PollUntil(
        [&] {
          HistoryPublisherStats s = h_->rm().AppHistoryStats();
          return s.durable_seq >= s.published;
        },
        absl::Seconds(10)));
    h_->loop.Advance(50);
  }
  // Waits until the store holds application `app`.
  bool WaitStored(const std::string& app) {
    return PollUntil([&] { return shared_->store.GetApplication(app).ok(); }, absl::Seconds(10));
  }

  // Starts `app`'s AM and gives it `n` task containers; returns their names.
  std::vector<std::string> RunAm(const std::string& app, size_t launch, int n) {
    h_->loop.Advance(200);
    EXPECT_GT(h_->launcher.launches.size(), launch);
    am_containers_[app] =
        security::DecodeContainerToken(
            h_->launcher.launches.at(launch).second.container_token().identifier())
            ->container_id;
    tokens_[app] = h_->RegisterAm(launch);
    std::vector<std::string> names;
    if (n == 0) return names;
    v1::AllocateRequest ask;
    *ask.add_asks() = AnyAsk(n);
    auto reply = h_->rm().Allocate(tokens_[app], ask);
    EXPECT_TRUE(reply.ok()) << reply.status();
    h_->loop.Advance(200);
    v1::AllocateRequest poll;
    poll.set_response_id(reply->response_id());
    reply = h_->rm().Allocate(tokens_[app], poll);
    EXPECT_TRUE(reply.ok()) << reply.status();
    response_ids_[app] = reply->response_id();
    for (const v1::Container& c : reply->allocated_containers()) names.push_back(c.container_id());
    return names;
  }
  // The AM of `app` polls (acknowledging completed statuses).
  v1::AllocateResponse Poll(const std::string& app) {
    v1::AllocateRequest req;
    req.set_response_id(response_ids_[app]);
    auto r = h_->rm().Allocate(tokens_[app], req);
    EXPECT_TRUE(r.ok()) << r.status();
    response_ids_[app] = r->response_id();
    return *r;
  }
  // A COMPLETE status as the NM sends it, with its times, grant and measured usage.
  static v1::ContainerStatus Completed(const std::string& name, int exit_status) {
    v1::ContainerStatus st;
    st.set_container_id(name);
    st.set_state(v1::CONTAINER_COMPLETE);
    st.set_exit_status(exit_status);
    st.set_diagnostics(exit_status == 0 ? "" : "exited with 3");
    st.set_start_time_ms(1'000'000);
    st.set_finish_time_ms(1'010'000);
    (*st.mutable_allocated()->mutable_values())["memory-mb"] = 1024;
    (*st.mutable_allocated()->mutable_values())["vcores"] = 1;
    st.mutable_usage()->set_cpu_time_ms(4'500);
    st.mutable_usage()->set_peak_memory_bytes(300 << 20);
    st.mutable_usage()->set_memory_mb_seconds(2'000);
    st.mutable_usage()->set_network_tx_bytes(12'345);
    return st;
  }
  v1::NodeHeartbeatResponse Heartbeat(const std::vector<v1::ContainerStatus>& statuses) {
    v1::NodeHeartbeatRequest req;
    req.set_node_id(kNode);
    for (const v1::ContainerStatus& st : statuses) *req.add_container_statuses() = st;
    auto r = h_->rm().NodeHeartbeat(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : v1::NodeHeartbeatResponse();
  }
  void Unregister(const std::string& app) {
    v1::FinishApplicationMasterRequest fin;
    fin.set_final_status(v1::FINAL_SUCCEEDED);
    auto r = h_->rm().FinishApplicationMaster(tokens_[app], fin);
    ASSERT_TRUE(r.ok()) << r.status();
  }

  std::string dir_ = TempDir();
  std::shared_ptr<SharedHistory> shared_ = std::make_shared<SharedHistory>();
  std::unique_ptr<RmHarness> h_;
  std::map<std::string, std::string> am_containers_;
  std::map<std::string, v1::Token> tokens_;
  std::map<std::string, int32_t> response_ids_;
};

TEST_F(HistoryRmTest, FinishedAppAttemptAndContainersReachTheStoreWithTheirUsage) {
  const std::string app = h_->Submit("alice");
  std::vector<std::string> tasks = RunAm(app, 0, 2);
  ASSERT_THAT(tasks, SizeIs(2));
  Heartbeat({Completed(tasks[0], 0), Completed(tasks[1], 3)});
  Poll(app);  // the AM has both statuses
  WaitDurable();
  Unregister(app);
  Heartbeat({Completed(am_containers_[app], 0)});
  ASSERT_TRUE(WaitStored(app));

  absl::StatusOr<v1::ApplicationHistoryRecord> a = shared_->store.GetApplication(app);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->user(), "alice");
  EXPECT_EQ(a->final_state(), v1::APP_FINISHED);
  EXPECT_EQ(a->final_status(), v1::FINAL_SUCCEEDED);
  EXPECT_GT(a->finish_time_ms(), 0);
  EXPECT_EQ(a->current_attempt_id(), AttemptOfContainer(am_containers_[app]));
  ASSERT_TRUE(PollUntil(
      [&] {
        auto cs = shared_->store.ListContainers(app);
        return cs.ok() && cs->size() == 3;
      },
      absl::Seconds(10)));
  absl::StatusOr<v1::ContainerHistoryRecord> c = shared_->store.GetContainer(tasks[1]);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->application_id(), app);
  EXPECT_EQ(c->attempt_id(), a->current_attempt_id());
  EXPECT_EQ(c->node_id(), kNode);
  EXPECT_EQ(c->user(), "alice");
  EXPECT_EQ(c->exit_status(), 3);
  EXPECT_EQ(c->diagnostics(), "exited with 3");
  EXPECT_EQ(c->allocated().at("memory-mb"), 1024);
  EXPECT_EQ(c->start_time_ms(), 1'000'000);
  EXPECT_EQ(c->finish_time_ms(), 1'010'000);
  EXPECT_EQ(c->cpu_time_ms(), 4'500);
  EXPECT_EQ(c->max_rss_bytes(), 300 << 20);
  EXPECT_EQ(c->memory_mb_seconds(), 2'000);
  EXPECT_EQ(c->network_tx_bytes(), 12'345);
  absl::StatusOr<std::vector<v1::AttemptHistoryRecord>> attempts = shared_->store.ListAttempts(app);
  ASSERT_TRUE(attempts.ok());
  ASSERT_THAT(*attempts, SizeIs(1));
  EXPECT_EQ((*attempts)[0].am_container_id(), am_containers_[app]);
  EXPECT_EQ((*attempts)[0].state(), v1::ATTEMPT_FINISHED);
  // The store derives the app's usage from its containers: 3 x 1024 MB x 10 s.
  EXPECT_EQ(shared_->store.GetApplication(app)->resource_seconds().at("memory-mb"),
            3 * 1024 * 10);
}

TEST_F(HistoryRmTest, NmForgetsACompletedContainerOnlyOnceItsRecordIsDurable) {
  const std::string app = h_->Submit("alice");
  std::vector<std::string> tasks = RunAm(app, 0, 1);
  ASSERT_THAT(tasks, SizeIs(1));
  v1::NodeHeartbeatResponse first = Heartbeat({Completed(tasks[0], 0)});
  EXPECT_THAT(first.containers_to_be_removed_from_nm(), IsEmpty());
  Poll(app);  // gets the status
  Poll(app);  // acknowledges it
  // The AM has it, but the loop has not seen the outbox take its record: the NM keeps it.
  v1::NodeHeartbeatResponse before = Heartbeat({Completed(tasks[0], 0)});
  EXPECT_THAT(before.containers_to_be_removed_from_nm(), IsEmpty());
  WaitDurable();
  v1::NodeHeartbeatResponse after = Heartbeat({Completed(tasks[0], 0)});
  EXPECT_THAT(after.containers_to_be_removed_from_nm(), Contains(tasks[0]));
  EXPECT_TRUE(PollUntil([&] { return shared_->store.GetContainer(tasks[0]).ok(); },
                        absl::Seconds(10)));
}

TEST_F(HistoryRmTest, AStoreOutageDelaysRecordsButLosesNone) {
  shared_->down = true;
  const std::string app = h_->Submit("bob");
  std::vector<std::string> tasks = RunAm(app, 0, 1);
  Heartbeat({Completed(tasks[0], 0)});
  Poll(app);
  Unregister(app);
  Heartbeat({Completed(am_containers_[app], 0)});
  WaitDurable();
  // In the outbox, refused by the store, retried.
  ASSERT_TRUE(PollUntil([&] { return h_->rm().AppHistoryStats().store_failures >= 2; },
                        absl::Seconds(10)));
  EXPECT_FALSE(shared_->store.GetApplication(app).ok());
  EXPECT_GT(h_->rm().AppHistoryStats().outbox_entries, 0);
  shared_->down = false;
  ASSERT_TRUE(WaitStored(app));
  EXPECT_TRUE(PollUntil([&] { return shared_->store.ListContainers(app)->size() == 2; },
                        absl::Seconds(10)));
  EXPECT_TRUE(PollUntil([&] { return h_->rm().AppHistoryStats().outbox_entries == 0; },
                        absl::Seconds(10)));
}

TEST_F(HistoryRmTest, ARestartedRmDeliversWhatTheOutboxHeldAndRepublishesUndeliveredApps) {
  shared_->down = true;
  const std::string app = h_->Submit("carol");
  RunAm(app, 0, 0);
  Unregister(app);
  WaitDurable();
  h_->Restart(Options());  // the records wait in the outbox file
  shared_->down = false;
  ASSERT_TRUE(WaitStored(app));
  absl::StatusOr<std::vector<v1::ApplicationHistoryRecord>> all =
      shared_->store.ListApplications({});
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(*all, SizeIs(1));  // once, however often it was published
  EXPECT_EQ((*all)[0].final_state(), v1::APP_FINISHED);
  // Delivered now: a second restart does not publish it again.
  ASSERT_TRUE(PollUntil([&] { return h_->rm().AppHistoryStats().outbox_entries == 0; },
                        absl::Seconds(10)));
  h_->Restart(Options());
  EXPECT_EQ(h_->rm().AppHistoryStats().published, 0);
}

TEST_F(HistoryRmTest, AnRmStartsWhileTheStoreIsUnreachableAndDeliversOnceItIsBack) {
  shared_->unreachable = true;
  h_->Restart(Options());
  const std::string app = h_->Submit("gina");
  ASSERT_TRUE(h_->rm().KillApplication(app, "done").ok());
  WaitDurable();
  ASSERT_TRUE(PollUntil([&] { return h_->rm().AppHistoryStats().store_failures >= 1; },
                        absl::Seconds(10)));
  EXPECT_FALSE(shared_->store.GetApplication(app).ok());
  shared_->unreachable = false;
  EXPECT_TRUE(WaitStored(app));
}

TEST_F(HistoryRmTest, AContainerThatEndedWhileNoRmRanIsRecordedFromTheNmsReport) {
  const std::string app = h_->Submit("dave");
  std::vector<std::string> tasks = RunAm(app, 0, 1);
  h_->Restart(Options());
  // The NM registers again: the task ended meanwhile, with its usage.
  v1::RegisterNodeManagerRequest req = NodeRequest(kNode);
  v1::ContainerStatus* am = req.add_running_containers();
  am->set_container_id(am_containers_[app]);
  am->set_state(v1::CONTAINER_RUNNING);
  *req.add_completed_containers() = Completed(tasks[0], 0);
  ASSERT_TRUE(h_->rm().RegisterNode(req).ok());
  EXPECT_TRUE(PollUntil([&] { return shared_->store.GetContainer(tasks[0]).ok(); },
                        absl::Seconds(10)));
  EXPECT_EQ(shared_->store.GetContainer(tasks[0])->cpu_time_ms(), 4'500);
}

TEST_F(HistoryRmTest, TheRmKeepsOnlyItsNewestFinishedAppsOnceTheirHistoryIsDurable) {
  h_->Restart(Options(/*max_completed=*/2));
  h_->AddNode(kNode);
  std::vector<std::string> apps;
  for (int i = 0; i < 4; ++i) {
    apps.push_back(h_->Submit("erin"));
    h_->loop.Advance(10);
    ASSERT_TRUE(h_->rm().KillApplication(apps.back(), "done").ok());
    h_->loop.Advance(10);
  }
  WaitDurable();
  EXPECT_EQ(h_->rm().FinishedAppsHeld(), 2);
  EXPECT_EQ(h_->rm().FinishedAppsForgotten(), 2);
  EXPECT_TRUE(absl::IsNotFound(h_->rm().GetApplication(apps[0]).status()));
  EXPECT_TRUE(absl::IsNotFound(h_->rm().GetApplication(apps[1]).status()));
  EXPECT_TRUE(h_->rm().GetApplication(apps[3]).ok());
  absl::StatusOr<store::RmState> stored = h_->store().Load();
  ASSERT_TRUE(stored.ok());
  EXPECT_THAT(stored->apps, SizeIs(2));
  for (const std::string& app : apps) EXPECT_TRUE(WaitStored(app)) << app;
  // A restart keeps the bound too (and has nothing to publish again).
  h_->Restart(Options(/*max_completed=*/2));
  EXPECT_EQ(h_->rm().FinishedAppsHeld(), 2);
}

TEST_F(HistoryRmTest, WhileTheOutboxIsBehindTheRmHoldsMoreThanItsBound) {
  // Without durability the RM may not forget: with the store down the outbox still takes them,
  // so this checks the order of the two: held until durable, then forgotten.
  h_->Restart(Options(/*max_completed=*/0));
  const std::string app = h_->Submit("frank");
  ASSERT_TRUE(h_->rm().KillApplication(app, "done").ok());
  EXPECT_EQ(h_->rm().FinishedAppsHeld(), 1);  // published, not yet durable
  WaitDurable();
  EXPECT_EQ(h_->rm().FinishedAppsHeld(), 0);
}

TEST_F(HistoryRmTest, RetentionKeepsTheNewestAppsInTheStore) {
  RmOptions o = Options();
  o.history_keep_apps = 2;
  h_->Restart(o);
  std::vector<std::string> apps;
  for (int i = 0; i < 3; ++i) {
    apps.push_back(h_->Submit("hal"));
    h_->loop.Advance(10);
    ASSERT_TRUE(h_->rm().KillApplication(apps.back(), "done").ok());
  }
  WaitDurable();
  ASSERT_TRUE(WaitStored(apps[2]));
  // A restart runs a retention pass once the store is open.
  h_->Restart(o);
  ASSERT_TRUE(PollUntil([&] { return h_->rm().AppHistoryStats().pruned == 1; },
                        absl::Seconds(10)));
  EXPECT_TRUE(absl::IsNotFound(shared_->store.GetApplication(apps[0]).status()));
  EXPECT_TRUE(shared_->store.GetApplication(apps[2]).ok());
}

TEST(HistoryOutboxTest, EntriesSurviveReopeningAndComeBackInOrder) {
  const std::string dir = TempDir();
  const std::string path = dir + "/outbox.db";
  {
    auto box = HistoryOutbox::Open(path);
    ASSERT_TRUE(box.ok()) << box.status();
    ASSERT_TRUE((*box)->Append({{0, OutboxEntry::Kind::kContainer, "c1", "x"},
                                {0, OutboxEntry::Kind::kApplication, "a1", "y"}})
                    .ok());
  }
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  auto box = HistoryOutbox::Open(path);
  ASSERT_TRUE(box.ok()) << box.status();
  absl::StatusOr<std::vector<OutboxEntry>> got = (*box)->Peek(10);
  ASSERT_TRUE(got.ok());
  ASSERT_THAT(*got, SizeIs(2));
  EXPECT_EQ((*got)[0].id, "c1");
  EXPECT_EQ((*got)[1].id, "a1");
  EXPECT_LT((*got)[0].seq, (*got)[1].seq);
  ASSERT_TRUE((*box)->Remove(*got).ok());
  EXPECT_EQ(*(*box)->Count(), 0);
  EXPECT_THAT(*(*box)->DeliveredApplications(), ::testing::ElementsAre("a1"));
  ASSERT_TRUE((*box)->ForgetApplications({"a1"}).ok());
  EXPECT_THAT(*(*box)->DeliveredApplications(), IsEmpty());
  // One owner at a time.
  absl::StatusOr<std::unique_ptr<HistoryOutbox>> second = HistoryOutbox::Open(path);
  EXPECT_TRUE(absl::IsFailedPrecondition(second.status())) << second.status();
  box->reset();
  EXPECT_TRUE(HistoryOutbox::Open(path).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace weft::rm
