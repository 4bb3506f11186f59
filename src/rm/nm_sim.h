// Copyright Weft authors. `weft bench nm-sim`: simulated NodeManagers in a process of their
// own, heartbeating a ResourceManager over gRPC (mutual TLS, each node with its own
// certificate and connection, as real NMs). `weft bench rm --nm-processes K` runs K of them so
// that the RM's process holds only the RM and the simulated AMs.
//
// Containers. Weft's NMs never hear of containers in heartbeats (AMs start them through
// ContainerService), so a simulated NM learns of the containers placed on it from whoever runs
// the AMs. Under `weft bench rm` that is the parent, over the child's stdin (the control
// channel below): "run <node id> <container id> <ms>" and the node reports the container
// COMPLETE in its first heartbeat at least <ms> after the line arrived. Run standalone
// (`--rm HOST:PORT` from another host) there is no such channel: its nodes complete nothing,
// and the run is heartbeat load only.
//
// Control channel (control_fd, one line per message, '\n'-terminated, parent -> child):
//   start                                  begin the measured interval now
//   run <node id> <container id> <ms>      a container placed on one of this process's nodes
// End of file on it means the parent is gone: the run stops and fails.
#ifndef WEFT_RM_NM_SIM_H_
#define WEFT_RM_NM_SIM_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <queue>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "common/resource.h"
#include "rm/bench_types.h"
#include "weft/v1/tracker.grpc.pb.h"

namespace weft::rm {

// The id of simulated node `index`, "sim-node-%05d:8041" (also `weft bench rm`'s in-process
// nodes), and its rack, "/rack%03d" of index / 40.
std::string SimNodeId(int32_t index);
std::string SimNodeRack(int32_t index);

// One simulated NM's side of the tracker protocol, as a real NM speaks it; shared by
// `weft bench rm`'s in-process nodes and nm-sim's. Thread-compatible: callers guard `running`
// (the parent or the control reader adds to it while a heartbeat takes from it).
struct SimNmProtocol {
  std::string id;
  int32_t response_id = 0;
  int32_t key_id = 0;  // the container key it knows, told to the RM as a real NM does
  // The interval the RM last told it (NodeHeartbeatResponse.next_heartbeat_interval_ms, the
  // adaptive intervals of rm/heartbeat_interval.h), ms; 0 while it told none.
  int64_t told_interval_ms = 0;
  // Containers placed on it: (finish time on the steady clock, container id).
  std::vector<std::pair<std::chrono::steady_clock::time_point, std::string>> running;

  // Makes this simulated node `index` (SimNodeId) and returns its registration, offering
  // `capability`'s memory and vcores.
  v1::RegisterNodeManagerRequest Register(int32_t index, const Resource& capability);
  void Registered(const v1::RegisterNodeManagerResponse& reply);
  // The heartbeat to send at `now`: healthy, and every container of `running` due by then as
  // COMPLETE (taken out of `running`, in the order they were added).
  v1::NodeHeartbeatRequest Heartbeat(std::chrono::steady_clock::time_point now);
  // Keeps what a heartbeat reply tells the NM: the response id, the keys and the next interval
  // when sent.
  void Heard(const v1::NodeHeartbeatResponse& reply);
};

// A simulated NM as SimNmHeartbeats drives it: the protocol state, the stub it calls (its own
// connection under TLS, or one shared by all) and the lock of `running`, which whoever places
// containers on the node adds to while a heartbeat takes from it.
struct SimNmNode : SimNmProtocol {
  v1::TrackerService::Stub* stub = nullptr;  // not owned; outlives the SimNmHeartbeats
  std::mutex mu;                             // guards `running`
};

// What SimNmHeartbeats measured: the heartbeats sent within the measured interval, those that
// failed, the containers they reported COMPLETE (of those that succeeded), each one's latency,
// and how late each was sent, ms. The send lag runs from the time the node's schedule set to
// the send: the simulator's own delay (its sender thread busy or waiting for a core), which
// lowers the rate offered without being the RM's doing. Under after-reply a node sends one
// heartbeat per interval + latency + send lag.
struct SimNmTally {
  int64_t heartbeats = 0;
  int64_t errors = 0;
  int64_t completed = 0;
  std::vector<double> latencies_ms;
  std::vector<double> send_lags_ms;
};

// Heartbeats simulated NMs, each on its own schedule (SimNmSchedule), never two of a node's in
// flight at once. Calls go through gRPC's callback API, so thousands can be in flight from one
// thread: the load is set by the nodes' schedule, not by how many threads the simulator has (a
// synchronous caller with T threads sends at most T / latency per second, which a saturated
// RM's latency then lowers: the simulator, not the RM, would be measured).
// Thread-safe: Measure and Stop from any thread.
class SimNmHeartbeats {
 public:
  using Clock = std::chrono::steady_clock;
  // Starts heartbeating every node of `nodes` (registered, each with its stub), the first
  // heartbeats spread over one interval from now. `nodes` outlives this.
  SimNmHeartbeats(std::vector<SimNmNode>* nodes, std::chrono::milliseconds interval,
                  SimNmSchedule schedule);
  ~SimNmHeartbeats();  // Stop()s
  SimNmHeartbeats(const SimNmHeartbeats&) = delete;
  SimNmHeartbeats& operator=(const SimNmHeartbeats&) = delete;

  // The heartbeats sent within [from, from + length) are the ones measured (none until this is
  // called). Once; later calls are ignored.
  void Measure(Clock::time_point from, Clock::duration length);
  // Sends no more heartbeats, waits for those in flight (each ends by its deadline) and returns
  // what was measured. Idempotent: later calls return an empty tally.
  SimNmTally Stop();

  // The deadline of one heartbeat call.
  static constexpr std::chrono::milliseconds kCallTimeout{30000};

 private:
  struct Call;
  using Due = std::pair<Clock::time_point, size_t>;  // a node's next heartbeat time, its index
  void Run();
  void Send(size_t index, Clock::time_point due);
  void Done(Call* call, bool ok, Clock::time_point sent);

  std::vector<SimNmNode>& nodes_;
  const std::chrono::milliseconds interval_;
  const SimNmSchedule schedule_;
  std::mutex mu_;
  std::condition_variable wake_;  // the sender: a node due earlier than it sleeps to; stopping
  std::condition_variable idle_;  // Stop: the last call in flight ended
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;  // nodes not in flight
  Clock::time_point sleeping_until_ = Clock::time_point::max();
  int64_t in_flight_ = 0;
  bool stopping_ = false;
  bool measuring_ = false;
  Clock::time_point from_, to_;
  SimNmTally tally_;
  std::thread sender_;
};

struct NmSimOptions {
  std::string rm_address;   // host:port of the RM's port (TrackerService)
  int32_t nodes = 1000;     // simulated NMs in this process
  int32_t first_index = 0;  // they are SimNodeId(first_index) .. SimNodeId(first_index+nodes-1)
  int64_t heartbeat_interval_ms = 1000;
  SimNmSchedule schedule = SimNmSchedule::kAfterReply;
  int64_t duration_ms = 30000;  // measured interval, from "start" (or from registration)
  int32_t threads = 4;          // threads registering the nodes (heartbeats: SimNmHeartbeats)
  Resource node_capability = Resource::Of(65536, 32);
  // A TLS directory (security/tls.h layout): ca.pem, and nm-<node id>.pem/.key for every node
  // (`weft certs issue --role nm --name <node id>`). Each node connects with its own
  // certificate, as the RM requires of TrackerService callers. Empty: plaintext, which only an
  // RM without TLS (in-process tests) accepts.
  std::string tls_dir;
  // The control channel's read end (see above), or -1 when standalone: the measured interval
  // then starts once every node has registered.
  int control_fd = -1;
  // Called once every node has registered, before the measured interval (and before "start").
  std::function<void()> on_registered;
};

struct NmSimReport {
  int32_t nodes = 0;
  int32_t first_index = 0;
  double duration_s = 0;   // the measured interval
  int64_t heartbeats = 0;  // sent within it
  double heartbeats_per_s = 0;
  LatencyMs heartbeat;
  LatencyMs send_lag;                // SimNmTally::send_lags_ms
  int64_t rpc_errors = 0;            // failed heartbeats within it
  int64_t containers_completed = 0;  // reported COMPLETE within it
  // This process's CPU time (user + system) over the measured interval per second of it: what
  // the simulator costs the host it shares with the RM under test.
  double process_cpu_per_s = 0;
  // Every measured heartbeat's latency and send lag, ms (only kept with `samples`), so that the
  // parent can compute percentiles over all its children.
  std::vector<double> heartbeat_samples_ms;
  std::vector<double> send_lag_samples_ms;

  // JSON; with `samples`, on one line with "heartbeat_samples_ms" and "send_lag_samples_ms"
  // (for the parent).
  std::string ToJson(bool samples) const;
  static absl::StatusOr<NmSimReport> FromJson(const std::string& json);
  std::string ToText() const;
};

// Registers the nodes (in parallel over `threads`), then heartbeats every one of them every
// interval (SimNmHeartbeats) until the measured interval ends. Errors: invalid options, unreadable
// TLS files (naming the file), a node that cannot register (naming it), and end of file on the
// control channel. Heartbeat failures are counted, not returned.
absl::StatusOr<NmSimReport> RunNmSim(const NmSimOptions& options);

}  // namespace weft::rm

#endif  // WEFT_RM_NM_SIM_H_
