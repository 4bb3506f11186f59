// Copyright Weft authors. ZooKeeper node names for arbitrary bytes.
#include "store/zk_names.h"

#include <string>

#include "gtest/gtest.h"

namespace weft::store::zk {
namespace {

TEST(ZkNamesTest, NodeNamesKeepSafeBytesAndEscapeTheRest) {
  EXPECT_EQ(EscapeNodeName("application_1700000000000_0001"), "application_1700000000000_0001");
  EXPECT_EQ(EscapeNodeName("a/b"), "a%2Fb");
  EXPECT_EQ(EscapeNodeName(".."), "%2E%2E");
  EXPECT_EQ(EscapeNodeName("%"), "%25");
  EXPECT_EQ(EscapeNodeName(std::string("\0\xff", 2)), "%00%FF");
  EXPECT_EQ(EscapeNodeName("zookeeper"), "zookeeper");  // Reserved only as a child of "/".
}

TEST(ZkNamesTest, EveryByteRoundTripsThroughANodeName) {
  std::string all;
  for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
  const std::string name = EscapeNodeName(all);
  EXPECT_EQ(name.find_first_of("/."), std::string::npos);
  absl::StatusOr<std::string> back = UnescapeNodeName(name);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, all);
}

TEST(ZkNamesTest, UnescapeRejectsNamesEscapeCannotProduce) {
  for (const char* name : {"%", "%4", "%zz", "%2f", "%41", "a.b", "a b", "a/b"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<std::string> back = UnescapeNodeName(name);
    EXPECT_EQ(back.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace weft::store::zk
