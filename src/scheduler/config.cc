#include "scheduler/config.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/yaml_util.h"
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

absl::Status ParseQueue(const YAML::Node& node, const std::string& name,
                        const ResourceTypeRegistry& registry, absl::string_view origin,
                        const std::string& path, std::set<std::string>* names, QueueConfig* out) {
  if (!ValidQueueName(name))
    return Err(origin, path, absl::StrCat("queue name '", name, "' must be [A-Za-z0-9_-]+"));
  if (!names->insert(name).second)
    return Err(origin, path, absl::StrCat("queue name '", name, "' is used twice"));
  out->name = name;
  for (int i = 0; i < kMaxResourceTypes; ++i) out->max_resources[i] = kUnlimited;
  if (node.IsNull()) return absl::OkStatus();
  static const std::set<std::string> kKeys = {
      "weight",   "min-resources",    "max-resources",     "max-running-apps",
      "capacity", "maximum-capacity", "user-limit-factor", "maximum-am-resource-percent",
      "state",    "ordering",         "children"};
  if (absl::Status s = CheckKeys(node, kKeys, origin, path); !s.ok()) return s;
  auto sub = [&](absl::string_view key) { return absl::StrCat(path, ".", key); };
  if (node["weight"]) {
    auto v = Scalar<double>(node["weight"], origin, sub("weight"));
    if (!v.ok()) return v.status();
    if (!(*v > 0)) return Err(origin, sub("weight"), absl::StrCat(*v, " must be > 0"));
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
  auto percent = [&](absl::string_view key, double* field) -> absl::Status {
    if (!node[std::string(key)]) return absl::OkStatus();
    auto v = Scalar<double>(node[std::string(key)], origin, sub(key));
    if (!v.ok()) return v.status();
    if (!(*v >= 0 && *v <= 100))
      return Err(origin, sub(key), absl::StrCat(*v, " must be a percentage in [0, 100]"));
    *field = *v;
    return absl::OkStatus();
  };
  if (auto s = percent("capacity", &out->capacity); !s.ok()) return s;
  if (auto s = percent("maximum-capacity", &out->maximum_capacity); !s.ok()) return s;
  if (auto s = percent("maximum-am-resource-percent", &out->maximum_am_resource_percent); !s.ok())
    return s;
  if (out->capacity > out->maximum_capacity)
    return Err(origin, path,
               absl::StrCat("capacity ", out->capacity, " is above maximum-capacity ",
                            out->maximum_capacity));
  if (node["user-limit-factor"]) {
    auto v = Scalar<double>(node["user-limit-factor"], origin, sub("user-limit-factor"));
    if (!v.ok()) return v.status();
    if (!(*v > 0)) return Err(origin, sub("user-limit-factor"), absl::StrCat(*v, " must be > 0"));
    out->user_limit_factor = *v;
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
  if (node["children"]) {
    const YAML::Node& children = node["children"];
    if (!children.IsMap() || children.size() == 0)
      return Err(origin, sub("children"), "expected a non-empty mapping of queue name to queue");
    for (const auto& kv : children) {
      std::string child_name = kv.first.as<std::string>();
      QueueConfig child;
      if (auto s = ParseQueue(kv.second, child_name, registry, origin,
                              absl::StrCat(path, ".children.", child_name), names, &child);
          !s.ok())
        return s;
      out->children.push_back(std::move(child));
    }
  }
  return absl::OkStatus();
}

}  // namespace

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
    const std::vector<PolicySection>& sections) {
  absl::StatusOr<YAML::Node> loaded = yaml::Load(yaml, origin);
  if (!loaded.ok()) return loaded.status();
  const YAML::Node& doc = *loaded;
  SchedulerConfig config = DefaultSchedulerConfig();
  config.origin = std::string(origin);
  if (doc.IsNull()) return config;
  std::set<std::string> top = {"policy", "locality", "preemption", "queues"};
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
  if (const YAML::Node& queues = doc["queues"]) {
    if (!queues.IsMap() || queues.size() != 1 || !queues["root"])
      return Err(origin, "queues", "expected a mapping with the single key 'root'");
    std::set<std::string> names;
    QueueConfig root;
    if (auto s = ParseQueue(queues["root"], "root", registry, origin, "queues.root", &names, &root);
        !s.ok())
      return s;
    if (root.children.empty())
      return Err(origin, "queues.root", "root needs at least one child queue");
    config.root = std::move(root);
  }
  return config;
}

}  // namespace weft::scheduler
