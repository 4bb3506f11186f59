#include "rm/rm_bench.h"

#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/open_files.h"
#include "nlohmann/json.hpp"
#include "rm/loop_probe.h"
#include "rm/nm_sim.h"
#include "rm/rm_server.h"
#include "security/tls.h"
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

// NMs in other processes each hold a TLS connection of their own to the RM's one address and
// port, all from 127.0.0.1: the RM needs a file per connection (its soft limit raised to the
// hard one first), and Linux gives the connections from one address to one address and port
// at most the local port range (net.ipv4.ip_local_port_range). Checked before anything starts.
absl::Status CheckConnectionRoom(int nodes) {
  constexpr int kHeadroom = 256;  // the AMs' channels, the store, the web server, logs
  absl::StatusOr<OpenFilesLimit> files = RaiseOpenFilesLimit();
  if (!files.ok()) return files.status();
  if (files->soft < static_cast<uint64_t>(nodes) + kHeadroom)
    return absl::FailedPreconditionError(absl::StrCat(
        "bench rm: ", nodes, " NMs in other processes need a connection each to the RM, and "
        "this process may open at most ", files->soft, " files (RLIMIT_NOFILE, hard limit ",
        files->hard, "): raise it to at least ", nodes + kHeadroom,
        " (ulimit -n, as root) or simulate fewer NMs"));
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int64_t low = 0, high = 0;
  if (in >> low >> high && high >= low && nodes > high - low + 1)
    return absl::FailedPreconditionError(absl::StrCat(
        "bench rm: ", nodes, " NMs in other processes need a connection each from 127.0.0.1 to "
        "the RM's one port, and the local port range (net.ipv4.ip_local_port_range ", low, " ",
        high, ") has ", high - low + 1, " ports: widen it or simulate fewer NMs"));
  return absl::OkStatus();
}

}  // namespace

namespace {

// Connections the simulated nodes of this process share (see RunRmBench).
constexpr int kNodeConnections = 16;

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
  // Containers its last ask left the RM to allocate, less those received since: the RM's own
  // outstanding count for the ask, as far as the AM can know it.
  int32_t outstanding = 0;
  Clock::time_point next_allocate;
};

// A directory of mkdtemp's, removed with everything in it when this goes.
class TempDir {
 public:
  static absl::StatusOr<std::unique_ptr<TempDir>> Create(const std::string& prefix) {
    const char* tmp = getenv("TMPDIR");
    std::string path =
        absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/", prefix, "XXXXXX");
    if (mkdtemp(path.data()) == nullptr)
      return absl::InternalError(absl::StrCat("mkdtemp ", path, ": ", strerror(errno)));
    return std::unique_ptr<TempDir>(new TempDir(path));
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The throwaway cluster TLS of a run with NM processes, in `dir`: a CA, the RM's certificate
// and one per node (issued on every core at once; thousands take seconds).
absl::StatusOr<security::TlsFiles> MakeBenchTls(const std::string& dir, int32_t nodes) {
  absl::StatusOr<security::DevTlsLayout> layout = security::EnsureDevTls(dir, {});
  if (!layout.ok()) return layout.status();
  std::atomic<int32_t> next{0};
  std::mutex mu;
  absl::Status error;
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t) {
    threads.emplace_back([&] {
      for (int32_t i = next++; i < nodes; i = next++) {
        auto issued = security::IssueCertificate(dir, dir, security::DaemonRole::kNodeManager,
                                                 SimNodeId(i), {});
        if (!issued.ok()) {
          std::lock_guard<std::mutex> l(mu);
          error.Update(issued.status());
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  if (!error.ok()) return error;
  return security::LoadTlsFiles(layout->rm);
}

// The `bench nm-sim` children of a run: each reads control lines on its stdin (a socket, so
// that writing to a dead child fails instead of raising SIGPIPE) and writes "registered N" and
// then its one-line JSON report on its stdout (a pipe); its stderr is ours. The destructor
// kills (SIGKILL) and reaps every child not yet reaped, so no return path leaves one behind.
class NmSimChildren {
 public:
  NmSimChildren() = default;
  NmSimChildren(const NmSimChildren&) = delete;
  NmSimChildren& operator=(const NmSimChildren&) = delete;
  ~NmSimChildren() {
    for (Child& c : children_) {
      if (c.control_fd >= 0) close(c.control_fd);
      if (c.out_fd >= 0) close(c.out_fd);
      if (c.pid > 0) {
        kill(c.pid, SIGKILL);
        while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
        }
      }
    }
  }

  // Starts `binary` with `args` (argv[1..]) as child number size().
  absl::Status Spawn(const std::string& binary, const std::vector<std::string>& args) {
    int control[2], out[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, control) != 0)
      return absl::InternalError(absl::StrCat("socketpair: ", strerror(errno)));
    if (pipe2(out, O_CLOEXEC) != 0) {
      const int err = errno;
      close(control[0]);
      close(control[1]);
      return absl::InternalError(absl::StrCat("pipe: ", strerror(err)));
    }
    std::vector<std::string> argv_strings = {binary};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_strings) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
      // Only async-signal-safe calls until execv: this process has threads.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (dup2(control[1], 0) < 0 || dup2(out[1], 1) < 0) _exit(127);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    const int err = errno;
    close(control[1]);
    close(out[1]);
    if (pid < 0) {
      close(control[0]);
      close(out[0]);
      return absl::InternalError(absl::StrCat("fork: ", strerror(err)));
    }
    children_.push_back(Child{pid, control[0], out[0], ""});
    send_mu_.push_back(std::make_unique<std::mutex>());
    return absl::OkStatus();
  }

  size_t size() const { return children_.size(); }

  // The next line child `k` writes, without its '\n'. DeadlineExceeded at `deadline`; when it
  // closes its stdout, an error saying how it exited.
  absl::StatusOr<std::string> ReadLine(size_t k, Clock::time_point deadline) {
    Child& c = children_[k];
    char chunk[65536];
    while (true) {
      if (size_t eol = c.buffer.find('\n'); eol != std::string::npos) {
        std::string line = c.buffer.substr(0, eol);
        c.buffer.erase(0, eol + 1);
        return line;
      }
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0)
        return absl::DeadlineExceededError(
            absl::StrCat("nm-sim process ", k, " (pid ", c.pid, ") did not answer in time"));
      pollfd p{c.out_fd, POLLIN, 0};
      const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
      const ssize_t n = ready < 0 ? -1 : read(c.out_fd, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n > 0) {
        c.buffer.append(chunk, static_cast<size_t>(n));
        continue;
      }
      const pid_t pid = c.pid;
      const std::string how = Reap(k);
      return absl::UnavailableError(absl::StrCat("nm-sim process ", k, " (pid ", pid,
                                                 ") ended early: ", how,
                                                 " (its error, if any, is above)"));
    }
  }

  // Writes `text` to child `k`'s control channel; false when it is gone. Thread-safe.
  bool Send(size_t k, const std::string& text) {
    std::lock_guard<std::mutex> l(*send_mu_[k]);
    const int fd = children_[k].control_fd;
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = send(fd, text.data() + done, text.size() - done, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // Waits up to `timeout` for every child to exit (they do once they have reported), then
  // kills those left. Error: the first that did not exit 0.
  absl::Status WaitAll(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    absl::Status st;
    for (size_t k = 0; k < children_.size(); ++k) {
      Child& c = children_[k];
      while (c.pid > 0 && Clock::now() < deadline) {
        int status = 0;
        pid_t r = waitpid(c.pid, &status, WNOHANG);
        if (r == c.pid) {
          c.pid = 0;
          if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
            st.Update(
                absl::InternalError(absl::StrCat("nm-sim process ", k, " ", Describe(status))));
        } else if (r < 0 && errno != EINTR) {
          c.pid = 0;
        } else {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
      if (c.pid > 0) {
        st.Update(absl::DeadlineExceededError(
            absl::StrCat("nm-sim process ", k, " did not exit after its report; killed")));
        Reap(k);
      }
    }
    return st;
  }

 private:
  struct Child {
    pid_t pid;  // 0 once reaped
    int control_fd;
    int out_fd;
    std::string buffer;  // read from out_fd, not yet returned
  };

  static std::string Describe(int status) {
    if (WIFEXITED(status)) {
      return WEXITSTATUS(status) == 127 ? "exited 127 (could not be run?)"
                                        : absl::StrCat("exited ", WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
    return "ended";
  }

  // Kills child `k` if it still runs, reaps it and says how it ended.
  std::string Reap(size_t k) {
    Child& c = children_[k];
    if (c.pid <= 0) return "already reaped";
    int status = 0;
    pid_t r = 0;
    // Give a child that is exiting on its own a moment, so that its exit status is reported.
    for (int i = 0; i < 50; ++i) {
      r = waitpid(c.pid, &status, WNOHANG);
      if (r != 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (r == 0) {
      kill(c.pid, SIGKILL);
      while ((r = waitpid(c.pid, &status, 0)) < 0 && errno == EINTR) {
      }
    }
    c.pid = 0;
    return r < 0 ? "could not be reaped" : Describe(status);
  }

  std::vector<Child> children_;
  std::vector<std::unique_ptr<std::mutex>> send_mu_;
};

}  // namespace

std::string RmBenchReport::ToJson() const {
  nlohmann::json j{{"nodes", nodes},
                   {"apps", apps},
                   {"nm_processes", nm_processes},
                   {"nm_schedule", nm_schedule},
                   {"heartbeat_batch_ms", heartbeat_batch_ms},
                   {"loop_poll_us", loop_poll_us},
                   {"tls", tls},
                   {"duration_s", duration_s},
                   {"warmup_s", warmup_s},
                   {"heartbeats_per_s", heartbeats_per_s},
                   {"heartbeat_latency", LatencyJson(heartbeat)},
                   {"heartbeat_send_lag", LatencyJson(heartbeat_send_lag)},
                   {"allocate_latency", LatencyJson(allocate)},
                   {"containers_allocated", containers_allocated},
                   {"containers_allocated_per_s", containers_allocated_per_s},
                   {"submit_to_am_running", LatencyJson(submit_to_am_running)},
                   {"rpc_errors", rpc_errors},
                   {"loop_busy_fraction", loop_busy_fraction},
                   {"loop_us_per_heartbeat", loop_us_per_heartbeat},
                   {"loop_us_per_allocate", loop_us_per_allocate},
                   {"loop_us_per_allocation", loop_us_per_allocation},
                   {"passes_per_s", passes_per_s},
                   {"loop_us_per_pass", loop_us_per_pass},
                   {"loop_cpu_per_s", loop_cpu_per_s},
                   {"loop_charged_cpu_per_s", loop_charged_cpu_per_s},
                   {"loop_probes", loop_probes},
                   {"loop_us_per_probe", loop_us_per_probe},
                   {"rm_rss_mb", rm_rss_mb},
                   {"rss_kb_per_nm", rss_kb_per_nm},
                   {"process_cpu_per_s", process_cpu_per_s},
                   {"nm_processes_cpu_per_s", nm_processes_cpu_per_s},
                   {"containers_completed", containers_completed}};
  return j.dump(2);
}

std::string RmBenchReport::ToText() const {
  const std::string where =
      nm_processes > 0 ? absl::StrCat("NMs in ", nm_processes, " processes over mutual TLS")
                       : "NMs in this process over plaintext";
  return absl::StrFormat(
      "weft bench rm: %d simulated NMs, %d AMs, %.1f s measured (%s)\n"
      "  heartbeats: %.0f/s, latency p50 %.2f ms, p99 %.2f ms, max %.2f ms, mean %.2f ms\n"
      "  heartbeats sent late by (the simulator's own delay): mean %.2f ms, p99 %.2f ms\n"
      "  allocate:   latency p50 %.2f ms, p99 %.2f ms (%d calls)\n"
      "  containers: %d allocated to AMs, %.0f/s\n"
      "  submit -> AM registered: p50 %.1f ms, p99 %.1f ms (%d apps)\n"
      "  RPC errors: %d\n"
      "  RM loop: %.0f%% busy; %.1f us per heartbeat, %.1f us per Allocate, %.1f us per "
      "container allocated; %.1f passes/s, %.1f us each; its thread's CPU %.4f s per s "
      "(%.4f charged to those)%s\n"
      "  memory: %.0f MiB resident, %.2f KiB per NM\n"
      "  process CPU: %.2f s per s (the RM and the AMs%s)%s\n",
      nodes, apps, duration_s, where, heartbeats_per_s, heartbeat.p50, heartbeat.p99, heartbeat.max,
      heartbeat.mean, heartbeat_send_lag.mean, heartbeat_send_lag.p99, allocate.p50, allocate.p99,
      allocate.count, containers_allocated, containers_allocated_per_s,
      submit_to_am_running.p50, submit_to_am_running.p99, submit_to_am_running.count, rpc_errors,
      100 * loop_busy_fraction, loop_us_per_heartbeat, loop_us_per_allocate, loop_us_per_allocation,
      passes_per_s, loop_us_per_pass, loop_cpu_per_s, loop_charged_cpu_per_s,
      loop_probes > 0 ? absl::StrFormat("; a probe %.1f us (%d)", loop_us_per_probe, loop_probes)
                      : "",
      rm_rss_mb, rss_kb_per_nm, process_cpu_per_s,
      nm_processes > 0 ? "" : ", and the NMs",
      nm_processes > 0
          ? absl::StrFormat("; the NM-sim processes %.2f s per s", nm_processes_cpu_per_s)
          : "");
}

absl::StatusOr<RmBenchReport> RunRmBench(const RmBenchOptions& o) {
  if (o.nodes < 1 || o.apps < 0 || o.client_threads < 1 || o.duration_ms < 1 ||
      o.heartbeat_interval_ms < 1)
    return absl::InvalidArgumentError(
        "bench rm: nodes, threads, duration and interval must be >= 1");
  if (o.warmup_ms < 0)
    return absl::InvalidArgumentError(
        absl::StrCat("bench rm: warm-up ", o.warmup_ms, " ms must be >= 0"));
  if (o.loop_probe_ms < 0 || o.loop_probe_ms > 60000)
    return absl::InvalidArgumentError(absl::StrCat(
        "bench rm: --loop-probe-ms ", o.loop_probe_ms, " must be between 0 (none) and 60000"));
  if (o.nm_processes < 0 || o.nm_processes > o.nodes)
    return absl::InvalidArgumentError(absl::StrCat("bench rm: --nm-processes ", o.nm_processes,
                                                   " must be between 0 and ", "--nodes (", o.nodes,
                                                   "): each process simulates at least one node"));
  const bool processes = o.nm_processes > 0;
  if (processes) {
    if (absl::Status s = CheckConnectionRoom(o.nodes); !s.ok()) return s;
  }
  const double rss_before_mb = ResidentMiB();
  // Destroyed in reverse: the children first (killed and reaped), then the RM, then the
  // certificates' directory.
  std::unique_ptr<TempDir> tls_dir;
  std::optional<security::TlsFiles> tls;
  if (processes) {
    auto dir = TempDir::Create("weft-bench-rm-");
    if (!dir.ok()) return dir.status();
    tls_dir = *std::move(dir);
    auto files = MakeBenchTls(tls_dir->path(), o.nodes);
    if (!files.ok())
      return absl::Status(files.status().code(),
                          absl::StrCat("bench rm: making its TLS certificates in ", tls_dir->path(),
                                       ": ", files.status().message()));
    tls = *std::move(files);
  }
  auto* launcher = new BenchLauncher();
  RmServerOptions so;
  so.auth.mode = UserAuthentication::kDeclared;  // the bench's clients are this process
  so.rm.heartbeat_interval_ms = o.heartbeat_interval_ms;
  so.rm.pass_interval_ms = 50;
  so.call_finishers = o.call_finishers;
  so.heartbeat_batch_ms = o.heartbeat_batch_ms;
  so.loop_poll_us = o.loop_poll_us;
  // Long enough for the registration phase: an NM-sim child's nodes heartbeat only once all of
  // them have registered, which over TLS at 10,000 nodes can take minutes on a small host; a
  // node the RM marked LOST meanwhile would measure its recovery, not the RM.
  so.rm.nm_expiry_ms = std::max<int64_t>(600000, 30 * o.heartbeat_interval_ms);
  so.launcher.reset(launcher);
  so.tls = tls;
  auto server = RmServer::Start(std::move(so));
  if (!server.ok()) return server.status();
  auto channel =
      grpc::CreateChannel((*server)->address(), tls ? security::TlsChannelCredentials(tls->ca_pem)
                                                    : grpc::InsecureChannelCredentials());
  auto tracker = v1::TrackerService::NewStub(channel);
  auto client = v1::ClientService::NewStub(channel);
  auto am_stub = v1::AmService::NewStub(channel);
  NmSimChildren children;

  // Register every node (not measured): here, or in the children, nodes [first[k], first[k+1])
  // in child k.
  // Simulated nodes: containers run on them for a while, then their heartbeats report them done.
  // In this process they share kNodeConnections connections (one would carry every heartbeat
  // through one HTTP/2 transport, whose reads and writes gRPC serializes: about 8,000 calls a
  // second here, the simulator's limit, not the RM's).
  std::vector<SimNmNode> nodes(processes ? 0 : static_cast<size_t>(o.nodes));
  std::vector<std::unique_ptr<v1::TrackerService::Stub>> node_stubs;
  for (int k = 0; !processes && k < kNodeConnections; ++k) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    node_stubs.push_back(v1::TrackerService::NewStub(
        grpc::CreateCustomChannel((*server)->address(), grpc::InsecureChannelCredentials(), args)));
  }
  std::vector<int32_t> first;
  for (int32_t i = 0; i < static_cast<int32_t>(nodes.size()); ++i) {
    SimNmNode& n = nodes[static_cast<size_t>(i)];
    n.stub = node_stubs[static_cast<size_t>(i) % node_stubs.size()].get();
    v1::RegisterNodeManagerRequest req = n.Register(i, o.node_capability);
    v1::RegisterNodeManagerResponse resp;
    grpc::ClientContext ctx;
    grpc::Status s = tracker->RegisterNodeManager(&ctx, req, &resp);
    if (!s.ok())
      return absl::UnavailableError(absl::StrCat("registering ", n.id, ": ", s.error_message()));
    n.Registered(resp);
  }
  // Heartbeat them from now, the first heartbeats spread over one interval, as real NMs would be
  // (counted from before the registrations, a large cluster's would all be overdue at once).
  std::optional<SimNmHeartbeats> heartbeat_driver;
  if (!nodes.empty())
    heartbeat_driver.emplace(&nodes, std::chrono::milliseconds(o.heartbeat_interval_ms),
                             o.nm_schedule);
  if (processes) {
    // The binary by its own name (for ps), not "/proc/self/exe".
    std::error_code ec;
    std::string binary = std::filesystem::canonical(o.nm_sim_binary, ec).string();
    if (ec) binary = o.nm_sim_binary;
    for (int32_t k = 0; k <= o.nm_processes; ++k)
      first.push_back(static_cast<int32_t>(static_cast<int64_t>(k) * o.nodes / o.nm_processes));
    for (int32_t k = 0; k < o.nm_processes; ++k) {
      const std::vector<std::string> args = {
          "bench",
          "nm-sim",
          "--rm",
          (*server)->address(),
          "--nodes",
          absl::StrCat(first[k + 1] - first[k]),
          "--first-index",
          absl::StrCat(first[k]),
          "--heartbeat-ms",
          absl::StrCat(o.heartbeat_interval_ms),
          "--nm-schedule",
          SimNmScheduleName(o.nm_schedule),
          "--seconds",
          absl::StrCat(static_cast<double>(o.duration_ms) / 1000.0),
          "--threads",
          absl::StrCat(o.client_threads),
          "--node-memory-mb",
          absl::StrCat(o.node_capability[kMemoryMb]),
          "--node-vcores",
          absl::StrCat(o.node_capability[kVcores]),
          "--tls-dir",
          tls_dir->path(),
          "--parent-control"};
      if (absl::Status s = children.Spawn(binary, args); !s.ok())
        return absl::Status(
            s.code(), absl::StrCat("bench rm: starting ", binary, " bench nm-sim: ", s.message()));
    }
    // Registration includes every node's TLS handshake.
    const auto registered_by = Clock::now() + std::chrono::minutes(5);
    for (size_t k = 0; k < children.size(); ++k) {
      auto line = children.ReadLine(k, registered_by);
      if (!line.ok()) return line.status();
      if (line->rfind("registered ", 0) != 0)
        return absl::InternalError(
            absl::StrCat("nm-sim process ", k, " said '", *line, "', not 'registered N'"));
    }
  }
  // Where a container's node is simulated: its index here, or its child.
  std::map<std::string, size_t> node_index;
  for (int32_t i = 0; i < o.nodes; ++i) {
    const size_t where = processes
                             ? static_cast<size_t>(std::upper_bound(first.begin(), first.end(), i) -
                                                   first.begin() - 1)
                             : static_cast<size_t>(i);
    node_index[SimNodeId(i)] = where;
  }

  // Submit the apps.
  std::vector<SimAm> ams(static_cast<size_t>(o.apps));
  for (SimAm& am : ams) {
    grpc::ClientContext c1, c2;
    v1::NewApplicationResponse app;
    if (grpc::Status s = client->NewApplication(&c1, {}, &app); !s.ok())
      return absl::UnavailableError(absl::StrCat("NewApplication: ", s.error_message()));
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

  // Drive: the nodes heartbeat on their own schedule (SimNmHeartbeats, here or in the
  // children); each client thread drives a slice of the AMs. The measured interval starts at
  // t0, after the warm-up.
  const auto t0 = Clock::now() + std::chrono::milliseconds(o.warmup_ms);
  const auto duration = std::chrono::milliseconds(o.duration_ms);
  if (heartbeat_driver) heartbeat_driver->Measure(t0, duration);
  const auto deadline = t0 + duration;
  std::mutex merge_mu;
  std::vector<double> hb_lat, alloc_lat, am_lat;
  std::atomic<int64_t> allocated{0}, errors{0};
  // Containers handed out to an AM are queued to their simulated node (by index) to finish, or
  // sent to the child simulating it.
  auto worker = [&](int32_t tid) {
    std::vector<double> my_alloc, my_am;
    std::vector<std::string> to_child(children.size());
    while (Clock::now() < deadline) {
      auto now = Clock::now();
      auto next_wake = now + std::chrono::milliseconds(20);
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
        // An ask sets the RM's outstanding count; it does not add to it. Sent while containers
        // of the last ask may be allocated and not yet received, it would ask for those again,
        // and the AM would come to hold more than it keeps asked for. So the AM asks again only
        // once all it asked for has arrived (as AMRMClient users avoid over-allocation), and
        // an Allocate without an ask only collects.
        if (am.outstanding == 0 && am.held < o.containers_per_app) {
          v1::ResourceRequest* ask = req.add_asks();
          ask->set_priority(1);
          ask->set_resource_name("*");
          ask->set_relax_locality(true);
          (*ask->mutable_capability()->mutable_values())["memory-mb"] = o.container[kMemoryMb];
          (*ask->mutable_capability()->mutable_values())["vcores"] = o.container[kVcores];
          am.outstanding = o.containers_per_app - am.held;
          ask->set_num_containers(am.outstanding);
        }
        v1::AllocateResponse resp;
        auto c0 = Clock::now();
        const bool measured = c0 >= t0;
        grpc::Status s = am_stub->Allocate(&ctx, req, &resp);
        if (measured) my_alloc.push_back(MsSince(c0));
        if (!s.ok()) {
          if (measured) ++errors;
          // The ask is sent again (it sets the count, so one that did arrive is not doubled).
          if (req.asks_size() > 0) am.outstanding = 0;
          continue;
        }
        am.response_id = resp.response_id();
        am.held += resp.allocated_containers_size() - resp.completed_containers_size();
        am.outstanding = std::max(0, am.outstanding - resp.allocated_containers_size());
        if (measured) allocated += resp.allocated_containers_size();
        auto finish = Clock::now() + std::chrono::milliseconds(o.container_run_ms);
        for (const v1::Container& c : resp.allocated_containers()) {
          auto it = node_index.find(c.node_id());
          if (it == node_index.end()) continue;
          if (processes) {
            absl::StrAppend(&to_child[it->second], "run ", c.node_id(), " ", c.container_id(), " ",
                            o.container_run_ms, "\n");
            continue;
          }
          std::lock_guard<std::mutex> l(nodes[it->second].mu);
          nodes[it->second].running.emplace_back(finish, c.container_id());
        }
        for (size_t k = 0; k < to_child.size(); ++k) {
          if (to_child[k].empty()) continue;
          children.Send(k, to_child[k]);  // a child gone is reported with its report
          to_child[k].clear();
        }
      }
      std::this_thread::sleep_until(std::min(next_wake, deadline));
    }
    std::lock_guard<std::mutex> l(merge_mu);
    alloc_lat.insert(alloc_lat.end(), my_alloc.begin(), my_alloc.end());
    am_lat.insert(am_lat.end(), my_am.begin(), my_am.end());
  };
  std::vector<std::thread> threads;
  for (int32_t t = 0; t < o.client_threads; ++t) threads.emplace_back(worker, t);
  // The probes, posted to the loop through the measured interval: the first after the loop's
  // statistics before it were read, and the last has run once those after it are (the loop
  // runs its tasks in order), so loop_cpu_per_s can leave out exactly their time.
  std::optional<LoopProbe> probe;  // only when asked for: its table is memory the RM's RSS counts
  std::atomic<int64_t> probe_nanos{0}, probes{0};
  absl::Notification measuring;
  if (o.loop_probe_ms > 0) {
    probe.emplace();
    threads.emplace_back([&] {
      measuring.WaitForNotification();
      const auto every = std::chrono::milliseconds(o.loop_probe_ms);
      for (auto at = Clock::now(); at < deadline; at += every) {
        std::this_thread::sleep_until(at);
        (*server)->Post([&](ResourceManager&) {
          probe_nanos += probe->Run();
          ++probes;
        });
      }
    });
  }
  std::this_thread::sleep_until(t0);
  const LoopStats loop_before = (*server)->LoopStatistics();
  measuring.Notify();
  const double cpu_before = ProcessCpuSeconds();
  for (size_t k = 0; k < children.size(); ++k) children.Send(k, "start\n");
  for (auto& t : threads) t.join();
  // The measured interval ends here (its figures are read before waiting for calls in flight
  // and for the children's reports).
  const double secs = MsSince(t0) / 1000.0;
  const double cpu_s = ProcessCpuSeconds() - cpu_before;
  const LoopStats loop_after = (*server)->LoopStatistics();
  const double rss_mb = ResidentMiB();
  SimNmTally tally;
  if (heartbeat_driver) tally = heartbeat_driver->Stop();
  hb_lat = std::move(tally.latencies_ms);
  std::vector<double> hb_lag = std::move(tally.send_lags_ms);
  errors += tally.errors;

  // The children's reports: their heartbeats, over the same interval (from "start").
  double child_heartbeats_per_s = 0;
  double nm_cpu_per_s = 0;
  int64_t completed = 0;
  const auto reports_by = deadline + std::chrono::minutes(2);
  for (size_t k = 0; k < children.size(); ++k) {
    auto line = children.ReadLine(k, reports_by);
    if (!line.ok()) return line.status();
    auto report = NmSimReport::FromJson(*line);
    if (!report.ok())
      return absl::InternalError(
          absl::StrCat("nm-sim process ", k, ": ", report.status().message()));
    child_heartbeats_per_s += report->heartbeats_per_s;
    errors += report->rpc_errors;
    completed += report->containers_completed;
    nm_cpu_per_s += report->process_cpu_per_s;
    hb_lat.insert(hb_lat.end(), report->heartbeat_samples_ms.begin(),
                  report->heartbeat_samples_ms.end());
    hb_lag.insert(hb_lag.end(), report->send_lag_samples_ms.begin(),
                  report->send_lag_samples_ms.end());
  }
  if (absl::Status s = children.WaitAll(std::chrono::seconds(10)); !s.ok()) return s;
  (*server)->Shutdown();

  RmBenchReport r;
  r.nodes = o.nodes;
  r.apps = o.apps;
  r.nm_processes = o.nm_processes;
  r.nm_schedule = SimNmScheduleName(o.nm_schedule);
  r.heartbeat_batch_ms = o.heartbeat_batch_ms;
  r.loop_poll_us = o.loop_poll_us;
  r.tls = tls.has_value();
  r.duration_s = secs;
  r.warmup_s = static_cast<double>(o.warmup_ms) / 1000.0;
  r.heartbeats_per_s = processes ? child_heartbeats_per_s
                                 : static_cast<double>(tally.heartbeats) /
                                       std::chrono::duration<double>(duration).count();
  r.heartbeat = SummarizeLatencies(std::move(hb_lat));
  r.heartbeat_send_lag = SummarizeLatencies(std::move(hb_lag));
  r.allocate = SummarizeLatencies(std::move(alloc_lat));
  r.containers_allocated = allocated.load();
  r.containers_allocated_per_s = static_cast<double>(allocated.load()) / secs;
  r.containers_completed = completed;
  r.submit_to_am_running = SummarizeLatencies(std::move(am_lat));
  r.rpc_errors = errors.load();
  r.loop_busy_fraction =
      static_cast<double>(loop_after.busy_nanos - loop_before.busy_nanos) / (secs * 1e9);
  r.loop_us_per_heartbeat = loop_after.MicrosPerEvent(loop_before, "TrackerService/NodeHeartbeat");
  r.loop_us_per_allocate = loop_after.MicrosPerEvent(loop_before, "AmService/Allocate");
  r.loop_us_per_allocation = loop_after.PassMicrosPerAllocation(loop_before);
  r.loop_us_per_pass = loop_after.MicrosPerEvent(loop_before, kPassWork);
  r.passes_per_s = static_cast<double>(loop_after.Since(loop_before, kPassWork).count) / secs;
  r.loop_probes = probes.load();
  r.loop_us_per_probe =
      r.loop_probes > 0 ? static_cast<double>(probe_nanos.load()) / 1e3 / r.loop_probes : 0;
  r.loop_cpu_per_s =
      static_cast<double>(loop_after.cpu_nanos - loop_before.cpu_nanos - probe_nanos.load()) /
      (secs * 1e9);
  r.loop_charged_cpu_per_s =
      static_cast<double>(loop_after.ChargedNanosSince(loop_before)) / (secs * 1e9);
  r.rm_rss_mb = rss_mb;
  r.rss_kb_per_nm = (rss_mb - rss_before_mb) * 1024 / o.nodes;
  r.process_cpu_per_s = cpu_s / secs;
  r.nm_processes_cpu_per_s = nm_cpu_per_s;
  return r;
}

}  // namespace weft::rm
