// Copyright Weft authors. store/libpq.h: libpq opened at its first use, its PQ* functions
// forwarded, and the errors when it cannot be opened. What libpq does against a server is
// tested by the stores' conformance suites.
#include "store/libpq.h"

#include <libpq-fe.h>
#include <stdlib.h>

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::store {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(LibpqTest, OpensDebiansLibpqByItsSoname) {
  if (getenv("WEFT_LIBPQ") == nullptr) {
    EXPECT_EQ(LibpqPath(), "libpq.so.5");
  }
  EXPECT_TRUE(LoadLibpq().ok()) << LoadLibpq();
  EXPECT_TRUE(CheckLibpq("libpq.so.5").ok());
}

TEST(LibpqTest, TheForwardedFunctionsReachLibpq) {
  ASSERT_TRUE(LoadLibpq().ok()) << LoadLibpq();
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse("host=db.example port=5433 dbname=fed", &error);
  ASSERT_NE(options, nullptr);
  std::string port;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::string(o->keyword) == "port" && o->val != nullptr) port = o->val;
  }
  PQconninfoFree(options);
  EXPECT_EQ(port, "5433");

  EXPECT_EQ(PQconninfoParse("host=db bogus_keyword=1", &error), nullptr);
  ASSERT_NE(error, nullptr);
  EXPECT_THAT(std::string(error), HasSubstr("bogus_keyword"));
  PQfreemem(error);

  // Port 1 on loopback: nothing listens (and a non-root test cannot bind it).
  EXPECT_EQ(PQping("host=127.0.0.1 port=1 connect_timeout=2"), PQPING_NO_RESPONSE);
  PGconn* conn = PQconnectdb("host=127.0.0.1 port=1 connect_timeout=2");
  ASSERT_NE(conn, nullptr);
  EXPECT_EQ(PQstatus(conn), CONNECTION_BAD);
  EXPECT_THAT(std::string(PQerrorMessage(conn)), HasSubstr("127.0.0.1"));
  PQfinish(conn);
}

TEST(LibpqTest, FreeingNothingNeedsNoLibrary) {
  PQfinish(nullptr);
  PQclear(nullptr);
  PQfreemem(nullptr);
}

TEST(LibpqTest, AMissingLibraryIsNamedWithThePackageToInstall) {
  absl::Status s = CheckLibpq("/no/such/dir/libpq.so.5");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), AllOf(HasSubstr("'/no/such/dir/libpq.so.5' cannot be loaded"),
                                 HasSubstr("No such file"), HasSubstr("libpq5"),
                                 HasSubstr("WEFT_LIBPQ")));
}

TEST(LibpqTest, ALibraryThatIsNotLibpqIsRefusedNamingWhatItLacks) {
  absl::Status s = CheckLibpq("libz.so.1");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(),
              HasSubstr("'libz.so.1' is not PostgreSQL's client library libpq: it has no "
                        "PQconnectdb()"));
}

// A fresh process (the threadsafe death test style re-runs the test program) with WEFT_LIBPQ
// pointing nowhere: LoadLibpq says why, and a PQ* call anyway ends the program saying the same.
TEST(LibpqDeathTest, APqCallWithoutALoadableLibpqEndsTheProgramSayingWhy) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("WEFT_LIBPQ", "/no/such/libpq.so.5", 1);
        if (LoadLibpq().ok()) return;
        PQping("host=127.0.0.1 port=1");
      },
      "weft: PostgreSQL's client library '/no/such/libpq.so.5' cannot be loaded");
}

}  // namespace
}  // namespace weft::store
