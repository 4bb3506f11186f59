// capacity-scheduler.xml: the queue tree (yarn.scheduler.capacity.<path>.queues), each queue's
// settings, and the CapacityScheduler's settings of the whole scheduler.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/acl.h"
#include "config/yarn_import_internal.h"

namespace weft::config::yarn_internal {
namespace {

constexpr absl::string_view kCsPrefix = "yarn.scheduler.capacity.";

}  // namespace

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
      if (!ValidUserName(user))
        return PropertyError(file, p,
                             absl::StrCat("user name '", user,
                                          "': Weft's are non-empty, without whitespace or "
                                          "control characters"));
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

}  // namespace weft::config::yarn_internal
