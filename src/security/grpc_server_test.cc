// Copyright Weft authors.
#include "security/grpc_server.h"

#include <grpc/grpc.h>
#include <grpc/support/log.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/rm_failover.h"
#include "common/test_poll.h"
#include "gtest/gtest.h"
#include "security/test_generic_call.h"

namespace weft::security {
namespace {

// Answers "/weft.test.Conn/Echo" with its request at once; "/weft.test.Conn/Hang" never
// answers, and notes when the call is cancelled.
class ConnService : public grpc::CallbackGenericService {
 public:
  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Reactor(this, ctx->method() == "/weft.test.Conn/Hang");
  }
  absl::Notification hang_cancelled;

 private:
  class Reactor : public grpc::ServerGenericBidiReactor {
   public:
    Reactor(ConnService* service, bool hang) : service_(service), hang_(hang) {
      StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) {
        Finish(grpc::Status::OK);
      } else if (!hang_) {
        StartWriteAndFinish(&request_, grpc::WriteOptions(), grpc::Status::OK);
      }
    }
    void OnCancel() override {
      if (!hang_) return;
      service_->hang_cancelled.Notify();
      Finish(grpc::Status::CANCELLED);
    }
    void OnDone() override { delete this; }

   private:
    ConnService* service_;
    bool hang_;
    grpc::ByteBuffer request_;
  };
};

class ServerConnectionArgsTest : public ::testing::Test {
 protected:
  void StartServer(int max_connection_idle_ms) {
    grpc::ServerBuilder builder;
    SetServerConnectionArgs(&builder, max_connection_idle_ms);
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials());
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  grpc::Status Call(const std::string& method, std::chrono::milliseconds deadline) {
    std::string reply;
    return GenericUnaryCall(channel_, method, "ping", deadline, &reply);
  }

  ConnService service_;  // outlives server_
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  int port_ = 0;
};

// The server keeps no deadline timer of its own: the client's deadline still ends the call,
// and the server still learns that it was cancelled (so a handler does not wait forever).
TEST_F(ServerConnectionArgsTest, AClientsDeadlineStillCancelsTheServersCall) {
  StartServer(kServerMaxConnectionIdleMs);
  grpc::Status status = Call("/weft.test.Conn/Hang", std::chrono::milliseconds(200));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << status.error_message();
  EXPECT_TRUE(service_.hang_cancelled.WaitForNotificationWithTimeout(absl::Seconds(30)));
  // The connection itself is still good.
  EXPECT_TRUE(Call("/weft.test.Conn/Echo", std::chrono::seconds(30)).ok());
}

// Instead of keepalive pings, a connection without calls is closed by the server (GOAWAY):
// the client's channel leaves READY, and its next call connects again.
TEST_F(ServerConnectionArgsTest, AConnectionWithoutCallsIsClosedAfterTheIdleTime) {
  StartServer(/*max_connection_idle_ms=*/300);
  ASSERT_TRUE(Call("/weft.test.Conn/Echo", std::chrono::seconds(30)).ok());
  EXPECT_TRUE(
      PollUntil([&] { return channel_->GetState(false) != GRPC_CHANNEL_READY; }, absl::Seconds(30)))
      << "the idle connection was not closed";
  EXPECT_TRUE(Call("/weft.test.Conn/Echo", std::chrono::seconds(30)).ok());
}

// gRPC's log lines of its BDP estimator ("bdp[...]:start ..." when it sends a ping), counted;
// errors still go to stderr (gRPC declares no way back to its own log function).
std::atomic<int> bdp_log_lines{0};
void CountBdpLines(gpr_log_func_args* args) {
  if (std::strncmp(args->message, "bdp[", 4) == 0) {
    bdp_log_lines.fetch_add(1);
  } else if (args->severity >= GPR_LOG_SEVERITY_ERROR) {
    std::fprintf(stderr, "E %s:%d] %s\n", args->file, args->line, args->message);
  }
}

// Turns gRPC's BDP-estimator trace on and sends its lines to CountBdpLines while alive.
class CountingBdpLines {
 public:
  CountingBdpLines() {
    grpc_tracer_set_enabled("bdp_estimator", 1);
    gpr_set_log_verbosity(GPR_LOG_SEVERITY_DEBUG);
    gpr_set_log_function(CountBdpLines);
  }
  ~CountingBdpLines() {
    gpr_set_log_verbosity(GPR_LOG_SEVERITY_ERROR);  // gRPC's default
    grpc_tracer_set_enabled("bdp_estimator", 0);
  }
  CountingBdpLines(const CountingBdpLines&) = delete;
  CountingBdpLines& operator=(const CountingBdpLines&) = delete;
};

// Neither the RM's servers nor its clients (SetFastReconnectArgs) probe the bandwidth-delay
// product: with it on, gRPC sends PINGs along with small calls, which the peer answers (under
// 10,000 heartbeats/s, one with about every other heartbeat: twice the TLS records and syscalls
// of a heartbeat on both ends). Each stream keeps gRPC's fixed 64 KiB window instead.
TEST_F(ServerConnectionArgsTest, NeitherEndProbesTheBandwidthDelayProduct) {
  CountingBdpLines counting;
  StartServer(kServerMaxConnectionIdleMs);
  channel_ = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port_),
                                       grpc::InsecureChannelCredentials(),
                                       FastReconnectChannelArgs());
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(Call("/weft.test.Conn/Echo", std::chrono::seconds(30)).ok()) << "call " << i;
  }
  EXPECT_EQ(bdp_log_lines.load(), 0) << "gRPC sent bandwidth-delay-product pings";
}

}  // namespace
}  // namespace weft::security
