#include "adaptcont/config.h"

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/yaml_util.h"
#include "yaml-cpp/yaml.h"

namespace weft::adaptcont {
namespace {

using yaml::CheckKeys;
using yaml::Err;
using yaml::Scalar;

constexpr int64_t kMaxMemoryMb = int64_t{1} << 30;  // 1 EiB: far above any real container
constexpr int64_t kMaxCount = int64_t{1} << 40;     // tasks in a wave, vcores
constexpr int64_t kMaxSplitBytes = int64_t{1} << 50;

absl::Status CheckRange(absl::string_view path, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo) return Err("", path, absl::StrCat(v, lo == 1 ? " must be > 0" : " must be >= 0"));
  if (v > hi) return Err("", path, absl::StrCat(v, " must be <= ", hi));
  return absl::OkStatus();
}

absl::Status CheckCap(absl::string_view path, const AmResource& cap) {
  if (auto s = CheckRange(absl::StrCat(path, ".memory_mb"), cap.memory_mb, 0, kMaxMemoryMb);
      !s.ok())
    return s;
  return CheckRange(absl::StrCat(path, ".vcores"), cap.vcores, 0, kMaxCount);
}

// Reads an integer key of `node` into *out when present, checking [lo, hi].
absl::Status ReadInt(const YAML::Node& node, const std::string& key, absl::string_view origin,
                     absl::string_view path, int64_t lo, int64_t hi, int64_t* out) {
  if (!node[key]) return absl::OkStatus();
  const std::string p = path.empty() ? key : absl::StrCat(path, ".", key);
  auto v = Scalar<int64_t>(node[key], origin, p);
  if (!v.ok()) return v.status();
  if (*v < lo) return Err(origin, p, absl::StrCat(*v, lo == 1 ? " must be > 0" : " must be >= 0"));
  if (*v > hi) return Err(origin, p, absl::StrCat(*v, " must be <= ", hi));
  *out = *v;
  return absl::OkStatus();
}

absl::StatusOr<AmResource> ReadAmResource(const YAML::Node& node, absl::string_view origin,
                                          const std::string& path, int64_t min) {
  if (auto s = CheckKeys(node, {"memory-mb", "vcores"}, origin, path); !s.ok()) return s;
  if (!node["memory-mb"] || !node["vcores"])
    return Err(origin, path, "needs both memory-mb and vcores");
  AmResource r;
  if (auto s = ReadInt(node, "memory-mb", origin, path, min, kMaxMemoryMb, &r.memory_mb); !s.ok())
    return s;
  if (auto s = ReadInt(node, "vcores", origin, path, min, kMaxCount, &r.vcores); !s.ok()) return s;
  return r;
}

absl::Status Parse(const YAML::Node& doc, absl::string_view origin, AdaptContConfig* c) {
  if (doc.IsNull()) return absl::OkStatus();
  static const std::set<std::string> kKeys = {"mode",
                                              "split-mb",
                                              "m0-mb",
                                              "w0",
                                              "yarn-default-am",
                                              "pool",
                                              "pool-match-threshold-mb",
                                              "failure-growth-factor",
                                              "user-am-caps",
                                              "default-user-am-cap",
                                              "am-memory-model"};
  if (auto s = CheckKeys(doc, kKeys, origin, "(top level)"); !s.ok()) return s;
  if (doc["mode"]) {
    auto v = Scalar<std::string>(doc["mode"], origin, "mode");
    if (!v.ok()) return v.status();
    auto mode = ParseAdaptContMode(*v);
    if (!mode.ok()) return Err(origin, "mode", mode.status().message());
    c->mode = *mode;
  }
  if (doc["split-mb"]) {
    int64_t mb = 0;
    if (auto s = ReadInt(doc, "split-mb", origin, "", 1, kMaxSplitBytes >> 20, &mb); !s.ok())
      return s;
    c->split_bytes = mb << 20;
  }
  if (auto s = ReadInt(doc, "m0-mb", origin, "", 1, kMaxMemoryMb, &c->m0_mb); !s.ok()) return s;
  if (auto s = ReadInt(doc, "w0", origin, "", 1, kMaxCount, &c->w0); !s.ok()) return s;
  if (doc["yarn-default-am"]) {
    auto r = ReadAmResource(doc["yarn-default-am"], origin, "yarn-default-am", 1);
    if (!r.ok()) return r.status();
    c->yarn_default_am = *r;
  }
  if (doc["pool"]) {
    const YAML::Node& pool = doc["pool"];
    if (!pool.IsSequence() || pool.size() == 0)
      return Err(origin, "pool", "expected a non-empty list of containers");
    c->pool.clear();
    std::set<std::string> names;
    for (size_t i = 0; i < pool.size(); ++i) {
      const std::string path = absl::StrCat("pool[", i, "]");
      const YAML::Node& e = pool[i];
      if (auto s = CheckKeys(e, {"name", "memory-mb", "vcores", "max-wave"}, origin, path); !s.ok())
        return s;
      for (const char* key : {"name", "memory-mb", "vcores", "max-wave"}) {
        if (!e[key]) return Err(origin, path, absl::StrCat("missing key '", key, "'"));
      }
      PoolContainer pc;
      auto name = Scalar<std::string>(e["name"], origin, path + ".name");
      if (!name.ok()) return name.status();
      if (name->empty()) return Err(origin, path + ".name", "must not be empty");
      if (!names.insert(*name).second)
        return Err(origin, path + ".name", absl::StrCat("'", *name, "' is used twice"));
      pc.name = *name;
      if (auto s = ReadInt(e, "memory-mb", origin, path, 1, kMaxMemoryMb, &pc.memory_mb); !s.ok())
        return s;
      if (auto s = ReadInt(e, "vcores", origin, path, 1, kMaxCount, &pc.vcores); !s.ok()) return s;
      if (auto s = ReadInt(e, "max-wave", origin, path, 1, kMaxCount, &pc.max_wave); !s.ok())
        return s;
      c->pool.push_back(std::move(pc));
    }
  }
  if (auto s = ReadInt(doc, "pool-match-threshold-mb", origin, "", 0, kMaxMemoryMb,
                       &c->pool_match_threshold_mb);
      !s.ok())
    return s;
  if (doc["failure-growth-factor"]) {
    auto v = Scalar<double>(doc["failure-growth-factor"], origin, "failure-growth-factor");
    if (!v.ok()) return v.status();
    if (!std::isfinite(*v) || *v < 1.0 || *v > 1024.0)
      return Err(origin, "failure-growth-factor", absl::StrCat(*v, " must be in [1, 1024]"));
    c->failure_growth_factor = *v;
  }
  if (doc["user-am-caps"]) {
    const YAML::Node& caps = doc["user-am-caps"];
    if (!caps.IsMap()) return Err(origin, "user-am-caps", "expected a mapping of user to cap");
    for (const auto& kv : caps) {
      const std::string user = kv.first.as<std::string>();
      if (user.empty()) return Err(origin, "user-am-caps", "a user name is empty");
      auto r = ReadAmResource(kv.second, origin, absl::StrCat("user-am-caps.", user), 0);
      if (!r.ok()) return r.status();
      c->user_am_caps[user] = *r;
    }
  }
  if (doc["default-user-am-cap"]) {
    auto r = ReadAmResource(doc["default-user-am-cap"], origin, "default-user-am-cap", 0);
    if (!r.ok()) return r.status();
    c->default_user_am_cap = *r;
  }
  if (doc["am-memory-model"]) {
    const YAML::Node& m = doc["am-memory-model"];
    if (auto s = CheckKeys(m, {"base-mb", "per-task-kb"}, origin, "am-memory-model"); !s.ok())
      return s;
    if (auto s = ReadInt(m, "base-mb", origin, "am-memory-model", 0, kMaxMemoryMb,
                         &c->am_memory_model.base_mb);
        !s.ok())
      return s;
    if (auto s = ReadInt(m, "per-task-kb", origin, "am-memory-model", 0, kMaxMemoryMb,
                         &c->am_memory_model.per_task_kb);
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view AdaptContModeName(AdaptContMode mode) {
  switch (mode) {
    case AdaptContMode::kYarnDefault:
      return "yarn-default";
    case AdaptContMode::kDynamic:
      return "dynamic";
    case AdaptContMode::kPool:
      return "pool";
  }
  return "unknown";
}

absl::StatusOr<AdaptContMode> ParseAdaptContMode(absl::string_view name) {
  for (AdaptContMode m :
       {AdaptContMode::kYarnDefault, AdaptContMode::kDynamic, AdaptContMode::kPool}) {
    if (name == AdaptContModeName(m)) return m;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown AM sizing mode '", name, "' (expected yarn-default, dynamic or pool)"));
}

AdaptContConfig DefaultAdaptContConfig() { return AdaptContConfig{}; }

absl::Status ValidateAdaptContConfig(const AdaptContConfig& c) {
  if (auto s = CheckRange("split_bytes", c.split_bytes, 1, kMaxSplitBytes); !s.ok()) return s;
  if (auto s = CheckRange("m0_mb", c.m0_mb, 1, kMaxMemoryMb); !s.ok()) return s;
  if (auto s = CheckRange("w0", c.w0, 1, kMaxCount); !s.ok()) return s;
  if (auto s =
          CheckRange("yarn_default_am.memory_mb", c.yarn_default_am.memory_mb, 1, kMaxMemoryMb);
      !s.ok())
    return s;
  if (auto s = CheckRange("yarn_default_am.vcores", c.yarn_default_am.vcores, 1, kMaxCount);
      !s.ok())
    return s;
  if (c.mode == AdaptContMode::kPool && c.pool.empty())
    return Err("", "pool", "must not be empty in pool mode");
  std::set<std::string> names;
  for (size_t i = 0; i < c.pool.size(); ++i) {
    const PoolContainer& p = c.pool[i];
    const std::string path = absl::StrCat("pool[", i, "]");
    if (p.name.empty()) return Err("", path + ".name", "must not be empty");
    if (!names.insert(p.name).second)
      return Err("", path + ".name", absl::StrCat("'", p.name, "' is used twice"));
    if (auto s = CheckRange(path + ".memory_mb", p.memory_mb, 1, kMaxMemoryMb); !s.ok()) return s;
    if (auto s = CheckRange(path + ".vcores", p.vcores, 1, kMaxCount); !s.ok()) return s;
    if (auto s = CheckRange(path + ".max_wave", p.max_wave, 1, kMaxCount); !s.ok()) return s;
  }
  if (auto s = CheckRange("pool_match_threshold_mb", c.pool_match_threshold_mb, 0, kMaxMemoryMb);
      !s.ok())
    return s;
  if (!std::isfinite(c.failure_growth_factor) || c.failure_growth_factor < 1.0 ||
      c.failure_growth_factor > 1024.0)
    return Err("", "failure_growth_factor",
               absl::StrCat(c.failure_growth_factor, " must be in [1, 1024]"));
  for (const auto& [user, cap] : c.user_am_caps) {
    if (user.empty()) return Err("", "user_am_caps", "a user name is empty");
    if (auto s = CheckCap(absl::StrCat("user_am_caps[", user, "]"), cap); !s.ok()) return s;
  }
  if (c.default_user_am_cap) {
    if (auto s = CheckCap("default_user_am_cap", *c.default_user_am_cap); !s.ok()) return s;
  }
  if (auto s = CheckRange("am_memory_model.base_mb", c.am_memory_model.base_mb, 0, kMaxMemoryMb);
      !s.ok())
    return s;
  return CheckRange("am_memory_model.per_task_kb", c.am_memory_model.per_task_kb, 0, kMaxMemoryMb);
}

absl::StatusOr<AdaptContConfig> ParseAdaptContConfig(absl::string_view yaml,
                                                     absl::string_view origin) {
  YAML::Node doc;
  try {
    doc = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": invalid YAML: ", e.what()));
  }
  AdaptContConfig config = DefaultAdaptContConfig();
  if (auto s = Parse(doc, origin, &config); !s.ok()) return s;
  if (auto s = ValidateAdaptContConfig(config); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat(origin, ": ", s.message()));
  return config;
}

absl::StatusOr<AdaptContConfig> LoadAdaptContConfigFile(absl::string_view path) {
  std::ifstream in{std::string(path)};
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open AdaptCont config '", path, "'"));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseAdaptContConfig(ss.str(), path);
}

}  // namespace weft::adaptcont
