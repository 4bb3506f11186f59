// Copyright Weft authors. Tests of the NM's device assignment ledger.
#include "nm/devices/device_ledger.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace weft::nm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::Device Gpu(int32_t index, int32_t minor, bool healthy = true) {
  v1::Device d;
  d.set_type("gpu");
  d.set_index(index);
  d.set_path("/dev/nvidia" + std::to_string(index));
  d.set_device_major(1);
  d.set_device_minor(minor);
  d.set_healthy(healthy);
  return d;
}

DeviceLedger FourGpus() {
  DeviceLedger ledger;
  ledger.SetDevices({Gpu(0, 5), Gpu(1, 7), Gpu(2, 8), Gpu(3, 9)});
  return ledger;
}

TEST(DeviceLedgerTest, WholeDeviceThenOvercommitRefused) {
  DeviceLedger ledger = FourGpus();
  EXPECT_EQ(ledger.HealthyCount("gpu"), 4);
  ASSERT_TRUE(ledger.Assign("c1", {{"gpu", 1, 1000}}, 1000).ok());
  EXPECT_EQ(ledger.HeldMilli("gpu", 1), 1000);
  absl::Status s = ledger.Assign("c2", {{"gpu", 1, 500}}, 500);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("container c2"));
  EXPECT_THAT(s.message(), HasSubstr("device gpu:1, of which running containers hold 1000"));
  EXPECT_THAT(ledger.Held("c2"), IsEmpty());  // nothing recorded
  ledger.Release("c1");
  EXPECT_EQ(ledger.HeldMilli("gpu", 1), 0);
  EXPECT_TRUE(ledger.Assign("c2", {{"gpu", 1, 500}}, 500).ok());
}

TEST(DeviceLedgerTest, TwoHalvesShareOneDeviceAThirdDoesNot) {
  DeviceLedger ledger = FourGpus();
  ASSERT_TRUE(ledger.Assign("a", {{"gpu", 0, 500}}, 500).ok());
  ASSERT_TRUE(ledger.Assign("b", {{"gpu", 0, 500}}, 500).ok());
  EXPECT_EQ(ledger.HeldMilli("gpu", 0), 1000);
  EXPECT_FALSE(ledger.Assign("c", {{"gpu", 0, 1}}, 1).ok());
  ASSERT_EQ(ledger.Assignments("a").size(), 1u);
  EXPECT_EQ(ledger.Assignments("a")[0].milli(), 500);
  EXPECT_EQ(ledger.Assign("a", {{"gpu", 2, 500}}, 500).code(), absl::StatusCode::kAlreadyExists);
}

TEST(DeviceLedgerTest, RefusesUnknownUnhealthyAndWrongTotals) {
  DeviceLedger ledger;
  ledger.SetDevices({Gpu(0, 5), Gpu(1, 7, /*healthy=*/false)});
  absl::Status unknown = ledger.Check("c1", {{"gpu", 7, 1000}}, 1000);
  EXPECT_THAT(unknown.message(), HasSubstr("container c1: its token grants device gpu:7, which "
                                           "this node does not have"));
  absl::Status unhealthy = ledger.Check("c1", {{"gpu", 1, 1000}}, 1000);
  EXPECT_THAT(unhealthy.message(), HasSubstr("gpu:1 (/dev/nvidia1), which is unhealthy"));
  absl::Status total = ledger.Check("c1", {{"gpu", 0, 500}}, 1000);
  EXPECT_EQ(total.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(total.message(), HasSubstr("gpu-milli=1000 but grants devices totalling 500"));
  EXPECT_FALSE(ledger.Check("c1", {}, 500).ok());                   // asks, gets nothing
  EXPECT_FALSE(ledger.Check("c1", {{"gpu", 0, 500}}, 0).ok());      // gets, did not ask
  EXPECT_TRUE(ledger.Check("c1", {}, 0).ok());
}

TEST(DeviceLedgerTest, DeniedForIsEveryOtherDeviceNode) {
  DeviceLedger ledger = FourGpus();
  auto numbers = [](const std::vector<DeviceNumber>& v) {
    std::vector<int32_t> minors;
    for (const DeviceNumber& n : v) minors.push_back(n.minor);
    return minors;
  };
  EXPECT_THAT(numbers(ledger.DeniedFor({})), ElementsAre(5, 7, 8, 9));
  EXPECT_THAT(numbers(ledger.DeniedFor({{"gpu", 2, 500}})), ElementsAre(5, 7, 9));
  EXPECT_THAT(numbers(ledger.DeniedFor({{"gpu", 0, 1000}, {"gpu", 3, 1000}})), ElementsAre(7, 8));
}

TEST(DeviceLedgerTest, SetDevicesReportsHealthChangesAndKeepsVanishedOnes) {
  DeviceLedger ledger;
  EXPECT_EQ(ledger.SetDevices({Gpu(0, 5), Gpu(1, 7)}).size(), 2u);  // new: both
  EXPECT_THAT(ledger.SetDevices({Gpu(0, 5), Gpu(1, 7)}), IsEmpty());
  std::vector<v1::Device> changed = ledger.SetDevices({Gpu(0, 5)});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].index(), 1);
  EXPECT_FALSE(changed[0].healthy());
  EXPECT_EQ(ledger.devices().size(), 2u);
  EXPECT_EQ(ledger.HealthyCount("gpu"), 1);
  changed = ledger.SetDevices({Gpu(0, 5), Gpu(1, 7)});
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_TRUE(changed[0].healthy());
}

TEST(DeviceLedgerTest, RestoreRecordsEvenWhatItWouldRefuse) {
  DeviceLedger ledger = FourGpus();
  ASSERT_TRUE(ledger.Assign("a", {{"gpu", 0, 1000}}, 1000).ok());
  std::vector<std::string> problems = ledger.Restore("b", {{"gpu", 0, 500}, {"gpu", 9, 1000}});
  EXPECT_EQ(problems.size(), 2u);
  EXPECT_EQ(ledger.Held("b").size(), 2u);
  EXPECT_TRUE(ledger.Restore("c", {{"gpu", 1, 1000}}).empty());
  EXPECT_EQ(ledger.HeldMilli("gpu", 1), 1000);
}

}  // namespace
}  // namespace weft::nm
