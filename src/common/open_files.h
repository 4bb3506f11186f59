// Copyright Weft authors. The process's limit on open files (RLIMIT_NOFILE), which bounds the
// connections a daemon holds: the RM keeps one per NM and per AM.
#ifndef WEFT_COMMON_OPEN_FILES_H_
#define WEFT_COMMON_OPEN_FILES_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace weft {

// Soft and hard limits; RLIM_INFINITY reads as UINT64_MAX.
struct OpenFilesLimit {
  uint64_t soft = 0;
  uint64_t hard = 0;
};

// Raises the soft limit to the hard one, as Go's runtime and most servers do at start, so the
// operator's hard limit (systemd's LimitNOFILE, limits.conf) is the one that counts. Returns
// the limits after; the soft one is unchanged when it already equals the hard one.
// Errors: getrlimit/setrlimit's errno.
absl::StatusOr<OpenFilesLimit> RaiseOpenFilesLimit();

}  // namespace weft

#endif  // WEFT_COMMON_OPEN_FILES_H_
