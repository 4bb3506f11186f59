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

}  // namespace
}  // namespace weft::rm
