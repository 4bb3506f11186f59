// Copyright Weft authors. Unmanaged AMs (YARN's unmanaged application masters, which
// federation's AMRMProxy registers in an app's secondary sub-clusters) and the federation
// daemons that act for users at the RM's ClientService.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/client_auth.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

// Submits an unmanaged app for `caller`; "" when refused (the status in `status`).
std::string SubmitUnmanaged(RmHarness& h, const Caller& caller, absl::Status* status = nullptr) {
  auto id = h.rm().NewApplication();
  EXPECT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.set_name("uam");
  ctx.set_unmanaged_am(true);
  ctx.set_max_app_attempts(2);
  absl::Status s = h.rm().SubmitApplication(ctx, caller);
  if (status != nullptr) *status = s;
  EXPECT_TRUE(status != nullptr || s.ok()) << s;
  return s.ok() ? id->application_id() : "";
}

TEST(UnmanagedAmTest, NoAmContainerIsStartedAndOnlyItsOwnerGetsTheToken) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string app = SubmitUnmanaged(h, CallerFor("alice"));
  ASSERT_FALSE(app.empty());
  h.loop.Advance(500);  // scheduling passes: nothing to allocate for it
  EXPECT_TRUE(h.launcher.launches.empty());

  auto owner = h.rm().GetApplication(app, CallerFor("alice"));
  ASSERT_TRUE(owner.ok()) << owner.status();
  EXPECT_TRUE(owner->unmanaged_am());
  EXPECT_EQ(owner->current_attempt(), 1);
  EXPECT_FALSE(owner->amrm_token().identifier().empty());
  EXPECT_EQ(owner->amrm_token().kind(), "AMRMToken");
  // Neither another user nor a list carries it.
  auto other = h.rm().GetApplication(app, CallerFor("bob"));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(other->amrm_token().identifier().empty());
  v1::ListApplicationsResponse listed = h.rm().ListApplications({}, CallerFor("alice"));
  ASSERT_EQ(listed.applications_size(), 1);
  EXPECT_TRUE(listed.applications(0).amrm_token().identifier().empty());

  // The submitter is the AM: it registers, gets containers, and finishes the app.
  const v1::Token token = owner->amrm_token();
  auto reg = h.rm().RegisterApplicationMaster(token, {});
  ASSERT_TRUE(reg.ok()) << reg.status();
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_RUNNING);
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(2);
  ASSERT_TRUE(h.rm().Allocate(token, ask).ok());
  h.loop.Advance(200);
  v1::AllocateRequest next;
  next.set_response_id(1);
  auto got = h.rm().Allocate(token, next);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->allocated_containers_size(), 2);
  EXPECT_TRUE(h.launcher.launches.empty());  // the AM starts its containers itself
  v1::FinishApplicationMasterRequest fin;
  fin.set_final_status(v1::FINAL_SUCCEEDED);
  ASSERT_TRUE(h.rm().FinishApplicationMaster(token, fin).ok());
  auto done = h.rm().GetApplication(app, CallerFor("alice"));
  EXPECT_EQ(done->state(), v1::APP_FINISHED);
  EXPECT_TRUE(done->amrm_token().identifier().empty());  // ended: no token any more
}

TEST(UnmanagedAmTest, AnAmThatNeverRegistersFailsTheAppWithoutAnotherAttempt) {
  RmOptions o = RmHarness::DefaultOptions();
  o.am_expiry_ms = 1000;
  RmHarness h(o);
  h.AddNode("h1:1");
  const std::string app = SubmitUnmanaged(h, CallerFor("alice"));
  ASSERT_FALSE(app.empty());
  h.loop.Advance(2000);
  auto report = h.rm().GetApplication(app);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->state(), v1::APP_FAILED);
  EXPECT_EQ(report->current_attempt(), 1);  // max_app_attempts 2 asked, 1 given
}

TEST(UnmanagedAmTest, AmSizingIsRefusedAndChangesNothing) {
  RmHarness h;
  auto id = h.rm().NewApplication();
  ASSERT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.set_unmanaged_am(true);
  ctx.mutable_am_sizing()->set_enabled(true);
  ctx.mutable_am_sizing()->set_input_bytes(1 << 30);
  absl::Status s = h.rm().SubmitApplication(ctx, CallerFor("alice"));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("unmanaged AM"));
  EXPECT_EQ(h.rm().ListApplications({}).applications_size(), 0);
}

TEST(UnmanagedAmTest, ARestartedRmKeepsTheAttemptAndTheAmRegistersAgain) {
  RmHarness h;
  h.AddNode("h1:1");
  const std::string app = SubmitUnmanaged(h, CallerFor("alice"));
  const v1::Token token = h.rm().GetApplication(app, CallerFor("alice"))->amrm_token();
  ASSERT_TRUE(h.rm().RegisterApplicationMaster(token, {}).ok());

  h.Restart();
  h.AddNode("h1:1");
  // The old token still verifies and is told to resync; the report has a token as well.
  auto resync = h.rm().Allocate(token, {});
  ASSERT_TRUE(resync.ok()) << resync.status();
  EXPECT_EQ(resync->am_command(), v1::AM_RESYNC);
  auto report = h.rm().GetApplication(app, CallerFor("alice"));
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->current_attempt(), 1);
  EXPECT_FALSE(report->amrm_token().identifier().empty());
  EXPECT_TRUE(h.rm().RegisterApplicationMaster(token, {}).ok());
  v1::AllocateRequest ask;
  *ask.add_asks() = AnyAsk(1);
  EXPECT_TRUE(h.rm().Allocate(token, ask).ok());
  h.loop.Advance(200);
  v1::AllocateRequest next;
  next.set_response_id(1);
  EXPECT_EQ(h.rm().Allocate(token, next)->allocated_containers_size(), 1);
  EXPECT_TRUE(h.launcher.launches.empty());
}

TEST(UnmanagedAmTest, ReportsNameTheSubCluster) {
  RmOptions o = RmHarness::DefaultOptions();
  o.sub_cluster_id = "sc-2";
  RmHarness h(o);
  h.AddNode("h1:1");
  const std::string app = SubmitUnmanaged(h, CallerFor("alice"));
  EXPECT_EQ(h.rm().GetApplication(app)->sub_cluster_id(), "sc-2");
  v1::ListNodesResponse nodes = h.rm().ListNodes({});
  ASSERT_EQ(nodes.nodes_size(), 1);
  EXPECT_EQ(nodes.nodes(0).sub_cluster_id(), "sc-2");
}

TEST(UnmanagedAmTest, ASubClusterTakesIdsOfOtherRmsAndOnlyThen) {
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id("application_1700000000000_0042");  // another RM's timestamp
  ctx.mutable_am_container_spec()->add_command("true");
  RmHarness plain;
  EXPECT_EQ(plain.rm().SubmitApplication(ctx, CallerFor("alice")).code(),
            absl::StatusCode::kNotFound);
  RmOptions o = RmHarness::DefaultOptions();
  o.sub_cluster_id = "sc-1";
  o.cluster_timestamp_ms = 1800000000000;
  RmHarness federated(o);
  federated.AddNode("h1:1");
  ASSERT_TRUE(federated.rm().SubmitApplication(ctx, CallerFor("alice")).ok());
  federated.loop.Advance(200);
  ASSERT_EQ(federated.launcher.launches.size(), 1u);
  EXPECT_EQ(federated.launcher.launches[0].second.launch_context().environment().at(
                "WEFT_APP_ATTEMPT_ID"),
            "appattempt_1700000000000_0042_000001");
  // Its own timestamp's ids still come only from its NewApplication; malformed ids never.
  for (const char* bad : {"application_1800000000000_0007", "application_x_1",
                          "application_1700000000000_42", "application_1700000000000_0042x"}) {
    v1::ApplicationSubmissionContext c = ctx;
    c.set_application_id(bad);
    EXPECT_EQ(federated.rm().SubmitApplication(c, CallerFor("alice")).code(),
              absl::StatusCode::kNotFound)
        << bad;
  }
  // The same id twice: refused.
  EXPECT_EQ(federated.rm().SubmitApplication(ctx, CallerFor("alice")).code(),
            absl::StatusCode::kAlreadyExists);
}

TEST(FederationPeerTest, ARouterOrNmActsForTheUserItNames) {
  ClientAuthOptions o;
  o.mode = UserAuthentication::kMunge;
  o.rm_user = "weft";
  Presented p;
  p.federation_peer = "router/r1";
  // It must name a user.
  absl::StatusOr<Caller> none = AuthenticateClient(o, p);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("router/r1"));
  // A user the OS knows: that user, with the peer as the real user; no MUNGE credential needed.
  p.declared_user = "root";
  absl::StatusOr<Caller> root = AuthenticateClient(o, p);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root->user, "root");
  EXPECT_EQ(root->real_user, "router/r1");
  EXPECT_FALSE(root->admin);
  // One it does not: refused, naming both.
  p.declared_user = "no-such-user-weft";
  absl::StatusOr<Caller> unknown = AuthenticateClient(o, p);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(), HasSubstr("no-such-user-weft"));
  // Without a federation peer the same call needs a MUNGE credential.
  p.federation_peer.clear();
  p.declared_user = "root";
  EXPECT_EQ(AuthenticateClient(o, p).status().code(), absl::StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace weft::rm
