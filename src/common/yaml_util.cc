// Copyright Weft authors.
#include "common/yaml_util.h"

namespace weft::yaml {

absl::Status Err(absl::string_view origin, absl::string_view path, absl::string_view what) {
  if (origin.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
  return absl::InvalidArgumentError(absl::StrCat(origin, ": ", path, ": ", what));
}

absl::Status CheckKeys(const YAML::Node& node, const std::set<std::string>& allowed,
                       absl::string_view origin, absl::string_view path) {
  if (!node.IsMap()) return Err(origin, path, "expected a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string known;
      for (const auto& k : allowed) absl::StrAppend(&known, known.empty() ? "" : ", ", k);
      return Err(origin, path, absl::StrCat("unknown key '", key, "' (allowed: ", known, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<YAML::Node> Load(absl::string_view text, absl::string_view origin) {
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": not valid YAML: ", e.what()));
  }
}

}  // namespace weft::yaml
