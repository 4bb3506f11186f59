// Copyright Weft authors.
#include "common/reachable_host.h"

#include <unistd.h>

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(ReachableHostTest, AnAddressIsReachedAsItIs) {
  EXPECT_EQ(ReachableHost("10.213.7.1"), "10.213.7.1");
  EXPECT_EQ(ReachableHost("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(ReachableHost("rm1.example.com"), "rm1.example.com");
  EXPECT_EQ(ReachableHost("fe80::1"), "fe80::1");
}

TEST(ReachableHostTest, AWildcardIsReachedByThisMachinesHostName) {
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
  ASSERT_NE(name[0], '\0');
  for (const char* wildcard : {"0.0.0.0", "::", "[::]"}) {
    EXPECT_TRUE(IsWildcardHost(wildcard)) << wildcard;
    EXPECT_EQ(ReachableHost(wildcard), name) << wildcard;
  }
  EXPECT_FALSE(IsWildcardHost("0.0.0.1"));
  EXPECT_FALSE(IsWildcardHost(""));
}

TEST(ReachableHostTest, HostPortBracketsIpv6Literals) {
  EXPECT_EQ(HostPort("127.0.0.1", 8030), "127.0.0.1:8030");
  EXPECT_EQ(HostPort("rm.example", 0), "rm.example:0");
  EXPECT_EQ(HostPort("::1", 8030), "[::1]:8030");
  EXPECT_EQ(HostPort("[::1]", 8030), "[::1]:8030");
}

}  // namespace
}  // namespace weft
