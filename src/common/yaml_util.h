// Copyright Weft authors. Reading YAML configuration with errors that name where they are:
// "<origin>: <key path>: <what>", e.g. "queues.yaml: ras.max-rounds: -1 must be >= 0".
#ifndef WEFT_COMMON_YAML_UTIL_H_
#define WEFT_COMMON_YAML_UTIL_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace weft::yaml {

// InvalidArgument "<origin>: <path>: <what>" ("<path>: <what>" when origin is empty).
absl::Status Err(absl::string_view origin, absl::string_view path, absl::string_view what);

// The scalar at `node` as a T; InvalidArgument naming `path` when it is not a single value or
// does not convert.
template <typename T>
absl::StatusOr<T> Scalar(const YAML::Node& node, absl::string_view origin, absl::string_view path) {
  if (!node.IsScalar()) return Err(origin, path, "expected a single value");
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    return Err(origin, path, absl::StrCat("'", node.Scalar(), "' is not a valid value"));
  }
}

// OK when `node` is a mapping whose keys are all in `allowed`; otherwise InvalidArgument
// naming the first unknown key and listing the allowed ones.
absl::Status CheckKeys(const YAML::Node& node, const std::set<std::string>& allowed,
                       absl::string_view origin, absl::string_view path);

// Parses YAML text; InvalidArgument "<origin>: not valid YAML: ..." otherwise.
absl::StatusOr<YAML::Node> Load(absl::string_view text, absl::string_view origin);

}  // namespace weft::yaml

#endif  // WEFT_COMMON_YAML_UTIL_H_
