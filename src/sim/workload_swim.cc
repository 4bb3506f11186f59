// Copyright Weft authors. LoadSwim: SWIM (Facebook 2009/2010) job traces, which carry only
// bytes; tasks, durations and resources come from SwimModel.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sim/workload.h"
#include "sim/workload_common.h"

namespace weft::sim {
namespace {

using internal::kMaxTimeMs;
using internal::kMaxTimeS;
using internal::ParseInt64;
using internal::RecordError;

// YARN MapReduce's container priorities (RMContainerAllocator): maps 20, reduces 10.
constexpr int32_t kMapPriority = 20;
constexpr int32_t kReducePriority = 10;

absl::Status BadModel(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("SwimModel.", field, ": ", what));
}

// Checks the model and normalises its two resources with the registry.
absl::Status CheckModel(const SwimModel& m, const ResourceTypeRegistry& registry,
                        Resource* map_resource, Resource* reduce_resource) {
  if (m.split_bytes < 1) return BadModel("split_bytes", absl::StrCat(m.split_bytes, " < 1"));
  if (m.reduce_bytes < 1) return BadModel("reduce_bytes", absl::StrCat(m.reduce_bytes, " < 1"));
  if (m.max_tasks_per_group < 1)
    return BadModel("max_tasks_per_group", absl::StrCat(m.max_tasks_per_group, " < 1"));
  if (!(m.map_bytes_per_ms > 0) || !std::isfinite(m.map_bytes_per_ms))
    return BadModel("map_bytes_per_ms", absl::StrCat(m.map_bytes_per_ms, " is not > 0"));
  if (!(m.reduce_bytes_per_ms > 0) || !std::isfinite(m.reduce_bytes_per_ms))
    return BadModel("reduce_bytes_per_ms", absl::StrCat(m.reduce_bytes_per_ms, " is not > 0"));
  if (m.task_overhead_ms < 0 || m.task_overhead_ms > kMaxTimeMs)
    return BadModel("task_overhead_ms", absl::StrCat(m.task_overhead_ms, " is out of range"));
  absl::StatusOr<Resource> map = registry.Normalize(m.map_resource);
  if (!map.ok()) return BadModel("map_resource", map.status().message());
  absl::StatusOr<Resource> reduce = registry.Normalize(m.reduce_resource);
  if (!reduce.ok()) return BadModel("reduce_resource", reduce.status().message());
  *map_resource = *map;
  *reduce_resource = *reduce;
  return absl::OkStatus();
}

// ceil(a / b) for a >= 0 and b >= 1, without the overflow of (a + b - 1) / b.
int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

// overhead_ms + ceil(bytes / bytes_per_ms), at least 1; false beyond kMaxTimeMs.
bool ModelledMs(double bytes, double bytes_per_ms, int64_t overhead_ms, int64_t* out) {
  double ms = std::ceil(bytes / bytes_per_ms) + static_cast<double>(overhead_ms);
  if (!(ms <= static_cast<double>(kMaxTimeMs))) return false;
  *out = std::max<int64_t>(1, static_cast<int64_t>(ms));
  return true;
}

// A non-negative integer field of a SWIM line.
bool Field(absl::string_view text, absl::string_view name, int64_t limit, int64_t line,
           int64_t* out, RecordError* err) {
  if (!ParseInt64(text, out)) {
    *err = {line, absl::StrCat(name, " '", text.substr(0, 40), "' is not an integer")};
    return false;
  }
  if (*out < 0) {
    *err = {line, absl::StrCat(name, " ", *out, " is negative")};
    return false;
  }
  if (*out > limit) {
    *err = {line, absl::StrCat(name, " ", *out, " is out of range")};
    return false;
  }
  return true;
}

// Parses one line into a job; *capped tells whether a group hit max_tasks_per_group.
bool ParseLine(absl::string_view text, int64_t line, const SwimModel& m,
               const Resource& map_resource, const Resource& reduce_resource, Job* job,
               bool* capped, RecordError* err) {
  std::vector<absl::string_view> f = absl::StrSplit(text, '\t');
  if (f.size() != 6) {
    *err = {line, absl::StrCat("expected 6 tab-separated fields (id, submit s, gap s, input, "
                               "shuffle, output bytes), got ",
                               f.size())};
    return false;
  }
  for (absl::string_view& s : f) s = absl::StripAsciiWhitespace(s);
  if (f[0].empty()) {
    *err = {line, "empty job id"};
    return false;
  }
  constexpr int64_t kAnyBytes = INT64_MAX;
  int64_t submit_s = 0, gap_s = 0, input = 0, shuffle = 0, output = 0;
  if (!Field(f[1], "submit time", kMaxTimeS, line, &submit_s, err) ||
      !Field(f[2], "gap", kMaxTimeS, line, &gap_s, err) ||
      !Field(f[3], "map input bytes", kAnyBytes, line, &input, err) ||
      !Field(f[4], "shuffle bytes", kAnyBytes, line, &shuffle, err) ||
      !Field(f[5], "reduce output bytes", kAnyBytes, line, &output, err)) {
    return false;
  }

  int64_t maps = std::max<int64_t>(1, CeilDiv(input, m.split_bytes));
  int64_t reduces = shuffle == 0 ? 0 : std::max<int64_t>(1, CeilDiv(shuffle, m.reduce_bytes));
  *capped = maps > m.max_tasks_per_group || reduces > m.max_tasks_per_group;
  maps = std::min(maps, m.max_tasks_per_group);
  reduces = std::min(reduces, m.max_tasks_per_group);

  job->id = std::string(f[0]);
  job->submit_ms = submit_s * 1000;
  TaskGroup map;
  map.name = "map";
  map.priority = kMapPriority;
  map.count = maps;
  map.resource = map_resource;
  double map_bytes =
      (static_cast<double>(input) + static_cast<double>(shuffle)) / static_cast<double>(maps);
  if (!ModelledMs(map_bytes, m.map_bytes_per_ms, m.task_overhead_ms, &map.duration_ms)) {
    *err = {line, "modelled map duration is out of range"};
    return false;
  }
  job->groups.push_back(std::move(map));
  if (reduces > 0) {
    TaskGroup reduce;
    reduce.name = "reduce";
    reduce.priority = kReducePriority;
    reduce.count = reduces;
    reduce.resource = reduce_resource;
    double reduce_bytes =
        (static_cast<double>(shuffle) + static_cast<double>(output)) / static_cast<double>(reduces);
    if (!ModelledMs(reduce_bytes, m.reduce_bytes_per_ms, m.task_overhead_ms, &reduce.duration_ms)) {
      *err = {line, "modelled reduce duration is out of range"};
      return false;
    }
    reduce.depends_on.push_back(0);
    job->groups.push_back(std::move(reduce));
  }
  return true;
}

}  // namespace

absl::StatusOr<Workload> LoadSwim(absl::string_view path, const SwimModel& model,
                                  const ResourceTypeRegistry& registry, const LoadOptions& opts) {
  Resource map_resource, reduce_resource;
  if (absl::Status s = CheckModel(model, registry, &map_resource, &reduce_resource); !s.ok())
    return s;
  absl::StatusOr<std::string> data = internal::ReadFileToString(path);
  if (!data.ok()) return data.status();

  internal::WorkloadBuilder builder(path, opts);
  int64_t capped_jobs = 0;
  std::string first_capped;
  absl::string_view rest = *data;
  absl::ConsumePrefix(&rest, internal::kUtf8Bom);
  for (int64_t line = 1; !rest.empty() && !builder.Full(); ++line) {
    size_t nl = rest.find('\n');
    absl::string_view text = rest.substr(0, nl);
    rest = nl == absl::string_view::npos ? absl::string_view() : rest.substr(nl + 1);
    absl::ConsumeSuffix(&text, "\r");
    if (absl::StripAsciiWhitespace(text).empty()) continue;

    Job job;
    bool capped = false;
    RecordError err;
    if (!ParseLine(text, line, model, map_resource, reduce_resource, &job, &capped, &err)) {
      if (absl::Status s = builder.Malformed(err); !s.ok()) return s;
      continue;
    }
    std::string id = job.id;
    int64_t before = builder.job_count();
    if (absl::Status s = builder.AddJob(std::move(job), line); !s.ok()) return s;
    if (capped && builder.job_count() > before && capped_jobs++ == 0)
      first_capped = absl::StrCat("job '", id, "' at line ", line);
  }
  if (capped_jobs > 0) {
    builder.Warn(absl::StrCat(path, ": ", capped_jobs, " job(s) needed more than ",
                              model.max_tasks_per_group,
                              " (max_tasks_per_group) map or reduce tasks and were capped to "
                              "it, the per-task bytes growing accordingly (first: ",
                              first_capped, ")"));
  }
  return builder.Finish();
}

}  // namespace weft::sim
