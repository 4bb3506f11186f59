// Copyright Weft authors.
#include "rm/app_lifecycle.h"

#include "gtest/gtest.h"

namespace weft::rm {
namespace {

TEST(AppLifecycleTest, HappyPathOfAnApp) {
  AppState s = v1::APP_NEW;
  s = *NextAppState(s, AppEvent::kAccepted);
  EXPECT_EQ(s, v1::APP_ACCEPTED);
  s = *NextAppState(s, AppEvent::kAttemptRegistered);
  EXPECT_EQ(s, v1::APP_RUNNING);
  s = *NextAppState(s, AppEvent::kFinished);
  EXPECT_EQ(s, v1::APP_FINISHED);
  EXPECT_TRUE(IsFinal(s));
}

TEST(AppLifecycleTest, AFailedAttemptWithAttemptsLeftGoesBackToAccepted) {
  EXPECT_EQ(*NextAppState(v1::APP_RUNNING, AppEvent::kAccepted), v1::APP_ACCEPTED);
}

TEST(AppLifecycleTest, EndedAppsTakeNoEvent) {
  for (AppState end : {v1::APP_FINISHED, v1::APP_FAILED, v1::APP_KILLED}) {
    for (AppEvent e : {AppEvent::kAccepted, AppEvent::kAttemptRegistered, AppEvent::kFinished,
                       AppEvent::kFailed, AppEvent::kKilled}) {
      absl::StatusOr<AppState> next = NextAppState(end, e);
      ASSERT_FALSE(next.ok()) << AppStateName(end) << " " << AppEventName(e);
      EXPECT_EQ(next.status().code(), absl::StatusCode::kFailedPrecondition);
      EXPECT_NE(next.status().message().find(AppStateName(end)), std::string::npos);
    }
  }
}

TEST(AppLifecycleTest, AttemptHappyPathAndEarlyRegistration) {
  AttemptState s = v1::ATTEMPT_NEW;
  for (auto [event, want] : {std::pair{AttemptEvent::kScheduled, v1::ATTEMPT_SCHEDULED},
                             {AttemptEvent::kAmAllocated, v1::ATTEMPT_ALLOCATED},
                             {AttemptEvent::kAmLaunched, v1::ATTEMPT_LAUNCHED},
                             {AttemptEvent::kRegistered, v1::ATTEMPT_RUNNING},
                             {AttemptEvent::kUnregistered, v1::ATTEMPT_FINISHING},
                             {AttemptEvent::kFinished, v1::ATTEMPT_FINISHED}}) {
    absl::StatusOr<AttemptState> next = NextAttemptState(s, event);
    ASSERT_TRUE(next.ok()) << next.status();
    EXPECT_EQ(*next, want);
    s = *next;
  }
  // The AM may register before the NM's launch reply reached the RM.
  EXPECT_EQ(*NextAttemptState(v1::ATTEMPT_ALLOCATED, AttemptEvent::kRegistered),
            v1::ATTEMPT_RUNNING);
  // A launch reply after registration changes nothing: refused, state stays.
  EXPECT_FALSE(NextAttemptState(v1::ATTEMPT_RUNNING, AttemptEvent::kAmLaunched).ok());
  // Registering before the AM container exists is impossible.
  EXPECT_FALSE(NextAttemptState(v1::ATTEMPT_SCHEDULED, AttemptEvent::kRegistered).ok());
}

TEST(AppLifecycleTest, EndedAttemptsTakeNoEvent) {
  for (AttemptState end : {v1::ATTEMPT_FINISHED, v1::ATTEMPT_FAILED, v1::ATTEMPT_KILLED}) {
    EXPECT_TRUE(IsFinal(end));
    EXPECT_FALSE(NextAttemptState(end, AttemptEvent::kFailed).ok());
    EXPECT_FALSE(NextAttemptState(end, AttemptEvent::kRegistered).ok());
  }
}

TEST(AppLifecycleTest, NamesRoundTripWithoutPrefixes) {
  EXPECT_EQ(AppStateName(v1::APP_RUNNING), "RUNNING");
  EXPECT_EQ(AttemptStateName(v1::ATTEMPT_LAUNCHED), "LAUNCHED");
  EXPECT_EQ(FinalStatusName(v1::FINAL_SUCCEEDED), "SUCCEEDED");
  EXPECT_EQ(FinalStatusName(v1::FINAL_STATUS_UNDEFINED), "");
  for (int i = v1::APP_NEW; i <= v1::APP_KILLED; ++i) {
    auto s = static_cast<AppState>(i);
    EXPECT_EQ(*ParseAppState(AppStateName(s)), s);
  }
  for (int i = v1::ATTEMPT_NEW; i <= v1::ATTEMPT_KILLED; ++i) {
    auto s = static_cast<AttemptState>(i);
    EXPECT_EQ(*ParseAttemptState(AttemptStateName(s)), s);
  }
  EXPECT_EQ(*ParseFinalStatus(""), v1::FINAL_STATUS_UNDEFINED);
  EXPECT_EQ(*ParseFinalStatus("KILLED"), v1::FINAL_KILLED);
}

TEST(AppLifecycleTest, ParsingRefusesUnknownAndPrefixedNames) {
  for (const char* bad : {"DONE", "APP_RUNNING", "STATE_UNSPECIFIED", "", "running"}) {
    absl::StatusOr<AppState> s = ParseAppState(bad);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.status().message().find(absl::StrCat("'", bad, "'")), std::string::npos);
  }
  EXPECT_FALSE(ParseAttemptState("ATTEMPT_RUNNING").ok());
  EXPECT_FALSE(ParseAttemptState("STATE_UNSPECIFIED").ok());
  EXPECT_FALSE(ParseFinalStatus("STATUS_UNDEFINED").ok());
  EXPECT_FALSE(ParseFinalStatus("OK").ok());
}

TEST(AppLifecycleTest, FinalStatusLeadsToItsAppEvent) {
  EXPECT_EQ(AppEventFor(v1::FINAL_SUCCEEDED), AppEvent::kFinished);
  EXPECT_EQ(AppEventFor(v1::FINAL_KILLED), AppEvent::kKilled);
  EXPECT_EQ(AppEventFor(v1::FINAL_FAILED), AppEvent::kFailed);
  EXPECT_EQ(AppEventFor(v1::FINAL_STATUS_UNDEFINED), AppEvent::kFailed);
}

// Fenced homes (issue 27): the lease is stale past the fence without a check; federated apps
// (a home record, unchecked yet, or a federation UAM) are held then, apps without one are not.
TEST(FederationLeaseTest, HoldsFederatedAppsOnlyWhileStaleAndReleasesThoseACheckSaw) {
  FederationLease lease;
  EXPECT_FALSE(lease.Stale(1'000'000));  // fence unknown: nothing held before the first check
  EXPECT_FALSE(lease.MustHold("a", true, 1'000'000));
  FederationHomesCheck check;
  check.heartbeat_ms = 10'000;
  check.fence_ms = 1000;
  check.homed_here = {"a"};
  check.no_home = {"direct"};
  EXPECT_TRUE(lease.Checked(check).empty());
  EXPECT_EQ(lease.renewed_ms(), 10'000);
  EXPECT_FALSE(lease.Stale(11'000));
  EXPECT_FALSE(lease.MustHold("a", false, 11'000));
  EXPECT_TRUE(lease.Stale(11'001));
  EXPECT_TRUE(lease.MustHold("a", false, 11'001));
  EXPECT_TRUE(lease.MustHold("new", false, 11'001));  // not checked yet: may have a home
  EXPECT_FALSE(lease.MustHold("direct", false, 11'001));
  EXPECT_TRUE(lease.MustHold("direct", true, 11'001));  // a federation UAM always
  lease.Hold("a");
  lease.Hold("new");
  lease.Hold("gone");
  lease.Forget("gone");
  FederationHomesCheck next = check;
  next.heartbeat_ms = 12'000;
  next.homed_here = {};
  next.homed_elsewhere = {{"a", "moved"}};
  EXPECT_EQ(lease.Checked(next), std::vector<std::string>{"a"});
  EXPECT_EQ(lease.held(), std::set<std::string>{"new"});  // not seen by this check
  EXPECT_FALSE(lease.Stale(12'500));
  // An older check (out of order) does not move the lease back.
  next.heartbeat_ms = 5'000;
  lease.Checked(next);
  EXPECT_EQ(lease.renewed_ms(), 12'000);
}

TEST(StateNamesTest, StoredAndReportedSpellingsDifferOnlyForUnsetValues) {
  EXPECT_EQ(store::AppStateName(v1::APP_RUNNING), "RUNNING");
  EXPECT_EQ(store::ReportedAppState(v1::APP_RUNNING), "RUNNING");
  EXPECT_EQ(store::AppStateName(v1::APPLICATION_STATE_UNSPECIFIED), "UNSPECIFIED");
  EXPECT_EQ(store::ReportedAppState(v1::APPLICATION_STATE_UNSPECIFIED), "NEW");
  EXPECT_FALSE(store::ParseAppState("UNSPECIFIED").ok());  // never stored
  EXPECT_EQ(store::AttemptStateName(v1::ATTEMPT_STATE_UNSPECIFIED), "UNSPECIFIED");
  EXPECT_EQ(store::NodeStateName(v1::NODE_DECOMMISSIONED), "DECOMMISSIONED");
  EXPECT_EQ(store::ReportedNodeState(v1::NODE_STATE_UNSPECIFIED), "NEW");
  EXPECT_EQ(store::FinalStatusName(v1::FINAL_STATUS_UNDEFINED), "");
  EXPECT_EQ(store::ReportedFinalStatus(v1::FINAL_STATUS_UNDEFINED), "UNDEFINED");
  EXPECT_EQ(store::ReportedFinalStatus(v1::FINAL_KILLED), "KILLED");
}

}  // namespace
}  // namespace weft::rm
