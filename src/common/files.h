// Copyright Weft authors. Whole-file reads and durable writes: the one copy of each for every
// module (certificates, configs, traces, log metadata, stores' directories).
#ifndef WEFT_COMMON_FILES_H_
#define WEFT_COMMON_FILES_H_

#include <sys/types.h>

#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// The whole content of the file at `path` (symbolic links followed). Errors (codes as
// common/errors.h's ErrnoCode) name the path: "<path>: cannot open: <why>" (NotFound when it
// is missing, PermissionDenied, FailedPrecondition for a directory) or
// "<path>: cannot read: <why>".
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Replaces the file at `path` with `contents`, atomically and durably: written to a new
// temporary file in the same directory (`<path>.tmp.<pid>.<n>`, no symbolic link followed),
// given `mode` whatever the umask, fsync'ed, renamed over `path`, and the directory fsync'ed.
// A reader sees the old content or the new, never a part; after a crash at most the temporary
// file is left. The directory must exist. Errors name `path` and the step that failed; the
// temporary file is removed then.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents,
                                 mode_t mode);

// Flushes the entries of directory `dir` ("" is ".") to stable storage: files created, renamed
// or removed in it survive a power loss.
absl::Status SyncDirectory(const std::filesystem::path& dir);

// Creates the missing directories above `file`, mode 0700 (they hold a store's keys and
// state: common/private_files.h), and makes their entries durable. Existing ones are left as
// they are. The error names the directory that could not be made.
absl::Status CreateParentDirectories(const std::filesystem::path& file);

}  // namespace weft

#endif  // WEFT_COMMON_FILES_H_
