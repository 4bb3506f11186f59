// Copyright Weft authors. The ends of federated apps (app_lifecycle.h FederationEnds): a kill or
// failure decided at a sub-cluster's RM is written into the app's home record before the app
// ends, so that the GPG never resubmits an app that a client saw end.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/app_manager.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

// Stands in for the federation store's write (RmServer's RecordEndAtHome on a claim checker
// thread): keeps each request until the test answers it.
struct EndWriter {
  struct Request {
    std::string app_id;
    int64_t ended_ms = 0;
    std::function<void(absl::Status)> done;
  };
  std::vector<Request> requests;
};

// A federation sub-cluster's RM whose ends go to `writer`.
RmOptions WritingOptions(EndWriter* writer) {
  RmOptions o = RmHarness::DefaultOptions();
  o.sub_cluster_id = "scA";
  o.record_end_at_home = [writer](const std::string& app_id, int64_t ended_ms,
                                  std::function<void(absl::Status)> done) {
    writer->requests.push_back({app_id, ended_ms, std::move(done)});
  };
  return o;
}

// Answers the `i`-th request with `written`; the answer reaches the RM on its loop.
void Answer(RmHarness& h, EndWriter& w, size_t i, absl::Status written) {
  ASSERT_LT(i, w.requests.size());
  w.requests[i].done(std::move(written));
  h.loop.RunPending();
}

v1::ApplicationState StateOf(RmHarness& h, const std::string& app) {
  absl::StatusOr<v1::ApplicationReport> r = h.rm().GetApplication(app);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->state() : v1::APPLICATION_STATE_UNSPECIFIED;
}

std::string AmContainer(RmHarness& h, const std::string& app, int attempt) {
  auto attempts = h.rm().GetApplicationAttempts(app);
  EXPECT_TRUE(attempts.ok());
  return attempts.ok() && attempts->attempts_size() > attempt
             ? attempts->attempts(attempt).am_container_id()
             : "";
}

// A federation sub-cluster's RM with one node, its ends written by `w`.
class AppEndsTest : public ::testing::Test {
 protected:
  void SetUp() override { h.AddNode("h1:1"); }

  EndWriter w;
  RmHarness h{WritingOptions(&w)};
};

TEST_F(AppEndsTest, AKilledFederatedAppEndsOnlyOnceItsHomeRecordSaysSo) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_EQ(StateOf(h, app), v1::APP_ACCEPTED);
  const int64_t killed_ms = h.rm().NowMs();
  ASSERT_TRUE(h.rm().KillApplication(app, "stop it").ok());
  // Taken, not done: the report keeps its last live state and says what it waits for.
  EXPECT_TRUE(h.rm().AppEndPending(app));
  EXPECT_EQ(StateOf(h, app), v1::APP_ACCEPTED);
  EXPECT_THAT(h.rm().GetApplication(app)->diagnostics(),
              HasSubstr("Ending as KILLED once its home record"));
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_EQ(w.requests[0].app_id, app);
  EXPECT_EQ(w.requests[0].ended_ms, killed_ms);
  // Asking again (as a client does until the kill completed) writes nothing twice.
  ASSERT_TRUE(h.rm().KillApplication(app, "stop it").ok());
  EXPECT_EQ(w.requests.size(), 1u);
  Answer(h, w, 0, absl::OkStatus());
  EXPECT_FALSE(h.rm().AppEndPending(app));
  absl::StatusOr<v1::ApplicationReport> r = h.rm().GetApplication(app);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::APP_KILLED);
  EXPECT_EQ(r->final_status(), v1::FINAL_KILLED);
  EXPECT_EQ(r->diagnostics(), "stop it");
  // A late second answer (a retried write) changes nothing.
  Answer(h, w, 0, absl::OkStatus());
  EXPECT_EQ(StateOf(h, app), v1::APP_KILLED);
}

TEST_F(AppEndsTest, AWriteThatFailsIsRetriedAndTheAppLivesOnMeanwhile) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_TRUE(h.rm().KillApplication(app, "").ok());
  Answer(h, w, 0, absl::UnavailableError("the federation store is down"));
  EXPECT_EQ(StateOf(h, app), v1::APP_ACCEPTED);
  EXPECT_TRUE(h.rm().AppEndPending(app));
  ASSERT_EQ(w.requests.size(), 1u);  // not at once: after store_retry_ms
  h.loop.Advance(RmOptions().store_retry_ms);
  ASSERT_EQ(w.requests.size(), 2u);
  EXPECT_EQ(w.requests[1].app_id, app);
  EXPECT_EQ(w.requests[1].ended_ms, w.requests[0].ended_ms);  // the time it was killed
  Answer(h, w, 1, absl::OkStatus());
  EXPECT_EQ(StateOf(h, app), v1::APP_KILLED);
  h.loop.Advance(10 * RmOptions().store_retry_ms);
  EXPECT_EQ(w.requests.size(), 2u);
}

TEST_F(AppEndsTest, ACopyWhoseAppMovedIsKilledAsAFencedCopy) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  ASSERT_TRUE(h.rm().KillApplication(app, "").ok());
  Answer(h, w, 0,
         absl::FailedPreconditionError("application " + app +
                                       " is homed at sub-cluster 'scB' now, not at 'scA': this "
                                       "copy is fenced and its end is not taken"));
  absl::StatusOr<v1::ApplicationReport> r = h.rm().GetApplication(app);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::APP_KILLED);
  EXPECT_THAT(r->diagnostics(), HasSubstr("homed at sub-cluster 'scB' now"));
  EXPECT_EQ(w.requests.size(), 1u);
}

TEST_F(AppEndsTest, AnAppWhoseAttemptsAreUsedUpFailsOnceItsEndIsWritten) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  // Its AMs fail until no attempt is left.
  int attempt = 0;
  while (w.requests.empty() && attempt < 10) {
    const std::string am = AmContainer(h, app, attempt);
    ASSERT_FALSE(am.empty()) << "attempt " << attempt;
    h.Heartbeat("h1:1", {{am, 1}});
    h.loop.Advance(200);
    ++attempt;
  }
  ASSERT_EQ(w.requests.size(), 1u);
  EXPECT_NE(StateOf(h, app), v1::APP_FAILED);
  EXPECT_THAT(h.rm().GetApplication(app)->diagnostics(), HasSubstr("Ending as FAILED"));
  // No new attempt while it waits.
  h.loop.Advance(1000);
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), attempt);
  Answer(h, w, 0, absl::OkStatus());
  absl::StatusOr<v1::ApplicationReport> r = h.rm().GetApplication(app);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state(), v1::APP_FAILED);
  EXPECT_THAT(r->diagnostics(), HasSubstr("max attempts"));
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), attempt);
}

TEST_F(AppEndsTest, AKillWaitingForItsRecordStartsNoNewAttemptWhenItsAmFails) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  const std::string am = AmContainer(h, app, 0);
  ASSERT_FALSE(am.empty());
  ASSERT_TRUE(h.rm().KillApplication(app, "").ok());
  h.Heartbeat("h1:1", {{am, 1}});
  h.loop.Advance(1000);
  EXPECT_EQ(h.rm().GetApplicationAttempts(app)->attempts_size(), 1);
  EXPECT_EQ(w.requests.size(), 1u);  // the kill's end; the failure adds none
  Answer(h, w, 0, absl::OkStatus());
  EXPECT_EQ(StateOf(h, app), v1::APP_KILLED);
}

TEST_F(AppEndsTest, AppsWithoutAHomeRecordAndUnregisteringAmsEndAtOnce) {
  const std::string direct = h.Submit();
  const std::string homed = h.Submit();
  FederationHomesCheck check;
  check.heartbeat_ms = h.rm().NowMs();
  check.fence_ms = 60000;
  check.homed_here = {homed};
  check.no_home = {direct};
  h.rm().FederationHomesChecked(check);
  h.loop.Advance(200);
  // Submitted to this RM directly: nothing to write.
  ASSERT_TRUE(h.rm().KillApplication(direct, "").ok());
  EXPECT_EQ(StateOf(h, direct), v1::APP_KILLED);
  // An AM's unregistration is written by the server before the RM takes it.
  size_t launch = 0;
  while (launch < h.launcher.launches.size() &&
         h.launcher.launches[launch].second.launch_context().environment().at(
             "WEFT_APPLICATION_ID") != homed)
    ++launch;
  ASSERT_LT(launch, h.launcher.launches.size());
  const v1::Token token = h.RegisterAm(launch);
  v1::FinishApplicationMasterRequest finish;
  finish.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(h.rm().FinishApplicationMaster(token, finish).ok());
  EXPECT_EQ(StateOf(h, homed), v1::APP_FINISHED);
  EXPECT_TRUE(w.requests.empty());
}

TEST_F(AppEndsTest, AnEndNotWrittenBeforeTheRmDiesIsWrittenByTheNextOne) {
  const std::string app = h.Submit();
  h.loop.Advance(200);
  int attempt = 0;
  while (w.requests.empty() && attempt < 10) {
    h.Heartbeat("h1:1", {{AmContainer(h, app, attempt), 1}});
    h.loop.Advance(200);
    ++attempt;
  }
  ASSERT_EQ(w.requests.size(), 1u);
  // kill -9 before the write answered: the store holds the app unfinished.
  h.Restart(WritingOptions(&w));
  ASSERT_EQ(w.requests.size(), 2u);  // the restarted RM fails it again, and writes first
  EXPECT_EQ(w.requests[1].app_id, app);
  EXPECT_NE(StateOf(h, app), v1::APP_FAILED);
  Answer(h, w, 0, absl::OkStatus());  // the dead RM's answer reaches nobody
  EXPECT_NE(StateOf(h, app), v1::APP_FAILED);
  Answer(h, w, 1, absl::OkStatus());
  EXPECT_EQ(StateOf(h, app), v1::APP_FAILED);
}

}  // namespace
}  // namespace weft::rm
