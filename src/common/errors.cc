// Copyright Weft authors.
#include "common/errors.h"

#include <errno.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace weft {

absl::StatusCode ErrnoCode(int err) {
  switch (err) {
    case 0:
      return absl::StatusCode::kInternal;  // a caller read errno too late: still an error
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EBUSY:
      return absl::StatusCode::kUnavailable;
    case EIO:
      return absl::StatusCode::kDataLoss;
    default:
      break;
  }
  const absl::StatusCode code = absl::ErrnoToStatusCode(err);
  return code == absl::StatusCode::kUnknown || code == absl::StatusCode::kOk
             ? absl::StatusCode::kInternal
             : code;
}

std::string ErrnoMessage(int err, absl::string_view what) {
  char buffer[256];
  // The GNU strerror_r: returns the text, in `buffer` or static; strerror itself is not
  // thread-safe for unknown values.
  const char* text = ::strerror_r(err, buffer, sizeof(buffer));
  return absl::StrCat(what, ": ", text);
}

absl::Status ErrnoError(int err, absl::string_view what) {
  return absl::Status(ErrnoCode(err), ErrnoMessage(err, what));
}

void CheckOrDie(bool condition, absl::string_view message) {
  if (condition) return;
  std::fprintf(stderr, "weft: check failed: %.*s\n", static_cast<int>(message.size()),
               message.data());
  std::abort();
}

}  // namespace weft
