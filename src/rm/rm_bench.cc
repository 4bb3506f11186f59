#include "rm/rm_bench.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "nlohmann/json.hpp"
#include "rm/rm_server.h"
#include "weft/v1/am.grpc.pb.h"
#include "weft/v1/client.grpc.pb.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// This process's resident set, MiB (VmRSS in /proc/self/status); 0 when unreadable.
double ResidentMiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) != 0) continue;
    int64_t kb = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(absl::StripSuffix(line.substr(6), "kB")), &kb))
      return static_cast<double>(kb) / 1024.0;
  }
  return 0;
}

LatencyMs Summarize(std::vector<double> v) {
  LatencyMs l;
  l.count = static_cast<int64_t>(v.size());
  if (v.empty()) return l;
  std::sort(v.begin(), v.end());
  auto at = [&](double p) {
    size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1));
    return v[i];
  };
  l.p50 = at(0.50);
  l.p99 = at(0.99);
  l.max = v.back();
  return l;
}

// Simulated nodes: containers run on them for a while, then their heartbeats report them done.
struct SimNode {
  std::string id;
  int32_t response_id = 0;
  Clock::time_point next_heartbeat;
  std::vector<std::pair<Clock::time_point, std::string>> running;  // finish time, container
};

// AM launches: recorded for the simulated AMs to pick up (no ContainerService involved).
class BenchLauncher final : public AmLauncher {
 public:
  void Launch(const std::string&, const v1::StartContainerRequest& request,
              std::function<void(absl::Status)> done) override {
    {
      absl::MutexLock l(&mu_);
      const auto& env = request.launch_context().environment();
      launched_[env.at("WEFT_APPLICATION_ID")] =
          absl::Base64Escape(request.launch_context().tokens().at("amrm"));
    }
    done(absl::OkStatus());
  }
  // The AMRM token of an app's AM once launched, else "".
  std::string TokenOf(const std::string& app) {
    absl::MutexLock l(&mu_);
    auto it = launched_.find(app);
    return it == launched_.end() ? "" : it->second;
  }

 private:
  absl::Mutex mu_;
  std::map<std::string, std::string> launched_ ABSL_GUARDED_BY(mu_);
};

struct SimAm {
  std::string app_id;
  Clock::time_point submitted;
  std::string token;  // serialized v1::Token, once launched
  bool registered = false;
  int32_t response_id = 0;
  int32_t held = 0;  // containers received and not yet completed
  Clock::time_point next_allocate;
};

}  // namespace

std::string RmBenchReport::ToJson() const {
  auto lat = [](const LatencyMs& l) {
    return nlohmann::json{
        {"p50_ms", l.p50}, {"p99_ms", l.p99}, {"max_ms", l.max}, {"count", l.count}};
  };
  nlohmann::json j{{"nodes", nodes},
                   {"apps", apps},
                   {"duration_s", duration_s},
                   {"heartbeats_per_s", heartbeats_per_s},
                   {"heartbeat_latency", lat(heartbeat)},
                   {"allocate_latency", lat(allocate)},
                   {"containers_allocated", containers_allocated},
                   {"containers_allocated_per_s", containers_allocated_per_s},
                   {"submit_to_am_running", lat(submit_to_am_running)},
                   {"rpc_errors", rpc_errors},
                   {"loop_busy_fraction", loop_busy_fraction},
                   {"loop_us_per_heartbeat", loop_us_per_heartbeat},
                   {"loop_us_per_allocate", loop_us_per_allocate},
                   {"loop_us_per_allocation", loop_us_per_allocation},
                   {"rm_rss_mb", rm_rss_mb},
                   {"rss_kb_per_nm", rss_kb_per_nm}};
  return j.dump(2);
}

std::string RmBenchReport::ToText() const {
  return absl::StrFormat(
      "weft bench rm: %d simulated NMs, %d AMs, %.1f s measured\n"
      "  heartbeats: %.0f/s, latency p50 %.2f ms, p99 %.2f ms, max %.2f ms\n"
      "  allocate:   latency p50 %.2f ms, p99 %.2f ms (%d calls)\n"
      "  containers: %d allocated to AMs, %.0f/s\n"
      "  submit -> AM registered: p50 %.1f ms, p99 %.1f ms (%d apps)\n"
      "  RPC errors: %d\n"
      "  RM loop: %.0f%% busy; %.1f us per heartbeat, %.1f us per Allocate, %.1f us per "
      "container allocated\n"
      "  memory: %.0f MiB resident, %.2f KiB per NM\n",
      nodes, apps, duration_s, heartbeats_per_s, heartbeat.p50, heartbeat.p99, heartbeat.max,
      allocate.p50, allocate.p99, allocate.count, containers_allocated, containers_allocated_per_s,
      submit_to_am_running.p50, submit_to_am_running.p99, submit_to_am_running.count, rpc_errors,
      100 * loop_busy_fraction, loop_us_per_heartbeat, loop_us_per_allocate,
      loop_us_per_allocation, rm_rss_mb, rss_kb_per_nm);
}

absl::StatusOr<RmBenchReport> RunRmBench(const RmBenchOptions& o) {
  if (o.nodes < 1 || o.apps < 0 || o.client_threads < 1 || o.duration_ms < 1 ||
      o.heartbeat_interval_ms < 1)
    return absl::InvalidArgumentError(
        "bench rm: nodes, threads, duration and interval must be >= 1");
  const double rss_before_mb = ResidentMiB();
  auto* launcher = new BenchLauncher();
  RmServerOptions so;
  so.auth.mode = UserAuthentication::kDeclared;  // the bench's clients are this process
  so.rm.heartbeat_interval_ms = o.heartbeat_interval_ms;
  so.rm.pass_interval_ms = 50;
  so.rm.nm_expiry_ms = std::max<int64_t>(60000, 30 * o.heartbeat_interval_ms);
  so.launcher.reset(launcher);
  auto server = RmServer::Start(std::move(so));
  if (!server.ok()) return server.status();
  auto channel = grpc::CreateChannel((*server)->address(), grpc::InsecureChannelCredentials());
  auto tracker = v1::TrackerService::NewStub(channel);
  auto client = v1::ClientService::NewStub(channel);
  auto am_stub = v1::AmService::NewStub(channel);

  // Register every node (not measured).
  std::vector<SimNode> nodes(static_cast<size_t>(o.nodes));
  const auto start = Clock::now();
  for (int32_t i = 0; i < o.nodes; ++i) {
    SimNode& n = nodes[static_cast<size_t>(i)];
    n.id = absl::StrFormat("sim-node-%05d:%d", i, 8041);
    v1::RegisterNodeManagerRequest req;
    req.set_node_id(n.id);
    req.set_rack(absl::StrFormat("/rack%03d", i / 40));
    (*req.mutable_capability()->mutable_values())["memory-mb"] = o.node_capability[kMemoryMb];
    (*req.mutable_capability()->mutable_values())["vcores"] = o.node_capability[kVcores];
    v1::RegisterNodeManagerResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = tracker->RegisterNodeManager(&ctx, req, &resp);
    if (!s.ok())
      return absl::UnavailableError(absl::StrCat("registering ", n.id, ": ", s.error_message()));
    // Spread the first heartbeats over one interval, as real NMs would be.
    n.next_heartbeat = start + std::chrono::milliseconds(i * o.heartbeat_interval_ms / o.nodes);
  }
  std::map<std::string, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) node_index[nodes[i].id] = i;

  // Submit the apps.
  std::vector<SimAm> ams(static_cast<size_t>(o.apps));
  for (SimAm& am : ams) {
    grpc::ClientContext c1, c2;
    v1::NewApplicationResponse app;
    if (!client->NewApplication(&c1, {}, &app).ok())
      return absl::UnavailableError("NewApplication");
    v1::SubmitApplicationRequest sub;
    sub.mutable_context()->set_application_id(app.application_id());
    sub.mutable_context()->mutable_am_container_spec()->add_command("simulated");
    c2.AddMetadata("weft-user", "bench");
    v1::SubmitApplicationResponse r;
    am.submitted = Clock::now();
    grpc::Status s = client->SubmitApplication(&c2, sub, &r);
    if (!s.ok())
      return absl::UnavailableError(absl::StrCat("SubmitApplication: ", s.error_message()));
    am.app_id = app.application_id();
    am.next_allocate = Clock::now();
  }

  // Drive: each thread owns a slice of nodes and AMs.
  const LoopStats loop_before = (*server)->LoopStatistics();
  const auto t0 = Clock::now();
  const auto deadline = t0 + std::chrono::milliseconds(o.duration_ms);
  std::mutex merge_mu;
  std::vector<double> hb_lat, alloc_lat, am_lat;
  std::atomic<int64_t> heartbeats{0}, allocated{0}, errors{0};
  // Containers handed out to an AM are queued to their simulated node (by index) to finish.
  std::vector<std::mutex> node_mu(nodes.size() > 0 ? 64 : 1);
  auto worker = [&](int32_t tid) {
    std::vector<double> my_hb, my_alloc, my_am;
    while (Clock::now() < deadline) {
      auto now = Clock::now();
      auto next_wake = now + std::chrono::milliseconds(20);
      for (size_t i = static_cast<size_t>(tid); i < nodes.size();
           i += static_cast<size_t>(o.client_threads)) {
        SimNode& n = nodes[i];
        if (n.next_heartbeat > now) {
          next_wake = std::min(next_wake, n.next_heartbeat);
          continue;
        }
        v1::NodeHeartbeatRequest req;
        req.set_node_id(n.id);
        req.set_response_id(n.response_id);
        req.mutable_health()->set_healthy(true);
        {
          std::lock_guard<std::mutex> l(node_mu[i % node_mu.size()]);
          auto& running = n.running;
          for (auto it = running.begin(); it != running.end();) {
            if (it->first <= now) {
              v1::ContainerStatus* st = req.add_container_statuses();
              st->set_container_id(it->second);
              st->set_state(v1::CONTAINER_COMPLETE);
              it = running.erase(it);
            } else {
              ++it;
            }
          }
        }
        v1::NodeHeartbeatResponse resp;
        grpc::ClientContext ctx;
        auto c0 = Clock::now();
        grpc::Status s = tracker->NodeHeartbeat(&ctx, req, &resp);
        my_hb.push_back(MsSince(c0));
        if (!s.ok()) ++errors;
        ++heartbeats;
        n.response_id = resp.response_id();
        n.next_heartbeat += std::chrono::milliseconds(o.heartbeat_interval_ms);
      }
      for (size_t i = static_cast<size_t>(tid); i < ams.size();
           i += static_cast<size_t>(o.client_threads)) {
        SimAm& am = ams[i];
        if (am.next_allocate > now) {
          next_wake = std::min(next_wake, am.next_allocate);
          continue;
        }
        am.next_allocate = now + std::chrono::milliseconds(o.allocate_interval_ms);
        if (am.token.empty()) {
          std::string b64 = launcher->TokenOf(am.app_id);
          if (b64.empty() || !absl::Base64Unescape(b64, &am.token)) continue;
        }
        grpc::ClientContext ctx;
        ctx.AddMetadata("weft-amrm-token-bin", am.token);
        if (!am.registered) {
          v1::RegisterApplicationMasterResponse r;
          if (am_stub->RegisterApplicationMaster(&ctx, {}, &r).ok()) {
            am.registered = true;
            my_am.push_back(MsSince(am.submitted));
          } else {
            ++errors;
          }
          continue;
        }
        v1::AllocateRequest req;
        req.set_response_id(am.response_id);
        v1::ResourceRequest* ask = req.add_asks();
        ask->set_priority(1);
        ask->set_resource_name("*");
        ask->set_relax_locality(true);
        (*ask->mutable_capability()->mutable_values())["memory-mb"] = o.container[kMemoryMb];
        (*ask->mutable_capability()->mutable_values())["vcores"] = o.container[kVcores];
        ask->set_num_containers(std::max(0, o.containers_per_app - am.held));
        v1::AllocateResponse resp;
        auto c0 = Clock::now();
        grpc::Status s = am_stub->Allocate(&ctx, req, &resp);
        my_alloc.push_back(MsSince(c0));
        if (!s.ok()) {
          ++errors;
          continue;
        }
        am.response_id = resp.response_id();
        am.held += resp.allocated_containers_size() - resp.completed_containers_size();
        allocated += resp.allocated_containers_size();
        auto finish = Clock::now() + std::chrono::milliseconds(o.container_run_ms);
        for (const v1::Container& c : resp.allocated_containers()) {
          auto it = node_index.find(c.node_id());
          if (it == node_index.end()) continue;
          std::lock_guard<std::mutex> l(node_mu[it->second % node_mu.size()]);
          nodes[it->second].running.emplace_back(finish, c.container_id());
        }
      }
      std::this_thread::sleep_until(std::min(next_wake, deadline));
    }
    std::lock_guard<std::mutex> l(merge_mu);
    hb_lat.insert(hb_lat.end(), my_hb.begin(), my_hb.end());
    alloc_lat.insert(alloc_lat.end(), my_alloc.begin(), my_alloc.end());
    am_lat.insert(am_lat.end(), my_am.begin(), my_am.end());
  };
  std::vector<std::thread> threads;
  for (int32_t t = 0; t < o.client_threads; ++t) threads.emplace_back(worker, t);
  for (auto& t : threads) t.join();
  const double secs = MsSince(t0) / 1000.0;
  const LoopStats loop_after = (*server)->LoopStatistics();
  const double rss_mb = ResidentMiB();
  (*server)->Shutdown();

  RmBenchReport r;
  r.nodes = o.nodes;
  r.apps = o.apps;
  r.duration_s = secs;
  r.heartbeats_per_s = static_cast<double>(heartbeats.load()) / secs;
  r.heartbeat = Summarize(std::move(hb_lat));
  r.allocate = Summarize(std::move(alloc_lat));
  r.containers_allocated = allocated.load();
  r.containers_allocated_per_s = static_cast<double>(allocated.load()) / secs;
  r.submit_to_am_running = Summarize(std::move(am_lat));
  r.rpc_errors = errors.load();
  r.loop_busy_fraction =
      static_cast<double>(loop_after.busy_nanos - loop_before.busy_nanos) / (secs * 1e9);
  r.loop_us_per_heartbeat = loop_after.MicrosPerEvent(loop_before, "TrackerService/NodeHeartbeat");
  r.loop_us_per_allocate = loop_after.MicrosPerEvent(loop_before, "AmService/Allocate");
  r.loop_us_per_allocation = loop_after.PassMicrosPerAllocation(loop_before);
  r.rm_rss_mb = rss_mb;
  r.rss_kb_per_nm = (rss_mb - rss_before_mb) * 1024 / o.nodes;
  return r;
}

}  // namespace weft::rm
