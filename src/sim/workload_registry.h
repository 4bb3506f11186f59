// Copyright Weft authors. Workload formats by name: `weft sim --workload FORMAT:PATH` looks the
// format up here instead of naming each loader. A new trace format registers one entry.
#ifndef WEFT_SIM_WORKLOAD_REGISTRY_H_
#define WEFT_SIM_WORKLOAD_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/resource.h"
#include "sim/workload.h"

namespace weft::sim {

// What the formats' loaders need beyond the file, each read only by the formats it names.
struct WorkloadModels {
  SwimModel swim;                  // swim
  AlibabaModel alibaba;            // alibaba2017
  DefaultTaskResources defaults;   // sls, rumen
};

using WorkloadLoadFn = std::function<absl::StatusOr<Workload>(
    absl::string_view path, const WorkloadModels& models, const ResourceTypeRegistry& registry,
    const LoadOptions& opts)>;

struct WorkloadFormat {
  std::string name;         // as written before the colon: "swim"
  std::string description;  // one line, for --help
  WorkloadLoadFn load;
};

class WorkloadFormatRegistry {
 public:
  // AlreadyExists when the name is taken, InvalidArgument for an empty name, one with a colon
  // or without a loader; the registry is unchanged then.
  absl::Status Register(WorkloadFormat format);
  const WorkloadFormat* Find(absl::string_view name) const;  // nullptr when unknown
  std::vector<std::string> Names() const;                     // in registration order

  // Splits "FORMAT:PATH" and finds the format; errors as for Load.
  struct Resolved {
    const WorkloadFormat* format;
    std::string path;
  };
  absl::StatusOr<Resolved> Resolve(absl::string_view spec) const;

  // Loads "FORMAT:PATH". InvalidArgument "--workload '<spec>' must be FORMAT:PATH with FORMAT
  // one of <names>" without a colon, "--workload: unknown format '<f>' (known: <names>)" for
  // an unregistered one; else the loader's result.
  absl::StatusOr<Workload> Load(absl::string_view spec, const WorkloadModels& models,
                                const ResourceTypeRegistry& registry,
                                const LoadOptions& opts) const;

 private:
  std::vector<WorkloadFormat> formats_;
};

// The formats Weft reads: swim, sls, rumen, alibaba2017, jobs (docs/workloads.md).
const WorkloadFormatRegistry& BuiltinWorkloadFormats();

}  // namespace weft::sim

#endif  // WEFT_SIM_WORKLOAD_REGISTRY_H_
