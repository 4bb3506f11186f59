#include "web/web_sessions.h"

#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::web {
namespace {

using ::testing::HasSubstr;

rm::Caller User(const std::string& name) {
  rm::Caller c;
  c.user = name;
  c.real_user = name;
  c.groups = {name + "-group"};
  return c;
}

class WebSessionsTest : public ::testing::Test {
 protected:
  WebSessionOptions Options() {
    WebSessionOptions o;
    o.ticket_ttl_ms = 60'000;
    o.session_ttl_ms = 3'600'000;
    o.now_ms = [this] { return now_ms_; };
    o.secrets = std::make_shared<security::FakeSecretSource>(7);
    return o;
  }

  int64_t now_ms_ = 1'000'000;
};

TEST_F(WebSessionsTest, ATicketOpensOneSessionOnceAndTheSessionIsItsCaller) {
  WebSessions sessions(Options());
  absl::StatusOr<std::string> ticket = sessions.IssueTicket(User("alice"));
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  EXPECT_EQ(ticket->size(), 43u);  // 256 bits, base64url without padding
  absl::StatusOr<std::string> session = sessions.Redeem(*ticket);
  ASSERT_TRUE(session.ok()) << session.status();
  EXPECT_NE(*session, *ticket);
  absl::StatusOr<rm::Caller> caller = sessions.Find(*session);
  ASSERT_TRUE(caller.ok()) << caller.status();
  EXPECT_EQ(caller->user, "alice");
  EXPECT_EQ(caller->groups, std::vector<std::string>{"alice-group"});
  EXPECT_EQ(sessions.ExpiresMs(*session), now_ms_ + 3'600'000);
  // Used once: the same link opens nothing again, and a ticket is never a session.
  absl::StatusOr<std::string> again = sessions.Redeem(*ticket);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_THAT(again.status().message(), HasSubstr("weft web login"));
  EXPECT_FALSE(sessions.Find(*ticket).ok());
}

TEST_F(WebSessionsTest, TicketsAndSessionsExpire) {
  WebSessions sessions(Options());
  absl::StatusOr<std::string> late = sessions.IssueTicket(User("alice"));
  ASSERT_TRUE(late.ok());
  now_ms_ += 60'000;  // the link's lifetime is over
  EXPECT_EQ(sessions.Redeem(*late).status().code(), absl::StatusCode::kUnauthenticated);

  absl::StatusOr<std::string> ticket = sessions.IssueTicket(User("alice"));
  ASSERT_TRUE(ticket.ok());
  now_ms_ += 59'999;
  absl::StatusOr<std::string> session = sessions.Redeem(*ticket);
  ASSERT_TRUE(session.ok()) << session.status();
  now_ms_ += 3'599'999;
  EXPECT_TRUE(sessions.Find(*session).ok());
  now_ms_ += 1;
  EXPECT_EQ(sessions.Find(*session).status().code(), absl::StatusCode::kUnauthenticated);
  EXPECT_EQ(sessions.ExpiresMs(*session), 0);
  EXPECT_EQ(sessions.live_sessions(), 0u);
}

TEST_F(WebSessionsTest, SignOutEndsOnlyThatSession) {
  WebSessions sessions(Options());
  std::string a = *sessions.Redeem(*sessions.IssueTicket(User("alice")));
  std::string b = *sessions.Redeem(*sessions.IssueTicket(User("alice")));
  sessions.End(a);
  EXPECT_FALSE(sessions.Find(a).ok());
  EXPECT_TRUE(sessions.Find(b).ok());
  sessions.End("no-such-session");  // ignored
  EXPECT_EQ(sessions.live_sessions(), 1u);
}

TEST_F(WebSessionsTest, BoundsHoldForTicketsSessionsAndEachUser) {
  WebSessionOptions o = Options();
  o.max_tickets = 3;
  o.max_tickets_per_user = 2;
  o.max_sessions = 3;
  o.max_sessions_per_user = 2;
  WebSessions sessions(o);
  std::string t1 = *sessions.IssueTicket(User("alice"));
  std::string t2 = *sessions.IssueTicket(User("alice"));
  // Alice cannot hold more than her share of the unopened links; Bob still gets one.
  absl::StatusOr<std::string> greedy = sessions.IssueTicket(User("alice"));
  EXPECT_EQ(greedy.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(greedy.status().message(), HasSubstr("at most 2 a user"));
  std::string bob_link = *sessions.IssueTicket(User("bob"));
  absl::StatusOr<std::string> t3 = sessions.IssueTicket(User("carol"));
  EXPECT_EQ(t3.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(t3.status().message(), HasSubstr("at most 3"));
  EXPECT_FALSE(bob_link.empty());  // left unopened: it stays Bob's until it expires
  // Alice's third session ends her oldest.
  std::string a1 = *sessions.Redeem(t1);
  now_ms_ += 1;
  std::string a2 = *sessions.Redeem(t2);
  now_ms_ += 1;
  std::string a3 = *sessions.Redeem(*sessions.IssueTicket(User("alice")));
  EXPECT_FALSE(sessions.Find(a1).ok());
  EXPECT_TRUE(sessions.Find(a2).ok());
  EXPECT_TRUE(sessions.Find(a3).ok());
  // Bob fills the last place; Carol's link then waits, valid, until a place frees.
  ASSERT_TRUE(sessions.Redeem(*sessions.IssueTicket(User("bob"))).ok());
  std::string carol = *sessions.IssueTicket(User("carol"));
  EXPECT_EQ(sessions.Redeem(carol).status().code(), absl::StatusCode::kResourceExhausted);
  sessions.End(a2);
  absl::StatusOr<std::string> c = sessions.Redeem(carol);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(sessions.Find(*c)->user, "carol");
}

// A user at their own bound replaces their oldest session even when every place is taken.
TEST_F(WebSessionsTest, AUserAtTheirBoundReplacesTheirOldestSessionWhenAllPlacesAreTaken) {
  WebSessionOptions o = Options();
  o.max_sessions = 2;
  o.max_sessions_per_user = 1;
  WebSessions sessions(o);
  std::string a1 = *sessions.Redeem(*sessions.IssueTicket(User("alice")));
  ASSERT_TRUE(sessions.Redeem(*sessions.IssueTicket(User("bob"))).ok());
  EXPECT_EQ(sessions.Redeem(*sessions.IssueTicket(User("carol"))).status().code(),
            absl::StatusCode::kResourceExhausted);
  now_ms_ += 1;
  absl::StatusOr<std::string> a2 = sessions.Redeem(*sessions.IssueTicket(User("alice")));
  ASSERT_TRUE(a2.ok()) << a2.status();
  EXPECT_FALSE(sessions.Find(a1).ok());
  EXPECT_EQ(sessions.Find(*a2)->user, "alice");
  EXPECT_EQ(sessions.live_sessions(), 2u);
}

TEST_F(WebSessionsTest, NoTicketForAnAnonymousCallerAndNoIdWithoutRandomBytes) {
  WebSessionOptions o = Options();
  auto secrets = std::make_shared<security::FakeSecretSource>(3);
  o.secrets = secrets;
  WebSessions sessions(o);
  EXPECT_EQ(sessions.IssueTicket(rm::Caller{}).status().code(),
            absl::StatusCode::kUnauthenticated);
  secrets->FailNext(absl::InternalError("no entropy"));
  absl::StatusOr<std::string> t = sessions.IssueTicket(User("alice"));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(t.status().message(), HasSubstr("no entropy"));
}

TEST_F(WebSessionsTest, AReaderIsTheSessionItsHeaderNamesOrNoOne) {
  WebSessions sessions(Options());
  std::string id = *sessions.Redeem(*sessions.IssueTicket(User("alice")));
  HttpRequest r;
  EXPECT_EQ(SessionReader(r, &sessions).user, "");  // anonymous
  r.headers["x-weft-session"] = id;
  const rm::Caller reader = SessionReader(r, &sessions);
  EXPECT_EQ(reader.user, "alice");
  EXPECT_EQ(reader.groups, std::vector<std::string>{"alice-group"});
  EXPECT_EQ(SessionReader(r, nullptr).user, "");
  r.headers["x-weft-session"] = id.substr(1) + "x";  // a guess of the right shape
  EXPECT_EQ(SessionReader(r, &sessions).user, "");
  r.headers["x-weft-session"] = "../../etc";
  EXPECT_EQ(SessionReader(r, &sessions).user, "");
}

}  // namespace
}  // namespace weft::web
