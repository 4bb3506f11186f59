// SimNmHeartbeats against a TrackerService that answers late: the simulated nodes keep their
// own schedule whatever the RM's latency (the load is the nodes', not the simulator's threads'):
// a fixed timetable, or one interval after each reply (the one the RM told, if it told one) as
// NMs do; a node never has two heartbeats in flight, hears each reply before its next
// heartbeat, and Stop waits for the calls in flight. Also the report a child sends its parent.
#include "rm/nm_sim.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using Clock = std::chrono::steady_clock;

// Answers every heartbeat `delay` after it arrived (from a thread of its own, so no gRPC thread
// is held), with response id = the request's + 1. Counts per node what is in flight and the
// most ever in flight at once, and the response ids that went out of order.
class SlowTracker final : public v1::TrackerService::CallbackService {
 public:
  // `status`: what every heartbeat is answered with.
  // `told_interval_ms`: the next_heartbeat_interval_ms every reply carries (0: none).
  explicit SlowTracker(std::chrono::milliseconds delay, grpc::Status status = grpc::Status::OK,
                       int64_t told_interval_ms = 0)
      : delay_(delay), status_(std::move(status)), told_interval_ms_(told_interval_ms) {
    answerer_ = std::thread([this] { Answer(); });
  }
  ~SlowTracker() override { Stop(); }

  // Answers every call still waiting (CANCELLED) and stops the answering thread. Idempotent.
  // Before the server shuts down: no reactor may be finished after the server let go of it.
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (answerer_.joinable()) answerer_.join();
  }

  grpc::ServerUnaryReactor* NodeHeartbeat(grpc::CallbackServerContext* ctx,
                                          const v1::NodeHeartbeatRequest* req,
                                          v1::NodeHeartbeatResponse* resp) override {
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    std::lock_guard<std::mutex> l(mu_);
    const std::string& node = req->node_id();
    max_in_flight_ = std::max(max_in_flight_, ++in_flight_[node]);
    auto last = last_response_id_.find(node);
    if (last != last_response_id_.end() && req->response_id() != last->second) ++out_of_order_;
    last_response_id_[node] = req->response_id() + 1;
    resp->set_response_id(req->response_id() + 1);
    if (told_interval_ms_ > 0) resp->set_next_heartbeat_interval_ms(told_interval_ms_);
    ++received_;
    pending_.push_back({Clock::now() + delay_, reactor, node});
    cv_.notify_all();
    return reactor;
  }

  int max_in_flight() {
    std::lock_guard<std::mutex> l(mu_);
    return max_in_flight_;
  }
  int64_t out_of_order() {
    std::lock_guard<std::mutex> l(mu_);
    return out_of_order_;
  }
  int64_t received() {
    std::lock_guard<std::mutex> l(mu_);
    return received_;
  }
  size_t unanswered() {
    std::lock_guard<std::mutex> l(mu_);
    return pending_.size();
  }

 private:
  struct Pending {
    Clock::time_point due;
    grpc::ServerUnaryReactor* reactor;
    std::string node;
  };
  void Answer() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      if (pending_.empty()) {
        cv_.wait(l);
        continue;
      }
      if (pending_.front().due > Clock::now()) {
        cv_.wait_until(l, pending_.front().due);
        continue;
      }
      Pending p = std::move(pending_.front());
      pending_.pop_front();
      --in_flight_[p.node];
      p.reactor->Finish(status_);
    }
    for (Pending& p : pending_) p.reactor->Finish(grpc::Status::CANCELLED);
    pending_.clear();
  }

  const std::chrono::milliseconds delay_;
  const grpc::Status status_;
  const int64_t told_interval_ms_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Pending> pending_;  // in arrival order, so in due order
  std::map<std::string, int> in_flight_;
  std::map<std::string, int32_t> last_response_id_;
  int max_in_flight_ = 0;
  int64_t out_of_order_ = 0;
  int64_t received_ = 0;
  bool stop_ = false;
  std::thread answerer_;
};

class SimNmHeartbeatsTest : public ::testing::Test {
 protected:
  void StartServer(std::chrono::milliseconds delay, int32_t nodes,
                   grpc::Status status = grpc::Status::OK, int64_t told_interval_ms = 0) {
    tracker_ = std::make_unique<SlowTracker>(delay, std::move(status), told_interval_ms);
    grpc::ServerBuilder b;
    int port = 0;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(tracker_.get());
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::TrackerService::NewStub(grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                                            grpc::InsecureChannelCredentials()));
    nodes_ = std::vector<SimNmNode>(static_cast<size_t>(nodes));
    for (int32_t i = 0; i < nodes; ++i) {
      nodes_[static_cast<size_t>(i)].Register(i, Resource::Of(1024, 1));
      nodes_[static_cast<size_t>(i)].stub = stub_.get();
    }
  }
  // Every call answered first, then the client's channel closed, then the server shut down
  // (with a bound): gRPC 1.51 freed a completion queue twice under ASan when the server shut
  // down at once while calls were still being finished by the tracker's thread.
  void TearDown() override {
    if (tracker_) tracker_->Stop();
    for (SimNmNode& n : nodes_) n.stub = nullptr;
    stub_.reset();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  }

  // Heartbeats the nodes every `interval` by `schedule` for `run`, measuring the first second,
  // and returns what was measured.
  SimNmTally MeasureFirstSecond(std::chrono::milliseconds interval, SimNmSchedule schedule,
                                std::chrono::milliseconds run) {
    SimNmHeartbeats hb(&nodes_, interval, schedule);
    hb.Measure(Clock::now(), std::chrono::seconds(1));
    std::this_thread::sleep_for(run);
    return hb.Stop();
  }

  std::unique_ptr<SlowTracker> tracker_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::TrackerService::Stub> stub_;
  std::vector<SimNmNode> nodes_;
};

// 200 nodes every 100 ms against an RM answering in 50 ms, on a fixed timetable: 2,000
// heartbeats a second offered, about 100 in flight at once. A synchronous sender with T threads
// would send at most T / 50 ms (80 a second with 4); the driver sends them on the nodes'
// schedule, so more than one interval + reply time (1,333 a second) would allow.
TEST_F(SimNmHeartbeatsTest, TheNodesScheduleSetsTheLoadNotTheRmsLatency) {
  StartServer(std::chrono::milliseconds(50), 200);
  SimNmTally t = MeasureFirstSecond(std::chrono::milliseconds(100), SimNmSchedule::kFixed,
                                    std::chrono::milliseconds(1200));
  // Five times what a synchronous sender could (80): the load is the schedule's, not the RM's
  // latency. Not the full 2,000: a loaded machine (ASan, a parallel ctest) sends late, and the
  // test states behaviour, not speed (docs/performance.md measures that).
  EXPECT_GT(t.heartbeats, 400);
  EXPECT_LE(t.heartbeats, 2000 + 200);  // one per node per interval at most (+ one each)
  EXPECT_EQ(t.errors, 0);
  EXPECT_EQ(static_cast<int64_t>(t.latencies_ms.size()), t.heartbeats);
  EXPECT_EQ(t.send_lags_ms.size(), t.latencies_ms.size());
  for (double ms : t.latencies_ms) EXPECT_GE(ms, 45.0);  // answered after the RM's delay
  for (double ms : t.send_lags_ms) EXPECT_GE(ms, 0.0);   // never sent before it was due
  EXPECT_EQ(tracker_->max_in_flight(), 1);
  EXPECT_EQ(tracker_->out_of_order(), 0);  // each reply heard before the next heartbeat
}

// The same nodes and RM as NMs schedule them: one interval after each reply, so each node sends
// one per 150 ms (1,333 a second in all), not one per 100 ms, and still never two at once.
TEST_F(SimNmHeartbeatsTest, AfterReplyANodeWaitsOneIntervalAfterEachReply) {
  StartServer(std::chrono::milliseconds(50), 200);
  SimNmTally t = MeasureFirstSecond(std::chrono::milliseconds(100), SimNmSchedule::kAfterReply,
                                    std::chrono::milliseconds(1200));
  EXPECT_GT(t.heartbeats, 400);         // as above: far more than a synchronous sender's 80
  EXPECT_LE(t.heartbeats, 1333 + 200);  // one per node per 150 ms at most (+ one each)
  EXPECT_EQ(t.errors, 0);
  for (double ms : t.latencies_ms) EXPECT_GE(ms, 45.0);
  EXPECT_EQ(tracker_->max_in_flight(), 1);
  EXPECT_EQ(tracker_->out_of_order(), 0);
}

// After-reply, a node takes the interval the RM tells it (adaptive heartbeat intervals): told
// 400 ms with 10 ms replies, 20 nodes send about 3 each in a second, not the 9 that their
// configured 100 ms would give.
TEST_F(SimNmHeartbeatsTest, AfterReplyANodeTakesTheIntervalTheRmTellsIt) {
  StartServer(std::chrono::milliseconds(10), 20, grpc::Status::OK, /*told_interval_ms=*/400);
  SimNmTally t = MeasureFirstSecond(std::chrono::milliseconds(100), SimNmSchedule::kAfterReply,
                                    std::chrono::milliseconds(1100));
  EXPECT_GE(t.heartbeats, 20);      // each node's first
  EXPECT_LE(t.heartbeats, 20 * 4);  // at most one per 410 ms after it (+ one)
  EXPECT_EQ(tracker_->max_in_flight(), 1);
}

// An RM slower than the interval, on a fixed timetable: each node sends its next heartbeat on
// the reply (never two at once), so a node sends one per reply time, not one per interval.
TEST_F(SimNmHeartbeatsTest, ALateReplyDelaysTheNodesNextHeartbeatNeverOverlapsIt) {
  StartServer(std::chrono::milliseconds(250), 20);
  SimNmTally t = MeasureFirstSecond(std::chrono::milliseconds(50), SimNmSchedule::kFixed,
                                    std::chrono::milliseconds(1100));
  EXPECT_EQ(tracker_->max_in_flight(), 1);
  EXPECT_EQ(tracker_->out_of_order(), 0);
  // At most one per node per 250 ms reply (4 in the second, +1 started before its end), far
  // below the 20 per node an interval of 50 ms would send.
  EXPECT_LE(t.heartbeats, 20 * 5);
  EXPECT_GE(t.heartbeats, 20);
}

// A simulator held up while a heartbeat is due (here the node's lock, held for 500 ms, as by
// whoever places a container on it) sends it late: that shows as the heartbeat's send lag, not
// as its latency, which is the RM's.
TEST_F(SimNmHeartbeatsTest, ASimulatorHeldUpShowsAsSendLagNotAsLatency) {
  StartServer(std::chrono::milliseconds(5), 1);
  SimNmHeartbeats hb(&nodes_, std::chrono::milliseconds(50), SimNmSchedule::kAfterReply);
  hb.Measure(Clock::now(), std::chrono::seconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  {
    std::lock_guard<std::mutex> l(nodes_[0].mu);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  SimNmTally t = hb.Stop();
  ASSERT_GE(t.heartbeats, 4);
  ASSERT_EQ(t.send_lags_ms.size(), t.latencies_ms.size());
  const size_t late = static_cast<size_t>(
      std::max_element(t.send_lags_ms.begin(), t.send_lags_ms.end()) - t.send_lags_ms.begin());
  // Due 50 ms after the reply before the hold (later only if that reply took 150 ms more than
  // the RM's 5), sent once the hold ends; the RM answered it in about 5 ms.
  EXPECT_GE(t.send_lags_ms[late], 300.0);
  EXPECT_LT(t.latencies_ms[late], 250.0);
  for (double ms : t.send_lags_ms) EXPECT_GE(ms, 0.0);
}

// An RM that refuses every heartbeat: each is counted as an error (its completions as not
// reported), and the nodes keep their schedule, one call at a time.
TEST_F(SimNmHeartbeatsTest, RefusedHeartbeatsAreCountedAsErrors) {
  StartServer(std::chrono::milliseconds(10), 20,
              grpc::Status(grpc::StatusCode::UNAVAILABLE, "the RM is down"));
  nodes_[0].running.emplace_back(Clock::now(), "container_1");  // due at the first heartbeat
  SimNmHeartbeats hb(&nodes_, std::chrono::milliseconds(100), SimNmSchedule::kAfterReply);
  hb.Measure(Clock::now() - std::chrono::seconds(1), std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  SimNmTally t = hb.Stop();
  EXPECT_GE(t.heartbeats, 20);
  EXPECT_EQ(t.errors, t.heartbeats);
  EXPECT_EQ(t.completed, 0);
  EXPECT_EQ(tracker_->max_in_flight(), 1);
}

// Stop returns only once every call in flight has been answered (their state is then no longer
// touched), and sends nothing after.
TEST_F(SimNmHeartbeatsTest, StopWaitsForTheCallsInFlight) {
  StartServer(std::chrono::milliseconds(300), 50);
  SimNmHeartbeats hb(&nodes_, std::chrono::milliseconds(100), SimNmSchedule::kFixed);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_GT(tracker_->unanswered(), 0u);
  SimNmTally t = hb.Stop();
  EXPECT_EQ(t.heartbeats, 0);  // nothing was measured
  EXPECT_EQ(tracker_->unanswered(), 0u);
  const int64_t received = tracker_->received();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(tracker_->received(), received);
  EXPECT_EQ(hb.Stop().heartbeats, 0);  // idempotent
}

// What a child reports reaches the parent whole, its CPU included; a report without its CPU
// (another build's) is refused, naming the field.
TEST(NmSimReportTest, TheChildsReportRoundTripsAndOneWithoutItsCpuIsRefused) {
  NmSimReport r;
  r.nodes = 3;
  r.first_index = 7;
  r.duration_s = 2;
  r.heartbeats = 6;
  r.heartbeats_per_s = 3;
  r.rpc_errors = 1;
  r.containers_completed = 4;
  r.process_cpu_per_s = 0.25;
  r.heartbeat_samples_ms = {1, 2};
  r.send_lag_samples_ms = {0.5, 0.5};
  absl::StatusOr<NmSimReport> back = NmSimReport::FromJson(r.ToJson(/*samples=*/true));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->nodes, 3);
  EXPECT_EQ(back->heartbeats, 6);
  EXPECT_EQ(back->rpc_errors, 1);
  EXPECT_EQ(back->containers_completed, 4);
  EXPECT_DOUBLE_EQ(back->process_cpu_per_s, 0.25);
  EXPECT_DOUBLE_EQ(back->heartbeat.mean, 1.5);
  EXPECT_NE(r.ToText().find("process CPU: 0.25 s per s"), std::string::npos) << r.ToText();

  std::string without = r.ToJson(/*samples=*/true);
  const size_t at = without.find(",\"process_cpu_per_s\":0.25");
  ASSERT_NE(at, std::string::npos) << without;
  without.erase(at, std::string(",\"process_cpu_per_s\":0.25").size());
  absl::StatusOr<NmSimReport> refused = NmSimReport::FromJson(without);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("process_cpu_per_s"), std::string::npos)
      << refused.status();
}

}  // namespace
}  // namespace weft::rm
