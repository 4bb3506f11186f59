// Copyright Weft authors. AmService: who may call, the response-id protocol, releases, and AM
// liveness.
#include "rm/am_service.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

TEST(AmServiceTest, AllocateBeforeRegisterIsRefused) {
  RmHarness h;
  h.AddNode("h1:1");
  h.Submit();
  h.loop.Advance(200);
  v1::Token t = h.AmToken();
  auto early = h.rm().Allocate(t, {});
  EXPECT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(early.status().message(), HasSubstr("before RegisterApplicationMaster"));
  ASSERT_TRUE(h.rm().RegisterApplicationMaster(t, {}).ok());
}

// A lost register reply, or an AM_RESYNC: the AM registers again, hears of every container it
// holds, and starts its response_id sequence from 0.
TEST(AmServiceTest, RegisteringAgainListsTheContainersAndRestartsTheSequence) {
  RmHarness h;
  h.AddNode("h1:1");
  h.Submit();
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(2);
  auto r = h.rm().Allocate(t, ask);
  ASSERT_TRUE(r.ok());
  h.loop.Advance(200);  // allocated, not yet handed to the AM
  v1::AllocateRequest wrong;
  wrong.set_response_id(7);
  EXPECT_EQ(h.rm().Allocate(t, wrong)->am_command(), v1::AM_RESYNC);
  auto again = h.rm().RegisterApplicationMaster(t, {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->containers_from_previous_attempts_size(), 2);
  v1::AllocateRequest first;
  auto next = h.rm().Allocate(t, first);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->am_command(), v1::AM_COMMAND_NONE);
  EXPECT_EQ(next->response_id(), 1);
  EXPECT_EQ(next->allocated_containers_size(), 0);  // listed in the registration instead
}

TEST(AmServiceTest, ATokenOfAFinishedAppIsNoLongerRunning) {
  RmHarness h;
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  ASSERT_TRUE(h.rm().KillApplication(app, "").ok());
  auto r = h.rm().Allocate(t, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(r.status().message(), HasSubstr("no longer running"));
}

// The RM's gRPC threads verify an AM's token with the RM's AmRmVerifier before the call
// reaches the loop. Verified, the loop skips only the signature: a verified attempt that is
// no longer running is still refused. Refused there, the loop checks the token itself.
TEST(AmServiceTest, ATokenVerifiedOffTheLoopSkipsOnlyTheSignature) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string app = h.Submit();
  h.loop.Advance(200);
  const v1::Token t = h.RegisterAm();
  const std::shared_ptr<const AmRmVerifier> verifier = h.rm().amrm_verifier();
  absl::StatusOr<std::string> attempt =
      verifier->Verify({t.identifier(), t.password()}, h.loop.NowMs());
  ASSERT_TRUE(attempt.ok()) << attempt.status();
  absl::StatusOr<v1::AllocateResponse> got = absl::InternalError("no reply");
  auto keep = [&got](absl::StatusOr<v1::AllocateResponse> r) { got = std::move(r); };
  h.rm().Allocate(t, {}, keep, *attempt);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->response_id(), 1);

  v1::Token forged = t;
  forged.mutable_password()->at(0) ^= 1;
  absl::StatusOr<std::string> refused =
      verifier->Verify({forged.identifier(), forged.password()}, h.loop.NowMs());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied);
  h.rm().Allocate(forged, {}, keep);  // not verified: the loop checks it
  EXPECT_EQ(got.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(got.status().message(), HasSubstr("bad signature"));

  ASSERT_TRUE(h.rm().KillApplication(app, "").ok());
  h.rm().Allocate(t, {}, keep, *attempt);
  EXPECT_EQ(got.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(got.status().message(), HasSubstr("no longer running"));
}

// The verifier follows the RM's key rolls: the token an AM is handed after a roll verifies
// off the loop, and the first one stops verifying once its key has expired and left.
TEST(AmServiceTest, TheVerifierFollowsTheAmrmKeyRolls) {
  RmOptions o = RmHarness::DefaultOptions();
  o.key_roll_interval_ms = 10000;
  RmHarness h(o);
  h.AddNode("h1:1");
  h.Submit();
  h.loop.Advance(200);
  const v1::Token first = h.RegisterAm();
  v1::Token latest = first;
  int32_t response_id = 0;
  // Past the first key's life (3 roll intervals + the AM expiry: 90 s); the node and the AM
  // keep calling.
  for (int i = 0; i < 120; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat("h1:1");
    v1::AllocateRequest req;
    req.set_response_id(response_id);
    absl::StatusOr<v1::AllocateResponse> r = h.rm().Allocate(latest, req);
    ASSERT_TRUE(r.ok()) << r.status();
    response_id = r->response_id();
    if (r->has_amrm_token()) latest = r->amrm_token();
  }
  ASSERT_NE(latest.identifier(), first.identifier());
  const std::shared_ptr<const AmRmVerifier> verifier = h.rm().amrm_verifier();
  EXPECT_TRUE(verifier->Verify({latest.identifier(), latest.password()}, h.loop.NowMs()).ok());
  EXPECT_EQ(verifier->Verify({first.identifier(), first.password()}, h.loop.NowMs())
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
}

TEST(AmServiceTest, AnAppCannotReleaseAnotherAppsContainerOrItsOwnAm) {
  RmHarness h;
  h.AddNode("h1:1", 16384, 16);
  std::string a = h.Submit("alice");
  h.Submit("bob");
  h.loop.Advance(200);
  ASSERT_EQ(h.launcher.launches.size(), 2u);
  v1::Token ta = h.RegisterAm(0);
  v1::Token tb = h.RegisterAm(1);
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(1);
  auto r = h.rm().Allocate(ta, ask);
  ASSERT_TRUE(r.ok()) << r.status();
  h.loop.Advance(200);
  v1::AllocateRequest poll;
  poll.set_response_id(1);
  r = h.rm().Allocate(ta, poll);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->allocated_containers_size(), 1);
  const std::string alices = r->allocated_containers(0).container_id();
  // Bob names Alice's container: refused, and Alice keeps it.
  v1::AllocateRequest steal;
  steal.add_releases(alices);
  auto refused = h.rm().Allocate(tb, steal);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("not allocated to this application"));
  EXPECT_EQ(h.rm().GetApplication(a)->running_containers(), 2);
  // Alice names her own AM container: refused too.
  const std::string am = h.rm().GetApplicationAttempts(a)->attempts(0).am_container_id();
  v1::AllocateRequest own_am;
  own_am.set_response_id(2);
  own_am.add_releases(am);
  auto am_refused = h.rm().Allocate(ta, own_am);
  EXPECT_EQ(am_refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(am_refused.status().message(), HasSubstr("AM container"));
}

// YARN ignores a release of a container the RM no longer holds (it completed, or was lost with
// its node, before the AM heard): the Allocate succeeds and the app goes on.
TEST(AmServiceTest, AReleaseOfAContainerTheRmNoLongerHoldsIsIgnored) {
  RmHarness h;
  h.AddNode("h1:1", 16384, 16);
  std::string app = h.Submit("alice");
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(2);
  ASSERT_TRUE(h.rm().Allocate(t, ask).ok());
  h.loop.Advance(200);
  v1::AllocateRequest poll;
  poll.set_response_id(1);
  auto r = h.rm().Allocate(t, poll);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->allocated_containers_size(), 2);
  const std::string done = r->allocated_containers(0).container_id();
  const std::string live = r->allocated_containers(1).container_id();
  EXPECT_EQ(h.rm().GetApplication(app)->running_containers(), 3);
  // `done` exits on its node; the AM releases it before it hears.
  h.Heartbeat("h1:1", {{done, 0}});
  v1::AllocateRequest release;
  release.set_response_id(2);
  release.add_releases(done);
  release.add_releases(live);
  release.add_releases(live);  // named twice: released once
  // A container id of this app that was never allocated.
  release.add_releases(done.substr(0, done.size() - 6) + "999999");
  auto ok = h.rm().Allocate(t, release);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_RUNNING);
  EXPECT_EQ(h.rm().GetApplication(app)->running_containers(), 1);  // the AM
  ASSERT_EQ(ok->completed_containers_size(), 1);
  EXPECT_EQ(ok->completed_containers(0).container_id(), done);
  // The reply notes each ignored release.
  ASSERT_EQ(ok->diagnostics_size(), 2);
  EXPECT_THAT(ok->diagnostics(0), HasSubstr("release of " + done + " ignored"));
  // Names that are no container id are still refused, and change nothing.
  v1::AllocateRequest bogus;
  bogus.set_response_id(3);
  *bogus.add_asks() = AnyAsk(1);
  bogus.add_releases("not-a-container");
  auto refused = h.rm().Allocate(t, bogus);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("not-a-container"));
  h.loop.Advance(200);
  v1::AllocateRequest again;
  again.set_response_id(3);
  auto after = h.rm().Allocate(t, again);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->allocated_containers_size(), 0);
}

TEST(AmServiceTest, ASilentAmFailsItsAttemptAfterTheExpiry) {
  RmOptions o = RmHarness::DefaultOptions();
  o.am_expiry_ms = 4000;
  RmHarness h(o);
  h.AddNode("h1:1");
  std::string app = h.Submit();
  h.loop.Advance(200);
  h.RegisterAm();
  // Heartbeats keep the node alive; the AM says nothing.
  for (int i = 0; i < 6; ++i) {
    h.loop.Advance(1000);
    h.Heartbeat("h1:1");
  }
  auto attempts = h.rm().GetApplicationAttempts(app);
  ASSERT_TRUE(attempts.ok());
  ASSERT_GE(attempts->attempts_size(), 2);
  EXPECT_EQ(attempts->attempts(0).state(), "FAILED");
  EXPECT_THAT(attempts->attempts(0).diagnostics(), HasSubstr("did not call Allocate"));
}

// ---- Long poll (AllocateRequest.wait_ms) and event-driven passes (issue 17).

// Collects the replies of long-poll Allocate calls.
struct Replies {
  std::vector<absl::StatusOr<v1::AllocateResponse>> got;
  AmService::AllocateReply Sink() {
    return [this](absl::StatusOr<v1::AllocateResponse> r) { got.push_back(std::move(r)); };
  }
};

RmOptions SlowTimerOptions() {
  RmOptions o = RmHarness::DefaultOptions();
  o.pass_interval_ms = 600000;  // the timer alone would place nothing within the test
  o.nm_expiry_ms = 3600000;     // nothing expires while the test advances the clock
  o.am_expiry_ms = 3600000;
  return o;
}

TEST(AmServiceLongPollTest, AHeldCallIsAnsweredByTheEventDrivenPassNotTheTimer) {
  RmHarness h(SlowTimerOptions());
  h.AddNode("h1:1", 16384, 16);
  h.Submit();
  h.loop.Advance(600000);  // the AM container (first pass, on the node's registration)
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(2);
  ask.set_wait_ms(5000);
  Replies replies;
  h.rm().Allocate(t, ask, replies.Sink());
  EXPECT_TRUE(replies.got.empty());  // nothing yet: held
  // min_pass_gap_ms later, not pass_interval_ms: the ask placed, the call answered with it.
  h.loop.Advance(RmOptions().min_pass_gap_ms);
  ASSERT_EQ(replies.got.size(), 1u);
  ASSERT_TRUE(replies.got[0].ok()) << replies.got[0].status();
  EXPECT_EQ(replies.got[0]->allocated_containers_size(), 2);
  EXPECT_EQ(replies.got[0]->response_id(), 1);
}

TEST(AmServiceLongPollTest, ACompletionInAHeartbeatAnswersTheHeldCall) {
  RmHarness h(SlowTimerOptions());
  h.AddNode("h1:1", 16384, 16);
  h.Submit();
  h.loop.Advance(600000);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(1);
  auto first = h.rm().Allocate(t, ask);
  ASSERT_TRUE(first.ok());
  h.loop.Advance(10);
  v1::AllocateRequest poll;
  poll.set_response_id(1);
  auto got = h.rm().Allocate(t, poll);
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->allocated_containers_size(), 1);
  const std::string c = got->allocated_containers(0).container_id();
  // Held: nothing new.
  v1::AllocateRequest wait;
  wait.set_response_id(2);
  wait.set_wait_ms(5000);
  Replies replies;
  h.rm().Allocate(t, wait, replies.Sink());
  h.loop.Advance(100);
  EXPECT_TRUE(replies.got.empty());
  EXPECT_EQ(h.rm().parked_allocates(), 1u);
  h.Heartbeat("h1:1", {{c, 0}});
  h.loop.RunPending();  // the answer is posted: one reply for every event being handled
  ASSERT_EQ(replies.got.size(), 1u);
  ASSERT_TRUE(replies.got[0].ok()) << replies.got[0].status();
  ASSERT_EQ(replies.got[0]->completed_containers_size(), 1);
  EXPECT_EQ(replies.got[0]->completed_containers(0).container_id(), c);
  EXPECT_EQ(h.rm().parked_allocates(), 0u);
}

// Counts the RM's scheduling passes.
class PassCounter : public PassObserver {
 public:
  void BeforePass() override {}
  void AfterPass(int64_t /*allocations*/) override { ++passes; }
  int64_t passes = 0;
};

// Freed capacity hastens a pass only while demand waits for it. With every ask placed, a
// completion leaves the next pass to the timer; with asks left over, the pass runs
// min_pass_gap_ms after the completion and places one on what it freed.
TEST(AmServiceLongPollTest, ACompletionHastensAPassOnlyWhileDemandWaits) {
  PassCounter counter;
  RmOptions o = SlowTimerOptions();
  o.pass_observer = &counter;
  RmHarness h(o);
  h.AddNode("h1:1", 16384, 16);
  h.Submit();
  h.loop.Advance(600000);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(1);
  ASSERT_TRUE(h.rm().Allocate(t, ask).ok());
  h.loop.Advance(RmOptions().min_pass_gap_ms);
  v1::AllocateRequest poll;
  poll.set_response_id(1);
  auto got = h.rm().Allocate(t, poll);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->allocated_containers_size(), 1);
  // Nothing waits: the completion runs no pass.
  int64_t passes = counter.passes;
  h.Heartbeat("h1:1", {{got->allocated_containers(0).container_id(), 0}});
  h.loop.Advance(10 * RmOptions().min_pass_gap_ms);
  EXPECT_EQ(counter.passes, passes);

  // 20 asked for, fewer fit beside the AM: the rest wait, and a completion places one.
  v1::AllocateRequest more;
  more.set_response_id(2);
  *more.add_asks() = AnyAsk(20);
  ASSERT_TRUE(h.rm().Allocate(t, more).ok());
  h.loop.Advance(RmOptions().min_pass_gap_ms);
  v1::AllocateRequest poll2;
  poll2.set_response_id(3);
  got = h.rm().Allocate(t, poll2);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_GT(got->allocated_containers_size(), 0);
  ASSERT_LT(got->allocated_containers_size(), 20);
  passes = counter.passes;
  h.Heartbeat("h1:1", {{got->allocated_containers(0).container_id(), 0}});
  h.loop.Advance(RmOptions().min_pass_gap_ms);
  EXPECT_EQ(counter.passes, passes + 1);
  v1::AllocateRequest poll3;
  poll3.set_response_id(4);
  got = h.rm().Allocate(t, poll3);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->allocated_containers_size(), 1);
}

TEST(AmServiceLongPollTest, NothingNewEndsTheWaitEmptyAndANewerCallVoidsTheHeldOne) {
  RmHarness h;
  h.AddNode("h1:1", 16384, 16);
  h.Submit();
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  v1::AllocateRequest wait;
  wait.set_wait_ms(1000);
  Replies replies;
  h.rm().Allocate(t, wait, replies.Sink());
  h.loop.Advance(999);
  EXPECT_TRUE(replies.got.empty());
  h.loop.Advance(1);
  ASSERT_EQ(replies.got.size(), 1u);
  ASSERT_TRUE(replies.got[0].ok());
  EXPECT_EQ(replies.got[0]->response_id(), 1);
  EXPECT_EQ(replies.got[0]->allocated_containers_size(), 0);

  // The AM gave up on a held call and called again (same response_id: a retry of a lost
  // reply). The held call ends Aborted having taken nothing; the new one gets what there is.
  wait.set_response_id(1);
  h.rm().Allocate(t, wait, replies.Sink());
  ASSERT_EQ(replies.got.size(), 1u);
  v1::AllocateRequest ask = wait;
  *ask.add_asks() = AnyAsk(1);
  h.rm().Allocate(t, ask, replies.Sink());
  ASSERT_EQ(replies.got.size(), 2u);
  EXPECT_EQ(replies.got[1].status().code(), absl::StatusCode::kAborted);
  h.loop.Advance(RmOptions().min_pass_gap_ms);
  ASSERT_EQ(replies.got.size(), 3u);
  ASSERT_TRUE(replies.got[2].ok());
  EXPECT_EQ(replies.got[2]->response_id(), 2);
  EXPECT_EQ(replies.got[2]->allocated_containers_size(), 1);
}

TEST(AmServiceLongPollTest, BackPressureAndTheRmGoingAwayAnswerAtOnce) {
  RmOptions o = RmHarness::DefaultOptions();
  o.max_parked_allocates = 1;
  RmHarness h(o);
  h.AddNode("h1:1", 16384, 16);
  h.Submit("alice");
  h.Submit("bob");
  h.loop.Advance(200);
  v1::Token a = h.RegisterAm(0);
  v1::Token b = h.RegisterAm(1);
  v1::AllocateRequest wait;
  wait.set_wait_ms(5000);
  Replies replies;
  h.rm().Allocate(a, wait, replies.Sink());
  EXPECT_TRUE(replies.got.empty());
  h.rm().Allocate(b, wait, replies.Sink());  // one held already: answered at once
  ASSERT_EQ(replies.got.size(), 1u);
  EXPECT_TRUE(replies.got[0].ok());
  h.rm().StopHoldingCalls();  // before the server shuts down
  ASSERT_EQ(replies.got.size(), 2u);
  EXPECT_EQ(replies.got[1].status().code(), absl::StatusCode::kUnavailable);
  h.rm().Allocate(a, wait, replies.Sink());  // holds no more
  EXPECT_EQ(replies.got.size(), 3u);
}

TEST(AmServiceLongPollTest, ANegativeWaitIsAnsweredAtOnceAndAHugeOneIsCapped) {
  RmOptions o = RmHarness::DefaultOptions();
  o.max_allocate_wait_ms = 2000;
  RmHarness h(o);
  h.AddNode("h1:1", 16384, 16);
  h.Submit();
  h.loop.Advance(200);
  v1::Token t = h.RegisterAm();
  Replies replies;
  v1::AllocateRequest negative;
  negative.set_wait_ms(-5);
  h.rm().Allocate(t, negative, replies.Sink());
  ASSERT_EQ(replies.got.size(), 1u);
  ASSERT_TRUE(replies.got[0].ok()) << replies.got[0].status();
  v1::AllocateRequest huge;
  huge.set_response_id(1);
  huge.set_wait_ms(int64_t{1} << 60);
  h.rm().Allocate(t, huge, replies.Sink());
  h.loop.Advance(1999);
  EXPECT_EQ(replies.got.size(), 1u);
  h.loop.Advance(1);  // max_allocate_wait_ms, not the call's wait
  ASSERT_EQ(replies.got.size(), 2u);
  EXPECT_TRUE(replies.got[1].ok());
  EXPECT_EQ(h.rm().parked_allocates(), 0u);
}

}  // namespace
}  // namespace weft::rm
