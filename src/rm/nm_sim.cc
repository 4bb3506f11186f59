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
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "security/tls.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Deadline of one RegisterNodeManager (it includes the connection's TLS handshake) and of one
// heartbeat, ms.
constexpr int64_t kRegisterTimeoutMs = 60000;
constexpr int64_t kHeartbeatTimeoutMs = 30000;

struct Node : SimNmProtocol {
  std::unique_ptr<v1::TrackerService::Stub> stub;
  Clock::time_point next_heartbeat;
  std::mutex mu;  // guards `running`, which the control reader fills
};

// The measured interval's start, ns on Clock since its epoch; 0 until "start".
class StartTime {
 public:
  void Set(Clock::time_point t) {
    int64_t zero = 0;
    ns_.compare_exchange_strong(zero, t.time_since_epoch().count());
  }
  bool started() const { return ns_.load() != 0; }
  Clock::time_point get() const { return Clock::time_point(Clock::duration(ns_.load())); }

 private:
  std::atomic<int64_t> ns_{0};
};

// Reads the control channel until `stop` (polling it every 100 ms): "start" sets `start`,
// "run" queues a container on its node, end of file or a read error sets `parent_gone`.
// Malformed lines are ignored (the parent is this binary).
void ReadControl(int fd, std::map<std::string, Node*> by_id, StartTime* start,
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
        start->Set(Clock::now());
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
}

std::string NmSimReport::ToJson(bool samples) const {
  nlohmann::json j{{"nodes", nodes},
                   {"first_index", first_index},
                   {"duration_s", duration_s},
                   {"heartbeats", heartbeats},
                   {"heartbeats_per_s", heartbeats_per_s},
                   {"heartbeat_latency",
                    {{"p50_ms", heartbeat.p50},
                     {"p99_ms", heartbeat.p99},
                     {"max_ms", heartbeat.max},
                     {"count", heartbeat.count}}},
                   {"rpc_errors", rpc_errors},
                   {"containers_completed", containers_completed}};
  if (!samples) return j.dump(2);
  std::vector<double> us_precision(heartbeat_samples_ms.size());  // shorter text, same figures
  std::transform(heartbeat_samples_ms.begin(), heartbeat_samples_ms.end(), us_precision.begin(),
                 [](double ms) { return std::round(ms * 1000) / 1000; });
  j["heartbeat_samples_ms"] = std::move(us_precision);
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
    if (j.contains("heartbeat_samples_ms"))
      r.heartbeat_samples_ms = j.at("heartbeat_samples_ms").get<std::vector<double>>();
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("an nm-sim report: ", e.what()));
  }
  r.heartbeat = SummarizeLatencies(r.heartbeat_samples_ms);
  return r;
}

std::string NmSimReport::ToText() const {
  return absl::StrFormat(
      "weft bench nm-sim: %d simulated NMs (%s .. %s), %.1f s measured\n"
      "  heartbeats: %d, %.0f/s, latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n"
      "  containers reported complete: %d\n"
      "  RPC errors: %d\n",
      nodes, SimNodeId(first_index), SimNodeId(first_index + nodes - 1), duration_s, heartbeats,
      heartbeats_per_s, heartbeat.p50, heartbeat.p99, heartbeat.max, containers_completed,
      rpc_errors);
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
  std::vector<Node> nodes(static_cast<size_t>(o.nodes));
  std::shared_ptr<grpc::Channel> shared;
  if (o.tls_dir.empty())
    shared = grpc::CreateChannel(o.rm_address, grpc::InsecureChannelCredentials());
  for (int32_t i = 0; i < o.nodes; ++i) {
    Node& n = nodes[static_cast<size_t>(i)];
    n.id = SimNodeId(o.first_index + i);
    std::shared_ptr<grpc::Channel> channel = shared;
    if (!shared) {
      absl::StatusOr<security::TlsFiles> files = security::LoadTlsFiles(
          security::DaemonTlsPaths(o.tls_dir, security::DaemonRole::kNodeManager, n.id));
      if (!files.ok())
        return absl::Status(files.status().code(), absl::StrCat("nm-sim: TLS of node ", n.id, ": ",
                                                                files.status().message()));
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
      channel =
          grpc::CreateCustomChannel(o.rm_address, security::TlsChannelCredentials(*files), args);
    }
    n.stub = v1::TrackerService::NewStub(channel);
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
  StartTime start;
  std::atomic<bool> parent_gone{false}, stop_reader{false};
  std::thread reader;
  const auto registered = Clock::now();
  for (size_t i = 0; i < nodes.size(); ++i)
    nodes[i].next_heartbeat =
        registered +
        std::chrono::milliseconds(static_cast<int64_t>(i) * o.heartbeat_interval_ms / o.nodes);
  if (o.control_fd >= 0) {
    std::map<std::string, Node*> by_id;
    for (Node& n : nodes) by_id[n.id] = &n;
    reader = std::thread(ReadControl, o.control_fd, std::move(by_id), &start, &parent_gone,
                         &stop_reader);
  } else {
    start.Set(registered);
  }
  const auto duration = std::chrono::milliseconds(o.duration_ms);
  std::mutex merge_mu;
  std::vector<double> samples;
  std::atomic<int64_t> heartbeats{0}, errors{0}, completed{0};
  auto worker = [&](int32_t tid) {
    std::vector<double> mine;
    while (!parent_gone.load()) {
      const auto now = Clock::now();
      const auto deadline = start.started() ? start.get() + duration : Clock::time_point::max();
      if (now >= deadline) break;
      auto next_wake = now + std::chrono::milliseconds(20);
      for (size_t i = static_cast<size_t>(tid); i < nodes.size();
           i += static_cast<size_t>(o.threads)) {
        Node& n = nodes[i];
        if (n.next_heartbeat > now) {
          next_wake = std::min(next_wake, n.next_heartbeat);
          continue;
        }
        v1::NodeHeartbeatRequest req;
        {
          std::lock_guard<std::mutex> l(n.mu);
          req = n.Heartbeat(now);
        }
        v1::NodeHeartbeatResponse resp;
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::milliseconds(kHeartbeatTimeoutMs));
        const auto c0 = Clock::now();
        grpc::Status s = n.stub->NodeHeartbeat(&ctx, req, &resp);
        const double ms = MsSince(c0);
        if (s.ok()) n.Heard(resp);
        n.next_heartbeat += std::chrono::milliseconds(o.heartbeat_interval_ms);
        if (!start.started() || c0 < start.get() || c0 >= start.get() + duration) continue;
        mine.push_back(ms);
        ++heartbeats;
        if (s.ok()) {
          completed += req.container_statuses_size();
        } else {
          ++errors;
        }
      }
      std::this_thread::sleep_until(std::min(next_wake, deadline));
    }
    std::lock_guard<std::mutex> l(merge_mu);
    samples.insert(samples.end(), mine.begin(), mine.end());
  };
  std::vector<std::thread> threads;
  for (int32_t t = 0; t < o.threads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  stop_reader.store(true);
  if (reader.joinable()) reader.join();
  if (parent_gone.load())
    return absl::AbortedError("nm-sim: the control channel closed (the parent is gone)");

  NmSimReport r;
  r.nodes = o.nodes;
  r.first_index = o.first_index;
  r.duration_s = std::chrono::duration<double>(duration).count();
  r.heartbeats = heartbeats.load();
  r.heartbeats_per_s = static_cast<double>(r.heartbeats) / r.duration_s;
  r.rpc_errors = errors.load();
  r.containers_completed = completed.load();
  r.heartbeat = SummarizeLatencies(samples);
  r.heartbeat_samples_ms = std::move(samples);
  return r;
}

}  // namespace weft::rm
