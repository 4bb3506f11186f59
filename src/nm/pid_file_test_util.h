// Copyright Weft authors. For the NodeManager's process tests: the pid a container script
// wrote to a file, waited for by readiness.
#ifndef WEFT_NM_PID_FILE_TEST_UTIL_H_
#define WEFT_NM_PID_FILE_TEST_UTIL_H_

#include <sys/types.h>

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/time/time.h"
#include "common/files.h"
#include "common/test_poll.h"

namespace weft::nm {

// The pid a script wrote to `file` as "<pid>\n", once the line is complete; 0 when none was
// within `timeout`.
inline pid_t ReadPidFile(const std::string& file, absl::Duration timeout) {
  int pid = 0;
  PollUntil(
      [&] {
        const std::string text = ReadFile(file).value_or("");
        return absl::EndsWith(text, "\n") &&
               absl::SimpleAtoi(absl::StripAsciiWhitespace(text), &pid);
      },
      timeout);
  return pid;
}

}  // namespace weft::nm

#endif  // WEFT_NM_PID_FILE_TEST_UTIL_H_
