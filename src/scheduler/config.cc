#include "scheduler/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "yaml-cpp/yaml.h"

namespace weft::scheduler {
namespace {

absl::Status Err(absl::string_view origin, absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", path, ": ", what));
}

// Reads a scalar of type T at `node`, with an error naming `path` when it does not convert.
template <typename T>
absl::StatusOr<T> Scalar(const YAML::Node& node, absl::string_view origin, absl::string_view path) {
  if (!node.IsScalar()) return Err(origin, path, "expected a single value");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return Err(origin, path, absl::StrCat("'", node.Scalar(), "' is not a valid value"));
  }
}

absl::Status CheckKeys(const YAML::Node& node, const std::set<std::string>& allowed,
                       absl::string_view origin, absl::string_view path) {
  if (!node.IsMap()) return Err(origin, path, "expected a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string known;
      for (const auto& k : allowed) absl::StrAppend(&known, known.empty() ? "" : ", ", k);
      return Err(origin, path, absl::StrCat("unknown key '", key, "' (allowed: ", known, ")"));
    }
  }
  return absl::OkStatus();
}

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

absl::StatusOr<SchedulerConfig> ParseSchedulerConfig(absl::string_view yaml,
                                                     const ResourceTypeRegistry& registry,
                                                     absl::string_view origin) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid YAML: ", e.what()));
  }
  SchedulerConfig config = DefaultSchedulerConfig();
  if (doc.IsNull()) return config;
  if (auto s = CheckKeys(doc, {"policy", "locality", "preemption", "ras", "queues"}, origin, "(top)");
      !s.ok())
    return s;
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
  if (const YAML::Node& ras = doc["ras"]) {
    if (auto s = CheckKeys(ras, {"control-period-ms", "max-rounds"}, origin, "ras"); !s.ok())
      return s;
    if (ras["control-period-ms"]) {
      auto v = Scalar<int64_t>(ras["control-period-ms"], origin, "ras.control-period-ms");
      if (!v.ok()) return v.status();
      if (*v < 1) return Err(origin, "ras.control-period-ms", absl::StrCat(*v, " must be >= 1"));
      config.ras.control_period_ms = *v;
    }
    if (ras["max-rounds"]) {
      auto v = Scalar<int32_t>(ras["max-rounds"], origin, "ras.max-rounds");
      if (!v.ok()) return v.status();
      if (*v < 0) return Err(origin, "ras.max-rounds", absl::StrCat(*v, " must be >= 0"));
      config.ras.max_rounds = *v;
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

absl::StatusOr<SchedulerConfig> LoadSchedulerConfigFile(absl::string_view path,
                                                        const ResourceTypeRegistry& registry) {
  std::ifstream in{std::string(path)};
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open scheduler config '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseSchedulerConfig(ss.str(), registry, path);
}

}  // namespace weft::scheduler
