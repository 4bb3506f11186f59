// Copyright Weft authors. What store/postgres_util.h does without a server: the URI rules, the
// SQLSTATE mapping and the errors of a connection that cannot connect. The stores' conformance
// suites (federation/store, history) run the rest against real PostgreSQL servers.
#include "store/postgres_util.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::store::pg {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

TEST(PostgresUtilTest, SqlStatesMapToStatusCodes) {
  EXPECT_EQ(CodeForSqlState("08006"), absl::StatusCode::kUnavailable);        // connection failure
  EXPECT_EQ(CodeForSqlState("57P01"), absl::StatusCode::kUnavailable);        // admin shutdown
  EXPECT_EQ(CodeForSqlState("53100"), absl::StatusCode::kResourceExhausted);  // disk full
  EXPECT_EQ(CodeForSqlState("40001"), absl::StatusCode::kAborted);  // serialization failure
  EXPECT_EQ(CodeForSqlState("40P01"), absl::StatusCode::kAborted);  // deadlock
  EXPECT_EQ(CodeForSqlState("28P01"), absl::StatusCode::kPermissionDenied);    // bad password
  EXPECT_EQ(CodeForSqlState("42501"), absl::StatusCode::kPermissionDenied);    // no privilege
  EXPECT_EQ(CodeForSqlState("23505"), absl::StatusCode::kFailedPrecondition);  // unique key
  EXPECT_EQ(CodeForSqlState("42P01"), absl::StatusCode::kInternal);            // undefined table
  EXPECT_EQ(CodeForSqlState(""), absl::StatusCode::kInternal);
}

TEST(PostgresUtilTest, RedactionHidesOnlyThePassword) {
  EXPECT_EQ(RedactPostgresUri("postgresql://weft:s3cret@db:5432/fed?sslmode=require"),
            "postgresql://weft:***@db:5432/fed?sslmode=require");
  EXPECT_EQ(RedactPostgresUri("postgres://db/fed?password=s3cret"),
            "postgres://db/fed?password=***");
  EXPECT_EQ(RedactPostgresUri("postgres://db/fed?user=weft&password=s3cret&x=1"),
            "postgres://db/fed?user=weft&password=***&x=1");
  // Not a password parameter: only a whole "password=" after '?' or '&' is one.
  EXPECT_EQ(RedactPostgresUri("postgres://db/fed?application_name=xpassword=1"),
            "postgres://db/fed?application_name=xpassword=1");
  EXPECT_EQ(RedactPostgresUri("postgresql://weft@db/fed"), "postgresql://weft@db/fed");
  EXPECT_EQ(RedactPostgresUri("postgresql://db:5432/fed"), "postgresql://db:5432/fed");
}

TEST(PostgresUtilTest, AUriWithAPasswordIsRefusedWithoutRepeatingIt) {
  for (const char* uri :
       {"postgresql://weft:hunter2@db/fed", "postgresql://weft@db/fed?password=hunter2"}) {
    absl::Status s = CheckUri(uri, "test store URI");
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_THAT(std::string(s.message()), StartsWith("test store URI 'postgresql://weft"));
    EXPECT_THAT(s.message(), HasSubstr("passfile"));
    EXPECT_THAT(s.message(), Not(HasSubstr("hunter2")));
  }
  EXPECT_TRUE(CheckUri("postgresql://weft@db/fed?passfile=/etc/weft/pgpass", "x").ok());
}

TEST(PostgresUtilTest, AUriLibpqCannotParseIsInvalid) {
  absl::Status s = CheckUri("postgresql://db/fed?no_such_option=1", "test store URI");
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              StartsWith("test store URI 'postgresql://db/fed?no_such_option=1': "));
  EXPECT_THAT(s.message(), HasSubstr("no_such_option"));
}

// Port 1 on the loopback interface: nothing listens, the connection is refused at once.
TEST(PostgresUtilTest, AnUnreachableServerIsUnavailableNamingTheStoreAndTheOperation) {
  Connection conn("postgresql://postgres@127.0.0.1:1/weft", {.store = "test store"});
  absl::Status connected = conn.Connect();
  EXPECT_TRUE(absl::IsUnavailable(connected)) << connected;
  EXPECT_THAT(std::string(connected.message()),
              StartsWith("test store 'postgresql://postgres@127.0.0.1:1/weft': connecting: "));

  bool ran = false;
  absl::Status s = conn.WithConnection("reading", [&](bool) {
    ran = true;
    return absl::OkStatus();
  });
  EXPECT_FALSE(ran);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(std::string(s.message()),
              StartsWith("test store 'postgresql://postgres@127.0.0.1:1/weft'"));
  EXPECT_THAT(s.message(), HasSubstr("(reading)"));
}

// A fresh process (the threadsafe death test style re-runs the test program) whose libpq cannot
// be loaded: the URI check and a connection name the flag, the URI and why.
TEST(PostgresUtilDeathTest, WithoutLibpqTheUriAndTheConnectionSayWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("WEFT_LIBPQ", "/no/such/libpq.so.5", 1);
        absl::Status checked = CheckUri("postgresql://weft:pw@db/fed", "--history-store");
        Connection conn("postgresql://db/fed", {.store = "history store"});
        absl::Status connected = conn.Connect();
        fprintf(stderr, "%s\n%s\n", checked.ToString().c_str(), connected.ToString().c_str());
        _exit(checked.code() == absl::StatusCode::kFailedPrecondition &&
                      connected.code() == absl::StatusCode::kFailedPrecondition
                  ? 3
                  : 4);
      },
      ::testing::ExitedWithCode(3),
      "--history-store 'postgresql://weft:\\*\\*\\*@db/fed': PostgreSQL's client library "
      "'/no/such/libpq.so.5' cannot be loaded.*history store 'postgresql://db/fed': "
      "PostgreSQL's client library");
}

}  // namespace
}  // namespace weft::store::pg
