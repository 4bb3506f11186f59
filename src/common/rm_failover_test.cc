// Copyright Weft authors. The RM address list, and following the active RM: the standby's
// hint (also read back from a real gRPC call's trailing metadata), round robin, and the codes
// that do not fail over.
#include "common/rm_failover.h"

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "weft/v1/admin.grpc.pb.h"

namespace weft {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const grpc::Status kUnavailable(grpc::StatusCode::UNAVAILABLE, "standby");

TEST(ParseRmAddressesTest, OneAddressOrAListWithWhitespaceTrimmed) {
  EXPECT_THAT(*ParseRmAddresses("127.0.0.1:8032"), ElementsAre("127.0.0.1:8032"));
  EXPECT_THAT(*ParseRmAddresses(" rm1:8032 , rm2:8032,[::1]:9000 "),
              ElementsAre("rm1:8032", "rm2:8032", "[::1]:9000"));
}

TEST(ParseRmAddressesTest, BadEntriesAreNamed) {
  struct Case {
    const char* list;
    const char* error;
  };
  for (const Case& c : {
           Case{"", "is empty"},
           Case{"  ", "is empty"},
           Case{"a:1,,b:2", "entry 2 is empty"},
           Case{"a:1,", "entry 2 is empty"},
           Case{"rm1", "'rm1': no ':PORT'"},
           Case{"rm1:", "'rm1:': no port"},
           Case{":8032", "':8032': no host"},
           Case{"rm1:http", "port 'http' is not a number in 1..65535"},
           Case{"rm1:0", "port '0' is not a number"},
           Case{"rm1:65536", "port '65536' is not a number"},
           Case{"rm1:-1", "port '-1'"},
           Case{"::1:8032", "IPv6"},
           Case{"a b:1", "the host has a ' '"},
           Case{"rm1:8032, rm1:8032", "'rm1:8032' is listed twice"},
       }) {
    absl::StatusOr<std::vector<std::string>> parsed = ParseRmAddresses(c.list);
    ASSERT_FALSE(parsed.ok()) << c.list;
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.list;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.error)) << c.list;
  }
}

TEST(RmFailoverTest, StartsAtTheFirstAddress) {
  absl::StatusOr<RmFailover> f = RmFailover::Create("a:1,b:2,c:3");
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->current(), "a:1");
  EXPECT_TRUE(f->ha());
  EXPECT_FALSE(RmFailover::Create("a:1,a:1").ok());
}

TEST(RmFailoverTest, UnavailableWithoutAHintMovesRoundRobin) {
  RmFailover f({"a:1", "b:2", "c:3"});
  EXPECT_EQ(f.OnFailure(kUnavailable, ""), RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "b:2");
  EXPECT_EQ(f.OnFailure(kUnavailable, ""), RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "c:3");
  EXPECT_EQ(f.OnFailure(kUnavailable, ""), RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "a:1");
}

TEST(RmFailoverTest, TheStandbysHintIsFollowed) {
  RmFailover f({"a:1", "b:2", "c:3"});
  EXPECT_EQ(f.OnFailure(kUnavailable, "c:3"), RmFailoverAction::kActiveRm);
  EXPECT_EQ(f.current(), "c:3");
  // A hint outside the list, or naming the RM that just failed, is not followed.
  EXPECT_EQ(f.OnFailure(kUnavailable, "elsewhere:9"), RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "a:1");
  EXPECT_EQ(f.OnFailure(kUnavailable, "a:1"), RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "b:2");
}

TEST(RmFailoverTest, DeadlineExceededFailsOverToo) {
  RmFailover f({"a:1", "b:2"});
  EXPECT_EQ(f.OnFailure(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "slow"), ""),
            RmFailoverAction::kNextRm);
  EXPECT_EQ(f.current(), "b:2");
}

TEST(RmFailoverTest, TheRmsOwnAnswersDoNotFailOver) {
  RmFailover f({"a:1", "b:2"});
  for (grpc::StatusCode code :
       {grpc::StatusCode::OK, grpc::StatusCode::NOT_FOUND, grpc::StatusCode::PERMISSION_DENIED,
        grpc::StatusCode::INVALID_ARGUMENT, grpc::StatusCode::ALREADY_EXISTS,
        grpc::StatusCode::FAILED_PRECONDITION, grpc::StatusCode::CANCELLED,
        grpc::StatusCode::UNAUTHENTICATED, grpc::StatusCode::INTERNAL}) {
    EXPECT_EQ(f.OnFailure(grpc::Status(code, "answer"), "b:2"), RmFailoverAction::kNone) << code;
    EXPECT_EQ(f.current(), "a:1");
  }
}

TEST(RmFailoverTest, OneRmHasNothingToFailOverTo) {
  RmFailover f({"a:1"});
  EXPECT_FALSE(f.ha());
  EXPECT_EQ(f.OnFailure(kUnavailable, "a:1"), RmFailoverAction::kNone);
  EXPECT_EQ(f.OnFailure(kUnavailable, "b:2"), RmFailoverAction::kNone);
  EXPECT_EQ(f.current(), "a:1");
}

TEST(RmFailoverTest, FastReconnectArgsAreSet) {
  grpc::ChannelArguments args = FastReconnectChannelArgs();
  grpc_channel_args c = args.c_channel_args();
  int found = 0;
  for (size_t i = 0; i < c.num_args; ++i) {
    const std::string key = c.args[i].key;
    if (key == GRPC_ARG_MAX_RECONNECT_BACKOFF_MS) {
      EXPECT_EQ(c.args[i].value.integer, kRmReconnectMaxBackoffMs);
      ++found;
    } else if (key == GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS) {
      EXPECT_EQ(c.args[i].value.integer, 100);
      ++found;
    } else if (key == GRPC_ARG_MIN_RECONNECT_BACKOFF_MS) {
      EXPECT_EQ(c.args[i].value.integer, kRmMinConnectTimeoutMs);
      EXPECT_GE(c.args[i].value.integer, 1000) << "gRPC's connect timeout: handshakes need time";
      ++found;
    }
  }
  EXPECT_EQ(found, 3);
}

// A standby as the RM answers: UNAVAILABLE naming the active in the trailing metadata.
class StandbyAdminService final : public v1::AdminService::Service {
 public:
  explicit StandbyAdminService(std::string active) : active_(std::move(active)) {}
  grpc::Status RefreshQueues(grpc::ServerContext* context, const v1::RefreshQueuesRequest*,
                             v1::RefreshQueuesResponse*) override {
    if (!active_.empty()) context->AddTrailingMetadata(kActiveRmMetadata, active_);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "ResourceManager rm2 is standby");
  }

 private:
  std::string active_;
};

TEST(RmFailoverTest, TheHintIsReadFromTheCallsTrailingMetadata) {
  StandbyAdminService standby("127.0.0.1:40001");
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&standby);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);
  const std::string standby_address = absl::StrCat("127.0.0.1:", port);
  auto stub = v1::AdminService::NewStub(grpc::CreateCustomChannel(
      standby_address, grpc::InsecureChannelCredentials(), FastReconnectChannelArgs()));

  // Wait for the connection: under load (CI's sanitizer run) the first connect can fail
  // transiently, and a fail-fast call would return gRPC's own UNAVAILABLE, with no hint.
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  v1::RefreshQueuesResponse resp;
  grpc::Status s = stub->RefreshQueues(&ctx, {}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ActiveRmHint(ctx), "127.0.0.1:40001");
  RmFailover f({standby_address, "127.0.0.1:40001"});
  EXPECT_EQ(f.OnFailure(s, ctx), RmFailoverAction::kActiveRm);
  EXPECT_EQ(f.current(), "127.0.0.1:40001");

  // A refused connection carries no hint.
  server->Shutdown();
  grpc::ClientContext refused;
  s = stub->RefreshQueues(&refused, {}, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(ActiveRmHint(refused), "");
}

}  // namespace
}  // namespace weft
