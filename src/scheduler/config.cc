#include "scheduler/config.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/yaml_util.h"
#include "scheduler/gpu/gpu_placement.h"
#include "yaml-cpp/yaml.h"

namespace weft::scheduler {
namespace {

using yaml::CheckKeys;
using yaml::Err;
using yaml::Scalar;

bool ValidQueueName(absl::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-') return false;
  }
  return true;
}

absl::StatusOr<Resource> ParseResourceValue(const YAML::Node& node,
                                            const ResourceTypeRegistry& registry,
                                            absl::string_view origin, absl::string_view path) {
  auto text = Scalar<std::string>(node, origin, path);
  if (!text.ok()) return text.status();
  auto r = registry.Parse(*text);
  if (!r.ok()) return Err(origin, path, r.status().message());
  if (r->AnyNegative())
    return Err(origin, path, absl::StrCat("'", *text, "' has a negative amount"));
  return r;
}

// The text of the single value at `node`; "expected a single value" otherwise (as Scalar).
absl::StatusOr<std::string> ScalarText(const YAML::Node& node, absl::string_view origin,
                                       absl::string_view path) {
  if (!node.IsScalar()) return Err(origin, path, "expected a single value");
  return node.Scalar();
}

// A max-running-apps value: >= 0, or -1 for no limit when `allow_none`.
absl::StatusOr<int64_t> MaxApps(const YAML::Node& node, absl::string_view origin,
                                absl::string_view path, bool allow_none) {
  auto v = Scalar<int64_t>(node, origin, path);
  if (!v.ok()) return v.status();
  if (*v < (allow_none ? -1 : 0))
    return Err(
        origin, path,
        absl::StrCat(*v, allow_none ? " must be >= 0, or -1 for no limit" : " must be >= 0"));
  return *v;
}

// User names as apps carry them: non-empty, without whitespace or control characters.
bool ValidUserName(absl::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (char c : name) {
    if (absl::ascii_isspace(c) || absl::ascii_iscntrl(c)) return false;
  }
  return true;
}

absl::Status ParseUsers(const YAML::Node& node, absl::string_view origin,
                        std::map<std::string, UserConfig>* out) {
  if (!node.IsMap())
    return Err(origin, "users", "expected a mapping of user name to the user's limits");
  for (const auto& kv : node) {
    const std::string name = kv.first.as<std::string>();
    const std::string path = absl::StrCat("users.", name);
    if (!ValidUserName(name))
      return Err(origin, path,
                 absl::StrCat("user name '", name, "' must be non-empty, without spaces"));
    UserConfig user;
    if (!kv.second.IsNull()) {
      if (absl::Status s = CheckKeys(kv.second, {"max-running-apps"}, origin, path); !s.ok())
        return s;
      if (kv.second["max-running-apps"]) {
        auto v = MaxApps(kv.second["max-running-apps"], origin,
                         absl::StrCat(path, ".max-running-apps"), /*allow_none=*/true);
        if (!v.ok()) return v.status();
        user.max_running_apps = *v;
      }
    }
    (*out)[name] = user;
  }
  return absl::OkStatus();
}

// The keys a queue may have: the core's and every policy's, and which policy owns which.
struct QueueKeys {
  std::set<std::string> allowed;
  const std::vector<PolicyQueueKeys>* policies;
  std::map<std::string, size_t> owner;  // a policy's key -> its index in `policies`
};

absl::StatusOr<QueueKeys> MakeQueueKeys(const std::vector<PolicyQueueKeys>& policies) {
  QueueKeys keys;
  keys.allowed = {"weight",  "min-resources", "max-resources",           "max-running-apps",
                  "state",   "ordering",      "acl_submit_applications", "acl_administer_queue",
                  "accessible-node-labels", "node-label-maximum-capacity", "children"};
  keys.policies = &policies;
  for (size_t i = 0; i < policies.size(); ++i) {
    for (const std::string& key : policies[i].keys) {
      if (!keys.allowed.insert(key).second)
        return absl::InternalError(absl::StrCat("queue key '", key, "' of policy '",
                                                policies[i].policy,
                                                "' is already a core or policy queue key"));
      keys.owner[key] = i;
    }
  }
  return keys;
}

absl::Status ParseQueueBody(const YAML::Node& node, const ResourceTypeRegistry& registry,
                            const QueueKeys& keys, absl::string_view origin,
                            const std::string& path, std::set<std::string>* names, QueueConfig* out,
                            std::vector<std::map<std::string, std::string>>* given);

// Parses the queue `name` at `path` into `out`: the core's keys, its children, then every
// policy's parser on the policy's keys given there.
absl::Status ParseQueue(const YAML::Node& node, const std::string& name,
                        const ResourceTypeRegistry& registry, const QueueKeys& keys,
                        absl::string_view origin, const std::string& path,
                        std::set<std::string>* names, QueueConfig* out) {
  if (!ValidQueueName(name))
    return Err(origin, path, absl::StrCat("queue name '", name, "' must be [A-Za-z0-9_-]+"));
  if (!names->insert(name).second)
    return Err(origin, path, absl::StrCat("queue name '", name, "' is used twice"));
  out->name = name;
  for (int i = 0; i < kMaxResourceTypes; ++i) out->max_resources[i] = kUnlimited;
  // Per policy (as keys.policies), its keys given on this queue -> their text.
  std::vector<std::map<std::string, std::string>> given(keys.policies->size());
  if (!node.IsNull()) {
    if (absl::Status s = ParseQueueBody(node, registry, keys, origin, path, names, out, &given);
        !s.ok())
      return s;
  }
  const bool leaf = out->children.empty();
  for (size_t i = 0; i < given.size(); ++i) {
    if (absl::Status s = (*keys.policies)[i].parse(given[i], leaf, origin, path, out); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

// The keys of a queue that is not empty: the core's parsed into `out` (children recursively),
// the policies' collected into `given` for their parsers.
absl::Status ParseQueueBody(const YAML::Node& node, const ResourceTypeRegistry& registry,
                            const QueueKeys& keys, absl::string_view origin,
                            const std::string& path, std::set<std::string>* names, QueueConfig* out,
                            std::vector<std::map<std::string, std::string>>* given) {
  if (absl::Status s = CheckKeys(node, keys.allowed, origin, path); !s.ok()) return s;
  auto sub = [&](absl::string_view key) { return absl::StrCat(path, ".", key); };
  if (node["weight"]) {
    auto text = ScalarText(node["weight"], origin, sub("weight"));
    if (!text.ok()) return text.status();
    auto v = ConfigPositive(*text, origin, sub("weight"));
    if (!v.ok()) return v.status();
    out->weight = *v;
  }
  if (node["min-resources"]) {
    auto r = ParseResourceValue(node["min-resources"], registry, origin, sub("min-resources"));
    if (!r.ok()) return r.status();
    out->min_resources = *r;
  }
  if (node["max-resources"]) {
    auto r = ParseResourceValue(node["max-resources"], registry, origin, sub("max-resources"));
    if (!r.ok()) return r.status();
    // Only the types named are capped; the others stay unlimited.
    for (absl::string_view item : absl::StrSplit(node["max-resources"].Scalar(), ',')) {
      absl::string_view type = absl::StripAsciiWhitespace(item.substr(0, item.find('=')));
      int id = registry.Find(type);
      if (id >= 0) out->max_resources[id] = (*r)[id];
    }
  }
  if (!out->min_resources.FitsIn(out->max_resources))
    return Err(origin, path, "min-resources is above max-resources");
  if (node["max-running-apps"]) {
    auto v = Scalar<int64_t>(node["max-running-apps"], origin, sub("max-running-apps"));
    if (!v.ok()) return v.status();
    if (*v < 0) return Err(origin, sub("max-running-apps"), absl::StrCat(*v, " must be >= 0"));
    out->max_running_apps = *v;
  }
  // The policies' keys: single values here, parsed by their policy once the children are.
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    auto owner = keys.owner.find(key);
    if (owner == keys.owner.end()) continue;
    auto text = ScalarText(kv.second, origin, sub(key));
    if (!text.ok()) return text.status();
    (*given)[owner->second][key] = *std::move(text);
  }
  if (node["state"]) {
    auto v = Scalar<std::string>(node["state"], origin, sub("state"));
    if (!v.ok()) return v.status();
    if (*v == "RUNNING") {
      out->state = QueueState::kRunning;
    } else if (*v == "STOPPED") {
      out->state = QueueState::kStopped;
    } else {
      return Err(origin, sub("state"), absl::StrCat("'", *v, "' is not RUNNING or STOPPED"));
    }
  }
  if (node["ordering"]) {
    auto v = Scalar<std::string>(node["ordering"], origin, sub("ordering"));
    if (!v.ok()) return v.status();
    if (*v == "fifo") {
      out->ordering = LeafOrdering::kFifo;
    } else if (*v == "fair") {
      out->ordering = LeafOrdering::kFair;
    } else {
      return Err(origin, sub("ordering"), absl::StrCat("'", *v, "' is not fifo or fair"));
    }
  }
  for (auto [key, field] : {std::pair{"acl_submit_applications", &out->acl_submit_applications},
                            std::pair{"acl_administer_queue", &out->acl_administer_queue}}) {
    if (!node[key]) continue;
    if (node[key].IsNull())
      return Err(origin, sub(key), "expected an ACL; write \" \" (quoted) for nobody");
    auto v = Scalar<std::string>(node[key], origin, sub(key));
    if (!v.ok()) return v.status();
    auto acl = AccessControlList::Parse(*v);
    if (!acl.ok()) return Err(origin, sub(key), acl.status().message());
    *field = *std::move(acl);
  }
  if (const YAML::Node& labels = node["accessible-node-labels"]) {
    // A list, or one comma-separated string as YARN writes it ("gpu,ssd", "*").
    std::vector<std::string> names;
    if (labels.IsSequence()) {
      for (const YAML::Node& l : labels) {
        auto v = Scalar<std::string>(l, origin, sub("accessible-node-labels"));
        if (!v.ok()) return v.status();
        names.push_back(*v);
      }
    } else {
      auto v = Scalar<std::string>(labels, origin, sub("accessible-node-labels"));
      if (!v.ok()) return v.status();
      for (absl::string_view part : absl::StrSplit(*v, ',', absl::SkipWhitespace()))
        names.emplace_back(absl::StripAsciiWhitespace(part));
    }
    out->accessible_node_labels = std::move(names);
  }
  if (const YAML::Node& caps = node["node-label-maximum-capacity"]) {
    if (!caps.IsMap())
      return Err(origin, sub("node-label-maximum-capacity"),
                 "expected a mapping of node label to a percentage");
    for (const auto& kv : caps) {
      const std::string label = kv.first.as<std::string>();
      const std::string key = absl::StrCat(sub("node-label-maximum-capacity"), ".", label);
      auto text = ScalarText(kv.second, origin, key);
      if (!text.ok()) return text.status();
      auto v = ConfigPercent(*text, origin, key);
      if (!v.ok()) return v.status();
      out->node_label_maximum_capacity[label] = *v;
    }
  }
  if (node["children"]) {
    const YAML::Node& children = node["children"];
    if (!children.IsMap() || children.size() == 0)
      return Err(origin, sub("children"), "expected a non-empty mapping of queue name to queue");
    for (const auto& kv : children) {
      std::string child_name = kv.first.as<std::string>();
      QueueConfig child;
      if (auto s = ParseQueue(kv.second, child_name, registry, keys, origin,
                              absl::StrCat(path, ".children.", child_name), names, &child);
          !s.ok())
        return s;
      out->children.push_back(std::move(child));
    }
  }
  return absl::OkStatus();
}

// Appends to `path` the queues from `q` down to the one `queue` names, and returns true; or
// leaves `path` as it was and returns false. `prefix` is q's parent's path ("" for root).
// `by_name` collects the queues whose name (not path) is `queue`.
bool FindQueuePath(const QueueConfig& q, absl::string_view prefix, absl::string_view queue,
                   std::vector<const QueueConfig*>* path,
                   std::vector<std::vector<const QueueConfig*>>* by_name) {
  std::string q_path = prefix.empty() ? q.name : absl::StrCat(prefix, ".", q.name);
  path->push_back(&q);
  if (q_path == queue || q_path == absl::StrCat("root.", queue)) return true;
  if (q.name == queue) by_name->push_back(*path);
  for (const QueueConfig& child : q.children) {
    if (FindQueuePath(child, q_path, queue, path, by_name)) return true;
  }
  path->pop_back();
  return false;
}

}  // namespace

absl::Status ConfigError(absl::string_view origin, absl::string_view path, absl::string_view what) {
  return Err(origin, path, what);
}

absl::StatusOr<double> ConfigNumber(absl::string_view text, absl::string_view origin,
                                    absl::string_view path) {
  // The same conversion as Scalar<double> on the node the text came from.
  return Scalar<double>(YAML::Node(std::string(text)), origin, path);
}

absl::StatusOr<double> ConfigPositive(absl::string_view text, absl::string_view origin,
                                      absl::string_view path) {
  auto v = ConfigNumber(text, origin, path);
  if (!v.ok()) return v.status();
  if (!(*v > 0)) return Err(origin, path, absl::StrCat(*v, " must be > 0"));
  return *v;
}

absl::StatusOr<double> ConfigPercent(absl::string_view text, absl::string_view origin,
                                     absl::string_view path) {
  auto v = ConfigNumber(text, origin, path);
  if (!v.ok()) return v.status();
  if (!(*v >= 0 && *v <= 100))
    return Err(origin, path, absl::StrCat(*v, " must be a percentage in [0, 100]"));
  return *v;
}

absl::StatusOr<double> ConfigShareOrNoLimit(absl::string_view text, absl::string_view origin,
                                            absl::string_view path) {
  auto v = ConfigNumber(text, origin, path);
  if (!v.ok()) return v.status();
  if (!(*v == -1 || (*v >= 0 && *v <= 1)))
    return Err(origin, path, absl::StrCat(*v, " must be a share in [0, 1], or -1 for no limit"));
  return *v;
}

bool QueueAccessAllowed(const SchedulerConfig& config, absl::string_view queue, QueueAcl acl,
                        absl::string_view user, const std::vector<std::string>& groups) {
  if (queue.empty()) return false;
  std::vector<const QueueConfig*> path;
  std::vector<std::vector<const QueueConfig*>> by_name;
  if (!FindQueuePath(config.root, "", queue, &path, &by_name)) {
    if (by_name.size() != 1) return false;  // unknown, or ambiguous
    path = std::move(by_name.front());
  }
  for (const QueueConfig* q : path) {
    // When not given: root lets everyone submit (YARN's default) but makes no one its admin
    // (YARN's "*" would let every user kill every other user's app; cluster admins administer
    // every queue anyway); queues below root add no one.
    auto allows = [&](const std::optional<AccessControlList>& given, bool root_default) {
      return given ? given->IsAllowed(user, groups) : q == &config.root && root_default;
    };
    // A queue administrator may also submit (YARN's RMAppManager checks both).
    if (allows(q->acl_administer_queue, false)) return true;
    if (acl == QueueAcl::kSubmitApplications && allows(q->acl_submit_applications, true))
      return true;
  }
  return false;
}

SchedulerConfig DefaultSchedulerConfig() {
  SchedulerConfig c;
  c.root.name = "root";
  QueueConfig leaf;
  leaf.name = "default";
  for (int i = 0; i < kMaxResourceTypes; ++i) {
    c.root.max_resources[i] = kUnlimited;
    leaf.max_resources[i] = kUnlimited;
  }
  c.root.children.push_back(leaf);
  return c;
}

absl::StatusOr<SchedulerConfig> ParseSchedulerConfigWith(
    absl::string_view yaml, const ResourceTypeRegistry& registry, absl::string_view origin,
    const std::vector<PolicySection>& sections, const std::vector<PolicyQueueKeys>& queue_keys) {
  absl::StatusOr<QueueKeys> keys = MakeQueueKeys(queue_keys);
  if (!keys.ok()) return keys.status();
  absl::StatusOr<YAML::Node> loaded = yaml::Load(yaml, origin);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& doc = *loaded;
  SchedulerConfig config = DefaultSchedulerConfig();
  config.origin = std::string(origin);
  if (doc.IsNull()) return config;
  std::set<std::string> top = {"policy",
                               "locality",
                               "preemption",
                               "queues",
                               "queue-max-am-share-default",
                               "user-max-apps-default",
                               "users",
                               "node-labels",
                               "gang-mode",
                               "gpu-placement",
                               "gpu-placement-candidates"};
  for (const PolicySection& section : sections) top.insert(section.key);
  if (auto s = CheckKeys(doc, top, origin, "(top)"); !s.ok()) return s;
  for (const PolicySection& section : sections) {
    const YAML::Node& node = doc[section.key];
    if (!node) continue;
    std::string text = YAML::Dump(node);
    if (absl::Status s = section.validate(text, origin); !s.ok()) return s;
    config.policy_sections[section.key] = std::move(text);
  }
  if (doc["policy"]) {
    auto v = Scalar<std::string>(doc["policy"], origin, "policy");
    if (!v.ok()) return v.status();
    config.policy = *v;
  }
  if (const YAML::Node& loc = doc["locality"]) {
    if (auto s =
            CheckKeys(loc, {"node-locality-delay", "rack-locality-delay", "max-locality-probes"},
                      origin, "locality");
        !s.ok())
      return s;
    struct {
      const char* key;
      int32_t* field;
      int32_t min;
    } fields[] = {{"node-locality-delay", &config.locality.node_locality_delay, 0},
                  {"rack-locality-delay", &config.locality.rack_locality_delay, 0},
                  {"max-locality-probes", &config.locality.max_locality_probes, 1}};
    for (auto& f : fields) {
      if (!loc[f.key]) continue;
      std::string path = absl::StrCat("locality.", f.key);
      auto v = Scalar<int32_t>(loc[f.key], origin, path);
      if (!v.ok()) return v.status();
      if (*v < f.min) return Err(origin, path, absl::StrCat(*v, " must be >= ", f.min));
      *f.field = *v;
    }
  }
  if (const YAML::Node& pre = doc["preemption"]) {
    if (auto s =
            CheckKeys(pre, {"enabled", "starvation-timeout-ms", "grace-period-ms", "threshold"},
                      origin, "preemption");
        !s.ok())
      return s;
    if (pre["enabled"]) {
      auto v = Scalar<bool>(pre["enabled"], origin, "preemption.enabled");
      if (!v.ok()) return v.status();
      config.preemption.enabled = *v;
    }
    for (auto [key, field] :
         {std::pair{"starvation-timeout-ms", &config.preemption.starvation_timeout_ms},
          std::pair{"grace-period-ms", &config.preemption.grace_period_ms}}) {
      if (!pre[key]) continue;
      std::string path = absl::StrCat("preemption.", key);
      auto v = Scalar<int64_t>(pre[key], origin, path);
      if (!v.ok()) return v.status();
      if (*v < 0) return Err(origin, path, absl::StrCat(*v, " must be >= 0"));
      *field = *v;
    }
    if (pre["threshold"]) {
      auto v = Scalar<double>(pre["threshold"], origin, "preemption.threshold");
      if (!v.ok()) return v.status();
      if (!(*v > 0 && *v <= 1))
        return Err(origin, "preemption.threshold", absl::StrCat(*v, " must be in (0, 1]"));
      config.preemption.threshold = *v;
    }
  }
  if (doc["queue-max-am-share-default"]) {
    auto text = ScalarText(doc["queue-max-am-share-default"], origin, "queue-max-am-share-default");
    if (!text.ok()) return text.status();
    auto v = ConfigShareOrNoLimit(*text, origin, "queue-max-am-share-default");
    if (!v.ok()) return v.status();
    config.queue_max_am_share_default = *v;
  }
  if (doc["user-max-apps-default"]) {
    auto v = MaxApps(doc["user-max-apps-default"], origin, "user-max-apps-default",
                     /*allow_none=*/true);
    if (!v.ok()) return v.status();
    config.user_max_apps_default = *v;
  }
  if (const YAML::Node& users = doc["users"]) {
    if (absl::Status s = ParseUsers(users, origin, &config.users); !s.ok()) return s;
  }
  if (const YAML::Node& labels = doc["node-labels"]) {
    // node-labels: {gpu: {exclusive: true}, ssd: {exclusive: false}}; a label with no body
    // is exclusive (YARN's default).
    if (!labels.IsMap())
      return Err(origin, "node-labels", "expected a mapping of node label to its settings");
    for (const auto& kv : labels) {
      const std::string name = kv.first.as<std::string>();
      const std::string path = absl::StrCat("node-labels.", name);
      if (!ValidAllocationTag(name))
        return Err(origin, path, "a node label is 1-255 characters of [A-Za-z0-9_.-]");
      NodeLabelConfig label;
      if (!kv.second.IsNull()) {
        if (absl::Status s = CheckKeys(kv.second, {"exclusive"}, origin, path); !s.ok()) return s;
        if (kv.second["exclusive"]) {
          auto v = Scalar<bool>(kv.second["exclusive"], origin, absl::StrCat(path, ".exclusive"));
          if (!v.ok()) return v.status();
          label.exclusive = *v;
        }
      }
      config.node_labels[name] = label;
    }
  }
  if (doc["gang-mode"]) {
    auto v = Scalar<std::string>(doc["gang-mode"], origin, "gang-mode");
    if (!v.ok()) return v.status();
    if (*v != "reserve" && *v != "hold-and-wait")
      return Err(origin, "gang-mode", absl::StrCat("'", *v, "' is not reserve or hold-and-wait"));
    config.gang_mode = *v;
  }
  if (doc["gpu-placement"]) {
    auto v = Scalar<std::string>(doc["gpu-placement"], origin, "gpu-placement");
    if (!v.ok()) return v.status();
    const std::vector<std::string>& known = gpu::GpuPlacementNames();
    if (*v != "first-fit" && std::find(known.begin(), known.end(), *v) == known.end())
      return Err(origin, "gpu-placement",
                 absl::StrCat("'", *v, "' is not first-fit or one of ", absl::StrJoin(known, ", ")));
    config.gpu_placement = *v;
  }
  if (doc["gpu-placement-candidates"]) {
    auto v = Scalar<int64_t>(doc["gpu-placement-candidates"], origin, "gpu-placement-candidates");
    if (!v.ok()) return v.status();
    if (*v < 1 || *v > 100000)
      return Err(origin, "gpu-placement-candidates",
                 absl::StrCat(*v, " is not between 1 and 100000"));
    config.gpu_placement_candidates = static_cast<int32_t>(*v);
  }
  if (const YAML::Node& queues = doc["queues"]) {
    if (!queues.IsMap() || queues.size() != 1 || !queues["root"])
      return Err(origin, "queues", "expected a mapping with the single key 'root'");
    std::set<std::string> names;
    QueueConfig root;
    if (auto s = ParseQueue(queues["root"], "root", registry, *keys, origin, "queues.root", &names,
                            &root);
        !s.ok())
      return s;
    if (root.children.empty())
      return Err(origin, "queues.root", "root needs at least one child queue");
    config.root = std::move(root);
  }
  return config;
}

}  // namespace weft::scheduler
