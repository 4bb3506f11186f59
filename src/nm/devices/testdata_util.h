// Copyright Weft authors. For the device plugin tests: a file of src/nm/devices/testdata/
// (WEFT_DEVICES_TESTDATA, set by the test target).
#ifndef WEFT_NM_DEVICES_TESTDATA_UTIL_H_
#define WEFT_NM_DEVICES_TESTDATA_UTIL_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "common/files.h"
#include "gtest/gtest.h"

namespace weft::nm {

// The file's text; "" with a test failure when it cannot be read.
inline std::string DevicesTestdata(const std::string& name) {
  absl::StatusOr<std::string> text = ReadFile(absl::StrCat(WEFT_DEVICES_TESTDATA, "/", name));
  EXPECT_TRUE(text.ok()) << text.status();
  return text.value_or("");
}

}  // namespace weft::nm

#endif  // WEFT_NM_DEVICES_TESTDATA_UTIL_H_
