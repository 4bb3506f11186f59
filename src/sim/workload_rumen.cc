// Copyright Weft authors. LoadRumen: Hadoop Rumen job histories (LoggedJob objects, as SLS
// reads them), a stream of concatenated JSON objects, one per job.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/match.h"
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

// YARN MapReduce's container priorities (RMContainerAllocator): maps 20, reduces 10.
constexpr int32_t kRumenMapPriority = 20;
constexpr int32_t kRumenReducePriority = 10;

// MapReduce's JobPriority names as YARN application priorities (TypeConverter): higher first.
bool PriorityFromName(absl::string_view name, int32_t* out) {
  static constexpr std::pair<absl::string_view, int32_t> kNames[] = {{"VERY_HIGH", 5},
                                                                     {"HIGH", 4},
                                                                     {"NORMAL", 3},
                                                                     {"LOW", 2},
                                                                     {"VERY_LOW", 1},
                                                                     {"DEFAULT", 0},
                                                                     {"UNDEFINED_PRIORITY", 0}};
  for (const auto& [n, v] : kNames) {
    if (absl::EqualsIgnoreCase(n, name)) {
      *out = v;
      return true;
    }
  }
  return false;
}

// The tasks of one kind (map or reduce) of a job.
struct Tasks {
  std::vector<int64_t> durations_ms;
  std::vector<std::string> hosts;
  bool any_host = false;
  int64_t listed = 0;      // tasks in the trace
  int64_t no_success = 0;  // of which without a SUCCESS attempt (left out)
};

// Reads mapTasks or reduceTasks: per task the last attempt whose result is SUCCESS.
bool ReadTasks(const JsonRecord& rec, const char* key, int64_t* total_tasks, Tasks* out,
               RecordError* err) {
  const Json& j = rec.value;
  JsonFields f(j, rec.line, err);
  auto tasks = j.find(key);
  if (tasks == j.end() || tasks->is_null()) return true;
  if (!tasks->is_array())
    return f.Fail(absl::StrCat(key, ": expected an array, got ", tasks->type_name()));
  for (size_t k = 0; k < tasks->size(); ++k) {
    const Json& task = (*tasks)[k];
    JsonFields tf(task, rec.LineOf(task), err);
    std::string where = absl::StrCat(key, "[", k, "]: ");
    if (!task.is_object())
      return tf.Fail(absl::StrCat(where, "expected an object, got ", task.type_name()));
    ++out->listed;
    const Json* success = nullptr;
    auto attempts = task.find("attempts");
    if (attempts != task.end() && !attempts->is_null()) {
      if (!attempts->is_array()) return tf.Fail(absl::StrCat(where, "attempts: expected an array"));
      for (const Json& a : *attempts) {
        if (!a.is_object()) return tf.Fail(absl::StrCat(where, "attempts: expected objects"));
        auto result = a.find("result");
        if (result != a.end() && result->is_string() &&
            result->get_ref<const std::string&>() == "SUCCESS") {
          success = &a;
        }
      }
    }
    if (success == nullptr) {
      ++out->no_success;
      continue;
    }
    JsonFields af(*success, rec.LineOf(*success), err);
    int64_t start = 0, finish = 0;
    std::string host_path;
    if (!af.IntIn("startTime", true, 0, kMaxTimeMs, &start) ||
        !af.IntIn("finishTime", true, 0, kMaxTimeMs, &finish) ||
        !af.String("hostName", false, &host_path)) {
      err->what = absl::StrCat(where, "SUCCESS attempt: ", err->what);
      return false;
    }
    if (finish < start) {
      return af.Fail(absl::StrCat(where, "SUCCESS attempt: finishTime ", finish,
                                  " is before startTime ", start));
    }
    if (++*total_tasks > kMaxTraceTasksPerJob)
      return f.Fail(absl::StrCat("the job has more than ", kMaxTraceTasksPerJob, " tasks"));
    out->durations_ms.push_back(std::max<int64_t>(1, finish - start));
    out->hosts.push_back(internal::HostOfPath(host_path));
    out->any_host |= !out->hosts.back().empty();
  }
  return true;
}

// The per-task resource of one kind: the default with memory-mb from jobMapMB/jobReduceMB
// when that is > 0 (Rumen writes -1 when unknown), normalised.
bool KindResource(JsonFields& f, const char* key, const Resource& fallback,
                  const ResourceTypeRegistry& registry, Resource* out) {
  int64_t mb = -1;
  if (!f.Int(key, false, &mb)) return false;
  Resource r = fallback;
  if (mb > 0) r[kMemoryMb] = mb;
  absl::StatusOr<Resource> n = registry.Normalize(r);
  if (!n.ok()) return f.Fail(absl::StrCat(key, ": resource rejected: ", n.status().message()));
  *out = *n;
  return true;
}

TaskGroup MakeGroup(const char* name, int32_t priority, const Resource& resource, Tasks&& tasks) {
  TaskGroup g;
  g.name = name;
  g.priority = priority;
  g.count = static_cast<int64_t>(tasks.durations_ms.size());
  g.resource = resource;
  double sum = 0;
  for (int64_t d : tasks.durations_ms) sum += static_cast<double>(d);
  // duration_ms: the mean, rounded up, for consumers that ignore the per-task durations.
  g.duration_ms = std::clamp<int64_t>(
      static_cast<int64_t>(std::ceil(sum / static_cast<double>(g.count))), 1, kMaxTimeMs);
  g.task_durations_ms = std::move(tasks.durations_ms);
  if (tasks.any_host) g.task_hosts = std::move(tasks.hosts);
  return g;
}

// Parses one LoggedJob. submit_ms is left absolute (epoch ms); the caller shifts it.
bool ReadJob(const JsonRecord& rec, const DefaultTaskResources& defaults,
             const ResourceTypeRegistry& registry, Job* job, int64_t* no_success,
             RecordError* err) {
  const Json& j = rec.value;
  JsonFields f(j, rec.line, err);
  if (!f.String("jobID", true, &job->id) ||
      !f.IntIn("submitTime", true, 0, kMaxTimeMs, &job->submit_ms) ||
      !f.String("user", false, &job->user) || !f.String("queue", false, &job->queue)) {
    return false;
  }
  if (job->id.empty()) return f.Fail("jobID is empty");
  if (job->user.empty()) job->user = "default";
  if (job->queue.empty()) job->queue = "default";

  if (f.Has("priority")) {
    const Json& p = *j.find("priority");
    int64_t n = 0;
    if (p.is_string() && PriorityFromName(p.get_ref<const std::string&>(), &job->priority)) {
      // a JobPriority name
    } else if (f.IntIn("priority", true, std::numeric_limits<int32_t>::min(),
                       std::numeric_limits<int32_t>::max(), &n)) {
      job->priority = static_cast<int32_t>(n);
    } else {
      return f.Fail(absl::StrCat("priority: ", p.dump().substr(0, 40),
                                 " is neither a JobPriority name (VERY_HIGH..VERY_LOW, DEFAULT) "
                                 "nor an integer"));
    }
  }

  Resource map_resource, reduce_resource;
  if (!KindResource(f, "jobMapMB", defaults.map, registry, &map_resource) ||
      !KindResource(f, "jobReduceMB", defaults.reduce, registry, &reduce_resource)) {
    return false;
  }

  Tasks maps, reduces;
  int64_t total = 0;
  if (!ReadTasks(rec, "mapTasks", &total, &maps, err) ||
      !ReadTasks(rec, "reduceTasks", &total, &reduces, err)) {
    return false;
  }
  if (maps.listed + reduces.listed == 0) return f.Fail("the job lists no mapTasks or reduceTasks");
  if (total == 0) {
    return f.Fail(absl::StrCat("none of the job's ", maps.listed + reduces.listed,
                               " tasks has a SUCCESS attempt"));
  }
  *no_success += maps.no_success + reduces.no_success;
  bool has_map = !maps.durations_ms.empty();
  if (has_map) {
    job->groups.push_back(MakeGroup("map", kRumenMapPriority, map_resource, std::move(maps)));
  }
  if (!reduces.durations_ms.empty()) {
    job->groups.push_back(
        MakeGroup("reduce", kRumenReducePriority, reduce_resource, std::move(reduces)));
    if (has_map) job->groups.back().depends_on.push_back(0);
  }
  return true;
}

}  // namespace

absl::StatusOr<Workload> LoadRumen(absl::string_view path, const DefaultTaskResources& defaults,
                                   const ResourceTypeRegistry& registry, const LoadOptions& opts) {
  if (absl::Status s = internal::ValidateDefaults(defaults, registry); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<internal::JsonStreamReader>> reader =
      internal::JsonStreamReader::Open(path);
  if (!reader.ok()) return reader.status();

  internal::WorkloadBuilder builder(path, opts);
  int64_t no_success = 0;
  JsonRecord rec;
  while (!builder.Full() && (*reader)->Next(&rec)) {
    RecordError err;
    Job job;
    if (!rec.error.empty()) {
      err = {rec.error_line, rec.error};
    } else if (ReadJob(rec, defaults, registry, &job, &no_success, &err)) {
      if (absl::Status s = builder.AddJob(std::move(job), rec.line); !s.ok()) return s;
      continue;
    }
    if (absl::Status s = builder.Malformed(err); !s.ok()) return s;
  }
  if (!builder.Full()) {
    if (absl::Status s = (*reader)->FinalStatus(); !s.ok()) return s;
  }

  // Epoch milliseconds -> relative to the earliest submitTime among the loaded jobs.
  std::vector<Job>& jobs = builder.jobs();
  if (!jobs.empty()) {
    int64_t base = std::min_element(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) {
                     return a.submit_ms < b.submit_ms;
                   })->submit_ms;
    for (Job& job : jobs) job.submit_ms -= base;
  }
  if (no_success > 0) {
    builder.Warn(absl::StrCat(path, ": ", no_success,
                              " task(s) without a SUCCESS attempt were left out of their jobs"));
  }
  return builder.Finish();
}

}  // namespace weft::sim
