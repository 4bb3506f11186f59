// Copyright Weft authors.
#include "sim/workload_registry.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace weft::sim {

absl::Status WorkloadFormatRegistry::Register(WorkloadFormat format) {
  if (format.name.empty() || format.name.find(':') != std::string::npos || !format.load) {
    return absl::InvalidArgumentError(absl::StrCat(
        "workload format '", format.name, "': needs a name without ':' and a loader"));
  }
  if (Find(format.name) != nullptr) {
    return absl::AlreadyExistsError(
        absl::StrCat("workload format '", format.name, "' is already registered"));
  }
  formats_.push_back(std::move(format));
  return absl::OkStatus();
}

const WorkloadFormat* WorkloadFormatRegistry::Find(absl::string_view name) const {
  for (const WorkloadFormat& f : formats_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> WorkloadFormatRegistry::Names() const {
  std::vector<std::string> names;
  for (const WorkloadFormat& f : formats_) names.push_back(f.name);
  return names;
}

absl::StatusOr<WorkloadFormatRegistry::Resolved> WorkloadFormatRegistry::Resolve(
    absl::string_view spec) const {
  const size_t colon = spec.find(':');
  if (colon == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("--workload '", spec,
                                                   "' must be FORMAT:PATH with FORMAT one of ",
                                                   absl::StrJoin(Names(), ", ")));
  }
  const absl::string_view name = spec.substr(0, colon);
  const WorkloadFormat* format = Find(name);
  if (format == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("--workload: unknown format '", name,
                                                   "' (known: ", absl::StrJoin(Names(), ", "),
                                                   ")"));
  }
  return Resolved{format, std::string(spec.substr(colon + 1))};
}

absl::StatusOr<Workload> WorkloadFormatRegistry::Load(absl::string_view spec,
                                                      const WorkloadModels& models,
                                                      const ResourceTypeRegistry& registry,
                                                      const LoadOptions& opts) const {
  absl::StatusOr<Resolved> r = Resolve(spec);
  if (!r.ok()) return r.status();
  return r->format->load(r->path, models, registry, opts);
}

const WorkloadFormatRegistry& BuiltinWorkloadFormats() {
  static const WorkloadFormatRegistry* const kRegistry = [] {
    auto* r = new WorkloadFormatRegistry();
    auto add = [r](WorkloadFormat f) {
      // Built-in names are distinct and well formed (workload_registry_test): a failure here
      // is a programming error in this file.
      if (absl::Status s = r->Register(std::move(f)); !s.ok()) {
        std::fprintf(stderr, "weft: built-in workload formats: %s\n", s.ToString().c_str());
        std::abort();
      }
    };
    add({"swim", "SWIM (Facebook 2009/2010) job summaries",
         [](absl::string_view path, const WorkloadModels& m, const ResourceTypeRegistry& reg,
            const LoadOptions& o) { return LoadSwim(path, m.swim, reg, o); }});
    add({"sls", "Hadoop SLS job traces (JSON)",
         [](absl::string_view path, const WorkloadModels& m, const ResourceTypeRegistry& reg,
            const LoadOptions& o) { return LoadSls(path, m.defaults, reg, o); }});
    add({"rumen", "Hadoop Rumen job histories (JSON)",
         [](absl::string_view path, const WorkloadModels& m, const ResourceTypeRegistry& reg,
            const LoadOptions& o) { return LoadRumen(path, m.defaults, reg, o); }});
    add({"alibaba2017", "Alibaba cluster-trace-v2017 batch tasks",
         [](absl::string_view path, const WorkloadModels& m, const ResourceTypeRegistry& reg,
            const LoadOptions& o) { return LoadAlibaba2017(path, m.alibaba, reg, o); }});
    add({"jobs", "Weft's YAML job list",
         [](absl::string_view path, const WorkloadModels&, const ResourceTypeRegistry& reg,
            const LoadOptions& o) { return LoadJobsYaml(path, reg, o); }});
    return r;
  }();
  return *kRegistry;
}

}  // namespace weft::sim
