#include "config/yarn_import.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "common/acl.h"
#include "common/resource_types.h"
#include "pugixml.hpp"
#include "scheduler/registry.h"

namespace weft::config {
namespace {

constexpr absl::string_view kCsPrefix = "yarn.scheduler.capacity.";
constexpr char kNoPlacement[] =
    "Weft has no queue placement rules: an app runs in the queue it names, or in 'default'";

// ---- Reading XML.

int LineAt(const std::string& text, ptrdiff_t offset) {
  if (offset < 0) return 0;
  size_t end = std::min(static_cast<size_t>(offset), text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + end, '\n'));
}

int LineOf(const XmlFile& f, const pugi::xml_node& n) { return LineAt(f.text, n.offset_debug()); }

absl::Status ErrorAt(const XmlFile& f, int line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(f.name, ":", line, ": ", what));
}

absl::Status LoadXml(const XmlFile& f, pugi::xml_document* doc) {
  pugi::xml_parse_result r = doc->load_buffer(f.text.data(), f.text.size());
  if (!r)
    return ErrorAt(f, LineAt(f.text, r.offset), absl::StrCat("malformed XML: ", r.description()));
  return absl::OkStatus();
}

std::string Trimmed(absl::string_view s) { return std::string(absl::StripAsciiWhitespace(s)); }

// An element's text, trimmed: <weight> 2.0 </weight> -> "2.0".
std::string TextOf(const pugi::xml_node& n) { return Trimmed(n.child_value()); }

// An element as one line for messages: <rule name="user" create="false"/>, <weight>0</weight>,
// or the opening tag only when it has child elements and `open_tag_only`.
std::string Render(const pugi::xml_node& n, bool open_tag_only = false) {
  std::string out = absl::StrCat("<", n.name());
  for (const pugi::xml_attribute& a : n.attributes())
    absl::StrAppend(&out, " ", a.name(), "=\"", a.value(), "\"");
  bool has_elements = false;
  for (const pugi::xml_node& c : n.children())
    if (c.type() == pugi::node_element) has_elements = true;
  if (has_elements) {
    if (open_tag_only) return out + ">";
    std::ostringstream s;
    n.print(s, "", pugi::format_raw);
    return s.str();
  }
  std::string text = TextOf(n);
  if (text.empty()) return out + "/>";
  return absl::StrCat(out, ">", text, "</", n.name(), ">");
}

// One <property> of a Hadoop Configuration file.
struct Property {
  std::string name;
  std::string value;  // trimmed, with ${...} expanded where known
  std::string raw;    // as written: ACLs keep their leading space (" admins" = group admins)
  int line = 0;
  bool handled = false;  // converted, or listed as unconverted
};

bool ValidQueueName(absl::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name)
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

std::string FormatNumber(double v) { return absl::StrFormat("%.10g", v); }

std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// ---- What is produced.

struct QueueOut {
  std::string name;
  std::string path;  // root.a.a1
  int line = 0;      // where it is declared
  std::optional<double> weight, capacity, maximum_capacity, user_limit_factor, am_percent,
      max_am_share;
  std::optional<std::string> min_resources, max_resources, state, ordering, acl_submit, acl_admin;
  std::optional<int64_t> max_running_apps;
  std::vector<QueueOut> children;
  // CapacityScheduler: the capacity as given ("12.5", "3w") and its line.
  std::optional<double> cs_weight;
  int capacity_line = 0;
  // FairScheduler: set on an element that applies to leaves only, kept until the children are
  // known. line 0 = not given.
  int fs_am_share_line = 0;
  std::string fs_am_share_text;
  int fs_policy_line = 0;
  std::string fs_policy;
  bool fs_declared_parent = false;
  bool leaf() const { return children.empty(); }
};

struct DaemonSetting {
  std::string section;              // "rm" or "nm"
  std::string key;                  // the flag, without "--"
  std::vector<std::string> values;  // several = a repeated flag
  bool list = false;                // a YAML list even with one value
  std::string source;               // "yarn-site.xml:12 yarn.resourcemanager.address"
};

struct Note {
  int file = 0;
  int line = 0;
  std::string text;
};

bool ParseDouble(absl::string_view s, double* v) {
  return absl::SimpleAtod(s, v) && std::isfinite(*v);
}

class Importer {
 public:
  explicit Importer(const YarnImportInput& in) : in_(in) {}

  absl::StatusOr<YarnImport> Run();

 private:
  // Lists `what` as not converted because of `why`.
  void NoteAt(int file, int line, absl::string_view what, absl::string_view why) {
    notes_.push_back({file, line, absl::StrCat(what, ": ", why)});
  }
  void NoteProperty(int file, Property& p, absl::string_view why) {
    p.handled = true;
    NoteAt(file, p.line, absl::StrCat(p.name, "=", p.value), why);
  }
  const XmlFile& File(int file) const { return files_[file]; }
  absl::Status PropertyError(int file, const Property& p, absl::string_view what) {
    return ErrorAt(File(file), p.line, absl::StrCat(p.name, "=", p.value, ": ", what));
  }

  absl::StatusOr<std::vector<Property>> ReadConfiguration(int file);
  absl::Status ConvertYarnSite(int file, std::vector<Property>& props);
  absl::Status ConvertCapacity(int file, std::vector<Property>& props);
  absl::Status BuildCsQueue(int file, std::map<std::string, Property*>& by_name, QueueOut* q,
                            std::set<std::string>* names);
  absl::Status CsQueueKey(int file, QueueOut& q, const std::string& key, Property& p);
  absl::Status ConvertFair(int file);
  absl::Status FsQueue(int file, const pugi::xml_node& n, QueueOut* q);
  absl::StatusOr<std::optional<std::string>> FsResource(int file, const pugi::xml_node& n,
                                                        absl::string_view where, bool is_max);
  void FsPlacement(int file, const pugi::xml_node& n);
  absl::Status CheckUniqueNames(const QueueOut& q, std::map<std::string, const QueueOut*>* seen,
                                int file);

  void AddDaemon(std::string section, std::string key, std::vector<std::string> values, bool list,
                 std::string source) {
    for (DaemonSetting& d : daemon_)
      if (d.section == section && d.key == key) {
        d.values = std::move(values);
        d.source = std::move(source);
        return;
      }
    daemon_.push_back(
        {std::move(section), std::move(key), std::move(values), list, std::move(source)});
  }
  std::string EmitScheduler() const;
  std::string EmitDaemon() const;

  const YarnImportInput& in_;
  std::vector<XmlFile> files_;  // 0 = yarn-site, 1 = the scheduler's file (when given)
  std::vector<Note> notes_;
  std::vector<DaemonSetting> daemon_;

  // The scheduler configuration being built.
  std::string policy_;
  std::optional<int> node_delay_, rack_delay_;
  std::string locality_source_;
  std::optional<bool> preemption_;
  std::optional<int64_t> starvation_ms_;
  std::optional<double> preemption_threshold_;
  std::optional<double> am_share_default_;
  std::optional<int64_t> user_max_apps_default_;
  std::map<std::string, int64_t> users_;
  QueueOut root_;
  bool have_queues_ = false;
  bool added_default_queue_ = false;
  // FairScheduler's placement policy being present makes some yarn-site properties moot.
  bool fs_has_placement_policy_ = false;
};

// ---- Hadoop Configuration XML.

absl::StatusOr<std::vector<Property>> Importer::ReadConfiguration(int file) {
  const XmlFile& f = File(file);
  pugi::xml_document doc;
  if (absl::Status s = LoadXml(f, &doc); !s.ok()) return s;
  pugi::xml_node conf = doc.document_element();
  if (absl::string_view(conf.name()) != "configuration")
    return ErrorAt(
        f, LineOf(f, conf),
        absl::StrCat("expected the document element <configuration>, found <", conf.name(), ">"));
  std::vector<Property> props;
  for (const pugi::xml_node& n : conf.children()) {
    if (n.type() == pugi::node_pcdata && !TextOf(n).empty()) {
      NoteAt(file, LineOf(f, n), absl::StrCat("text '", TextOf(n), "'"),
             "text outside a <property> means nothing to Hadoop either");
      continue;
    }
    if (n.type() != pugi::node_element) continue;
    if (absl::string_view(n.name()) != "property") {
      NoteAt(file, LineOf(f, n), Render(n, true),
             "only <property> elements are read (XInclude and the like are not followed)");
      continue;
    }
    Property p;
    p.line = LineOf(f, n);
    bool has_name = false;
    for (const pugi::xml_node& c : n.children()) {
      if (c.type() != pugi::node_element) continue;
      absl::string_view cn = c.name();
      if (cn == "name") {
        p.name = TextOf(c);
        has_name = true;
      } else if (cn == "value") {
        p.value = TextOf(c);
        p.raw = c.child_value();
      } else if (cn != "description" && cn != "final" && cn != "source" && cn != "tag") {
        NoteAt(file, LineOf(f, c), Render(c), "not part of a Hadoop <property>");
      }
    }
    if (!has_name || p.name.empty()) return ErrorAt(f, p.line, "<property> without a <name>");
    props.push_back(std::move(p));
  }
  // Hadoop keeps the last of a repeated property.
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < props.size(); ++i) last[props[i].name] = i;
  for (size_t i = 0; i < props.size(); ++i) {
    size_t l = last[props[i].name];
    if (l != i)
      NoteProperty(file, props[i],
                   absl::StrCat("overridden by the same property at line ", props[l].line,
                                " (Hadoop keeps the last)"));
  }
  // ${name} references to other properties of the file.
  std::map<std::string, std::string> values = {{"yarn.resourcemanager.hostname", "0.0.0.0"},
                                               {"yarn.nodemanager.hostname", "0.0.0.0"}};
  for (size_t i = 0; i < props.size(); ++i)
    if (last[props[i].name] == i) values[props[i].name] = props[i].value;
  for (Property& p : props) {
    for (int depth = 0; depth < 20; ++depth) {
      size_t open = p.value.find("${");
      if (open == std::string::npos) break;
      size_t close = p.value.find('}', open);
      if (close == std::string::npos) break;
      auto it = values.find(p.value.substr(open + 2, close - open - 2));
      if (it == values.end()) break;
      p.value.replace(open, close - open + 1, it->second);
    }
  }
  return props;
}

// "host:port" -> port; -1 when malformed.
int PortOf(absl::string_view address) {
  size_t colon = address.rfind(':');
  int port = -1;
  if (colon == absl::string_view::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port < 0 || port > 65535)
    return -1;
  return port;
}

std::string PolicyOfClass(absl::string_view cls) {
  if (absl::EndsWith(cls, ".capacity.CapacityScheduler")) return "capacity";
  if (absl::EndsWith(cls, ".fair.FairScheduler")) return "fair";
  if (absl::EndsWith(cls, ".fifo.FifoScheduler")) return "fifo";
  return "";
}

// ---- yarn-site.xml.

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

// ---- capacity-scheduler.xml.

absl::Status Importer::BuildCsQueue(int file, std::map<std::string, Property*>& by_name,
                                    QueueOut* q, std::set<std::string>* names) {
  auto it = by_name.find(absl::StrCat(kCsPrefix, q->path, ".queues"));
  if (it == by_name.end()) return absl::OkStatus();
  Property& p = *it->second;
  p.handled = true;
  for (absl::string_view item : absl::StrSplit(p.value, ',', absl::SkipWhitespace())) {
    std::string name = Trimmed(item);
    if (!ValidQueueName(name))
      return PropertyError(file, p,
                           absl::StrCat("queue name '", name, "': Weft's are [A-Za-z0-9_-]+"));
    if (!names->insert(name).second)
      return PropertyError(file, p,
                           absl::StrCat("queue name '", name,
                                        "' is used twice in the tree; Weft's queue names are "
                                        "unique (apps name a queue by its name)"));
    QueueOut child;
    child.name = name;
    child.path = absl::StrCat(q->path, ".", name);
    child.line = p.line;
    if (auto s = BuildCsQueue(file, by_name, &child, names); !s.ok()) return s;
    q->children.push_back(std::move(child));
  }
  if (q->children.empty()) return PropertyError(file, p, "names no queue");
  return absl::OkStatus();
}

absl::Status Importer::CsQueueKey(int file, QueueOut& q, const std::string& key, Property& p) {
  const bool root = q.path == "root";
  auto percent = [&](double* v, bool allow_minus_one) -> absl::Status {
    if (!ParseDouble(p.value, v) || *v > 100 || (*v < 0 && !(allow_minus_one && *v == -1)))
      return PropertyError(file, p,
                           allow_minus_one ? "expected a percentage in [0, 100], or -1"
                                           : "expected a percentage in [0, 100]");
    return absl::OkStatus();
  };
  if (key == "capacity" || key == "maximum-capacity") {
    if (absl::StartsWith(p.value, "[")) {
      NoteProperty(file, p,
                   "Weft's capacity policy takes percentages or weights of the parent, not "
                   "absolute resources");
      return absl::OkStatus();
    }
    if (root) {
      double v = 0;
      if (key == "capacity" && absl::EndsWith(p.value, "w")) {
        p.handled = true;  // root has all of the cluster, whatever its weight
        return absl::OkStatus();
      }
      if (auto s = percent(&v, key == "maximum-capacity"); !s.ok()) return s;
      if (v == 100 || v == -1)
        p.handled = true;  // root is always the whole cluster
      else
        NoteProperty(file, p, "Weft's root queue is always the whole cluster (100)");
      return absl::OkStatus();
    }
    if (key == "capacity" && absl::EndsWith(p.value, "w")) {
      double w = 0;
      if (!ParseDouble(absl::string_view(p.value).substr(0, p.value.size() - 1), &w) || w < 0)
        return PropertyError(file, p, "expected a weight such as 2.0w");
      q.cs_weight = w;
      q.capacity_line = p.line;
      p.handled = true;
      return absl::OkStatus();
    }
    double v = 0;
    if (auto s = percent(&v, key == "maximum-capacity"); !s.ok()) return s;
    if (key == "capacity") {
      q.capacity = v;
      q.capacity_line = p.line;
    } else {
      q.maximum_capacity = v == -1 ? 100 : v;
    }
    p.handled = true;
    return absl::OkStatus();
  }
  if (key == "user-limit-factor") {
    double v = 0;
    if (!ParseDouble(p.value, &v)) return PropertyError(file, p, "expected a number");
    if (v == -1) {
      NoteProperty(file, p,
                   "Weft's user-limit-factor must be > 0; -1 (no user limit) is not expressible");
    } else if (v <= 0) {
      return PropertyError(file, p, "expected a number > 0, or -1");
    } else {
      q.user_limit_factor = v;
      p.handled = true;
    }
    return absl::OkStatus();
  }
  if (key == "maximum-am-resource-percent") {
    double v = 0;
    if (!ParseDouble(p.value, &v) || v < 0 || v > 1)
      return PropertyError(file, p, "expected a fraction in [0, 1] (0.1 = 10%)");
    q.am_percent = v * 100;
    p.handled = true;
    return absl::OkStatus();
  }
  if (key == "max-parallel-apps") {
    int64_t v = 0;
    if (!absl::SimpleAtoi(p.value, &v) || v < 0)
      return PropertyError(file, p, "expected an integer >= 0");
    q.max_running_apps = v;
    p.handled = true;
    return absl::OkStatus();
  }
  if (key == "state") {
    if (p.value != "RUNNING" && p.value != "STOPPED")
      return PropertyError(file, p, "expected RUNNING or STOPPED");
    q.state = p.value;
    p.handled = true;
    return absl::OkStatus();
  }
  if (key == "acl_submit_applications" || key == "acl_administer_queue") {
    auto acl = AccessControlList::Parse(p.raw);
    if (!acl.ok()) return PropertyError(file, p, acl.status().message());
    (key == "acl_submit_applications" ? q.acl_submit : q.acl_admin) = acl->ToString();
    p.handled = true;
    return absl::OkStatus();
  }
  if (key == "ordering-policy") {
    if (!q.leaf()) {
      NoteProperty(
          file, p,
          "Weft orders the apps of leaf queues only; sibling queues are ordered by used capacity");
    } else if (p.value == "fifo" || p.value == "fair") {
      q.ordering = p.value;
      p.handled = true;
    } else {
      NoteProperty(file, p, "Weft's leaf ordering is fifo or fair");
    }
    return absl::OkStatus();
  }
  static const std::vector<std::pair<std::string, std::string>> kReasons = {
      {"maximum-applications",
       "Weft rejects no submission for a count of apps; max-parallel-apps (max-running-apps) makes "
       "apps wait instead"},
      {"minimum-user-limit-percent",
       "Weft's capacity policy limits users by user-limit-factor only"},
      {"maximum-allocation-",
       "Weft has no per-queue container size limit, only the cluster's (rm.resource-limit)"},
      {"maximum-application-lifetime", "Weft has no application lifetimes"},
      {"default-application-lifetime", "Weft has no application lifetimes"},
      {"priority", "Weft has no queue priorities"},
      {"disable_preemption", "Weft cannot exempt a queue from preemption"},
      {"accessible-node-labels", "Weft has no node labels"},
      {"default-node-label-expression", "Weft has no node labels"},
      {"user-settings.", "Weft weighs all users of a queue alike"},
      {"auto-create-child-queue", "Weft creates no queues at submission"},
      {"auto-queue-creation-v2", "Weft creates no queues at submission"},
      {"leaf-queue-template", "Weft creates no queues at submission"},
      {"ordering-policy.", "Weft's fair leaf ordering has no options"},
      {"acl_administer_reservations", "Weft has no reservation system"},
      {"acl_list_reservations", "Weft has no reservation system"},
      {"acl_submit_reservations", "Weft has no reservation system"},
      {"reservable", "Weft has no reservation system"},
      {"acl_administer_jobs",
       "not read by YARN's CapacityScheduler either (acl_administer_queue is)"},
  };
  std::string why = "Weft has no equivalent of this queue property";
  for (const auto& [prefix, reason] : kReasons)
    if (absl::StartsWith(key, prefix)) {
      why = reason;
      break;
    }
  NoteProperty(file, p, why);
  return absl::OkStatus();
}

absl::Status Importer::ConvertCapacity(int file, std::vector<Property>& props) {
  std::map<std::string, Property*> by_name;
  for (Property& p : props)
    if (!p.handled) by_name[p.name] = &p;
  root_.name = "root";
  root_.path = "root";
  std::set<std::string> names = {"root"};
  if (auto s = BuildCsQueue(file, by_name, &root_, &names); !s.ok()) return s;
  if (root_.children.empty())
    return ErrorAt(File(file), 1,
                   "yarn.scheduler.capacity.root.queues is not set: there is no queue to convert");
  have_queues_ = true;
  std::map<std::string, QueueOut*> by_path;
  std::function<void(QueueOut*)> index = [&](QueueOut* q) {
    by_path[q->path] = q;
    for (QueueOut& c : q->children) index(&c);
  };
  index(&root_);

  std::optional<double> am_percent_default, user_limit_default;
  std::optional<int64_t> parallel_default;
  for (Property& p : props) {
    if (p.handled) continue;
    if (!absl::StartsWith(p.name, kCsPrefix)) {
      NoteProperty(file, p, "not a CapacityScheduler property (yarn.scheduler.capacity.*)");
      continue;
    }
    std::string rest = p.name.substr(kCsPrefix.size());
    // The longest queue path the name starts with.
    QueueOut* q = nullptr;
    std::string key;
    for (size_t pos = rest.rfind('.'); pos != std::string::npos && pos > 0;
         pos = rest.rfind('.', pos - 1)) {
      auto it = by_path.find(rest.substr(0, pos));
      if (it != by_path.end()) {
        q = it->second;
        key = rest.substr(pos + 1);
        break;
      }
    }
    // A dotted key is a queue below q that no `queues` names, unless it is one of YARN's
    // dotted queue keys.
    static const char* const kDottedKeys[] = {
        "accessible-node-labels.", "user-settings.",       "ordering-policy.",
        "auto-queue-creation-v2.", "leaf-queue-template.", "auto-create-child-queue."};
    bool dotted_key = false;
    for (const char* k : kDottedKeys) dotted_key = dotted_key || absl::StartsWith(key, k);
    if (q && key.find('.') != std::string::npos && !dotted_key) q = nullptr;
    if (q) {
      if (auto s = CsQueueKey(file, *q, key, p); !s.ok()) return s;
      continue;
    }
    if (absl::StartsWith(rest, "root.")) {
      NoteProperty(file, p,
                   "names a queue that no yarn.scheduler.capacity.<parent>.queues declares "
                   "(YARN ignores it too)");
      continue;
    }
    // Settings of the whole scheduler.
    if (rest == "maximum-am-resource-percent") {
      double v = 0;
      if (!ParseDouble(p.value, &v) || v < 0 || v > 1)
        return PropertyError(file, p, "expected a fraction in [0, 1] (0.1 = 10%)");
      am_percent_default = v * 100;
      p.handled = true;
    } else if (rest == "user-limit-factor") {
      double v = 0;
      if (!ParseDouble(p.value, &v) || v <= 0) {
        if (v == -1)
          NoteProperty(
              file, p,
              "Weft's user-limit-factor must be > 0; -1 (no user limit) is not expressible");
        else
          return PropertyError(file, p, "expected a number > 0, or -1");
      } else {
        user_limit_default = v;
        p.handled = true;
      }
    } else if (rest == "max-parallel-apps") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(p.value, &v) || v < 0)
        return PropertyError(file, p, "expected an integer >= 0");
      parallel_default = v;
      p.handled = true;
    } else if (rest == "user.max-parallel-apps") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(p.value, &v) || v < 0)
        return PropertyError(file, p, "expected an integer >= 0");
      user_max_apps_default_ = v;
      p.handled = true;
    } else if (absl::StartsWith(rest, "user.") && absl::EndsWith(rest, ".max-parallel-apps")) {
      std::string user =
          rest.substr(5, rest.size() - 5 - absl::string_view(".max-parallel-apps").size());
      int64_t v = 0;
      if (!absl::SimpleAtoi(p.value, &v) || v < 0)
        return PropertyError(file, p, "expected an integer >= 0");
      users_[user] = v;
      p.handled = true;
    } else if (rest == "node-locality-delay" || rest == "rack-locality-additional-delay") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(p.value, &v) || v < -1)
        return PropertyError(file, p, "expected an integer >= -1");
      // YARN counts missed scheduling opportunities (node heartbeats, about one rack's nodes by
      // default); a Weft pass offers every node at once: a positive delay is one missed pass.
      // rack-locality-additional-delay -1 = computed from the cluster: one pass too.
      int passes = v == 0 ? 0 : 1;
      if (rest == "node-locality-delay" && v < 0) passes = 0;
      (rest == "node-locality-delay" ? node_delay_ : rack_delay_) = passes;
      locality_source_ = absl::StrCat(File(file).name, ":", p.line);
      p.handled = true;
    } else if (rest == "resource-calculator") {
      if (absl::EndsWith(p.value, ".DominantResourceCalculator")) {
        p.handled = true;
      } else {
        NoteProperty(file, p,
                     "Weft's capacity policy always compares dominant shares over every "
                     "resource type (as DominantResourceCalculator); memory-only accounting is "
                     "not available");
      }
    } else if (rest == "queue-mappings-override.enable") {
      if (absl::AsciiStrToLower(p.value) == "false")
        p.handled = true;  // Weft never overrides
      else
        NoteProperty(file, p, kNoPlacement);
    } else if (rest == "queue-mappings" || absl::StartsWith(rest, "mapping-rule") ||
               absl::StartsWith(rest, "queue-placement")) {
      NoteProperty(file, p, kNoPlacement);
    } else if (rest == "maximum-applications") {
      NoteProperty(file, p,
                   "Weft rejects no submission for a count of apps; max-parallel-apps "
                   "(max-running-apps) makes apps wait instead");
    } else if (rest == "minimum-user-limit-percent") {
      NoteProperty(file, p, "Weft's capacity policy limits users by user-limit-factor only");
    } else {
      NoteProperty(file, p, "Weft has no equivalent of this CapacityScheduler setting");
    }
  }

  // Weights -> percentages of the parent; defaults of the whole scheduler -> each queue.
  std::function<absl::Status(QueueOut&)> finish = [&](QueueOut& q) -> absl::Status {
    int weights = 0, percents = 0;
    double sum = 0;
    for (const QueueOut& c : q.children) {
      if (c.cs_weight) {
        ++weights;
        sum += *c.cs_weight;
      }
      if (c.capacity) ++percents;
    }
    if (weights > 0 && percents > 0)
      return ErrorAt(File(file), q.children.front().capacity_line,
                     absl::StrCat("the children of ", q.path,
                                  " mix weights and percentages (YARN refuses it too)"));
    if (weights > 0) {
      for (QueueOut& c : q.children) {
        // A child without a capacity gets YARN's default, 0.
        double w = c.cs_weight.value_or(0);
        c.capacity = sum > 0 ? w / sum * 100 : 100.0 / static_cast<double>(q.children.size());
      }
    } else if (percents > 0) {
      for (QueueOut& c : q.children)
        if (!c.capacity) c.capacity = 0;  // YARN's default capacity
    }
    if (parallel_default && !q.max_running_apps) q.max_running_apps = parallel_default;
    if (q.path != "root") {
      if (user_limit_default && !q.user_limit_factor) q.user_limit_factor = user_limit_default;
      if (q.leaf() && am_percent_default && !q.am_percent) q.am_percent = am_percent_default;
    }
    for (QueueOut& c : q.children)
      if (auto s = finish(c); !s.ok()) return s;
    return absl::OkStatus();
  };
  return finish(root_);
}

// ---- The FairScheduler's allocation file.

// Parses YARN's resource strings: "X mb, Y vcores", "memory-mb=X, vcores=Y[, type=Z]", or a
// percentage form (returned as nullopt in `*percent_form` = true). Amounts by Weft type name.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseYarnResource(
    absl::string_view text, bool* percent_form) {
  *percent_form = text.find('%') != absl::string_view::npos;
  std::vector<std::pair<std::string, int64_t>> out;
  if (*percent_form) return out;
  if (text.find('=') != absl::string_view::npos) {
    ResourceTypeRegistry registry;
    for (absl::string_view item : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
      std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
      std::string name = kv.size() == 2 ? Trimmed(kv[0]) : "";
      int64_t v = 0;
      if (kv.size() != 2 || !absl::SimpleAtoi(Trimmed(kv[1]), &v) || v < 0)
        return absl::InvalidArgumentError(
            absl::StrCat("'", Trimmed(item), "' is not TYPE=AMOUNT (an integer >= 0)"));
      if (registry.Find(name) < 0)
        return absl::InvalidArgumentError(
            absl::StrCat("resource type '", name,
                         "' is not one of Weft's (memory-mb, vcores, network-mbps, disk-mbps)"));
      out.push_back({name, v});
    }
    return out;
  }
  // The old form: a number before "mb" and one before "vcores", in any order.
  std::string lower = absl::AsciiStrToLower(text);
  auto amount = [&](const char* unit, int64_t* v) -> bool {
    size_t at = lower.find(unit);
    if (at == std::string::npos) return false;
    size_t end = at;
    while (end > 0 && lower[end - 1] == ' ') --end;
    size_t begin = end;
    while (begin > 0 && (absl::ascii_isdigit(lower[begin - 1]) || lower[begin - 1] == '.')) --begin;
    double d = 0;
    if (begin == end || !absl::SimpleAtod(lower.substr(begin, end - begin), &d)) return false;
    *v = static_cast<int64_t>(d);
    return true;
  };
  int64_t mb = 0, vcores = 0;
  if (!amount("mb", &mb))
    return absl::InvalidArgumentError("missing the memory ('X mb'), as YARN requires");
  if (!amount("vcores", &vcores))
    return absl::InvalidArgumentError("missing the vcores ('Y vcores'), as YARN requires");
  out.push_back({"memory-mb", mb});
  out.push_back({"vcores", vcores});
  return out;
}

absl::StatusOr<std::optional<std::string>> Importer::FsResource(int file, const pugi::xml_node& n,
                                                                absl::string_view where,
                                                                bool is_max) {
  const XmlFile& f = File(file);
  const std::string text = TextOf(n);
  bool percent = false;
  auto amounts = ParseYarnResource(text, &percent);
  if (!amounts.ok())
    return ErrorAt(f, LineOf(f, n),
                   absl::StrCat(Render(n), where, ": ", amounts.status().message()));
  if (percent) {
    NoteAt(file, LineOf(f, n), absl::StrCat(Render(n), where),
           "Weft's queue resources are absolute amounts, not percentages of the cluster");
    return std::optional<std::string>();
  }
  std::vector<std::string> parts, dropped;
  for (const auto& [type, v] : *amounts) {
    if (v == 0) {
      // 0 = no minimum; as a maximum, YARN's memory-only policies ignore a 0 vcores cap, but
      // in Weft it would let the queue run nothing.
      if (is_max) dropped.push_back(absl::StrCat(type, "=0"));
      continue;
    }
    parts.push_back(absl::StrCat(type, "=", v));
  }
  if (!dropped.empty())
    NoteAt(file, LineOf(f, n), absl::StrCat(Render(n), where),
           absl::StrCat(absl::StrJoin(dropped, ", "),
                        " not applied: a maximum of 0 would let the queue run nothing in Weft "
                        "(YARN's memory-only fair policy ignores it); ",
                        parts.empty() ? "no maximum was set" : "the rest was converted"));
  if (parts.empty()) return std::optional<std::string>();
  return std::optional<std::string>(absl::StrJoin(parts, ","));
}

absl::Status Importer::FsQueue(int file, const pugi::xml_node& n, QueueOut* q) {
  const XmlFile& f = File(file);
  const std::string where = absl::StrCat(" in queue ", q->path);
  for (const pugi::xml_attribute& a : n.attributes()) {
    absl::string_view an = a.name();
    if (an == "name") continue;
    if (an == "type") {
      if (absl::string_view(a.value()) == "parent") {
        q->fs_declared_parent = true;
        continue;
      }
      if (absl::string_view(a.value()) == "leaf") continue;
    }
    NoteAt(file, LineOf(f, n), absl::StrCat(an, "=\"", a.value(), "\"", where),
           "Weft has no equivalent of this queue attribute");
  }
  for (const pugi::xml_node& c : n.children()) {
    if (c.type() == pugi::node_pcdata && !TextOf(c).empty()) {
      NoteAt(file, LineOf(f, c), absl::StrCat("text '", TextOf(c), "'", where),
             "YARN reads no text directly in a <queue>");
      continue;
    }
    if (c.type() != pugi::node_element) continue;
    const std::string name = c.name();
    const std::string text = TextOf(c);
    const int line = LineOf(f, c);
    auto bad = [&](absl::string_view what) {
      return ErrorAt(f, line, absl::StrCat(Render(c), where, ": ", what));
    };
    if (name == "queue" || name == "pool") {
      std::string child_name = Trimmed(c.attribute("name").value());
      if (!ValidQueueName(child_name))
        return bad(absl::StrCat("queue name '", child_name, "': Weft's are [A-Za-z0-9_-]+"));
      QueueOut child;
      child.name = child_name;
      child.path = absl::StrCat(q->path, ".", child_name);
      child.line = line;
      if (auto s = FsQueue(file, c, &child); !s.ok()) return s;
      q->children.push_back(std::move(child));
    } else if (name == "minResources" || name == "maxResources") {
      auto r = FsResource(file, c, where, name == "maxResources");
      if (!r.ok()) return r.status();
      (name == "minResources" ? q->min_resources : q->max_resources) = *r;
    } else if (name == "maxRunningApps") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v) || v < 0) return bad("expected an integer >= 0");
      q->max_running_apps = v;
    } else if (name == "maxAMShare") {
      double v = 0;
      if (!ParseDouble(text, &v) || !(v == -1 || (v >= 0 && v <= 1)))
        return bad("expected a share in [0, 1], or -1");
      q->max_am_share = v;
      q->fs_am_share_line = line;
      q->fs_am_share_text = Render(c);
    } else if (name == "weight") {
      double v = 0;
      if (!ParseDouble(text, &v) || v < 0) return bad("expected a number >= 0");
      if (v == 0) {
        NoteAt(file, line, absl::StrCat(Render(c), where),
               "Weft's weights are > 0: a queue served only after all others is not "
               "expressible; left at weight 1");
      } else {
        q->weight = v;
      }
    } else if (name == "schedulingPolicy") {
      std::string v = absl::AsciiStrToLower(text);
      if (v != "fair" && v != "fifo" && v != "drf") {
        NoteAt(file, line, absl::StrCat(Render(c), where),
               "Weft's fair policy orders a leaf's apps by fair (DRF) or fifo only");
      } else {
        q->fs_policy = v;
        q->fs_policy_line = line;
      }
    } else if (name == "aclSubmitApps" || name == "aclAdministerApps") {
      auto acl = AccessControlList::Parse(c.child_value());
      if (!acl.ok()) return bad(acl.status().message());
      (name == "aclSubmitApps" ? q->acl_submit : q->acl_admin) = acl->ToString();
    } else if (name == "maxChildResources") {
      NoteAt(file, line, absl::StrCat(Render(c), where),
             "Weft creates no queues at submission, so there are no ad hoc child queues to limit");
    } else if (name == "maxContainerAllocation") {
      NoteAt(file, line, absl::StrCat(Render(c), where),
             "Weft has no per-queue container size limit, only the cluster's (rm.resource-limit)");
    } else if (name == "minSharePreemptionTimeout" || name == "fairSharePreemptionTimeout" ||
               name == "fairSharePreemptionThreshold") {
      NoteAt(file, line, absl::StrCat(Render(c), where),
             "Weft's preemption timeout and threshold are the cluster's (preemption.*), not "
             "per queue");
    } else if (name == "allowPreemptionFrom") {
      NoteAt(file, line, absl::StrCat(Render(c), where),
             "Weft cannot exempt a queue from preemption");
    } else if (name == "reservation") {
      NoteAt(file, line, absl::StrCat(Render(c), where), "Weft has no reservation system");
    } else {
      NoteAt(file, line, absl::StrCat(Render(c), where),
             "Weft has no equivalent of this queue element");
    }
  }
  // What applies to leaves or parents only, now that the children are known.
  if (!q->leaf() && q->fs_am_share_line) {
    NoteAt(file, q->fs_am_share_line, absl::StrCat(q->fs_am_share_text, where),
           "applies to leaf queues only (YARN ignores it on a parent queue)");
    q->max_am_share.reset();
  }
  if (q->fs_policy_line) {
    if (q->leaf()) {
      q->ordering = q->fs_policy == "fifo" ? "fifo" : "fair";
    } else if (q->fs_policy == "fifo") {
      NoteAt(file, q->fs_policy_line,
             absl::StrCat("<schedulingPolicy>fifo</schedulingPolicy>", where),
             "Weft's fair policy orders sibling queues by weighted dominant share, never fifo");
    }
  }
  if (q->fs_declared_parent && q->leaf())
    NoteAt(file, LineOf(f, n), Render(n, true),
           "Weft creates no queues at submission (no user queues below a parent): it is a leaf "
           "queue in Weft");
  return absl::OkStatus();
}

void Importer::FsPlacement(int file, const pugi::xml_node& n) {
  const XmlFile& f = File(file);
  fs_has_placement_policy_ = true;
  for (const pugi::xml_node& r : n.children()) {
    if (r.type() != pugi::node_element) continue;
    const int line = LineOf(f, r);
    if (absl::string_view(r.name()) != "rule") {
      NoteAt(file, line, Render(r), "not a placement <rule>");
      continue;
    }
    std::string rule = r.attribute("name").value();
    std::string create = absl::AsciiStrToLower(r.attribute("create").value());
    if (rule == "specified") {
      if (create == "false") continue;  // Weft: an app runs in the queue it names
      NoteAt(file, line, Render(r),
             "Weft creates no queues at submission: an app naming an unknown queue is refused");
    } else if (rule == "default") {
      std::string queue = r.attribute("queue").value();
      if (queue.empty() || queue == "default" || queue == "root.default") continue;
      NoteAt(file, line, Render(r),
             absl::StrCat("Weft places an app that names no queue in 'default', not in '", queue,
                          "'"));
    } else {
      NoteAt(file, line, Render(r), kNoPlacement);
    }
  }
}

absl::Status Importer::ConvertFair(int file) {
  const XmlFile& f = File(file);
  pugi::xml_document doc;
  if (absl::Status s = LoadXml(f, &doc); !s.ok()) return s;
  pugi::xml_node alloc = doc.document_element();
  if (absl::string_view(alloc.name()) != "allocations")
    return ErrorAt(
        f, LineOf(f, alloc),
        absl::StrCat("expected the document element <allocations>, found <", alloc.name(), ">"));
  root_.name = "root";
  root_.path = "root";
  have_queues_ = true;
  std::optional<int64_t> queue_max_apps_default;
  std::optional<std::string> queue_max_resources_default;
  bool fifo_default = false;
  for (const pugi::xml_node& c : alloc.children()) {
    if (c.type() == pugi::node_pcdata && !TextOf(c).empty()) {
      NoteAt(file, LineOf(f, c), absl::StrCat("text '", TextOf(c), "'"),
             "YARN reads no text directly in <allocations>");
      continue;
    }
    if (c.type() != pugi::node_element) continue;
    const std::string name = c.name();
    const std::string text = TextOf(c);
    const int line = LineOf(f, c);
    auto bad = [&](absl::string_view what) {
      return ErrorAt(f, line, absl::StrCat(Render(c), ": ", what));
    };
    if (name == "queue" || name == "pool") {
      std::string qname = Trimmed(c.attribute("name").value());
      if (qname == "root") {
        if (auto s = FsQueue(file, c, &root_); !s.ok()) return s;
        continue;
      }
      if (!ValidQueueName(qname))
        return bad(absl::StrCat("queue name '", qname, "': Weft's are [A-Za-z0-9_-]+"));
      QueueOut q;
      q.name = qname;
      q.path = absl::StrCat("root.", qname);
      q.line = line;
      if (auto s = FsQueue(file, c, &q); !s.ok()) return s;
      root_.children.push_back(std::move(q));
    } else if (name == "user") {
      std::string user = Trimmed(c.attribute("name").value());
      if (user.empty()) return bad("a <user> needs a name");
      for (const pugi::xml_node& u : c.children()) {
        if (u.type() != pugi::node_element) continue;
        if (absl::string_view(u.name()) == "maxRunningApps") {
          int64_t v = 0;
          if (!absl::SimpleAtoi(TextOf(u), &v) || v < 0)
            return ErrorAt(f, LineOf(f, u), absl::StrCat(Render(u), ": expected an integer >= 0"));
          users_[user] = v;
        } else {
          NoteAt(file, LineOf(f, u), absl::StrCat(Render(u), " in user ", user),
                 "Weft limits a user's running apps only");
        }
      }
    } else if (name == "userMaxAppsDefault" || name == "queueMaxAppsDefault") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v) || v < 0) return bad("expected an integer >= 0");
      (name == "userMaxAppsDefault" ? user_max_apps_default_ : queue_max_apps_default) = v;
    } else if (name == "queueMaxResourcesDefault") {
      auto r = FsResource(file, c, "", /*is_max=*/true);
      if (!r.ok()) return r.status();
      queue_max_resources_default = *r;
    } else if (name == "queueMaxAMShareDefault") {
      double v = 0;
      if (!ParseDouble(text, &v) || !(v == -1 || (v >= 0 && v <= 1)))
        return bad("expected a share in [0, 1], or -1");
      am_share_default_ = v;
    } else if (name == "defaultQueueSchedulingPolicy") {
      std::string v = absl::AsciiStrToLower(text);
      if (v == "fifo")
        fifo_default = true;
      else if (v != "fair" && v != "drf")
        NoteAt(file, line, Render(c),
               "Weft's fair policy orders a leaf's apps by fair (DRF) or fifo only");
    } else if (name == "defaultFairSharePreemptionTimeout") {
      int64_t v = 0;
      if (!absl::SimpleAtoi(text, &v) || v < 0) return bad("expected seconds >= 0");
      starvation_ms_ = v * 1000;
    } else if (name == "defaultFairSharePreemptionThreshold") {
      double v = 0;
      if (!ParseDouble(text, &v) || v < 0 || v > 1) return bad("expected a fraction in [0, 1]");
      if (v == 0)
        NoteAt(file, line, Render(c), "Weft's preemption threshold must be > 0");
      else
        preemption_threshold_ = v;
    } else if (name == "defaultMinSharePreemptionTimeout") {
      NoteAt(file, line, Render(c),
             "Weft preempts below a queue's entitlement (fair share, at least min-resources) "
             "after one timeout, preemption.starvation-timeout-ms; there is no separate "
             "min-share timeout");
    } else if (name == "queuePlacementPolicy") {
      FsPlacement(file, c);
    } else if (name == "reservation-agent" || name == "reservation-policy" ||
               name == "reservation-planner") {
      NoteAt(file, line, Render(c), "Weft has no reservation system");
    } else {
      NoteAt(file, line, Render(c), "Weft has no equivalent of this allocation file element");
    }
  }
  // Like YARN's FairScheduler, which always creates root.default.
  std::function<bool(const QueueOut&)> has_default = [&](const QueueOut& q) {
    if (q.name == "default") return true;
    for (const QueueOut& c : q.children)
      if (has_default(c)) return true;
    return false;
  };
  if (!has_default(root_)) {
    QueueOut d;
    d.name = "default";
    d.path = "root.default";
    root_.children.push_back(std::move(d));
    added_default_queue_ = true;
  }
  std::function<void(QueueOut&)> defaults = [&](QueueOut& q) {
    if (queue_max_apps_default && !q.max_running_apps) q.max_running_apps = queue_max_apps_default;
    if (q.path != "root" && queue_max_resources_default && !q.max_resources)
      q.max_resources = queue_max_resources_default;
    if (q.leaf() && fifo_default && !q.ordering) q.ordering = "fifo";
    for (QueueOut& c : q.children) defaults(c);
  };
  defaults(root_);
  return absl::OkStatus();
}

absl::Status Importer::CheckUniqueNames(const QueueOut& q,
                                        std::map<std::string, const QueueOut*>* seen, int file) {
  auto [it, inserted] = seen->insert({q.name, &q});
  if (!inserted)
    return ErrorAt(File(file), q.line,
                   absl::StrCat("queue ", q.path, ": its name is also queue ", it->second->path,
                                "'s; Weft's queue names are unique (apps name a queue by its "
                                "name)"));
  for (const QueueOut& c : q.children)
    if (auto s = CheckUniqueNames(c, seen, file); !s.ok()) return s;
  return absl::OkStatus();
}

// ---- Writing YAML.

void EmitQueue(const QueueOut& q, int depth, std::string* out) {
  std::string pad(2 * depth, ' ');
  std::vector<std::string> keys;
  auto add = [&](absl::string_view k, const std::string& v) {
    keys.push_back(absl::StrCat(k, ": ", v));
  };
  if (q.weight) add("weight", FormatNumber(*q.weight));
  if (q.capacity) add("capacity", FormatNumber(*q.capacity));
  if (q.maximum_capacity) add("maximum-capacity", FormatNumber(*q.maximum_capacity));
  if (q.user_limit_factor) add("user-limit-factor", FormatNumber(*q.user_limit_factor));
  if (q.am_percent) add("maximum-am-resource-percent", FormatNumber(*q.am_percent));
  if (q.min_resources) add("min-resources", Quote(*q.min_resources));
  if (q.max_resources) add("max-resources", Quote(*q.max_resources));
  if (q.max_running_apps) add("max-running-apps", absl::StrCat(*q.max_running_apps));
  if (q.max_am_share) add("max-am-share", FormatNumber(*q.max_am_share));
  if (q.state) add("state", *q.state);
  if (q.ordering) add("ordering", *q.ordering);
  if (q.acl_submit) add("acl_submit_applications", Quote(*q.acl_submit));
  if (q.acl_admin) add("acl_administer_queue", Quote(*q.acl_admin));
  if (keys.empty() && q.children.empty()) {
    absl::StrAppend(out, pad, q.name, ": {}\n");
    return;
  }
  absl::StrAppend(out, pad, q.name, ":\n");
  for (const std::string& k : keys) absl::StrAppend(out, pad, "  ", k, "\n");
  if (!q.children.empty()) {
    absl::StrAppend(out, pad, "  children:\n");
    for (const QueueOut& c : q.children) EmitQueue(c, depth + 2, out);
  }
}

std::string Importer::EmitScheduler() const {
  std::vector<std::string> sources;
  for (const XmlFile& f : files_) sources.push_back(f.name);
  std::string out = absl::StrCat(
      "# Weft scheduler configuration (docs/scheduler.md), converted by `weft config import-yarn`\n"
      "# from ",
      absl::StrJoin(sources, " and "),
      ".\n"
      "# What could not be converted is listed in unconverted.txt, one line each.\n");
  absl::StrAppend(&out, "policy: ", policy_.empty() ? scheduler::DefaultPolicyName() : policy_,
                  "\n");
  if (am_share_default_)
    absl::StrAppend(&out, "queue-max-am-share-default: ", FormatNumber(*am_share_default_), "\n");
  if (user_max_apps_default_)
    absl::StrAppend(&out, "user-max-apps-default: ", *user_max_apps_default_, "\n");
  if (!users_.empty()) {
    absl::StrAppend(&out, "users:\n");
    for (const auto& [user, apps] : users_)
      absl::StrAppend(&out, "  ", Quote(user), ": {max-running-apps: ", apps, "}\n");
  }
  if (node_delay_ || rack_delay_) {
    absl::StrAppend(&out,
                    "# YARN counts missed scheduling opportunities (node heartbeats); a Weft pass "
                    "offers every\n# node at once, so a positive YARN delay is one missed pass "
                    "(from ",
                    locality_source_, ").\nlocality:\n");
    if (node_delay_) absl::StrAppend(&out, "  node-locality-delay: ", *node_delay_, "\n");
    if (rack_delay_) absl::StrAppend(&out, "  rack-locality-delay: ", *rack_delay_, "\n");
  }
  if (preemption_ || starvation_ms_ || preemption_threshold_) {
    absl::StrAppend(&out, "preemption:\n");
    if (preemption_) absl::StrAppend(&out, "  enabled: ", *preemption_ ? "true" : "false", "\n");
    if (starvation_ms_) absl::StrAppend(&out, "  starvation-timeout-ms: ", *starvation_ms_, "\n");
    if (preemption_threshold_)
      absl::StrAppend(&out, "  threshold: ", FormatNumber(*preemption_threshold_), "\n");
  }
  if (have_queues_) {
    if (added_default_queue_)
      absl::StrAppend(&out,
                      "# root.default: YARN's FairScheduler always has it; apps that name no "
                      "queue run there.\n");
    absl::StrAppend(&out, "queues:\n");
    EmitQueue(root_, 1, &out);
  }
  return out;
}

std::string Importer::EmitDaemon() const {
  std::string out =
      "# Weft daemon settings converted by `weft config import-yarn` from yarn-site.xml. Each\n"
      "# key is a flag of the command its section names (rm.port is `weft rm --port`). Start\n"
      "# the daemons with them:\n";
  for (const char* section : {"rm", "nm"}) {
    std::string cmd = absl::StrCat("#   weft ", section);
    if (absl::string_view(section) == "rm")
      absl::StrAppend(&cmd, " --scheduler-config scheduler.yaml");
    for (const DaemonSetting& d : daemon_)
      if (d.section == section)
        for (const std::string& v : d.values) absl::StrAppend(&cmd, " --", d.key, " ", v);
    absl::StrAppend(&out, cmd, "\n");
  }
  for (const char* section : {"rm", "nm"}) {
    absl::StrAppend(&out, section, ":\n");
    if (absl::string_view(section) == "rm")
      absl::StrAppend(&out, "  scheduler-config: scheduler.yaml\n");
    bool any = absl::string_view(section) == "rm";
    for (const DaemonSetting& d : daemon_) {
      if (d.section != section) continue;
      any = true;
      std::vector<std::string> quoted;
      for (const std::string& v : d.values) {
        int64_t number = 0;
        quoted.push_back(absl::SimpleAtoi(v, &number) ? v : Quote(v));
      }
      std::string value = d.list || d.values.size() > 1
                              ? absl::StrCat("[", absl::StrJoin(quoted, ", "), "]")
                              : quoted.front();
      absl::StrAppend(&out, "  ", d.key, ": ", value, "  # ", d.source, "\n");
    }
    if (!any) absl::StrAppend(&out, "  {}\n");
  }
  return out;
}

absl::StatusOr<YarnImport> Importer::Run() {
  if (in_.capacity_scheduler && in_.fair_scheduler)
    return absl::InvalidArgumentError(
        "give a capacity-scheduler.xml or a fair-scheduler.xml, not both");
  if (!in_.yarn_site && !in_.capacity_scheduler && !in_.fair_scheduler)
    return absl::InvalidArgumentError("nothing to convert: no file was given");
  const XmlFile* scheduler_file = in_.capacity_scheduler ? &*in_.capacity_scheduler
                                  : in_.fair_scheduler   ? &*in_.fair_scheduler
                                                         : nullptr;
  if (in_.yarn_site) files_.push_back(*in_.yarn_site);
  const int site = in_.yarn_site ? 0 : -1;
  if (scheduler_file) files_.push_back(*scheduler_file);
  const int sched = scheduler_file ? static_cast<int>(files_.size()) - 1 : -1;
  if (in_.capacity_scheduler) policy_ = "capacity";
  if (in_.fair_scheduler) policy_ = "fair";

  // The allocation file first: whether it has a placement policy matters to yarn-site.xml.
  if (in_.fair_scheduler)
    if (auto s = ConvertFair(sched); !s.ok()) return s;
  if (in_.capacity_scheduler) {
    auto props = ReadConfiguration(sched);
    if (!props.ok()) return props.status();
    if (auto s = ConvertCapacity(sched, *props); !s.ok()) return s;
  }
  if (site >= 0) {
    auto props = ReadConfiguration(site);
    if (!props.ok()) return props.status();
    if (auto s = ConvertYarnSite(site, *props); !s.ok()) return s;
  }
  if (have_queues_) {
    std::map<std::string, const QueueOut*> seen;
    if (auto s = CheckUniqueNames(root_, &seen, sched); !s.ok()) return s;
  }

  YarnImport result;
  result.scheduler_yaml = EmitScheduler();
  result.daemon_yaml = EmitDaemon();
  // What Weft makes of it: the parser's and the policy's checks.
  ResourceTypeRegistry registry;
  auto parsed = scheduler::ParseSchedulerConfig(result.scheduler_yaml, registry, "scheduler.yaml");
  if (!parsed.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(scheduler_file ? scheduler_file->name : "yarn-site.xml",
                     ": the converted configuration is refused: ", parsed.status().message()));
  auto created = scheduler::CreateScheduler(*parsed);
  if (!created.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(scheduler_file ? scheduler_file->name : "yarn-site.xml",
                     ": the converted configuration is refused: ", created.status().message()));

  std::stable_sort(notes_.begin(), notes_.end(), [](const Note& a, const Note& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  for (const Note& n : notes_)
    result.unconverted.push_back(absl::StrCat(files_[n.file].name, ":", n.line, ": ", n.text));
  return result;
}

}  // namespace

absl::StatusOr<YarnImport> ImportYarnConfig(const YarnImportInput& input) {
  return Importer(input).Run();
}

}  // namespace weft::config
