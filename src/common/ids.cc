// Copyright Weft authors.
#include "common/ids.h"

#include <cstdint>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace weft {

std::string AppOfContainer(absl::string_view id) {
  if (!absl::ConsumePrefix(&id, "container_")) return "";
  std::vector<absl::string_view> parts = absl::StrSplit(id, '_');
  if (!parts.empty() && absl::StartsWith(parts[0], "e")) parts.erase(parts.begin());
  if (parts.size() != 4) return "";
  for (absl::string_view p : parts) {
    uint64_t unused;
    if (!absl::SimpleAtoi(p, &unused)) return "";
  }
  return absl::StrCat("application_", parts[0], "_", parts[1]);
}

}  // namespace weft
