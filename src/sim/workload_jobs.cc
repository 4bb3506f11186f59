// Copyright Weft authors. LoadJobsYaml: Weft's native YAML job list (schema in
// docs/workloads.md).
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/workload.h"
#include "scheduler/placement_constraint.h"
#include "sim/workload_common.h"

namespace weft::sim {
namespace {

using internal::kMaxTimeMs;
using internal::RecordError;

// Upper bound of a group's `count`: keeps count x resource far from int64 overflow.
constexpr int64_t kMaxGroupCount = 1'000'000'000;

constexpr const char* kJobKeys[] = {"id",   "submit-s", "submit-ms", "queue",
                                    "user", "priority", "goal-s",    "groups"};
constexpr const char* kGroupKeys[] = {
    "name",  "count", "resource",   "duration-s", "duration-ms", "durations-ms",
    "priority", "depends-on", "hosts", "kind", "usage", "expected-s",
    "tags",  "placement", "soft", "gang", "gang-timeout-s"};

// Parses a usage profile "cpu=0.25,io=0.1,memory=0.1" (shares of a node in [0, 1]; keys may
// be omitted, each at most once). The error names what was wrong.
bool ParseUsage(const std::string& text, TaskUsage* out, std::string* error) {
  TaskUsage u;
  bool seen[3] = {false, false, false};
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    if (eq == absl::string_view::npos) {
      *error = absl::StrCat("'", part, "' is not key=value");
      return false;
    }
    absl::string_view key = absl::StripAsciiWhitespace(part.substr(0, eq));
    std::string value(absl::StripAsciiWhitespace(part.substr(eq + 1)));
    double v = 0;
    if (!internal::ParseDouble(value, &v) || !(v >= 0 && v <= 1)) {
      *error = absl::StrCat(key, "=", value, " is not a share of a node in [0, 1]");
      return false;
    }
    int i = key == "cpu" ? 0 : key == "io" ? 1 : key == "memory" ? 2 : -1;
    if (i < 0) {
      *error = absl::StrCat("unknown usage key '", key, "' (known: cpu, io, memory)");
      return false;
    }
    if (seen[i]) {
      *error = absl::StrCat("usage key '", key, "' given twice");
      return false;
    }
    seen[i] = true;
    (i == 0 ? u.cpu : i == 1 ? u.io : u.memory) = v;
  }
  *out = u;
  return true;
}

// 1-based line of a node; `fallback` for nodes without a position.
int64_t LineOf(const YAML::Node& n, int64_t fallback) {
  YAML::Mark m = n.Mark();
  return m.line >= 0 ? m.line + 1 : fallback;
}

// The text of map[key] when it is a scalar, else "" (to name a record before checking it).
std::string PeekScalar(const YAML::Node& map, const char* key) {
  if (!map.IsMap()) return "";
  const YAML::Node v = map[key];
  return v.IsDefined() && v.IsScalar() ? v.Scalar().substr(0, 60) : "";
}

// The fields of one YAML map, checked against a list of known keys.
class Fields {
 public:
  // `context` prefixes every message, e.g. "job 'a': ".
  Fields(const YAML::Node& map, int64_t line, std::string context, RecordError* err)
      : map_(map), line_(line), context_(std::move(context)), err_(err) {}

  // Collects the keys; an unknown or repeated key, or a map that is not one, is an error.
  template <size_t N>
  bool Collect(const char* what, const char* const (&known)[N]) {
    if (!map_.IsMap()) return Fail(line_, absl::StrCat(what, " must be a map of keys"));
    for (auto it = map_.begin(); it != map_.end(); ++it) {
      int64_t key_line = LineOf(it->first, line_);
      if (!it->first.IsScalar()) return Fail(key_line, "keys must be plain strings");
      const std::string& key = it->first.Scalar();
      if (std::find_if(std::begin(known), std::end(known),
                       [&](const char* k) { return key == k; }) == std::end(known)) {
        return Fail(key_line, absl::StrCat("unknown key '", key.substr(0, 40), "' in ", what,
                                           " (known: ", absl::StrJoin(known, ", "), ")"));
      }
      if (!values_.emplace(key, std::make_pair(it->second, key_line)).second)
        return Fail(key_line, absl::StrCat("key '", key, "' given twice"));
    }
    return true;
  }

  bool Has(const std::string& key) const { return values_.count(key) > 0; }
  void set_context(std::string context) { context_ = std::move(context); }

  bool Fail(int64_t line, std::string what) {
    *err_ = {line, absl::StrCat(context_, what)};
    return false;
  }
  bool Missing(const char* key) { return Fail(line_, absl::StrCat("missing '", key, "'")); }

  // A scalar as text. Absent: leaves *out and returns !required.
  bool Text(const char* key, bool required, bool allow_empty, std::string* out) {
    const YAML::Node* v = Get(key);
    if (v == nullptr) return required ? Missing(key) : true;
    if (!v->IsScalar()) return Fail(LineAt(key), absl::StrCat(key, ": expected a plain value"));
    if (!allow_empty && v->Scalar().empty())
      return Fail(LineAt(key), absl::StrCat(key, ": is empty"));
    *out = v->Scalar();
    return true;
  }

  // A decimal integer in [lo, hi]. Absent: leaves *out and returns !required.
  bool Int(const char* key, bool required, int64_t lo, int64_t hi, int64_t* out) {
    const YAML::Node* v = Get(key);
    if (v == nullptr) return required ? Missing(key) : true;
    return IntOf(*v, key, LineAt(key), lo, hi, out);
  }

  // Seconds (integer or decimal) as whole ms (rounded to nearest) in [lo_ms, hi_ms].
  bool Seconds(const char* key, int64_t lo_ms, int64_t hi_ms, int64_t* out_ms) {
    const YAML::Node* v = Get(key);
    if (v == nullptr) return Missing(key);
    double s = 0;
    if (!v->IsScalar() || !internal::ParseDouble(v->Scalar(), &s))
      return Fail(LineAt(key), absl::StrCat(key, ": '", Shown(*v), "' is not a number"));
    double ms = std::round(s * 1000);
    if (ms < static_cast<double>(lo_ms)) {
      return Fail(LineAt(key), absl::StrCat(key, ": ", v->Scalar(),
                                            s < 0 ? " is negative" : " is below the minimum ",
                                            s < 0 ? "" : absl::StrCat(lo_ms, " ms")));
    }
    if (ms > static_cast<double>(hi_ms))
      return Fail(LineAt(key), absl::StrCat(key, ": ", v->Scalar(), " is out of range"));
    *out_ms = static_cast<int64_t>(ms);
    return true;
  }

  bool IntOf(const YAML::Node& v, absl::string_view key, int64_t line, int64_t lo, int64_t hi,
             int64_t* out) {
    int64_t n = 0;
    if (!v.IsScalar() || !internal::ParseInt64(v.Scalar(), &n))
      return Fail(line, absl::StrCat(key, ": '", Shown(v), "' is not an integer"));
    if (n < lo) {
      return Fail(line, lo == 0 ? absl::StrCat(key, ": ", n, " is negative")
                                : absl::StrCat(key, ": ", n, " must be >= ", lo));
    }
    if (n > hi) return Fail(line, absl::StrCat(key, ": ", n, " is out of range"));
    *out = n;
    return true;
  }

  // The node of `key`, or nullptr when absent.
  const YAML::Node* Get(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? nullptr : &it->second.first;
  }
  int64_t LineAt(const std::string& key) const {
    auto it = values_.find(key);
    return it == values_.end() ? line_ : LineOf(it->second.first, it->second.second);
  }

 private:
  static std::string Shown(const YAML::Node& v) {
    return v.IsScalar() ? v.Scalar().substr(0, 40) : (v.IsNull() ? "" : "(not a scalar)");
  }

  YAML::Node map_;
  int64_t line_;
  std::string context_;
  RecordError* err_;
  std::map<std::string, std::pair<YAML::Node, int64_t>> values_;  // key -> value, key's line
};

// A YAML boolean (true/false, yes/no, on/off). Absent: leaves *out.
bool Bool(Fields& f, const char* key, bool* out) {
  const YAML::Node* v = f.Get(key);
  if (v == nullptr) return true;
  std::string text = v->IsScalar() ? absl::AsciiStrToLower(v->Scalar()) : "";
  if (text == "true" || text == "yes" || text == "on") {
    *out = true;
  } else if (text == "false" || text == "no" || text == "off") {
    *out = false;
  } else {
    return f.Fail(f.LineAt(key), absl::StrCat(key, ": expected true or false"));
  }
  return true;
}

// The placement keys of a group: tags (a tag or a list), placement (one constraint in the
// placement spec syntax, scheduler/placement_constraint.h; "SOFT(...)" makes it soft), soft,
// gang and gang-timeout-s.
bool ReadPlacement(Fields& f, TaskGroup* g) {
  if (const YAML::Node* tags = f.Get("tags")) {
    std::vector<YAML::Node> items;
    if (tags->IsScalar()) {
      items.push_back(*tags);
    } else if (tags->IsSequence()) {
      for (const YAML::Node& t : *tags) items.push_back(t);
    } else {
      return f.Fail(f.LineAt("tags"), "tags: expected a tag or a list of tags");
    }
    for (const YAML::Node& t : items) {
      if (!t.IsScalar() || !scheduler::ValidAllocationTag(t.Scalar())) {
        return f.Fail(LineOf(t, f.LineAt("tags")),
                      absl::StrCat("tags: '", t.IsScalar() ? t.Scalar().substr(0, 40) : "",
                                   "' is not an allocation tag (1..255 of [A-Za-z0-9_.-])"));
      }
      if (std::find(g->tags.begin(), g->tags.end(), t.Scalar()) == g->tags.end())
        g->tags.push_back(t.Scalar());
    }
  }
  std::string placement;
  if (!f.Text("placement", false, false, &placement)) return false;
  if (f.Has("placement")) {
    absl::string_view text = absl::StripAsciiWhitespace(placement);
    if (text.size() > 6 && absl::StartsWithIgnoreCase(text, "SOFT(") && text.back() == ')') {
      text = text.substr(5, text.size() - 6);
      g->constraint_soft = true;
    }
    absl::StatusOr<scheduler::PlacementConstraint> c = scheduler::ParseConstraint(text);
    if (!c.ok())
      return f.Fail(f.LineAt("placement"), absl::StrCat("placement: ", c.status().message()));
    g->has_constraint = true;
    g->constraint = *std::move(c);
  }
  bool soft = false;
  if (!Bool(f, "soft", &soft)) return false;
  if (f.Has("soft") && !g->has_constraint)
    return f.Fail(f.LineAt("soft"), "soft: needs a placement");
  g->constraint_soft |= soft;
  if (!Bool(f, "gang", &g->gang)) return false;
  if (f.Has("gang-timeout-s")) {
    if (!g->gang) return f.Fail(f.LineAt("gang-timeout-s"), "gang-timeout-s: needs gang: true");
    if (!f.Seconds("gang-timeout-s", 1, kMaxTimeMs, &g->gang_timeout_ms)) return false;
  }
  if (g->gang && g->count > INT32_MAX)
    return f.Fail(f.LineAt("gang"), "gang: count is above what one ask can carry");
  return true;
}

// Reads one element of a job's `groups`. `names` are the names of the groups before it.
bool ReadGroup(const YAML::Node& node, int64_t fallback_line, const std::string& job_context,
               const std::vector<std::string>& names, const ResourceTypeRegistry& registry,
               TaskGroup* g, RecordError* err) {
  int64_t line = LineOf(node, fallback_line);
  std::string name = PeekScalar(node, "name");
  Fields f(node, line,
           name.empty() ? absl::StrCat(job_context, "group ", names.size() + 1, ": ")
                        : absl::StrCat(job_context, "group '", name, "': "),
           err);
  if (!f.Collect("a group", kGroupKeys) || !f.Text("name", true, false, &g->name)) return false;
  f.set_context(absl::StrCat(job_context, "group '", g->name, "': "));
  if (std::find(names.begin(), names.end(), g->name) != names.end())
    return f.Fail(f.LineAt("name"), "name already used by an earlier group");

  int64_t priority = g->priority;
  std::string resource_text;
  g->count = 1;
  if (!f.Int("count", false, 1, kMaxGroupCount, &g->count) ||
      !f.Int("priority", false, INT32_MIN, INT32_MAX, &priority) ||
      !f.Text("resource", true, true, &resource_text)) {
    return false;
  }
  g->priority = static_cast<int32_t>(priority);

  absl::StatusOr<Resource> parsed = registry.Parse(resource_text);
  if (!parsed.ok())
    return f.Fail(f.LineAt("resource"), absl::StrCat("resource: ", parsed.status().message()));
  absl::StatusOr<Resource> normalised = registry.Normalize(*parsed);
  if (!normalised.ok()) {
    return f.Fail(f.LineAt("resource"),
                  absl::StrCat("resource rejected: ", normalised.status().message()));
  }
  g->resource = *normalised;

  int durations = f.Has("duration-s") + f.Has("duration-ms") + f.Has("durations-ms");
  if (durations != 1)
    return f.Fail(line, "give exactly one of duration-s, duration-ms, durations-ms");
  if (f.Has("duration-s")) {
    if (!f.Seconds("duration-s", 1, kMaxTimeMs, &g->duration_ms)) return false;
  } else if (f.Has("duration-ms")) {
    if (!f.Int("duration-ms", true, 1, kMaxTimeMs, &g->duration_ms)) return false;
  } else {
    const YAML::Node& list = *f.Get("durations-ms");
    int64_t list_line = f.LineAt("durations-ms");
    if (!list.IsSequence() || static_cast<int64_t>(list.size()) != g->count) {
      return f.Fail(list_line, absl::StrCat("durations-ms: expected a list of count (", g->count,
                                            ") durations"));
    }
    double sum = 0;
    for (const YAML::Node& d : list) {
      int64_t ms = 0;
      if (!f.IntOf(d, "durations-ms", LineOf(d, list_line), 1, kMaxTimeMs, &ms)) return false;
      g->task_durations_ms.push_back(ms);
      sum += static_cast<double>(ms);
    }
    // duration_ms: the mean, rounded up, for consumers that ignore the per-task durations.
    g->duration_ms = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(sum / static_cast<double>(g->count))), 1, kMaxTimeMs);
  }

  if (const YAML::Node* deps = f.Get("depends-on")) {
    int64_t deps_line = f.LineAt("depends-on");
    std::vector<YAML::Node> items;
    if (deps->IsScalar()) {
      items.push_back(*deps);
    } else if (deps->IsSequence()) {
      for (const YAML::Node& d : *deps) items.push_back(d);
    } else if (!deps->IsNull()) {
      return f.Fail(deps_line, "depends-on: expected a group name or a list of them");
    }
    for (const YAML::Node& d : items) {
      auto it = d.IsScalar() ? std::find(names.begin(), names.end(), d.Scalar()) : names.end();
      if (it == names.end()) {
        return f.Fail(LineOf(d, deps_line),
                      absl::StrCat("depends-on: '", d.IsScalar() ? d.Scalar().substr(0, 40) : "",
                                   "' is not an earlier group of this job"));
      }
      int index = static_cast<int>(it - names.begin());
      if (std::find(g->depends_on.begin(), g->depends_on.end(), index) == g->depends_on.end())
        g->depends_on.push_back(index);
    }
  }

  if (g->name == "reduce") g->kind = PhaseKind::kReduceLike;
  std::string kind;
  if (!f.Text("kind", false, false, &kind)) return false;
  if (kind == "reduce") {
    g->kind = PhaseKind::kReduceLike;
  } else if (kind == "map") {
    g->kind = PhaseKind::kMapLike;
  } else if (!kind.empty()) {
    return f.Fail(f.LineAt("kind"),
                  absl::StrCat("kind: '", kind.substr(0, 40), "' is not map or reduce"));
  }
  std::string usage;
  if (!f.Text("usage", false, false, &usage)) return false;
  if (f.Has("usage")) {
    std::string error;
    if (!ParseUsage(usage, &g->usage, &error))
      return f.Fail(f.LineAt("usage"), absl::StrCat("usage: ", error));
    g->has_usage = true;
  }
  if (f.Has("expected-s") && !f.Seconds("expected-s", 1, kMaxTimeMs, &g->expected_ms)) return false;
  if (!ReadPlacement(f, g)) return false;

  if (const YAML::Node* hosts = f.Get("hosts")) {
    int64_t hosts_line = f.LineAt("hosts");
    if (!hosts->IsSequence() || static_cast<int64_t>(hosts->size()) != g->count) {
      return f.Fail(hosts_line,
                    absl::StrCat("hosts: expected a list of count (", g->count, ") host names"));
    }
    for (const YAML::Node& h : *hosts) {
      if (!h.IsScalar() && !h.IsNull())
        return f.Fail(LineOf(h, hosts_line), "hosts: expected host names");
      g->task_hosts.push_back(h.IsScalar() ? h.Scalar() : "");
    }
  }
  return true;
}

bool ReadJob(const YAML::Node& node, int64_t line, const ResourceTypeRegistry& registry, Job* job,
             RecordError* err) {
  std::string id = PeekScalar(node, "id");
  Fields f(node, line, id.empty() ? "job: " : absl::StrCat("job '", id, "': "), err);
  if (!f.Collect("a job", kJobKeys) || !f.Text("id", true, false, &job->id)) return false;
  std::string context = absl::StrCat("job '", job->id.substr(0, 60), "': ");
  f.set_context(context);
  int64_t priority = 0;
  if (!f.Text("queue", false, false, &job->queue) || !f.Text("user", false, false, &job->user) ||
      !f.Int("priority", false, INT32_MIN, INT32_MAX, &priority)) {
    return false;
  }
  job->priority = static_cast<int32_t>(priority);
  if (f.Has("submit-s") && f.Has("submit-ms"))
    return f.Fail(f.LineAt("submit-ms"), "give submit-s or submit-ms, not both");
  if (f.Has("submit-s") && !f.Seconds("submit-s", 0, kMaxTimeMs, &job->submit_ms)) return false;
  if (!f.Int("submit-ms", false, 0, kMaxTimeMs, &job->submit_ms)) return false;
  if (f.Has("goal-s") && !f.Seconds("goal-s", 0, kMaxTimeMs, &job->goal_ms)) return false;

  const YAML::Node* groups = f.Get("groups");
  if (groups == nullptr) return f.Missing("groups");
  if (!groups->IsSequence() || groups->size() == 0)
    return f.Fail(f.LineAt("groups"), "groups: expected a non-empty list");
  std::vector<std::string> names;
  for (const YAML::Node& g : *groups) {
    TaskGroup group;
    if (!ReadGroup(g, f.LineAt("groups"), context, names, registry, &group, err)) return false;
    names.push_back(group.name);
    job->groups.push_back(std::move(group));
  }
  return true;
}

absl::Status FileError(absl::string_view path, int64_t line, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ":", line, ": ", what));
}

}  // namespace

absl::StatusOr<Workload> LoadJobsYaml(absl::string_view path, const ResourceTypeRegistry& registry,
                                      const LoadOptions& opts) {
  absl::StatusOr<std::string> data = internal::ReadFileToString(path);
  if (!data.ok()) return data.status();
  internal::WorkloadBuilder builder(path, opts);
  try {
    YAML::Node root = YAML::Load(*data);
    // The document's structure is not a record: errors here fail the load even when not strict.
    if (!root.IsMap()) return FileError(path, LineOf(root, 1), "expected a map with a 'jobs' list");
    bool seen_jobs = false;
    for (auto it = root.begin(); it != root.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == "jobs" && seen_jobs)
        return FileError(path, LineOf(it->first, 1), "key 'jobs' given twice");
      seen_jobs = true;
      if (!it->first.IsScalar() || it->first.Scalar() != "jobs") {
        return FileError(path, LineOf(it->first, 1),
                         absl::StrCat("unknown top-level key '",
                                      it->first.IsScalar() ? it->first.Scalar().substr(0, 40) : "",
                                      "' (known: jobs)"));
      }
    }
    const YAML::Node jobs = static_cast<const YAML::Node&>(root)["jobs"];
    if (!jobs.IsDefined()) return FileError(path, 1, "missing 'jobs'");
    if (!jobs.IsSequence()) return FileError(path, LineOf(jobs, 1), "'jobs' must be a list");
    for (const YAML::Node& node : jobs) {
      if (builder.Full()) break;
      int64_t line = LineOf(node, LineOf(jobs, 1));
      Job job;
      RecordError err;
      if (ReadJob(node, line, registry, &job, &err)) {
        if (absl::Status s = builder.AddJob(std::move(job), line); !s.ok()) return s;
      } else if (absl::Status s = builder.Malformed(err); !s.ok()) {
        return s;
      }
    }
  } catch (const YAML::Exception& e) {
    return FileError(path, e.mark.line >= 0 ? e.mark.line + 1 : 1,
                     absl::StrCat("invalid YAML: ", e.msg));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(path, ": ", e.what()));
  }
  return builder.Finish();
}

}  // namespace weft::sim
