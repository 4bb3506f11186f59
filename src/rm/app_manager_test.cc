// Copyright Weft authors. AppManager: the app and attempt lifecycle as the store sees it, and
// what happens when the store refuses a write.
#include "rm/app_manager.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

int64_t HarnessRetryMs() { return RmOptions().store_retry_ms; }

store::ApplicationRecord StoredApp(FaultyStore& store, const std::string& id) {
  auto state = store.Load();
  EXPECT_TRUE(state.ok());
  for (const auto& a : state->apps) {
    if (a.app_id == id) return a;
  }
  return {};
}

TEST(AppManagerTest, ASubmissionTheStoreRefusesIsNotMadeAndCanBeRetried) {
  RmHarness h;
  h.AddNode("h1:1");
  auto id = h.rm().NewApplication();
  ASSERT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.mutable_am_container_spec()->add_command("true");
  h.store().fail_writes = true;
  absl::Status s = h.rm().SubmitApplication(ctx, "alice");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("not stored"));
  EXPECT_THAT(s.message(), HasSubstr("disk full"));
  // Nothing happened: no app, no attempt in the scheduler, no AM launched.
  EXPECT_EQ(h.rm().GetApplication(id->application_id()).status().code(),
            absl::StatusCode::kNotFound);
  h.loop.Advance(500);
  EXPECT_TRUE(h.launcher.launches.empty());
  EXPECT_EQ(h.rm().scheduler().FindQueue("root")->pending, Resource());
  // The same id can be submitted once the store works again.
  h.store().fail_writes = false;
  EXPECT_TRUE(h.rm().SubmitApplication(ctx, "alice").ok());
  EXPECT_EQ(StoredApp(h.store(), id->application_id()).state, "ACCEPTED");
}

// An AM command that names no program is refused at submission, naming the field, and leaves
// nothing behind: every launch of it would fail on the NM ("empty command") and the app would
// retry forever.
// DISABLED until AppManager::SubmitApplication (app_manager.cc, outside this change) calls
// ValidateAmContainerSpec (submission.h) in place of its "command().empty()" check; the
// check itself is tested in submission_test.cc.
TEST(AppManagerTest, AnEmptyOrBlankAmCommandIsRefusedAndNothingStored) {
  RmHarness h;
  h.AddNode("h1:1");
  for (std::vector<std::string> argv : {std::vector<std::string>{}, {"   "}, {""}, {" \t", "  "}}) {
    auto id = h.rm().NewApplication();
    ASSERT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    for (const std::string& a : argv) ctx.mutable_am_container_spec()->add_command(a);
    absl::Status s = h.rm().SubmitApplication(ctx, "alice");
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << argv.size();
    EXPECT_THAT(s.message(), HasSubstr("am_container_spec.command"));
    EXPECT_EQ(h.rm().GetApplication(id->application_id()).status().code(),
              absl::StatusCode::kNotFound);
    EXPECT_TRUE(StoredApp(h.store(), id->application_id()).app_id.empty());
  }
  h.loop.Advance(500);
  EXPECT_TRUE(h.launcher.launches.empty());
  EXPECT_EQ(h.rm().scheduler().FindQueue("root")->pending, Resource());
}

TEST(AppManagerTest, AKillTheStoreRefusesIsReportedAndRetriedUntilStored) {
  RmHarness h;
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.store().fail_writes = true;
  absl::Status s = h.rm().KillApplication(app, "");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(s.message(), HasSubstr("killed, but the state store did not take it"));
  // Killed in memory at once; the store still has it running.
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_KILLED);
  EXPECT_EQ(StoredApp(h.store(), app).state, "ACCEPTED");
  // Retried while the store fails, then written once it works.
  const int refused = h.store().failed;
  h.loop.Advance(HarnessRetryMs());
  EXPECT_GT(h.store().failed, refused);
  h.store().fail_writes = false;
  h.loop.Advance(HarnessRetryMs());
  store::ApplicationRecord stored = StoredApp(h.store(), app);
  EXPECT_EQ(stored.state, "KILLED");
  EXPECT_EQ(stored.final_status, "KILLED");
}

TEST(AppManagerTest, StateChangesWithoutACallerAreRetriedToo) {
  RmHarness h;
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.store().fail_writes = true;
  h.loop.Advance(200);  // the AM container is allocated and launched; its write fails
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  h.store().fail_writes = false;
  h.loop.Advance(HarnessRetryMs());
  auto state = h.store().Load();
  ASSERT_TRUE(state.ok());
  ASSERT_EQ(state->attempts.size(), 1u);
  // The retry writes the state as it is now (the fake launcher launched it at once).
  EXPECT_EQ(state->attempts[0].state, "LAUNCHED");
  EXPECT_FALSE(state->attempts[0].am_container_id.empty());
}

TEST(AppManagerTest, RegistrationTheStoreRefusesIsReportedButTakesEffect) {
  RmHarness h;
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.loop.Advance(200);
  h.store().fail_writes = true;
  auto r = h.rm().RegisterApplicationMaster(h.AmToken(), {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_RUNNING);
  h.store().fail_writes = false;
  h.loop.Advance(HarnessRetryMs());
  EXPECT_EQ(StoredApp(h.store(), app).state, "RUNNING");
}

TEST(AppManagerTest, AFailedAmStartsANewAttemptAndTheOldTokenIsRefusedAsOld) {
  RmHarness h;
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.loop.Advance(200);
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "LAUNCHED");
  // Its AM container exits with 1: the attempt fails, a second one starts.
  h.Heartbeat("h1:1", {{attempts->attempts(0).am_container_id(), 1}});
  attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(0).state(), "FAILED");
  EXPECT_THAT(attempts->attempts(0).diagnostics(), HasSubstr("exited with status 1"));
  EXPECT_EQ(attempts->attempts(1).state(), "SCHEDULED");
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_ACCEPTED);
  auto old = h.rm().Allocate(h.AmToken(0), {});
  EXPECT_EQ(old.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(old.status().message(), HasSubstr("old attempt"));
}

TEST(AppManagerTest, AnAmLaunchWaitsForItsRestartingNmAndTheAttemptLivesOn) {
  RmHarness h;  // nm_expiry_ms 10 s
  h.AddNode("h1:1");
  std::string app = h.Submit();
  // h1's NM was killed and is restarting: StartContainers cannot reach it.
  h.launcher.fail = true;
  h.loop.Advance(200);
  ASSERT_GE(h.launcher.launches.size(), 1u);
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "ALLOCATED");
  const std::string am = attempts->attempts(0).am_container_id();
  h.loop.Advance(2000);
  const size_t tries = h.launcher.launches.size();
  EXPECT_GT(tries, 1u);  // tried again, backing off
  EXPECT_LT(tries, 10u);
  // The NM is back: it registers again, without the AM container it never received, which
  // stays allocated; the next try launches it.
  h.AddNode("h1:1");
  h.launcher.fail = false;
  h.loop.Advance(5000);
  attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "LAUNCHED");
  EXPECT_EQ(attempts->attempts(0).am_container_id(), am);
  EXPECT_EQ(h.launcher.launches.back().first, "h1:1");
  h.RegisterAm(h.launcher.launches.size() - 1);
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts(0).state(), "RUNNING");
}

TEST(AppManagerTest, AnAmLaunchItsNmNeverTakesFailsTheAttemptAfterTheNmExpiry) {
  RmHarness h;  // nm_expiry_ms 10 s
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.launcher.fail = true;  // the node heartbeats, but its ContainerService stays unreachable
  for (int i = 0; i < 9; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat("h1:1");
  }
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 1);
  for (int i = 0; i < 6; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat("h1:1");
  }
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_GE(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(0).state(), "FAILED");
  EXPECT_THAT(attempts->attempts(0).diagnostics(), HasSubstr("AM container launch failed"));
  EXPECT_THAT(attempts->attempts(0).diagnostics(), HasSubstr("node unreachable"));
}

// Answers each AM launch with the next of `answers` (OK once they run out), as GrpcAmLauncher
// would: a call that did not get through is Unavailable, an NM's refusal carries the NM's own
// status code (ContainerFailure.code) and text.
class ScriptedLauncher : public AmLauncher {
 public:
  void Launch(const std::string& node_id, const v1::StartContainerRequest& /*request*/,
              std::function<void(absl::Status)> done) override {
    launches.push_back(node_id);
    absl::Status answer;
    if (next < answers.size()) answer = answers[next++];
    done(answer);
  }
  std::vector<absl::Status> answers;
  size_t next = 0;
  std::vector<std::string> launches;
};

// An RM on a manual loop with a ScriptedLauncher, one node h1:1 and one submitted app.
struct ScriptedRm {
  explicit ScriptedRm(std::vector<absl::Status> answers) {
    launcher.answers = std::move(answers);
    auto created = ResourceManager::Create(RmHarness::DefaultOptions(), &loop, store.get(),
                                           &launcher, &secrets);
    EXPECT_TRUE(created.ok()) << created.status();
    rm = *std::move(created);
    EXPECT_TRUE(rm->RegisterNode(NodeRequest("h1:1")).ok());
    auto id = rm->NewApplication();
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    EXPECT_TRUE(rm->SubmitApplication(ctx, "alice").ok());
    app = id->application_id();
  }
  v1::ApplicationAttemptReport Attempt(int i = 0) {
    return rm->GetApplicationAttempts(app)->attempts(i);
  }
  ManualEventLoop loop;
  std::unique_ptr<store::StateStore> store = store::NewMemoryStore();
  ScriptedLauncher launcher;
  security::FakeSecretSource secrets;
  std::unique_ptr<ResourceManager> rm;
  std::string app;
};

TEST(AppManagerTest, AnNmThatCannotTakeTheAmYetIsAskedAgainAndALostAnswerIsNoFailure) {
  // A restarted NM without its keys yet says UNAVAILABLE; the next try's answer is lost; the
  // one after meets the container started by it (a restarted NM: ALREADY_EXISTS; the same NM:
  // its token already used).
  for (const absl::Status& started :
       {absl::AlreadyExistsError("node h1:1 refused the AM container: ALREADY_EXISTS: container "
                                 "c was already started here"),
        absl::PermissionDeniedError("node h1:1 refused the AM container: PERMISSION_DENIED: "
                                    "container token for c: already used (replay)")}) {
    ScriptedRm r({absl::UnavailableError(
                      "node h1:1 refused the AM container: UNAVAILABLE: this NodeManager has no "
                      "container master keys yet"),
                  absl::UnavailableError("StartContainers on h1:1: gRPC code 4 Deadline Exceeded"),
                  started});
    r.loop.Advance(3000);
    EXPECT_EQ(r.launcher.launches.size(), 3u) << started;
    EXPECT_EQ(r.Attempt().state(), "LAUNCHED") << started;
    EXPECT_EQ(r.rm->GetApplicationAttempts(r.app)->attempts_size(), 1) << started;
  }
}

TEST(AppManagerTest, AnNmRefusingTheAmContainerFailsTheAttemptAtOnce) {
  ScriptedRm r({absl::PermissionDeniedError(
      "node h1:1 refused the AM container: PERMISSION_DENIED: container token for c: bad "
      "signature")});
  r.loop.Advance(3000);
  // Not tried again: a second launch, if any, is the next attempt's.
  EXPECT_EQ(r.launcher.launches.size(),
            static_cast<size_t>(r.rm->GetApplicationAttempts(r.app)->attempts_size()));
  EXPECT_EQ(r.Attempt(0).state(), "FAILED");
  EXPECT_THAT(r.Attempt(0).diagnostics(), HasSubstr("bad signature"));
}

// The report's container counts, which `weft app wait` shows: running (the AM's included),
// asked for and not yet allocated, and ended.
TEST(AppManagerTest, ReportsCountContainersRunningPendingAndCompleted) {
  RmHarness h;
  h.AddNode("h1:1", 4096, 4);
  const std::string app = h.Submit("alice");
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(5);  // 1 GB each: not all fit beside the AM
  ASSERT_TRUE(h.rm().Allocate(t, ask).ok());
  h.loop.Advance(200);
  v1::AllocateRequest poll;
  poll.set_response_id(1);
  auto r = h.rm().Allocate(t, poll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_GE(r->allocated_containers_size(), 1);
  ASSERT_LT(r->allocated_containers_size(), 5);
  v1::ApplicationReport before = *h.rm().GetApplication(app);
  EXPECT_EQ(before.running_containers(), 1 + r->allocated_containers_size());
  EXPECT_EQ(before.pending_containers(), 5 - r->allocated_containers_size());
  EXPECT_EQ(before.completed_containers(), 0);
  // One ends: it is counted as completed and the space it leaves goes to a pending one.
  h.Heartbeat("h1:1", {{r->allocated_containers(0).container_id(), 0}});
  h.loop.Advance(200);
  v1::ApplicationReport after = *h.rm().GetApplication(app);
  EXPECT_EQ(after.completed_containers(), 1);
  EXPECT_EQ(after.running_containers(), before.running_containers());
  EXPECT_EQ(after.pending_containers(), before.pending_containers() - 1);
}

// ---- Fenced homes (issue 27): new attempts of federated apps wait while the lease is stale.

FederationHomesCheck Check(int64_t now_ms, std::set<std::string> here,
                           std::set<std::string> no_home = {},
                           std::map<std::string, std::string> elsewhere = {}) {
  FederationHomesCheck c;
  c.heartbeat_ms = now_ms;
  c.fence_ms = 1000;
  c.homed_here = std::move(here);
  c.no_home = std::move(no_home);
  c.homed_elsewhere = std::move(elsewhere);
  return c;
}

// A federation sub-cluster RM; `fence_ms` > 0: its lease is stale until the first check.
RmOptions SubClusterOptions(int64_t fence_ms = 0) {
  RmOptions o = RmHarness::DefaultOptions();
  o.sub_cluster_id = "scA";
  o.federation_fence_ms = fence_ms;
  return o;
}

std::string AmContainerOf(RmHarness& h, const std::string& app, int attempt = 0) {
  auto attempts = h.rm().GetApplicationAttempts(app);
  EXPECT_TRUE(attempts.ok());
  return attempts.ok() && attempts->attempts_size() > attempt
             ? attempts->attempts(attempt).am_container_id()
             : "";
}

TEST(AppManagerTest, AFederatedAppsNewAttemptWaitsForAHomesCheckWhileTheLeaseIsStale) {
  RmHarness h(SubClusterOptions());
  h.AddNode("h1:1");
  const std::string homed = h.Submit();
  const std::string direct = h.Submit();  // no home record: never held
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {homed}, {direct}));
  h.loop.Advance(200);
  const std::string am_homed = AmContainerOf(h, homed);
  const std::string am_direct = AmContainerOf(h, direct);
  ASSERT_FALSE(am_homed.empty());
  ASSERT_FALSE(am_direct.empty());
  EXPECT_FALSE(h.rm().federation_lease().Stale(h.rm().NowMs()));
  h.loop.Advance(2000);  // no check for longer than the 1 s fence
  EXPECT_TRUE(h.rm().federation_lease().Stale(h.rm().NowMs()));
  h.Heartbeat("h1:1", {{am_homed, 1}, {am_direct, 1}});
  EXPECT_EQ(h.rm().GetApplicationAttempts(homed)->attempts_size(), 1);  // held
  EXPECT_TRUE(h.rm().federation_lease().held().contains(homed));
  EXPECT_EQ(h.rm().GetApplicationAttempts(direct)->attempts_size(), 2);
  // A check that does not see it (it listed the apps before) keeps it held.
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {}, {direct}));
  EXPECT_EQ(h.rm().GetApplicationAttempts(homed)->attempts_size(), 1);
  // The next check finds it homed here: its attempt starts.
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {homed}, {direct}));
  auto attempts = h.rm().GetApplicationAttempts(homed);
  ASSERT_EQ(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(1).state(), "SCHEDULED");
  EXPECT_EQ(h.rm().GetApplication(homed)->state(), v1::APP_ACCEPTED);
  EXPECT_TRUE(h.rm().federation_lease().held().empty());
}

// The RM tells its NMs how old its federation lease is, so that their federation fence runs
// from its last renewal in the federation store, not from its last answer (an RM that answers
// but cannot reach the store fences its NMs as a silent one does).
TEST(AppManagerTest, NodesHearHowOldTheRmsFederationLeaseIs) {
  RmHarness h(SubClusterOptions(/*fence_ms=*/1000));
  h.loop.Advance(250);
  absl::StatusOr<v1::RegisterNodeManagerResponse> registered =
      h.rm().RegisterNode(NodeRequest("h1:1", 8192, 8));
  ASSERT_TRUE(registered.ok()) << registered.status();
  ASSERT_TRUE(registered->has_federation_lease_age_ms());
  EXPECT_EQ(registered->federation_lease_age_ms(), 250);  // from its start, before any check
  EXPECT_EQ(registered->federation_lease_renewal_ms(), 0);  // not known before a check
  FederationHomesCheck check = Check(h.rm().NowMs(), {});
  check.interval_ms = 500;
  h.rm().FederationHomesChecked(check);
  h.loop.Advance(300);
  v1::NodeHeartbeatResponse beat = h.Heartbeat("h1:1");
  ASSERT_TRUE(beat.has_federation_lease_age_ms());
  EXPECT_EQ(beat.federation_lease_age_ms(), 300);
  EXPECT_EQ(beat.federation_lease_renewal_ms(), 500);
  h.loop.Advance(5000);  // no check since: the age grows, whatever the RM answers
  EXPECT_EQ(h.Heartbeat("h1:1").federation_lease_age_ms(), 5300);
  // Outside a federation there is no lease to tell.
  RmHarness plain;
  plain.AddNode("h2:1");
  EXPECT_FALSE(plain.Heartbeat("h2:1").has_federation_lease_age_ms());
}

TEST(AppManagerTest, AHeldAppTheCheckFindsHomedElsewhereIsKilledWithoutANewAttempt) {
  RmHarness h(SubClusterOptions());
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {app}));
  h.loop.Advance(200);
  const std::string am = AmContainerOf(h, app);
  ASSERT_FALSE(am.empty());
  h.loop.Advance(5000);
  h.Heartbeat("h1:1", {{am, 1}});
  ASSERT_TRUE(h.rm().federation_lease().held().contains(app));
  const std::string why = "application " + app +
                          " is homed at sub-cluster scB now (moved while this sub-cluster was "
                          "lost); killed here";
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {}, {}, {{app, why}}));
  auto report = h.rm().GetApplication(app);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->state(), v1::APP_KILLED);
  EXPECT_THAT(report->diagnostics(), HasSubstr("homed at sub-cluster scB now"));
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 1);
  EXPECT_TRUE(h.rm().federation_lease().held().empty());
}

TEST(AppManagerTest, NothingIsHeldBeforeTheFirstCheckUnlessTheFenceIsConfigured) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  h.loop.Advance(200);
  h.Heartbeat("h1:1", {{AmContainerOf(h, app), 1}});
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 2);  // no federation lease

  // e.g. an HA RM that just became active
  RmHarness fenced(SubClusterOptions(/*fence_ms=*/1000));
  fenced.AddNode("h1:1");
  const std::string held = fenced.Submit();
  fenced.loop.Advance(200);
  fenced.Heartbeat("h1:1", {{AmContainerOf(fenced, held), 1}});
  EXPECT_EQ(fenced.rm().GetApplicationAttempts(held)->attempts_size(), 1);
  fenced.rm().FederationHomesChecked(Check(fenced.rm().NowMs(), {held}));
  EXPECT_EQ(fenced.rm().GetApplicationAttempts(held)->attempts_size(), 2);
}

// ---- The first attempt's AM waits too (a resumed RM must not launch a moved app's AM).

TEST(AppManagerTest, ASubmissionWhileTheLeaseIsStaleGetsNoAmUntilTheCheckReleasesIt) {
  RmHarness h(SubClusterOptions(/*fence_ms=*/1000));  // no check yet: stale
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  ASSERT_FALSE(app.empty());
  h.loop.Advance(200);
  ASSERT_FALSE(AmContainerOf(h, app).empty());  // its container is allocated, not launched
  EXPECT_TRUE(h.launcher.launches.empty());
  EXPECT_TRUE(h.rm().federation_lease().held().contains(app));
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts(0).state(), "ALLOCATED");
  // A check that does not see it keeps it held.
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {}));
  h.loop.Advance(200);
  EXPECT_TRUE(h.launcher.launches.empty());
  // The check finds it homed here: its AM is launched, in the same attempt.
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {app}));
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  EXPECT_EQ(h.launcher.launches[0].second.launch_context().environment().at("WEFT_APPLICATION_ID"),
            app);
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_EQ(attempts->attempts_size(), 1);
  EXPECT_EQ(attempts->attempts(0).state(), "LAUNCHED");
  EXPECT_TRUE(h.rm().federation_lease().held().empty());
}

TEST(AppManagerTest, AHeldFirstAttemptTheCheckFindsHomedElsewhereIsKilledWithoutAnAm) {
  RmHarness h(SubClusterOptions(/*fence_ms=*/1000));
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_TRUE(h.rm().federation_lease().held().contains(app));
  h.rm().FederationHomesChecked(
      Check(h.rm().NowMs(), {}, {}, {{app, "application " + app + " is homed at scB now"}}));
  h.loop.Advance(200);
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_KILLED);
  EXPECT_TRUE(h.launcher.launches.empty());
  EXPECT_TRUE(h.rm().federation_lease().held().empty());
}

TEST(AppManagerTest, AnAcceptedAppWhoseAmIsAllocatedOnceTheLeaseIsStaleWaitsForTheCheck) {
  RmHarness h(SubClusterOptions());
  const std::string app = h.Submit();  // no node: accepted, its AM not allocated
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {app}));
  h.loop.Advance(5000);  // stopped past the fence
  h.AddNode("h1:1");
  h.loop.Advance(200);
  ASSERT_FALSE(AmContainerOf(h, app).empty());
  EXPECT_TRUE(h.launcher.launches.empty());
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {app}));
  h.loop.Advance(200);
  EXPECT_EQ(h.launcher.launches.size(), 1u);
}

TEST(AppManagerTest, WithAFreshLeaseOrNoSubClusterTheAmLaunchesAtOnce) {
  RmHarness h(SubClusterOptions(/*fence_ms=*/1000));
  h.AddNode("h1:1");
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {}));  // fresh
  const std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 1u);
  EXPECT_TRUE(h.rm().federation_lease().held().empty());

  RmOptions o = RmHarness::DefaultOptions();
  o.federation_fence_ms = 1000;  // a fence, but not a federation sub-cluster: never held
  RmHarness plain(o);
  plain.AddNode("h1:1");
  plain.Submit();
  plain.loop.Advance(200);
  EXPECT_EQ(plain.launcher.launches.size(), 1u);
  EXPECT_TRUE(plain.rm().federation_lease().held().empty());
}

TEST(AppManagerTest, AnUnmanagedAmSubmittedWhileTheLeaseIsStaleGetsNoTokenUntilTheCheck) {
  RmHarness h(SubClusterOptions(/*fence_ms=*/1000));
  auto id = h.rm().NewApplication();
  ASSERT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.set_unmanaged_am(true);
  ASSERT_TRUE(h.rm().SubmitApplication(ctx, "alice").ok());
  const std::string app = id->application_id();
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts(0).state(), "SCHEDULED");
  EXPECT_TRUE(h.rm().federation_lease().held().contains(app));
  h.rm().FederationHomesChecked(Check(h.rm().NowMs(), {app}));
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts(0).state(), "LAUNCHED");
  EXPECT_TRUE(h.rm().federation_lease().held().empty());
}

}  // namespace
}  // namespace weft::rm
