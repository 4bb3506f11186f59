#include "cli/node_command.h"

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "cli/cli_common.h"
#include "store/state_names.h"

namespace weft::cli {
namespace {

struct NodeFlags {
  std::string rm_address;
  bool json = false;
  std::string states;
  std::string node_id;
};

absl::StatusOr<std::vector<v1::NodeState>> ParseNodeStates(const std::string& text) {
  std::vector<v1::NodeState> states;
  for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    std::string name = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(item));
    if (!absl::StartsWith(name, "NODE_")) name = absl::StrCat("NODE_", name);
    v1::NodeState state;
    if (!v1::NodeState_Parse(name, &state) || state == v1::NODE_STATE_UNSPECIFIED)
      return absl::InvalidArgumentError(
          absl::StrCat("--state: unknown node state '", item,
                       "' (one of NEW, RUNNING, UNHEALTHY, DECOMMISSIONED, LOST, SHUTDOWN)"));
    states.push_back(state);
  }
  return states;
}

absl::StatusOr<v1::ListNodesResponse> ListNodes(const NodeFlags& f) {
  v1::ListNodesRequest req;
  auto states = ParseNodeStates(f.states);
  if (!states.ok()) return states.status();
  for (v1::NodeState s : *states) req.add_states(s);
  RmClient client(f.rm_address, DefaultUser());
  v1::ListNodesResponse resp;
  if (absl::Status s = client.Call(&v1::ClientService::Stub::ListNodes, req, &resp); !s.ok())
    return s;
  return resp;
}

// "k=v, k2=v2" sorted by key (YARN's `yarn node -status` Node Attributes), "-" when none.
std::string NodeAttributesText(const v1::NodeReport& n) {
  std::map<std::string, std::string> sorted(n.attributes().begin(), n.attributes().end());
  std::vector<std::string> parts;
  for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

std::string Health(const v1::NodeReport& n) {
  std::string health = n.health_report();
  if (n.missing_features_size() > 0)
    absl::StrAppend(&health, health.empty() ? "" : "; ", "missing ",
                    absl::StrJoin(n.missing_features(), ","));
  return health.empty() ? "-" : health;
}

int List(const NodeFlags& f) {
  auto resp = ListNodes(f);
  if (!resp.ok()) return PrintError(resp.status().message());
  if (f.json) {
    std::cout << ToJson(*resp) << std::endl;
    return 0;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NODE-ID", "RACK", "STATE", "CONTAINERS", "USED", "CAPABILITY", "HEALTH"}};
  for (const v1::NodeReport& n : resp->nodes())
    rows.push_back({n.node_id(), n.rack(), store::ReportedNodeState(n.state()), absl::StrCat(n.num_containers()),
                    FormatResource(n.used()), FormatResource(n.capability()), Health(n)});
  PrintTable(rows);
  return 0;
}

int Status(const NodeFlags& f) {
  auto resp = ListNodes(f);
  if (!resp.ok()) return PrintError(resp.status().message());
  for (const v1::NodeReport& n : resp->nodes()) {
    if (n.node_id() != f.node_id) continue;
    if (f.json) {
      std::cout << ToJson(n) << std::endl;
      return 0;
    }
    std::string last_health =
        n.last_health_update_ms() > 0
            ? absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixMillis(n.last_health_update_ms()),
                               absl::LocalTimeZone())
            : "-";
    PrintTable({
        {"Node-Id:", n.node_id()},
        {"Rack:", n.rack()},
        {"Node-Labels:", n.node_label().empty() ? "-" : n.node_label()},
        {"Node-Attributes:", NodeAttributesText(n)},
        {"State:", store::ReportedNodeState(n.state())},
        {"HTTP-Address:", n.http_address().empty() ? "-" : n.http_address()},
        {"Containers:", absl::StrCat(n.num_containers())},
        {"Used:", FormatResource(n.used())},
        {"Capability:", FormatResource(n.capability())},
        {"Health-Report:", n.health_report().empty() ? "-" : n.health_report()},
        {"Last-Health-Update:", last_health},
        {"Missing-Features:",
         n.missing_features_size() == 0 ? "-" : absl::StrJoin(n.missing_features(), ", ")},
        {"Network-Isolation:", n.network_isolation().empty() ? "not enforced" : n.network_isolation()},
        {"Network-Tx:", absl::StrCat(n.usage().network_tx_rate_mbps(), " Mbit/s now, ",
                                     n.usage().network_tx_bytes(), " bytes in running containers")},
    });
    if (n.devices_size() > 0) {
      // Its devices: the free share as the scheduler accounts it, who holds each.
      std::vector<std::vector<std::string>> rows = {
          {"DEVICE", "MODEL", "HEALTHY", "GROUP", "FREE-MILLI", "HELD-BY"}};
      for (const v1::Device& d : n.devices()) {
        std::vector<std::string> held;
        for (const v1::ContainerStatus& c : n.containers()) {
          for (const v1::DeviceAssignment& a : c.devices()) {
            if (a.type() == d.type() && a.index() == d.index())
              held.push_back(absl::StrCat(c.container_id(), "=", a.milli()));
          }
        }
        auto free = n.device_free_milli().find(d.index());
        rows.push_back({absl::StrCat(d.type(), ":", d.index()), d.model().empty() ? "-" : d.model(),
                        d.healthy() ? "yes" : "no",
                        d.topology_group().empty() ? "-" : d.topology_group(),
                        free == n.device_free_milli().end() ? "-" : absl::StrCat(free->second),
                        held.empty() ? "-" : absl::StrJoin(held, ",")});
      }
      std::cout << "\n";
      PrintTable(rows);
    }
    if (n.containers_size() > 0) {
      // As of the node's last heartbeat.
      std::vector<std::vector<std::string>> rows = {
          {"CONTAINER", "RSS-MB", "CPU-MS", "NET-TX-BYTES", "NET-TX-MBPS", "DEVICES"}};
      for (const v1::ContainerStatus& c : n.containers()) {
        std::vector<std::string> devices;
        for (const v1::DeviceAssignment& a : c.devices())
          devices.push_back(absl::StrCat(a.type(), ":", a.index(), "=", a.milli()));
        rows.push_back({c.container_id(), absl::StrCat(c.usage().memory_rss_bytes() >> 20),
                        absl::StrCat(c.usage().cpu_time_ms()),
                        absl::StrCat(c.usage().network_tx_bytes()),
                        absl::StrCat(c.usage().network_tx_rate_mbps()),
                        devices.empty() ? "-" : absl::StrJoin(devices, ",")});
      }
      std::cout << "\n";
      PrintTable(rows);
    }
    return 0;
  }
  return PrintError(absl::StrCat("node '", f.node_id, "' not found (see `weft node list`)"));
}

}  // namespace

void AddNodeCommand(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand("node", "The cluster's NodeManagers");
  group->require_subcommand(1);
  {
    auto f = std::make_shared<NodeFlags>();
    CLI::App* cmd = group->add_subcommand("list", "List nodes");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_flag("--json", f->json, "print protobuf JSON instead of a human table");
    cmd->add_option("--state", f->states, "only these states, e.g. RUNNING,LOST");
    cmd->callback([f, exit_code] { *exit_code = List(*f); });
  }
  {
    auto f = std::make_shared<NodeFlags>();
    CLI::App* cmd = group->add_subcommand("status", "Show one node's report");
    AddRmOption(cmd, &f->rm_address);
    cmd->add_flag("--json", f->json, "print protobuf JSON instead of a human table");
    cmd->add_option("ID", f->node_id, "node id (host:port)")->required();
    cmd->callback([f, exit_code] { *exit_code = Status(*f); });
  }
}

}  // namespace weft::cli
