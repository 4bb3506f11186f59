// Copyright Weft authors. Who may submit to a queue and who may kill whose app: the queue ACLs
// (scheduler/config.h) and cluster admins, as the RM applies them to authenticated callers.
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "rm/rm_test_util.h"

namespace weft::rm {
namespace {

using ::testing::HasSubstr;

RmOptions WithQueues(absl::string_view yaml) {
  RmOptions o = RmHarness::DefaultOptions();
  auto config = scheduler::ParseSchedulerConfig(yaml, o.registry, "acl.yaml");
  EXPECT_TRUE(config.ok()) << config.status();
  if (config.ok()) o.scheduler = *config;
  return o;
}

class AuthorizationTest : public ::testing::Test {
 protected:
  // Submits a `sleep` app to `queue` as `caller`; "" when refused (status in `status`).
  std::string Submit(RmHarness& h, const Caller& caller, const std::string& queue,
                     absl::Status* status) {
    auto id = h.rm().NewApplication();
    EXPECT_TRUE(id.ok());
    v1::ApplicationSubmissionContext ctx;
    ctx.set_application_id(id->application_id());
    ctx.set_queue(queue);
    ctx.mutable_am_container_spec()->add_command("sleep 100");
    *status = h.rm().SubmitApplication(ctx, caller);
    return status->ok() ? id->application_id() : "";
  }
};

TEST_F(AuthorizationTest, QueueSubmitAclsAreInheritedAndEnforced) {
  RmHarness h(WithQueues(R"(
queues:
  root:
    acl_submit_applications: " "
    acl_administer_queue: " ops"
    children:
      prod:
        acl_submit_applications: "alice etl"
      dev: {}
)"));
  absl::Status st;
  EXPECT_NE(Submit(h, CallerFor("alice"), "prod", &st), "") << st;
  EXPECT_NE(Submit(h, CallerFor("bob", {"etl"}), "root.prod", &st), "") << st;  // by group
  EXPECT_NE(Submit(h, CallerFor("olga", {"ops"}), "dev", &st), "") << st;  // root's admins submit
  EXPECT_EQ(Submit(h, CallerFor("mallory"), "prod", &st), "");
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr("user 'mallory' may not submit applications to queue 'prod'"));
  EXPECT_EQ(Submit(h, CallerFor("alice"), "dev", &st), "");
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  // Refused submissions leave nothing behind.
  EXPECT_EQ(h.rm().ListApplications({}).applications_size(), 3);
  // A cluster admin submits anywhere; an unknown queue is reported as such, not as an ACL.
  Caller admin = CallerFor("root");
  admin.admin = true;
  EXPECT_NE(Submit(h, admin, "dev", &st), "") << st;
  EXPECT_EQ(Submit(h, CallerFor("alice"), "nosuch", &st), "");
  EXPECT_NE(st.code(), absl::StatusCode::kPermissionDenied) << st;
}

TEST_F(AuthorizationTest, OnlyTheOwnerAQueueAdminOrAClusterAdminKills) {
  RmHarness h(WithQueues(R"(
queues:
  root:
    children:
      prod: {acl_administer_queue: "carol"}
      dev: {}
)"));
  absl::Status st;
  const std::string app = Submit(h, CallerFor("alice"), "prod", &st);
  ASSERT_NE(app, "") << st;
  const std::string dev_app = Submit(h, CallerFor("alice"), "dev", &st);
  ASSERT_NE(dev_app, "") << st;
  // By default no one administers a queue: bob may not kill alice's apps.
  st = h.rm().KillApplication(app, "", CallerFor("bob"));
  EXPECT_EQ(st.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(st.message(), HasSubstr("user 'bob' may not modify application"));
  EXPECT_NE(h.rm().GetApplication(app)->state(), v1::APP_KILLED);
  // carol administers prod, not dev.
  EXPECT_EQ(h.rm().KillApplication(dev_app, "", CallerFor("carol")).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_TRUE(h.rm().KillApplication(app, "", CallerFor("carol")).ok());
  EXPECT_EQ(h.rm().GetApplication(app)->state(), v1::APP_KILLED);
  // The owner kills their own.
  EXPECT_TRUE(h.rm().KillApplication(dev_app, "", CallerFor("alice")).ok());
}

TEST_F(AuthorizationTest, AppDetailsAreForItsOwnerAdminsAndViewAcl) {
  RmHarness h(WithQueues("queues: {root: {children: {prod: {acl_administer_queue: 'carol'}}}}"));
  h.AddNode("n1:1");
  auto id = h.rm().NewApplication();
  ASSERT_TRUE(id.ok());
  v1::ApplicationSubmissionContext ctx;
  ctx.set_application_id(id->application_id());
  ctx.set_queue("prod");
  ctx.mutable_am_container_spec()->add_command("sleep 100");
  ctx.set_view_acl("bob,b@d");
  absl::Status st = h.rm().SubmitApplication(ctx, CallerFor("alice"));
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(st.message(), HasSubstr("view ACL"));
  ctx.set_view_acl("bob");
  ASSERT_TRUE(h.rm().SubmitApplication(ctx, CallerFor("alice")).ok());
  h.loop.Advance(200);  // the AM container is allocated: the app has an AM host
  const std::string app = id->application_id();
  for (const std::string viewer : {"alice", "bob", "carol"}) {
    auto report = h.rm().GetApplication(app, CallerFor(viewer));
    ASSERT_TRUE(report.ok());
    EXPECT_NE(report->am_host(), "N/A") << viewer;
    EXPECT_TRUE(h.rm().GetApplicationAttempts(app, CallerFor(viewer)).ok()) << viewer;
  }
  auto hidden = h.rm().GetApplication(app, CallerFor("mallory"));
  ASSERT_TRUE(hidden.ok());
  EXPECT_EQ(hidden->user(), "alice");
  EXPECT_EQ(hidden->am_host(), "N/A");
  EXPECT_EQ(hidden->diagnostics(), "N/A");
  EXPECT_EQ(h.rm().ListApplications({}, CallerFor("mallory")).applications(0).am_host(), "N/A");
  EXPECT_EQ(h.rm().GetApplicationAttempts(app, CallerFor("mallory")).status().code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace weft::rm
