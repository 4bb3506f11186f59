// Copyright Weft authors. LoadAlibaba2017: Alibaba cluster-trace-v2017 batch_task.csv.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "sim/workload.h"
#include "sim/workload_common.h"

namespace weft::sim {
namespace {

using internal::kMaxTimeMs;
using internal::kMaxTimeS;
using internal::ParseDouble;
using internal::ParseInt64;
using internal::RecordError;

constexpr int kFields = 8;
constexpr int32_t kTaskPriority = 20;  // TaskGroup's default; the trace has no priorities
// Planned CPU above this (percent of a core) is out of range before any rounding.
constexpr double kMaxCpuPercent = 1e9;

// One row of batch_task.csv, checked.
struct Row {
  int64_t create_s = 0;
  int64_t job_id = 0;
  absl::string_view task_id;
  TaskGroup group;
};

// Splits on ',' into at most kFields + 1 trimmed fields; returns how many there were.
int SplitRow(absl::string_view text, std::array<absl::string_view, kFields + 1>* out) {
  int n = 0;
  while (true) {
    size_t comma = text.find(',');
    absl::string_view field = text.substr(0, comma);
    if (n <= kFields) (*out)[n] = absl::StripAsciiWhitespace(field);
    ++n;
    if (comma == absl::string_view::npos) return n;
    text.remove_prefix(comma + 1);
  }
}

bool Fail(int64_t line, std::string what, RecordError* err) {
  *err = {line, std::move(what)};
  return false;
}

bool TimeField(absl::string_view text, absl::string_view name, int64_t line, int64_t* out,
               RecordError* err) {
  if (!ParseInt64(text, out))
    return Fail(line, absl::StrCat(name, " '", text.substr(0, 40), "' is not an integer"), err);
  if (*out < -kMaxTimeS || *out > kMaxTimeS)
    return Fail(line, absl::StrCat(name, " ", *out, " is out of range"), err);
  return true;
}

// Checks and converts the fields of a row whose status is to be loaded.
bool ParseRow(const std::array<absl::string_view, kFields + 1>& f, int64_t line,
              const AlibabaModel& model, const ResourceTypeRegistry& registry, Row* row,
              RecordError* err) {
  int64_t end_s = 0;
  if (!TimeField(f[0], "create time", line, &row->create_s, err) ||
      !TimeField(f[1], "end time", line, &end_s, err)) {
    return false;
  }
  if (end_s < row->create_s) {
    return Fail(line, absl::StrCat("end time ", end_s, " is before create time ", row->create_s),
                err);
  }
  if (!ParseInt64(f[2], &row->job_id) || row->job_id < 0)
    return Fail(line, absl::StrCat("job id '", f[2].substr(0, 40), "' is not an integer >= 0"),
                err);
  if (f[3].empty()) return Fail(line, "empty task id", err);
  row->task_id = f[3];
  int64_t instances = 0;
  if (!ParseInt64(f[4], &instances))
    return Fail(line, absl::StrCat("instance count '", f[4].substr(0, 40), "' is not an integer"),
                err);
  if (instances < 1)
    return Fail(line, absl::StrCat("instance count ", instances, " must be >= 1"), err);

  double cpu = 0, memory = 0;
  if (f[6].empty()) return Fail(line, "empty planned CPU", err);
  if (!ParseDouble(f[6], &cpu))
    return Fail(line, absl::StrCat("planned CPU '", f[6].substr(0, 40), "' is not a number"), err);
  if (cpu < 0 || cpu > kMaxCpuPercent)
    return Fail(line, absl::StrCat("planned CPU ", f[6], " is out of range"), err);
  if (f[7].empty()) return Fail(line, "empty planned memory", err);
  if (!ParseDouble(f[7], &memory))
    return Fail(line, absl::StrCat("planned memory '", f[7].substr(0, 40), "' is not a number"),
                err);
  if (memory < 0 || memory > 1)
    return Fail(line, absl::StrCat("planned memory ", f[7], " is outside 0..1"), err);

  // Round up (a hair below the next integer counts as that integer: float noise).
  auto round_up = [](double v) { return static_cast<int64_t>(std::ceil(v - 1e-9)); };
  Resource request = Resource::Of(round_up(memory * static_cast<double>(model.machine_memory_mb)),
                                  round_up(cpu / 100.0));
  absl::StatusOr<Resource> normalised = registry.Normalize(request);
  if (!normalised.ok()) {
    return Fail(line,
                absl::StrCat("request ", registry.Format(request),
                             " rejected: ", normalised.status().message()),
                err);
  }

  TaskGroup& g = row->group;
  g.name = absl::StrCat("task-", row->task_id);
  g.priority = kTaskPriority;
  g.count = instances;
  g.resource = *normalised;
  g.duration_ms = std::max((end_s - row->create_s) * 1000, model.min_duration_ms);
  return true;
}

// A job being assembled from its rows.
struct PendingJob {
  Job job;
  int64_t line = 0;  // of its first loaded row
  int64_t min_create_s = std::numeric_limits<int64_t>::max();
};

}  // namespace

absl::StatusOr<Workload> LoadAlibaba2017(absl::string_view path, const AlibabaModel& model,
                                         const ResourceTypeRegistry& registry,
                                         const LoadOptions& opts) {
  if (model.machine_memory_mb < 1)
    return absl::InvalidArgumentError(
        absl::StrCat("AlibabaModel.machine_memory_mb: ", model.machine_memory_mb, " < 1"));
  if (model.min_duration_ms < 1 || model.min_duration_ms > kMaxTimeMs)
    return absl::InvalidArgumentError(
        absl::StrCat("AlibabaModel.min_duration_ms: ", model.min_duration_ms, " is out of range"));
  absl::StatusOr<std::string> data = internal::ReadFileToString(path);
  if (!data.ok()) return data.status();

  internal::WorkloadBuilder builder(path, opts);
  std::vector<PendingJob> jobs;
  std::unordered_map<int64_t, size_t> job_index;  // job id -> index in `jobs`
  std::map<std::string, int64_t> left_out;        // status -> rows not loaded
  int64_t left_out_rows = 0;
  int64_t min_create_s = std::numeric_limits<int64_t>::max();
  int64_t records = 0;
  bool first_line = true;

  absl::string_view rest = *data;
  absl::ConsumePrefix(&rest, internal::kUtf8Bom);
  std::array<absl::string_view, kFields + 1> f;
  for (int64_t line = 1; !rest.empty(); ++line) {
    size_t nl = rest.find('\n');
    absl::string_view text = rest.substr(0, nl);
    rest = nl == absl::string_view::npos ? absl::string_view() : rest.substr(nl + 1);
    absl::ConsumeSuffix(&text, "\r");
    if (absl::StripAsciiWhitespace(text).empty()) continue;
    int n = SplitRow(text, &f);
    if (first_line) {
      first_line = false;
      int64_t ignored = 0;
      if (!ParseInt64(f[0], &ignored)) continue;  // a header line ("task_create_time, ...")
    }
    ++records;
    RecordError err;
    if (n != kFields) {
      err = {line, absl::StrCat("expected ", kFields, " comma-separated fields, got ", n)};
    } else if (f[5].empty()) {
      err = {line, "empty status"};
    } else if (f[5] != "Terminated" && !model.include_unfinished) {
      ++left_out[std::string(f[5])];
      ++left_out_rows;
      continue;
    } else {
      Row row;
      if (ParseRow(f, line, model, registry, &row, &err)) {
        auto [it, inserted] = job_index.emplace(row.job_id, jobs.size());
        if (inserted) {
          if (opts.max_jobs > 0 && static_cast<int64_t>(jobs.size()) >= opts.max_jobs) {
            job_index.erase(it);  // loading stopped at max_jobs: rows of later jobs are ignored
            continue;
          }
          jobs.emplace_back();
          jobs.back().job.id = absl::StrCat("j", row.job_id);
          jobs.back().line = line;
        }
        PendingJob& p = jobs[it->second];
        p.min_create_s = std::min(p.min_create_s, row.create_s);
        p.job.groups.push_back(std::move(row.group));
        min_create_s = std::min(min_create_s, row.create_s);
        continue;
      }
    }
    if (absl::Status s = builder.Malformed(err); !s.ok()) return s;
  }
  if (records == 0)
    return absl::InvalidArgumentError(absl::StrCat(path, ": no records after the header"));

  // Times are seconds from the start of the trace window; tasks created before it have
  // negative times. Shift the whole trace so that the earliest loaded create time is 0.
  int64_t shift_s = min_create_s < 0 ? -min_create_s : 0;
  for (PendingJob& p : jobs) {
    p.job.submit_ms = (p.min_create_s + shift_s) * 1000;
    if (absl::Status s = builder.AddJob(std::move(p.job), p.line); !s.ok()) return s;
  }
  if (shift_s > 0) {
    builder.Warn(absl::StrCat(path, ": create times go down to ", -shift_s,
                              " s; the trace was shifted by +", shift_s,
                              " s so that the earliest loaded one is 0"));
  }
  if (left_out_rows > 0) {
    std::string by_status;
    int listed = 0;
    for (const auto& [status, count] : left_out) {
      if (listed++ == 8) {
        absl::StrAppend(&by_status, ", ...");
        break;
      }
      absl::StrAppend(&by_status, by_status.empty() ? "" : ", ", status.substr(0, 40), " ", count);
    }
    builder.Warn(absl::StrCat(path, ": ", left_out_rows, " row(s) not Terminated were left out (",
                              by_status, "); set AlibabaModel.include_unfinished to load them"));
  }
  return builder.Finish();
}

}  // namespace weft::sim
