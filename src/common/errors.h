// Copyright Weft authors. The one way Weft turns an errno into an absl::Status, and the one
// CheckOrDie for code that has no logging library at hand.
#ifndef WEFT_COMMON_ERRORS_H_
#define WEFT_COMMON_ERRORS_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft {

// The absl code for errno value `err`: absl::ErrnoToStatusCode's table (ENOENT and ESRCH ->
// NotFound, EACCES, EPERM and EROFS -> PermissionDenied, EEXIST -> AlreadyExists, EINVAL ->
// InvalidArgument, ENOSPC, EDQUOT, EMFILE and ENOMEM -> ResourceExhausted, EAGAIN, EINTR and
// ECONNREFUSED -> Unavailable, ETIMEDOUT -> DeadlineExceeded, ...) with Weft's choices where
// it differs: ENOTDIR -> NotFound (a path with a file where a directory should be names
// nothing), EBUSY -> Unavailable (worth retrying), EIO -> DataLoss, and Internal (not Unknown)
// for 0 and every errno the table does not know. Never OK.
absl::StatusCode ErrnoCode(int err);

// "<what>: <strerror(err)>", e.g. "opening '/x': No such file or directory". Thread-safe.
std::string ErrnoMessage(int err, absl::string_view what);

// An error with ErrnoCode(err) and ErrnoMessage(err, what). `what` says what failed and on
// which path or object, e.g. ErrnoError(errno, absl::StrCat("creating directory '", p, "'")).
// Read errno right after the failing call: close() or a log line may change it.
absl::Status ErrnoError(int err, absl::string_view what);

// A broken invariant (a programming error, never bad input): when `condition` is false, writes
// "weft: check failed: <message>" to stderr and aborts. For code that keeps absl's logging out
// of its dependencies; elsewhere a CHECK is as good.
void CheckOrDie(bool condition, absl::string_view message);

}  // namespace weft

#endif  // WEFT_COMMON_ERRORS_H_
