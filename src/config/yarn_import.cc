// ImportYarnConfig: the steps of a conversion in order (yarn_import_internal.h lists the file
// of each), and the final checks of what was converted.
#include "config/yarn_import.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "common/resource_types.h"
#include "config/yarn_import_internal.h"
#include "scheduler/registry.h"

namespace weft::config {
namespace yarn_internal {

bool ValidQueueName(absl::string_view name) {
  if (name.empty() || name.size() > 128) return false;
  for (char c : name)
    if (!absl::ascii_isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

bool ValidUserName(absl::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (char c : name)
    if (absl::ascii_isspace(c) || absl::ascii_iscntrl(c)) return false;
  return true;
}

std::string FormatNumber(double v) { return absl::StrFormat("%.10g", v); }

bool ParseDouble(absl::string_view s, double* v) {
  return absl::SimpleAtod(s, v) && std::isfinite(*v);
}

void Importer::AddDaemon(std::string section, std::string key, std::vector<std::string> values,
                         bool list, std::string source) {
  for (DaemonSetting& d : daemon_)
    if (d.section == section && d.key == key) {
      d.values = std::move(values);
      d.source = std::move(source);
      return;
    }
  daemon_.push_back(
      {std::move(section), std::move(key), std::move(values), list, std::move(source)});
}

absl::StatusOr<std::vector<Property>> Importer::ReadConfiguration(int file) {
  std::vector<LineNote> notes;
  auto props = ReadHadoopConfiguration(File(file), &notes);
  for (LineNote& n : notes) notes_.push_back({file, n.line, std::move(n.text)});
  return props;
}

absl::Status Importer::CheckUniqueNames(const QueueOut& q,
                                        std::map<std::string, const QueueOut*>* seen, int file) {
  auto [it, inserted] = seen->insert({q.name, &q});
  if (!inserted)
    return ErrorAt(File(file), q.line,
                   absl::StrCat("queue ", q.path, ": its name is also queue ", it->second->path,
                                "'s; Weft's queue names are unique (apps name a queue by its "
                                "name)"));
  for (const QueueOut& c : q.children)
    if (auto s = CheckUniqueNames(c, seen, file); !s.ok()) return s;
  return absl::OkStatus();
}

absl::StatusOr<YarnImport> Importer::Run() {
  if (in_.capacity_scheduler && in_.fair_scheduler)
    return absl::InvalidArgumentError(
        "give a capacity-scheduler.xml or a fair-scheduler.xml, not both");
  if (!in_.yarn_site && !in_.capacity_scheduler && !in_.fair_scheduler)
    return absl::InvalidArgumentError("nothing to convert: no file was given");
  const XmlFile* scheduler_file = in_.capacity_scheduler ? &*in_.capacity_scheduler
                                  : in_.fair_scheduler   ? &*in_.fair_scheduler
                                                         : nullptr;
  if (in_.yarn_site) files_.push_back(*in_.yarn_site);
  const int site = in_.yarn_site ? 0 : -1;
  if (scheduler_file) files_.push_back(*scheduler_file);
  const int sched = scheduler_file ? static_cast<int>(files_.size()) - 1 : -1;
  if (in_.capacity_scheduler) policy_ = "capacity";
  if (in_.fair_scheduler) policy_ = "fair";

  // The allocation file first: whether it has a placement policy matters to yarn-site.xml.
  if (in_.fair_scheduler)
    if (auto s = ConvertFair(sched); !s.ok()) return s;
  if (in_.capacity_scheduler) {
    auto props = ReadConfiguration(sched);
    if (!props.ok()) return props.status();
    if (auto s = ConvertCapacity(sched, *props); !s.ok()) return s;
  }
  if (site >= 0) {
    auto props = ReadConfiguration(site);
    if (!props.ok()) return props.status();
    if (auto s = ConvertYarnSite(site, *props); !s.ok()) return s;
  }
  if (have_queues_) {
    std::map<std::string, const QueueOut*> seen;
    if (auto s = CheckUniqueNames(root_, &seen, sched); !s.ok()) return s;
  }

  YarnImport result;
  auto scheduler_yaml = EmitScheduler();
  if (!scheduler_yaml.ok()) return scheduler_yaml.status();
  auto daemon_yaml = EmitDaemon();
  if (!daemon_yaml.ok()) return daemon_yaml.status();
  result.scheduler_yaml = *std::move(scheduler_yaml);
  result.daemon_yaml = *std::move(daemon_yaml);
  // What Weft makes of it: the parser's and the policy's checks.
  ResourceTypeRegistry registry;
  auto parsed = scheduler::ParseSchedulerConfig(result.scheduler_yaml, registry, "scheduler.yaml");
  if (!parsed.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(scheduler_file ? scheduler_file->name : "yarn-site.xml",
                     ": the converted configuration is refused: ", parsed.status().message()));
  auto created = scheduler::CreateScheduler(*parsed);
  if (!created.ok())
    return absl::InvalidArgumentError(
        absl::StrCat(scheduler_file ? scheduler_file->name : "yarn-site.xml",
                     ": the converted configuration is refused: ", created.status().message()));

  std::stable_sort(notes_.begin(), notes_.end(), [](const Note& a, const Note& b) {
    return a.file != b.file ? a.file < b.file : a.line < b.line;
  });
  for (const Note& n : notes_)
    result.unconverted.push_back(absl::StrCat(files_[n.file].name, ":", n.line, ": ", n.text));
  return result;
}

}  // namespace yarn_internal

absl::StatusOr<YarnImport> ImportYarnConfig(const YarnImportInput& input) {
  return yarn_internal::Importer(input).Run();
}

}  // namespace weft::config
