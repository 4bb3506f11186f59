#include "rm/nm_sim.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/rm_failover.h"
#include "nlohmann/json.hpp"
#include "security/tls.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using Clock = std::chrono::steady_clock;

// Deadline of one RegisterNodeManager (it includes the connection's TLS handshake), ms.
constexpr int64_t kRegisterTimeoutMs = 60000;

// The measured interval's start, ns on Clock since its epoch; 0 until "start".
class StartTime {
 public:
  // True when this set it (the first call).
  bool Set(Clock::time_point t) {
    int64_t zero = 0;
    return ns_.compare_exchange_strong(zero, t.time_since_epoch().count());
  }
  bool started() const { return ns_.load() != 0; }
  Clock::time_point get() const { return Clock::time_point(Clock::duration(ns_.load())); }

 private:
  std::atomic<int64_t> ns_{0};
};

// Reads the control channel until `stop` (polling it every 100 ms): "start" sets `start`,
// "run" queues a container on its node, end of file or a read error sets `parent_gone`.
// Malformed lines are ignored (the parent is this binary).
void ReadControl(int fd, std::map<std::string, SimNmNode*> by_id, StartTime* start,
                 const std::function<void(Clock::time_point)>& started,
                 std::atomic<bool>* parent_gone, const std::atomic<bool>* stop) {
  std::string buffer;
  char chunk[4096];
  while (!stop->load()) {
    pollfd p{fd, POLLIN, 0};
    int ready = poll(&p, 1, 100);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    ssize_t n = ready < 0 ? -1 : read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      parent_gone->store(true);
      return;
    }
    buffer.append(chunk, static_cast<size_t>(n));
    size_t eol;
    while ((eol = buffer.find('\n')) != std::string::npos) {
      std::string line = buffer.substr(0, eol);
      buffer.erase(0, eol + 1);
      std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (w.size() == 1 && w[0] == "start") {
        const auto now = Clock::now();
        if (start->Set(now)) started(now);
        continue;
      }
      int64_t ms = 0;
      if (w.size() != 4 || w[0] != "run" || !absl::SimpleAtoi(w[3], &ms)) continue;
      auto it = by_id.find(w[1]);
      if (it == by_id.end()) continue;
      std::lock_guard<std::mutex> l(it->second->mu);
      it->second->running.emplace_back(Clock::now() + std::chrono::milliseconds(ms), w[2]);
    }
  }
}

// Samples rounded to the µs: shorter text, the same figures.
std::vector<double> MicrosecondPrecision(const std::vector<double>& ms) {
  std::vector<double> out(ms.size());
  std::transform(ms.begin(), ms.end(), out.begin(),
                 [](double x) { return std::round(x * 1000) / 1000; });
  return out;
}

}  // namespace

std::string SimNodeId(int32_t index) { return absl::StrFormat("sim-node-%05d:%d", index, 8041); }
std::string SimNodeRack(int32_t index) { return absl::StrFormat("/rack%03d", index / 40); }

v1::RegisterNodeManagerRequest SimNmProtocol::Register(int32_t index, const Resource& capability) {
  id = SimNodeId(index);
  v1::RegisterNodeManagerRequest req;
  req.set_node_id(id);
  req.set_rack(SimNodeRack(index));
  auto& values = *req.mutable_capability()->mutable_values();
  values["memory-mb"] = capability[kMemoryMb];
  values["vcores"] = capability[kVcores];
  return req;
}

void SimNmProtocol::Registered(const v1::RegisterNodeManagerResponse& reply) {
  key_id = reply.container_key().key_id();
}

v1::NodeHeartbeatRequest SimNmProtocol::Heartbeat(std::chrono::steady_clock::time_point now) {
  v1::NodeHeartbeatRequest req;
  req.set_node_id(id);
  req.set_response_id(response_id);
  req.set_last_known_container_key_id(key_id);
  req.mutable_health()->set_healthy(true);
  auto done = std::stable_partition(running.begin(), running.end(),
                                    [now](const auto& c) { return c.first > now; });
  for (auto it = done; it != running.end(); ++it) {
    v1::ContainerStatus* st = req.add_container_statuses();
    st->set_container_id(it->second);
    st->set_state(v1::CONTAINER_COMPLETE);
  }
  running.erase(done, running.end());
  return req;
}

void SimNmProtocol::Heard(const v1::NodeHeartbeatResponse& reply) {
  response_id = reply.response_id();
  if (reply.has_container_key()) key_id = reply.container_key().key_id();
  if (reply.next_heartbeat_interval_ms() > 0) told_interval_ms = reply.next_heartbeat_interval_ms();
}

// One heartbeat in flight: what gRPC's callback API needs alive until it calls back.
struct SimNmHeartbeats::Call {
  size_t index;
  Clock::time_point due;  // when it was to be sent
  grpc::ClientContext ctx;
  v1::NodeHeartbeatRequest req;
  v1::NodeHeartbeatResponse resp;
};

SimNmHeartbeats::SimNmHeartbeats(std::vector<SimNmNode>* nodes, std::chrono::milliseconds interval,
                                 SimNmSchedule schedule)
    : nodes_(*nodes), interval_(interval), schedule_(schedule) {
  const auto now = Clock::now();
  const auto n = static_cast<int64_t>(nodes_.size());
  for (int64_t i = 0; i < n; ++i) due_.emplace(now + interval_ * i / n, static_cast<size_t>(i));
  sender_ = std::thread([this] { Run(); });
}

SimNmHeartbeats::~SimNmHeartbeats() { Stop(); }

void SimNmHeartbeats::Measure(Clock::time_point from, Clock::duration length) {
  std::lock_guard<std::mutex> l(mu_);
  if (measuring_) return;
  measuring_ = true;
  from_ = from;
  to_ = from + length;
}

SimNmTally SimNmHeartbeats::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (sender_.joinable()) sender_.join();
  std::unique_lock<std::mutex> l(mu_);
  idle_.wait(l, [this] { return in_flight_ == 0; });  // each call ends by its deadline
  return std::exchange(tally_, {});
}

// The sender: sends every node whose time has come, then sleeps until the next one's time (or
// until a reply makes a node due earlier).
void SimNmHeartbeats::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    std::vector<Due> ready;
    while (!due_.empty() && due_.top().first <= now) {
      ready.push_back(due_.top());
      due_.pop();
    }
    if (!ready.empty()) {
      in_flight_ += static_cast<int64_t>(ready.size());
      l.unlock();
      for (const Due& d : ready) Send(d.second, d.first);
      l.lock();
      continue;
    }
    sleeping_until_ = due_.empty() ? now + interval_ : due_.top().first;
    wake_.wait_until(l, sleeping_until_);
    sleeping_until_ = Clock::time_point::max();
  }
}

void SimNmHeartbeats::Send(size_t index, Clock::time_point due) {
  SimNmNode& n = nodes_[index];
  auto* call = new Call{index, due, {}, {}, {}};
  Clock::time_point sent;  // after the lock: a wait for it is the simulator's (send lag)
  {
    std::lock_guard<std::mutex> l(n.mu);
    sent = Clock::now();
    call->req = n.Heartbeat(sent);
  }
  call->ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  n.stub->async()->NodeHeartbeat(&call->ctx, &call->req, &call->resp,
                                 [this, call, sent](grpc::Status s) { Done(call, s.ok(), sent); });
}

// On a gRPC thread, when a heartbeat's reply (or error) arrives: the node hears it, the call is
// measured when sent within the interval, and the node is due again by its schedule: one
// interval from now (after-reply; the interval the RM told it, if any), or one interval after
// its last time, or now when that has passed (fixed).
void SimNmHeartbeats::Done(Call* call, bool ok, Clock::time_point sent) {
  std::unique_ptr<Call> owned(call);
  const auto now = Clock::now();
  SimNmNode& node = nodes_[call->index];
  if (ok) node.Heard(call->resp);
  Clock::time_point next;
  if (schedule_ == SimNmSchedule::kFixed) {
    next = std::max(call->due + interval_, now);
  } else {
    // Written on this node's calls only, one at a time: no lock needed.
    next = now + (node.told_interval_ms > 0 ? std::chrono::milliseconds(node.told_interval_ms)
                                            : interval_);
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    if (measuring_ && sent >= from_ && sent < to_) {
      ++tally_.heartbeats;
      if (ok) {
        tally_.completed += call->req.container_statuses_size();
      } else {
        ++tally_.errors;
      }
      tally_.latencies_ms.push_back(std::chrono::duration<double, std::milli>(now - sent).count());
      tally_.send_lags_ms.push_back(
          std::chrono::duration<double, std::milli>(sent - call->due).count());
    }
    due_.emplace(next, call->index);
    // Notified under the lock: once in_flight_ is 0, Stop may return and this object go.
    if (next < sleeping_until_) wake_.notify_one();
    if (--in_flight_ == 0) idle_.notify_all();
  }
}

std::string NmSimReport::ToJson(bool samples) const {
  nlohmann::json j{{"nodes", nodes},
                   {"first_index", first_index},
                   {"duration_s", duration_s},
                   {"heartbeats", heartbeats},
                   {"heartbeats_per_s", heartbeats_per_s},
                   {"heartbeat_latency", LatencyJson(heartbeat)},
                   {"heartbeat_send_lag", LatencyJson(send_lag)},
                   {"rpc_errors", rpc_errors},
                   {"containers_completed", containers_completed},
                   {"process_cpu_per_s", process_cpu_per_s}};
  if (!samples) return j.dump(2);
  j["heartbeat_samples_ms"] = MicrosecondPrecision(heartbeat_samples_ms);
  j["send_lag_samples_ms"] = MicrosecondPrecision(send_lag_samples_ms);
  return j.dump();
}

absl::StatusOr<NmSimReport> NmSimReport::FromJson(const std::string& json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return absl::InvalidArgumentError("an nm-sim report that is not a JSON object");
  NmSimReport r;
  try {
    r.nodes = j.at("nodes").get<int32_t>();
    r.first_index = j.at("first_index").get<int32_t>();
    r.duration_s = j.at("duration_s").get<double>();
    r.heartbeats = j.at("heartbeats").get<int64_t>();
    r.heartbeats_per_s = j.at("heartbeats_per_s").get<double>();
    r.rpc_errors = j.at("rpc_errors").get<int64_t>();
    r.containers_completed = j.at("containers_completed").get<int64_t>();
    r.process_cpu_per_s = j.at("process_cpu_per_s").get<double>();
    if (j.contains("heartbeat_samples_ms"))
      r.heartbeat_samples_ms = j.at("heartbeat_samples_ms").get<std::vector<double>>();
    if (j.contains("send_lag_samples_ms"))
      r.send_lag_samples_ms = j.at("send_lag_samples_ms").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("an nm-sim report: ", e.what()));
  }
  r.heartbeat = SummarizeLatencies(r.heartbeat_samples_ms);
  r.send_lag = SummarizeLatencies(r.send_lag_samples_ms);
  return r;
}

std::string NmSimReport::ToText() const {
  return absl::StrFormat(
      "weft bench nm-sim: %d simulated NMs (%s .. %s), %.1f s measured\n"
      "  heartbeats: %d, %.0f/s, latency p50 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms\n"
      "  sent late by (this simulator's own delay): mean %.2f ms, p99 %.2f ms\n"
      "  containers reported complete: %d\n"
      "  RPC errors: %d\n"
      "  process CPU: %.2f s per s\n",
      nodes, SimNodeId(first_index), SimNodeId(first_index + nodes - 1), duration_s, heartbeats,
      heartbeats_per_s, heartbeat.p50, heartbeat.p99, heartbeat.max, heartbeat.mean,
      send_lag.mean, send_lag.p99, containers_completed, rpc_errors, process_cpu_per_s);
}

absl::StatusOr<NmSimReport> RunNmSim(const NmSimOptions& o) {
  if (o.rm_address.empty()) return absl::InvalidArgumentError("nm-sim: --rm HOST:PORT is needed");
  if (o.nodes < 1 || o.first_index < 0 || o.threads < 1 || o.duration_ms < 1 ||
      o.heartbeat_interval_ms < 1)
    return absl::InvalidArgumentError(
        "nm-sim: --nodes, --threads, --seconds and --heartbeat-ms must be positive and "
        "--first-index >= 0");
  if (o.first_index > 99999 - (o.nodes - 1))
    return absl::InvalidArgumentError("nm-sim: node indexes go up to 99999");

  // Channels: one per node under TLS (each presents its own certificate), else one shared.
  std::vector<SimNmNode> nodes(static_cast<size_t>(o.nodes));
  std::vector<std::unique_ptr<v1::TrackerService::Stub>> stubs;
  std::shared_ptr<grpc::Channel> shared;
  if (o.tls_dir.empty())
    shared = grpc::CreateChannel(o.rm_address, grpc::InsecureChannelCredentials());
  for (int32_t i = 0; i < o.nodes; ++i) {
    SimNmNode& n = nodes[static_cast<size_t>(i)];
    n.id = SimNodeId(o.first_index + i);
    std::shared_ptr<grpc::Channel> channel = shared;
    if (!shared) {
      absl::StatusOr<security::TlsFiles> files = security::LoadTlsFiles(
          security::DaemonTlsPaths(o.tls_dir, security::DaemonRole::kNodeManager, n.id));
      if (!files.ok())
        return absl::Status(files.status().code(), absl::StrCat("nm-sim: TLS of node ", n.id, ": ",
                                                                files.status().message()));
      grpc::ChannelArguments args = FastReconnectChannelArgs();  // as the NM's own channel
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);        // a connection of its own
      channel =
          grpc::CreateCustomChannel(o.rm_address, security::TlsChannelCredentials(*files), args);
    }
    stubs.push_back(v1::TrackerService::NewStub(channel));
    n.stub = stubs.back().get();
  }

  // Register, `threads` at a time (each registration opens its node's connection).
  std::mutex error_mu;
  absl::Status register_error;
  {
    std::vector<std::thread> threads;
    for (int32_t t = 0; t < o.threads; ++t) {
      threads.emplace_back([&, t] {
        for (size_t i = static_cast<size_t>(t); i < nodes.size();
             i += static_cast<size_t>(o.threads)) {
          {
            std::lock_guard<std::mutex> l(error_mu);
            if (!register_error.ok()) return;
          }
          v1::RegisterNodeManagerRequest req =
              nodes[i].Register(o.first_index + static_cast<int32_t>(i), o.node_capability);
          v1::RegisterNodeManagerResponse resp;
          grpc::ClientContext ctx;
          ctx.set_deadline(std::chrono::system_clock::now() +
                           std::chrono::milliseconds(kRegisterTimeoutMs));
          grpc::Status s = nodes[i].stub->RegisterNodeManager(&ctx, req, &resp);
          if (!s.ok()) {
            std::lock_guard<std::mutex> l(error_mu);
            register_error =
                absl::UnavailableError(absl::StrCat("nm-sim: registering ", nodes[i].id, " with ",
                                                    o.rm_address, ": ", s.error_message()));
            return;
          }
          nodes[i].Registered(resp);
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  if (!register_error.ok()) return register_error;
  if (o.on_registered) o.on_registered();

  // Heartbeat from now on (spread over one interval, as real NMs would be); measure from
  // "start", or from now when standalone.
  const auto duration = std::chrono::milliseconds(o.duration_ms);
  SimNmHeartbeats heartbeats(&nodes, std::chrono::milliseconds(o.heartbeat_interval_ms),
                             o.schedule);
  StartTime start;
  std::atomic<bool> parent_gone{false}, stop_reader{false};
  std::thread reader;
  auto started = [&](Clock::time_point t) { heartbeats.Measure(t, duration); };
  if (o.control_fd >= 0) {
    std::map<std::string, SimNmNode*> by_id;
    for (SimNmNode& n : nodes) by_id[n.id] = &n;
    reader = std::thread(ReadControl, o.control_fd, std::move(by_id), &start, started, &parent_gone,
                         &stop_reader);
  } else {
    const auto now = Clock::now();
    start.Set(now);
    started(now);
  }
  // Until the measured interval ends (or the parent goes). The process's CPU is read within
  // 10 ms of the interval's start and at its end.
  std::optional<std::pair<Clock::time_point, double>> cpu_from;
  while (!parent_gone.load() && !(start.started() && Clock::now() >= start.get() + duration)) {
    if (!cpu_from && start.started()) cpu_from.emplace(Clock::now(), ProcessCpuSeconds());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double cpu_to = ProcessCpuSeconds();
  const Clock::time_point cpu_to_time = Clock::now();
  SimNmTally tally = heartbeats.Stop();
  stop_reader.store(true);
  if (reader.joinable()) reader.join();
  if (parent_gone.load())
    return absl::AbortedError("nm-sim: the control channel closed (the parent is gone)");

  NmSimReport r;
  r.nodes = o.nodes;
  r.first_index = o.first_index;
  r.duration_s = std::chrono::duration<double>(duration).count();
  r.heartbeats = tally.heartbeats;
  r.heartbeats_per_s = static_cast<double>(r.heartbeats) / r.duration_s;
  r.rpc_errors = tally.errors;
  r.containers_completed = tally.completed;
  if (cpu_from && cpu_to_time > cpu_from->first)
    r.process_cpu_per_s =
        (cpu_to - cpu_from->second) /
        std::chrono::duration<double>(cpu_to_time - cpu_from->first).count();
  r.heartbeat = SummarizeLatencies(tally.latencies_ms);
  r.heartbeat_samples_ms = std::move(tally.latencies_ms);
  r.send_lag = SummarizeLatencies(tally.send_lags_ms);
  r.send_lag_samples_ms = std::move(tally.send_lags_ms);
  return r;
}

}  // namespace weft::rm
