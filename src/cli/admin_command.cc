#include "cli/admin_command.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "common/rm_failover.h"
#include "common/terminal_text.h"
#include "nlohmann/json.hpp"
#include "rm/nm_sim.h"
#include "rm/rm_bench.h"
#include "weft/v1/admin.grpc.pb.h"

namespace weft::cli {
namespace {

struct QueueFlags {
  std::string rm_address;
  std::string queue;
  bool json = false;
};

void QueueRows(const v1::QueueInfo& q, int depth, std::vector<std::vector<std::string>>* rows) {
  rows->push_back({std::string(2 * depth, ' ') + q.name(), q.state(), FormatResource(q.used()),
                   FormatResource(q.pending()), FormatResource(q.entitlement()),
                   FormatResource(q.limit()), absl::StrFormat("%g", q.weight()),
                   q.capacity() < 0 ? "-" : absl::StrFormat("%g%%", q.capacity()),
                   absl::StrCat(q.num_running_applications(), "/", q.num_applications())});
  for (const auto& c : q.children()) QueueRows(c, depth + 1, rows);
}

int QueueStatus(const QueueFlags& f) {
  RmClient client(f.rm_address, DefaultUser());
  v1::GetQueueRequest req;
  req.set_queue(f.queue);
  req.set_recursive(true);
  v1::GetQueueResponse resp;
  if (absl::Status s = client.Call(&v1::ClientService::Stub::GetQueue, req, &resp); !s.ok())
    return PrintError(s.message());
  if (f.json) {
    std::cout << ToJson(resp) << "\n";
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {{"QUEUE", "STATE", "USED", "PENDING", "ENTITLEMENT",
                                                 "LIMIT", "WEIGHT", "CAPACITY", "APPS(RUN/ALL)"}};
  QueueRows(resp.queue(), 0, &rows);
  PrintTable(rows);
  return 0;
}

struct AdminFlags {
  std::string rm_address;
  std::vector<std::string> nodes;
};

// AdminService shares the RM's port (and its TLS). Its calls carry the caller's credentials
// (AddClientCredentials) and act as nobody else.
int RefreshQueues(const AdminFlags& f) {
  RmClient client(f.rm_address, /*user=*/"");
  v1::RefreshQueuesResponse resp;
  if (absl::Status s =
          client.Call(&v1::AdminService::Stub::RefreshQueues, v1::RefreshQueuesRequest(), &resp);
      !s.ok())
    return PrintError(s.message());
  std::cout << "queues refreshed\n";
  return 0;
}

int RefreshNodes(const AdminFlags& f, bool decommission) {
  RmClient client(f.rm_address, /*user=*/"");
  v1::RefreshNodesRequest req;
  for (const auto& n : f.nodes) {
    if (decommission) {
      req.add_decommission(n);
    } else {
      req.add_recommission(n);
    }
  }
  v1::RefreshNodesResponse resp;
  if (absl::Status s = client.Call(&v1::AdminService::Stub::RefreshNodes, req, &resp); !s.ok())
    return PrintError(s.message());
  std::cout << (decommission ? "decommissioned: " : "recommissioned: ")
            << EscapeForTerminal(absl::StrJoin(f.nodes, " ")) << "\n";
  return 0;
}

// ---- Node attributes, YARN's `yarn nodeattributes -replace|-add|-remove` syntax:
// "node1:attr=value,attr2=value2 node2:attr=value" (for remove: "node1:attr,attr2").

struct NodeAttributesFlags {
  std::string rm_address;
  std::string replace, add, remove;
};

int NodeAttributes(const NodeAttributesFlags& f) {
  const int given = !f.replace.empty() + !f.add.empty() + !f.remove.empty();
  if (given != 1) return PrintError("give exactly one of --replace, --add and --remove");
  v1::NodeAttributesRequest req;
  std::string spec = f.replace;
  req.set_operation(v1::NodeAttributesRequest::REPLACE);
  if (!f.add.empty()) {
    spec = f.add;
    req.set_operation(v1::NodeAttributesRequest::ADD);
  } else if (!f.remove.empty()) {
    spec = f.remove;
    req.set_operation(v1::NodeAttributesRequest::REMOVE);
  }
  const bool removing = req.operation() == v1::NodeAttributesRequest::REMOVE;
  for (absl::string_view mapping : absl::StrSplit(spec, ' ', absl::SkipWhitespace())) {
    // The node is before the last ':' ahead of the first attribute (node ids are host:port).
    const size_t eq = mapping.find('=');
    const size_t colon = mapping.substr(0, eq).rfind(':');
    if (colon == absl::string_view::npos || colon == 0)
      return PrintError(absl::StrCat("'", mapping, "' is not NODE:ATTRIBUTE",
                                     removing ? "" : "=VALUE", "[,...]"));
    v1::NodeAttributesMapping* m = req.add_mappings();
    m->set_node(std::string(mapping.substr(0, colon)));
    for (absl::string_view kv : absl::StrSplit(mapping.substr(colon + 1), ',', absl::SkipEmpty())) {
      const size_t eq = kv.find('=');
      if (removing) {
        (*m->mutable_attributes())[std::string(kv.substr(0, eq))] = "";
        continue;
      }
      if (eq == absl::string_view::npos || eq == 0)
        return PrintError(absl::StrCat("'", kv, "' in '", mapping, "' is not ATTRIBUTE=VALUE"));
      (*m->mutable_attributes())[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  if (req.mappings().empty()) return PrintError("no node mappings given");
  RmClient client(f.rm_address, /*user=*/"");
  v1::NodeAttributesResponse resp;
  if (absl::Status s = client.Call(&v1::AdminService::Stub::NodeAttributes, req, &resp); !s.ok())
    return PrintError(s.message());
  std::cout << "node attributes set on " << req.mappings_size() << " node(s)\n";
  return 0;
}

// ---- RM high availability: ha-status and failover.

struct HaFlags {
  std::string rm_address;
  bool json = false;
  int64_t hold_ms = 0;
  double timeout_s = 30;
};

// Deadline of one GetServiceState, ms: an RM that does not answer within it is unreachable.
constexpr int64_t kServiceStateTimeoutMs = 3000;
// Between the polls of `admin failover`, ms.
constexpr int64_t kFailoverPollMs = 200;

// One RM of the list as it answered GetServiceState.
struct RmState {
  std::string address;
  absl::Status error;  // OK when it answered: then `state` holds its answer
  v1::GetServiceStateResponse state;

  // Without HA an RM is active (an RM from before HA leaves ha_state empty).
  bool active() const {
    return error.ok() &&
           (state.ha_state() == "ACTIVE" || (!state.ha_enabled() && state.ha_state().empty()));
  }
  // "rm1 (127.0.0.1:40001)", or the address alone without an RM id.
  std::string Name() const {
    return error.ok() && !state.rm_id().empty() ? absl::StrCat(state.rm_id(), " (", address, ")")
                                                : address;
  }
  // "ACTIVE", "STANDBY", "unreachable: <reason>".
  std::string Describe() const {
    if (!error.ok()) return absl::StrCat("unreachable: ", error.message());
    if (!state.ha_enabled()) return "ACTIVE (HA off)";
    return state.ha_state().empty() ? "-" : state.ha_state();
  }
};

// The AdminService stubs of every RM of a list, to ask each in turn.
class RmAdminStubs {
 public:
  static absl::StatusOr<RmAdminStubs> Create(const std::string& list) {
    absl::StatusOr<std::vector<std::string>> addresses = ParseRmAddresses(list);
    if (!addresses.ok())
      return absl::InvalidArgumentError(absl::StrCat("--rm: ", addresses.status().message()));
    absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
        ClusterChannelCredentials();
    if (!credentials.ok()) return credentials.status();
    RmAdminStubs out;
    out.addresses_ = *std::move(addresses);
    for (const std::string& address : out.addresses_)
      out.stubs_.push_back(v1::AdminService::NewStub(
          grpc::CreateCustomChannel(address, *credentials, FastReconnectChannelArgs())));
    return out;
  }

  const std::vector<std::string>& addresses() const { return addresses_; }

  // Asks every RM at once, each with a deadline of kServiceStateTimeoutMs. Errors: the
  // caller's credentials (AddClientCredentials); an RM that does not answer is an RmState
  // with an error.
  absl::StatusOr<std::vector<RmState>> QueryAll() {
    std::vector<RmState> states(addresses_.size());
    std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
    for (size_t i = 0; i < addresses_.size(); ++i) {
      auto ctx = Context(kServiceStateTimeoutMs);
      if (!ctx.ok()) return ctx.status();
      contexts.push_back(*std::move(ctx));
      states[i].address = addresses_[i];
    }
    std::vector<std::thread> threads;
    for (size_t i = 0; i < addresses_.size(); ++i) {
      threads.emplace_back([this, i, &states, &contexts] {
        grpc::Status s = stubs_[i]->GetServiceState(contexts[i].get(), v1::GetServiceStateRequest(),
                                                    &states[i].state);
        if (!s.ok())
          states[i].error =
              absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
      });
    }
    for (std::thread& t : threads) t.join();
    return states;
  }

  // TransitionToStandby on the RM at `index`.
  absl::Status TransitionToStandby(size_t index, int64_t hold_ms) {
    auto ctx = Context(RmClient::kCallTimeoutMs);
    if (!ctx.ok()) return ctx.status();
    v1::TransitionToStandbyRequest req;
    req.set_hold_ms(hold_ms);
    v1::TransitionToStandbyResponse resp;
    grpc::Status s = stubs_[index]->TransitionToStandby(ctx->get(), req, &resp);
    if (s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
        s.error_code() == grpc::StatusCode::UNAUTHENTICATED)
      return absl::PermissionDeniedError(absl::StrCat(
          s.error_message(),
          " (a failover is for cluster admins: set WEFT_SECRET_FILE to the admin secret, or run "
          "as an admin user)"));
    return FromGrpc(s, addresses_[index]);
  }

 private:
  static absl::StatusOr<std::unique_ptr<grpc::ClientContext>> Context(int64_t timeout_ms) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    if (absl::Status s = AddClientCredentials(ctx.get(), ""); !s.ok()) return s;
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
    return ctx;
  }

  std::vector<std::string> addresses_;
  std::vector<std::unique_ptr<v1::AdminService::Stub>> stubs_;
};

// "rm1 (a:1) ACTIVE, rm2 (b:2) STANDBY, c:3 unreachable: ...", for errors.
std::string Summary(const std::vector<RmState>& states) {
  std::vector<std::string> parts;
  for (const RmState& s : states) parts.push_back(absl::StrCat(s.Name(), " ", s.Describe()));
  return absl::StrJoin(parts, "; ");
}

int HaStatus(const HaFlags& f) {
  auto stubs = RmAdminStubs::Create(f.rm_address);
  if (!stubs.ok()) return PrintError(stubs.status().message());
  auto states = stubs->QueryAll();
  if (!states.ok()) return PrintError(states.status().message());
  const int actives = static_cast<int>(
      std::count_if(states->begin(), states->end(), [](const RmState& s) { return s.active(); }));
  if (f.json) {
    nlohmann::json out = nlohmann::json::object();
    out["resourceManagers"] = nlohmann::json::array();
    for (const RmState& s : *states) {
      nlohmann::json rm = {{"address", s.address}, {"reachable", s.error.ok()}};
      if (s.error.ok()) {
        rm["serviceState"] = nlohmann::json::parse(ToJson(s.state), nullptr,
                                                   /*allow_exceptions=*/false);
      } else {
        rm["error"] = std::string(s.error.message());
      }
      out["resourceManagers"].push_back(std::move(rm));
    }
    out["activeCount"] = actives;
    std::cout << out.dump() << std::endl;
  } else {
    std::vector<std::vector<std::string>> rows = {
        {"ADDRESS", "RM-ID", "HA-STATE", "EPOCH", "ACTIVE"}};
    for (const RmState& s : *states) {
      if (!s.error.ok()) {
        rows.push_back({s.address, "-", s.Describe()});  // the reason last: no column after it
        continue;
      }
      const v1::GetServiceStateResponse& r = s.state;
      std::string active = "-";
      if (!r.active_rm_id().empty() || !r.active_address().empty())
        active = absl::StrCat(r.active_rm_id().empty() ? "?" : r.active_rm_id(), " (",
                              r.active_address().empty() ? "?" : r.active_address(), ")");
      rows.push_back({s.address, r.rm_id().empty() ? "-" : r.rm_id(), s.Describe(),
                      absl::StrCat(r.rm_epoch()), active});
    }
    PrintTable(rows);
  }
  if (actives != 1)
    return PrintError(absl::StrCat(actives, " of ", states->size(),
                                   " ResourceManagers report ACTIVE; a healthy cluster has "
                                   "exactly one"));
  return 0;
}

int Failover(const HaFlags& f) {
  if (f.hold_ms < 0) return PrintError(absl::StrCat("--hold-ms ", f.hold_ms, " is negative"));
  auto stubs = RmAdminStubs::Create(f.rm_address);
  if (!stubs.ok()) return PrintError(stubs.status().message());
  if (stubs->addresses().size() < 2)
    return PrintError(absl::StrCat(
        "a failover needs the cluster's ResourceManagers, --rm HOST:PORT,HOST:PORT,... (or "
        "$WEFT_RM): with only ",
        stubs->addresses()[0], " there is no other RM to take over"));
  auto before = stubs->QueryAll();
  if (!before.ok()) return PrintError(before.status().message());
  std::vector<size_t> actives;
  for (size_t i = 0; i < before->size(); ++i) {
    const RmState& s = (*before)[i];
    if (!s.active()) continue;
    if (!s.state.ha_enabled())
      return PrintError(absl::StrCat("the ResourceManager at ", s.address,
                                     " runs without HA (weft rm --ha-id): there is no standby "
                                     "to fail over to"));
    actives.push_back(i);
  }
  if (actives.empty())
    return PrintError(
        absl::StrCat("no ResourceManager is active, nothing to fail over: ", Summary(*before)));
  if (actives.size() > 1)
    return PrintError(absl::StrCat("several ResourceManagers report ACTIVE; not failing over: ",
                                   Summary(*before)));
  const RmState old = (*before)[actives[0]];
  if (absl::Status s = stubs->TransitionToStandby(actives[0], f.hold_ms); !s.ok())
    return PrintError(absl::StrCat("TransitionToStandby on ", old.Name(), ": ", s.message()));
  std::cerr << "weft: " << EscapeForTerminal(old.Name())
            << " is stepping down; waiting for another "
            << "ResourceManager to become active" << std::endl;
  const absl::Time give_up = absl::Now() + absl::Seconds(f.timeout_s);
  std::vector<RmState> last = *before;
  while (true) {
    auto states = stubs->QueryAll();
    if (!states.ok()) return PrintError(states.status().message());
    last = *std::move(states);
    for (const RmState& s : last) {
      if (s.active() && s.address != old.address) {
        std::cout << "failover: " << EscapeForTerminal(absl::StrCat(old.Name(), " -> ", s.Name()))
                  << std::endl;
        return 0;
      }
    }
    if (absl::Now() >= give_up) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(kFailoverPollMs));
  }
  return PrintError(absl::StrCat(old.Name(),
                                 " was asked to step down, but no other "
                                 "ResourceManager became active within ",
                                 f.timeout_s, " s: ", Summary(last)));
}

// `--nm-schedule` of `bench rm` and `bench nm-sim`, into `value` (its default shown), for
// NmScheduleFlag to parse.
void AddNmScheduleOption(CLI::App* cmd, std::string* value) {
  cmd->add_option("--nm-schedule", *value,
                  "when a simulated NM sends its next heartbeat: after-reply (one interval after "
                  "each reply, as Weft's and YARN's NMs do) or fixed (a fixed timetable; a node "
                  "late by its reply sends at once, so a backlog does not drain)")
      ->capture_default_str();
}

// The schedule `--nm-schedule` names, or an error naming the flag.
absl::StatusOr<rm::SimNmSchedule> NmScheduleFlag(const std::string& value) {
  absl::StatusOr<rm::SimNmSchedule> schedule = rm::ParseSimNmSchedule(value);
  if (!schedule.ok())
    return absl::InvalidArgumentError(absl::StrCat("--nm-schedule: ", schedule.status().message()));
  return schedule;
}

struct BenchFlags {
  rm::RmBenchOptions o;
  bool json = false;
  double seconds = 30;
  double warmup_seconds = 0;
  std::string nm_schedule = rm::SimNmScheduleName(o.nm_schedule);
};

struct NmSimFlags {
  rm::NmSimOptions o;
  bool json = false;
  std::string schedule = rm::SimNmScheduleName(o.schedule);
  double seconds = 30;
  int64_t memory_mb = 65536;
  int64_t vcores = 32;
  // Set by `weft bench rm --nm-processes`: the control channel is stdin, and stdout carries
  // "registered N" and then the report on one line (rm/nm_sim.h).
  bool parent_control = false;
};

int RunNmSimCommand(const NmSimFlags& f) {
  rm::NmSimOptions o = f.o;
  o.duration_ms = static_cast<int64_t>(f.seconds * 1000);
  absl::StatusOr<rm::SimNmSchedule> schedule = NmScheduleFlag(f.schedule);
  if (!schedule.ok()) return PrintError(schedule.status().message());
  o.schedule = *schedule;
  o.node_capability = Resource::Of(f.memory_mb, f.vcores);
  if (f.parent_control) {
    o.control_fd = 0;
    o.on_registered = [&o] { std::cout << "registered " << o.nodes << std::endl; };
  }
  auto r = rm::RunNmSim(o);
  if (!r.ok()) return PrintError(r.status().message());
  if (f.parent_control) {
    std::cout << r->ToJson(/*samples=*/true) << std::endl;
  } else {
    std::cout << (f.json ? r->ToJson(/*samples=*/false) + "\n" : r->ToText());
  }
  return 0;
}

}  // namespace

void AddQueueCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("queue", "The scheduler's queues");
  group->require_subcommand(1);
  auto f = std::make_shared<QueueFlags>();
  CLI::App* cmd = group->add_subcommand("status", "Show a queue and its children");
  AddRmOption(cmd, &f->rm_address);
  cmd->add_option("NAME", f->queue, "queue name or path (default: root)");
  cmd->add_flag("--json", f->json, "print protobuf JSON instead of a human table");
  cmd->callback([f, exit_code] { *exit_code = QueueStatus(*f); });
}

void AddAdminCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("admin", "Operators' commands (AdminService)");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<AdminFlags>();
    CLI::App* cmd = group->add_subcommand(
        "refresh-queues", "Reload the RM's scheduler configuration (refused if invalid)");
    AddRmOption(cmd, &f->rm_address);
    cmd->callback([f, exit_code] { *exit_code = RefreshQueues(*f); });
  }
  {
    auto f = std::make_shared<HaFlags>();
    CLI::App* cmd = group->add_subcommand(
        "ha-status",
        "Ask every ResourceManager of --rm for its HA state; exit 0 only if exactly one is "
        "ACTIVE");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_flag("--json", f->json, "print JSON instead of a human table");
    cmd->callback([f, exit_code] { *exit_code = HaStatus(*f); });
  }
  {
    auto f = std::make_shared<HaFlags>();
    CLI::App* cmd = group->add_subcommand(
        "failover",
        "Manual failover: the active ResourceManager of --rm steps down (TransitionToStandby) "
        "and another takes over; cluster admins only");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_option("--hold-ms", f->hold_ms,
                    "how long the old active stays out of the election, ms (0 = the RM's "
                    "default, 10000)")
        ->capture_default_str();
    cmd->add_option("--timeout-s", f->timeout_s,
                    "how long to wait for another ResourceManager to become active")
        ->capture_default_str()
        ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
    cmd->callback([f, exit_code] { *exit_code = Failover(*f); });
  }
  {
    auto f = std::make_shared<NodeAttributesFlags>();
    CLI::App* cmd = group->add_subcommand(
        "node-attributes",
        "Set node attributes centrally (YARN's nodeattributes), e.g. --replace "
        "'host1:os=linux,zone=a host2:os=linux'; all mappings or none");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_option("--replace", f->replace, "NODE:ATTR=VALUE[,...] [NODE:...]: exactly these");
    cmd->add_option("--add", f->add, "NODE:ATTR=VALUE[,...] [NODE:...]: set these keys");
    cmd->add_option("--remove", f->remove, "NODE:ATTR[,...] [NODE:...]: remove these keys");
    cmd->callback([f, exit_code] { *exit_code = NodeAttributes(*f); });
  }
  for (bool decommission : {true, false}) {
    auto f = std::make_shared<AdminFlags>();
    CLI::App* cmd = group->add_subcommand(
        decommission ? "decommission" : "recommission",
        decommission ? "Take nodes out of service: their containers are stopped"
                     : "Let decommissioned nodes register again");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_option("NODE", f->nodes, "node id (host:port) or host name")->required();
    cmd->callback([f, exit_code, decommission] { *exit_code = RefreshNodes(*f, decommission); });
  }
}

void AddBenchCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("bench", "Load benchmarks");
  group->require_subcommand(1);
  auto f = std::make_shared<BenchFlags>();
  CLI::App* cmd = group->add_subcommand(
      "rm",
      "Drive a real ResourceManager (in this process, on 127.0.0.1) over gRPC with "
      "simulated NodeManagers and ApplicationMasters");
  cmd->add_option("--nodes", f->o.nodes, "simulated NMs")->capture_default_str();
  cmd->add_option("--heartbeat-ms", f->o.heartbeat_interval_ms, "NM heartbeat interval")
      ->capture_default_str();
  AddNmScheduleOption(cmd, &f->nm_schedule);
  cmd->add_option("--apps", f->o.apps, "simulated AMs")->capture_default_str();
  cmd->add_option("--containers-per-app", f->o.containers_per_app,
                  "containers each AM keeps asked for or running")
      ->capture_default_str();
  cmd->add_option("--container-ms", f->o.container_run_ms, "how long a container runs")
      ->capture_default_str();
  cmd->add_option("--allocate-ms", f->o.allocate_interval_ms, "between an AM's Allocate calls")
      ->capture_default_str();
  cmd->add_option("--seconds", f->seconds, "measured duration")
      ->capture_default_str()
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  cmd->add_option("--warmup-seconds", f->warmup_seconds,
                  "run the apps and nodes this long before measuring, so that the figures are "
                  "the steady state's (at least one heartbeat interval plus --container-ms), "
                  "not the first fill of an empty cluster")
      ->capture_default_str()
      ->check(FiniteNumberValidator("warmup-seconds", 0, kMaxFlagSeconds));
  cmd->add_option(
         "--threads", f->o.client_threads,
         "threads driving the simulated AMs (and registering the nodes in each NM process; "
         "the nodes heartbeat on their own schedule, asynchronously)")
      ->capture_default_str();
  cmd->add_option("--nm-processes", f->o.nm_processes,
                  "run the simulated NMs in this many `weft bench nm-sim` child processes, the "
                  "nodes split between them, over mutual TLS with a throwaway CA (0 = threads of "
                  "this process, plaintext), so that this process's CPU and memory are the RM's "
                  "and the AMs'")
      ->capture_default_str();
  cmd->add_option("--call-finishers", f->o.call_finishers,
                  "threads that finish the calls the RM loop answered (-1 = a quarter of the "
                  "cores, 0 = the loop itself)")
      ->capture_default_str();
  cmd->add_option("--heartbeat-batch-ms", f->o.heartbeat_batch_ms,
                  "NM heartbeats reach the RM loop in batches gathered over this many ms (0 = "
                  "each at once; 0..100)")
      ->capture_default_str();
  cmd->add_option("--loop-poll-us", f->o.loop_poll_us,
                  "the RM loop, out of work, polls this many µs before it sleeps (0 = sleeps at "
                  "once, -1 = never sleeps: it keeps a core)")
      ->capture_default_str();
  cmd->add_option("--loop-probe-ms", f->o.loop_probe_ms,
                  "every this many ms of the measured time, time a fixed piece of work (tokens "
                  "issued, names replaced in a table) on the RM loop: its growth between two "
                  "runs is the machine's, not the RM's (0 = none; 1..60000)")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print JSON");
  cmd->callback([f, exit_code] {
    rm::RmBenchOptions o = f->o;
    o.duration_ms = static_cast<int64_t>(f->seconds * 1000);
    o.warmup_ms = static_cast<int64_t>(f->warmup_seconds * 1000);
    absl::StatusOr<rm::SimNmSchedule> schedule = NmScheduleFlag(f->nm_schedule);
    if (!schedule.ok()) {
      *exit_code = PrintError(schedule.status().message());
      return;
    }
    o.nm_schedule = *schedule;
    if (o.nm_processes < 0 || o.nm_processes > o.nodes) {
      *exit_code = PrintError(absl::StrCat("--nm-processes ", o.nm_processes,
                                           " must be between 0 and --nodes (", o.nodes, ")"));
      return;
    }
    auto r = rm::RunRmBench(o);
    if (!r.ok()) {
      *exit_code = PrintError(r.status().message());
      return;
    }
    std::cout << (f->json ? r->ToJson() + "\n" : r->ToText());
    *exit_code = 0;
  });

  auto n = std::make_shared<NmSimFlags>();
  CLI::App* sim = group->add_subcommand(
      "nm-sim",
      "Simulated NodeManagers in this process registering with and heartbeating the RM at "
      "--rm (what `weft bench rm --nm-processes` runs). Standalone, nothing tells them which "
      "containers run on them, so they complete none: heartbeat load only");
  sim->add_option("--rm", n->o.rm_address, "the RM's HOST:PORT")->required();
  sim->add_option("--nodes", n->o.nodes, "simulated NMs")->capture_default_str();
  sim->add_option("--first-index", n->o.first_index,
                  "node ids are sim-node-NNNNN:8041 numbered from this (racks of 40)")
      ->capture_default_str();
  sim->add_option("--heartbeat-ms", n->o.heartbeat_interval_ms, "NM heartbeat interval")
      ->capture_default_str();
  AddNmScheduleOption(sim, &n->schedule);
  sim->add_option("--seconds", n->seconds, "measured duration, from when all have registered")
      ->capture_default_str()
      ->check(FiniteNumberValidator("seconds", 0, kMaxFlagSeconds));
  sim->add_option("--threads", n->o.threads,
                  "threads registering the nodes (heartbeats are asynchronous, each node on its "
                  "own schedule)")
      ->capture_default_str();
  sim->add_option("--node-memory-mb", n->memory_mb, "each node's memory")->capture_default_str();
  sim->add_option("--node-vcores", n->vcores, "each node's vcores")->capture_default_str();
  sim->add_option("--tls-dir", n->o.tls_dir,
                  "directory with the cluster CA (ca.pem) and each node's nm-<node id>.pem/.key "
                  "(`weft certs issue --role nm --name sim-node-NNNNN:8041`); every node "
                  "connects with its own certificate. Without it, plaintext (only an RM without "
                  "TLS accepts that)");
  sim->add_flag("--json", n->json, "print JSON");
  sim->add_flag("--parent-control", n->parent_control,
                "for `weft bench rm`: read start and container lines on stdin")
      ->group("");
  sim->callback([n, exit_code] { *exit_code = RunNmSimCommand(*n); });
}

}  // namespace weft::cli
