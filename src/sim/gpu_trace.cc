// Copyright Weft authors.
#include "sim/gpu_trace.h"

#include <fstream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft::sim {
namespace {

// A CSV file with a header, read row by row; fields found by column name. The trace has no
// quoted fields.
class CsvReader {
 public:
  static absl::StatusOr<CsvReader> Open(absl::string_view path,
                                        const std::vector<std::string>& required) {
    CsvReader r;
    r.path_ = std::string(path);
    r.in_ = std::make_unique<std::ifstream>(r.path_);
    if (!*r.in_) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
    std::string header;
    if (!std::getline(*r.in_, header))
      return absl::InvalidArgumentError(absl::StrCat(path, ":1: empty file (no header)"));
    r.line_ = 1;
    std::vector<std::string> names =
        absl::StrSplit(absl::StripTrailingAsciiWhitespace(header), ',');
    for (size_t i = 0; i < names.size(); ++i) r.column_[names[i]] = i;
    for (const std::string& c : required)
      if (!r.column_.contains(c))
        return absl::InvalidArgumentError(
            absl::StrCat(path, ":1: the header has no column '", c, "'"));
    return r;
  }

  // The next non-empty row; false at the end.
  bool Next() {
    std::string s;
    while (std::getline(*in_, s)) {
      ++line_;
      s = std::string(absl::StripTrailingAsciiWhitespace(s));
      if (s.empty()) continue;
      row_ = absl::StrSplit(s, ',');
      return true;
    }
    return false;
  }

  absl::StatusOr<std::string> Field(const std::string& name) const {
    const size_t i = column_.at(name);
    if (i >= row_.size())
      return absl::InvalidArgumentError(
          absl::StrCat(Where(), ": field '", name, "' is missing (", row_.size(), " fields)"));
    return row_[i];
  }

  absl::StatusOr<int64_t> Int(const std::string& name) const {
    absl::StatusOr<std::string> s = Field(name);
    if (!s.ok()) return s.status();
    int64_t v;
    if (!absl::SimpleAtoi(*s, &v) || v < 0)
      return absl::InvalidArgumentError(absl::StrCat(Where(), ": field '", name, "' is '", *s,
                                                     "', not a whole number >= 0"));
    return v;
  }

  std::string Where() const { return absl::StrCat(path_, ":", line_); }

 private:
  std::string path_;
  std::unique_ptr<std::ifstream> in_;
  std::map<std::string, size_t> column_;
  std::vector<std::string> row_;
  int64_t line_ = 0;
};

// lhs = the value of a StatusOr, or return its error.
#define WEFT_GPU_ASSIGN(lhs, expr)        \
  do {                                    \
    auto value_or = (expr);               \
    if (!value_or.ok()) return value_or.status(); \
    lhs = *std::move(value_or);           \
  } while (0)

}  // namespace

absl::StatusOr<std::vector<GpuTraceNode>> ReadGpuNodeList(absl::string_view path) {
  auto r = CsvReader::Open(path, {"sn", "cpu_milli", "memory_mib", "gpu", "model"});
  if (!r.ok()) return r.status();
  std::vector<GpuTraceNode> nodes;
  while (r->Next()) {
    GpuTraceNode n;
    WEFT_GPU_ASSIGN(n.name, r->Field("sn"));
    WEFT_GPU_ASSIGN(n.cpu_milli, r->Int("cpu_milli"));
    WEFT_GPU_ASSIGN(n.memory_mib, r->Int("memory_mib"));
    int64_t gpus;
    WEFT_GPU_ASSIGN(gpus, r->Int("gpu"));
    if (gpus > 64)
      return absl::InvalidArgumentError(
          absl::StrCat(r->Where(), ": field 'gpu' is ", gpus, " (at most 64 GPUs per node)"));
    n.gpus = static_cast<int32_t>(gpus);
    WEFT_GPU_ASSIGN(n.model, r->Field("model"));
    if (n.gpus > 0 && n.model.empty())
      return absl::InvalidArgumentError(
          absl::StrCat(r->Where(), ": field 'model' is empty on a node with ", n.gpus, " GPUs"));
    if (n.gpus == 0) n.model.clear();
    nodes.push_back(std::move(n));
  }
  if (nodes.empty())
    return absl::InvalidArgumentError(absl::StrCat(path, ": no nodes"));
  return nodes;
}

absl::StatusOr<std::vector<GpuTracePod>> ReadGpuPodList(absl::string_view path) {
  auto r = CsvReader::Open(path,
                           {"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec"});
  if (!r.ok()) return r.status();
  std::vector<GpuTracePod> pods;
  while (r->Next()) {
    GpuTracePod p;
    WEFT_GPU_ASSIGN(p.name, r->Field("name"));
    WEFT_GPU_ASSIGN(p.ask.cpu_milli, r->Int("cpu_milli"));
    WEFT_GPU_ASSIGN(p.ask.memory_mib, r->Int("memory_mib"));
    int64_t num_gpu, gpu_milli;
    WEFT_GPU_ASSIGN(num_gpu, r->Int("num_gpu"));
    WEFT_GPU_ASSIGN(gpu_milli, r->Int("gpu_milli"));
    if (num_gpu > 0 && (gpu_milli == 0 || gpu_milli > 1000 || (num_gpu > 1 && gpu_milli != 1000)))
      return absl::InvalidArgumentError(absl::StrCat(
          r->Where(), ": field 'gpu_milli' is ", gpu_milli, " with num_gpu ", num_gpu,
          " (a share 1-999 of one GPU, or 1000 per whole GPU)"));
    p.ask.gpu_milli = num_gpu == 0 ? 0 : num_gpu == 1 ? gpu_milli : num_gpu * 1000;
    std::string spec;
    WEFT_GPU_ASSIGN(spec, r->Field("gpu_spec"));
    for (absl::string_view m : absl::StrSplit(spec, '|', absl::SkipEmpty()))
      p.ask.allowed_models.emplace_back(m);
    if (absl::Status s = gpu::ValidateAsk(p.ask); !s.ok())
      return absl::InvalidArgumentError(absl::StrCat(r->Where(), ": ", s.message()));
    pods.push_back(std::move(p));
  }
  if (pods.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no pods"));
  return pods;
}

}  // namespace weft::sim
