// Copyright Weft authors.
#include "common/device_share.h"

#include "gtest/gtest.h"

namespace weft {
namespace {

TEST(DeviceShareTest, RoundTrips) {
  DeviceShare s{"gpu", 3, 500};
  EXPECT_EQ(FormatDeviceShare(s), "gpu:3=500");
  absl::StatusOr<DeviceShare> back = ParseDeviceShare("gpu:3=500");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
}

TEST(DeviceShareTest, RefusesMalformedNamingWhatIsWrong) {
  for (const char* text : {"gpu", "gpu:1", "gpu=1:2", ":0=1", "GPU:0=1", "gpu:-1=5", "gpu:x=5",
                           "gpu:0=0", "gpu:0=1001", "gpu:0=", "gpu:0=5x"}) {
    absl::StatusOr<DeviceShare> s = ParseDeviceShare(text);
    EXPECT_FALSE(s.ok()) << text;
    EXPECT_NE(s.status().message().find(text), std::string::npos) << s.status();
  }
  EXPECT_NE(ParseDeviceShare("gpu:0=0").status().message().find("1 to 1000"), std::string::npos);
}

TEST(DeviceShareTest, AGrantNamesEachDeviceOnceAndSeveralOnlyWhole) {
  auto ok = ParseDeviceShares({"gpu:0=1000", "gpu:2=1000"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(TotalMilli(*ok, "gpu"), 2000);
  EXPECT_EQ(TotalMilli(*ok, "fpga"), 0);
  EXPECT_TRUE(ParseDeviceShares({"gpu:1=250"}).ok());
  EXPECT_TRUE(ParseDeviceShares({}).ok());
  auto twice = ParseDeviceShares({"gpu:0=500", "gpu:0=500"});
  EXPECT_NE(twice.status().message().find("named twice"), std::string::npos) << twice.status();
  auto partial = ParseDeviceShares({"gpu:0=1000", "gpu:1=500"});
  EXPECT_NE(partial.status().message().find("gpu:1=500"), std::string::npos) << partial.status();
}

}  // namespace
}  // namespace weft
