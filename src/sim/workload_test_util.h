// Copyright Weft authors. Helpers shared by the workload loaders' tests.
#ifndef WEFT_SIM_WORKLOAD_TEST_UTIL_H_
#define WEFT_SIM_WORKLOAD_TEST_UTIL_H_

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/workload.h"

namespace weft::sim::testing {

inline constexpr LoadOptions kStrict{.strict = true};
inline constexpr LoadOptions kLenient{};

// The repository root: $WEFT_SOURCE_DIR (set by ctest), else the tree the test was built from.
inline std::string SourceDir() {
  const char* dir = std::getenv("WEFT_SOURCE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : WEFT_TEST_SOURCE_DIR;
}

// Writes `content` to a file in the test temp dir named after `tag` (e.g. "swim") and `name`,
// unique per process; returns its path.
inline std::string WriteTemp(absl::string_view tag, const std::string& name,
                             const std::string& content) {
  std::string path = absl::StrCat(::testing::TempDir(), "/weft_", tag, "_", getpid(), "_", name);
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

}  // namespace weft::sim::testing

#endif  // WEFT_SIM_WORKLOAD_TEST_UTIL_H_
