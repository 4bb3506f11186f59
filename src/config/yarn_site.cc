// yarn-site.xml: the daemons' settings (ports, addresses, node resources, container limits,
// admins) and the scheduler's settings kept there (policy, preemption, FairScheduler locality).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/acl.h"
#include "common/resource_types.h"
#include "config/yarn_import_internal.h"

namespace weft::config::yarn_internal {
namespace {

// "host:port" -> port; -1 when malformed.
int PortOf(absl::string_view address) {
  size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535)
    return -1;
  return port;
}

// The Weft policy of YARN's scheduler class `cls`; "" when it is not one of YARN's three.
std::string PolicyOfClass(absl::string_view cls) {
  if (absl::EndsWith(cls, ".capacity.CapacityScheduler")) return "capacity";
  if (absl::EndsWith(cls, ".fair.FairScheduler")) return "fair";
  if (absl::EndsWith(cls, ".fifo.FifoScheduler")) return "fifo";
  return "";
}

}  // namespace

absl::Status Importer::ConvertYarnSite(int file, std::vector<Property>& props) {
  const std::string site = File(file).name;
  std::map<std::string, Property*> by_name;
  for (Property& p : props)
    if (!p.handled) by_name[p.name] = &p;
  auto find = [&](const std::string& name) -> Property* {
    auto it = by_name.find(name);
    return it == by_name.end() ? nullptr : it->second;
  };
  auto source = [&](const Property& p) { return absl::StrCat(site, ":", p.line, " ", p.name); };
  auto integer = [&](Property& p, int64_t min, int64_t* v) -> absl::Status {
    if (!absl::SimpleAtoi(p.value, v) || *v < min)
      return PropertyError(file, p, absl::StrCat("expected an integer >= ", min));
    return absl::OkStatus();
  };
  auto boolean = [&](Property& p, bool* v) -> absl::Status {
    std::string lower = absl::AsciiStrToLower(p.value);
    if (lower != "true" && lower != "false")
      return PropertyError(file, p, "expected true or false");
    *v = lower == "true";
    return absl::OkStatus();
  };
  const bool capacity = in_.capacity_scheduler.has_value();
  const bool fair = in_.fair_scheduler.has_value();

  if (Property* p = find("yarn.resourcemanager.scheduler.class")) {
    std::string policy = PolicyOfClass(p->value);
    if (policy.empty()) {
      NoteProperty(file, *p, "not one of YARN's CapacityScheduler, FairScheduler or FifoScheduler");
    } else {
      if ((capacity && policy != "capacity") || (fair && policy != "fair"))
        return PropertyError(file, *p,
                             absl::StrCat("names the ", policy, " scheduler, but a ",
                                          capacity ? "capacity-scheduler" : "fair-scheduler",
                                          " configuration was given"));
      policy_ = policy;
      p->handled = true;
    }
  }
  if (Property* p = find("yarn.scheduler.fair.allocation.file")) {
    if (fair) {
      p->handled = true;  // the allocation file converted is the one given
    } else {
      NoteProperty(file, *p, "no allocation file was given to convert (--fair-scheduler)");
    }
  }

  // The NodeManager's resources.
  {
    Property* mem = find("yarn.nodemanager.resource.memory-mb");
    Property* cpu = find("yarn.nodemanager.resource.cpu-vcores");
    int64_t m = 8192, c = 8;  // yarn-default.xml
    bool detect = false;
    if (mem) {
      if (mem->value == "-1")
        detect = true;
      else if (auto s = integer(*mem, 1, &m); !s.ok())
        return s;
      mem->handled = true;
    }
    if (cpu) {
      if (cpu->value == "-1")
        detect = true;
      else if (auto s = integer(*cpu, 1, &c); !s.ok())
        return s;
      cpu->handled = true;
    }
    if (Property* d = find("yarn.nodemanager.resource.detect-hardware-capabilities")) {
      bool v = false;
      if (auto s = boolean(*d, &v); !s.ok()) return s;
      d->handled = true;
      if (v && !mem && !cpu) detect = true;
    }
    if ((mem || cpu) && !detect) {
      AddDaemon("nm", "node-resources", {absl::StrCat("memory-mb=", m, ",vcores=", c)}, false,
                source(mem ? *mem : *cpu));
    }
    // With -1 (detect), Weft's NM detects the node's resources when given none: its default.
  }

  // Per-container limits: --resource-limit NAME:MIN:MAX:INCREMENT.
  {
    struct Limit {
      const char* type;
      const char* min_key;
      const char* max_key;
      const char* fair_increment_key;
      const char* fair_increment_key_old;
      int64_t min, max, fair_increment;
    } limits[] = {{"memory-mb", "yarn.scheduler.minimum-allocation-mb",
                   "yarn.scheduler.maximum-allocation-mb",
                   "yarn.resource-types.memory-mb.increment-allocation",
                   "yarn.scheduler.increment-allocation-mb", 1024, 8192, 1024},
                  {"vcores", "yarn.scheduler.minimum-allocation-vcores",
                   "yarn.scheduler.maximum-allocation-vcores",
                   "yarn.resource-types.vcores.increment-allocation",
                   "yarn.scheduler.increment-allocation-vcores", 1, 4, 1}};
    std::vector<std::string> values;
    std::string src;
    for (Limit& l : limits) {
      Property* lo = find(l.min_key);
      Property* hi = find(l.max_key);
      Property* inc = nullptr;
      for (const char* k : {l.fair_increment_key_old, l.fair_increment_key}) {
        if (Property* p = find(k)) {
          if (!fair) {
            NoteProperty(file, *p,
                         "read by YARN's FairScheduler only; the CapacityScheduler rounds "
                         "requests to multiples of the minimum allocation");
          } else {
            if (inc) inc->handled = true;  // the newer key wins
            inc = p;
          }
        }
      }
      if (!lo && !hi && !inc) continue;
      int64_t increment = l.fair_increment;
      for (Property* p : {lo, hi, inc}) {
        if (!p) continue;
        int64_t* field = p == lo ? &l.min : p == hi ? &l.max : &increment;
        if (auto s = integer(*p, p == lo ? 0 : 1, field); !s.ok()) return s;
        p->handled = true;
        if (src.empty()) src = source(*p);
      }
      // The CapacityScheduler normalizes requests to multiples of the minimum allocation.
      if (!fair) increment = std::max<int64_t>(1, l.min);
      ResourceTypeRegistry check;
      if (absl::Status s = check.SetLimits(l.type, l.min, l.max, increment); !s.ok())
        return PropertyError(file, lo ? *lo : hi ? *hi : *inc, s.message());
      values.push_back(absl::StrCat(l.type, ":", l.min, ":", l.max, ":", increment));
    }
    if (!values.empty()) AddDaemon("rm", "resource-limit", values, true, src);
  }

  // Addresses.
  std::string rm_host = "0.0.0.0";
  if (Property* p = find("yarn.resourcemanager.hostname")) {
    rm_host = p->value;
    p->handled = true;
  }
  int rm_port = 8032;
  Property* rm_address = find("yarn.resourcemanager.address");
  if (rm_address) {
    rm_port = PortOf(rm_address->value);
    if (rm_port < 0) return PropertyError(file, *rm_address, "expected HOST:PORT");
    rm_host = rm_address->value.substr(0, rm_address->value.rfind(':'));
    AddDaemon("rm", "port", {absl::StrCat(rm_port)}, false, source(*rm_address));
    rm_address->handled = true;
  }
  if (rm_host != "0.0.0.0" && !rm_host.empty()) {
    AddDaemon("nm", "rm", {absl::StrCat(rm_host, ":", rm_port)}, false,
              rm_address ? source(*rm_address) : source(*find("yarn.resourcemanager.hostname")));
  }
  if (Property* p = find("yarn.resourcemanager.bind-host")) {
    AddDaemon("rm", "bind", {p->value}, false, source(*p));
    p->handled = true;
  }
  for (const char* key :
       {"yarn.resourcemanager.scheduler.address", "yarn.resourcemanager.resource-tracker.address",
        "yarn.resourcemanager.admin.address"}) {
    if (Property* p = find(key))
      NoteProperty(
          file, *p,
          absl::StrCat("Weft's RM serves clients, AMs, NMs and admins on its one port (rm.port ",
                       rm_port, ")"));
  }
  if (Property* p = find("yarn.resourcemanager.webapp.address")) {
    int port = PortOf(p->value);
    if (port < 0) return PropertyError(file, *p, "expected HOST:PORT");
    AddDaemon("rm", "http-port", {absl::StrCat(port)}, false, source(*p));
    p->handled = true;
  }
  if (Property* p = find("yarn.nodemanager.address")) {
    int port = PortOf(p->value);
    if (port < 0) return PropertyError(file, *p, "expected HOST:PORT");
    AddDaemon("nm", "port", {absl::StrCat(port)}, false, source(*p));
    p->handled = true;
  }
  if (Property* p = find("yarn.nodemanager.webapp.address")) {
    int port = PortOf(p->value);
    if (port < 0) return PropertyError(file, *p, "expected HOST:PORT");
    AddDaemon("nm", "http-port", {absl::StrCat(port)}, false, source(*p));
    p->handled = true;
  }
  if (Property* p = find("yarn.nodemanager.bind-host")) {
    AddDaemon("nm", "bind", {p->value}, false, source(*p));
    p->handled = true;
  }
  if (Property* p = find("yarn.nodemanager.local-dirs")) {
    std::vector<std::string> dirs = absl::StrSplit(p->value, ',', absl::SkipWhitespace());
    if (dirs.size() == 1) {
      AddDaemon("nm", "work-root", {Trimmed(dirs[0])}, false, source(*p));
      p->handled = true;
    } else {
      NoteProperty(file, *p, "Weft's NM has one work root (nm.work-root), not several directories");
    }
  }
  for (auto [key, flag] :
       {std::pair{"yarn.nm.liveness-monitor.expiry-interval-ms", "nm-expiry-ms"},
        std::pair{"yarn.am.liveness-monitor.expiry-interval-ms", "am-expiry-ms"}}) {
    if (Property* p = find(key)) {
      int64_t v = 0;
      if (auto s = integer(*p, 1, &v); !s.ok()) return s;
      AddDaemon("rm", flag, {absl::StrCat(v)}, false, source(*p));
      p->handled = true;
    }
  }
  // NM heartbeat intervals and their scaling by CPU utilization (YARN-10475).
  const std::string hb = "yarn.resourcemanager.nodemanagers.heartbeat-interval-";
  for (auto [key, flag] : {std::pair{"ms", "nm-heartbeat-ms"},
                           std::pair{"min-ms", "nm-heartbeat-min-ms"},
                           std::pair{"max-ms", "nm-heartbeat-max-ms"}}) {
    if (Property* p = find(hb + key)) {
      int64_t v = 0;
      if (auto s = integer(*p, 1, &v); !s.ok()) return s;
      AddDaemon("rm", flag, {absl::StrCat(v)}, false, source(*p));
      p->handled = true;
    }
  }
  if (Property* p = find(hb + "scaling-enable")) {
    bool v = false;
    if (auto s = boolean(*p, &v); !s.ok()) return s;
    if (v) AddDaemon("rm", "nm-heartbeat-scaling", {"true"}, false, source(*p));
    p->handled = true;
  }
  for (auto [key, flag] : {std::pair{"speedup-factor", "nm-heartbeat-speedup"},
                           std::pair{"slowdown-factor", "nm-heartbeat-slowdown"}}) {
    if (Property* p = find(hb + key)) {
      double v = 0;
      if (!absl::SimpleAtod(p->value, &v) || !std::isfinite(v) || v < 0)
        return PropertyError(file, *p, "expected a number >= 0");
      AddDaemon("rm", flag, {p->value}, false, source(*p));
      p->handled = true;
    }
  }
  if (Property* p = find("yarn.admin.acl")) {
    auto acl = AccessControlList::Parse(p->raw);
    if (!acl.ok()) return PropertyError(file, *p, acl.status().message());
    if (acl->allows_everyone()) {
      NoteProperty(file, *p,
                   "Weft does not make every user a cluster admin; name the admins with "
                   "rm.admins");
    } else {
      std::vector<std::string> users(acl->users().begin(), acl->users().end());
      if (!users.empty()) AddDaemon("rm", "admins", users, true, source(*p));
      p->handled = true;
      if (!acl->groups().empty())
        NoteAt(file, p->line,
               absl::StrCat(p->name, "=", p->value, " (groups ", absl::StrJoin(acl->groups(), ","),
                            ")"),
               "Weft's cluster admins (rm.admins) are users only; the users were converted");
    }
  }
  if (Property* p = find("yarn.acl.enable")) {
    bool v = false;
    if (auto s = boolean(*p, &v); !s.ok()) return s;
    if (v)
      p->handled = true;  // Weft always checks queue ACLs
    else
      NoteProperty(file, *p, "Weft always checks queue ACLs and cluster admins");
  }

  // The scheduler's settings kept in yarn-site.xml.
  if (Property* p = find("yarn.resourcemanager.scheduler.monitor.enable")) {
    bool v = false;
    if (auto s = boolean(*p, &v); !s.ok()) return s;
    if (fair) {
      NoteProperty(file, *p,
                   "read by YARN's CapacityScheduler only (see yarn.scheduler.fair.preemption)");
    } else {
      preemption_ = v;
      p->handled = true;
    }
  }
  if (Property* p = find("yarn.scheduler.fair.preemption")) {
    bool v = false;
    if (auto s = boolean(*p, &v); !s.ok()) return s;
    if (capacity) {
      NoteProperty(file, *p, "read by YARN's FairScheduler only");
    } else {
      preemption_ = v;
      p->handled = true;
    }
  }
  for (auto [key, rack] : {std::pair{"yarn.scheduler.fair.locality.threshold.node", false},
                           std::pair{"yarn.scheduler.fair.locality.threshold.rack", true}}) {
    Property* p = find(key);
    if (!p) continue;
    double v = 0;
    if (!ParseDouble(p->value, &v) || v > 1 || (v < 0 && v != -1))
      return PropertyError(file, *p, "expected a fraction in [0, 1], or -1");
    if (capacity) {
      NoteProperty(file, *p, "read by YARN's FairScheduler only");
      continue;
    }
    // A fraction of the cluster's nodes passed up; a Weft pass offers every node at once.
    (rack ? rack_delay_ : node_delay_) = v > 0 ? 1 : 0;
    locality_source_ = absl::StrCat(site, ":", p->line);
    p->handled = true;
  }
  for (auto [key, good] : {std::pair{"yarn.scheduler.fair.user-as-default-queue", false},
                           std::pair{"yarn.scheduler.fair.allow-undeclared-pools", false}}) {
    Property* p = find(key);
    if (!p) continue;
    bool v = false;
    if (auto s = boolean(*p, &v); !s.ok()) return s;
    if (fs_has_placement_policy_) {
      NoteProperty(file, *p, "YARN ignores it too: the allocation file has a queuePlacementPolicy");
    } else if (v == good) {
      p->handled = true;  // Weft: apps naming no queue run in 'default'; no queue is created
    } else {
      NoteProperty(file, *p,
                   "Weft creates no queues at submission: an app runs in the queue it names "
                   "(which must exist), or in 'default'");
    }
  }

  // What is left: reasons for the well-known ones, a generic one for the rest.
  static const std::vector<std::pair<std::string, std::string>> kReasons = {
      {"yarn.resourcemanager.recovery.",
       "Weft's RM keeps its state with rm.state-store FILE, or in ZooKeeper with rm.ha-id"},
      {"yarn.resourcemanager.store.",
       "Weft's RM keeps its state with rm.state-store FILE, or in ZooKeeper with rm.ha-id"},
      {"yarn.resourcemanager.ha.",
       "Weft's RM HA is configured with rm.ha-id, rm.ha-zk and rm.ha-rm-addresses"},
      {"yarn.resourcemanager.zk-", "Weft's RM HA is configured with rm.ha-zk"},
      {"yarn.nodemanager.aux-services",
       "Weft's NM runs no auxiliary services (no MapReduce shuffle service)"},
      {"yarn.log-aggregation",
       "Weft keeps container logs on the NM (nm.work-root) and aggregates none"},
      {"yarn.nodemanager.vmem",
       "Weft's NM enforces memory with cgroups; it has no virtual-memory check"},
      {"yarn.nodemanager.pmem", "Weft's NM enforces memory with cgroups"},
      {"yarn.node-labels.", "Weft has no node labels"},
      {"yarn.timeline-service.", "Weft has no timeline service"},
      {"yarn.scheduler.fair.",
       "Weft's fair policy has no equivalent of this FairScheduler setting"},
      {"yarn.scheduler.capacity.",
       "CapacityScheduler settings belong in capacity-scheduler.xml (--capacity-scheduler)"},
      {"yarn.resourcemanager.reservation-system.", "Weft has no reservation system"},
      {"yarn.webapp.", "Weft's web UI has no such setting"},
  };
  for (Property& p : props) {
    if (p.handled) continue;
    std::string why = "Weft has no equivalent of this yarn-site.xml property";
    for (const auto& [prefix, reason] : kReasons)
      if (absl::StartsWith(p.name, prefix)) {
        why = reason;
        break;
      }
    NoteProperty(file, p, why);
  }
  return absl::OkStatus();
}

}  // namespace weft::config::yarn_internal
