// fair-scheduler.xml (a FairScheduler allocation file): the queue tree (<queue> or <pool>),
// each queue's settings, users' limits, defaults for every queue, and the placement policy.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
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
}  // namespace

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
      if (!ValidUserName(user))
        return bad(absl::StrCat("user name '", user,
                                "': Weft's are non-empty, without whitespace or control "
                                "characters"));
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

}  // namespace weft::config::yarn_internal
