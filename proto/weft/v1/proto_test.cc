// The generated protocol code links and round-trips (field numbers are an interface).
#include "gtest/gtest.h"
#include "weft/v1/am.pb.h"
#include "weft/v1/client.grpc.pb.h"

namespace weft {
namespace {

TEST(ProtoTest, AllocateRequestRoundTrips) {
  v1::AllocateRequest req;
  req.set_response_id(7);
  v1::ResourceRequest* ask = req.add_asks();
  ask->set_priority(1);
  ask->set_resource_name("*");
  (*ask->mutable_capability()->mutable_values())["memory-mb"] = 2048;
  ask->set_num_containers(3);
  ask->set_relax_locality(true);
  req.add_releases("container_e1_1_0001_01_000002");
  std::string wire = req.SerializeAsString();
  v1::AllocateRequest back;
  ASSERT_TRUE(back.ParseFromString(wire));
  EXPECT_EQ(back.response_id(), 7);
  EXPECT_EQ(back.asks(0).capability().values().at("memory-mb"), 2048);
  EXPECT_EQ(back.releases(0), "container_e1_1_0001_01_000002");
  // Garbage is refused, not crashed on.
  EXPECT_FALSE(back.ParseFromString(std::string("\xff\xff\xff\xff", 4)));
}

TEST(ProtoTest, ServiceStubsExist) {
  EXPECT_STREQ(v1::ClientService::service_full_name(), "weft.v1.ClientService");
}

}  // namespace
}  // namespace weft
