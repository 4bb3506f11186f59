// Copyright Weft authors. LoadSls: the Hadoop Scheduler Load Simulator's native trace format,
// a stream of concatenated JSON objects, one per job.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "sim/workload.h"
#include "sim/workload_common.h"

namespace weft::sim {
namespace {

using internal::JsonFields;
using internal::JsonRecord;
using internal::kMaxTimeMs;
using internal::kMaxTraceTasksPerJob;
using internal::RecordError;
using Json = nlohmann::json;

// SLS's DEFAULT_MAPPER_PRIORITY: the priority of a task that names none.
constexpr int64_t kDefaultTaskPriority = 20;

// The tasks of one container.type, merged into one TaskGroup.
struct GroupAcc {
  std::string type;
  int64_t priority = std::numeric_limits<int64_t>::max();
  Resource resource;  // componentwise max over the tasks, not yet normalised
  std::vector<int64_t> durations_ms;
  std::vector<std::string> hosts;
  bool any_host = false;
};

// Reads one element of job.tasks into the accumulator of its container.type.
bool ReadTask(const Json& task, const JsonRecord& rec, const DefaultTaskResources& defaults,
              const ResourceTypeRegistry& registry, int64_t* total_tasks,
              std::vector<GroupAcc>* groups, RecordError* err) {
  JsonFields f(task, rec.LineOf(task), err);
  if (!task.is_object()) return f.Fail(absl::StrCat("expected an object, got ", task.type_name()));

  std::string type = "map";
  if (!f.String("container.type", false, &type)) return false;
  if (type.empty()) return f.Fail("container.type is empty");

  std::string host_path;
  if (!f.String("container.host", false, &host_path)) return false;

  int64_t duration = 0;
  const char* duration_key = f.Has("duration.ms")             ? "duration.ms"
                             : f.Has("container.duration.ms") ? "container.duration.ms"
                                                              : nullptr;
  if (duration_key != nullptr) {
    if (!f.IntIn(duration_key, true, 1, kMaxTimeMs, &duration)) return false;
  } else {
    int64_t start = 0, end = 0;
    if (!f.IntIn("container.start.ms", true, 0, kMaxTimeMs, &start) ||
        !f.IntIn("container.end.ms", true, 0, kMaxTimeMs, &end)) {
      return false;
    }
    if (end < start) {
      return f.Fail(
          absl::StrCat("container.end.ms ", end, " is before container.start.ms ", start));
    }
    duration = std::max<int64_t>(1, end - start);
  }

  int64_t priority = kDefaultTaskPriority;
  if (!f.IntIn("container.priority", false, std::numeric_limits<int32_t>::min(),
               std::numeric_limits<int32_t>::max(), &priority)) {
    return false;
  }
  int64_t count = 1;
  if (!f.IntIn("count", false, 1, kMaxTraceTasksPerJob, &count)) return false;
  if (*total_tasks + count > kMaxTraceTasksPerJob)
    return f.Fail(absl::StrCat("the job has more than ", kMaxTraceTasksPerJob, " tasks"));
  *total_tasks += count;

  // Defaults, then container.memory (SLS's name for memory-mb), then container.<type> for
  // every registered type (container.memory-mb, container.vcores, container.gpu, ...).
  Resource r = type == "reduce" ? defaults.reduce : defaults.map;
  int64_t v = 0;
  if (f.Has("container.memory")) {
    if (!f.Int("container.memory", true, &v)) return false;
    r[kMemoryMb] = v;
  }
  for (int id = 0; id < registry.size(); ++id) {
    std::string key = absl::StrCat("container.", registry.info(id).name);
    if (!f.Has(key.c_str())) continue;
    if (!f.Int(key.c_str(), true, &v)) return false;
    r[id] = v;
  }
  if (absl::Status s = registry.Validate(r); !s.ok())
    return f.Fail(absl::StrCat("task resource rejected: ", s.message()));

  auto it = std::find_if(groups->begin(), groups->end(),
                         [&](const GroupAcc& g) { return g.type == type; });
  if (it == groups->end()) {
    groups->push_back(GroupAcc{});
    it = groups->end() - 1;
    it->type = type;
  }
  it->priority = std::min(it->priority, priority);
  it->resource = Max(it->resource, r);
  std::string host = internal::HostOfPath(host_path);
  it->any_host |= !host.empty();
  it->durations_ms.insert(it->durations_ms.end(), count, duration);
  it->hosts.insert(it->hosts.end(), count, host);
  return true;
}

// Parses one SLS job object into `copies` (job.count) jobs.
bool ReadJob(const JsonRecord& rec, const DefaultTaskResources& defaults,
             const ResourceTypeRegistry& registry, std::vector<Job>* jobs, RecordError* err) {
  const Json& j = rec.value;
  JsonFields f(j, rec.line, err);
  Job job;
  int64_t end_ms = 0, copies = 1, priority = 0;
  job.id = absl::StrCat("job_at_line_", rec.line);  // SLS numbers jobs without job.id
  if (!f.IntIn("job.start.ms", true, 0, kMaxTimeMs, &job.submit_ms) ||
      !f.Int("job.end.ms", false, &end_ms) ||  // checked for syntax; the tasks give durations
      !f.String("job.id", false, &job.id) || !f.String("job.queue.name", false, &job.queue) ||
      !f.String("job.user", false, &job.user) ||
      !f.IntIn("job.priority", false, std::numeric_limits<int32_t>::min(),
               std::numeric_limits<int32_t>::max(), &priority) ||
      !f.IntIn("job.count", false, 1, kMaxTraceTasksPerJob, &copies)) {
    return false;
  }
  if (job.id.empty()) return f.Fail("job.id is empty");
  if (job.queue.empty()) return f.Fail("job.queue.name is empty");
  if (job.user.empty()) return f.Fail("job.user is empty");
  job.priority = static_cast<int32_t>(priority);

  auto tasks = j.find("job.tasks");
  if (tasks == j.end() || tasks->is_null()) return f.Fail("missing job.tasks");
  if (!tasks->is_array())
    return f.Fail(absl::StrCat("job.tasks: expected an array, got ", tasks->type_name()));
  if (tasks->empty()) return f.Fail("job.tasks is empty");

  std::vector<GroupAcc> groups;
  int64_t total_tasks = 0;
  for (size_t k = 0; k < tasks->size(); ++k) {
    if (!ReadTask((*tasks)[k], rec, defaults, registry, &total_tasks, &groups, err)) {
      err->what = absl::StrCat("job.tasks[", k, "]: ", err->what);
      return false;
    }
  }
  if (copies > kMaxTraceTasksPerJob / total_tasks) {
    return f.Fail(absl::StrCat("job.count ", copies, " x ", total_tasks, " tasks exceeds ",
                               kMaxTraceTasksPerJob, " tasks"));
  }

  // "map" first so that "reduce" (and anything after) may depend on it.
  std::stable_partition(groups.begin(), groups.end(),
                        [](const GroupAcc& g) { return g.type == "map"; });
  bool has_map = groups.front().type == "map";
  for (GroupAcc& acc : groups) {
    absl::StatusOr<Resource> resource = registry.Normalize(acc.resource);
    if (!resource.ok()) {
      return f.Fail(absl::StrCat("container.type '", acc.type,
                                 "': resource rejected: ", resource.status().message()));
    }
    TaskGroup g;
    g.name = acc.type;
    g.priority = static_cast<int32_t>(acc.priority);
    g.count = static_cast<int64_t>(acc.durations_ms.size());
    g.resource = *resource;
    // duration_ms: the mean, rounded up, for consumers that ignore the per-task durations.
    double sum = 0;
    for (int64_t d : acc.durations_ms) sum += static_cast<double>(d);
    g.duration_ms = std::clamp<int64_t>(
        static_cast<int64_t>(std::ceil(sum / static_cast<double>(g.count))), 1, kMaxTimeMs);
    g.task_durations_ms = std::move(acc.durations_ms);
    if (acc.any_host) g.task_hosts = std::move(acc.hosts);
    if (has_map && acc.type == "reduce") g.depends_on.push_back(0);
    job.groups.push_back(std::move(g));
  }

  if (copies == 1) {
    jobs->push_back(std::move(job));
  } else {
    for (int64_t c = 1; c <= copies; ++c) {
      jobs->push_back(job);
      jobs->back().id = absl::StrCat(job.id, "#", c);
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<Workload> LoadSls(absl::string_view path, const DefaultTaskResources& defaults,
                                 const ResourceTypeRegistry& registry, const LoadOptions& opts) {
  if (absl::Status s = internal::ValidateDefaults(defaults, registry); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<internal::JsonStreamReader>> reader =
      internal::JsonStreamReader::Open(path);
  if (!reader.ok()) return reader.status();

  internal::WorkloadBuilder builder(path, opts);
  JsonRecord rec;
  while (!builder.Full() && (*reader)->Next(&rec)) {
    RecordError err;
    std::vector<Job> jobs;
    if (!rec.error.empty()) {
      err = {rec.error_line, rec.error};
    } else if (ReadJob(rec, defaults, registry, &jobs, &err)) {
      for (Job& job : jobs) {
        if (builder.Full()) break;
        if (absl::Status s = builder.AddJob(std::move(job), rec.line); !s.ok()) return s;
      }
      continue;
    }
    if (absl::Status s = builder.Malformed(err); !s.ok()) return s;
  }
  if (!builder.Full()) {
    if (absl::Status s = (*reader)->FinalStatus(); !s.ok()) return s;
  }
  return builder.Finish();
}

}  // namespace weft::sim
